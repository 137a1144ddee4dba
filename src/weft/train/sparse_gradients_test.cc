// Sparse gradients of embedding tables: ComputeGradients' rows and indices, and every optimizer
// trained through them against the same model trained through a dense read of the table.
#include <gtest/gtest.h>

#include "weft/runtime/session.h"
#include "weft/testing/tensor_matchers.h"
#include "weft/train/layers/core.h"
#include "weft/train/model.h"
#include "weft/train/optimizer.h"
#include "weft/train/testing/model_test_util.h"

namespace weft::train {
namespace {

const Tensor kIds = Tensor::FromVector<int64_t>({3, 0, 3, 5, 1, 2, 4, 0}, TensorShape({4, 2}));

// loss = sum((rows(table, ids) * weights - 1)^2), the rows looked up sparsely (ResourceGather) or
// gathered from a dense read of the table (GatherV2), so both give the same loss and gradient.
struct TableModel {
  Scope root = Scope::NewRootScope();
  Variable table;
  Output loss;

  explicit TableModel(bool sparse) {
    table = Variable::Create(root, "table", TensorShape({6, 2}), DataType::kDouble,
                             Initializer::Constant(0.5));
    Output ids = ops::Const(root, kIds);
    Output rows = sparse ? ops::ResourceGather(root, table.handle(), ids)
                         : ops::GatherV2(root, table.Read(root), ids, ops::Const(root, 0));
    Output weights = ops::Const(root, Tensor::FromVector<double>({1.0, -2.0}));
    Output error = ops::Sub(root, ops::Mul(root, rows, weights), ops::Const(root, 1.0));
    loss = ops::Sum(root, ops::Square(root, error), ops::Const(root, {0, 1, 2}));
  }
};

// The table after `steps` steps of `optimizer` on TableModel(sparse).
Tensor Train(Optimizer& optimizer, bool sparse, int steps) {
  TableModel model(sparse);
  StatusOr<Output> train_op = optimizer.Minimize(model.root, model.loss, {model.table});
  EXPECT_TRUE(train_op.ok()) << train_op.status();
  if (!train_op.ok()) return Tensor();
  std::vector<std::string> inits = {model.table.initializer().name()};
  for (const Output& init : optimizer.initializers()) inits.push_back(init.name());
  Output read = model.table.Read(model.root);
  auto session = NewSession(SessionOptions()).value();
  EXPECT_TRUE(session->Create(model.root.ToGraphDef().value()).ok());
  std::vector<Tensor> outputs;
  EXPECT_TRUE(session->Run({}, {}, inits, &outputs).ok());
  for (int i = 0; i < steps; ++i) {
    Status status = session->Run({}, {}, {train_op->name()}, &outputs);
    EXPECT_TRUE(status.ok()) << status;
  }
  EXPECT_TRUE(session->Run({}, {read.name()}, {}, &outputs).ok());
  return outputs.empty() ? Tensor() : outputs[0];
}

TEST(SparseGradientsTest, ALookedUpTableGetsItsRowsAndTheirIndices) {
  TableModel model(/*sparse=*/true);
  auto optimizer = NewGradientDescentOptimizer(0.1);
  StatusOr<std::vector<GradientAndVariable>> gradients =
      optimizer->ComputeGradients(model.root, model.loss, {model.table});
  ASSERT_TRUE(gradients.ok()) << gradients.status();
  ASSERT_EQ(gradients->size(), 1u);
  const GradientAndVariable& gradient = (*gradients)[0];
  ASSERT_TRUE(gradient.indices);
  auto session = NewSession(SessionOptions()).value();
  ASSERT_TRUE(session->Create(model.root.ToGraphDef().value()).ok());
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run({}, {}, {model.table.initializer().name()}, &outputs).ok());
  ASSERT_TRUE(
      session->Run({}, {gradient.gradient.name(), gradient.indices.name()}, {}, &outputs).ok());
  // Eight lookups of two columns each: d/drow of (row * w - 1)^2 = 2 * (0.5 w - 1) * w.
  EXPECT_EQ(outputs[0].shape(), TensorShape({8, 2}));
  EXPECT_TENSOR_NEAR(outputs[1], Tensor::FromVector<int64_t>({3, 0, 3, 5, 1, 2, 4, 0}), 0, 0);
  for (int i = 0; i < 8; ++i) {
    EXPECT_NEAR(outputs[0].data<double>()[i * 2], 2 * (0.5 - 1) * 1, 1e-12);
    EXPECT_NEAR(outputs[0].data<double>()[i * 2 + 1], 2 * (-1.0 - 1) * -2, 1e-12);
  }
}

TEST(SparseGradientsTest, ATableAlsoReadWholeGetsOneDenseGradient) {
  TableModel model(/*sparse=*/true);
  Output whole = ops::Sum(model.root, model.table.Read(model.root), ops::Const(model.root, {0, 1}));
  Output loss = ops::Add(model.root, model.loss, whole);
  auto optimizer = NewGradientDescentOptimizer(0.1);
  StatusOr<std::vector<GradientAndVariable>> gradients =
      optimizer->ComputeGradients(model.root, loss, {model.table});
  ASSERT_TRUE(gradients.ok()) << gradients.status();
  EXPECT_FALSE((*gradients)[0].indices);
  EXPECT_TRUE((*gradients)[0].gradient);
}

TEST(SparseGradientsTest, EveryOptimizerTrainsALookedUpTableAsADenseOne) {
  struct Case {
    const char* name;
    std::unique_ptr<Optimizer> (*make)();
  };
  const Case cases[] = {
      {"sgd", [] { return NewGradientDescentOptimizer(0.1); }},
      {"adagrad", [] { return NewAdagradOptimizer(0.1); }},
      {"momentum", [] { return NewMomentumOptimizer(0.1, 0.9); }},  // densified: no sparse kernel
      // Every row is looked up in every step, so lazy Adam and Adam agree.
      {"adam", [] { return NewAdamOptimizer(0.05); }},
  };
  for (const Case& c : cases) {
    std::unique_ptr<Optimizer> sparse = c.make();
    std::unique_ptr<Optimizer> dense = c.make();
    Tensor trained_sparse = Train(*sparse, true, 3);
    Tensor trained_dense = Train(*dense, false, 3);
    EXPECT_TENSOR_NEAR(trained_sparse, trained_dense, 1e-12, 0) << c.name;
    EXPECT_GT(std::abs(trained_sparse.data<double>()[0] - 0.5), 1e-3) << c.name << " did not train";
  }
}

// How many nodes of each op type in `model`'s graph, after one step of Fit.
std::map<std::string, int> OpsAfterOneStep(Model& model) {
  Tensor ids = Tensor::FromVector<int64_t>({0, 1, 2, 3, 4, 5, 1, 2}, TensorShape({4, 2}));
  Tensor labels = Tensor::FromVector<float>({1, 0, 1, 0}, TensorShape({4, 1}));
  auto fitted = model.Fit(data::Dataset::FromTensors({ids, labels}).Batch(4), {.epochs = 1});
  EXPECT_TRUE(fitted.ok()) << fitted.status();
  std::map<std::string, int> ops;
  Status counted = model.AddToGraph([&](const Scope& root) {
    for (const Node* node : root.graph()->nodes()) ++ops[node->type_string()];
    return Status::OK();
  });
  EXPECT_TRUE(counted.ok()) << counted;
  return ops;
}

// Through Model (in replica context): with one replica in sync the table's rows and ids reach the
// sparse kernel; with two they are densified for the all-reduce.
TEST(SparseGradientsTest, ModelKeepsATablesGradientSparseWithOneReplicaInSync) {
  auto make = [] {
    auto model = std::make_unique<Sequential>(Embedding(6, 2), Flatten(), Dense(1));
    return model;
  };
  auto one = make();
  ASSERT_TRUE(one->Compile(NewAdagradOptimizer(0.1), BinaryCrossentropy(true)).ok());
  std::map<std::string, int> one_ops = OpsAfterOneStep(*one);
  EXPECT_EQ(one_ops["ResourceSparseApplyAdagradV2"], 1);
  EXPECT_EQ(one_ops["UnsortedSegmentSum"], 0);

  std::unique_ptr<distribute::Strategy> mirrored = testing::Mirrored(2);
  auto two = make();
  ASSERT_TRUE(two->Compile(NewAdagradOptimizer(0.1), BinaryCrossentropy(true), {},
                           {.strategy = mirrored.get()})
                  .ok());
  std::map<std::string, int> two_ops = OpsAfterOneStep(*two);
  EXPECT_EQ(two_ops["ResourceSparseApplyAdagradV2"], 0);
  EXPECT_EQ(two_ops["UnsortedSegmentSum"], 2);  // one per replica
}

}  // namespace
}  // namespace weft::train
