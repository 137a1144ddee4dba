#include "weft/graph/fuse_ops.h"

#include <random>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "weft/graph/builder/ops.h"
#include "weft/kernels/nn/conv_algorithm.h"
#include "weft/kernels/register_kernels.h"
#include "weft/runtime/session.h"
#include "weft/testing/tensor_matchers.h"

namespace weft {
namespace {

Tensor Random(const TensorShape& shape, uint32_t seed) {
  Tensor t(DataType::kFloat, shape);
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (float& v : t.flat<float>()) v = uniform(generator);
  return t;
}

const proto::NodeDef* Find(const proto::GraphDef& graph, const std::string& name) {
  for (const proto::NodeDef& node : graph.node()) {
    if (node.name() == name) return &node;
  }
  return nullptr;
}

int Fuse(proto::GraphDef* graph) { return FuseOps(kernels::AllKernels(), "CPU", graph); }

// x [2,6,6,3] -> conv -> bias_add -> relu, and a [4,8] -> matmul -> dense_bias (no activation).
struct Chains {
  Scope root = Scope::NewRootScope();
  Output conv, bias_add, relu, matmul, dense;
  Chains() {
    Output x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
    conv = ops::Conv2D(root.WithOpName("conv"), x,
                       ops::Const(root.WithOpName("filter"), Random(TensorShape({3, 3, 3, 5}), 1)),
                       {1, 1, 1, 1}, "SAME");
    bias_add = ops::BiasAdd(root.WithOpName("bias_add"), conv,
                            ops::Const(root.WithOpName("bias"), Random(TensorShape({5}), 2)));
    relu = ops::Relu(root.WithOpName("relu"), bias_add);
    Output a = ops::Placeholder(root.WithOpName("a"), DataType::kFloat);
    matmul =
        ops::MatMul(root.WithOpName("matmul"), a, ops::Const(root, Random(TensorShape({8, 3}), 3)));
    dense = ops::BiasAdd(root.WithOpName("dense"), matmul,
                         ops::Const(root.WithOpName("dense_bias"), Random(TensorShape({3}), 4)));
  }
};

TEST(FuseOpsTest, FusesConvolutionAndMatMulChainsUnderTheLastNodesName) {
  Chains chains;
  ops::Identity(chains.root.WithOpName("out"), chains.relu);
  ops::Identity(chains.root.WithOpName("out2"), chains.dense);
  proto::GraphDef graph = chains.root.ToGraphDef().value();
  EXPECT_EQ(Fuse(&graph), 2);
  EXPECT_EQ(Find(graph, "conv"), nullptr);
  EXPECT_EQ(Find(graph, "bias_add"), nullptr);
  EXPECT_EQ(Find(graph, "matmul"), nullptr);
  const proto::NodeDef* relu = Find(graph, "relu");
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->op(), "_FusedConv2D");
  ASSERT_EQ(relu->input_size(), 3);
  EXPECT_EQ(relu->input(0), "x");
  EXPECT_EQ(relu->input(1), "filter");
  EXPECT_EQ(relu->input(2), "bias");
  EXPECT_EQ(relu->attr().at("activation").s(), "Relu");
  EXPECT_EQ(relu->attr().at("padding").s(), "SAME");
  const proto::NodeDef* dense = Find(graph, "dense");
  ASSERT_NE(dense, nullptr);
  EXPECT_EQ(dense->op(), "_FusedMatMul");
  EXPECT_EQ(dense->attr().at("activation").s(), "None");
  // The consumers still read the chains' last names.
  EXPECT_EQ(Find(graph, "out")->input(0), "relu");
}

TEST(FuseOpsTest, LeavesChainsWhoseMiddleResultsAreReadElsewhere) {
  {
    Chains chains;  // the convolution's output is read twice
    ops::Identity(chains.root.WithOpName("out"), chains.relu);
    ops::Identity(chains.root.WithOpName("peek"), chains.conv);
    proto::GraphDef graph = chains.root.ToGraphDef().value();
    Fuse(&graph);
    EXPECT_EQ(Find(graph, "relu")->op(), "Relu");
    EXPECT_EQ(Find(graph, "conv")->op(), "Conv2D");
  }
  {
    Chains chains;  // the BiasAdd's output is read beside the Relu: Conv2D + BiasAdd fuse alone
    ops::Identity(chains.root.WithOpName("out"), chains.relu);
    ops::Identity(chains.root.WithOpName("peek"), chains.bias_add);
    proto::GraphDef graph = chains.root.ToGraphDef().value();
    Fuse(&graph);
    EXPECT_EQ(Find(graph, "relu")->op(), "Relu");
    EXPECT_EQ(Find(graph, "bias_add")->op(), "_FusedConv2D");
    EXPECT_EQ(Find(graph, "bias_add")->attr().at("activation").s(), "None");
  }
  {
    Chains chains;  // a control edge from the convolution
    ops::Identity(chains.root.WithOpName("out"), chains.relu);
    ops::Identity(chains.root.WithOpName("later").WithControlDependencies({chains.conv}),
                  chains.dense);
    proto::GraphDef graph = chains.root.ToGraphDef().value();
    Fuse(&graph);
    EXPECT_EQ(Find(graph, "conv")->op(), "Conv2D");
  }
}

// The gradient of Relu -> MaxPool: MaxPoolGrad -> ReluGrad over the pooled Relu output fuses;
// a ReluGrad whose features are another tensor does not.
TEST(FuseOpsTest, FusesTheReluGradientIntoTheMaxPoolGradient) {
  for (bool same_features : {true, false}) {
    SCOPED_TRACE(same_features ? "features: the pooled input" : "features: another tensor");
    Scope root = Scope::NewRootScope();
    Output activations = ops::Relu(root.WithOpName("relu"),
                                   ops::Placeholder(root.WithOpName("x"), DataType::kFloat));
    Output pooled =
        ops::MaxPool(root.WithOpName("pool"), activations, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
    Output grad = ops::MaxPoolGrad(root.WithOpName("pool_grad"), activations, pooled,
                                   ops::Placeholder(root.WithOpName("dy"), DataType::kFloat),
                                   {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
    Output other = ops::Placeholder(root.WithOpName("other"), DataType::kFloat);
    ops::ReluGrad(root.WithOpName("relu_grad"), grad, same_features ? activations : other);
    proto::GraphDef graph = root.ToGraphDef().value();
    Fuse(&graph);
    const proto::NodeDef* relu_grad = Find(graph, "relu_grad");
    ASSERT_NE(relu_grad, nullptr);
    if (same_features) {
      EXPECT_EQ(relu_grad->op(), "_FusedMaxPoolGrad");
      EXPECT_EQ(Find(graph, "pool_grad"), nullptr);
      ASSERT_EQ(relu_grad->input_size(), 3);
      EXPECT_EQ(relu_grad->input(0), "relu");
      EXPECT_EQ(relu_grad->input(1), "pool");
      EXPECT_EQ(relu_grad->input(2), "dy");
      EXPECT_EQ(relu_grad->attr().at("ksize").list().i_size(), 4);
    } else {
      EXPECT_EQ(relu_grad->op(), "ReluGrad");
      EXPECT_EQ(Find(graph, "pool_grad")->op(), "MaxPoolGrad");
    }
  }
}

TEST(FuseOpsTest, IntegerMatMulHasNoFusedKernel) {
  Scope root = Scope::NewRootScope();
  Output product =
      ops::MatMul(root.WithOpName("matmul"),
                  ops::Const(root, Tensor::FromVector<int32_t>({1, 2}, TensorShape({1, 2}))),
                  ops::Const(root, Tensor::FromVector<int32_t>({3, 4}, TensorShape({2, 1}))));
  ops::BiasAdd(root.WithOpName("bias_add"), product,
               ops::Const(root, Tensor::FromVector<int32_t>({5})));
  proto::GraphDef graph = root.ToGraphDef().value();
  EXPECT_EQ(Fuse(&graph), 0);
  EXPECT_EQ(Find(graph, "matmul")->op(), "MatMul");
}

TEST(FuseOpsTest, MalformedInputsFuseNothingAndDoNotCrash) {
  Chains chains;
  ops::Identity(chains.root.WithOpName("out"), chains.relu);
  proto::GraphDef graph = chains.root.ToGraphDef().value();
  for (proto::NodeDef& node : *graph.mutable_node()) {
    if (node.name() == "relu") node.set_input(0, "bias_add:banana");
  }
  // conv -> bias_add (whose lone reader no longer parses as one) and matmul -> dense; importing
  // the graph then reports the bad input as it would have.
  EXPECT_EQ(Fuse(&graph), 2);
  EXPECT_EQ(Find(graph, "relu")->op(), "Relu");
}

// A session fuses each partition: the fused kernels give what the separate ops give, on both
// convolution algorithms (fetching the convolution too keeps the second run unfused).
TEST(FuseOpsTest, FusedStepsComputeWhatTheSeparateOpsCompute) {
  for (kernels::ConvAlgorithm algorithm :
       {kernels::ConvAlgorithm::kIm2ColGemm, kernels::ConvAlgorithm::kOneDnn}) {
    SCOPED_TRACE(kernels::ConvAlgorithmName(algorithm));
    kernels::SetConvAlgorithmOverride(algorithm);
    Chains chains;
    auto session = NewSession(SessionOptions()).value();
    ASSERT_TRUE(session->Create(chains.root.ToGraphDef().value()).ok());
    const NamedTensorList feeds = {{"x", Random(TensorShape({2, 6, 6, 3}), 5)},
                                   {"a", Random(TensorShape({4, 8}), 6)}};
    std::vector<Tensor> fused, separate;
    proto::RunOptions trace;
    trace.set_trace_level(proto::RunOptions::FULL_TRACE);
    auto ops_run = [](const proto::RunMetadata& metadata) {
      std::set<std::string> ops;
      for (const auto& device : metadata.step_stats().dev_stats()) {
        for (const auto& node : device.node_stats()) ops.insert(node.op());
      }
      return ops;
    };
    proto::RunMetadata fused_run, separate_run;
    ASSERT_TRUE(session->Run(trace, feeds, {"relu", "dense"}, {}, &fused, &fused_run).ok());
    ASSERT_TRUE(
        session
            ->Run(trace, feeds, {"relu", "dense", "conv", "matmul"}, {}, &separate, &separate_run)
            .ok());
    EXPECT_EQ(ops_run(fused_run).count("_FusedConv2D"), 1);
    EXPECT_EQ(ops_run(fused_run).count("_FusedMatMul"), 1);
    EXPECT_EQ(ops_run(separate_run).count("_FusedConv2D"), 0);
    EXPECT_EQ(ops_run(separate_run).count("BiasAdd"), 1);
    EXPECT_TENSOR_NEAR(fused[0], separate[0], 1e-5, 1e-5);
    EXPECT_TENSOR_NEAR(fused[1], separate[1], 1e-5, 1e-5);
    kernels::SetConvAlgorithmOverride(std::nullopt);
  }
}

// Mixed precision's products: a bfloat16 MatMul widened to float32 fuses with the widening Cast,
// and with a BiasAdd and Relu after it; the fused kernel writes the float32 sum the separate ops
// round to bfloat16 first, so the two agree within bfloat16's rounding.
TEST(FuseOpsTest, FusesBFloat16ProductsWithTheirWideningCastAndBias) {
  Scope root = Scope::NewRootScope();
  Output a = ops::Cast(root, ops::Placeholder(root.WithOpName("a"), DataType::kFloat),
                       DataType::kBFloat16);
  Output w = ops::Cast(root, ops::Const(root, Random(TensorShape({8, 3}), 7)), DataType::kBFloat16);
  Output product = ops::MatMul(root.WithOpName("product"), a, w);
  ops::Cast(root.WithOpName("widened"), product, DataType::kFloat);
  Output other = ops::MatMul(root.WithOpName("other"), a, w, {.transpose_b = false});
  ops::Relu(root.WithOpName("dense"),
            ops::BiasAdd(root.WithOpName("dense_bias_add"),
                         ops::Cast(root.WithOpName("other_widened"), other, DataType::kFloat),
                         ops::Const(root, Random(TensorShape({3}), 8))));
  proto::GraphDef graph = root.ToGraphDef().value();
  EXPECT_EQ(Fuse(&graph), 2);
  const proto::NodeDef* plain = Find(graph, "widened");
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->op(), "_FusedBFloat16MatMul");
  EXPECT_EQ(plain->attr().at("num_bias").i(), 0);
  const proto::NodeDef* biased = Find(graph, "dense");
  ASSERT_NE(biased, nullptr);
  EXPECT_EQ(biased->op(), "_FusedBFloat16MatMul");
  EXPECT_EQ(biased->attr().at("num_bias").i(), 1);
  EXPECT_EQ(biased->attr().at("activation").s(), "Relu");
  for (const char* gone : {"product", "other", "other_widened", "dense_bias_add"}) {
    EXPECT_EQ(Find(graph, gone), nullptr) << gone;
  }

  auto session = NewSession(SessionOptions()).value();
  ASSERT_TRUE(session->Create(root.ToGraphDef().value()).ok());
  const NamedTensorList feeds = {{"a", Random(TensorShape({4, 8}), 9)}};
  std::vector<Tensor> fused, separate;
  ASSERT_TRUE(session->Run(feeds, {"widened", "dense"}, {}, &fused).ok());
  // Fetching the products keeps them, and so the chains, unfused.
  ASSERT_TRUE(session->Run(feeds, {"widened", "dense", "product", "other"}, {}, &separate).ok());
  EXPECT_EQ(fused[0].dtype(), DataType::kFloat);
  EXPECT_TENSOR_NEAR(fused[0], separate[0], 1e-2, 1e-2);
  EXPECT_TENSOR_NEAR(fused[1], separate[1], 1e-2, 1e-2);
}

// Mixed precision's gradients: a float32 gradient read by a BiasAddGrad and by a Cast to bfloat16
// is read once by _FusedBiasAddGrad (under the Cast's name, the BiasAddGrad's name kept by an
// Identity of its second output), which takes over the GeluGrad producing it when nothing else
// reads that; a GeluGrad whose output is also read elsewhere stays.
struct BiasGradients {
  Scope root = Scope::NewRootScope();
  Output gelu_grad, plain_gradient;
  BiasGradients() {
    Output g = ops::Placeholder(root.WithOpName("g"), DataType::kFloat);
    Output features = ops::Placeholder(root.WithOpName("features"), DataType::kFloat);
    gelu_grad = ops::GeluGrad(root.WithOpName("gelu_grad"), g, features);
    ops::BiasAddGrad(root.WithOpName("gelu_bias_grad"), gelu_grad);
    ops::Cast(root.WithOpName("gelu_rounded"), gelu_grad, DataType::kBFloat16);
    plain_gradient = ops::Mul(root.WithOpName("plain"), g, ops::Const(root, 3.0f));
    ops::BiasAddGrad(root.WithOpName("plain_bias_grad"), plain_gradient);
    ops::Cast(root.WithOpName("plain_rounded"), plain_gradient, DataType::kBFloat16);
  }
};

TEST(FuseOpsTest, FusesBiasGradientsWithTheCastsOfTheirInputs) {
  BiasGradients gradients;
  // And a Gelu read only by a Cast to bfloat16 (one read elsewhere too stays).
  Output x = ops::Placeholder(gradients.root.WithOpName("x"), DataType::kFloat);
  ops::Cast(gradients.root.WithOpName("activation_rounded"),
            ops::Gelu(gradients.root.WithOpName("activation"), x), DataType::kBFloat16);
  Output shared = ops::Gelu(gradients.root.WithOpName("shared"), x);
  ops::Cast(gradients.root.WithOpName("shared_rounded"), shared, DataType::kBFloat16);
  ops::Identity(gradients.root.WithOpName("shared_read"), shared);
  // And a layer normalisation whose output three Casts to bfloat16 read.
  ops::FusedLayerNormOutputs norm =
      ops::FusedLayerNorm(gradients.root.WithOpName("norm"), x,
                          ops::Const(gradients.root, Random(TensorShape({6}), 12)),
                          ops::Const(gradients.root, Random(TensorShape({6}), 13)), 1e-3f);
  for (const char* name : {"query_in", "key_in", "value_in"}) {
    ops::Cast(gradients.root.WithOpName(name), norm.y, DataType::kBFloat16);
  }
  proto::GraphDef graph = gradients.root.ToGraphDef().value();
  EXPECT_EQ(Fuse(&graph), 4);
  EXPECT_EQ(Find(graph, "norm")->op(), "_FusedLayerNorm");
  for (const char* name : {"query_in", "key_in", "value_in"}) {
    EXPECT_EQ(Find(graph, name)->op(), "Identity") << name;
    EXPECT_EQ(Find(graph, name)->input(0), "norm") << name;
  }
  const proto::NodeDef* activation = Find(graph, "activation_rounded");
  ASSERT_NE(activation, nullptr);
  EXPECT_EQ(activation->op(), "_FusedGelu");
  EXPECT_EQ(Find(graph, "activation"), nullptr);
  EXPECT_EQ(Find(graph, "shared_rounded")->op(), "Cast");
  const proto::NodeDef* gelu = Find(graph, "gelu_rounded");
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ(gelu->op(), "_FusedBiasAddGrad");
  EXPECT_EQ(gelu->attr().at("activation").s(), "Gelu");
  ASSERT_EQ(gelu->input_size(), 2);
  EXPECT_EQ(gelu->input(0), "g");
  EXPECT_EQ(gelu->input(1), "features");
  EXPECT_EQ(Find(graph, "gelu_grad"), nullptr);
  const proto::NodeDef* plain = Find(graph, "plain_rounded");
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->op(), "_FusedBiasAddGrad");
  EXPECT_EQ(plain->attr().at("activation").s(), "None");
  ASSERT_EQ(plain->input_size(), 1);
  EXPECT_EQ(plain->input(0), "plain");
  for (const char* name : {"gelu_bias_grad", "plain_bias_grad"}) {
    const proto::NodeDef* forwarded = Find(graph, name);
    ASSERT_NE(forwarded, nullptr) << name;
    EXPECT_EQ(forwarded->op(), "Identity");
  }
  EXPECT_EQ(Find(graph, "gelu_bias_grad")->input(0), "gelu_rounded:1");
}

TEST(FuseOpsTest, FusedBiasGradientsComputeWhatTheSeparateOpsCompute) {
  BiasGradients gradients;
  auto session = NewSession(SessionOptions()).value();
  ASSERT_TRUE(session->Create(gradients.root.ToGraphDef().value()).ok());
  // 70 rows of 24: several blocks of rows, and rows whose length is no multiple of a packet.
  const NamedTensorList feeds = {{"g", Random(TensorShape({70, 24}), 10)},
                                 {"features", Random(TensorShape({70, 24}), 11)}};
  const std::vector<std::string> fetches = {"gelu_bias_grad", "gelu_rounded", "plain_bias_grad",
                                            "plain_rounded"};
  std::vector<Tensor> fused, separate;
  ASSERT_TRUE(session->Run(feeds, fetches, {}, &fused).ok());
  // The same ops unfused: each BiasAddGrad reads an Identity of its input instead.
  Scope root = Scope::NewRootScope();
  Output g = ops::Placeholder(root.WithOpName("g"), DataType::kFloat);
  Output features = ops::Placeholder(root.WithOpName("features"), DataType::kFloat);
  Output gelu_grad = ops::GeluGrad(root, g, features);
  Output plain = ops::Mul(root, g, ops::Const(root, 3.0f));
  ops::BiasAddGrad(root.WithOpName("gelu_bias_grad"), ops::Identity(root, gelu_grad));
  ops::Cast(root.WithOpName("gelu_rounded"), gelu_grad, DataType::kBFloat16);
  ops::BiasAddGrad(root.WithOpName("plain_bias_grad"), ops::Identity(root, plain));
  ops::Cast(root.WithOpName("plain_rounded"), plain, DataType::kBFloat16);
  auto unfused = NewSession(SessionOptions()).value();
  ASSERT_TRUE(unfused->Create(root.ToGraphDef().value()).ok());
  ASSERT_TRUE(unfused->Run(feeds, fetches, {}, &separate).ok());
  for (size_t i = 0; i < fetches.size(); ++i) {
    SCOPED_TRACE(fetches[i]);
    EXPECT_EQ(fused[i].dtype(), separate[i].dtype());
    if (fused[i].dtype() == DataType::kBFloat16) {
      EXPECT_TENSOR_EQ(fused[i], separate[i]);
    } else {
      EXPECT_TENSOR_NEAR(fused[i], separate[i], 1e-5, 1e-5);
    }
  }
}

// The layers flatten their inputs before their products round them: x -> Reshape -> Cast becomes
// x -> Cast -> Reshape (of bfloat16, under the Cast's name), which lets the rounding fuse.
TEST(FuseOpsTest, RoundsBeforeReshapingSoThatTheRoundingFuses) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  Output flat = ops::Reshape(root.WithOpName("flat"), ops::Gelu(root.WithOpName("gelu"), x),
                             Tensor::FromVector<int64_t>({-1, 6}));
  ops::Cast(root.WithOpName("rounded"), flat, DataType::kBFloat16);
  proto::GraphDef graph = root.ToGraphDef().value();
  EXPECT_EQ(Fuse(&graph), 1);
  const proto::NodeDef* reshape = Find(graph, "rounded");
  ASSERT_NE(reshape, nullptr);
  EXPECT_EQ(reshape->op(), "Reshape");
  EXPECT_EQ(static_cast<DataType>(reshape->attr().at("T").type()), DataType::kBFloat16);
  const proto::NodeDef* gelu = Find(graph, reshape->input(0));
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ(gelu->op(), "_FusedGelu");
  EXPECT_EQ(Find(graph, "flat"), nullptr);
  EXPECT_EQ(Find(graph, "gelu"), nullptr);

  auto session = NewSession(SessionOptions()).value();
  ASSERT_TRUE(session->Create(root.ToGraphDef().value()).ok());
  std::vector<Tensor> outputs;
  ASSERT_TRUE(
      session->Run({{"x", Random(TensorShape({4, 3, 6}), 17)}}, {"rounded"}, {}, &outputs).ok());
  EXPECT_EQ(outputs[0].dtype(), DataType::kBFloat16);
  EXPECT_EQ(outputs[0].shape(), TensorShape({12, 6}));
}

// A session's fused _FusedGelu and _FusedLayerNorm give the bfloat16 values that the Casts of the
// separate ops give (kept unfused by a second reader of each float32 result).
TEST(FuseOpsTest, FusedRoundingsComputeWhatTheSeparateOpsCompute) {
  std::vector<std::vector<Tensor>> results;
  for (bool fuse : {true, false}) {
    Scope root = Scope::NewRootScope();
    Output x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
    Output gelu = ops::Gelu(root, x);
    ops::Cast(root.WithOpName("gelu_rounded"), gelu, DataType::kBFloat16);
    ops::FusedLayerNormOutputs norm =
        ops::FusedLayerNorm(root, x, ops::Const(root, Random(TensorShape({24}), 14)),
                            ops::Const(root, Random(TensorShape({24}), 15)));
    ops::Cast(root.WithOpName("norm_rounded"), norm.y, DataType::kBFloat16);
    ops::Cast(root.WithOpName("norm_rounded_again"), norm.y, DataType::kBFloat16);
    std::vector<std::string> fetches = {"gelu_rounded", "norm_rounded", "norm_rounded_again"};
    if (!fuse) {
      ops::Identity(root.WithOpName("gelu_float"), gelu);
      ops::Identity(root.WithOpName("norm_float"), norm.y);
      fetches.insert(fetches.end(), {"gelu_float", "norm_float"});
    }
    auto session = NewSession(SessionOptions()).value();
    ASSERT_TRUE(session->Create(root.ToGraphDef().value()).ok());
    proto::RunOptions trace;
    trace.set_trace_level(proto::RunOptions::FULL_TRACE);
    proto::RunMetadata metadata;
    std::vector<Tensor> outputs;
    ASSERT_TRUE(session
                    ->Run(trace, {{"x", Random(TensorShape({70, 24}), 16)}}, fetches, {}, &outputs,
                          &metadata)
                    .ok());
    std::set<std::string> ops_run;
    for (const auto& device : metadata.step_stats().dev_stats()) {
      for (const auto& node : device.node_stats()) ops_run.insert(node.op());
    }
    EXPECT_EQ(ops_run.count("_FusedGelu"), fuse ? 1 : 0);
    EXPECT_EQ(ops_run.count("_FusedLayerNorm"), fuse ? 1 : 0);
    outputs.resize(3);
    results.push_back(outputs);
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(results[0][i].dtype(), DataType::kBFloat16);
    EXPECT_TENSOR_EQ(results[0][i], results[1][i]) << i;
  }
}

}  // namespace
}  // namespace weft
