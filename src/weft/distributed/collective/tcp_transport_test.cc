// What only the TCP transport promises: the handshake turns strangers and garbage into Statuses
// (and keeps waiting for the right peer), and the pipelined ring works in many small chunks.
#include "weft/distributed/collective/tcp_transport.h"

#include <thread>

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "weft/distributed/testing/transport_test_util.h"

// In the test helpers' namespace, which these tests use throughout.
namespace weft {
namespace {

using testing::Case;
using testing::ExpectAllOkAndIdentical;
using testing::Group;
using testing::MemberContext;
using testing::RunCase;
using testing::RunCases;
using testing::RunMembers;

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Connects to "127.0.0.1:port" and sends `bytes`; returns the socket (the caller closes it).
int ConnectAndSend(const std::string& address, const std::string& bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  inet_pton(AF_INET, "127.0.0.1", &target.sin_addr);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&target), sizeof(target)), 0);
  EXPECT_EQ(::send(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  return fd;
}

const std::string kGarbage(64, 'x');

TEST(TcpTransportTest, GarbageConnectionIsDroppedAndTheRightPeerStillConnects) {
  Group group("tcp", 2);
  const int stranger = ConnectAndSend(group.addresses()[0], kGarbage);
  auto results = group.Run([&](const MemberContext& member) -> std::string {
    return RunCase<float>(member.transport(), {DataType::kFloat, {TensorShape({10})}, false}, 1, 0);
  });
  ::close(stranger);
  EXPECT_THAT(results[0].report, ::testing::Not(HasSubstr(":")));
  EXPECT_EQ(results[0].report, results[1].report);
}

TEST(TcpTransportTest, OnlyGarbageIsDeadlineExceededNamingTheRejectedConnection) {
  Group group("tcp", 2);
  const int stranger = ConnectAndSend(group.addresses()[0], kGarbage);
  auto transport = group.Create(0, std::chrono::milliseconds(500));
  ::close(stranger);
  ASSERT_FALSE(transport.ok());
  EXPECT_THAT(transport.status().ToString(), StartsWith("DEADLINE_EXCEEDED"));
  EXPECT_THAT(transport.status().message(), HasSubstr("/job:worker/task:1 (rank 1)"));
  EXPECT_THAT(transport.status().message(), HasSubstr("not a Weft collective handshake"));
}

TEST(TcpTransportTest, GarbageHandshakeReplyIsDataLossNamingThePeer) {
  Group group("tcp", 2);
  // Member 1 dials member 0's listener, where a stranger answers with garbage.
  const int listen_fd = group.TcpListener(0)->fd();
  std::thread stranger([listen_fd] {
    const int fd = ::accept(listen_fd, nullptr, nullptr);
    if (fd < 0) return;
    // Answer at once, then read until the dialer hangs up: closing with its hello or handshake
    // still unread would reset the connection and the dialer could see the reset, not the garbage.
    (void)!::send(fd, kGarbage.data(), kGarbage.size(), MSG_NOSIGNAL);
    ::shutdown(fd, SHUT_WR);
    char drain[256];
    for (int reads = 0; reads < 1000 && ::recv(fd, drain, sizeof(drain), 0) > 0; ++reads) {
    }
    ::close(fd);
  });
  auto transport = group.Create(1, std::chrono::seconds(5));
  stranger.join();
  ASSERT_FALSE(transport.ok());
  EXPECT_THAT(transport.status().ToString(), StartsWith("DATA_LOSS"));
  EXPECT_THAT(transport.status().message(), HasSubstr("/job:worker/task:0 (rank 0)"));
  EXPECT_THAT(transport.status().message(), HasSubstr(group.addresses()[0]));
}

TEST(TcpTransportTest, WrongGroupTokenIsRejectedOnBothSides) {
  Group group("tcp", 2);
  auto results = RunMembers(2, [&](const MemberContext& member) -> std::string {
    TransportOptions options = group.Options(member.rank(), std::chrono::milliseconds(700));
    if (member.rank() == 1) options.group_token += "-other";
    auto transport =
        CreateTcpTransport(options, group.TakeTcpListener(member.rank()), group.addresses());
    return transport.ok() ? "OK" : transport.status().ToString();
  });
  EXPECT_THAT(results[1].report, StartsWith("UNAVAILABLE"));
  EXPECT_THAT(results[1].report, HasSubstr("/job:worker/task:0 (rank 0)"));
  EXPECT_THAT(results[0].report, StartsWith("DEADLINE_EXCEEDED"));
  EXPECT_THAT(results[0].report, HasSubstr("rejected connections"));
  EXPECT_THAT(results[0].report, HasSubstr("-other"));
}

TEST(TcpTransportTest, RingInManySmallChunksIsBitwiseIdentical) {
  const std::vector<Case> cases = {{DataType::kFloat, {TensorShape({100003})}, true, false},
                                   {DataType::kDouble, {TensorShape({1}), TensorShape({5})}, false},
                                   {DataType::kFloat, {TensorShape({0})}, false}};
  for (int n : {3, 4}) {
    Group group("tcp", n);
    group.tuning.tcp.small_bytes = 0;
    group.tuning.tcp.chunk_bytes = 4096;
    auto results = group.Run([&](const MemberContext& member) -> std::string {
      return RunCases(member.transport(), cases, 1);
    });
    SCOPED_TRACE(StrCat(n, " members"));
    ExpectAllOkAndIdentical(results);
  }
}

}  // namespace
}  // namespace weft
