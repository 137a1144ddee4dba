// The socket layer over real sockets on 127.0.0.1 (ephemeral ports): deadlines on connecting,
// reading and accepting, the size limit on announced bodies, and the token hello.
#include "weft/core/net/socket.h"

#include <cstring>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/notification.h"

namespace weft::net {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr uint64_t kMagic = 0x5445535448454c4fULL;

// A listener with one connected pair: the client's socket and the server's.
struct Pair {
  Listener listener;
  Socket client;
  Socket server;
};

Pair Connected() {
  Pair pair;
  auto listener = Listener::Listen("127.0.0.1", 0);
  EXPECT_TRUE(listener.ok()) << listener.status();
  pair.listener = std::move(listener).value();
  auto client =
      ConnectWithDeadline("127.0.0.1", pair.listener.port(), DeadlineIn(std::chrono::seconds(10)));
  EXPECT_TRUE(client.ok()) << client.status();
  pair.client = std::move(client).value();
  auto server = pair.listener.Accept(DeadlineIn(std::chrono::seconds(10)));
  EXPECT_TRUE(server.ok()) << server.status();
  pair.server = std::move(server).value();
  return pair;
}

TEST(SocketTest, BytesCrossBothWays) {
  Pair pair = Connected();
  const auto deadline = DeadlineIn(std::chrono::seconds(10));
  ASSERT_TRUE(pair.client.WriteFull("hello", 5, deadline, "a greeting").ok());
  char got[5];
  ASSERT_TRUE(pair.server.ReadFull(got, 5, deadline, "a greeting").ok());
  EXPECT_EQ(std::string(got, 5), "hello");
  EXPECT_THAT(pair.server.peer(), StartsWith("127.0.0.1:"));
  EXPECT_EQ(pair.client.peer(), pair.listener.address());
}

TEST(SocketTest, ConnectingToANonListeningPortFailsAtTheDeadlineNamingIt) {
  int port = 0;
  {
    // A port that was free a moment ago and now has nobody listening.
    auto listener = Listener::Listen("127.0.0.1", 0);
    ASSERT_TRUE(listener.ok());
    port = listener->port();
  }
  const auto start = Clock::now();
  auto socket = ConnectWithDeadline("127.0.0.1", port, DeadlineIn(std::chrono::milliseconds(200)));
  ASSERT_FALSE(socket.ok());
  EXPECT_TRUE(IsDeadlineExceeded(socket.status())) << socket.status();
  EXPECT_THAT(socket.status().message(), HasSubstr(StrCat("127.0.0.1:", port)));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));

  auto once = ConnectWithDeadline("127.0.0.1", port, DeadlineIn(std::chrono::seconds(10)),
                                  /*retry_refused=*/false);
  ASSERT_FALSE(once.ok());
  EXPECT_TRUE(IsUnavailable(once.status())) << once.status();
  EXPECT_THAT(once.status().message(), HasSubstr(StrCat("connecting to 127.0.0.1:", port)));
}

TEST(SocketTest, ReadFromASilentPeerTimesOutNamingThePeerAndWhatWasAwaited) {
  Pair pair = Connected();
  char byte;
  Status status =
      pair.client.ReadFull(&byte, 1, DeadlineIn(std::chrono::milliseconds(100)), "the reply");
  EXPECT_TRUE(IsDeadlineExceeded(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("reading the reply from " + pair.listener.address()));
}

TEST(SocketTest, APeerThatHangsUpIsUnavailableWithHowFarTheReadGot) {
  Pair pair = Connected();
  ASSERT_TRUE(pair.server.WriteFull("ab", 2, DeadlineIn(std::chrono::seconds(10)), "two").ok());
  pair.server.Close();
  char got[4];
  Status status = pair.client.ReadFull(got, 4, DeadlineIn(std::chrono::seconds(10)), "a header");
  EXPECT_TRUE(IsUnavailable(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("closed after 2 of 4 bytes"));
}

TEST(SocketTest, ShutdownWakesABlockedRead) {
  Pair pair = Connected();
  Notification reading;
  Status status;
  std::thread reader([&] {
    reading.Notify();
    char byte;
    status = pair.client.ReadFull(&byte, 1, DeadlineIn(std::chrono::seconds(30)), "anything");
  });
  reading.WaitForNotification();
  // Before or during the read: either way the read ends with the connection closed.
  pair.client.Shutdown();
  reader.join();
  EXPECT_TRUE(IsUnavailable(status)) << status;
}

TEST(SocketTest, AnOversizedBodyIsRefusedUnread) {
  Pair pair = Connected();
  auto body = pair.server.ReadSized(uint64_t{1} << 40, 1024, DeadlineIn(std::chrono::seconds(10)),
                                    "an address list");
  ASSERT_FALSE(body.ok());
  EXPECT_TRUE(IsDataLoss(body.status())) << body.status();
  EXPECT_THAT(body.status().message(), HasSubstr("an address list of 1099511627776 bytes"));
  EXPECT_THAT(body.status().message(), HasSubstr(pair.server.peer()));
}

TEST(SocketTest, TokenHelloCarriesTheToken) {
  Pair pair = Connected();
  const auto deadline = DeadlineIn(std::chrono::seconds(10));
  ASSERT_TRUE(WriteTokenHello(pair.client, kMagic, "secret", deadline).ok());
  uint64_t magic = 0;
  ASSERT_TRUE(pair.server.ReadFull(&magic, sizeof(magic), deadline, "a magic").ok());
  EXPECT_EQ(magic, kMagic);
  auto token = ReadTokenHelloAfterMagic(pair.server, deadline);
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "secret");
  EXPECT_TRUE(CheckHelloToken(pair.server, "secret", *token).ok());
  EXPECT_TRUE(CheckHelloToken(pair.server, "", *token).ok());  // no token wanted: any will do
}

TEST(SocketTest, AHelloWithTheWrongTokenIsRefusedNamingThePeer) {
  Pair pair = Connected();
  const auto deadline = DeadlineIn(std::chrono::seconds(10));
  ASSERT_TRUE(WriteTokenHello(pair.client, kMagic, "guess", deadline).ok());
  uint64_t magic = 0;
  ASSERT_TRUE(pair.server.ReadFull(&magic, sizeof(magic), deadline, "a magic").ok());
  auto token = ReadTokenHelloAfterMagic(pair.server, deadline);
  ASSERT_TRUE(token.ok()) << token.status();
  for (const char* expected : {"secret", "guesz", "guess-longer"}) {
    Status status = CheckHelloToken(pair.server, expected, *token);
    EXPECT_TRUE(IsUnauthenticated(status)) << expected;
    EXPECT_THAT(status.message(), HasSubstr("hello from " + pair.server.peer()));
  }
}

TEST(SocketTest, AHelloWithAnOversizedTokenIsRefused) {
  Pair pair = Connected();
  const auto deadline = DeadlineIn(std::chrono::seconds(10));
  const std::string huge(kMaxHelloTokenBytes + 1, 'x');
  ASSERT_TRUE(WriteTokenHello(pair.client, kMagic, huge, deadline).ok());
  uint64_t magic = 0;
  ASSERT_TRUE(pair.server.ReadFull(&magic, sizeof(magic), deadline, "a magic").ok());
  auto token = ReadTokenHelloAfterMagic(pair.server, deadline);
  ASSERT_FALSE(token.ok());
  EXPECT_TRUE(IsDataLoss(token.status())) << token.status();
  EXPECT_THAT(token.status().message(), HasSubstr("a hello token of 4097 bytes"));
}

TEST(SocketTest, AcceptTimesOutNamingTheListener) {
  auto listener = Listener::Listen("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok());
  auto socket = listener->Accept(DeadlineIn(std::chrono::milliseconds(50)));
  ASSERT_FALSE(socket.ok());
  EXPECT_TRUE(IsDeadlineExceeded(socket.status())) << socket.status();
  EXPECT_THAT(socket.status().message(), HasSubstr("accepting at " + listener->address()));
}

TEST(SocketTest, BadAddressesAreInvalidArgumentNamingThem) {
  EXPECT_THAT(SplitHostPort("nohost").status().message(), HasSubstr("'nohost'"));
  EXPECT_THAT(SplitHostPort("h:70000").status().message(), HasSubstr("'h:70000' has a bad port"));
  auto ok = SplitHostPort("[::1]:80");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->host, "::1");
  EXPECT_EQ(ok->port, 80);
}

}  // namespace
}  // namespace weft::net
