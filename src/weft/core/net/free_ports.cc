#include "weft/core/net/free_ports.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <utility>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace weft::net {
namespace {

// The range the kernel takes local ports from for outgoing connections, where it reads it.
std::optional<std::pair<int, int>> EphemeralPortRange() {
  std::ifstream file("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0, high = 0;
  if (!(file >> low >> high) || low < 1 || high < low || high > 65535) return std::nullopt;
  return std::make_pair(low, high);
}

// Binds a socket to `port` (0: any) of `address`; returns it with the bound port, or -1.
int BindPort(sockaddr_in address, int port, int* bound) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  address.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t length = sizeof(address);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    return -1;
  }
  *bound = ntohs(address.sin_port);
  return fd;
}

}  // namespace

StatusOr<std::vector<int>> PickFreePorts(int count, const std::string& host) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) {
    return InvalidArgument("'", host, "' is not an IPv4 address to pick a port on");
  }
  // Ports below the kernel's ephemeral range, tried from a random start: a port bound with port 0
  // comes from that range, where any process's next connect() may take it as its local port
  // before the worker listens on it (seen here: a worker's own first connections).
  constexpr int kLowestPort = 10000;
  std::vector<int> candidates;
  if (const auto range = EphemeralPortRange(); range.has_value() && range->first > kLowestPort) {
    const int span = range->first - kLowestPort;
    std::mt19937 random(std::random_device{}());
    const int first = std::uniform_int_distribution<int>(0, span - 1)(random);
    // A bounded number of tries: a machine with that many ports in use falls back to port 0.
    for (int i = 0; i < std::min(span, 64 * count + 64); ++i) {
      candidates.push_back(kLowestPort + (first + i) % span);
    }
  }
  std::vector<int> fds, ports;
  for (int candidate : candidates) {
    if (static_cast<int>(ports.size()) == count) break;
    int bound = 0;
    const int fd = BindPort(address, candidate, &bound);
    if (fd < 0) continue;
    fds.push_back(fd);
    ports.push_back(bound);
  }
  Status status;
  while (static_cast<int>(ports.size()) < count) {
    int bound = 0;
    const int fd = BindPort(address, 0, &bound);
    if (fd < 0) {
      status = Unavailable("cannot find a free port on ", host, ": ", std::strerror(errno));
      break;
    }
    fds.push_back(fd);
    ports.push_back(bound);
  }
  // All held open until here, so the ports are distinct.
  for (int fd : fds) ::close(fd);
  if (!status.ok()) return status;
  return ports;
}

}  // namespace weft::net
