// MultiHeadAttention against attention computed here in double from the layer's own weights
// (self and cross, causal, padded keys), the fused kernel against the composition forward and
// backward, the reference's weight names and shapes, PositionEmbedding, and bad inputs named.
#include "weft/train/layers/attention.h"

#include <cmath>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/distribute/testing/session_test_util.h"
#include "weft/graph/gradients/gradients.h"
#include "weft/train/optimizer.h"

namespace weft::train {
namespace {

using distribute::testing::Fetch;
using distribute::testing::MakeSession;
using ::testing::HasSubstr;

Tensor RandomTensor(const TensorShape& shape, uint32_t seed) {
  Tensor tensor(DataType::kFloat, shape);
  uint32_t state = seed * 2654435761u + 1;
  for (int64_t i = 0; i < tensor.NumElements(); ++i) {
    state = state * 1664525u + 1013904223u;
    tensor.data<float>()[i] = static_cast<float>((state >> 8) & 0xffff) / 65536.0f - 0.5f;
  }
  return tensor;
}

// x [B, T, F] through kernel [F, H, D] and bias [H, D]: [B, H, T, D] in double.
std::vector<double> ProjectHere(const Tensor& x, const Tensor& kernel, const Tensor& bias) {
  const int64_t batch = x.dim_size(0), time = x.dim_size(1), features = x.dim_size(2);
  const int64_t heads = kernel.dim_size(1), dim = kernel.dim_size(2);
  std::vector<double> out(batch * heads * time * dim);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < time; ++t)
        for (int64_t d = 0; d < dim; ++d) {
          double sum = bias.data<float>()[h * dim + d];
          for (int64_t f = 0; f < features; ++f) {
            sum += static_cast<double>(x.data<float>()[(b * time + t) * features + f]) *
                   kernel.data<float>()[(f * heads + h) * dim + d];
          }
          out[((b * heads + h) * time + t) * dim + d] = sum;
        }
  return out;
}

// The layer's output computed here from its weights (query, key, value, output: kernel and bias
// each, the layer's order).
std::vector<double> AttentionHere(const Tensor& query, const Tensor& key, const Tensor& value,
                                  const std::vector<Tensor>& w, bool causal,
                                  const std::vector<int>& lengths) {
  const int64_t batch = query.dim_size(0), queries = query.dim_size(1), keys = key.dim_size(1);
  const int64_t heads = w[0].dim_size(1), key_dim = w[0].dim_size(2), value_dim = w[4].dim_size(2);
  const int64_t out_dim = w[6].dim_size(2);
  std::vector<double> q = ProjectHere(query, w[0], w[1]), k = ProjectHere(key, w[2], w[3]),
                      v = ProjectHere(value, w[4], w[5]);
  std::vector<double> merged(batch * queries * heads * value_dim, 0.0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < queries; ++i) {
        std::vector<double> p(keys, 0.0);
        double max = -1e300;
        std::vector<bool> allowed(keys);
        for (int64_t j = 0; j < keys; ++j) {
          allowed[j] =
              (!causal || j <= i + (keys - queries)) && (lengths.empty() || j < lengths[b]);
          if (!allowed[j]) continue;
          double s = 0;
          for (int64_t d = 0; d < key_dim; ++d) {
            s += q[((b * heads + h) * queries + i) * key_dim + d] *
                 k[((b * heads + h) * keys + j) * key_dim + d];
          }
          p[j] = s / std::sqrt(static_cast<double>(key_dim));
          max = std::max(max, p[j]);
        }
        double total = 0;
        for (int64_t j = 0; j < keys; ++j) total += allowed[j] ? (p[j] = std::exp(p[j] - max)) : 0;
        for (int64_t j = 0; j < keys; ++j) {
          if (!allowed[j]) continue;
          for (int64_t d = 0; d < value_dim; ++d) {
            merged[((b * queries + i) * heads + h) * value_dim + d] +=
                p[j] / total * v[((b * heads + h) * keys + j) * value_dim + d];
          }
        }
      }
  std::vector<double> out(batch * queries * out_dim);
  for (int64_t r = 0; r < batch * queries; ++r)
    for (int64_t o = 0; o < out_dim; ++o) {
      double sum = w[7].data<float>()[o];
      for (int64_t m = 0; m < heads * value_dim; ++m) {
        sum += merged[r * heads * value_dim + m] * w[6].data<float>()[m * out_dim + o];
      }
      out[r * out_dim + o] = sum;
    }
  return out;
}

struct Case {
  bool fused;
  bool causal;
  bool cross;    // query of 3 positions against 5 keys
  bool lengths;  // keys padded: lengths 5 and 2
};

void CheckAgainstHere(const Case& c) {
  SCOPED_TRACE(::testing::Message() << "fused " << c.fused << " causal " << c.causal << " cross "
                                    << c.cross << " lengths " << c.lengths);
  MultiHeadAttention attention(2, 3,
                               {.value_dim = 4,
                                .causal = c.causal,
                                .fused = c.fused,
                                .bias_initializer = Initializer::RandomUniform(-0.5, 0.5, 3)});
  Tensor query = RandomTensor(TensorShape({2, c.cross ? 3 : 5, 6}), 1);
  Tensor value = c.cross ? RandomTensor(TensorShape({2, 5, 7}), 2) : query;
  std::vector<int> lengths;
  if (c.lengths) lengths = {5, 2};
  Scope root = Scope::NewRootScope();
  Output output;
  if (c.cross || c.lengths) {
    output = attention.Attend(
        root, ops::Const(root, query), ops::Const(root, value), Output(),
        c.lengths ? ops::Const(root, Tensor::FromVector<int32_t>(lengths)) : Output());
  } else {
    output = attention(root, ops::Const(root, query));
  }
  ASSERT_TRUE(root.ok()) << root.status();
  std::vector<Variable> weights = attention.variables();
  ASSERT_EQ(weights.size(), 8u);
  std::vector<Output> reads = {output};
  std::vector<Output> initializers;
  for (const Variable& weight : weights) {
    reads.push_back(weight.Read(root));
    initializers.push_back(weight.initializer());
  }
  auto session = MakeSession(root, 1);
  ASSERT_NE(session, nullptr);
  Fetch(*session, {}, initializers);
  std::vector<Tensor> values = Fetch(*session, reads);
  ASSERT_EQ(values.size(), 9u);
  std::vector<Tensor> w(values.begin() + 1, values.end());
  std::vector<double> expected = AttentionHere(query, value, value, w, c.causal, lengths);
  ASSERT_EQ(values[0].shape(), TensorShape({2, query.dim_size(1), 6}));
  for (int64_t i = 0; i < values[0].NumElements(); ++i) {
    ASSERT_NEAR(values[0].data<float>()[i], expected[i], 1e-5) << i;
  }
}

TEST(MultiHeadAttentionTest, MatchesAttentionComputedFromItsWeights) {
  for (bool fused : {false, true}) {
    for (bool causal : {false, true}) {
      for (bool cross : {false, true}) {
        for (bool lengths : {false, true}) CheckAgainstHere({fused, causal, cross, lengths});
      }
    }
  }
}

// The fused layer and the composed one with the same weights: the same outputs, and the same
// gradients of a weighted sum of them for the input and every weight.
void CheckFusedAgainstComposed(bool causal, bool cross, bool lengths) {
  SCOPED_TRACE(::testing::Message()
               << "causal " << causal << " cross " << cross << " lengths " << lengths);
  MultiHeadAttention fused(2, 4, {.causal = causal, .fused = true});
  MultiHeadAttention composed(2, 4, {.causal = causal, .fused = false});
  Scope root = Scope::NewRootScope();
  Output query = ops::Const(root, RandomTensor(TensorShape({2, cross ? 6 : 9, 5}), 11));
  Output value = cross ? ops::Const(root, RandomTensor(TensorShape({2, 9, 5}), 12)) : query;
  Output key_lengths = lengths ? ops::Const(root, Tensor::FromVector<int32_t>({9, 4})) : Output();
  std::vector<Output> outputs, losses;
  for (MultiHeadAttention* layer : {&fused, &composed}) {
    outputs.push_back(layer->Attend(root, query, value, Output(), key_lengths));
    losses.push_back(
        ops::Sum(root,
                 ops::Mul(root, outputs.back(),
                          ops::Const(root, RandomTensor(TensorShape({2, cross ? 6 : 9, 5}), 13))),
                 ops::Const(root, Tensor::FromVector<int32_t>({0, 1, 2}))));
  }
  ASSERT_TRUE(root.ok()) << root.status();
  auto optimizer = NewGradientDescentOptimizer(1);
  std::vector<Output> fetches = outputs;
  std::vector<size_t> per_layer;
  for (int i = 0; i < 2; ++i) {
    MultiHeadAttention* layer = i == 0 ? &fused : &composed;
    auto gradients = optimizer->ComputeGradients(root, losses[i], layer->variables());
    ASSERT_TRUE(gradients.ok()) << gradients.status();
    for (const GradientAndVariable& gradient : *gradients) fetches.push_back(gradient.gradient);
    std::vector<Output> of_input;
    ASSERT_TRUE(AddSymbolicGradients(root, {losses[i]}, {query}, &of_input).ok());
    fetches.push_back(of_input[0]);
    per_layer.push_back(gradients->size() + 1);
  }
  // The composed layer starts from the fused one's initial values.
  std::vector<Output> copies;
  for (size_t w = 0; w < fused.variables().size(); ++w) {
    copies.push_back(composed.variables()[w].Assign(root, fused.variables()[w].Read(root)));
  }
  std::vector<Output> initializers;
  for (const Variable& weight : fused.variables()) initializers.push_back(weight.initializer());
  for (const Variable& weight : composed.variables()) initializers.push_back(weight.initializer());
  auto session = MakeSession(root, 1);
  ASSERT_NE(session, nullptr);
  Fetch(*session, {}, initializers);
  Fetch(*session, {}, copies);
  std::vector<Tensor> values = Fetch(*session, fetches);
  ASSERT_EQ(values.size(), 2 + per_layer[0] + per_layer[1]);
  ASSERT_EQ(per_layer[0], per_layer[1]);
  auto expect_near = [](const Tensor& a, const Tensor& b, const std::string& what) {
    ASSERT_EQ(a.shape(), b.shape()) << what;
    for (int64_t i = 0; i < a.NumElements(); ++i) {
      ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], 2e-5) << what << " element " << i;
    }
  };
  expect_near(values[0], values[1], "output");
  for (size_t g = 0; g < per_layer[0]; ++g) {
    expect_near(values[2 + g], values[2 + per_layer[0] + g],
                g + 1 == per_layer[0] ? "input gradient" : fused.variables()[g].name());
  }
}

TEST(MultiHeadAttentionTest, FusedMatchesComposedForwardAndBackward) {
  for (bool causal : {false, true}) {
    for (bool cross : {false, true}) {
      for (bool lengths : {false, true}) CheckFusedAgainstComposed(causal, cross, lengths);
    }
  }
}

TEST(MultiHeadAttentionTest, WeightsAreNamedAndShapedAsTheReferences) {
  MultiHeadAttention attention(4, 8, {.name = "attention"});
  Scope root = Scope::NewRootScope();
  attention(root, ops::Placeholder(root, DataType::kFloat, PartialShape({-1, 16, 32})));
  ASSERT_TRUE(root.ok()) << root.status();
  std::vector<std::pair<std::string, TensorShape>> expected = {
      {"attention/query/kernel", TensorShape({32, 4, 8})},
      {"attention/query/bias", TensorShape({4, 8})},
      {"attention/key/kernel", TensorShape({32, 4, 8})},
      {"attention/key/bias", TensorShape({4, 8})},
      {"attention/value/kernel", TensorShape({32, 4, 8})},
      {"attention/value/bias", TensorShape({4, 8})},
      {"attention/attention_output/kernel", TensorShape({4, 8, 32})},
      {"attention/attention_output/bias", TensorShape({32})}};
  std::vector<Variable> weights = attention.variables();
  ASSERT_EQ(weights.size(), expected.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    EXPECT_EQ(weights[i].name(), expected[i].first);
    EXPECT_EQ(weights[i].shape(), expected[i].second) << expected[i].first;
  }
  EXPECT_EQ(attention.CountParams(), 4 * (32 * 32 + 32));
}

TEST(MultiHeadAttentionTest, BadInputsAreNamed) {
  {
    MultiHeadAttention attention(2, 4, {.name = "att"});
    Scope root = Scope::NewRootScope();
    attention(root, ops::Placeholder(root, DataType::kFloat, PartialShape({-1, 8})));
    EXPECT_THAT(root.status().message(), HasSubstr("layer 'att' (MultiHeadAttention): the query"));
  }
  {
    MultiHeadAttention attention(0, 4);
    Scope root = Scope::NewRootScope();
    attention(root, ops::Placeholder(root, DataType::kFloat, PartialShape({-1, 3, 8})));
    EXPECT_THAT(root.status().message(), HasSubstr("num_heads (0)"));
  }
  {
    MultiHeadAttention attention(2, 4, {.name = "att2"});
    Scope root = Scope::NewRootScope();
    Output x = ops::Placeholder(root, DataType::kFloat, PartialShape({-1, 3, 8}));
    attention(root, x);
    ASSERT_TRUE(root.ok());
    attention(root, ops::Placeholder(root, DataType::kFloat, PartialShape({-1, 3, 9})));
    EXPECT_THAT(root.status().message(), HasSubstr("was built for a query [batch, time, 8]"));
  }
  {
    MultiHeadAttention attention(2, 4);
    Scope root = Scope::NewRootScope();
    Output x = ops::Placeholder(root, DataType::kFloat, PartialShape({-1, 3, 8}));
    attention.Attend(root, x, x, Output(), ops::Const(root, Tensor::FromVector<float>({1.0f})));
    EXPECT_THAT(root.status().message(), HasSubstr("key_lengths must be int32"));
  }
}

TEST(PositionEmbeddingTest, GivesTheFirstRowsBroadcastOverTheBatch) {
  PositionEmbedding positions(6, {.name = "positions"});
  Scope root = Scope::NewRootScope();
  Output tokens = ops::Const(root, RandomTensor(TensorShape({2, 4, 3}), 5));
  Output rows = positions(root, tokens);
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_EQ(positions.variables().size(), 1u);
  EXPECT_EQ(positions.variables()[0].name(), "positions/embeddings");
  EXPECT_EQ(positions.variables()[0].shape(), TensorShape({6, 3}));
  Output table = positions.variables()[0].Read(root);
  auto session = MakeSession(root, 1);
  ASSERT_NE(session, nullptr);
  Fetch(*session, {}, {positions.variables()[0].initializer()});
  std::vector<Tensor> values = Fetch(*session, {rows, table});
  ASSERT_EQ(values.size(), 2u);
  ASSERT_EQ(values[0].shape(), TensorShape({2, 4, 3}));
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t i = 0; i < 12; ++i) {
      EXPECT_EQ(values[0].data<float>()[b * 12 + i], values[1].data<float>()[i]);
    }
  }
}

TEST(PositionEmbeddingTest, AContextLongerThanTheTableIsNamed) {
  PositionEmbedding positions(4, {.name = "positions"});
  Scope root = Scope::NewRootScope();
  positions(root, ops::Placeholder(root, DataType::kFloat, PartialShape({-1, 5, 3})));
  EXPECT_THAT(root.status().message(),
              HasSubstr("layer 'positions' (PositionEmbedding): an input of 5 positions is longer "
                        "than the table's 4"));
}

}  // namespace
}  // namespace weft::train
