// Tests for Relu, ReluGrad, Sigmoid, SigmoidGrad, Tanh, TanhGrad and Softplus: hand-computed
// values, reference loops over random tensors of several sizes (scalar, empty, small, and large
// enough to run on the intra-op threads), gradients against central differences, and error paths.
#include <cmath>

#include "weft/kernels/testing/nn_test_util.h"

namespace weft::kernels {
namespace {

using testing::AttrMap;
using testing::ExpectKernelError;
using testing::NumericGradient;
using testing::RandomIntegers;
using testing::RandomTensor;
using testing::RunKernelOnly;
using testing::WeightedSum;
using weft::testing::KernelRunner;

const std::vector<TensorShape>& Shapes() {
  static const std::vector<TensorShape> shapes = {TensorShape({}),        TensorShape({0}),
                                                  TensorShape({7}),       TensorShape({3, 0, 2}),
                                                  TensorShape({4, 5, 3}), TensorShape({300, 170})};
  return shapes;
}

// Applies `fn` to each element of `x`, or to each pair of elements of `a` and `b`.
template <typename T, typename Fn>
Tensor Map(const Tensor& x, Fn fn) {
  Tensor out(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) out.data<T>()[i] = fn(x.data<T>()[i]);
  return out;
}
template <typename T, typename Fn>
Tensor Map2(const Tensor& a, const Tensor& b, Fn fn) {
  Tensor out(a.dtype(), a.shape());
  for (int64_t i = 0; i < a.NumElements(); ++i) {
    out.data<T>()[i] = fn(a.data<T>()[i], b.data<T>()[i]);
  }
  return out;
}

TEST(ActivationTest, HandComputed) {
  KernelRunner runner;
  StatusOr<Tensor> relu = runner.RunOne("Relu", {Tensor::FromVector<float>({-1.5f, 0, 2.5f})});
  ASSERT_TRUE(relu.ok()) << relu.status();
  EXPECT_TENSOR_EQ(*relu, Tensor::FromVector<float>({0, 0, 2.5f}));
  StatusOr<Tensor> relu_int = runner.RunOne("Relu", {Tensor::FromVector<int32_t>({-3, 0, 4})});
  ASSERT_TRUE(relu_int.ok()) << relu_int.status();
  EXPECT_TENSOR_EQ(*relu_int, Tensor::FromVector<int32_t>({0, 0, 4}));
  StatusOr<Tensor> relu_grad = runner.RunOne(
      "ReluGrad",
      {Tensor::FromVector<double>({1, 2, 3}), Tensor::FromVector<double>({-1, 0, 0.5})});
  ASSERT_TRUE(relu_grad.ok()) << relu_grad.status();
  EXPECT_TENSOR_EQ(*relu_grad, Tensor::FromVector<double>({0, 0, 3}));
  StatusOr<Tensor> sigmoid = runner.RunOne("Sigmoid", {Tensor::FromVector<double>({0, 100, -100})});
  ASSERT_TRUE(sigmoid.ok()) << sigmoid.status();
  EXPECT_TENSOR_NEAR(*sigmoid, Tensor::FromVector<double>({0.5, 1, 0}), 1e-12, 0);
  StatusOr<Tensor> sigmoid_grad = runner.RunOne(
      "SigmoidGrad", {Tensor::FromVector<float>({0.5f, 0.25f}), Tensor::FromVector<float>({2, 4})});
  ASSERT_TRUE(sigmoid_grad.ok()) << sigmoid_grad.status();
  EXPECT_TENSOR_NEAR(*sigmoid_grad, Tensor::FromVector<float>({0.5f, 0.75f}));
  StatusOr<Tensor> tanh = runner.RunOne("Tanh", {Tensor::FromVector<float>({0, 1})});
  ASSERT_TRUE(tanh.ok()) << tanh.status();
  EXPECT_TENSOR_NEAR(*tanh, Tensor::FromVector<float>({0, 0.7615941559557649f}));
  StatusOr<Tensor> tanh_grad = runner.RunOne(
      "TanhGrad", {Tensor::FromVector<double>({0.5, -1}), Tensor::FromVector<double>({2, 3})});
  ASSERT_TRUE(tanh_grad.ok()) << tanh_grad.status();
  EXPECT_TENSOR_NEAR(*tanh_grad, Tensor::FromVector<double>({1.5, 0}), 1e-15, 0);
}

template <typename T>
void CheckAgainstReference(double tolerance) {
  KernelRunner runner;
  uint32_t seed = 10;
  for (const TensorShape& shape : Shapes()) {
    SCOPED_TRACE(StrCat("shape ", shape, " ", DataTypeName(DataTypeToEnum<T>::value)));
    Tensor x = RandomTensor<T>(shape, ++seed, -4, 4);
    Tensor y = RandomTensor<T>(shape, ++seed, -1, 1);
    Tensor dy = RandomTensor<T>(shape, ++seed, -2, 2);
    struct Case {
      const char* op;
      std::vector<Tensor> inputs;
      Tensor expected;
    };
    const Case cases[] = {
        {"Relu", {x}, Map<T>(x, [](T v) { return v > 0 ? v : T(0); })},
        {"ReluGrad", {dy, x}, Map2<T>(dy, x, [](T g, T f) { return f > 0 ? g : T(0); })},
        {"Sigmoid", {x}, Map<T>(x, [](T v) { return T(1) / (T(1) + std::exp(-v)); })},
        {"SigmoidGrad", {y, dy}, Map2<T>(y, dy, [](T a, T d) { return d * a * (T(1) - a); })},
        {"Tanh", {x}, Map<T>(x, [](T v) { return std::tanh(v); })},
        {"TanhGrad", {y, dy}, Map2<T>(y, dy, [](T a, T d) { return d * (T(1) - a * a); })},
        {"Softplus", {x}, Map<T>(x, [](T v) { return std::log1p(std::exp(v)); })},
    };
    for (const Case& c : cases) {
      StatusOr<Tensor> out = runner.RunOne(c.op, c.inputs);
      ASSERT_TRUE(out.ok()) << c.op << ": " << out.status();
      EXPECT_TENSOR_NEAR(*out, c.expected, tolerance, tolerance) << c.op;
      // Inputs that nothing else holds: the output takes over the first input's buffer.
      std::vector<Tensor> own_inputs;
      for (const Tensor& t : c.inputs) own_inputs.push_back(t.DeepCopy());
      const void* first_buffer = own_inputs[0].raw_data();
      StatusOr<Tensor> in_place = runner.RunOne(c.op, std::move(own_inputs));
      ASSERT_TRUE(in_place.ok()) << c.op << ": " << in_place.status();
      EXPECT_TENSOR_NEAR(*in_place, c.expected, tolerance, tolerance) << c.op << " in place";
      if (shape.num_elements() > 0) {
        EXPECT_EQ(in_place->raw_data(), first_buffer) << c.op;
      }
    }
  }
}

TEST(ActivationTest, MatchesReferenceFloat) { CheckAgainstReference<float>(1e-6); }
TEST(ActivationTest, MatchesReferenceDouble) { CheckAgainstReference<double>(1e-14); }

// log(1 + e^x) computed naively overflows to inf for large x and loses everything below 1e-16
// next to 1 for very negative x; Softplus must not.
TEST(ActivationTest, SoftplusHasNoOverflowOrUnderflow) {
  KernelRunner runner;
  StatusOr<Tensor> f = runner.RunOne("Softplus", {Tensor::FromVector<float>({0, 100, -100, 200})});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TENSOR_NEAR(*f, Tensor::FromVector<float>({0.6931472f, 100, 3.720076e-44f, 200}), 1e-6,
                     1e-6);
  StatusOr<Tensor> d = runner.RunOne("Softplus", {Tensor::FromVector<double>({1000, -50, 1e-3})});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TENSOR_NEAR(*d,
                     Tensor::FromVector<double>({1000, 1.928749847963918e-22, 0.6936473055599401}),
                     1e-9, 1e-12);
  EXPECT_FALSE(runner.RunOne("Softplus", {Tensor::FromVector<int32_t>({1})}).ok());
}

TEST(ActivationTest, ReluOnIntegersMatchesReference) {
  KernelRunner runner;
  Tensor x = RandomIntegers<int64_t>({50, 30}, 3, -100, 100);
  Tensor g = RandomIntegers<int64_t>({50, 30}, 4, -100, 100);
  StatusOr<Tensor> relu = runner.RunOne("Relu", {x});
  ASSERT_TRUE(relu.ok()) << relu.status();
  EXPECT_TENSOR_EQ(*relu, Map<int64_t>(x, [](int64_t v) { return v > 0 ? v : int64_t{0}; }));
  StatusOr<Tensor> grad = runner.RunOne("ReluGrad", {g, x});
  ASSERT_TRUE(grad.ok()) << grad.status();
  EXPECT_TENSOR_EQ(
      *grad, Map2<int64_t>(g, x, [](int64_t a, int64_t f) { return f > 0 ? a : int64_t{0}; }));
}

TEST(ActivationTest, GradientsMatchNumericDerivatives) {
  KernelRunner runner;
  Tensor x = RandomTensor<double>({3, 4}, 7, -3, 3);
  Tensor weights = RandomTensor<double>({3, 4}, 8);
  for (const char* op : {"Sigmoid", "Tanh", "Relu"}) {
    SCOPED_TRACE(op);
    Tensor numeric = NumericGradient(
        [&](const Tensor& in) {
          StatusOr<Tensor> y = runner.RunOne(op, {in});
          return y.ok() ? WeightedSum(*y, weights) : 0.0;
        },
        x);
    StatusOr<Tensor> y = runner.RunOne(op, {x});
    ASSERT_TRUE(y.ok()) << y.status();
    StatusOr<Tensor> analytic = std::string(op) == "Relu"
                                    ? runner.RunOne("ReluGrad", {weights, x})
                                    : runner.RunOne(std::string(op) + "Grad", {*y, weights});
    ASSERT_TRUE(analytic.ok()) << analytic.status();
    EXPECT_TENSOR_NEAR(*analytic, numeric, 1e-8, 1e-8);
  }
}

TEST(ActivationTest, ErrorsNameTheNode) {
  KernelRunner runner;
  for (const char* op : {"ReluGrad", "SigmoidGrad", "TanhGrad"}) {
    ExpectKernelError(
        runner.RunOne(op, {RandomTensor<float>({2, 3}, 1), RandomTensor<float>({3, 2}, 2)})
            .status(),
        op, "inputs must have the same shape");
    AttrMap attrs = {{"T", MakeAttrValue(DataType::kFloat)}};
    ExpectKernelError(
        RunKernelOnly(op, {RandomTensor<float>({2, 3}, 1), RandomTensor<float>({6}, 2)}, attrs)
            .status(),
        op, "inputs must have the same shape, but are [2,3] and [6]");
  }
  // Sigmoid has no integer kernel: the op's type list rejects int32.
  EXPECT_FALSE(runner.RunOne("Sigmoid", {Tensor::FromVector<int32_t>({1})}).ok());
}

}  // namespace
}  // namespace weft::kernels
