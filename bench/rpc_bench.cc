// W4/W5 over the cluster runtime: two real `weft server` processes on loopback. Prints
//   METRIC tcp_64mb_gbps                    raw loopback TCP between two processes (the floor)
//   METRIC recvtensor_64mb_gbps             RecvTensor of a 64 MB float tensor from a server
//   METRIC recvtensor_64mb_fraction_of_tcp  the two above, divided
//   METRIC grpc_empty_us                    an empty unary call (GetStatus) through the same client
//   METRIC recvtensor_small_us / recvtensor_small_rtt_over_grpc_empty   a one-float RecvTensor
//   METRIC runstep_trivial_us / runstep_trivial_over_grpc_empty          RunStep over 2 workers
//   RATIO recvtensor_64mb_tls_vs_plain / runstep_trivial_tls_vs_plain    the same two with mutual
//         TLS and a token on every port (servers and client), against the plain run
// Medians over repeated runs. The RecvTensor caller is this process acting as a peer worker: the
// same client (GrpcRemoteWorker, BulkTransferClient) a server's remote rendezvous uses.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/core/str_util.h"
#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/distributed/rpc/bulk_transfer.h"
#include "weft/distributed/rpc/grpc_session.h"
#include "weft/distributed/rpc/grpc_util.h"
#include "weft/distributed/rpc/grpc_worker_cache.h"
#include "weft/framework/attr_value_util.h"
#include "weft/framework/rendezvous.h"
#include "weft/graph/builder/ops.h"
#include "weft/graph/builder/scope.h"
#include "weft/testing/server_process.h"
#include "weft/worker.grpc.pb.h"

namespace weft {
namespace {

constexpr size_t k64Mb = 64 << 20;
constexpr char kTask0[] = "/job:worker/replica:0/task:0";
constexpr char kTask1[] = "/job:worker/replica:0/task:1";

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void Check(const Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "rpc_bench: %s: %s\n", what, status.ToString().c_str());
    std::exit(1);
  }
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadAll(int fd, char* data, size_t size) {
  while (size > 0) {
    ssize_t n = recv(fd, data, size, 0);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void TuneSocket(int fd) {
  // The same socket settings as the bulk data path, so the floor is measured like for like.
  int buffer = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// A child process writes 64 MB per request to this one over loopback TCP; GB/s, median.
double TcpGigabytesPerSecond(int repetitions) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::perror("rpc_bench: listen");
    std::exit(1);
  }
  pid_t child = fork();
  if (child == 0) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    TuneSocket(fd);
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) _exit(1);
    std::vector<char> payload(k64Mb, 1);
    char go = 0;
    while (ReadAll(fd, &go, 1) && go == 1) {
      if (!WriteAll(fd, payload.data(), payload.size())) _exit(1);
    }
    _exit(0);
  }
  int fd = accept(listener, nullptr, nullptr);
  TuneSocket(fd);
  std::vector<char> received(k64Mb, 0);
  std::vector<double> rates;
  for (int i = 0; i < repetitions; ++i) {
    char go = 1;
    const double start = NowSeconds();
    if (!WriteAll(fd, &go, 1) || !ReadAll(fd, received.data(), received.size())) {
      std::fprintf(stderr, "rpc_bench: the TCP peer went away\n");
      std::exit(1);
    }
    rates.push_back(k64Mb / (NowSeconds() - start) / 1e9);
  }
  char stop = 0;
  WriteAll(fd, &stop, 1);
  close(fd);
  close(listener);
  waitpid(child, nullptr, 0);
  return Median(rates);
}

// Registers, on `worker`, a graph that fills a float tensor of `elements` and _Sends it to task 0
// under `num_sends` edge names "<edge_name>_<k>"; returns the graph handle.
std::string RegisterSendGraph(WorkerInterface* worker, const std::string& session,
                              const std::string& device, uint64_t incarnation, int64_t elements,
                              const std::string& edge_name, int num_sends) {
  Scope root = Scope::NewRootScope().WithDevice(device);
  Output filled = ops::Fill(root.WithOpName("filled"),
                            ops::Const(root, Tensor::FromVector<int64_t>({elements})), 1.5f);
  proto::GraphDef graph = root.ToGraphDef().value();
  for (int k = 0; k < num_sends; ++k) {
    proto::NodeDef* send = graph.add_node();
    send->set_name(StrCat("send_", k));
    send->set_op("_Send");
    send->add_input(filled.node()->name());
    auto& attr = *send->mutable_attr();
    attr["T"] = MakeAttrValue(DataType::kFloat);
    attr["tensor_name"] = MakeAttrValue(StrCat(edge_name, "_", k));
    attr["send_device"] = MakeAttrValue(device);
    attr["send_device_incarnation"] = MakeAttrValue(static_cast<int64_t>(incarnation));
    attr["recv_device"] = MakeAttrValue(std::string(kTask0) + "/device:CPU:0");
    attr["client_terminated"] = MakeAttrValue(false);
  }
  for (proto::NodeDef& node : *graph.mutable_node()) node.set_device(device);

  proto::RegisterGraphRequest request;
  request.set_session_handle(session);
  proto::DevicePartition* partition = request.add_partition();
  partition->set_device(device);
  *partition->mutable_graph_def() = graph;
  proto::RegisterGraphResponse response;
  Check(worker->RegisterGraph(nullptr, request, &response), "RegisterGraph");
  return response.graph_handle();
}

// Seconds of one empty unary call (GetStatus), made the plainest way: a blocking call on a
// generated stub, whose calling thread waits for the reply itself.
double TimeEmptyCall(proto::WorkerService::Stub* stub, const std::string& token) {
  grpc::ClientContext context;
  if (!token.empty()) context.AddMetadata(kTokenMetadataKey, token);
  proto::GetStatusResponse response;
  const double start = NowSeconds();
  grpc::Status status = stub->GetStatus(&context, proto::GetStatusRequest(), &response);
  const double seconds = NowSeconds() - start;
  if (!status.ok()) Check(Internal("GetStatus: ", status.error_message()), "GetStatus");
  return seconds;
}

// Runs `steps` steps of the graph and times each RecvTensor of each of its `keys`, back to back;
// the step's _Sends have happened before the clock starts, so only the transfers are timed.
void TimeRecvTensors(WorkerInterface* worker, const std::string& session,
                     const std::string& graph_handle, const std::vector<std::string>& keys,
                     int64_t* next_step, int steps, size_t expected_bytes,
                     std::vector<double>* seconds) {
  for (int i = 0; i < steps; ++i) {
    const int64_t step_id = (*next_step)++;
    proto::RunGraphRequest run;
    run.set_session_handle(session);
    run.set_graph_handle(graph_handle);
    run.set_step_id(step_id);
    proto::RunGraphResponse run_response;
    CallOptions run_options;
    Check(worker->RunGraph(&run_options, run, &run_response), "RunGraph");
    for (const std::string& key : keys) {
      proto::RecvTensorRequest recv;
      recv.set_step_id(step_id);
      recv.set_rendezvous_key(key);
      recv.set_bulk_ok(true);
      TensorResponse value;
      CallOptions recv_options;
      const double start = NowSeconds();
      Check(worker->RecvTensor(&recv_options, recv, &value), "RecvTensor");
      seconds->push_back(NowSeconds() - start);
      if (value.tensor.TotalBytes() != expected_bytes || value.tensor.data<float>()[0] != 1.5f) {
        std::fprintf(stderr, "rpc_bench: RecvTensor returned the wrong value\n");
        std::exit(1);
      }
    }
    proto::CleanupGraphRequest cleanup;
    cleanup.set_step_id(step_id);
    proto::CleanupGraphResponse cleanup_response;
    Check(worker->CleanupGraph(nullptr, cleanup, &cleanup_response), "CleanupGraph");
  }
}

// Latencies here depend on which cores the threads of three processes wake on, and drift over a
// run; so the call under test and the empty call are measured in alternating blocks, each in a
// steady loop, and compared by their medians.
constexpr int kBlocks = 10;
constexpr int kCallsPerBlock = 192;

struct Figures {
  double recv_gbps = 0;
  double empty_us = 0;
  double small_us = 0;
  double master_empty_us = 0;
  double step_us = 0;
};

// Two `weft server` processes with `server_flags`, and this process as their client with
// `security`.
Figures Measure(const TransportSecurity& security, const std::vector<std::string>& server_flags) {
  std::vector<std::unique_ptr<testing::ServerProcess>> servers;
  std::vector<std::string> addresses;
  for (int task = 0; task < 2; ++task) {
    std::vector<std::string> flags = {"--cluster",
                                      "worker=127.0.0.1:0,127.0.0.1:0",
                                      "--task",
                                      std::to_string(task),
                                      "--intra-op-threads",
                                      "1",
                                      "--inter-op-threads",
                                      "1"};
    flags.insert(flags.end(), server_flags.begin(), server_flags.end());
    StatusOr<std::unique_ptr<testing::ServerProcess>> server =
        testing::ServerProcess::Start(WEFT_BINARY, flags);
    Check(server.status(), "starting a weft server");
    addresses.push_back((*server)->address());
    servers.push_back(std::move(server).value());
  }
  ClusterSpec cluster = ClusterSpec::FromJobs({{"worker", addresses}}).value();

  // This process talks to task 1 as task 0 would.
  BulkTransferClient::Options bulk_options;
  bulk_options.token = security.token;
  auto bulk_client = std::make_shared<BulkTransferClient>(bulk_options);
  std::unique_ptr<WorkerCacheInterface> cache =
      NewGrpcWorkerCache(cluster, "/job:bench/replica:0/task:0", nullptr, bulk_client, security);
  WorkerInterface* worker = cache->GetOrCreateWorker(kTask1);
  CallOptions status_options;
  status_options.set_wait_for_ready(true);
  status_options.set_timeout_ms(20000);
  proto::GetStatusResponse status;
  Check(worker->GetStatus(&status_options, proto::GetStatusRequest(), &status), "GetStatus");
  const std::string device = status.device_attributes(0).name();
  const uint64_t incarnation = status.device_attributes(0).incarnation();

  proto::CreateWorkerSessionRequest create;
  create.set_session_handle("rpc_bench");
  proto::CreateWorkerSessionResponse create_response;
  Check(worker->CreateWorkerSession(nullptr, create, &create_response), "CreateWorkerSession");
  const std::string dst = std::string(kTask0) + "/device:CPU:0";
  constexpr int kSmallSends = 64;
  const std::string big_handle =
      RegisterSendGraph(worker, "rpc_bench", device, incarnation, k64Mb / sizeof(float), "big", 1);
  const std::string small_handle =
      RegisterSendGraph(worker, "rpc_bench", device, incarnation, 1, "small", kSmallSends);
  std::vector<std::string> small_keys;
  for (int k = 0; k < kSmallSends; ++k) {
    small_keys.push_back(
        Rendezvous::CreateKey(device, incarnation, dst, StrCat("small_", k), FrameAndIter()));
  }

  int64_t next_step = 1;
  std::vector<double> big_seconds;
  TimeRecvTensors(worker, "rpc_bench", big_handle,
                  {Rendezvous::CreateKey(device, incarnation, dst, "big_0", FrameAndIter())},
                  &next_step, 7, k64Mb, &big_seconds);
  const double recv_gbps = k64Mb / Median(big_seconds) / 1e9;

  auto stub0 = proto::WorkerService::NewStub(NewWeftChannel(addresses[0], security));
  auto stub1 = proto::WorkerService::NewStub(NewWeftChannel(addresses[1], security));
  std::vector<double> empty_seconds;
  std::vector<double> small_seconds;
  for (int block = 0; block < kBlocks; ++block) {
    for (int i = 0; i < kCallsPerBlock; ++i) {
      empty_seconds.push_back(TimeEmptyCall(stub1.get(), security.token));
    }
    TimeRecvTensors(worker, "rpc_bench", small_handle, small_keys, &next_step,
                    kCallsPerBlock / kSmallSends, sizeof(float), &small_seconds);
  }
  Figures figures;
  figures.recv_gbps = recv_gbps;
  figures.empty_us = Median(empty_seconds) * 1e6;
  figures.small_us = Median(small_seconds) * 1e6;

  // RunStep of a trivial graph over both workers: a constant on each, both fetched.
  SessionOptions options;
  options.target = "grpc://" + addresses[0];
  *options.config.mutable_cluster_def() = cluster.ToProto();
  std::unique_ptr<Session> session = NewGrpcSession(options, security).value();
  Scope root = Scope::NewRootScope();
  Output on_task0 = ops::Const(root.WithOpName("c0").WithDevice(kTask0), 1.0f);
  Output on_task1 = ops::Const(root.WithOpName("c1").WithDevice(kTask1), 2.0f);
  Check(session->Create(root.ToGraphDef().value()), "Create");
  std::vector<Tensor> outputs;
  for (int i = 0; i < 100; ++i) {  // warm-up
    Check(session->Run({}, {on_task0.name(), on_task1.name()}, {}, &outputs), "RunStep");
  }
  std::vector<double> step_seconds;
  std::vector<double> master_empty_seconds;
  for (int block = 0; block < kBlocks; ++block) {
    for (int i = 0; i < kCallsPerBlock; ++i) {
      master_empty_seconds.push_back(TimeEmptyCall(stub0.get(), security.token));
    }
    for (int i = 0; i < kCallsPerBlock; ++i) {
      const double start = NowSeconds();
      Check(session->Run({}, {on_task0.name(), on_task1.name()}, {}, &outputs), "RunStep");
      step_seconds.push_back(NowSeconds() - start);
    }
  }
  figures.step_us = Median(step_seconds) * 1e6;
  figures.master_empty_us = Median(master_empty_seconds) * 1e6;
  Check(session->Close(), "Close");
  return figures;
}

int Main() {
  const double tcp_gbps = TcpGigabytesPerSecond(7);
  const Figures plain = Measure(TransportSecurity(), {});
  // The same with mutual TLS on every gRPC port and a token on every call and bulk connection.
  const std::string certs = WEFT_RPC_TESTDATA;
  TransportSecurityFiles files;
  files.certificate = certs + "/task.pem";
  files.private_key = certs + "/task.key";
  files.ca = certs + "/ca.pem";
  char token_path[] = "/tmp/weft_rpc_bench_token_XXXXXX";
  const int token_fd = mkstemp(token_path);
  const std::string token = "rpc bench token";
  if (token_fd < 0 ||
      write(token_fd, token.data(), token.size()) != static_cast<ssize_t>(token.size())) {
    std::fprintf(stderr, "rpc_bench: cannot write a token file\n");
    std::exit(1);
  }
  close(token_fd);
  files.token_file = token_path;
  StatusOr<TransportSecurity> security = LoadTransportSecurity(files);
  Check(security.status(), "loading the TLS files");
  const Figures tls =
      Measure(*security, {"--tls-cert", files.certificate, "--tls-key", files.private_key,
                          "--tls-ca", files.ca, "--token-file", files.token_file});
  unlink(token_path);

  std::printf("METRIC tcp_64mb_gbps %.3f GB/s\n", tcp_gbps);
  std::printf("METRIC recvtensor_64mb_gbps %.3f GB/s\n", plain.recv_gbps);
  std::printf("METRIC recvtensor_64mb_fraction_of_tcp %.3f ratio\n", plain.recv_gbps / tcp_gbps);
  std::printf("METRIC grpc_empty_us %.1f us\n", plain.empty_us);
  std::printf("METRIC recvtensor_small_us %.1f us\n", plain.small_us);
  std::printf("METRIC recvtensor_small_rtt_over_grpc_empty %.3f ratio\n",
              plain.small_us / plain.empty_us);
  std::printf("METRIC grpc_empty_to_master_us %.1f us\n", plain.master_empty_us);
  std::printf("METRIC runstep_trivial_us %.1f us\n", plain.step_us);
  std::printf("METRIC runstep_trivial_over_grpc_empty %.3f ratio\n",
              plain.step_us / plain.master_empty_us);
  std::printf("METRIC recvtensor_64mb_tls_gbps %.3f GB/s\n", tls.recv_gbps);
  std::printf("METRIC grpc_empty_tls_us %.1f us\n", tls.empty_us);
  std::printf("METRIC runstep_trivial_tls_us %.1f us\n", tls.step_us);
  std::printf("RATIO recvtensor_64mb_tls_vs_plain %.3f\n", tls.recv_gbps / plain.recv_gbps);
  std::printf("RATIO runstep_trivial_tls_vs_plain %.3f\n", plain.step_us / tls.step_us);
  return 0;
}

}  // namespace
}  // namespace weft

int main() { return weft::Main(); }
