// Writes the seed corpus of every fuzz target, fuzz/corpus/<target>/<seed>: small valid inputs
// built with Weft's own writers. Run from the repository root: make_seed_corpus fuzz/corpus
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "service_methods.h"

#include "weft/checkpoint/checkpoint_index.h"
#include "weft/core/logging.h"
#include "weft/data/dataset.h"
#include "weft/data/synthetic_criteo.h"
#include "weft/dataset.pb.h"
#include "weft/distributed/rpc/bulk_transfer.h"
#include "weft/framework/attr_value_util.h"
#include "weft/framework/tensor_proto_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/io/checkpoint_manifest.h"
#include "weft/io/durable_file.h"
#include "weft/io/safetensors.h"
#include "weft/master.pb.h"
#include "weft/worker.pb.h"

// Each seed follows its target's input format, described above its LLVMFuzzerTestOneInput.
namespace weft::fuzz {
namespace {

constexpr char kCpu0[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kRemoteCpu[] = "/job:worker/replica:0/task:1/device:CPU:0";
constexpr char kTask[] = "/job:worker/replica:0/task:0";
// Incarnation 0 stands for "this process's device" in the worker fuzzer's inputs.
constexpr char kRecvKey[] =
    "/job:worker/replica:0/task:0/device:CPU:0;0000000000000000;"
    "/job:worker/replica:0/task:1/device:CPU:0;c;0:0";

std::string root;  // fuzz/corpus

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  const std::filesystem::path dir = std::filesystem::path(root) / target;
  std::filesystem::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  WEFT_CHECK(out.good()) << "cannot write " << (dir / name).string();
}

std::string Byte(uint8_t value) { return std::string(1, static_cast<char>(value)); }
std::string U16(size_t value) {
  WEFT_CHECK(value < 65536) << value;
  return Byte(value & 0xff) + Byte(value >> 8);
}
template <typename T>
std::string Raw(T value) {
  std::string bytes(sizeof(T), '\0');
  std::memcpy(bytes.data(), &value, sizeof(T));
  return bytes;
}
std::string BigEndian32(uint32_t value) {
  return Byte(value >> 24) + Byte((value >> 16) & 0xff) + Byte((value >> 8) & 0xff) +
         Byte(value & 0xff);
}

proto::NodeDef NodeDef(const std::string& name, const std::string& op,
                       const std::vector<std::string>& inputs,
                       const std::map<std::string, proto::AttrValue>& attrs,
                       const std::string& device = "") {
  proto::NodeDef node;
  node.set_name(name);
  node.set_op(op);
  node.set_device(device);
  for (const std::string& input : inputs) node.add_input(input);
  for (const auto& [key, value] : attrs) (*node.mutable_attr())[key] = value;
  return node;
}

proto::GraphDef Graph(const Scope& scope) {
  StatusOr<proto::GraphDef> graph = scope.ToGraphDef();
  WEFT_CHECK(graph.ok()) << graph.status();
  return *graph;
}

// --- tensor_proto --------------------------------------------------------------------------

void TensorProtoSeeds() {
  Write("tensor_proto", "float_2x3",
        ToProto(Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})))
            .SerializeAsString());
  Write("tensor_proto", "int64_scalar", ToProto(Tensor::Scalar<int64_t>(-7)).SerializeAsString());
  Write("tensor_proto", "bool_4",
        ToProto(Tensor::FromVector<bool>({true, false, true, true})).SerializeAsString());
  Write("tensor_proto", "uint8_empty",
        ToProto(Tensor(DataType::kUInt8, TensorShape({0, 3}))).SerializeAsString());
  Write("tensor_proto", "double_1x1x2",
        ToProto(Tensor::FromVector<double>({0.5, -2}, TensorShape({1, 1, 2}))).SerializeAsString());
}

// --- graph_def_import and the master's graphs ----------------------------------------------

proto::GraphDef DenseGraph() {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, PartialShape({-1, 2}));
  Output w = ops::Const(root.WithOpName("w"),
                        Tensor::FromVector<float>({1, -1, 2, 0.5f}, TensorShape({2, 2})));
  Output b = ops::Const(root.WithOpName("b"), {0.5f, -1.0f});
  ops::Relu(root.WithOpName("y"), ops::BiasAdd(root, ops::MatMul(root, x, w), b));
  return Graph(root);
}

proto::GraphDef TwoDeviceGraph() {
  Scope root = Scope::NewRootScope();
  Output a = ops::Placeholder(root.WithOpName("a"), DataType::kFloat, PartialShape({-1, 2}));
  Output doubled = ops::Mul(root.WithOpName("doubled"), a, ops::Const(root, 2.0f));
  ops::MatMul(root.WithOpName("product").WithDevice("/device:CPU:1"), doubled, doubled,
              {.transpose_b = true});
  return Graph(root);
}

proto::GraphDef VariableGraph() {
  Scope root = Scope::NewRootScope();
  Output v = ops::VarHandleOp(root.WithOpName("v"), DataType::kFloat, PartialShape({2}));
  ops::AssignVariableOp(root.WithOpName("init"), v, {1.0f, 2.0f});
  ops::AssignAddVariableOp(root.WithOpName("bump"), v, {0.5f, 0.5f});
  ops::ReadVariableOp(root.WithOpName("read"), v);
  return Graph(root);
}

proto::GraphDef ShapeGraph() {
  Scope root = Scope::NewRootScope();
  Output filled = ops::Fill(root.WithOpName("filled"), {2, 3}, 1.5f);
  Output reshaped = ops::Reshape(root.WithOpName("reshaped"), filled, {3, 2});
  Output joined = ops::Concat(root.WithOpName("joined"), {reshaped, reshaped}, 0);
  ops::Sum(root.WithOpName("total"), ops::Transpose(root, joined, {1, 0}), {0, 1});
  return Graph(root);
}

proto::GraphDef AddGraph() {
  Scope root = Scope::NewRootScope();
  Output a = ops::Const(root.WithOpName("a"), {1.0f, 2.0f});
  Output b = ops::Const(root.WithOpName("b"), {3.0f, 4.0f});
  ops::Add(root.WithOpName("c"), a, b);
  return Graph(root);
}

void GraphSeeds() {
  Write("graph_def_import", "dense", DenseGraph().SerializeAsString());
  Write("graph_def_import", "two_devices", TwoDeviceGraph().SerializeAsString());
  Write("graph_def_import", "variable", VariableGraph().SerializeAsString());
  Write("graph_def_import", "shapes", ShapeGraph().SerializeAsString());
  Write("graph_def_import", "add", AddGraph().SerializeAsString());
}

// --- idx_reader --------------------------------------------------------------------------

std::string IdxFile(const std::vector<uint32_t>& dims) {
  std::string bytes = std::string("\0\0\x08", 3) + Byte(static_cast<uint8_t>(dims.size()));
  size_t total = 1;
  for (uint32_t d : dims) {
    bytes += BigEndian32(d);
    total *= d;
  }
  for (size_t i = 0; i < total; ++i) bytes += Byte(static_cast<uint8_t>(i * 37));
  return bytes;
}

void IdxSeeds() {
  const std::string images = IdxFile({2, 3, 3});
  const std::string labels = IdxFile({2});
  Write("idx_reader", "images_plain", Byte(0) + images);
  Write("idx_reader", "images_harness_gzip", Byte(2) + images);
  Write("idx_reader", "images_gzip_file", Byte(0) + Gzip(images));
  Write("idx_reader", "examples_plain", Byte(1) + U16(images.size()) + images + labels);
  Write("idx_reader", "examples_gzip", Byte(3) + U16(images.size()) + images + labels);
}

// --- dataset_def -------------------------------------------------------------------------

void DatasetSeeds() {
  const data::Dataset ids =
      data::Dataset::FromTensors({Tensor::FromVector<int64_t>({0, 1, 2, 3, 4, 5}),
                                  Tensor::FromVector<float>({0, 1, 2, 3, 4, 5})});
  Write("dataset_def", "tensor_slices_pipeline",
        ids.Shuffle(4, 7)
            .Shard(2, 1)
            .Repeat(2)
            .Batch(2, true)
            .Take(3)
            .Prefetch(1)
            .ToDef()
            .value()
            .SerializeAsString());
  data::CsvOptions csv;
  csv.column_types = {DataType::kFloat, DataType::kInt64};
  csv.header = true;
  csv.defaults = {std::string("0"), std::nullopt};
  Write("dataset_def", "csv_file",
        data::Dataset::FromCsvFile("/nonexistent/rows.csv", csv)
            .Batch(8)
            .ToDef()
            .value()
            .SerializeAsString());
  data::SyntheticCriteoOptions criteo;
  criteo.table_rows = {100, 10};
  Write(
      "dataset_def", "synthetic_criteo",
      data::SyntheticCriteoDataset(criteo, 0, 64, 16).Repeat().ToDef().value().SerializeAsString());
}

// --- weft_config -------------------------------------------------------------------------

void ConfigSeeds() {
  Write("weft_config", "weft_config",
        Byte(0) + R"({"cluster": {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]}, )"
                  R"("task": {"type": "worker", "index": 1}})");
  Write("weft_config", "tf_config",
        Byte(1) +
            R"({"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222"], "ps": ["h2:2222"]}, )"
            R"("task": {"type": "worker", "index": 0}})");
  Write("weft_config", "cluster_flag",
        Byte(2) + "worker=127.0.0.1:2222,127.0.0.1:2223;ps=127.0.0.1:2224");
  Write("weft_config", "env_slurm",
        Byte(3) +
            "SLURM_PROCID=1\nSLURM_NTASKS=4\nSLURM_LOCALID=1\n"
            "SLURM_STEP_NODELIST=node[01-02],rack[1-2]-n[7,9]\nSLURM_NODEID=1\n"
            "WEFT_COORDINATOR=:7777\nWEFT_DEVICES_PER_WORKER=2\n");
  Write("weft_config", "env_openmpi",
        Byte(3) +
            "OMPI_COMM_WORLD_RANK=0\nOMPI_COMM_WORLD_SIZE=2\nOMPI_COMM_WORLD_LOCAL_RANK=0\n"
            "WEFT_HOST=h0\nFUZZ_COORDINATOR_FLAG=h0:1234\n");
  Write("weft_config", "env_weft_config",
        Byte(3) + R"(WEFT_CONFIG={"cluster": {"w": ["a:1"]}, "task": {"type": "w", "index": 0}})" +
            "\n");
}

// --- checkpoint_reader -------------------------------------------------------------------

void CheckpointSeeds() {
  constexpr char kShard[] = "shard-00000-of-00001.safetensors";
  const std::filesystem::path temp = std::filesystem::temp_directory_path() / "weft_seed_ckpt";
  std::filesystem::remove_all(temp);
  std::filesystem::create_directories(temp);
  const std::string shard_path = (temp / kShard).string();
  StatusOr<io::SafetensorsFileInfo> info = io::WriteSafetensorsFile(
      shard_path, {{"dense/kernel", Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2}))},
                   {"global_step", Tensor::Scalar<int64_t>(200)},
                   {"mask", Tensor::FromVector<bool>({true, false})}});
  WEFT_CHECK(info.ok()) << info.status();
  io::CheckpointManifest manifest;
  manifest.step = 200;
  manifest.replicas = 2;
  manifest.shards.push_back({kShard, info->file_bytes});
  for (const io::SafetensorsEntry& entry : info->tensors) {
    manifest.tensors[entry.name] = {kShard, entry.dtype, entry.shape, entry.crc32c};
  }
  const std::string shard = io::ReadFileToString(shard_path).value();
  const std::string manifest_json = manifest.ToJson();
  std::filesystem::remove_all(temp);

  Write("checkpoint_reader", "index",
        Byte(0) + R"({"latest": "ckpt-200", "checkpoints": ["ckpt-100", "ckpt-200"]})");
  Write("checkpoint_reader", "manifest", Byte(1) + manifest_json);
  Write("checkpoint_reader", "shard", Byte(2) + shard);
  Write("checkpoint_reader", "checkpoint",
        Byte(3) + U16(manifest_json.size()) + manifest_json + shard);
}

// --- bulk_protocol -----------------------------------------------------------------------

void BulkSeeds() {
  const std::string fetch = Raw(kBulkRequestMagic) + Raw(uint64_t{1});  // the offered ticket
  const std::string unknown = Raw(kBulkRequestMagic) + Raw(uint64_t{99});
  Write("bulk_protocol", "server_fetch", Byte(0) + fetch);
  Write("bulk_protocol", "server_unknown_then_fetch", Byte(0) + unknown + fetch + fetch);
  Write("bulk_protocol", "server_bad_magic", Byte(0) + Raw(uint64_t{7}) + Raw(uint64_t{1}));
  const std::string token = "fuzz-token";  // bulk_protocol_fuzzer's
  const std::string hello =
      Raw(kBulkHelloMagic) + Raw(uint32_t(token.size())) + Raw(uint32_t{0}) + token;
  Write("bulk_protocol", "token_server_hello_then_fetch", Byte(2) + hello + fetch);
  Write("bulk_protocol", "token_server_fetch_without_hello", Byte(2) + fetch);
  const std::string payload = "0123456789abcdef";
  Write("bulk_protocol", "client_ok",
        Byte(1) + U16(payload.size()) + Raw(kBulkReplyMagic) + Raw(uint32_t{0}) + Raw(uint32_t{0}) +
            Raw(uint64_t{payload.size()}) + payload);
  const std::string accepted =
      Raw(kBulkReplyMagic) + Raw(uint32_t{0}) + Raw(uint32_t{0}) + Raw(uint64_t{0});
  Write("bulk_protocol", "token_client_ok",
        Byte(3) + U16(payload.size()) + accepted + Raw(kBulkReplyMagic) + Raw(uint32_t{0}) +
            Raw(uint32_t{0}) + Raw(uint64_t{payload.size()}) + payload);
  Write("bulk_protocol", "client_not_found",
        Byte(1) + U16(8) + Raw(kBulkReplyMagic) + Raw(uint32_t{5}) + Raw(uint32_t{0}) +
            Raw(uint64_t{0}));
}

// --- worker_service ----------------------------------------------------------------------

template <typename Method>
std::string Record(Method method, const google::protobuf::MessageLite& request) {
  const std::string bytes = request.SerializeAsString();
  return Byte(static_cast<uint8_t>(method)) + U16(bytes.size()) + bytes;
}

std::string CreateWorkerSession() {
  proto::CreateWorkerSessionRequest request;
  request.set_session_handle("s");
  return Record(WorkerMethod::kCreateWorkerSession, request);
}

std::string RegisterGraph(const std::vector<proto::NodeDef>& nodes,
                          const std::vector<std::string>& feeds,
                          const std::vector<std::string>& fetches) {
  proto::RegisterGraphRequest request;
  request.set_session_handle("s");
  proto::DevicePartition* partition = request.add_partition();
  partition->set_device(kCpu0);
  for (const proto::NodeDef& node : nodes) *partition->mutable_graph_def()->add_node() = node;
  for (const std::string& feed : feeds) request.add_feed(feed);
  for (const std::string& fetch : fetches) request.add_fetch(fetch);
  return Record(WorkerMethod::kRegisterGraph, request);
}

std::string RunGraph(int64_t step_id, const std::string& feed, const Tensor& value) {
  proto::RunGraphRequest request;
  request.set_session_handle("s");
  request.set_graph_handle("0000000000000001");  // a fresh worker's first graph
  request.set_step_id(step_id);
  if (!feed.empty()) {
    proto::NamedTensorProto* send = request.add_send();
    send->set_name(feed);
    *send->mutable_tensor() = ToProto(value);
  }
  return Record(WorkerMethod::kRunGraph, request);
}

std::string CompleteGroup(int64_t group_key, int32_t group_size) {
  proto::CompleteGroupRequest request;
  request.set_group_key(group_key);
  request.set_group_size(group_size);
  request.set_device_type("CPU");
  request.set_timeout_ms(20);
  proto::CollectiveMember* member = request.mutable_member();
  member->set_task(kTask);
  member->set_device(kCpu0);
  member->set_hostname("h0");
  (*member->mutable_transport_addresses())["tcp"] = "127.0.0.1:1";
  member->set_incarnation(5);
  return Record(WorkerMethod::kCompleteGroup, request);
}

void WorkerSeeds() {
  const std::map<std::string, proto::AttrValue> float_arg = {
      {"T", MakeAttrValue(DataType::kFloat)},
      {"index", MakeAttrValue(int64_t{0})},
      {"shape", MakeAttrValue(PartialShape({2}))}};
  const std::map<std::string, proto::AttrValue> float_retval = {
      {"T", MakeAttrValue(DataType::kFloat)}, {"index", MakeAttrValue(int64_t{0})}};
  const proto::NodeDef arg = NodeDef("x", "_Arg", {}, float_arg, kCpu0);
  const proto::NodeDef square =
      NodeDef("sq", "Square", {"x"}, {{"T", MakeAttrValue(DataType::kFloat)}}, kCpu0);
  const proto::NodeDef retval = NodeDef("y", "_Retval", {"sq"}, float_retval, kCpu0);
  proto::DeregisterGraphRequest deregister;
  deregister.set_session_handle("s");
  deregister.set_graph_handle("0000000000000001");
  proto::DeleteWorkerSessionRequest delete_session;
  delete_session.set_session_handle("s");
  Write("worker_service", "register_run_deregister",
        CreateWorkerSession() + RegisterGraph({arg, square, retval}, {"x"}, {"y"}) +
            RunGraph(7, "x", Tensor::FromVector<float>({1.5f, -2})) +
            Record(WorkerMethod::kDeregisterGraph, deregister) +
            Record(WorkerMethod::kDeleteWorkerSession, delete_session));

  // A value sent to another task waits in the step's rendezvous until that task's RecvTensor.
  const proto::NodeDef value =
      NodeDef("c", "Const", {},
              {{"dtype", MakeAttrValue(DataType::kFloat)},
               {"value", MakeAttrValue(Tensor::FromVector<float>({4, 5, 6}))}},
              kCpu0);
  const proto::NodeDef send = NodeDef("send_c", "_Send", {"c"},
                                      {{"T", MakeAttrValue(DataType::kFloat)},
                                       {"tensor_name", MakeAttrValue("c")},
                                       {"send_device", MakeAttrValue(kCpu0)},
                                       {"send_device_incarnation", MakeAttrValue(int64_t{0})},
                                       {"recv_device", MakeAttrValue(kRemoteCpu)}},
                                      kCpu0);
  proto::RecvTensorRequest recv;
  recv.set_step_id(9);
  recv.set_rendezvous_key(kRecvKey);
  proto::CleanupGraphRequest cleanup;
  cleanup.set_step_id(9);
  Write("worker_service", "send_then_recv_tensor",
        CreateWorkerSession() + RegisterGraph({value, send}, {}, {}) + RunGraph(9, "", Tensor()) +
            Record(WorkerMethod::kRecvTensor, recv) + Record(WorkerMethod::kCleanupGraph, cleanup));

  // A value received from a task this process cannot reach.
  const proto::NodeDef receive = NodeDef("recv_r", "_Recv", {},
                                         {{"tensor_type", MakeAttrValue(DataType::kFloat)},
                                          {"tensor_name", MakeAttrValue("r")},
                                          {"send_device", MakeAttrValue(kRemoteCpu)},
                                          {"send_device_incarnation", MakeAttrValue(int64_t{3})},
                                          {"recv_device", MakeAttrValue(kCpu0)}},
                                         kCpu0);
  const proto::NodeDef received = NodeDef("y", "_Retval", {"recv_r"}, float_retval, kCpu0);
  Write("worker_service", "recv_from_unknown_task",
        CreateWorkerSession() + RegisterGraph({receive, received}, {}, {"y"}) +
            RunGraph(11, "", Tensor()));

  Write("worker_service", "status_and_groups",
        Record(WorkerMethod::kGetStatus, proto::GetStatusRequest()) + CompleteGroup(1, 1) +
            CompleteGroup(2, 2));
  proto::RecvTensorRequest waiting;
  waiting.set_step_id(3);
  waiting.set_rendezvous_key(kRecvKey);
  Write("worker_service", "recv_tensor_waits", Record(WorkerMethod::kRecvTensor, waiting));
}

// --- master_service ----------------------------------------------------------------------

std::string CreateSession(const proto::GraphDef& graph, const proto::ConfigProto& config = {}) {
  proto::CreateSessionRequest request;
  *request.mutable_graph_def() = graph;
  *request.mutable_config() = config;
  return Record(MasterMethod::kCreateSession, request);
}

std::string RunStep(const std::vector<std::string>& fetches, const std::string& feed = "",
                    const Tensor& value = Tensor(), const std::vector<std::string>& targets = {}) {
  proto::RunStepRequest request;  // no handle: the fuzzer uses the last session's
  for (const std::string& fetch : fetches) request.add_fetch(fetch);
  for (const std::string& target : targets) request.add_target(target);
  if (!feed.empty()) {
    proto::NamedTensorProto* named = request.add_feed();
    named->set_name(feed);
    *named->mutable_tensor() = ToProto(value);
  }
  return Record(MasterMethod::kRunStep, request);
}

void MasterSeeds() {
  proto::ExtendSessionRequest extend;
  *extend.mutable_graph_def()->add_node() =
      NodeDef("d", "Mul", {"c", "c"}, {{"T", MakeAttrValue(DataType::kFloat)}});
  Write("master_service", "create_run_extend_close",
        CreateSession(AddGraph()) + RunStep({"c:0"}) +
            Record(MasterMethod::kExtendSession, extend) + RunStep({"d:0", "c:0"}) +
            Record(MasterMethod::kListDevices, proto::ListDevicesRequest()) +
            Record(MasterMethod::kCloseSession, proto::CloseSessionRequest()));
  Write("master_service", "two_devices_feed",
        CreateSession(TwoDeviceGraph()) +
            RunStep({"product:0"}, "a",
                    Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2}))) +
            Record(MasterMethod::kReset, proto::ResetRequest()));
  proto::ConfigProto cluster_config;
  proto::JobDef* job = cluster_config.mutable_cluster_def()->add_job();
  job->set_name("worker");
  (*job->mutable_tasks())[0] = "127.0.0.1:2222";  // never dialled: the task is in-process
  cluster_config.set_worker_timeout_in_ms(500);
  Write("master_service", "session_cluster_variables",
        CreateSession(VariableGraph(), cluster_config) + RunStep({}, "", Tensor(), {"init"}) +
            RunStep({"read:0"}, "", Tensor(), {"bump"}) +
            Record(MasterMethod::kCloseSession, proto::CloseSessionRequest()));
  Write("master_service", "list_devices_reset",
        Record(MasterMethod::kListDevices, proto::ListDevicesRequest()) +
            Record(MasterMethod::kReset, proto::ResetRequest()));
}

}  // namespace
}  // namespace weft::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (e.g. fuzz/corpus)\n", argv[0]);
    return 2;
  }
  weft::fuzz::root = argv[1];
  weft::fuzz::TensorProtoSeeds();
  weft::fuzz::GraphSeeds();
  weft::fuzz::IdxSeeds();
  weft::fuzz::DatasetSeeds();
  weft::fuzz::ConfigSeeds();
  weft::fuzz::CheckpointSeeds();
  weft::fuzz::BulkSeeds();
  weft::fuzz::WorkerSeeds();
  weft::fuzz::MasterSeeds();
  return 0;
}
