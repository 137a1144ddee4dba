// Kills a process in the middle of saving checkpoints (SIGKILL at random moments of a loop of
// saves, checkpoint_save_loop) and checks, every time, that the directory's index names a complete
// checkpoint no older than the last one the process reported, which restores with every variable
// holding its step. The kill moment is drawn at random (seeded) over a save's duration: the point
// is to land anywhere inside one, not to order events.
#include <chrono>
#include <csignal>
#include <random>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "weft/checkpoint/checkpoint_manager.h"
#include "weft/checkpoint/testing/checkpoint_test_util.h"
#include "weft/io/testing/io_test_util.h"
#include "weft/testing/child_process.h"

namespace weft::checkpoint {
namespace {

// The last "saved <step>" in `output`; 0 when none.
int64_t LastSaved(const std::string& output) {
  int64_t last = 0;
  for (size_t at = output.find("saved "); at != std::string::npos;
       at = output.find("saved ", at + 1)) {
    last = std::max<int64_t>(last, std::atoll(output.c_str() + at + 6));
  }
  return last;
}

TEST(CheckpointCrashTest, AKilledSaveAlwaysLeavesTheNewestCompleteCheckpoint) {
  io::testing::TempDir dir;
  const std::string run = dir.File("run");
  std::mt19937 random(20261203);
  int64_t reported = 0;
  constexpr int kRounds = 8;
  for (int round = 0; round < kRounds; ++round) {
    StatusOr<std::unique_ptr<weft::testing::ChildProcess>> child =
        weft::testing::ChildProcess::Start({WEFT_CHECKPOINT_SAVE_LOOP, run, "1000"});
    ASSERT_TRUE(child.ok()) << child.status();
    // Wait for a first save of this round, then kill somewhere in the saves that follow.
    Status saving = (*child)->WaitForOutput("saved ", 60'000);
    ASSERT_TRUE(saving.ok()) << saving << "\n" << (*child)->output();
    std::this_thread::sleep_for(
        std::chrono::microseconds(std::uniform_int_distribution<int>(0, 60'000)(random)));
    (*child)->Signal(SIGKILL);
    StatusOr<int> exit = (*child)->WaitForExit(30'000);
    ASSERT_TRUE(exit.ok()) << exit.status();
    const std::string& output = (*child)->output();
    ASSERT_EQ(output.find("checkpoint_save_loop:"), std::string::npos) << output;
    if (round > 0) {
      ASSERT_NE(output.find("restored "), std::string::npos) << output;
    }
    reported = std::max(reported, LastSaved(output));

    StatusOr<testing::TestModel> model = testing::BuildTestModel(1, testing::CrashLoopSpecs());
    ASSERT_TRUE(model.ok()) << model.status();
    CheckpointManager manager(model->checkpoint.get(), run, 2);
    StatusOr<std::optional<RestoredCheckpoint>> restored = manager.RestoreLatest(*model->session);
    ASSERT_TRUE(restored.ok()) << "round " << round << ": " << restored.status();
    ASSERT_TRUE(restored->has_value()) << "round " << round;
    EXPECT_GE((*restored)->step, reported) << "round " << round << " lost a reported checkpoint";
    Status checked = testing::CheckAll(*model, (*restored)->step);
    EXPECT_TRUE(checked.ok()) << "round " << round << ": " << checked;
  }
}

}  // namespace
}  // namespace weft::checkpoint
