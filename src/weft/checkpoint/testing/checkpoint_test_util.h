// A small model for checkpoint tests and for the crash-test child (checkpoint_save_loop): every
// variable dtype a model holds, plain on one device or mirrored over several, its Checkpoint (with
// the value "global_step") and a session, and a way to set every variable to one number and to
// check that every component holds it. Errors are Statuses (the child has no gtest).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "weft/checkpoint/checkpoint.h"
#include "weft/distribute/strategy.h"

namespace weft::checkpoint::testing {

struct TestVariableSpec {
  std::string name;
  TensorShape shape;
  DataType dtype;
};

// dense1/kernel [3,4] f32, dense1/bias [4] f32, scale [2] f64, counts [5] i32, big [] i64.
std::vector<TestVariableSpec> SmallSpecs();
// Four float32 [512, 1024] kernels (8 MB in all) and an int64 counter: saves that take long
// enough for a random kill to land inside them.
std::vector<TestVariableSpec> CrashLoopSpecs();

struct TestModel {
  std::unique_ptr<distribute::Strategy> strategy;  // null on one device
  std::vector<Variable> variables;
  std::vector<std::shared_ptr<distribute::DistributedVariable>> distributed;
  std::unique_ptr<Checkpoint> checkpoint;
  std::unique_ptr<Session> session;
  std::string value;               // int64 scalar placeholder: SetAll's number
  std::string assign;              // target setting every variable to it
  std::vector<std::string> reads;  // every component of every variable
};

// Builds `specs` on `devices` CPU devices (1: plain variables); with_sum adds a sync-on-read SUM
// float scalar "metrics/total" (initially 1 per component). Initializes every variable.
StatusOr<TestModel> BuildTestModel(int devices, const std::vector<TestVariableSpec>& specs,
                                   bool with_sum = false);

// Sets every variable (every component) of `specs` to `value`.
Status SetAll(TestModel& model, int64_t value);
// Every element of every component of `specs` equals `value`; else FailedPrecondition naming the
// first that does not.
Status CheckAll(TestModel& model, int64_t value);
// The components' values (every read, in order).
StatusOr<std::vector<Tensor>> ReadAll(TestModel& model);

}  // namespace weft::checkpoint::testing
