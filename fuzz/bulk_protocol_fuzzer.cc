// libFuzzer target: both ends of the bulk data path (distributed/rpc/bulk_transfer.h), the
// server's parsing of a stream of requests and the client's parsing of a reply.
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_util.h"

#include "weft/core/logging.h"
#include "weft/core/notification.h"
#include "weft/distributed/rpc/bulk_transfer.h"

namespace weft::fuzz {
namespace {

constexpr size_t kRequestBytes = 16;  // {uint64 magic, uint64 ticket}
constexpr size_t kReplyBytes = 24;    // {uint64 magic, uint32 code, uint32 reserved, uint64 size}
constexpr int kIoTimeoutMs = 2000;    // the client's socket timeout
// A peer silent for this long is hung, not slow: far beyond kIoTimeoutMs, since a loaded 2-core
// machine can keep a thread from running for a second or more.
constexpr int kHangLimitMs = 10000;
constexpr int64_t kStep = 1;
constexpr char kToken[] = "fuzz-token";

int ConnectTo(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  WEFT_CHECK(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  WEFT_CHECK(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  return fd;
}

void SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return;  // the peer hung up: what it read so far is what it parsed
    bytes.remove_prefix(static_cast<size_t>(sent));
  }
}

// Waits until `fd` is readable; false after kHangLimitMs. Signals are retried: libFuzzer's -timeout
// watchdog interrupts system calls with SIGALRM.
bool WaitReadable(int fd) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kHangLimitMs);
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) return false;
    pollfd waiting{fd, POLLIN, 0};
    const int ready = ::poll(&waiting, 1, static_cast<int>(left.count()));
    if (ready > 0) return true;
    if (ready == 0) return false;
    WEFT_CHECK(errno == EINTR) << "poll: " << std::strerror(errno);
  }
}

// Everything the peer sends until it closes; checks that it does within kHangLimitMs.
std::string ReceiveUntilClosed(int fd) {
  std::string received;
  char buffer[4096];
  while (true) {
    WEFT_CHECK(WaitReadable(fd)) << "the peer neither answered nor closed";
    const ssize_t got = ::recv(fd, buffer, sizeof(buffer), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return received;
    received.append(buffer, static_cast<size_t>(got));
  }
}

template <typename T>
T Load(const char* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(value));
  return value;
}

// Reads exactly `size` bytes into `out`; the peer must send them within kHangLimitMs.
void ReceiveExactly(int fd, char* out, size_t size) {
  size_t got = 0;
  while (got < size) {
    WEFT_CHECK(WaitReadable(fd)) << "the peer sent " << got << " of " << size << " bytes";
    const ssize_t part = ::recv(fd, out + got, size - got, 0);
    if (part < 0 && errno == EINTR) continue;
    WEFT_CHECK(part > 0) << "the peer hung up after " << got << " of " << size << " bytes";
    got += static_cast<size_t>(part);
  }
}

// The server side: every reply must be well formed whatever the requests were, and a server with
// a token must hand out no tensor on a connection that never sent the token.
void FuzzServer(std::string_view requests, bool with_token) {
  static BulkTransferServer* open_server = BulkTransferServer::Create({}).value().release();
  static BulkTransferServer* token_server = [] {
    BulkTransferServer::Options options;
    options.token = kToken;
    return BulkTransferServer::Create(options).value().release();
  }();
  BulkTransferServer* server = with_token ? token_server : open_server;
  Tensor offered(DataType::kFloat, TensorShape({4}));
  for (int i = 0; i < 4; ++i) offered.data<float>()[i] = static_cast<float>(i);
  const uint64_t ticket = server->Offer(kStep, offered);
  std::string stream(requests);
  for (size_t at = 0; at + kRequestBytes <= stream.size(); ++at) {
    if (Load<uint64_t>(&stream[at]) == kBulkRequestMagic && Load<uint64_t>(&stream[at + 8]) == 1) {
      std::memcpy(&stream[at + 8], &ticket, 8);
    }
  }
  const int fd = ConnectTo(server->port());
  SendAll(fd, stream);
  ::shutdown(fd, SHUT_WR);
  const std::string replies = ReceiveUntilClosed(fd);
  ::close(fd);
  server->ReleaseStep(kStep);
  const bool sent_token = stream.find(kToken) != std::string::npos;
  for (size_t at = 0; at + kReplyBytes <= replies.size();) {
    WEFT_CHECK(Load<uint64_t>(&replies[at]) == kBulkReplyMagic) << "a reply without the magic";
    const uint32_t code = Load<uint32_t>(&replies[at + 8]);
    const uint64_t num_bytes = Load<uint64_t>(&replies[at + 16]);
    // Code 0 is a tensor or, with no bytes, the answer to a hello.
    WEFT_CHECK(code != 0 || num_bytes == 0 || num_bytes == offered.TotalBytes())
        << num_bytes << " bytes sent for a tensor of " << offered.TotalBytes();
    WEFT_CHECK(!with_token || sent_token || code != 0 || num_bytes == 0)
        << "a tensor went to a connection that never sent the token";
    at += kReplyBytes + (code == 0 ? num_bytes : 0);
  }
}

// The client side: the harness answers one fetch with the fuzz bytes.
void FuzzClient(size_t expected_bytes, std::string_view reply, bool with_token) {
  static const int listener = [] {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    WEFT_CHECK(fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
               ::listen(fd, 16) == 0);
    return fd;
  }();
  sockaddr_in bound{};
  socklen_t length = sizeof(bound);
  WEFT_CHECK(::getsockname(listener, reinterpret_cast<sockaddr*>(&bound), &length) == 0);
  const int port = ntohs(bound.sin_port);

  BulkTransferClient::Options options;
  options.num_threads = 1;
  options.io_timeout_ms = kIoTimeoutMs;
  if (with_token) options.token = kToken;
  auto client = std::make_unique<BulkTransferClient>(options);
  std::vector<char> destination(expected_bytes);
  const uint64_t ticket = 42;
  Notification fetched;
  Status status;
  client->FetchAsync("127.0.0.1", port, ticket, destination.data(), destination.size(),
                     [&](const Status& s) {
                       status = s;
                       fetched.Notify();
                     });
  WEFT_CHECK(WaitReadable(listener)) << "the client did not connect";
  int fd;
  do {
    fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  WEFT_CHECK(fd >= 0) << "accept: " << std::strerror(errno);
  // A client with a token opens with its hello and waits for the answer, which the fuzz bytes
  // give as well as the fetch's reply; its request follows into the socket unread.
  char request[kRequestBytes];
  ReceiveExactly(fd, request, sizeof(request));
  if (with_token) {
    WEFT_CHECK(Load<uint64_t>(request) == kBulkHelloMagic &&
               Load<uint32_t>(request + 8) == std::strlen(kToken));
    std::string token(std::strlen(kToken), '\0');
    ReceiveExactly(fd, token.data(), token.size());
    WEFT_CHECK(token == kToken) << "the client sent the token '" << token << "'";
  } else {
    WEFT_CHECK(Load<uint64_t>(request) == kBulkRequestMagic &&
               Load<uint64_t>(request + 8) == ticket);
  }
  SendAll(fd, reply);
  ::shutdown(fd, SHUT_WR);
  WEFT_CHECK(fetched.WaitForNotificationWithTimeout(std::chrono::milliseconds(kHangLimitMs)))
      << "the client neither finished nor failed";
  ::close(fd);
  client.reset();
}

}  // namespace
}  // namespace weft::fuzz

// The parsers read sockets and have no byte-buffer entry point, so the harness talks to them over
// loopback (127.0.0.1 only): the server is the real BulkTransferServer; for the client the harness
// plays the server. Input: one mode byte (bit 0: client side, else server side; bit 1: with the
// token "fuzz-token"), then for the server the request stream (hellos included); for the client a
// little-endian uint16 size the client expects, then the reply bytes (to the hello too, with a
// token). A request whose ticket is 1 is sent with the ticket of a tensor offered for this input,
// since real tickets are random.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::fuzz::InputReader input(data, size);
  const uint8_t mode = input.TakeByte();
  const bool with_token = (mode & 2) != 0;
  if ((mode & 1) == 0) {
    weft::fuzz::FuzzServer(input.TakeRest(), with_token);
  } else {
    const size_t expected = input.TakeU16();
    weft::fuzz::FuzzClient(expected, input.TakeRest(), with_token);
  }
  return 0;
}
