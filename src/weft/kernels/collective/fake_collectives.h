// Test-only: a CollectiveExecutor that records each call and answers it as the test says, now or
// later (from another thread), so collective kernels are tested without other members. One call
// at a time, answered once; only `called` may be used from two threads at once.
#pragma once

#include <utility>
#include <vector>

#include "weft/core/notification.h"
#include "weft/framework/collective.h"

namespace weft::kernels::testing {

class FakeCollectives final : public CollectiveExecutor {
 public:
  enum class Call { kNone, kAllReduce, kBroadcast, kAllGather };

  void AllReduceAsync(const CollectiveParams& params, DeviceBase* device,
                      std::vector<Tensor> inputs, std::vector<Tensor>* outputs,
                      StatusCallback done) override {
    Record(Call::kAllReduce, params, device, std::move(inputs), std::move(done));
    outputs_ = outputs;
    if (!defer) Answer();
  }
  void BroadcastAsync(const CollectiveParams& params, DeviceBase* device, bool is_source,
                      DataType expected_dtype, const TensorShape& expected_shape, Tensor* value,
                      StatusCallback done) override {
    std::vector<Tensor> inputs;
    if (is_source) inputs.push_back(*value);
    Record(Call::kBroadcast, params, device, std::move(inputs), std::move(done));
    is_source_ = is_source;
    expected_dtype_ = expected_dtype;
    expected_shape_ = expected_shape;
    output_ = is_source ? nullptr : value;
    if (!defer) Answer();
  }
  void AllGatherAsync(const CollectiveParams& params, DeviceBase* device, Tensor input,
                      Tensor* output, StatusCallback done) override {
    Record(Call::kAllGather, params, device, {std::move(input)}, std::move(done));
    output_ = output;
    if (!defer) Answer();
  }
  void StartAbort(const Status&) override {}

  // Calls the pending callback with `error`; when that is OK, first fills the outputs: an
  // all-reduce's with its inputs times `scale`, a broadcast receiver's or an all-gather's with
  // `result`.
  void Answer() {
    if (error.ok() && call_ == Call::kAllReduce) {
      outputs_->clear();
      for (const Tensor& input : inputs_) outputs_->push_back(Scaled(input));
    } else if (error.ok() && output_ != nullptr) {
      *output_ = result;
    }
    StatusCallback done = std::move(done_);
    done(error);
  }

  double scale = 2;
  Tensor result;
  Status error;
  bool defer = false;
  Notification called;  // notified by every call, for a test that answers from another thread

  Call call_ = Call::kNone;
  CollectiveParams params_;
  DeviceBase* device_ = nullptr;
  std::vector<Tensor> inputs_;
  bool is_source_ = false;
  DataType expected_dtype_ = DataType::kInvalid;
  TensorShape expected_shape_;

 private:
  void Record(Call call, const CollectiveParams& params, DeviceBase* device,
              std::vector<Tensor> inputs, StatusCallback done) {
    call_ = call;
    params_ = params;
    device_ = device;
    inputs_ = std::move(inputs);
    done_ = std::move(done);
    called.Notify();
  }

  Tensor Scaled(const Tensor& input) const {
    Tensor output(input.dtype(), input.shape());
    for (int64_t e = 0; e < input.NumElements(); ++e) {
      if (input.dtype() == DataType::kFloat) {
        output.data<float>()[e] = input.data<float>()[e] * static_cast<float>(scale);
      } else {
        output.data<double>()[e] = input.data<double>()[e] * scale;
      }
    }
    return output;
  }

  std::vector<Tensor>* outputs_ = nullptr;
  Tensor* output_ = nullptr;
  StatusCallback done_;
};

}  // namespace weft::kernels::testing
