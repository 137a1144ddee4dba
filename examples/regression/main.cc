// regression: your own model in a few lines. Fits y = 2 x0 - 3 x1 + 0.5 from noisy points with a
// functional model (a layer called on an Output), then predicts a new point.
#include <cstdio>
#include <random>

#include "weft/data/dataset.h"
#include "weft/train/layers/core.h"
#include "weft/train/model.h"

using namespace weft;         // NOLINT: an example, kept short
using namespace weft::train;  // NOLINT

int main() {
  // 1000 points with a little noise.
  Tensor x(DataType::kFloat, TensorShape({1000, 2})), y(DataType::kFloat, TensorShape({1000, 1}));
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (int i = 0; i < 1000; ++i) {
    float a = uniform(random), b = uniform(random);
    x.data<float>()[2 * i] = a;
    x.data<float>()[2 * i + 1] = b;
    y.data<float>()[i] = 2 * a - 3 * b + 0.5f + 0.01f * uniform(random);
  }

  Dense linear(1);
  Model model([&](const Scope& scope, const Output& input) { return linear(scope, input); });
  Status status = model.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError());
  StatusOr<History> history =
      status.ok()
          ? model.Fit(data::Dataset::FromTensors({x, y}).Shuffle(1000, 1).Batch(50), {.epochs = 20})
          : StatusOr<History>(status);
  if (!history.ok()) {
    std::fprintf(stderr, "regression: %s\n", history.status().ToString().c_str());
    return 1;
  }
  std::printf("loss after %zu epochs: %.5f\n", history->epochs.size(),
              history->epochs.back().at("loss"));

  Tensor point = Tensor::FromVector<float>({1, 1}, TensorShape({1, 2}));
  StatusOr<Tensor> predicted = model.Predict(data::Dataset::FromTensors({point}).Batch(1));
  if (!predicted.ok()) return 1;
  std::printf("prediction at (1, 1): %.3f (expected -0.5)\n", predicted->data<float>()[0]);
  return history->epochs.back().at("loss") < 1e-3 ? 0 : 1;
}
