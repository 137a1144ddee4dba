// W7 in one process: DLRM on the synthetic Criteo-shaped data (data/synthetic_criteo.h) — 26
// embedding tables of dimension 16 (4 x 2,000,000, 8 x 100,000 and 14 x 10,000 rows), a bottom
// MLP 13-64-16, dot-product interactions of the 27 vectors, a top MLP 256-128-1, binary
// cross-entropy on the logit, Adagrad lr 0.05 (sparse for the tables: only looked-up rows move).
// Trains `--steps` batches, then evaluates the held-out examples and prints
//   METRIC w7_heldout_logloss <x>, METRIC w7_baserate_logloss <y> (always predicting the held-out
//   positive rate), RATIO w7_logloss_vs_baserate <x / y> (smaller is better; W7 asks <= 0.9),
//   METRIC w7_examples_per_sec <n>.
// The parameter-server runs of W7 build on this model (issue 24).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "weft/data/synthetic_criteo.h"
#include "weft/runtime/session.h"
#include "weft/train/layers/core.h"
#include "weft/train/losses.h"
#include "weft/train/optimizer.h"

using namespace weft;         // NOLINT: a benchmark program, kept short
using namespace weft::train;  // NOLINT

namespace {

struct Flags {
  int64_t steps = 2000;
  int64_t batch = 512;
  int64_t held_out = 100'000;
  int64_t threads = 0;
  uint64_t seed = 1;
  double learning_rate = 0.05;
};

// The DLRM graph: placeholders, the mean loss, the train op, and every initializer.
struct Dlrm {
  Scope root = Scope::NewRootScope();
  Output dense, ids, labels, loss, train_op;
  std::vector<std::string> initializers;
  // Owned here so that the variables they made outlive graph building.
  std::vector<std::unique_ptr<Layer>> layers;

  template <typename L, typename... Args>
  L& Add(Args&&... args) {
    layers.push_back(std::make_unique<L>(std::forward<Args>(args)...));
    return static_cast<L&>(*layers.back());
  }
};

// The 351 pairs (i < j) of 27 vectors, as positions in the flattened [27, 27] matrix.
Tensor UpperTrianglePositions(int64_t n) {
  std::vector<int32_t> positions;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i + 1; j < n; ++j) positions.push_back(static_cast<int32_t>(i * n + j));
  }
  return Tensor::FromVector(positions);
}

StatusOr<std::unique_ptr<Dlrm>> BuildDlrm(const data::SyntheticCriteoOptions& data,
                                          const Flags& flags) {
  auto model = std::make_unique<Dlrm>();
  const Scope& root = model->root;
  const int64_t tables = static_cast<int64_t>(data.table_rows.size());
  model->dense = ops::Placeholder(root.WithOpName("dense"), DataType::kFloat,
                                  PartialShape({-1, data.num_dense}));
  model->ids =
      ops::Placeholder(root.WithOpName("ids"), DataType::kInt64, PartialShape({-1, tables}));
  model->labels =
      ops::Placeholder(root.WithOpName("labels"), DataType::kFloat, PartialShape({-1, 1}));
  Output bottom = model->Add<Dense>(64, "relu")(root, model->dense);
  bottom = model->Add<Dense>(16, "relu")(root, bottom);
  std::vector<Output> vectors = {ops::ExpandDims(root, bottom, 1)};  // [B, 1, 16]
  for (int64_t t = 0; t < tables; ++t) {
    Output column = ops::Slice(root, model->ids, {int64_t{0}, t}, {int64_t{-1}, int64_t{1}});
    vectors.push_back(model->Add<Embedding>(data.table_rows[t], 16)(root, column));  // [B, 1, 16]
  }
  const int64_t n = static_cast<int64_t>(vectors.size());
  Output stacked = ops::Concat(root, vectors, 1);  // [B, 27, 16]
  Output products = ops::Sum(
      root, ops::Mul(root, ops::ExpandDims(root, stacked, 2), ops::ExpandDims(root, stacked, 1)),
      3);  // [B, 27, 27]
  Output pairs = ops::GatherV2(root, ops::Reshape(root, products, {int64_t{-1}, n * n}),
                               ops::Const(root, UpperTrianglePositions(n)), 1);  // [B, 351]
  Output top = ops::Concat(root, {bottom, pairs}, 1);
  top = model->Add<Dense>(256, "relu")(root, top);
  top = model->Add<Dense>(128, "relu")(root, top);
  Output logit = model->Add<Dense>(1)(root, top);
  model->loss = BinaryCrossentropy(/*from_logits=*/true)(root, model->labels, logit);
  std::vector<Variable> variables;
  for (const auto& layer : model->layers) {
    for (const Variable& variable : layer->trainable_variables()) {
      variables.push_back(variable);
      model->initializers.push_back(variable.initializer().name());
    }
  }
  std::unique_ptr<Optimizer> optimizer = NewAdagradOptimizer(flags.learning_rate);
  WEFT_ASSIGN_OR_RETURN(model->train_op, optimizer->Minimize(root, model->loss, variables));
  for (const Output& init : optimizer->initializers()) model->initializers.push_back(init.name());
  WEFT_RETURN_IF_ERROR(root.status());
  return model;
}

// The mean held-out log loss and the held-out positive rate, in batches.
StatusOr<std::pair<double, double>> Evaluate(Session& session, const Dlrm& model,
                                             const data::SyntheticCriteoOptions& data,
                                             const Flags& flags) {
  // Far from the training examples' indices, so the two never overlap.
  const int64_t first = int64_t{1} << 40;
  double loss_sum = 0, positives = 0;
  for (int64_t done = 0; done < flags.held_out; done += flags.batch) {
    const int64_t count = std::min(flags.batch, flags.held_out - done);
    WEFT_ASSIGN_OR_RETURN(data::Element batch,
                          data::GenerateSyntheticCriteo(data, first + done, count));
    std::vector<Tensor> outputs;
    WEFT_RETURN_IF_ERROR(session.Run({{model.dense.name(), batch[0]},
                                      {model.ids.name(), batch[1]},
                                      {model.labels.name(), batch[2]}},
                                     {model.loss.name()}, {}, &outputs));
    loss_sum += outputs[0].data<float>()[0] * count;
    for (int64_t i = 0; i < count; ++i) positives += batch[2].data<float>()[i];
  }
  return std::make_pair(loss_sum / flags.held_out, positives / flags.held_out);
}

Status Run(const Flags& flags) {
  data::SyntheticCriteoOptions data;
  data.seed = flags.seed;
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Dlrm> model, BuildDlrm(data, flags));
  SessionOptions options;
  if (flags.threads > 0) {
    options.config.set_intra_op_parallelism_threads(static_cast<int32_t>(flags.threads));
    options.config.set_inter_op_parallelism_threads(static_cast<int32_t>(flags.threads));
  }
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(options));
  WEFT_ASSIGN_OR_RETURN(proto::GraphDef graph, model->root.ToGraphDef());
  WEFT_RETURN_IF_ERROR(session->Create(graph));
  std::vector<Tensor> outputs;
  WEFT_RETURN_IF_ERROR(session->Run({}, {}, model->initializers, &outputs));
  const auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < flags.steps; ++step) {
    WEFT_ASSIGN_OR_RETURN(data::Element batch,
                          data::GenerateSyntheticCriteo(data, step * flags.batch, flags.batch));
    WEFT_RETURN_IF_ERROR(session->Run({{model->dense.name(), batch[0]},
                                       {model->ids.name(), batch[1]},
                                       {model->labels.name(), batch[2]}},
                                      {}, {model->train_op.node()->name()}, &outputs));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WEFT_ASSIGN_OR_RETURN(auto evaluated, Evaluate(*session, *model, data, flags));
  const double p = evaluated.second;
  const double base = -(p * std::log(p) + (1 - p) * std::log(1 - p));
  std::printf("METRIC w7_heldout_logloss %.5f nats\n", evaluated.first);
  std::printf("METRIC w7_baserate_logloss %.5f nats (held-out positive rate %.4f)\n", base, p);
  std::printf("RATIO w7_logloss_vs_baserate %.4f (smaller is better; W7 asks <= 0.9)\n",
              evaluated.first / base);
  std::printf("METRIC w7_examples_per_sec %.0f examples/s (1 process, %lld steps of %lld)\n",
              flags.steps * flags.batch / seconds, static_cast<long long>(flags.steps),
              static_cast<long long>(flags.batch));
  return Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"W7: DLRM on synthetic Criteo-shaped data, one process"};
  app.add_option("--steps", flags.steps, "training steps")->check(CLI::PositiveNumber);
  app.add_option("--batch", flags.batch, "examples per step")->check(CLI::PositiveNumber);
  app.add_option("--held-out", flags.held_out, "held-out examples")->check(CLI::PositiveNumber);
  app.add_option("--threads", flags.threads, "intra/inter-op threads (0: the default)");
  app.add_option("--seed", flags.seed, "the data's seed");
  app.add_option("--learning-rate", flags.learning_rate, "Adagrad's learning rate");
  CLI11_PARSE(app, argc, argv);
  Status status = Run(flags);
  if (!status.ok()) {
    std::fprintf(stderr, "w7_dlrm: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
