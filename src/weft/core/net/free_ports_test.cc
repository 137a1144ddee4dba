#include "weft/core/net/free_ports.h"

#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace weft::net {
namespace {

TEST(FreePortsTest, PicksDistinctFreePortsOutsideTheEphemeralRange) {
  StatusOr<std::vector<int>> ports = PickFreePorts(8);
  ASSERT_TRUE(ports.ok()) << ports.status();
  EXPECT_EQ(std::set<int>(ports->begin(), ports->end()).size(), 8u);
  for (int port : *ports) EXPECT_GT(port, 0);
  // Outside the range the kernel gives outgoing connections their local ports from, where it says.
  std::ifstream range_file("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0, high = 0;
  if (range_file >> low >> high && low > 12000) {
    for (int port : *ports) EXPECT_TRUE(port < low || port > high) << port;
  }
  // Each one is free: a listener binds it.
  for (int port : *ports) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << port;
    ::close(fd);
  }
}

TEST(FreePortsTest, AHostThatIsNotAnIpv4AddressIsNamed) {
  StatusOr<std::vector<int>> ports = PickFreePorts(2, "localhost:80");
  ASSERT_FALSE(ports.ok());
  EXPECT_NE(ports.status().message().find("'localhost:80' is not an IPv4 address"),
            std::string::npos)
      << ports.status();
}

}  // namespace
}  // namespace weft::net
