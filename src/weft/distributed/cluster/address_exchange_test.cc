#include "weft/distributed/cluster/address_exchange.h"

#include <cstring>
#include <thread>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace weft {
namespace {

std::unique_ptr<AddressExchangeServer> StartServer(int world_size, int64_t timeout_ms = 20000,
                                                   int port = 0) {
  AddressExchangeServer::Options options;
  options.port = port;
  options.world_size = world_size;
  options.timeout_ms = timeout_ms;
  StatusOr<std::unique_ptr<AddressExchangeServer>> server = AddressExchangeServer::Create(options);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  return std::move(server).value();
}

AddressExchangeOptions Registration(int port, int rank, int world_size,
                                    int64_t timeout_ms = 20000) {
  AddressExchangeOptions options;
  options.coordinator = "127.0.0.1:" + std::to_string(port);
  options.rank = rank;
  options.world_size = world_size;
  options.address = "host" + std::to_string(rank) + ":" + std::to_string(1000 + rank);
  options.timeout_ms = timeout_ms;
  return options;
}

// Registers ranks `ranks` of `world_size` concurrently, one thread each.
std::vector<StatusOr<std::vector<std::string>>> RegisterAll(int port, std::vector<int> ranks,
                                                            int world_size,
                                                            int64_t timeout_ms = 20000) {
  std::vector<StatusOr<std::vector<std::string>>> results(ranks.size(), Internal("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks.size(); ++i) {
    threads.emplace_back([&, i] {
      results[i] = ExchangeAddresses(Registration(port, ranks[i], world_size, timeout_ms));
    });
  }
  for (std::thread& thread : threads) thread.join();
  return results;
}

// A free loopback port (bound, then closed: another process could take it, which these tests
// accept).
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

// Connects to 127.0.0.1:port, sends `bytes`, returns what comes back until the peer hangs up.
std::string SendRaw(int port, const std::string& bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
  ::shutdown(fd, SHUT_WR);  // the request ends here
  std::string reply;
  char buffer[256];
  for (int i = 0; i < 1000; ++i) {  // bounded: replies are small
    const ssize_t got = ::recv(fd, buffer, sizeof(buffer), 0);
    if (got <= 0) break;
    reply.append(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  return reply;
}

TEST(AddressExchangeTest, EveryRankLearnsEveryAddressInRankOrder) {
  auto server = StartServer(4);
  ASSERT_NE(server, nullptr);
  auto results = RegisterAll(server->port(), {3, 1, 0, 2}, 4);
  const std::vector<std::string> expected = {"host0:1000", "host1:1001", "host2:1002",
                                             "host3:1003"};
  for (const auto& result : results) {
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(*result, expected);
  }
}

TEST(AddressExchangeTest, MissingRanksAreNamedAtTheDeadline) {
  auto server = StartServer(4, /*timeout_ms=*/300);
  ASSERT_NE(server, nullptr);
  const auto start = std::chrono::steady_clock::now();
  auto results = RegisterAll(server->port(), {0, 2}, 4);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  for (const auto& result : results) {
    ASSERT_FALSE(result.ok());
    EXPECT_TRUE(IsDeadlineExceeded(result.status())) << result.status();
    EXPECT_NE(result.status().message().find("rank(s) 1, 3 of 4 did not register"),
              std::string::npos)
        << result.status();
    EXPECT_NE(result.status().message().find("coordinator at 127.0.0.1:"), std::string::npos);
  }
}

TEST(AddressExchangeTest, WorkersWaitForACoordinatorThatStartsLate) {
  const int port = FreePort();
  std::vector<StatusOr<std::vector<std::string>>> results;
  std::thread workers([&] { results = RegisterAll(port, {0, 1}, 2); });
  auto server = StartServer(2, 20000, port);
  workers.join();
  ASSERT_NE(server, nullptr);
  for (const auto& result : results) {
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->size(), 2u);
  }
}

TEST(AddressExchangeTest, NobodyListeningIsADeadlineNamingTheCoordinator) {
  const int port = FreePort();
  StatusOr<std::vector<std::string>> result =
      ExchangeAddresses(Registration(port, 0, 2, /*timeout_ms=*/200));
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(IsDeadlineExceeded(result.status())) << result.status();
  EXPECT_NE(result.status().message().find("127.0.0.1:" + std::to_string(port)), std::string::npos);
}

TEST(AddressExchangeTest, BadRequestsGetAStatusAndTheCoordinatorKeepsServing) {
  auto server = StartServer(1);
  ASSERT_NE(server, nullptr);
  // Garbage of a whole header: answered with InvalidArgument (code 3 after the 8-byte magic).
  std::string reply = SendRaw(server->port(), std::string(24, 'x'));
  ASSERT_GE(reply.size(), 16u);
  uint32_t code = 0;
  std::memcpy(&code, reply.data() + 8, sizeof(code));
  EXPECT_EQ(code, static_cast<uint32_t>(Code::kInvalidArgument));
  EXPECT_NE(reply.find("bad magic"), std::string::npos);
  // A short request and a hang-up: nothing to answer.
  EXPECT_EQ(SendRaw(server->port(), "abc").size(), 0u);

  StatusOr<std::vector<std::string>> wrong_size =
      ExchangeAddresses(Registration(server->port(), 0, 3));
  EXPECT_TRUE(IsInvalidArgument(wrong_size.status())) << wrong_size.status();
  EXPECT_NE(wrong_size.status().message().find("expects 1"), std::string::npos);
  AddressExchangeOptions empty = Registration(server->port(), 0, 1);
  empty.address.clear();
  EXPECT_TRUE(IsInvalidArgument(ExchangeAddresses(empty).status()));

  StatusOr<std::vector<std::string>> ok = ExchangeAddresses(Registration(server->port(), 0, 1));
  ASSERT_TRUE(ok.ok()) << ok.status();
  // The same rank again: the same address is answered again, another one refused.
  EXPECT_TRUE(ExchangeAddresses(Registration(server->port(), 0, 1)).ok());
  AddressExchangeOptions moved = Registration(server->port(), 0, 1);
  moved.address = "elsewhere:1";
  StatusOr<std::vector<std::string>> twice = ExchangeAddresses(moved);
  EXPECT_EQ(twice.status().code(), Code::kAlreadyExists) << twice.status();
  EXPECT_NE(twice.status().message().find("registered twice"), std::string::npos);
}

TEST(AddressExchangeTest, AGarbageReplyIsAStatus) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t length = sizeof(address);
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  std::thread fake([listener] {
    const int fd = ::accept(listener, nullptr, nullptr);
    const std::string garbage(64, '\xff');
    [[maybe_unused]] ssize_t sent = ::send(fd, garbage.data(), garbage.size(), MSG_NOSIGNAL);
    // Keep reading until the client hangs up: closing first could reset the connection before
    // the client's request is written, and the client would see a broken pipe, not the garbage.
    ::shutdown(fd, SHUT_WR);
    char sink[256];
    for (int reads = 0; reads < 64; ++reads) {
      pollfd waiting{fd, POLLIN, 0};
      if (::poll(&waiting, 1, 2000) <= 0 || ::recv(fd, sink, sizeof(sink), 0) <= 0) break;
    }
    ::close(fd);
  });
  StatusOr<std::vector<std::string>> result =
      ExchangeAddresses(Registration(ntohs(address.sin_port), 0, 1, 2000));
  fake.join();
  ::close(listener);
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(IsDataLoss(result.status())) << result.status();
}

TEST(AddressExchangeTest, RendezvousClusterHasRankZeroHostTheCoordinator) {
  const int port = FreePort();
  std::vector<StatusOr<ClusterSpec>> clusters(3, Internal("not run"));
  std::vector<std::unique_ptr<AddressExchangeServer>> hosted(3);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 3; ++rank) {
    threads.emplace_back([&, rank] {
      ResolvedCluster resolved;
      resolved.source = ClusterSource::kOpenMpi;
      resolved.rank = rank;
      resolved.world_size = 3;
      resolved.coordinator = "127.0.0.1:" + std::to_string(port);
      clusters[rank] = RendezvousCluster(resolved, "127.0.0.1:" + std::to_string(7000 + rank),
                                         20000, &hosted[rank]);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_NE(hosted[0], nullptr);
  EXPECT_EQ(hosted[1], nullptr);
  for (const auto& cluster : clusters) {
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    EXPECT_EQ(cluster->ToFlag(), "worker=127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002");
  }
}

}  // namespace
}  // namespace weft
