#include "weft/train/optimizer.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "weft/distribute/central_storage_strategy.h"
#include "weft/distribute/strategy.h"
#include "weft/distribute/testing/session_test_util.h"
#include "weft/runtime/session.h"
#include "weft/testing/tensor_matchers.h"
#include "weft/train/models.h"

namespace weft::train {
namespace {

// Minimizes loss = sum((w - target)^2) for a 3-element float64 w starting at zero, running
// `steps` steps; returns w after each step.
std::vector<std::vector<double>> RunSteps(Optimizer& optimizer, int steps) {
  Scope root = Scope::NewRootScope();
  Variable w =
      Variable::Create(root, "w", TensorShape({3}), DataType::kDouble, Initializer::Zeros());
  Output target = ops::Const(root, Tensor::FromVector<double>({1.0, -2.0, 0.5}));
  Output loss = ops::Sum(root, ops::Square(root, ops::Sub(root, w.Read(root), target)), 0);
  auto train_op = optimizer.Minimize(root, loss, {w});
  EXPECT_TRUE(train_op.ok()) << train_op.status();
  std::vector<std::string> inits = {w.initializer().name()};
  for (const Output& init : optimizer.initializers()) inits.push_back(init.name());
  Output read = w.Read(root.WithControlDependencies({*train_op}));
  auto session = NewSession(SessionOptions()).value();
  EXPECT_TRUE(session->Create(root.ToGraphDef().value()).ok());
  std::vector<Tensor> outputs;
  EXPECT_TRUE(session->Run({}, {}, inits, &outputs).ok());
  std::vector<std::vector<double>> history;
  for (int i = 0; i < steps; ++i) {
    Status s = session->Run({}, {read.name()}, {}, &outputs);
    EXPECT_TRUE(s.ok()) << s;
    auto values = outputs[0].flat<double>();
    history.emplace_back(values.begin(), values.end());
  }
  return history;
}

const double kTarget[3] = {1.0, -2.0, 0.5};

TEST(OptimizerTest, GradientDescentFollowsTheFormula) {
  auto optimizer = NewGradientDescentOptimizer(0.1);
  auto history = RunSteps(*optimizer, 3);
  double w[3] = {0, 0, 0};
  for (int step = 0; step < 3; ++step) {
    for (int i = 0; i < 3; ++i) {
      w[i] -= 0.1 * 2 * (w[i] - kTarget[i]);
      EXPECT_NEAR(history[step][i], w[i], 1e-12) << "step " << step << " element " << i;
    }
  }
}

TEST(OptimizerTest, MomentumFollowsTheFormula) {
  for (bool nesterov : {false, true}) {
    auto optimizer = NewMomentumOptimizer(0.1, 0.9, nesterov);
    auto history = RunSteps(*optimizer, 3);
    double w[3] = {0, 0, 0}, accum[3] = {0, 0, 0};
    for (int step = 0; step < 3; ++step) {
      for (int i = 0; i < 3; ++i) {
        double grad = 2 * (w[i] - kTarget[i]);
        accum[i] = accum[i] * 0.9 + grad;
        w[i] -= nesterov ? 0.1 * grad + 0.1 * 0.9 * accum[i] : 0.1 * accum[i];
        EXPECT_NEAR(history[step][i], w[i], 1e-12) << "nesterov " << nesterov;
      }
    }
  }
}

TEST(OptimizerTest, AdamFollowsTheFormula) {
  auto optimizer = NewAdamOptimizer(0.1, 0.9, 0.999, 1e-7);
  auto history = RunSteps(*optimizer, 3);
  double w[3] = {0, 0, 0}, m[3] = {0, 0, 0}, v[3] = {0, 0, 0};
  double beta1_power = 0.9, beta2_power = 0.999;
  for (int step = 0; step < 3; ++step) {
    double lr = 0.1 * std::sqrt(1 - beta2_power) / (1 - beta1_power);
    for (int i = 0; i < 3; ++i) {
      double grad = 2 * (w[i] - kTarget[i]);
      m[i] = 0.9 * m[i] + 0.1 * grad;
      v[i] = 0.999 * v[i] + 0.001 * grad * grad;
      w[i] -= lr * m[i] / (std::sqrt(v[i]) + 1e-7);
      EXPECT_NEAR(history[step][i], w[i], 1e-9) << "step " << step;
    }
    beta1_power *= 0.9;
    beta2_power *= 0.999;
  }
}

TEST(OptimizerTest, AVariableReadTwiceGetsTheSumOfBothGradients) {
  Scope root = Scope::NewRootScope();
  Variable w =
      Variable::Create(root, "w", TensorShape({}), DataType::kDouble, Initializer::Constant(3.0));
  // loss = w * w computed from two separate reads: d/dw = 2w = 6.
  Output loss = ops::Mul(root, w.Read(root), w.Read(root));
  auto optimizer = NewGradientDescentOptimizer(1.0);
  auto gradients = optimizer->ComputeGradients(root, loss, {w});
  ASSERT_TRUE(gradients.ok()) << gradients.status();
  auto session = NewSession(SessionOptions()).value();
  ASSERT_TRUE(session->Create(root.ToGraphDef().value()).ok());
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run({}, {}, {w.initializer().name()}, &outputs).ok());
  ASSERT_TRUE(session->Run({}, {(*gradients)[0].gradient.name()}, {}, &outputs).ok());
  EXPECT_EQ(*outputs[0].data<double>(), 6.0);
}

// ---- Inside a MirroredStrategy ----

using distribute::testing::Fetch;
using distribute::testing::MakeSession;
using distribute::testing::RunTargets;

constexpr int kSteps = 3;
constexpr int kGlobalBatch = 16;

// Step `step`'s global batch of random Fashion-MNIST-shaped examples (the same for every run).
std::pair<Tensor, Tensor> GlobalBatch(int step) {
  std::mt19937 random(static_cast<uint32_t>(100 + step));
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<int64_t> label(0, 9);
  Tensor images(DataType::kFloat, TensorShape({kGlobalBatch, 784}));
  Tensor labels(DataType::kInt64, TensorShape({kGlobalBatch}));
  for (float& v : images.flat<float>()) v = pixel(random);
  for (int64_t& v : labels.flat<int64_t>()) v = label(random);
  return {images, labels};
}

std::unique_ptr<Optimizer> MakeOptimizer(const std::string& kind) {
  if (kind == "adam") return NewAdamOptimizer(0.01);
  if (kind == "sgd") return NewGradientDescentOptimizer(0.1);
  return NewMomentumOptimizer(0.05, 0.9);
}

// The MLP and its training step without a strategy; returns every variable after kSteps steps
// of kGlobalBatch examples.
std::vector<Tensor> TrainPlain(const std::string& optimizer_kind) {
  Scope root = Scope::NewRootScope();
  auto model = BuildModel(root, ModelKind::kMlp, 7);
  EXPECT_TRUE(model.ok()) << model.status();
  auto optimizer = MakeOptimizer(optimizer_kind);
  auto train_op = optimizer->Minimize(root, model->loss, model->variables);
  EXPECT_TRUE(train_op.ok()) << train_op.status();
  std::vector<Output> inits = model->initializers;
  inits.insert(inits.end(), optimizer->initializers().begin(), optimizer->initializers().end());
  std::vector<Output> reads;
  for (const Variable& v : model->variables) reads.push_back(v.Read(root));
  auto session = MakeSession(root, 1);
  if (session == nullptr) return {};
  RunTargets(*session, inits);
  std::vector<Tensor> outputs;
  for (int step = 0; step < kSteps; ++step) {
    auto [images, labels] = GlobalBatch(step);
    Status s = session->Run({{model->images.name(), images}, {model->labels.name(), labels}}, {},
                            {train_op->name()}, &outputs);
    EXPECT_TRUE(s.ok()) << s;
  }
  return Fetch(*session, reads);
}

// The same training under `strategy`: the model built once per replica with mirrored variables
// (replica 0 creates them), each global batch split between the replicas. Returns, for each
// variable, the value of each of its components after kSteps steps.
// Initializes, runs kSteps steps feeding replica r its slice of each global batch, and returns
// the values of `reads` (empty when the session could not be made).
std::vector<Tensor> TrainStepsAndRead(const Scope& root, const distribute::Strategy& strategy,
                                      const std::vector<BuiltModel>& models,
                                      const std::vector<Output>& train_ops,
                                      const std::vector<Output>& inits,
                                      const std::vector<Output>& reads, int n) {
  auto session = MakeSession(root, n);
  if (session == nullptr) return {};
  RunTargets(*session, inits);
  std::vector<std::string> targets;
  for (const Output& op : train_ops) targets.push_back(op.name());
  std::vector<Tensor> outputs;
  for (int step = 0; step < kSteps; ++step) {
    auto [images, labels] = GlobalBatch(step);
    auto image_slices = strategy.SplitBatch(images).value();
    auto label_slices = strategy.SplitBatch(labels).value();
    NamedTensorList feeds;
    for (int r = 0; r < n; ++r) {
      feeds.emplace_back(models[r].images.name(), image_slices[r]);
      feeds.emplace_back(models[r].labels.name(), label_slices[r]);
    }
    Status s = session->Run(feeds, {}, targets, &outputs);
    EXPECT_TRUE(s.ok()) << s;
  }
  std::vector<Tensor> values = Fetch(*session, reads);
  return values;
}

std::vector<std::vector<Tensor>> TrainMirrored(const distribute::Strategy& strategy,
                                               const std::string& optimizer_kind) {
  const int n = strategy.num_replicas_in_sync();
  Scope root = Scope::NewRootScope();
  auto optimizer = MakeOptimizer(optimizer_kind);
  std::vector<std::shared_ptr<distribute::DistributedVariable>> variables;
  std::vector<size_t> made(n, 0);
  std::vector<BuiltModel> models(n);
  std::vector<Output> train_ops(n);
  auto run = strategy.Run(
      root,
      [&](distribute::ReplicaContext& context,
          const Scope& scope) -> StatusOr<std::vector<Output>> {
        const int r = context.replica_id();
        VariableFactory factory = [&](const Scope& s, std::string_view name,
                                      const TensorShape& shape,
                                      const Initializer& initializer) -> StatusOr<Variable> {
          if (r == 0) {
            WEFT_ASSIGN_OR_RETURN(auto variable, strategy.CreateVariable(
                                                     s, name, shape, DataType::kFloat, initializer,
                                                     distribute::VariableSynchronization::kAuto,
                                                     distribute::VariableAggregation::kMean));
            variables.push_back(variable);
          }
          return variables.at(made[r]++)->component(r);
        };
        WEFT_ASSIGN_OR_RETURN(models[r], BuildModel(scope, ModelKind::kMlp, 7, factory));
        WEFT_ASSIGN_OR_RETURN(train_ops[r], optimizer->Minimize(scope, models[r].loss,
                                                                models[r].variables, &context));
        return std::vector<Output>{models[r].loss};
      });
  EXPECT_TRUE(run.ok()) << run.status();
  if (!run.ok()) return {};
  std::vector<Output> inits;
  for (const auto& variable : variables) inits.push_back(variable->initializer());
  inits.insert(inits.end(), optimizer->initializers().begin(), optimizer->initializers().end());
  std::vector<Output> reads;
  for (const auto& variable : variables) {
    for (const Variable& component : variable->components()) reads.push_back(component.Read(root));
  }
  std::vector<Tensor> values =
      TrainStepsAndRead(root, strategy, models, train_ops, inits, reads, n);
  if (values.empty()) return {};
  std::vector<std::vector<Tensor>> result(variables.size());
  for (size_t i = 0; i < values.size(); ++i) result[i / n].push_back(values[i]);
  return result;
}

// Two replicas' components of each of the 6 MLP variables are bitwise equal and match a
// 1-replica run of the same global batches within 1e-5 (and training moved the weights).
void ExpectMirroredLikePlain(const std::vector<std::vector<Tensor>>& mirrored,
                             const std::string& optimizer) {
  std::vector<Tensor> plain = TrainPlain(optimizer);
  ASSERT_EQ(mirrored.size(), 6u);
  ASSERT_EQ(plain.size(), 6u);
  for (size_t v = 0; v < mirrored.size(); ++v) {
    ASSERT_EQ(mirrored[v].size(), 2u);
    EXPECT_TENSOR_EQ(mirrored[v][1], mirrored[v][0]) << "variable " << v;
    EXPECT_TENSOR_NEAR(mirrored[v][0], plain[v], 1e-5, 1e-5) << "variable " << v;
  }
  // The weights did move: the test compares trained values, not initial ones.
  EXPECT_FALSE(::weft::testing::TensorEqual(plain[1], Tensor(DataType::kFloat, {256})));
}

TEST(MirroredOptimizerTest, ComponentsStayBitwiseEqualAndMatchOneReplica) {
  for (const char* optimizer : {"momentum", "adam", "sgd"}) {
    for (bool one_device_reduce : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << optimizer << (one_device_reduce ? " reduce-to-one" : ""));
      auto strategy =
          distribute::MirroredStrategy::Create(
              distribute::testing::CpuDevices(2),
              one_device_reduce ? std::make_unique<distribute::ReductionToOneDevice>() : nullptr)
              .value();
      std::vector<std::vector<Tensor>> mirrored = TrainMirrored(*strategy, optimizer);
      ExpectMirroredLikePlain(mirrored, optimizer);
    }
  }
}

// The same training written as for one device: the model built with plain Variable::Create calls
// inside strategy.Scope() and strategy.Run, and Minimize called without a context. Returns, for
// each model variable, the value of each of its components after kSteps steps.
std::vector<std::vector<Tensor>> TrainInScope(const distribute::Strategy& strategy,
                                              const std::string& optimizer_kind) {
  const int n = strategy.num_replicas_in_sync();
  Scope root = Scope::NewRootScope();
  auto optimizer = MakeOptimizer(optimizer_kind);
  std::vector<BuiltModel> models(n);
  std::vector<Output> train_ops(n);
  distribute::StrategyScope in_scope = strategy.Scope();
  auto run = strategy.Run(root,
                          [&](distribute::ReplicaContext& context,
                              const Scope& scope) -> StatusOr<std::vector<Output>> {
                            const int r = context.replica_id();
                            WEFT_ASSIGN_OR_RETURN(models[r], BuildModel(scope, ModelKind::kMlp, 7));
                            WEFT_ASSIGN_OR_RETURN(
                                train_ops[r],
                                optimizer->Minimize(scope, models[r].loss, models[r].variables));
                            return std::vector<Output>{models[r].loss};
                          });
  EXPECT_TRUE(run.ok()) << run.status();
  if (!run.ok()) return {};
  // The model's variables come first (replica 0 creates them before the optimizer's slots).
  std::vector<std::shared_ptr<distribute::DistributedVariable>> all = strategy.variables();
  EXPECT_GE(all.size(), models[0].variables.size());
  if (all.size() < models[0].variables.size()) return {};
  std::vector<Output> inits;
  for (const auto& variable : all) inits.push_back(variable->initializer());
  inits.insert(inits.end(), optimizer->initializers().begin(), optimizer->initializers().end());
  std::vector<Output> reads;
  std::vector<size_t> owner;  // the variable each read is of
  for (size_t v = 0; v < models[0].variables.size(); ++v) {
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(models[r].variables[v].handle().node(),
                all[v]->ReplicaComponent(r).handle().node());
    }
    for (const Variable& component : all[v]->components()) {
      reads.push_back(component.Read(root));
      owner.push_back(v);
    }
  }
  std::vector<Tensor> values =
      TrainStepsAndRead(root, strategy, models, train_ops, inits, reads, n);
  if (values.empty()) return {};
  std::vector<std::vector<Tensor>> result(models[0].variables.size());
  for (size_t i = 0; i < values.size(); ++i) result[owner[i]].push_back(values[i]);
  return result;
}

TEST(MirroredOptimizerTest, UnchangedApiInsideScopeAndRunAllReducesGradients) {
  for (const char* optimizer : {"momentum", "adam", "sgd"}) {
    SCOPED_TRACE(optimizer);
    auto strategy =
        distribute::MirroredStrategy::Create(distribute::testing::CpuDevices(2)).value();
    std::vector<std::vector<Tensor>> mirrored = TrainInScope(*strategy, optimizer);
    ExpectMirroredLikePlain(mirrored, optimizer);
    // The slots (none for sgd) and the learning rate were made through the scope too:
    // mirrored, one per replica.
    EXPECT_EQ(strategy->variables().size(), std::string(optimizer) == "momentum" ? 13u
                                            : std::string(optimizer) == "adam"   ? 21u
                                                                                 : 7u);
  }
}

TEST(CentralStorageOptimizerTest, TrainsLikeOneDeviceWithEveryVariableStoredOnceOnTheHost) {
  for (const char* optimizer : {"momentum", "adam", "sgd"}) {
    SCOPED_TRACE(optimizer);
    auto strategy =
        distribute::CentralStorageStrategy::Create(distribute::testing::CpuDevices(2)).value();
    std::vector<std::vector<Tensor>> central = TrainInScope(*strategy, optimizer);
    std::vector<Tensor> plain = TrainPlain(optimizer);
    ASSERT_EQ(central.size(), 6u);
    ASSERT_EQ(plain.size(), 6u);
    for (size_t v = 0; v < central.size(); ++v) {
      ASSERT_EQ(central[v].size(), 1u) << "variable " << v;
      EXPECT_TENSOR_NEAR(central[v][0], plain[v], 1e-5, 1e-5) << "variable " << v;
    }
    // The model's variables, the slots and the learning rate: each once, on the host's CPU.
    EXPECT_EQ(strategy->variables().size(), std::string(optimizer) == "momentum" ? 13u
                                            : std::string(optimizer) == "adam"   ? 21u
                                                                                 : 7u);
    for (const auto& variable : strategy->variables()) {
      EXPECT_EQ(variable->devices(), std::vector<std::string>{distribute::testing::CpuDevice(0)})
          << variable->name();
    }
  }
}

TEST(MirroredOptimizerTest, NoContextOutsideRunMeansNoAllReduce) {
  EXPECT_EQ(distribute::CurrentReplicaContext(), nullptr);
  std::unique_ptr<Optimizer> optimizer = NewGradientDescentOptimizer(0.5);
  auto history = RunSteps(*optimizer, 1);
  ASSERT_EQ(history.size(), 1u);
  EXPECT_NEAR(history[0][0], 1.0, 1e-12);  // w - 0.5 * 2 (w - target) from w = 0
}

TEST(MirroredOptimizerTest, OneReplicaNeedsNoMerge) {
  auto strategy = distribute::OneDeviceStrategy::Create("/cpu:0").value();
  std::vector<std::vector<Tensor>> one = TrainMirrored(*strategy, "momentum");
  std::vector<Tensor> plain = TrainPlain("momentum");
  ASSERT_EQ(one.size(), plain.size());
  // The same graph on the same device: bitwise the same as without a strategy.
  for (size_t v = 0; v < one.size(); ++v) EXPECT_TENSOR_EQ(one[v][0], plain[v]);
}

TEST(MirroredOptimizerTest, GradientsAreReducedInOneMergeCallOfOneBatchReduce) {
  // A CrossDeviceOps that counts its calls and lets ReductionToOneDevice do the work.
  class Counting final : public distribute::CrossDeviceOps {
   public:
    StatusOr<distribute::Mirrored> Reduce(const Scope& scope, distribute::ReduceOp op,
                                          const distribute::PerReplica& value,
                                          const std::vector<std::string>& destinations) override {
      ++reduces;
      return inner.Reduce(scope, op, value, destinations);
    }
    StatusOr<std::vector<distribute::Mirrored>> BatchReduce(
        const Scope& scope, distribute::ReduceOp op,
        const std::vector<distribute::PerReplica>& values,
        const std::vector<std::string>& destinations) override {
      ++batch_reduces;
      ops.push_back(op);
      batch_sizes.push_back(values.size());
      return inner.BatchReduce(scope, op, values, destinations);
    }
    StatusOr<distribute::Mirrored> Broadcast(
        const Scope& scope, const Output& value,
        const std::vector<std::string>& destinations) override {
      return inner.Broadcast(scope, value, destinations);
    }
    distribute::ReductionToOneDevice inner;
    int reduces = 0, batch_reduces = 0;
    std::vector<distribute::ReduceOp> ops;
    std::vector<size_t> batch_sizes;
  };
  auto counting = std::make_unique<Counting>();
  Counting* calls = counting.get();
  auto strategy =
      distribute::MirroredStrategy::Create(distribute::testing::CpuDevices(2), std::move(counting))
          .value();
  std::vector<std::vector<Tensor>> mirrored = TrainMirrored(*strategy, "momentum");
  ASSERT_EQ(mirrored.size(), 6u);
  EXPECT_EQ(calls->reduces, 0);
  EXPECT_EQ(calls->batch_reduces, 1);
  ASSERT_EQ(calls->batch_sizes.size(), 1u);
  EXPECT_EQ(calls->batch_sizes[0], 6u);
  EXPECT_EQ(calls->ops[0], distribute::ReduceOp::kMean);
}

}  // namespace
}  // namespace weft::train
