// libFuzzer target: what a session does with a user's GraphDef before it runs anything (parse,
// import, and the preparation of a step), without executing it.
#include <cstdint>
#include <memory>
#include <string>

#include "weft/core/logging.h"
#include "weft/graph/graph_def_io.h"
#include "weft/graph/prune.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/runtime/device_mgr.h"
#include "weft/runtime/step_executors.h"

namespace weft {
namespace {

// The step is prepared over at most this many nodes, so that one input stays cheap.
constexpr int kMaxStepNodes = 64;

const proto::ConfigProto& TwoCpuConfig() {
  static const proto::ConfigProto* config = [] {
    auto* made = new proto::ConfigProto();
    (*made->mutable_device_count())["CPU"] = 2;
    return made;
  }();
  return *config;
}

// Two CPU devices, as a session with device_count {"CPU": 2} has: enough to place and partition.
const DeviceMgr& Devices() {
  static const DeviceMgr* devices =
      CreateLocalDevices(TwoCpuConfig(), /*intra_op_threads=*/2).value().release();
  return *devices;
}

void PrepareStep(const Graph& graph) {
  StepSignature signature;
  int taken = 0;
  for (Node* node : graph.nodes()) {
    if (++taken > kMaxStepNodes) break;
    if (node->num_outputs() == 0) {
      signature.targets.push_back(node->name());
    } else if (node->type_string() == "Placeholder") {
      signature.feeds.push_back(node->name());
    } else {
      signature.fetches.push_back(node->name());
    }
  }
  StatusOr<std::unique_ptr<Graph>> step = BuildStepGraph(graph, signature);
  if (!step.ok()) return;
  StepExecutors::Create(std::move(step).value(), Devices(), kernels::AllKernels(), TwoCpuConfig())
      .status()
      .IgnoreError();
}

}  // namespace
}  // namespace weft

// Input: a serialized GraphDef. It is parsed (ParseGraphDef) and imported into a Graph
// (ImportGraphDef, as DirectSession::Create/Extend and MasterSession do); a graph that imports must
// also export and import again. Then a step over its nodes is prepared the way DirectSession::Run
// does on a cache miss: prune (BuildStepGraph), place over two CPU devices, partition, fuse and
// create every kernel (StepExecutors::Create).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace weft;  // NOLINT(build/namespaces): a C entry point
  StatusOr<proto::GraphDef> graph_def =
      ParseGraphDef(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!graph_def.ok()) return 0;
  Graph graph(ops::AllOps());
  if (!ImportGraphDef(*graph_def, &graph).ok()) return 0;

  const proto::GraphDef exported = graph.ToGraphDef();
  Graph again(ops::AllOps());
  const Status reimported = ImportGraphDef(exported, &again);
  WEFT_CHECK(reimported.ok()) << "an imported graph's own export does not import: " << reimported;
  WEFT_CHECK(again.num_nodes() == graph.num_nodes())
      << graph.num_nodes() << " nodes became " << again.num_nodes();

  PrepareStep(graph);
  return 0;
}
