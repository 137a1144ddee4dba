#include "weft/runtime/direct_session.h"

#include <thread>

#include <gtest/gtest.h>

#include "weft/graph/builder/ops.h"
#include "weft/testing/tensor_matchers.h"

namespace weft {
namespace {

// y = relu(x @ w + b), with a second, unrelated branch that fails if it ever runs.
proto::GraphDef DenseGraph() {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, PartialShape({-1, 2}));
  auto w = ops::Const(root.WithOpName("w"),
                      Tensor::FromVector<float>({1, -1, 2, 0.5f}, TensorShape({2, 2})));
  auto b = ops::Const(root.WithOpName("b"), {0.5f, -10.0f});
  ops::Relu(root.WithOpName("y"), ops::BiasAdd(root, ops::MatMul(root, x, w), b));
  auto never_fed = ops::Placeholder(root.WithOpName("never_fed"), DataType::kFloat);
  ops::Neg(root.WithOpName("needs_never_fed"), never_fed);
  ops::NoOp(root.WithOpName("noop"));
  return root.ToGraphDef().value();
}

std::unique_ptr<Session> MakeSession(const proto::GraphDef& graph) {
  auto session = NewSession(SessionOptions());
  EXPECT_TRUE(session.ok()) << session.status();
  Status created = (*session)->Create(graph);
  EXPECT_TRUE(created.ok()) << created;
  return std::move(session).value();
}

Tensor Input2x2() { return Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})); }

TEST(DirectSessionTest, RunsAPrunedGraph) {
  auto session = MakeSession(DenseGraph());
  std::vector<Tensor> outputs;
  Status s = session->Run({{"x", Input2x2()}}, {"y"}, {}, &outputs);
  ASSERT_TRUE(s.ok()) << s;  // never_fed is pruned away, so not feeding it is fine
  ASSERT_EQ(outputs.size(), 1u);
  // x @ w = [[5, 0], [11, -1]]; + b = [[5.5, -10], [11.5, -11]]; relu.
  EXPECT_TENSOR_EQ(outputs[0], Tensor::FromVector<float>({5.5f, 0, 11.5f, 0}, TensorShape({2, 2})));
}

TEST(DirectSessionTest, FetchesFedTensorsAndRunsTargets) {
  auto session = MakeSession(DenseGraph());
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run({{"x", Input2x2()}}, {"x", "y", "w:0"}, {"noop"}, &outputs).ok());
  ASSERT_EQ(outputs.size(), 3u);
  EXPECT_TENSOR_EQ(outputs[0], Input2x2());
  EXPECT_EQ(outputs[2].shape(), TensorShape({2, 2}));
  ASSERT_TRUE(session->Run({}, {}, {"noop"}, &outputs).ok());
  EXPECT_TRUE(outputs.empty());
}

// Regression test: the cache key of a step was its lists joined with "->" and "/" between them, so
// these two signatures shared one cached step and the second fetched the first's value.
TEST(DirectSessionTest, NamesHoldingSeparatorsDoNotShareACachedStep) {
  Scope root = Scope::NewRootScope();
  ops::Const(root.WithOpName("a"), 1.0f);
  ops::Const(root.WithOpName("a/b"), 2.0f);
  ops::NoOp(root.WithOpName("c"));
  ops::NoOp(root.WithOpName("b/c"));
  auto session = MakeSession(root.ToGraphDef().value());
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run({}, {"a/b"}, {"c"}, &outputs).ok());
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_TENSOR_EQ(outputs[0], Tensor::Scalar(2.0f));
  ASSERT_TRUE(session->Run({}, {"a"}, {"b/c"}, &outputs).ok());
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_TENSOR_EQ(outputs[0], Tensor::Scalar(1.0f));
}

TEST(DirectSessionTest, BadFeedsAndFetchesNameTheCulprit) {
  auto session = MakeSession(DenseGraph());
  std::vector<Tensor> outputs;
  Status s = session->Run({{"x", Input2x2()}}, {"nope"}, {}, &outputs);
  EXPECT_TRUE(IsNotFound(s));
  EXPECT_NE(s.message().find("fetch 'nope'"), std::string::npos) << s;

  s = session->Run({{"ghost", Input2x2()}}, {"y"}, {}, &outputs);
  EXPECT_NE(s.message().find("feed 'ghost'"), std::string::npos) << s;

  s = session->Run({{"x", Tensor::FromVector<double>({1, 2})}}, {"y"}, {}, &outputs);
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("feed 'x' is float64"), std::string::npos) << s;

  s = session->Run({{"x", Tensor::FromVector<float>({1, 2, 3})}}, {"y"}, {}, &outputs);
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("feed 'x' has shape [3]"), std::string::npos) << s;
}

TEST(DirectSessionTest, UnfedPlaceholderIsNamed) {
  auto session = MakeSession(DenseGraph());
  std::vector<Tensor> outputs;
  Status s = session->Run({}, {"needs_never_fed"}, {}, &outputs);
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("never_fed"), std::string::npos) << s;
}

TEST(DirectSessionTest, CreateTwiceExtendAndClose) {
  auto session = MakeSession(DenseGraph());
  EXPECT_EQ(session->Create(DenseGraph()).code(), Code::kAlreadyExists);

  Scope more = Scope::NewRootScope();
  proto::GraphDef extension;
  proto::NodeDef* neg = extension.add_node();
  neg->set_name("neg_y");
  neg->set_op("Neg");
  neg->add_input("y");
  (*neg->mutable_attr())["T"] = MakeAttrValue(DataType::kFloat);
  ASSERT_TRUE(session->Extend(extension).ok());
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run({{"x", Input2x2()}}, {"neg_y"}, {}, &outputs).ok());
  EXPECT_EQ(outputs[0].flat<float>()[0], -5.5f);

  // A bad extension leaves the graph as it was.
  EXPECT_FALSE(session->Extend(extension).ok());  // neg_y exists already
  ASSERT_TRUE(session->Run({{"x", Input2x2()}}, {"neg_y"}, {}, &outputs).ok());

  ASSERT_TRUE(session->Close().ok());
  Status s = session->Run({{"x", Input2x2()}}, {"y"}, {}, &outputs);
  EXPECT_TRUE(IsFailedPrecondition(s)) << s;
}

TEST(DirectSessionTest, ConcurrentRunsFromEightThreadsGetTheirOwnResults) {
  auto session = MakeSession(DenseGraph());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int step = 0; step < 50; ++step) {
        float v = static_cast<float>(t * 100 + step);
        std::vector<Tensor> outputs;
        Status s = session->Run({{"x", Tensor::FromVector<float>({v, 0}, TensorShape({1, 2}))}},
                                {"y"}, {}, &outputs);
        // y = relu([v, 0] @ w + b) = [v + 0.5, relu(-v - 10)] = [v + 0.5, 0]
        if (!s.ok() || outputs[0].flat<float>()[0] != v + 0.5f ||
            outputs[0].flat<float>()[1] != 0) {
          failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(DirectSessionTest, TraceFillsStepStats) {
  auto session = MakeSession(DenseGraph());
  proto::RunOptions options;
  options.set_trace_level(proto::RunOptions::FULL_TRACE);
  proto::RunMetadata metadata;
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run(options, {{"x", Input2x2()}}, {"y"}, {}, &outputs, &metadata).ok());
  ASSERT_EQ(metadata.step_stats().dev_stats_size(), 1);
  std::set<std::string> ops;
  for (const auto& node : metadata.step_stats().dev_stats(0).node_stats()) ops.insert(node.op());
  // The dense layer's MatMul -> BiasAdd -> Relu runs as one fused kernel (graph/fuse_ops.h).
  EXPECT_TRUE(ops.contains("_FusedMatMul"));
  EXPECT_TRUE(ops.contains("_Arg"));
  EXPECT_FALSE(ops.contains("Relu"));
}

TEST(DirectSessionTest, ACallableRunsLikeRunAndIsRefusedOnceReleased) {
  auto session = MakeSession(DenseGraph());
  std::vector<Tensor> expected;
  ASSERT_TRUE(session->Run({{"x", Input2x2()}}, {"y"}, {"noop"}, &expected).ok());
  StatusOr<CallableHandle> handle =
      session->MakeCallable({.feeds = {"x"}, .fetches = {"y"}, .targets = {"noop"}});
  ASSERT_TRUE(handle.ok()) << handle.status();
  for (int i = 0; i < 3; ++i) {
    std::vector<Tensor> outputs;
    Status status = session->RunCallable(*handle, {Input2x2()}, &outputs, nullptr);
    ASSERT_TRUE(status.ok()) << status;
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_TENSOR_NEAR(outputs[0], expected[0]);
  }
  std::vector<Tensor> outputs;
  Status status = session->RunCallable(*handle, {}, &outputs, nullptr);
  EXPECT_TRUE(IsInvalidArgument(status));
  EXPECT_NE(status.message().find("takes 1 feeds (x), but was given 0"), std::string::npos)
      << status;
  status = session->RunCallable(*handle, {Tensor::FromVector<int32_t>({1, 2})}, &outputs, nullptr);
  EXPECT_NE(status.message().find("feed 'x' is int32"), std::string::npos) << status;
  ASSERT_TRUE(session->ReleaseCallable(*handle).ok());
  status = session->RunCallable(*handle, {Input2x2()}, &outputs, nullptr);
  EXPECT_NE(status.message().find("does not exist"), std::string::npos) << status;
  EXPECT_FALSE(session->ReleaseCallable(*handle).ok());
}

TEST(DirectSessionTest, ACallableOfAnUnknownFetchIsRefusedWhenMade) {
  auto session = MakeSession(DenseGraph());
  StatusOr<CallableHandle> handle = session->MakeCallable({.fetches = {"nowhere"}});
  ASSERT_FALSE(handle.ok());
  EXPECT_NE(handle.status().message().find("nowhere"), std::string::npos) << handle.status();
}

TEST(DirectSessionTest, UnknownTargetSchemeIsRefused) {
  SessionOptions options;
  options.target = "carrier-pigeon://loft";
  Status s = NewSession(options).status();
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("carrier-pigeon://loft"), std::string::npos);
}

}  // namespace
}  // namespace weft
