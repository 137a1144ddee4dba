// EmbeddingCollection on one device: column t of the ids looked up in table t, tables that start
// different, and bad ids or tables named; under parameter servers it is exercised by W7's runs
// (bench/w7_dlrm) and its grouped lookup by sharded_variable_test.
#include "weft/train/layers/embedding_collection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/distribute/testing/session_test_util.h"

namespace weft::train {
namespace {

using distribute::testing::Fetch;
using distribute::testing::MakeSession;
using ::testing::HasSubstr;

TEST(EmbeddingCollectionTest, LooksUpEachColumnInItsOwnTable) {
  EmbeddingCollection tables({5, 3}, 2,
                             {.embeddings_initializer = Initializer::RandomUniform(-1, 1, 7)});
  Tensor ids = Tensor::FromVector<int64_t>({4, 2, 0, 1, 4, 0}, TensorShape({3, 2}));
  Scope root = Scope::NewRootScope();
  Output rows = tables(root, ops::Const(root, ids));
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_EQ(tables.variables().size(), 2u);
  EXPECT_EQ(tables.variables()[1].shape(), TensorShape({3, 2}));
  Output first = tables.variables()[0].Read(root), second = tables.variables()[1].Read(root);
  auto session = MakeSession(root, 1);
  ASSERT_NE(session, nullptr);
  Fetch(*session, {}, {tables.variables()[0].initializer(), tables.variables()[1].initializer()});
  std::vector<Tensor> values = Fetch(*session, {rows, first, second});
  ASSERT_EQ(values.size(), 3u);
  EXPECT_EQ(values[0].shape(), TensorShape({3, 2, 2}));
  for (int64_t b = 0; b < 3; ++b) {
    for (int64_t t = 0; t < 2; ++t) {
      const float* table = values[1 + t].data<float>();
      for (int64_t j = 0; j < 2; ++j) {
        EXPECT_EQ(values[0].data<float>()[(b * 2 + t) * 2 + j],
                  table[ids.data<int64_t>()[b * 2 + t] * 2 + j])
            << b << " " << t;
      }
    }
  }
  // Seeded alike, the tables still start different (seed offset per table).
  EXPECT_NE(values[1].data<float>()[0], values[2].data<float>()[0]);
}

TEST(EmbeddingCollectionTest, BadIdsAndTablesAreNamed) {
  {
    EmbeddingCollection tables({5, 3}, 2);
    Scope root = Scope::NewRootScope();
    tables(root, ops::Const(root, Tensor::FromVector<int64_t>({1, 2, 3}, TensorShape({1, 3}))));
    EXPECT_THAT(root.status().message(), HasSubstr("needs ids [batch, 2]"));
  }
  {
    EmbeddingCollection tables({5, 3}, 2);
    Scope root = Scope::NewRootScope();
    tables(root, ops::Const(root, Tensor::FromVector<float>({1, 2}, TensorShape({1, 2}))));
    EXPECT_THAT(root.status().message(), HasSubstr("needs int32 or int64 ids"));
  }
  {
    EmbeddingCollection tables({5, 0}, 2);
    Scope root = Scope::NewRootScope();
    tables(root, ops::Const(root, Tensor::FromVector<int64_t>({1, 2}, TensorShape({1, 2}))));
    EXPECT_THAT(root.status().message(), HasSubstr("table 1 has 0 rows"));
  }
}

}  // namespace
}  // namespace weft::train
