// W3 all-reduce: float32 sum of 4 KB, 256 KB, 4 MB and 64 MB over 2 and 4 participants through
// LocalCollectiveExecutor, each participant a thread that calls AllReduceAsync once per iteration
// the way a replica's kernel would (threads started once per benchmark; a fresh executor per
// iteration, as the runtime gives one per step), on CPU devices with one intra-op thread each.
// Reports the time per all-reduce and bus bandwidth 2(n-1)/n*size/time ("bus_bytes_per_second").
// BM_PlainSum is the floor: one thread summing four 64 MB buffers into a fifth.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "weft/core/mutex.h"
#include "weft/runtime/collective/local_collective_executor.h"
#include "weft/runtime/cpu_device.h"

namespace weft {
namespace {

// Waiters poll this long (yielding) before they sleep: waking a sleeping thread on the other core
// costs about 30 us, which would swamp the small sizes.
constexpr auto kSpin = std::chrono::microseconds(200);

// Waits until pred() holds: polls for kSpin, then sleeps on `cv`.
template <typename Pred>
void SpinThenWait(Mutex& mu, CondVar& cv, Pred pred) {
  auto deadline = std::chrono::steady_clock::now() + kSpin;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) {
      MutexLock lock(mu);
      while (!pred()) cv.Wait(lock);
      return;
    }
    std::this_thread::yield();
  }
}

// `members` participant threads on devices CPU:0..n-1, each holding `elements` random floats.
class Participants {
 public:
  Participants(int members, int64_t elements) : members_(members), outputs_(members) {
    for (int m = 0; m < members; ++m) {
      devices_.push_back(std::make_unique<CpuDevice>(
          "/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(m), 1));
      Tensor input(DataType::kFloat, TensorShape({elements}));
      for (int64_t e = 0; e < elements; ++e) input.data<float>()[e] = static_cast<float>(e % 7 + m);
      inputs_.push_back({input});
    }
    params_.group_key = 1;
    params_.group_size = members;
    params_.instance_key = 1;
    params_.merge_op = "Add";
    params_.final_op = "Id";
    for (int m = 0; m < members; ++m) threads_.emplace_back([this, m] { Loop(m); });
  }

  ~Participants() {
    {
      MutexLock lock(mu_);
      stopping_ = true;
    }
    start_.NotifyAll();
    for (auto& thread : threads_) thread.join();
  }

  // One all-reduce: releases every participant and waits for all their callbacks.
  void RunRound() {
    executor_ = std::make_unique<LocalCollectiveExecutor>();
    remaining_.store(members_, std::memory_order_relaxed);
    {
      MutexLock lock(mu_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    start_.NotifyAll();
    SpinThenWait(mu_, finished_,
                 [this] { return remaining_.load(std::memory_order_acquire) == 0; });
  }

 private:
  void Loop(int m) {
    int64_t seen = 0;
    while (true) {
      SpinThenWait(mu_, start_, [&] {
        return generation_.load(std::memory_order_acquire) != seen || stopping_.load();
      });
      if (stopping_.load()) return;
      seen = generation_.load(std::memory_order_acquire);
      executor_->AllReduceAsync(params_, devices_[m].get(), inputs_[m], &outputs_[m],
                                [this](const Status& status) {
                                  if (!status.ok()) std::abort();
                                  if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
                                    MutexLock lock(mu_);
                                    finished_.NotifyAll();
                                  }
                                });
    }
  }

  const int members_;
  std::vector<std::unique_ptr<CpuDevice>> devices_;
  std::vector<std::vector<Tensor>> inputs_;
  std::vector<std::vector<Tensor>> outputs_;
  CollectiveParams params_;
  std::unique_ptr<LocalCollectiveExecutor> executor_;
  Mutex mu_;
  CondVar start_;
  CondVar finished_;
  std::atomic<int64_t> generation_{0};
  std::atomic<int> remaining_{0};
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
};

void BM_AllReduce(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  const int members = static_cast<int>(state.range(1));
  Participants participants(members, bytes / static_cast<int64_t>(sizeof(float)));
  participants.RunRound();  // warm up: first touch of the buffers, threads running
  for (auto _ : state) participants.RunRound();
  const double bus_bytes = 2.0 * (members - 1) / members * static_cast<double>(bytes);
  state.counters["bus_bytes_per_second"] =
      benchmark::Counter(bus_bytes * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1024);
}
BENCHMARK(BM_AllReduce)
    ->ArgNames({"bytes", "devices"})
    ->ArgsProduct({{4 << 10, 256 << 10, 4 << 20, 64 << 20}, {2, 4}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The floor for one 64 MB all-reduce over four buffers: a plain single-threaded sum.
void BM_PlainSum(benchmark::State& state) {
  constexpr int64_t kElements = (64 << 20) / sizeof(float);
  std::vector<Tensor> inputs;
  for (int m = 0; m < 4; ++m) {
    inputs.emplace_back(DataType::kFloat, TensorShape({kElements}));
    for (int64_t e = 0; e < kElements; ++e) inputs[m].data<float>()[e] = static_cast<float>(e % 5);
  }
  Tensor output(DataType::kFloat, TensorShape({kElements}));
  const float* __restrict a = inputs[0].data<float>();
  const float* __restrict b = inputs[1].data<float>();
  const float* __restrict c = inputs[2].data<float>();
  const float* __restrict d = inputs[3].data<float>();
  float* __restrict out = output.data<float>();
  for (auto _ : state) {
    for (int64_t e = 0; e < kElements; ++e) out[e] = a[e] + b[e] + c[e] + d[e];
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_PlainSum)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace weft

BENCHMARK_MAIN();
