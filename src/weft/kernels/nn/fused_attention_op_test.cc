// Tests for the FusedAttention and FusedAttentionGrad CPU kernels against the plain composition,
// computed here in double: scores, a masked softmax over each row, the product with the values,
// and the gradients by the chain rule through those steps (the softmax's Jacobian, not the
// kernel's delta = dO . O). In float64 and float32, causal and not, with query_time below, equal to
// and above key_time, ragged key_lengths with a zero, and tiles that cross the 64-query and 64-key
// block edges; rows that attend no key (output 0, logsumexp +inf, no gradient, no NaN); huge
// scores; the gradients also against central differences of the forward; results that do not
// depend on the thread count; empty dimensions; the BTHD layout against BHTD; and the errors the
// kernels return themselves; and all of it again with bfloat16 products (precision "bfloat16")
// within bfloat16's tolerance.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "weft/kernels/testing/nn_test_util.h"
#include "weft/kernels/tile_gemm_bf16.h"

namespace weft::kernels {
namespace {

using testing::AttrMap;
using testing::ExpectKernelError;
using testing::NumericGradient;
using testing::RandomTensor;
using testing::RunKernelOnly;
using testing::WeightedSum;
using weft::testing::KernelRunner;
using weft::testing::ScopedBlasThreads;

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Case {
  int64_t batch, heads, query_time, key_time, depth, value_depth;
  std::vector<int32_t> lengths;
  float scale = 0;
};

std::string Describe(const Case& c, bool causal) {
  return StrCat("B ", c.batch, " H ", c.heads, " Tq ", c.query_time, " Tk ", c.key_time, " D ",
                c.depth, " Dv ", c.value_depth, " lengths [", StrJoin(c.lengths, ","), "] scale ",
                c.scale, " causal ", causal);
}

AttrMap Attrs(bool causal, float scale = 0, const std::string& precision = "float32") {
  return {{"causal", MakeAttrValue(causal)},
          {"scale", MakeAttrValue(scale)},
          {"precision", MakeAttrValue(precision)}};
}

template <typename T>
std::vector<double> Doubles(const Tensor& t) {
  return std::vector<double>(t.data<T>(), t.data<T>() + t.NumElements());
}

template <typename T>
Tensor FromDoubles(const std::vector<double>& values, const TensorShape& shape) {
  Tensor t(DataTypeToEnum<T>::value, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<T>()[i] = static_cast<T>(values[i]);
  return t;
}

// The plain composition's outputs and gradients, in double.
struct Reference {
  std::vector<double> output, logsumexp, dq, dk, dv;
};

template <typename T>
Reference PlainAttention(const Case& c, bool causal, const Tensor& query, const Tensor& key,
                         const Tensor& value, const Tensor& output_gradient) {
  const std::vector<double> q = Doubles<T>(query), k = Doubles<T>(key), v = Doubles<T>(value);
  const std::vector<double> dout = Doubles<T>(output_gradient);
  const int64_t tq = c.query_time, tk = c.key_time, d = c.depth, dv = c.value_depth;
  // Depth 0 gives scores of 0 whatever the scale; the kernel takes 1 rather than 1/sqrt(0).
  const double scale = c.scale != 0 ? c.scale : d > 0 ? 1 / std::sqrt(static_cast<double>(d)) : 1;
  const int64_t rows = c.batch * c.heads * tq;
  Reference ref{.output = std::vector<double>(rows * dv),
                .logsumexp = std::vector<double>(rows),
                .dq = std::vector<double>(q.size()),
                .dk = std::vector<double>(k.size()),
                .dv = std::vector<double>(v.size())};
  for (int64_t bh = 0; bh < c.batch * c.heads; ++bh) {
    const int64_t length = c.lengths[bh / c.heads];
    for (int64_t i = 0; i < tq; ++i) {
      const int64_t keys = causal ? std::min(length, i + tk - tq + 1) : length;
      const int64_t row = bh * tq + i;
      if (keys <= 0) {
        ref.logsumexp[row] = kInf;
        continue;
      }
      std::vector<double> p(keys);
      double max = -kInf;
      for (int64_t j = 0; j < keys; ++j) {
        for (int64_t x = 0; x < d; ++x) p[j] += q[row * d + x] * k[(bh * tk + j) * d + x];
        p[j] *= scale;
        max = std::max(max, p[j]);
      }
      double sum = 0;
      for (double& s : p) sum += (s = std::exp(s - max));
      for (double& s : p) s /= sum;
      ref.logsumexp[row] = max + std::log(sum);
      // dp_j = dO . v_j; ds_j = p_j (dp_j - sum_l p_l dp_l).
      std::vector<double> dp(keys);
      double p_dot_dp = 0;
      for (int64_t j = 0; j < keys; ++j) {
        for (int64_t y = 0; y < dv; ++y) {
          ref.output[row * dv + y] += p[j] * v[(bh * tk + j) * dv + y];
          ref.dv[(bh * tk + j) * dv + y] += p[j] * dout[row * dv + y];
          dp[j] += dout[row * dv + y] * v[(bh * tk + j) * dv + y];
        }
        p_dot_dp += p[j] * dp[j];
      }
      for (int64_t j = 0; j < keys; ++j) {
        const double ds = scale * p[j] * (dp[j] - p_dot_dp);
        for (int64_t x = 0; x < d; ++x) {
          ref.dq[row * d + x] += ds * k[(bh * tk + j) * d + x];
          ref.dk[(bh * tk + j) * d + x] += ds * q[row * d + x];
        }
      }
    }
  }
  return ref;
}

// logsumexp against the reference: +inf exactly where a row attends no key, near elsewhere.
template <typename T>
void ExpectLogSumExpNear(const Tensor& actual, const std::vector<double>& expected, double tol) {
  std::vector<double> a = Doubles<T>(actual), e = expected;
  for (size_t i = 0; i < e.size(); ++i) {
    if (std::isinf(e[i])) {
      EXPECT_EQ(a[i], kInf) << "logsumexp element " << i;
      a[i] = e[i] = 0;
    }
  }
  EXPECT_TENSOR_NEAR(FromDoubles<double>(a, actual.shape()), FromDoubles<double>(e, actual.shape()),
                     tol, tol);
}

struct Inputs {
  Tensor query, key, value, lengths, output_gradient;
};

template <typename T>
Inputs MakeInputs(const Case& c, uint32_t seed, double range) {
  const int64_t b = c.batch, h = c.heads;
  return {.query = RandomTensor<T>({b, h, c.query_time, c.depth}, seed, -range, range),
          .key = RandomTensor<T>({b, h, c.key_time, c.depth}, seed + 1, -range, range),
          .value = RandomTensor<T>({b, h, c.key_time, c.value_depth}, seed + 2),
          .lengths = Tensor::FromVector<int32_t>(c.lengths),
          .output_gradient = RandomTensor<T>({b, h, c.query_time, c.value_depth}, seed + 3)};
}

// Forward and backward of `c` against the plain composition.
template <typename T>
void CheckCase(KernelRunner& runner, const Case& c, bool causal, double tol, double range = 2,
               const std::string& precision = "float32") {
  SCOPED_TRACE(StrCat(Describe(c, causal), " precision ", precision));
  const Inputs in = MakeInputs<T>(c, 5, range);
  StatusOr<std::vector<Tensor>> forward =
      runner.Run("FusedAttention", {in.query, in.key, in.value, in.lengths},
                 Attrs(causal, c.scale, precision));
  ASSERT_TRUE(forward.ok()) << forward.status();
  const Reference ref =
      PlainAttention<T>(c, causal, in.query, in.key, in.value, in.output_gradient);
  const Tensor& output = (*forward)[0];
  EXPECT_TENSOR_NEAR(output, FromDoubles<T>(ref.output, output.shape()), tol, tol);
  ExpectLogSumExpNear<T>((*forward)[1], ref.logsumexp, tol);
  StatusOr<std::vector<Tensor>> grads = runner.Run(
      "FusedAttentionGrad",
      {in.query, in.key, in.value, in.lengths, output, (*forward)[1], in.output_gradient},
      Attrs(causal, c.scale, precision));
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_TENSOR_NEAR((*grads)[0], FromDoubles<T>(ref.dq, in.query.shape()), tol, tol) << "dq";
  EXPECT_TENSOR_NEAR((*grads)[1], FromDoubles<T>(ref.dk, in.key.shape()), tol, tol) << "dk";
  EXPECT_TENSOR_NEAR((*grads)[2], FromDoubles<T>(ref.dv, in.value.shape()), tol, tol) << "dv";
}

const std::vector<Case>& Cases() {
  static const auto* const cases = new std::vector<Case>{
      {2, 3, 5, 7, 4, 3, {7, 0}},           // a batch entry with no key
      {3, 2, 7, 5, 3, 2, {5, 2, 4}, 0.3f},  // more queries than keys: causal rows with none
      {2, 2, 70, 130, 8, 5, {130, 65}},     // partial blocks; a length one key past a block
      {1, 2, 129, 129, 16, 16, {100}},      // square, past two blocks, length mid-block
      {2, 1, 1, 67, 4, 4, {67, 1}},         // one query (decoding) over a partial block
  };
  return *cases;
}

template <typename T>
void CheckAgainstPlainComposition(double tol) {
  KernelRunner runner;
  for (const Case& c : Cases()) {
    for (bool causal : {false, true}) CheckCase<T>(runner, c, causal, tol);
  }
}

TEST(FusedAttentionTest, MatchesThePlainCompositionFloat) {
  CheckAgainstPlainComposition<float>(2e-5);
}

TEST(FusedAttentionTest, MatchesThePlainCompositionDouble) {
  CheckAgainstPlainComposition<double>(1e-12);
}

// OpenBLAS with threads of its own takes one double GEMM at a time, so the tasks run in turn.
TEST(FusedAttentionTest, MatchesThePlainCompositionDoubleWithThreadedBlas) {
  ScopedBlasThreads blas(2);
  KernelRunner runner;
  CheckCase<double>(runner, Cases()[2], true, 1e-12);
}

// Scores up to ~3000 overflow exp in float and double unless each row is shifted by its running
// maximum; the relative error of float scores that large is ~1e-4.
TEST(FusedAttentionTest, StableForHugeScores) {
  KernelRunner runner;
  const Case c{2, 2, 70, 130, 4, 3, {130, 90}, 1};
  for (bool causal : {false, true}) {
    CheckCase<float>(runner, c, causal, 2e-3, 30);
    CheckCase<double>(runner, c, causal, 1e-9, 30);
  }
}

// The gradient kernel against central differences of the forward kernel, for each input.
TEST(FusedAttentionTest, GradMatchesNumericDerivative) {
  KernelRunner runner;
  const Case c{2, 1, 3, 4, 2, 2, {4, 2}};
  const Inputs in = MakeInputs<double>(c, 9, 1);
  for (bool causal : {false, true}) {
    SCOPED_TRACE(StrCat("causal ", causal));
    StatusOr<std::vector<Tensor>> forward =
        runner.Run("FusedAttention", {in.query, in.key, in.value, in.lengths}, Attrs(causal));
    ASSERT_TRUE(forward.ok()) << forward.status();
    StatusOr<std::vector<Tensor>> grads = runner.Run(
        "FusedAttentionGrad",
        {in.query, in.key, in.value, in.lengths, (*forward)[0], (*forward)[1], in.output_gradient},
        Attrs(causal));
    ASSERT_TRUE(grads.ok()) << grads.status();
    const std::vector<Tensor> xs = {in.query, in.key, in.value};
    for (int x = 0; x < 3; ++x) {
      Tensor numeric = NumericGradient(
          [&](const Tensor& probe) {
            std::vector<Tensor> args = {in.query, in.key, in.value, in.lengths};
            args[x] = probe;
            StatusOr<std::vector<Tensor>> y = runner.Run("FusedAttention", args, Attrs(causal));
            return y.ok() ? WeightedSum((*y)[0], in.output_gradient) : 0.0;
          },
          xs[x]);
      EXPECT_TENSOR_NEAR((*grads)[x], numeric, 1e-8, 1e-8) << "input " << x;
    }
  }
}

// Each output element is computed by one task in a fixed order, whichever thread runs it.
void CheckThreadCountIndependence(const std::string& precision) {
  SCOPED_TRACE(precision);
  const Case& c = Cases()[2];
  const Inputs in = MakeInputs<float>(c, 3, 2);
  const AttrMap attrs = Attrs(true, 0, precision);
  std::vector<std::vector<Tensor>> results;
  for (int threads : {1, 4}) {
    KernelRunner runner(threads);
    StatusOr<std::vector<Tensor>> forward =
        runner.Run("FusedAttention", {in.query, in.key, in.value, in.lengths}, attrs);
    ASSERT_TRUE(forward.ok()) << forward.status();
    StatusOr<std::vector<Tensor>> grads = runner.Run(
        "FusedAttentionGrad",
        {in.query, in.key, in.value, in.lengths, (*forward)[0], (*forward)[1], in.output_gradient},
        attrs);
    ASSERT_TRUE(grads.ok()) << grads.status();
    results.push_back(*forward);
    results.back().insert(results.back().end(), grads->begin(), grads->end());
  }
  for (size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_TENSOR_EQ(results[1][i], results[0][i]) << "result " << i;
  }
}

TEST(FusedAttentionTest, ResultsDoNotDependOnTheThreadCount) {
  CheckThreadCountIndependence("float32");
  CheckThreadCountIndependence("bfloat16");
}

// precision bfloat16 rounds each product's operands to bfloat16 (relative error up to 2^-9 each)
// and sums in float32: within bfloat16's tolerance of the plain composition in double, on every
// case (partial blocks, ragged and zero lengths, rows with no key, a single query).
TEST(FusedAttentionTest, BFloat16ProductsMatchThePlainCompositionWithinBFloat16Tolerance) {
  KernelRunner runner(2);
  for (const Case& c : Cases()) {
    for (bool causal : {false, true}) CheckCase<float>(runner, c, causal, 1e-2, 2, "bfloat16");
  }
  for (bool causal : {false, true}) {
    CheckCase<float>(runner, Case{2, 4, 128, 128, 64, 64, {128, 77}}, causal, 1e-2, 1, "bfloat16");
  }
}

// Where the CPU multiplies bfloat16, the results are those of rounded operands: near float32's,
// but not equal to them (elsewhere the kernel multiplies in float32 and says so in the log).
TEST(FusedAttentionTest, BFloat16ProductsRoundTheOperandsWhereTheCpuHasThem) {
  if (!tile_bf16::TileGemmBFloat16IsAvailable()) GTEST_SKIP() << "this CPU lacks AVX512-BF16";
  KernelRunner runner;
  const Inputs in = MakeInputs<float>(Cases()[3], 4, 2);
  std::vector<Tensor> outputs;
  for (const char* precision : {"float32", "bfloat16"}) {
    StatusOr<std::vector<Tensor>> forward = runner.Run(
        "FusedAttention", {in.query, in.key, in.value, in.lengths}, Attrs(true, 0, precision));
    ASSERT_TRUE(forward.ok()) << forward.status();
    outputs.push_back((*forward)[0]);
  }
  double largest_difference = 0;
  for (int64_t i = 0; i < outputs[0].NumElements(); ++i) {
    largest_difference = std::max<double>(
        largest_difference, std::abs(outputs[0].data<float>()[i] - outputs[1].data<float>()[i]));
  }
  EXPECT_GT(largest_difference, 1e-4);
  EXPECT_LT(largest_difference, 2e-2);
}

// [d0, d1, d2, d3] -> [d0, d2, d1, d3]: BHTD <-> BTHD.
template <typename T>
Tensor SwapTimeAndHeads(const Tensor& t) {
  const int64_t d0 = t.dim_size(0), d1 = t.dim_size(1), d2 = t.dim_size(2), d3 = t.dim_size(3);
  Tensor out(t.dtype(), TensorShape({d0, d2, d1, d3}));
  for (int64_t a = 0; a < d0; ++a) {
    for (int64_t b = 0; b < d1; ++b) {
      for (int64_t c = 0; c < d2; ++c) {
        for (int64_t x = 0; x < d3; ++x) {
          out.data<T>()[((a * d2 + c) * d1 + b) * d3 + x] =
              t.data<T>()[((a * d1 + b) * d2 + c) * d3 + x];
        }
      }
    }
  }
  return out;
}

// Layout BTHD reads and writes [batch, time, heads, depth] operands in place (strided GEMMs) and
// must give BHTD's results, transposed, forward and backward: several heads so that rows of
// different heads interleave, and tiles crossing block edges.
template <typename T>
void CheckTimeMajorLayout(double tol, const std::string& precision = "float32") {
  KernelRunner runner(2);
  for (const Case& c :
       {Cases()[0], Cases()[2], Cases()[3], Case{2, 4, 128, 128, 16, 8, {128, 77}}}) {
    for (bool causal : {false, true}) {
      SCOPED_TRACE(Describe(c, causal));
      const Inputs in = MakeInputs<T>(c, 7, 2);
      const AttrMap heads_major = Attrs(causal, c.scale, precision);
      AttrMap time_major = heads_major;
      time_major["layout"] = MakeAttrValue(std::string("BTHD"));
      StatusOr<std::vector<Tensor>> heads_forward =
          runner.Run("FusedAttention", {in.query, in.key, in.value, in.lengths}, heads_major);
      ASSERT_TRUE(heads_forward.ok()) << heads_forward.status();
      const Tensor q = SwapTimeAndHeads<T>(in.query), k = SwapTimeAndHeads<T>(in.key);
      const Tensor v = SwapTimeAndHeads<T>(in.value);
      StatusOr<std::vector<Tensor>> time_forward =
          runner.Run("FusedAttention", {q, k, v, in.lengths}, time_major);
      ASSERT_TRUE(time_forward.ok()) << time_forward.status();
      EXPECT_TENSOR_NEAR((*time_forward)[0], SwapTimeAndHeads<T>((*heads_forward)[0]), tol, tol);
      EXPECT_TENSOR_EQ((*time_forward)[1], (*heads_forward)[1]);
      StatusOr<std::vector<Tensor>> heads_grads =
          runner.Run("FusedAttentionGrad",
                     {in.query, in.key, in.value, in.lengths, (*heads_forward)[0],
                      (*heads_forward)[1], in.output_gradient},
                     heads_major);
      ASSERT_TRUE(heads_grads.ok()) << heads_grads.status();
      StatusOr<std::vector<Tensor>> time_grads =
          runner.Run("FusedAttentionGrad",
                     {q, k, v, in.lengths, (*time_forward)[0], (*time_forward)[1],
                      SwapTimeAndHeads<T>(in.output_gradient)},
                     time_major);
      ASSERT_TRUE(time_grads.ok()) << time_grads.status();
      for (int x = 0; x < 3; ++x) {
        EXPECT_TENSOR_NEAR((*time_grads)[x], SwapTimeAndHeads<T>((*heads_grads)[x]), tol, tol)
            << "gradient " << x;
      }
    }
  }
}

TEST(FusedAttentionTest, TimeMajorLayoutMatchesHeadsMajorFloat) {
  CheckTimeMajorLayout<float>(1e-5);
}

TEST(FusedAttentionTest, TimeMajorLayoutMatchesHeadsMajorDouble) {
  CheckTimeMajorLayout<double>(1e-12);
}

TEST(FusedAttentionTest, BFloat16TimeMajorLayoutMatchesHeadsMajor) {
  CheckTimeMajorLayout<float>(1e-6, "bfloat16");
}

TEST(FusedAttentionTest, EmptyDimensions) {
  KernelRunner runner;
  for (const Case& c :
       {Case{0, 2, 3, 4, 2, 2, {}}, Case{2, 2, 0, 4, 2, 2, {4, 1}}, Case{1, 2, 3, 0, 2, 2, {0}},
        Case{1, 1, 3, 4, 0, 2, {3}}, Case{1, 1, 3, 4, 2, 0, {3}}}) {
    for (bool causal : {false, true}) {
      CheckCase<float>(runner, c, causal, 1e-6);
      CheckCase<double>(runner, c, causal, 1e-12);
    }
  }
}

TEST(FusedAttentionTest, KernelErrorsNameTheInput) {
  const AttrMap attrs = {{"T", MakeAttrValue(DataType::kFloat)}};
  const Tensor q = RandomTensor<float>({2, 1, 3, 4}, 1), k = RandomTensor<float>({2, 1, 5, 4}, 2);
  const Tensor v = RandomTensor<float>({2, 1, 5, 3}, 3);
  const Tensor lengths = Tensor::FromVector<int32_t>({5, 2});
  ExpectKernelError(
      RunKernelOnly("FusedAttention", {q, k, v, Tensor::FromVector<int32_t>({6, 2})}, attrs)
          .status(),
      "FusedAttention", "key_lengths[0] is 6, but must be in [0, 5] (the key_time of key)");
  ExpectKernelError(
      RunKernelOnly("FusedAttention", {q, k, v, Tensor::FromVector<int32_t>({5, -1})}, attrs)
          .status(),
      "FusedAttention", "key_lengths[1] is -1");
  ExpectKernelError(
      RunKernelOnly("FusedAttention", {q, RandomTensor<float>({2, 1, 5, 3}, 2), v, lengths}, attrs)
          .status(),
      "FusedAttention", "key has depth 3 (dimension 3 of [2,1,5,3]), but query has 4");
  ExpectKernelError(
      RunKernelOnly("FusedAttention", {q, k, v, Tensor::FromVector<int32_t>({5})}, attrs).status(),
      "FusedAttention", "key_lengths has batch 1 (dimension 0 of [1]), but query has 2");
  ExpectKernelError(
      RunKernelOnly("FusedAttention", {q, k, RandomTensor<float>({2, 1, 5}, 3), lengths}, attrs)
          .status(),
      "FusedAttention", "value must have rank 4 [batch, heads, key_time, value_depth]");
  AttrMap bad_scale = attrs;
  bad_scale["scale"] = MakeAttrValue(std::numeric_limits<float>::infinity());
  ExpectKernelError(RunKernelOnly("FusedAttention", {q, k, v, lengths}, bad_scale).status(),
                    "FusedAttention", "scale must be finite");
  const Tensor out = RandomTensor<float>({2, 1, 3, 3}, 4), lse = RandomTensor<float>({2, 1, 3}, 5);
  ExpectKernelError(
      RunKernelOnly("FusedAttentionGrad",
                    {q, k, v, lengths, out, lse, RandomTensor<float>({2, 1, 4, 3}, 6)}, attrs)
          .status(),
      "FusedAttentionGrad",
      "output_gradient has query_time 4 (dimension 2 of [2,1,4,3]), but query has 3");
  ExpectKernelError(
      RunKernelOnly("FusedAttentionGrad", {q, k, v, lengths, out, out, out}, attrs).status(),
      "FusedAttentionGrad", "logsumexp must have rank 3 [batch, heads, query_time]");
  // Under BTHD the dimensions are named by that layout.
  AttrMap time_major = attrs;
  time_major["layout"] = MakeAttrValue(std::string("BTHD"));
  ExpectKernelError(
      RunKernelOnly("FusedAttention",
                    {RandomTensor<float>({2, 3, 2, 4}, 1), RandomTensor<float>({2, 5, 2, 4}, 2),
                     RandomTensor<float>({2, 5, 1, 4}, 3), lengths},
                    time_major)
          .status(),
      "FusedAttention", "value has heads 1 (dimension 2 of [2,5,1,4]), but query has 2");
  // bfloat16 products round float32 operands only.
  ExpectKernelError(
      RunKernelOnly("FusedAttention",
                    {RandomTensor<double>({2, 1, 3, 4}, 1), RandomTensor<double>({2, 1, 5, 4}, 2),
                     RandomTensor<double>({2, 1, 5, 3}, 3), lengths},
                    {{"T", MakeAttrValue(DataType::kDouble)},
                     {"precision", MakeAttrValue(std::string("bfloat16"))}})
          .status(),
      "FusedAttention", "precision bfloat16 rounds float32 operands, but T is float64");
  // No integer kernels: the op's type list rejects int32.
  const Tensor ints = Tensor::FromVector<int32_t>({1});
  EXPECT_FALSE(KernelRunner().Run("FusedAttention", {ints, ints, ints, ints}).ok());
}

}  // namespace
}  // namespace weft::kernels
