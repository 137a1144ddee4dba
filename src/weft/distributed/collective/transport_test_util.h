// Test-only helpers for the collective transports: RunMembers forks the (single-threaded) test
// process into N member processes, each running a body that returns a text report, and collects
// the reports and exit codes with a bounded deadline (stragglers are SIGKILLed; every child is
// reaped). Children leave with _exit, never returning into the test framework.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/core/tensor.h"

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

}  // namespace weft::transport_testing
