// hello_graph: the first taste of Weft's C++ API. Builds a small dense layer as a graph, runs it
// in a local session with a fed input, and shows what a mistake in the graph reports.
#include <cstdio>

#include "weft/graph/builder/ops.h"
#include "weft/runtime/session.h"

using namespace weft;  // NOLINT: an example, kept short

int main() {
  // 1. Build: y = relu(x @ w + b) for a batch of 2-feature rows.
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, PartialShape({-1, 2}));
  Output w = ops::Const(root.WithOpName("w"),
                        Tensor::FromVector<float>({1, -1, 2, 0.5f}, TensorShape({2, 2})));
  Output b = ops::Const(root.WithOpName("b"), {0.5f, -1.0f});
  Output y = ops::Relu(root.WithOpName("y"), ops::BiasAdd(root, ops::MatMul(root, x, w), b));
  StatusOr<proto::GraphDef> graph = root.ToGraphDef();
  if (!graph.ok()) {
    std::fprintf(stderr, "building the graph failed: %s\n", graph.status().ToString().c_str());
    return 1;
  }
  std::printf("built a graph of %d nodes; y has shape %s\n", graph->node_size(),
              y.shape().DebugString().c_str());

  // 2. Run it in this process.
  StatusOr<std::unique_ptr<Session>> session = NewSession(SessionOptions());
  if (!session.ok() || !(*session)->Create(*graph).ok()) {
    std::fprintf(stderr, "creating the session failed\n");
    return 1;
  }
  Tensor input = Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2}));
  std::vector<Tensor> outputs;
  Status status = (*session)->Run({{"x", input}}, {"y"}, {}, &outputs);
  if (!status.ok()) {
    std::fprintf(stderr, "run failed: %s\n", status.ToString().c_str());
    return 1;
  }
  std::printf("x = %s\ny = %s\n", input.DebugString().c_str(), outputs[0].DebugString().c_str());

  // 3. Mistakes are reported with the node at fault, not a crash.
  Scope broken = Scope::NewRootScope();
  ops::MatMul(broken.WithOpName("mismatch"),
              ops::Const(broken, Tensor(DataType::kFloat, TensorShape({3, 4}))),
              ops::Const(broken, Tensor(DataType::kFloat, TensorShape({5, 6}))));
  std::printf("a 3x4 by 5x6 MatMul reports: %s\n", broken.status().ToString().c_str());
  status = (*session)->Run({{"x", Tensor::FromVector<float>({1, 2, 3})}}, {"y"}, {}, &outputs);
  std::printf("a feed of the wrong shape reports: %s\n", status.ToString().c_str());

  // 4. Two CPU devices in one session: a node runs on the device it names (unplaced nodes go to
  // CPU:0), and tensors cross between the devices within the step.
  SessionOptions options;
  (*options.config.mutable_device_count())["CPU"] = 2;
  Scope two = Scope::NewRootScope();
  Output a = ops::Placeholder(two.WithOpName("a"), DataType::kFloat, PartialShape({-1, 2}));
  Output doubled = ops::Mul(two.WithOpName("doubled"), a, ops::Const(two, 2.0f));
  ops::MatMul(two.WithOpName("product").WithDevice("/device:CPU:1"), doubled, doubled,
              {.transpose_b = true});
  StatusOr<std::unique_ptr<Session>> placed = NewSession(options);
  StatusOr<proto::GraphDef> placed_graph = two.ToGraphDef();
  if (!placed.ok() || !placed_graph.ok() || !(*placed)->Create(*placed_graph).ok() ||
      !(*placed)->Run({{"a", input}}, {"product"}, {}, &outputs).ok()) {
    std::fprintf(stderr, "the two-device session failed\n");
    return 1;
  }
  std::printf("on CPU:1, (2a)(2a)^T = %s\n", outputs[0].DebugString().c_str());
  return 0;
}
