// What the metrics endpoint's tests share: an HTTP client for a "host:port" with short timeouts,
// so that a test never waits long on an endpoint that does not answer. Tests only.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <httplib.h>

namespace weft::cli::testing {

inline std::unique_ptr<httplib::Client> ClientFor(const std::string& address) {
  const size_t colon = address.rfind(':');
  auto client = std::make_unique<httplib::Client>(address.substr(0, colon),
                                                  std::stoi(address.substr(colon + 1)));
  client->set_connection_timeout(std::chrono::seconds(5));
  client->set_read_timeout(std::chrono::seconds(5));
  return client;
}

}  // namespace weft::cli::testing
