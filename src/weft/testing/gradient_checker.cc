// Numeric gradient checks: symbolic gradients against central differences (gradient_checker.h).
#include "weft/testing/gradient_checker.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "weft/graph/gradients/gradients.h"

namespace weft::testing {
namespace {

// sum(y * w) over every element.
double WeightedSum(const Tensor& y, const Tensor& w) {
  double sum = 0;
  std::span<const double> ys = y.flat<double>(), ws = w.flat<double>();
  for (size_t i = 0; i < ys.size(); ++i) sum += ys[i] * ws[i];
  return sum;
}

// Runs the graph once and returns the fetched tensors.
StatusOr<std::vector<Tensor>> RunOnce(Session& session, const NamedTensorList& feeds,
                                      const std::vector<std::string>& fetches) {
  std::vector<Tensor> outputs;
  WEFT_RETURN_IF_ERROR(session.Run(feeds, fetches, {}, &outputs));
  return outputs;
}

Status CheckArguments(const std::vector<Output>& xs, const std::vector<Tensor>& x_values,
                      const Output& y) {
  if (xs.size() != x_values.size()) {
    return InvalidArgument("gradient check got ", xs.size(), " xs and ", x_values.size(),
                           " values");
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i] || xs[i].dtype() != DataType::kDouble || x_values[i].dtype() != DataType::kDouble) {
      return InvalidArgument("gradient check: x ", i, " and its value must be float64");
    }
  }
  if (!y || y.dtype() != DataType::kDouble) {
    return InvalidArgument("gradient check: y must be a float64 tensor");
  }
  return Status::OK();
}

}  // namespace

StatusOr<double> ComputeGradientError(const Scope& scope, const std::vector<Output>& xs,
                                      const std::vector<Tensor>& x_values, const Output& y,
                                      const GradientCheckOptions& options) {
  WEFT_RETURN_IF_ERROR(scope.status());
  WEFT_RETURN_IF_ERROR(CheckArguments(xs, x_values, y));
  Scope check = scope.NewSubScope("gradient_check");
  Output w = ops::Placeholder(check.WithOpName("w"), DataType::kDouble);
  std::vector<Output> grads;
  WEFT_RETURN_IF_ERROR(AddSymbolicGradients(
      scope, options.registry ? *options.registry : AllGradients(), {y}, xs, {w}, &grads));
  WEFT_ASSIGN_OR_RETURN(proto::GraphDef graph, scope.ToGraphDef());
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(SessionOptions()));
  WEFT_RETURN_IF_ERROR(session->Create(graph));

  NamedTensorList feeds = options.extra_feeds;
  for (size_t i = 0; i < xs.size(); ++i) feeds.emplace_back(xs[i].name(), x_values[i]);
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> y0, RunOnce(*session, feeds, {y.name()}));
  const Tensor weights = RandomTensor(y0[0].shape(), -1, 1, options.seed);

  NamedTensorList grad_feeds = feeds;
  grad_feeds.emplace_back(w.name(), weights);
  std::vector<std::string> grad_names;
  for (const Output& grad : grads) grad_names.push_back(grad.name());
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> symbolic, RunOnce(*session, grad_feeds, grad_names));

  double max_error = 0;
  const size_t first_x = options.extra_feeds.size();
  for (size_t i = 0; i < xs.size(); ++i) {
    if (symbolic[i].dtype() != DataType::kDouble || symbolic[i].shape() != x_values[i].shape()) {
      return InvalidArgument("gradient check: the gradient of x ", i, " ('", xs[i].name(), "') is ",
                             DataTypeName(symbolic[i].dtype()), " ", symbolic[i].shape(),
                             ", but x is float64 ", x_values[i].shape());
    }
    Tensor probe = x_values[i].DeepCopy();
    feeds[first_x + i].second = probe;
    std::span<double> values = probe.flat<double>();
    std::span<const double> analytic = symbolic[i].flat<double>();
    for (size_t k = 0; k < values.size(); ++k) {
      // Each result is reduced at once: y may share the fed buffer (Identity), which changes next.
      const double saved = values[k];
      values[k] = saved + options.delta;
      WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> plus, RunOnce(*session, feeds, {y.name()}));
      const double f_plus = WeightedSum(plus[0], weights);
      values[k] = saved - options.delta;
      WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> minus, RunOnce(*session, feeds, {y.name()}));
      const double f_minus = WeightedSum(minus[0], weights);
      values[k] = saved;
      const double numeric = (f_plus - f_minus) / (2 * options.delta);
      max_error = std::max(max_error, std::abs(numeric - analytic[k]));
      if (std::isnan(numeric) || std::isnan(analytic[k])) max_error = NAN;
    }
    feeds[first_x + i].second = x_values[i];
  }
  return max_error;
}

::testing::AssertionResult GradientNear(const Scope& scope, const std::vector<Output>& xs,
                                        const std::vector<Tensor>& x_values, const Output& y,
                                        double tolerance, const GradientCheckOptions& options) {
  StatusOr<double> error = ComputeGradientError(scope, xs, x_values, y, options);
  if (!error.ok()) return ::testing::AssertionFailure() << error.status();
  if (!(*error < tolerance)) {
    return ::testing::AssertionFailure()
           << "gradient error " << *error << " is not below " << tolerance;
  }
  return ::testing::AssertionSuccess() << "gradient error " << *error;
}

Tensor RandomTensor(const TensorShape& shape, double lo, double hi, uint64_t seed) {
  Tensor t(DataType::kDouble, shape);
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> uniform(lo, hi);
  for (double& v : t.flat<double>()) v = uniform(engine);
  return t;
}

Output Float64Placeholder(const Scope& scope, const TensorShape& shape, ShapeKnowledge knowledge) {
  PartialShape declared;
  if (knowledge == ShapeKnowledge::kFull) declared = PartialShape(shape);
  if (knowledge == ShapeKnowledge::kRankOnly) declared = PartialShape::UnknownOfRank(shape.dims());
  return ops::Placeholder(scope, DataType::kDouble, declared);
}

StatusOr<std::vector<Tensor>> RunGraph(const Scope& scope, const NamedTensorList& feeds,
                                       const std::vector<Output>& fetches) {
  WEFT_ASSIGN_OR_RETURN(proto::GraphDef graph, scope.ToGraphDef());
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(SessionOptions()));
  WEFT_RETURN_IF_ERROR(session->Create(graph));
  std::vector<std::string> names;
  for (const Output& fetch : fetches) names.push_back(fetch.name());
  return RunOnce(*session, feeds, names);
}

}  // namespace weft::testing
