// The child of CheckpointCrashTest: saves checkpoints of a few megabytes in a loop, so the test can
// kill it with SIGKILL at random moments. `checkpoint_save_loop DIR STEPS`: restores DIR's latest
// checkpoint when there is one (printing "restored <step>" after checking every variable holds
// <step>), then for each next step sets every variable to the step number, saves ckpt-<step>
// through a CheckpointManager keeping 2, and prints "saved <step>".
#include <cstdio>
#include <cstdlib>
#include <string>

#include "weft/checkpoint/checkpoint_manager.h"
#include "weft/checkpoint/testing/checkpoint_test_util.h"

namespace {

int Fail(const weft::Status& status) {
  std::fprintf(stderr, "checkpoint_save_loop: %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace weft;
  using namespace weft::checkpoint;
  if (argc != 3) {
    std::fprintf(stderr, "usage: checkpoint_save_loop DIR STEPS\n");
    return 2;
  }
  const std::string directory = argv[1];
  const int64_t steps = std::atoll(argv[2]);
  StatusOr<testing::TestModel> model = testing::BuildTestModel(1, testing::CrashLoopSpecs());
  if (!model.ok()) return Fail(model.status());
  CheckpointManager manager(model->checkpoint.get(), directory, /*max_to_keep=*/2);
  StatusOr<std::optional<RestoredCheckpoint>> restored = manager.RestoreLatest(*model->session);
  if (!restored.ok()) return Fail(restored.status());
  int64_t step = 1;
  if (restored->has_value()) {
    const int64_t last = (*restored)->step;
    if (Status checked = testing::CheckAll(*model, last); !checked.ok()) return Fail(checked);
    if ((*restored)->values.at("global_step") != last) {
      return Fail(
          DataLoss("global_step ", (*restored)->values.at("global_step"), " at step ", last));
    }
    std::printf("restored %lld\n", static_cast<long long>(last));
    std::fflush(stdout);
    step = last + 1;
  }
  for (const int64_t end = step + steps; step < end; ++step) {
    if (Status set = testing::SetAll(*model, step); !set.ok()) return Fail(set);
    if (Status saved = manager.Save(*model->session, step, {{"global_step", step}}); !saved.ok()) {
      return Fail(saved);
    }
    std::printf("saved %lld\n", static_cast<long long>(step));
    std::fflush(stdout);
  }
  return 0;
}
