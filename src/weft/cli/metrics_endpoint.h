// MetricsEndpoint: serves this process's metrics (core/metrics.h) as Prometheus text at
// GET /metrics on one HTTP port (`weft server --metrics-port`). It listens on loopback unless told
// otherwise; with a token, every scrape must send `Authorization: Bearer <token>`, and beyond
// loopback a token is required unless `insecure`. Scrapes are served on its own threads; Stop()
// (or the destructor), called by the owner, joins them.
#pragma once

#include <memory>
#include <string>

#include "weft/core/statusor.h"

namespace weft::cli {

struct MetricsEndpointOptions {
  std::string bind_host = "127.0.0.1";
  int port = 0;       // 0: an ephemeral port (port() tells which)
  std::string token;  // the shared secret of --token-file / WEFT_TOKEN; empty: none
  bool insecure = false;
};

class MetricsEndpoint {
 public:
  // InvalidArgument when a non-loopback bind has no token and is not insecure; Unavailable naming
  // the address when it cannot be bound.
  static StatusOr<std::unique_ptr<MetricsEndpoint>> Start(const MetricsEndpointOptions& options);
  virtual ~MetricsEndpoint() = default;
  // "host:port" it serves on.
  virtual std::string address() const = 0;
  // Stops serving and joins its threads; idempotent.
  virtual void Stop() = 0;
};

}  // namespace weft::cli
