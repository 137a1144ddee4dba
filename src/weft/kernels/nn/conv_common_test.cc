// Tests for the convolution chunk plan: chunks cover every output row exactly once, respect the
// whole-image rule for concurrent col2im, and run as concurrent tasks only when OpenBLAS is
// single-threaded and there are several intra-op threads.
#include "weft/kernels/nn/conv_common.h"

#include <climits>
#include <vector>

#include "weft/kernels/gemm.h"
#include "weft/kernels/testing/nn_test_util.h"

namespace weft::kernels {
namespace {

SpatialGeometry Geometry(int64_t batch, int64_t out_rows, int64_t out_cols, int64_t patch) {
  SpatialGeometry g;
  g.batch = batch;
  g.out_rows = out_rows;
  g.out_cols = out_cols;
  g.window_rows = 1;
  g.window_cols = 1;
  g.in_depth = patch;
  return g;
}

// Every unit in exactly one chunk, chunks in order, every task with at least one chunk.
void ExpectCoversAllUnits(const ConvPlan& plan) {
  std::vector<int> seen(plan.units, 0);
  for (int64_t task = 0; task < plan.num_tasks; ++task) {
    EXPECT_LT(plan.FirstChunk(task), plan.FirstChunk(task + 1));
    for (int64_t chunk = plan.FirstChunk(task); chunk < plan.FirstChunk(task + 1); ++chunk) {
      for (int64_t u = chunk * plan.units_per_chunk;
           u < std::min(plan.units, (chunk + 1) * plan.units_per_chunk); ++u) {
        ++seen[u];
      }
    }
  }
  EXPECT_EQ(plan.FirstChunk(plan.num_tasks), plan.num_chunks);
  for (int count : seen) EXPECT_EQ(count, 1);
}

TEST(ConvPlanTest, OneTaskWhenBlasIsMultiThreaded) {
  weft::testing::ScopedBlasThreads blas(2);
  // 128 images of 14 output rows, 14 cols, patches of 800 floats: 44.8 KB per unit.
  ConvPlan plan = PlanConvChunks(Geometry(128, 14, 14, 800), 4, 2, false);
  EXPECT_EQ(plan.num_tasks, 1);
  EXPECT_LE(plan.units_per_chunk * 14 * 800 * 4, 1 << 20);
  ExpectCoversAllUnits(plan);
}

TEST(ConvPlanTest, ConcurrentTasksWhenBlasIsSingleThreaded) {
  weft::testing::ScopedBlasThreads blas(1);
  for (int threads : {2, 3, 4}) {
    for (bool whole_images : {false, true}) {
      SCOPED_TRACE(StrCat(threads, " threads, whole images ", whole_images));
      for (const SpatialGeometry& g : {Geometry(128, 14, 14, 800), Geometry(5, 28, 28, 25),
                                       Geometry(1, 40, 40, 288), Geometry(3, 7, 2, 1)}) {
        ConvPlan plan = PlanConvChunks(g, 4, threads, whole_images);
        // Whole-image chunks cannot split a single image between tasks.
        if (!whole_images || g.batch > 1) {
          EXPECT_GT(plan.num_tasks, 1);
        }
        EXPECT_LE(plan.num_tasks, threads);
        if (whole_images) {
          EXPECT_EQ(plan.units_per_chunk % g.out_rows, 0);
        }
        ExpectCoversAllUnits(plan);
      }
    }
  }
  // One intra-op thread: nothing to run concurrently.
  EXPECT_EQ(PlanConvChunks(Geometry(128, 14, 14, 800), 4, 1, false).num_tasks, 1);
  // An empty batch has no chunks.
  EXPECT_EQ(PlanConvChunks(Geometry(0, 14, 14, 800), 4, 2, false).num_chunks, 0);
}

// Shapes this large cannot be allocated in a test; the check works from the geometry alone.
TEST(ConvPlanTest, GemmBeyondBlasIntIsAnErrorNamingTheNode) {
  proto::NodeDef node;
  node.set_name("huge_conv");
  node.set_op("Conv2D");
  SpatialGeometry g;
  g.batch = 1;
  g.in_rows = g.out_rows = 4;
  g.in_cols = g.out_cols = 4;
  g.window_rows = g.window_cols = 3;
  g.in_depth = 8;
  ConvPlan plan;
  plan.units = 4;
  plan.units_per_chunk = 4;
  EXPECT_TRUE(CheckConvGemmFitsBlas(node, g, 16, plan).ok());
  g.in_depth = int64_t{1} << 30;  // patch 9 * 2^30
  Status status = CheckConvGemmFitsBlas(node, g, 16, plan);
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("node 'huge_conv' (Conv2D)"), std::string::npos) << status;
  g.in_depth = 8;
  EXPECT_FALSE(CheckConvGemmFitsBlas(node, g, int64_t{1} << 31, plan).ok());
  EXPECT_TRUE(FitsBlasInt({0, INT_MAX}));
  EXPECT_FALSE(FitsBlasInt({int64_t{INT_MAX} + 1}));
  EXPECT_FALSE(FitsBlasInt({-1}));
}

}  // namespace
}  // namespace weft::kernels
