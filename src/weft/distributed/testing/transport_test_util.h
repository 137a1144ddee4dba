// Test-only helpers for the collective transports: RunMembers forks the (single-threaded) test
// process into N member processes, each running a body that returns a text report, and collects
// the reports and exit codes with a bounded deadline (stragglers are SIGKILLed; every child is
// reaped). Children leave with _exit, never returning into the test framework. Group sets up a
// group of any registered transport before the fork; RunCase runs one all-reduce and checks it,
// RunCases a list of them; BroadcastDigest and AllGatherDigest run one of those and check it. The
// checks return text rather than fail the test: they run in member processes that the framework
// never hears of.
#pragma once

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/core/bfloat16.h"
#include "weft/core/tensor.h"
#include "weft/distributed/collective/collective_transport_registry.h"

namespace weft::testing {

struct MemberResult {
  std::string report;  // what the body returned ("" when it never finished)
  int exit_code = -1;  // -1 when it did not exit by itself
};

class MemberContext {
 public:
  MemberContext(int rank, int release_fd, int hold_fd)
      : rank_(rank), release_fd_(release_fd), hold_fd_(hold_fd) {}
  // `member` on `transport` (as RunOnTransports hands it to a body).
  MemberContext(const MemberContext& member, CollectiveTransport* transport)
      : MemberContext(member) {
    transport_ = transport;
  }
  int rank() const { return rank_; }
  // The member's transport; only under RunOnTransports.
  CollectiveTransport& transport() const { return *transport_; }
  // Blocks until every other member has exited (or `limit` passed): a member that must stay alive
  // but idle while the others time out waiting for it.
  void WaitForOthersToExit(std::chrono::milliseconds limit) const {
    ::close(hold_fd_);  // every member holds the pipe open until it exits; this one stops now
    pollfd waiting{release_fd_, POLLIN, 0};
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          end - std::chrono::steady_clock::now());
      if (::poll(&waiting, 1, static_cast<int>(left.count()) + 1) > 0) {
        char byte;
        if (::read(release_fd_, &byte, 1) <= 0) return;  // every writer has gone
      }
    }
  }

 private:
  int rank_;
  int release_fd_;
  int hold_fd_;
  CollectiveTransport* transport_ = nullptr;
};

// Runs body(context) in `n` forked processes and returns their results by rank.
inline std::vector<MemberResult> RunMembers(
    int n, const std::function<std::string(const MemberContext&)>& body,
    std::chrono::milliseconds limit = std::chrono::seconds(40)) {
  std::vector<MemberResult> results(n);
  std::vector<pid_t> pids(n, -1);
  std::vector<int> pipes(n, -1);
  int release[2];
  if (::pipe(release) != 0) return results;
  std::fflush(nullptr);
  for (int rank = 0; rank < n; ++rank) {
    int report[2];
    if (::pipe(report) != 0) break;
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(report[0]);
      for (int fd : pipes) {
        if (fd >= 0) ::close(fd);
      }
      std::string text = body(MemberContext(rank, release[0], release[1]));
      size_t done = 0;
      while (done < text.size()) {
        const ssize_t n_written = ::write(report[1], text.data() + done, text.size() - done);
        if (n_written <= 0) break;
        done += static_cast<size_t>(n_written);
      }
      _exit(0);
    }
    ::close(report[1]);
    pids[rank] = pid;
    pipes[rank] = report[0];
  }
  ::close(release[0]);
  ::close(release[1]);
  const auto end = std::chrono::steady_clock::now() + limit;
  std::vector<bool> open(n, true);
  for (int rank = 0; rank < n; ++rank) open[rank] = pipes[rank] >= 0;
  auto reap = [&](int rank, bool kill_first) {
    if (pids[rank] < 0) return;
    if (kill_first) ::kill(pids[rank], SIGKILL);
    int status = 0;
    if (::waitpid(pids[rank], &status, 0) == pids[rank] && WIFEXITED(status)) {
      results[rank].exit_code = WEXITSTATUS(status);
    }
    pids[rank] = -1;
  };
  for (;;) {
    std::vector<pollfd> waiting;
    std::vector<int> ranks;
    for (int rank = 0; rank < n; ++rank) {
      if (open[rank]) {
        waiting.push_back({pipes[rank], POLLIN, 0});
        ranks.push_back(rank);
      }
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (waiting.empty() || left.count() <= 0) break;
    if (::poll(waiting.data(), waiting.size(), static_cast<int>(left.count()) + 1) <= 0) continue;
    for (size_t i = 0; i < waiting.size(); ++i) {
      if (waiting[i].revents == 0) continue;
      const int rank = ranks[i];
      char buffer[4096];
      const ssize_t got = ::read(pipes[rank], buffer, sizeof(buffer));
      if (got > 0) {
        results[rank].report.append(buffer, static_cast<size_t>(got));
      } else {
        // The member is exiting: reap it at once, so that peers asking whether it lives (the
        // shared-memory transport does) see it gone rather than a zombie.
        open[rank] = false;
        reap(rank, false);
      }
    }
  }
  for (int rank = 0; rank < n; ++rank) {
    if (pipes[rank] >= 0) ::close(pipes[rank]);
    reap(rank, true);
  }
  return results;
}

// Makes a member's transport, in the member's process.
using TransportFactory = std::function<StatusOr<std::unique_ptr<CollectiveTransport>>(int rank)>;
// What a member does (with member.transport()); returns the member's report.
using MemberBody = std::function<std::string(const MemberContext&)>;

// RunMembers where each member first makes its transport with `create` (a member whose transport
// cannot be made reports why) and then runs `body` on it.
inline std::vector<MemberResult> RunOnTransports(int n, const TransportFactory& create,
                                                 const MemberBody& body) {
  return RunMembers(n, [&](const MemberContext& member) -> std::string {
    auto transport = create(member.rank());
    if (!transport.ok()) return transport.status().ToString();
    return body(MemberContext(member, transport->get()));
  });
}

// A short hex digest of a tensor's bytes, to compare members' results bit for bit.
inline std::string Digest(const Tensor& tensor) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  const auto* bytes = static_cast<const unsigned char*>(tensor.raw_data());
  for (size_t i = 0; i < tensor.TotalBytes(); ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ULL;
  }
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

// One group's setup for the registered transport `transport`, made in the parent before forking
// (listeners must exist first); each member process builds its transport with Create. Members are
// on two "hosts" of contiguous ranks (the first half rounded up on "host-a"), which only the
// hierarchical transport looks at.
class Group {
 public:
  Group(std::string transport, int n) : transport_(std::move(transport)), n_(n) {
    static std::atomic<int> counter{0};
    token_ = StrCat("transport-test-", getpid(), "-", counter++);
    auto factory = CollectiveTransportRegistry::Global().Find(transport_);
    WEFT_CHECK(factory.ok()) << factory.status();
    factory_ = *factory;
    for (int r = 0; r < n && factory_->listen; ++r) {
      auto listener = factory_->listen("127.0.0.1");
      WEFT_CHECK(listener.ok()) << listener.status();
      addresses_.push_back((*listener)->address());
      listeners_.push_back(std::move(listener).value());
    }
    addresses_.resize(n);
    listeners_.resize(n);
    for (int r = 0; r < n; ++r) hosts_.push_back(r < (n + 1) / 2 ? "host-a" : "host-b");
    // The "hosts" share this machine's cores: the shared-memory stages must know how many wait.
    tuning.shm.host_processes = n;
  }
  TransportOptions Options(int rank, std::chrono::milliseconds timeout) const {
    TransportOptions options;
    options.rank = rank;
    options.world_size = n_;
    for (int r = 0; r < n_; ++r) options.member_names.push_back(StrCat("/job:worker/task:", r));
    options.group_token = token_;
    options.timeout = timeout;
    return options;
  }
  // Called in the member process.
  StatusOr<std::unique_ptr<CollectiveTransport>> Create(
      int rank, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    TransportConnection connection;
    connection.options = Options(rank, timeout);
    connection.member_hosts = hosts_;
    connection.member_addresses = addresses_;
    connection.listener = std::move(listeners_[rank]);
    connection.tuning = tuning;
    return factory_->connect(std::move(connection));
  }
  // RunOnTransports over every member of the group, each with the transport Create makes.
  std::vector<MemberResult> Run(std::chrono::milliseconds timeout, const MemberBody& body) {
    return RunOnTransports(
        n_, [&](int rank) { return Create(rank, timeout); }, body);
  }
  std::vector<MemberResult> Run(const MemberBody& body) {
    return Run(std::chrono::seconds(20), body);
  }
  const std::string& token() const { return token_; }
  const std::vector<std::string>& addresses() const { return addresses_; }
  // Member `rank`'s listener, for transports that listen over TCP.
  TcpTransportListener* TcpListener(int rank) {
    return dynamic_cast<TcpTransportListener*>(listeners_[rank].get());
  }
  std::unique_ptr<TcpTransportListener> TakeTcpListener(int rank) {
    WEFT_CHECK(TcpListener(rank) != nullptr) << transport_ << " has no TCP listener";
    return std::unique_ptr<TcpTransportListener>(
        static_cast<TcpTransportListener*>(listeners_[rank].release()));
  }

  CollectiveTransportTuning tuning;

 private:
  std::string transport_;
  const CollectiveTransportFactory* factory_ = nullptr;
  int n_;
  std::string token_;
  std::vector<std::unique_ptr<TransportListener>> listeners_;
  std::vector<std::string> addresses_;
  std::vector<std::string> hosts_;
};

// Member inputs. Small integers: every summation order gives the same exact sum.
inline double ExactValue(int rank, int tensor, int64_t i) {
  return static_cast<double>((i * 7 + rank * 13 + tensor * 5) % 17) - 8;
}
inline double RoughValue(int rank, int tensor, int64_t i) {
  return std::sin(static_cast<double>(i) * 0.37 + rank * 1.3 + tensor) * 1000.0 + 0.1 * rank;
}

struct Case {
  DataType dtype;
  std::vector<TensorShape> shapes;
  bool mean;
  bool exact = true;
};

// Runs one all-reduce and checks it against a plain sum; returns the outputs' digests, or what
// went wrong (a status text, or "WRONG ...").
template <typename T>
std::string RunCase(CollectiveTransport& transport, const Case& c, int64_t key, int64_t sequence) {
  const int n = transport.world_size();
  auto value = c.exact ? ExactValue : RoughValue;
  std::vector<Tensor> inputs;
  for (size_t t = 0; t < c.shapes.size(); ++t) {
    Tensor input(c.dtype, c.shapes[t]);
    for (int64_t i = 0; i < input.NumElements(); ++i) {
      input.data<T>()[i] = static_cast<T>(value(transport.rank(), static_cast<int>(t), i));
    }
    inputs.push_back(input);
  }
  std::vector<Tensor> outputs;
  Status status = transport.AllReduce(TransportOp{key, sequence, "test all-reduce"}, inputs,
                                      c.mean ? n : 1.0, &outputs);
  if (!status.ok()) return status.ToString();
  if (outputs.size() != inputs.size()) return "WRONG number of outputs";
  std::string digests;
  for (size_t t = 0; t < inputs.size(); ++t) {
    if (!(outputs[t].shape() == inputs[t].shape())) return "WRONG shape";
    for (int64_t i = 0; i < outputs[t].NumElements(); ++i) {
      if constexpr (std::is_same_v<T, bfloat16>) {
        // Summed in float32 and rounded once per sum, but a ring rounds each partial sum: within
        // a few of bfloat16's 2^-8 steps of the largest partial sum (at most the sum of the
        // magnitudes).
        float want = 0, magnitude = 0;
        for (int m = 0; m < n; ++m) {
          const float v = static_cast<float>(static_cast<T>(value(m, static_cast<int>(t), i)));
          want += v;
          magnitude += std::abs(v);
        }
        if (c.mean) {
          want /= static_cast<float>(n);
          magnitude /= static_cast<float>(n);
        }
        const float got = static_cast<float>(outputs[t].data<T>()[i]);
        if (std::abs(got - want) > 0.02f * (1 + magnitude)) {
          return StrCat("WRONG tensor ", t, " element ", i, ": ", got, " want ", want);
        }
        continue;
      } else {
        T want = static_cast<T>(value(0, static_cast<int>(t), i));
        for (int m = 1; m < n; ++m) want += static_cast<T>(value(m, static_cast<int>(t), i));
        if (c.mean) want /= static_cast<T>(n);
        const T got = outputs[t].data<T>()[i];
        const bool ok = c.exact ? got == want : std::abs(got - want) <= 1e-3 * (1 + std::abs(want));
        if (!ok) return StrCat("WRONG tensor ", t, " element ", i, ": ", got, " want ", want);
      }
    }
    digests += Digest(outputs[t]) + " ";
  }
  return digests;
}

// Whether what a check returned is a failure: a status text, a "WRONG ..." or no digest at all.
inline bool IsFailure(const std::string& got) {
  return got.find(' ') == std::string::npos || got.rfind("WRONG", 0) == 0 ||
         got.find(':') != std::string::npos;
}

// RunCase in the case's dtype (float32, float64 or bfloat16).
inline std::string RunAnyCase(CollectiveTransport& transport, const Case& c, int64_t key,
                              int64_t sequence) {
  switch (c.dtype) {
    case DataType::kFloat:
      return RunCase<float>(transport, c, key, sequence);
    case DataType::kBFloat16:
      return RunCase<bfloat16>(transport, c, key, sequence);
    default:
      return RunCase<double>(transport, c, key, sequence);
  }
}

// Appends `got` (digests) to `report`, or replaces `report` by `got` when that is a failure;
// returns whether the member may go on.
inline bool AppendDigests(const std::string& got, std::string* report) {
  if (IsFailure(got)) {
    *report = got;
    return false;
  }
  *report += got;
  return true;
}

// Runs `cases` in order (case i as sequence i of instance `key`): "OK " and every output's digest,
// or "case i: " and what went wrong with the first case that failed.
inline std::string RunCases(CollectiveTransport& transport, const std::vector<Case>& cases,
                            int64_t key) {
  std::string report = "OK ";
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string got = RunAnyCase(transport, cases[i], key, static_cast<int64_t>(i));
    if (!AppendDigests(got, &report)) return StrCat("case ", i, ": ", got);
  }
  return report;
}

// Broadcasts `size` float32 from `root` (which holds i % 999 + root at i; the others -1) and checks
// the result: its digest and a space, or what went wrong.
inline std::string BroadcastDigest(CollectiveTransport& transport, int root, int64_t size,
                                   int64_t sequence) {
  Tensor value(DataType::kFloat, TensorShape({size}));
  for (int64_t i = 0; i < size; ++i) {
    value.data<float>()[i] = transport.rank() == root ? static_cast<float>(i % 999 + root) : -1;
  }
  Status status = transport.Broadcast(TransportOp{3, sequence, "bcast"}, root, &value);
  if (!status.ok()) return status.ToString();
  for (int64_t i = 0; i < size; ++i) {
    if (value.data<float>()[i] != static_cast<float>(i % 999 + root)) {
      return StrCat("WRONG broadcast from ", root, " element ", i);
    }
  }
  return Digest(value) + " ";
}

// All-gathers `rows` x 3 float32 (member m holds m * 1000000 + i at i) and checks the rows' order:
// the result's digest and a space, or what went wrong.
inline std::string AllGatherDigest(CollectiveTransport& transport, int64_t rows, int64_t sequence) {
  const int n = transport.world_size();
  Tensor input(DataType::kFloat, TensorShape({rows, 3}));
  for (int64_t i = 0; i < rows * 3; ++i) {
    input.data<float>()[i] = static_cast<float>(transport.rank() * 1000000 + i);
  }
  Tensor output;
  Status status = transport.AllGather(TransportOp{4, sequence, "gather"}, input, &output);
  if (!status.ok()) return status.ToString();
  if (!(output.shape() == TensorShape({rows * n, 3}))) return "WRONG gather shape";
  for (int m = 0; m < n; ++m) {
    for (int64_t i = 0; i < rows * 3; ++i) {
      if (output.data<float>()[m * rows * 3 + i] != static_cast<float>(m * 1000000 + i)) {
        return StrCat("WRONG gather member ", m, " element ", i);
      }
    }
  }
  return Digest(output) + " ";
}

// In the test process: every member reported success, and the same results as member 0.
inline void ExpectAllOkAndIdentical(const std::vector<MemberResult>& results) {
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_THAT(results[r].report, ::testing::StartsWith("OK")) << "member " << r;
    EXPECT_EQ(results[r].report, results[0].report) << "member " << r << " differs from 0";
  }
}

}  // namespace weft::testing
