#include "weft/train/train_loop.h"

#include <chrono>

#include "weft/runtime/session.h"
#include "weft/train/data/batch_iterator.h"
#include "weft/train/data/fashion_mnist.h"
#include "weft/train/optimizer.h"

namespace weft::train {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

StatusOr<std::unique_ptr<Optimizer>> MakeOptimizer(const TrainOptions& options) {
  if (options.optimizer == "sgd") return NewGradientDescentOptimizer(options.learning_rate);
  if (options.optimizer == "momentum") return NewMomentumOptimizer(options.learning_rate, 0.9);
  if (options.optimizer == "adam") return NewAdamOptimizer(options.learning_rate);
  return InvalidArgument("unknown optimizer '", options.optimizer,
                         "' (expected sgd, momentum or adam)");
}

// Counts the test examples the model classifies correctly, in large batches.
StatusOr<double> Evaluate(Session& session, const Model& model, const Dataset& test) {
  BatchOptions batches;
  batches.batch_size = 1000;
  batches.shuffle = false;
  batches.drop_remainder = false;
  WEFT_ASSIGN_OR_RETURN(BatchIterator iterator, BatchIterator::Create(test, batches));
  iterator.StartEpoch(0);
  Tensor images, labels;
  int64_t correct = 0;
  std::vector<Tensor> outputs;
  while (iterator.Next(&images, &labels)) {
    WEFT_RETURN_IF_ERROR(session.Run({{model.images.name(), images}, {model.labels.name(), labels}},
                                     {model.correct.name()}, {}, &outputs));
    correct += *outputs[0].data<int64_t>();
  }
  return static_cast<double>(correct) / static_cast<double>(test.NumExamples());
}

}  // namespace

StatusOr<TrainSummary> Train(const TrainOptions& options, const TrainCallbacks& callbacks) {
  auto wall_start = Clock::now();
  if (options.batch_size <= 0) {
    return InvalidArgument("batch size must be positive, got ", options.batch_size);
  }
  if (options.epochs <= 0) return InvalidArgument("epochs must be positive, got ", options.epochs);
  WEFT_ASSIGN_OR_RETURN(
      FashionMnist data,
      LoadFashionMnist(options.data_dir.empty() ? kDefaultFashionMnistDir : options.data_dir));

  Scope root = Scope::NewRootScope();
  WEFT_ASSIGN_OR_RETURN(Model model, BuildModel(root, options.model, options.seed));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> optimizer, MakeOptimizer(options));
  WEFT_ASSIGN_OR_RETURN(Output train_op, optimizer->Minimize(root, model.loss, model.variables));
  std::vector<Output> initializers = model.initializers;
  initializers.insert(initializers.end(), optimizer->initializers().begin(),
                      optimizer->initializers().end());
  Output init = ops::NoOp(root.WithOpName("init").WithControlDependencies(initializers));
  WEFT_ASSIGN_OR_RETURN(proto::GraphDef graph, root.ToGraphDef());

  SessionOptions session_options;
  session_options.config.set_inter_op_parallelism_threads(options.inter_op_threads);
  session_options.config.set_intra_op_parallelism_threads(options.intra_op_threads);
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(session_options));
  WEFT_RETURN_IF_ERROR(session->Create(graph));
  std::vector<Tensor> outputs;
  WEFT_RETURN_IF_ERROR(session->Run({}, {}, {init.name()}, &outputs));

  BatchOptions batches;
  batches.batch_size = options.batch_size;
  batches.seed = static_cast<uint64_t>(options.seed);
  WEFT_ASSIGN_OR_RETURN(BatchIterator iterator, BatchIterator::Create(data.train, batches));

  TrainSummary summary;
  double training_seconds = 0;
  int64_t trained_images = 0;
  const std::vector<std::string> fetches = {model.loss.name()};
  const std::vector<std::string> targets = {train_op.name()};
  bool stop = false;
  for (int epoch = 0; epoch < options.epochs && !stop; ++epoch) {
    iterator.StartEpoch(epoch);
    TrainProgress progress;
    progress.epoch = epoch + 1;
    progress.epochs = options.epochs;
    progress.steps_in_epoch = iterator.NumBatches();
    double epoch_seconds = 0;
    int64_t epoch_images = 0;
    Tensor images, labels;
    while (!stop) {
      auto step_start = Clock::now();
      if (!iterator.Next(&images, &labels)) break;
      int64_t batch = images.dim_size(0);
      WEFT_RETURN_IF_ERROR(
          session->Run({{model.images.name(), images}, {model.labels.name(), labels}}, fetches,
                       targets, &outputs));
      double seconds = SecondsSince(step_start);
      epoch_seconds += seconds;
      epoch_images += batch;
      summary.final_loss = *outputs[0].data<float>();
      ++summary.steps;
      ++progress.step_in_epoch;
      progress.total_steps = summary.steps;
      progress.loss = summary.final_loss;
      progress.images_per_sec = epoch_images / std::max(epoch_seconds, 1e-9);
      progress.eta_seconds = (progress.steps_in_epoch - progress.step_in_epoch) *
                             (epoch_seconds / static_cast<double>(progress.step_in_epoch));
      if (callbacks.on_step) callbacks.on_step(progress);
      stop = options.max_steps >= 0 && summary.steps >= options.max_steps;
    }
    training_seconds += epoch_seconds;
    trained_images += epoch_images;
    if (callbacks.on_epoch_end) callbacks.on_epoch_end(progress);
  }
  summary.train_images_per_sec = trained_images / std::max(training_seconds, 1e-9);
  WEFT_ASSIGN_OR_RETURN(summary.test_accuracy, Evaluate(*session, model, data.test));
  summary.wall_seconds = SecondsSince(wall_start);
  return summary;
}

}  // namespace weft::train
