// Test-only helpers for the collective transports: RunMembers forks the (single-threaded) test
// process into N member processes, each running a body that returns a text report, and collects
// the reports and exit codes with a bounded deadline (stragglers are SIGKILLed; every child is
// reaped). Children leave with _exit, never returning into the test framework. Group sets up a
// shared-memory or TCP group before the fork; RunCase runs one all-reduce and checks it.
#pragma once

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/core/tensor.h"
#include "weft/distributed/collective/shm_transport.h"
#include "weft/distributed/collective/tcp_transport.h"

namespace weft::transport_testing {

struct MemberResult {
  std::string report;  // what the body returned ("" when it never finished)
  int exit_code = -1;  // -1 when it did not exit by itself
};

class MemberContext {
 public:
  MemberContext(int rank, int release_fd, int hold_fd)
      : rank_(rank), release_fd_(release_fd), hold_fd_(hold_fd) {}
  int rank() const { return rank_; }
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

enum class Kind { kShm, kTcp };

// One group's setup, made in the parent before forking (TCP listeners must exist first); each
// member process builds its transport with Create.
class Group {
 public:
  Group(Kind kind, int n) : kind_(kind), n_(n) {
    static std::atomic<int> counter{0};
    token_ = StrCat("transport-test-", getpid(), "-", counter++);
    if (kind == Kind::kTcp) {
      for (int r = 0; r < n; ++r) {
        auto listener = TcpTransportListener::Listen("127.0.0.1");
        WEFT_CHECK(listener.ok()) << listener.status();
        addresses_.push_back((*listener)->address());
        listeners_.push_back(std::move(listener).value());
      }
    }
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
    if (kind_ == Kind::kShm) return CreateShmTransport(Options(rank, timeout), shm_tuning);
    return CreateTcpTransport(Options(rank, timeout), std::move(listeners_[rank]), addresses_,
                              tcp_tuning);
  }
  const std::string& token() const { return token_; }
  const std::vector<std::string>& addresses() const { return addresses_; }
  std::unique_ptr<TcpTransportListener>& listener(int rank) { return listeners_[rank]; }

  ShmTransportTuning shm_tuning;
  TcpTransportTuning tcp_tuning;

 private:
  Kind kind_;
  int n_;
  std::string token_;
  std::vector<std::unique_ptr<TcpTransportListener>> listeners_;
  std::vector<std::string> addresses_;
};

// Member inputs. Small integers: every summation order gives the same exact sum.: every summation
// order gives the same exact sum.
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
      T want = static_cast<T>(value(0, static_cast<int>(t), i));
      for (int m = 1; m < n; ++m) want += static_cast<T>(value(m, static_cast<int>(t), i));
      if (c.mean) want /= static_cast<T>(n);
      const T got = outputs[t].data<T>()[i];
      const bool ok = c.exact ? got == want : std::abs(got - want) <= 1e-3 * (1 + std::abs(want));
      if (!ok) return StrCat("WRONG tensor ", t, " element ", i, ": ", got, " want ", want);
    }
    digests += Digest(outputs[t]) + " ";
  }
  return digests;
}

}  // namespace weft::transport_testing
