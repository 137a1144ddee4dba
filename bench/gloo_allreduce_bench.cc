// gloo_allreduce_bench: the Gloo side of `bench/run.sh collective` (W3). Gloo's ring all-reduce
// (gloo::allreduce with AllreduceOptions::Algorithm::RING, the call PyTorch's gloo backend makes)
// of a float32 sum over 2 and 4 processes on loopback: the TCP transport bound to 127.0.0.1, a
// FileStore in a fresh temporary folder for the rendezvous.
//
// The program forks its ranks before it touches Gloo or starts a thread; each rank connects the
// full mesh, checks one all-reduce's result, runs warm-up iterations, then timed ones. Each timed
// iteration starts after a barrier and builds its AllreduceOptions as a caller would; an
// iteration's time is the slowest rank's, and rank 0 prints the median per size:
//   METRIC gloo_allreduce<size>_<n>proc <median_us> us      (size in 4kb 256kb 4mb 64mb)
// The parent reaps every child; when a rank fails, a signal arrives or the deadline passes, it
// kills the rest, removes the folder and exits non-zero.
//
// Usage: gloo_allreduce_bench [--procs 2,4] [--sizes 4kb,256kb,4mb,64mb] [--iterations-scale X]
//                             [--deadline-seconds S]
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;

struct Size {
  std::string_view label;
  size_t bytes;
  int warmup;
  int iterations;
};

// Iterations per size: enough for a stable median, a few seconds in all on two cores.
constexpr Size kSizes[] = {{"4kb", size_t{4} << 10, 50, 400},
                           {"256kb", size_t{256} << 10, 20, 100},
                           {"4mb", size_t{4} << 20, 5, 30},
                           {"64mb", size_t{64} << 20, 2, 10}};

// Gloo's own deadline for connecting and for each operation, well inside the overall one.
constexpr std::chrono::seconds kGlooTimeout{60};

struct Flags {
  std::vector<int> procs = {2, 4};
  std::vector<Size> sizes = {std::begin(kSizes), std::end(kSizes)};
  double iterations_scale = 1.0;
  int deadline_seconds = 600;
};

volatile std::sig_atomic_t stop_signal = 0;

void OnSignal(int signal) { stop_signal = signal; }

std::vector<std::string> Split(std::string_view text) {
  std::vector<std::string> parts;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    parts.emplace_back(text.substr(0, comma));
    text.remove_prefix(comma == std::string_view::npos ? text.size() : comma + 1);
  }
  return parts;
}

bool ParseFlags(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "gloo_allreduce_bench: %s needs a value\n", argv[i]);
      return false;
    }
    const std::string value = argv[++i];
    if (flag == "--procs") {
      flags.procs.clear();
      for (const std::string& part : Split(value)) {
        const int n = std::atoi(part.c_str());
        if (n < 2 || n > 64) {
          std::fprintf(stderr, "gloo_allreduce_bench: bad process count '%s'\n", part.c_str());
          return false;
        }
        flags.procs.push_back(n);
      }
    } else if (flag == "--sizes") {
      flags.sizes.clear();
      for (const std::string& part : Split(value)) {
        const auto* size = std::find_if(std::begin(kSizes), std::end(kSizes),
                                        [&](const Size& s) { return s.label == part; });
        if (size == std::end(kSizes)) {
          std::fprintf(stderr, "gloo_allreduce_bench: unknown size '%s' (4kb 256kb 4mb 64mb)\n",
                       part.c_str());
          return false;
        }
        flags.sizes.push_back(*size);
      }
    } else if (flag == "--iterations-scale") {
      flags.iterations_scale = std::atof(value.c_str());
      if (!(flags.iterations_scale > 0)) {
        std::fprintf(stderr, "gloo_allreduce_bench: bad --iterations-scale '%s'\n", value.c_str());
        return false;
      }
    } else if (flag == "--deadline-seconds") {
      flags.deadline_seconds = std::atoi(value.c_str());
      if (flags.deadline_seconds <= 0) {
        std::fprintf(stderr, "gloo_allreduce_bench: bad --deadline-seconds '%s'\n", value.c_str());
        return false;
      }
    } else {
      std::fprintf(stderr, "gloo_allreduce_bench: unknown flag '%s'\n", argv[i - 1]);
      return false;
    }
  }
  return true;
}

// One float32 sum all-reduce in place, as PyTorch's gloo backend issues it.
void AllreduceSum(const std::shared_ptr<gloo::Context>& context, float* data, size_t count,
                  uint32_t tag) {
  gloo::AllreduceOptions options(context);
  options.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  options.setOutput(data, count);
  options.setReduceFunction(
      static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
  options.setTag(tag);
  gloo::allreduce(options);
}

void AllreduceMax(const std::shared_ptr<gloo::Context>& context, std::vector<double>& data,
                  uint32_t tag) {
  gloo::AllreduceOptions options(context);
  options.setOutput(data.data(), data.size());
  options.setReduceFunction(
      static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::max<double>));
  options.setTag(tag);
  gloo::allreduce(options);
}

void Barrier(const std::shared_ptr<gloo::Context>& context, uint32_t tag) {
  gloo::BarrierOptions options(context);
  options.setTag(tag);
  gloo::barrier(options);
}

// One rank's whole run; returns its exit status. Rank 0 prints the METRIC lines.
int RunRank(int rank, int size, const std::string& store_path, const Flags& flags) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  attr.ai_family = AF_INET;
  std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(store_path);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->setTimeout(kGlooTimeout);
  context->connectFullMesh(store, device);
  // Gloo matches messages by tag and slot; a fresh tag per operation, as PyTorch does.
  uint32_t tag = 0;

  for (const Size& s : flags.sizes) {
    const size_t count = s.bytes / sizeof(float);
    std::vector<float> data(count, static_cast<float>(rank + 1));
    AllreduceSum(context, data.data(), count, ++tag);
    const float expected = static_cast<float>(size * (size + 1) / 2);
    for (size_t i = 0; i < count; ++i) {
      if (data[i] != expected) {
        std::fprintf(stderr, "gloo_allreduce_bench: rank %d: element %zu of %s is %g, not %g\n",
                     rank, i, std::string(s.label).c_str(), data[i], expected);
        return 1;
      }
    }
    // Zeros from here on: sums of zeros stay finite however many iterations run.
    std::fill(data.begin(), data.end(), 0.0f);
    const int warmup = std::max(1, static_cast<int>(s.warmup * flags.iterations_scale));
    const int iterations = std::max(1, static_cast<int>(s.iterations * flags.iterations_scale));
    for (int i = 0; i < warmup; ++i) AllreduceSum(context, data.data(), count, ++tag);
    std::vector<double> micros(iterations);
    for (int i = 0; i < iterations; ++i) {
      Barrier(context, ++tag);
      const Clock::time_point start = Clock::now();
      AllreduceSum(context, data.data(), count, ++tag);
      micros[i] = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    }
    // An iteration lasts as long as its slowest rank.
    AllreduceMax(context, micros, ++tag);
    if (rank == 0) {
      std::nth_element(micros.begin(), micros.begin() + iterations / 2, micros.end());
      double median = micros[iterations / 2];
      if (iterations % 2 == 0) {
        median = (median + *std::max_element(micros.begin(), micros.begin() + iterations / 2)) / 2;
      }
      std::printf("METRIC gloo_allreduce%s_%dproc %.1f us\n", std::string(s.label).c_str(), size,
                  median);
      std::fflush(stdout);
    }
  }
  // Nobody leaves while a peer may still be reading from it.
  Barrier(context, ++tag);
  return 0;
}

void KillAll(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    if (pid > 0) kill(pid, SIGKILL);
  }
}

// Forks `size` ranks and reaps them all; returns whether every rank exited 0 in time.
bool RunGroup(int size, const Flags& flags, Clock::time_point deadline) {
  std::string store_path =
      (std::filesystem::temp_directory_path() / "gloo_allreduce_bench.XXXXXX").string();
  if (mkdtemp(store_path.data()) == nullptr) {
    std::fprintf(stderr, "gloo_allreduce_bench: mkdtemp: %s\n", std::strerror(errno));
    return false;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = getpid();
  std::vector<pid_t> pids(size, -1);
  bool ok = true;
  for (int rank = 0; rank < size && ok; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) {
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
      // Dies with the parent, even if the parent is killed outright.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      int status = 1;
      try {
        status = RunRank(rank, size, store_path, flags);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "gloo_allreduce_bench: rank %d of %d: %s\n", rank, size, e.what());
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(status);
    }
    if (pid < 0) {
      std::fprintf(stderr, "gloo_allreduce_bench: fork: %s\n", std::strerror(errno));
      ok = false;
    }
    pids[rank] = pid;
  }
  if (!ok) KillAll(pids);

  int running = 0;
  for (pid_t pid : pids) running += pid > 0;
  bool killed = !ok;
  while (running > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      auto it = std::find(pids.begin(), pids.end(), pid);
      if (it == pids.end()) continue;
      *it = -1;
      --running;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (!killed) {
          std::fprintf(stderr, "gloo_allreduce_bench: rank %d of %d failed (%s %d)\n",
                       static_cast<int>(it - pids.begin()), size,
                       WIFEXITED(status) ? "exit status" : "signal",
                       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        }
        ok = false;
      }
      if (!ok && !killed) {
        KillAll(pids);
        killed = true;
      }
      continue;
    }
    if (pid < 0 && errno != EINTR) break;  // no children left to wait for
    if (!killed && (stop_signal != 0 || Clock::now() > deadline)) {
      if (stop_signal != 0) {
        std::fprintf(stderr, "gloo_allreduce_bench: signal %d: stopping the ranks\n",
                     static_cast<int>(stop_signal));
      } else {
        std::fprintf(stderr, "gloo_allreduce_bench: deadline of %d s passed: killing the ranks\n",
                     flags.deadline_seconds);
      }
      KillAll(pids);
      killed = true;
      ok = false;
    }
    usleep(10'000);
  }
  std::error_code ignored;
  std::filesystem::remove_all(store_path, ignored);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, flags)) return 2;
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(flags.deadline_seconds);
  for (int size : flags.procs) {
    if (!RunGroup(size, flags, deadline)) return 1;
  }
  return 0;
}
