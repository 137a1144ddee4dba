#include "weft/graph/coalesce_variable_reads.h"

#include <gtest/gtest.h>

#include "weft/graph/builder/ops.h"
#include "weft/graph/builder/variable.h"
#include "weft/runtime/session.h"
#include "weft/testing/tensor_matchers.h"

namespace weft {
namespace {

constexpr char kPs[] = "/job:ps/replica:0/task:0/device:CPU:0";
constexpr char kWorker[] = "/job:worker/replica:0/task:0/device:CPU:0";

// Each node on the device it asks for, as the placer leaves a graph whose devices are all named.
void AssignRequestedDevices(Graph* graph) {
  for (Node* node : graph->nodes()) node->set_assigned_device_name(node->requested_device());
}

int CountOn(const Graph& graph, const std::string& op, const std::string& device) {
  int count = 0;
  for (const Node* node : graph.nodes()) {
    count += node->type_string() == op && node->assigned_device_name() == device;
  }
  return count;
}

TEST(CoalesceVariableReadsTest, ReadsBoundForAnotherTaskCrossAsOneTensorAndKeepTheirValues) {
  Scope root = Scope::NewRootScope();
  const Scope on_ps = root.WithDevice(kPs);
  const Scope on_worker = root.WithDevice(kWorker);
  const std::vector<Tensor> values = {
      Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})),
      Tensor::FromVector<float>({7, 8, 9, 10}, TensorShape({4})),
      Tensor::Scalar<float>(11),
      Tensor::FromVector<double>({12, 13}, TensorShape({2})),  // alone of its dtype
      Tensor::FromVector<float>({14, 15}, TensorShape({2})),   // read after another op
      Tensor::FromVector<float>({16}, TensorShape({1})),       // used on its own task only
  };
  std::vector<Output> assigns;
  std::vector<Output> used;  // what each read becomes where it is used
  Output gate = ops::NoOp(on_ps.WithOpName("gate"));
  for (size_t i = 0; i < values.size(); ++i) {
    Variable variable = Variable::Create(on_ps, StrCat("v", i), values[i].shape(),
                                         values[i].dtype(), Initializer::Zeros());
    assigns.push_back(variable.Assign(on_ps, ops::Const(on_ps, values[i])));
    const Scope reader = i == 4 ? on_worker.WithControlDependencies({gate}) : on_worker;
    const Output read = variable.Read(reader);
    used.push_back(ops::Identity(i == 5 ? on_ps : on_worker, read));
  }
  ASSERT_TRUE(root.status().ok()) << root.status();
  Graph* graph = root.graph();
  AssignRequestedDevices(graph);

  StatusOr<int> joined = CoalesceVariableReads(graph);
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_EQ(*joined, 1);
  EXPECT_EQ(CountOn(*graph, "ConcatV2", kPs), 1);
  EXPECT_EQ(CountOn(*graph, "Slice", kWorker), 3);
  for (size_t i = 0; i < values.size(); ++i) {
    const Node* source = used[i].node()->input_edge(0)->src;
    EXPECT_EQ(source->type_string(), i < 3 ? "Reshape" : "ReadVariableOp") << i;
    EXPECT_EQ(source->assigned_device_name(), i < 3 ? kWorker : kPs) << i;
  }

  // The same values come out: run the rewritten graph on one device.
  proto::GraphDef def = root.ToGraphDef().value();
  for (proto::NodeDef& node : *def.mutable_node()) node.clear_device();
  auto session = NewSession(SessionOptions()).value();
  ASSERT_TRUE(session->Create(def).ok());
  std::vector<std::string> targets;
  for (const Output& assign : assigns) targets.push_back(assign.node()->name());
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run({}, {}, targets, &outputs).ok());
  std::vector<std::string> fetches;
  for (const Output& output : used) fetches.push_back(output.name());
  Status run = session->Run({}, fetches, {}, &outputs);
  ASSERT_TRUE(run.ok()) << run;
  ASSERT_EQ(outputs.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_TENSOR_EQ(outputs[i], values[i]);
  }
}

TEST(CoalesceVariableReadsTest, ReadsOnOneTaskAreLeftAsTheyAre) {
  Scope root = Scope::NewRootScope();
  const Scope here = root.WithDevice("/job:localhost/replica:0/task:0/device:CPU:0");
  const Scope there = root.WithDevice("/job:localhost/replica:0/task:0/device:CPU:1");
  for (int i = 0; i < 3; ++i) {
    Variable variable = Variable::Create(here, StrCat("v", i), TensorShape({2}), DataType::kFloat,
                                         Initializer::Zeros());
    ops::Identity(there, variable.Read(there));
  }
  AssignRequestedDevices(root.graph());
  const int nodes = root.graph()->num_nodes();
  StatusOr<int> joined = CoalesceVariableReads(root.graph());
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_EQ(*joined, 0);
  EXPECT_EQ(root.graph()->num_nodes(), nodes);
}

}  // namespace
}  // namespace weft
