// W3 across processes: float32 sum all-reduce of 4 KB, 256 KB, 4 MB and 64 MB over 2 and 4
// processes (forked from this program), through the shared-memory and the TCP transport, and on
// request the hierarchical one with the processes as 2 "hosts" of N/2 (all really on this machine).
// Prints `METRIC allreduce<size>_<n>proc[_tcp|_hier] <median_us> us` (shm without suffix), the
// median of rank 0's timed calls after warm-up. Usage: collective_bench [--transport NAME]
// (a registered transport; "hier": hierarchical) [--procs N] [--size 4kb|256kb|4mb|64mb] (each may
// repeat; shm and tcp, 2 and 4, all sizes when absent) [--shm-small BYTES] [--tcp-small BYTES]
// [--tcp-chunk BYTES].
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "weft/core/str_util.h"
#include "weft/core/tensor.h"
#include "weft/distributed/collective/collective_transport_registry.h"

namespace weft {
namespace {

struct Size {
  std::string name;
  int64_t elements;
  int warmup;
  int timed;
};

struct Config {
  std::vector<std::string> transports;
  std::vector<int> procs;
  std::vector<Size> sizes;
  CollectiveTransportTuning tuning;
};

// The metric suffix of a registered transport ("hier" for the hierarchical one, as it always was).
std::string MetricSuffix(const std::string& transport) {
  if (transport == "shm") return "";
  return "_" + std::string(transport == "hierarchical" ? "hier" : transport);
}

// Runs in member `rank`: returns rank 0's median per size in microseconds (others return empty).
std::vector<double> RunMember(const Config& config, const CollectiveTransportFactory& factory,
                              int rank, int n, const std::string& token,
                              std::vector<std::unique_ptr<TransportListener>>& listeners,
                              const std::vector<std::string>& addresses, std::string* error) {
  TransportConnection connection;
  connection.options.rank = rank;
  connection.options.world_size = n;
  connection.options.group_token = token;
  connection.options.timeout = std::chrono::seconds(60);
  // Two "hosts" of n/2 contiguous ranks each (n/2 rounded up on the first); only the hierarchical
  // transport looks.
  for (int r = 0; r < n; ++r)
    connection.member_hosts.push_back(r < (n + 1) / 2 ? "host-a" : "host-b");
  connection.member_addresses = addresses;
  connection.listener = std::move(listeners[rank]);
  connection.tuning = config.tuning;
  // The "hosts" share this machine's cores: the shared-memory stages must know how many wait.
  if (factory.name == "hierarchical") connection.tuning.shm.host_processes = n;
  StatusOr<std::unique_ptr<CollectiveTransport>> transport = factory.connect(std::move(connection));
  if (!transport.ok()) {
    *error = transport.status().ToString();
    return {};
  }
  std::vector<double> medians;
  int64_t sequence = 0;
  for (const Size& size : config.sizes) {
    Tensor input(DataType::kFloat, TensorShape({size.elements}));
    for (int64_t i = 0; i < size.elements; ++i) input.data<float>()[i] = (i + rank) % 7;
    std::vector<Tensor> outputs;
    std::vector<double> times;
    for (int i = 0; i < size.warmup + size.timed; ++i) {
      const auto start = std::chrono::steady_clock::now();
      Status status =
          (*transport)->AllReduce(TransportOp{1, sequence++, "bench"}, {input}, 1.0, &outputs);
      const auto took = std::chrono::steady_clock::now() - start;
      if (!status.ok()) {
        *error = status.ToString();
        return {};
      }
      if (i >= size.warmup)
        times.push_back(std::chrono::duration<double, std::micro>(took).count());
    }
    std::sort(times.begin(), times.end());
    medians.push_back(times[times.size() / 2]);
  }
  return medians;
}

bool RunGroup(const Config& config, const std::string& transport_name, int n) {
  static int groups = 0;
  const std::string token =
      "collective-bench-" + std::to_string(getpid()) + "-" + std::to_string(groups++);
  auto factory = CollectiveTransportRegistry::Global().Find(transport_name);
  if (!factory.ok()) {
    std::fprintf(stderr, "%s\n", factory.status().ToString().c_str());
    return false;
  }
  std::vector<std::unique_ptr<TransportListener>> listeners(n);
  std::vector<std::string> addresses(n);
  for (int r = 0; r < n && (*factory)->listen; ++r) {
    auto listener = (*factory)->listen("127.0.0.1");
    if (!listener.ok()) {
      std::fprintf(stderr, "%s\n", listener.status().ToString().c_str());
      return false;
    }
    addresses[r] = (*listener)->address();
    listeners[r] = std::move(listener).value();
  }
  int report[2];
  if (pipe(report) != 0) return false;
  std::fflush(nullptr);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < n; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) {
      close(report[0]);
      std::string error;
      std::vector<double> medians =
          RunMember(config, **factory, rank, n, token, listeners, addresses, &error);
      std::string text;
      if (!error.empty()) {
        text = "ERROR rank " + std::to_string(rank) + ": " + error + "\n";
      } else if (rank == 0) {
        for (size_t i = 0; i < medians.size(); ++i) {
          text += "METRIC allreduce" + config.sizes[i].name + "_" + std::to_string(n) + "proc" +
                  MetricSuffix(transport_name) + " " +
                  std::to_string(static_cast<int64_t>(medians[i] + 0.5)) + " us\n";
        }
      }
      if (!text.empty()) (void)!write(report[1], text.data(), text.size());
      _exit(error.empty() ? 0 : 1);
    }
    pids.push_back(pid);
  }
  close(report[1]);
  listeners.clear();
  std::string output;
  char buffer[4096];
  for (ssize_t got; (got = read(report[0], buffer, sizeof(buffer))) > 0;)
    output.append(buffer, got);
  close(report[0]);
  bool ok = true;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  std::fputs(output.c_str(), ok ? stdout : stderr);
  std::fflush(stdout);
  return ok;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) {
  using weft::Size;
  const std::vector<Size> all_sizes = {{"4kb", 1 << 10, 50, 400},
                                       {"256kb", 1 << 16, 20, 100},
                                       {"4mb", 1 << 20, 5, 25},
                                       {"64mb", 1 << 24, 2, 9}};
  weft::Config config;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--transport") {
      // "hier" is the hierarchical transport's old short name.
      const std::string name = value == "hier" ? "hierarchical" : value;
      auto found = weft::CollectiveTransportRegistry::Global().Find(name);
      if (!found.ok()) {
        std::fprintf(stderr, "%s\n", found.status().ToString().c_str());
        return 2;
      }
      config.transports.push_back(name);
    } else if (flag == "--procs") {
      config.procs.push_back(std::atoi(value.c_str()));
    } else if (flag == "--size") {
      for (const Size& size : all_sizes) {
        if (size.name == value) config.sizes.push_back(size);
      }
    } else if (flag == "--shm-small") {
      config.tuning.shm.small_bytes = std::strtoull(value.c_str(), nullptr, 10);
    } else if (flag == "--tcp-small") {
      config.tuning.tcp.small_bytes = std::strtoull(value.c_str(), nullptr, 10);
    } else if (flag == "--tcp-chunk") {
      config.tuning.tcp.chunk_bytes = std::strtoull(value.c_str(), nullptr, 10);
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (config.transports.empty()) config.transports = {"shm", "tcp"};
  if (config.procs.empty()) config.procs = {2, 4};
  if (config.sizes.empty()) config.sizes = all_sizes;
  bool ok = true;
  for (const std::string& transport : config.transports) {
    for (int n : config.procs) ok = weft::RunGroup(config, transport, n) && ok;
  }
  return ok ? 0 : 1;
}
