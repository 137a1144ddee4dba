#include "weft/distributed/rpc/bulk_transfer.h"

#include <chrono>
#include <cstring>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "weft/core/notification.h"
#include "weft/distributed/rpc/testing/rpc_test_util.h"

namespace weft {
namespace {

using testing::PatternTensor;

// A raw client socket with a 5 s receive timeout, so a server bug fails the test.
int RawConnect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether the server closed `fd` (end of stream) within the receive timeout.
bool PeerClosed(int fd) {
  char byte;
  for (int i = 0; i < 1000; ++i) {
    ssize_t got = ::recv(fd, &byte, 1, 0);
    if (got == 0) return true;
    if (got < 0) return errno == ECONNRESET;
  }
  return false;
}

class BulkTransferTest : public ::testing::Test {
 protected:
  BulkTransferTest() {
    BulkTransferServer::Options options;
    options.max_connections = 8;
    auto created = BulkTransferServer::Create(options);
    EXPECT_TRUE(created.ok()) << created.status();
    server_ = std::move(created).value();
  }

  Status Fetch(uint64_t ticket, void* destination, size_t num_bytes) {
    Notification finished;
    Status result;
    client_.FetchAsync("127.0.0.1", server_->port(), ticket, destination, num_bytes,
                       [&](const Status& status) {
                         result = status;
                         finished.Notify();
                       });
    if (!finished.WaitForNotificationWithTimeout(std::chrono::seconds(30))) {
      ADD_FAILURE() << "fetch hung";
      finished.WaitForNotification();
    }
    return result;
  }

  // Checks that the server still serves a fresh ticket.
  void ExpectServing() {
    Tensor value = PatternTensor(1000, 9);
    uint64_t ticket = server_->Offer(1, value);
    std::vector<uint8_t> out(1000);
    ASSERT_TRUE(Fetch(ticket, out.data(), out.size()).ok());
    EXPECT_EQ(std::memcmp(out.data(), value.raw_data(), 1000), 0);
  }

  std::unique_ptr<BulkTransferServer> server_;
  BulkTransferClient client_;
};

TEST_F(BulkTransferTest, FetchesBytesExactly) {
  ASSERT_GT(server_->port(), 0);
  for (int64_t size : {int64_t{1}, int64_t{65536}, int64_t{1} << 20, int64_t{3} << 20}) {
    Tensor value = PatternTensor(size, static_cast<uint8_t>(size));
    uint64_t ticket = server_->Offer(7, value);
    EXPECT_NE(ticket, 0u);
    std::vector<uint8_t> out(static_cast<size_t>(size));
    ASSERT_TRUE(Fetch(ticket, out.data(), out.size()).ok());
    EXPECT_EQ(std::memcmp(out.data(), value.raw_data(), out.size()), 0) << size;
  }
  EXPECT_EQ(server_->NumOffered(), 0u);
}

TEST_F(BulkTransferTest, TicketIsFetchedOnlyOnce) {
  uint64_t ticket = server_->Offer(1, PatternTensor(100, 1));
  std::vector<uint8_t> out(100);
  ASSERT_TRUE(Fetch(ticket, out.data(), out.size()).ok());
  Status again = Fetch(ticket, out.data(), out.size());
  EXPECT_EQ(again.code(), Code::kInternal);
  EXPECT_NE(again.message().find(std::to_string(ticket)), std::string::npos) << again;
  EXPECT_NE(again.message().find("127.0.0.1:" + std::to_string(server_->port())), std::string::npos)
      << again;
  ExpectServing();
}

TEST_F(BulkTransferTest, ReleaseStepMakesTicketsUnknown) {
  uint64_t released = server_->Offer(5, PatternTensor(100, 1));
  uint64_t kept = server_->Offer(6, PatternTensor(100, 2));
  server_->ReleaseStep(5);
  EXPECT_EQ(server_->NumOffered(), 1u);
  std::vector<uint8_t> out(100);
  EXPECT_FALSE(Fetch(released, out.data(), out.size()).ok());
  EXPECT_TRUE(Fetch(kept, out.data(), out.size()).ok());
}

TEST_F(BulkTransferTest, WrongSizeIsAnError) {
  uint64_t ticket = server_->Offer(1, PatternTensor(100, 1));
  std::vector<uint8_t> out(200);
  Status status = Fetch(ticket, out.data(), out.size());
  EXPECT_EQ(status.code(), Code::kInternal);
  ExpectServing();
}

TEST_F(BulkTransferTest, GarbageAndBadMagicCloseTheConnection) {
  int fd = RawConnect(server_->port());
  ASSERT_GE(fd, 0);
  const char garbage[16] = "not a request!!";
  ASSERT_EQ(::send(fd, garbage, sizeof(garbage), MSG_NOSIGNAL), 16);
  EXPECT_TRUE(PeerClosed(fd));
  ::close(fd);

  fd = RawConnect(server_->port());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::send(fd, "abc", 3, MSG_NOSIGNAL), 3);  // a short header, then hang up
  ::close(fd);
  ExpectServing();
}

TEST_F(BulkTransferTest, UnknownTicketKeepsTheConnection) {
  int fd = RawConnect(server_->port());
  ASSERT_GE(fd, 0);
  uint64_t request[2] = {kBulkRequestMagic, 12345};
  uint64_t reply[3];
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(::send(fd, request, sizeof(request), MSG_NOSIGNAL), 16);
    ASSERT_EQ(::recv(fd, reply, sizeof(reply), MSG_WAITALL), 24);
    EXPECT_EQ(reply[0], kBulkReplyMagic);
    EXPECT_NE(reply[1] & 0xffffffffu, 0u);
  }
  ::close(fd);
}

TEST_F(BulkTransferTest, PeerHangingUpMidTransferLeavesServerAlive) {
  uint64_t ticket = server_->Offer(1, PatternTensor(int64_t{32} << 20, 3));
  int fd = RawConnect(server_->port());
  ASSERT_GE(fd, 0);
  uint64_t request[2] = {kBulkRequestMagic, ticket};
  ASSERT_EQ(::send(fd, request, sizeof(request), MSG_NOSIGNAL), 16);
  char some[4096];
  ASSERT_GT(::recv(fd, some, sizeof(some), 0), 0);
  ::close(fd);
  ExpectServing();
}

TEST_F(BulkTransferTest, ExtraConnectionsAreRefused) {
  // Each of the eight answers a request, so the server has taken it (no waiting on time).
  std::vector<int> fds;
  for (int i = 0; i < 8; ++i) {
    const int fd = RawConnect(server_->port());
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
    uint64_t request[2] = {kBulkRequestMagic, 12345};
    uint64_t reply[3];
    ASSERT_EQ(::send(fd, request, sizeof(request), MSG_NOSIGNAL), 16);
    ASSERT_EQ(::recv(fd, reply, sizeof(reply), MSG_WAITALL), 24);
  }
  int extra = RawConnect(server_->port());
  ASSERT_GE(extra, 0);  // the kernel accepts; the server then closes it
  EXPECT_TRUE(PeerClosed(extra));
  ::close(extra);
  // A bad request makes the server hang up, and it counts the connection as ended before it does:
  // once the eight have seen that, a new connection is served.
  for (int fd : fds) {
    const uint64_t bad[2] = {0, 0};
    ASSERT_EQ(::send(fd, bad, sizeof(bad), MSG_NOSIGNAL), 16);
    EXPECT_TRUE(PeerClosed(fd));
    ::close(fd);
  }
  ExpectServing();
}

TEST_F(BulkTransferTest, ConnectionRefusedIsUnavailableNamingPeer) {
  const int port = server_->port();
  server_->Shutdown();
  std::vector<uint8_t> out(10);
  Status status = Fetch(77, out.data(), out.size());
  EXPECT_EQ(status.code(), Code::kUnavailable);
  EXPECT_NE(status.message().find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << status;
}

TEST_F(BulkTransferTest, PooledConnectionToRestartedServerIsRetried) {
  ExpectServing();  // leaves a pooled connection
  BulkTransferServer::Options options;
  options.port = server_->port();
  server_.reset();
  auto restarted = BulkTransferServer::Create(options);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  server_ = std::move(restarted).value();
  ExpectServing();
}

TEST_F(BulkTransferTest, ShutdownWithOpenConnectionsJoins) {
  int fd = RawConnect(server_->port());
  ASSERT_GE(fd, 0);
  auto start = std::chrono::steady_clock::now();
  server_->Shutdown();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  ::close(fd);
}

}  // namespace
}  // namespace weft
