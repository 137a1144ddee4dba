// RemoteRendezvous and RendezvousMgr against a scripted peer worker: local sends and receives,
// RecvTensor calls to the source task, their cancellation on abort and with the step, error
// wrapping, and the memory of cleaned-up steps.
#include "weft/distributed/worker/rendezvous_mgr.h"

#include <chrono>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "weft/core/mutex.h"
#include "weft/core/notification.h"
#include "weft/distributed/worker/local_worker_cache.h"
#include "weft/framework/cancellation.h"
#include "weft/testing/tensor_matchers.h"

namespace weft {
namespace {

constexpr char kTask0[] = "/job:worker/replica:0/task:0";
constexpr char kTask1[] = "/job:worker/replica:0/task:1";
constexpr char kCpu0[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:worker/replica:0/task:1/device:CPU:0";
constexpr auto kTimeout = std::chrono::seconds(10);

// A peer whose RecvTensor calls wait until the test answers them or their CallOptions cancel.
class ScriptedPeer final : public WorkerInterface {
 public:
  struct Call {
    CallOptions* options;
    const proto::RecvTensorRequest* request;
    TensorResponse* response;
    StatusCallback done;
    std::once_flag once;
    void Finish(const Status& status) {
      std::call_once(once, [&] {
        options->ClearCancelCallback();  // the callback holds this call: break the cycle
        done(status);
      });
    }
  };

  void GetStatusAsync(CallOptions*, const proto::GetStatusRequest*, proto::GetStatusResponse*,
                      StatusCallback done) override {
    done(Unimplemented("GetStatus"));
  }
  void CreateWorkerSessionAsync(CallOptions*, const proto::CreateWorkerSessionRequest*,
                                proto::CreateWorkerSessionResponse*, StatusCallback done) override {
    done(Unimplemented("CreateWorkerSession"));
  }
  void DeleteWorkerSessionAsync(CallOptions*, const proto::DeleteWorkerSessionRequest*,
                                proto::DeleteWorkerSessionResponse*, StatusCallback done) override {
    done(Unimplemented("DeleteWorkerSession"));
  }
  void RegisterGraphAsync(CallOptions*, const proto::RegisterGraphRequest*,
                          proto::RegisterGraphResponse*, StatusCallback done) override {
    done(Unimplemented("RegisterGraph"));
  }
  void DeregisterGraphAsync(CallOptions*, const proto::DeregisterGraphRequest*,
                            proto::DeregisterGraphResponse*, StatusCallback done) override {
    done(Unimplemented("DeregisterGraph"));
  }
  void RunGraphAsync(CallOptions*, const proto::RunGraphRequest*, proto::RunGraphResponse*,
                     StatusCallback done) override {
    done(Unimplemented("RunGraph"));
  }
  void CleanupGraphAsync(CallOptions*, const proto::CleanupGraphRequest*,
                         proto::CleanupGraphResponse*, StatusCallback done) override {
    done(Unimplemented("CleanupGraph"));
  }
  void RecvTensorAsync(CallOptions* options, const proto::RecvTensorRequest* request,
                       TensorResponse* response, StatusCallback done) override {
    auto call = std::make_shared<Call>();
    call->options = options;
    call->request = request;
    call->response = response;
    call->done = std::move(done);
    {
      MutexLock lock(mu_);
      calls_.push_back(call);
    }
    options->SetCancelCallback([call] { call->Finish(Cancelled("RecvTensor call cancelled")); });
    arrived_.Notify();
  }

  std::shared_ptr<Call> WaitForCall() {
    if (!arrived_.WaitForNotificationWithTimeout(kTimeout)) return nullptr;
    MutexLock lock(mu_);
    return calls_.back();
  }

 private:
  Mutex mu_;
  std::vector<std::shared_ptr<Call>> calls_ WEFT_GUARDED_BY(mu_);
  Notification arrived_;
};

struct RecvResult {
  Notification done;
  Status status;
  Tensor value;
};

Rendezvous::DoneCallback Collect(RecvResult* result) {
  return [result](const Status& status, const Rendezvous::Args&, const Rendezvous::Args&,
                  const Tensor& value, bool) {
    result->status = status;
    result->value = value;
    result->done.Notify();
  };
}

Rendezvous::ParsedKey Key(const char* src_device, const char* name) {
  const char* dst = std::string(src_device) == kCpu0 ? kCpu1 : kCpu0;
  return Rendezvous::ParseKey(Rendezvous::CreateKey(src_device, 7, dst, name, {})).value();
}

class RemoteRendezvousTest : public ::testing::Test {
 protected:
  RemoteRendezvousTest()
      : cache_(NewLocalWorkerCache({{kTask1, &peer_}})),
        rendezvous_(std::make_shared<RemoteRendezvous>(42)) {
    Status s = rendezvous_->Initialize(cache_.get(), kTask0);
    EXPECT_TRUE(s.ok()) << s;
  }

  ScriptedPeer peer_;
  std::unique_ptr<WorkerCacheInterface> cache_;
  std::shared_ptr<RemoteRendezvous> rendezvous_;
};

TEST_F(RemoteRendezvousTest, LocalSendMeetsLocalRecv) {
  RecvResult result;
  rendezvous_->RecvAsync(Key(kCpu0, "a"), {}, Collect(&result));
  ASSERT_TRUE(
      rendezvous_->Send(Key(kCpu0, "a"), {}, Tensor::FromVector<float>({1, 2}), false).ok());
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(kTimeout));
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_TENSOR_EQ(result.value, Tensor::FromVector<float>({1, 2}));
}

TEST_F(RemoteRendezvousTest, SendFromAnotherTaskIsInvalid) {
  Status s = rendezvous_->Send(Key(kCpu1, "a"), {}, Tensor::Scalar<float>(1), false);
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find(kTask0), std::string::npos) << s;
  EXPECT_NE(s.message().find(Key(kCpu1, "a").full_key), std::string::npos) << s;
}

TEST_F(RemoteRendezvousTest, TaskNamePrefixDoesNotMatchAnotherTask) {
  auto rendezvous = std::make_shared<RemoteRendezvous>(1);
  ASSERT_TRUE(rendezvous->Initialize(nullptr, "/job:worker/replica:0/task:1").ok());
  auto key =
      Rendezvous::ParseKey(
          Rendezvous::CreateKey("/job:worker/replica:0/task:10/device:CPU:0", 1, kCpu1, "a", {}))
          .value();
  EXPECT_TRUE(IsInvalidArgument(rendezvous->Send(key, {}, Tensor::Scalar<float>(1), false)));
}

TEST_F(RemoteRendezvousTest, InitializeTwice) {
  EXPECT_TRUE(rendezvous_->Initialize(cache_.get(), kTask0).ok());
  Status s = rendezvous_->Initialize(cache_.get(), kTask1);
  EXPECT_TRUE(IsInternal(s)) << s;
}

TEST(RemoteRendezvousUninitializedTest, RecvBeforeInitializeIsInternal) {
  auto rendezvous = std::make_shared<RemoteRendezvous>(3);
  RecvResult result;
  rendezvous->RecvAsync(Key(kCpu1, "a"), {}, Collect(&result));
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(kTimeout));
  EXPECT_TRUE(IsInternal(result.status)) << result.status;
  // A peer's RecvTensor may come before the step starts here: RecvLocalAsync just waits.
  RecvResult local;
  rendezvous->RecvLocalAsync(Key(kCpu0, "b"), {}, Collect(&local));
  EXPECT_FALSE(local.done.HasBeenNotified());
  ASSERT_TRUE(rendezvous->Initialize(nullptr, kTask0).ok());
  ASSERT_TRUE(rendezvous->Send(Key(kCpu0, "b"), {}, Tensor::Scalar<float>(5), false).ok());
  ASSERT_TRUE(local.done.WaitForNotificationWithTimeout(kTimeout));
  EXPECT_TENSOR_EQ(local.value, Tensor::Scalar<float>(5));
}

TEST_F(RemoteRendezvousTest, RemoteRecvCallsTheSourceTask) {
  RecvResult result;
  rendezvous_->RecvAsync(Key(kCpu1, "edge_1"), {}, Collect(&result));
  auto call = peer_.WaitForCall();
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->request->step_id(), 42);
  EXPECT_EQ(call->request->rendezvous_key(), Key(kCpu1, "edge_1").full_key);
  EXPECT_TRUE(call->request->bulk_ok());
  call->response->tensor = Tensor::FromVector<float>({3, 4});
  call->Finish(Status::OK());
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(kTimeout));
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_TENSOR_EQ(result.value, Tensor::FromVector<float>({3, 4}));
}

TEST_F(RemoteRendezvousTest, RemoteErrorNamesTheSourceTaskAndKeepsItsCode) {
  RecvResult result;
  rendezvous_->RecvAsync(Key(kCpu1, "edge_2"), {}, Collect(&result));
  auto call = peer_.WaitForCall();
  ASSERT_NE(call, nullptr);
  call->Finish(Unavailable("connection refused"));
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(kTimeout));
  EXPECT_TRUE(IsUnavailable(result.status)) << result.status;
  EXPECT_NE(result.status.message().find("'edge_2'"), std::string::npos) << result.status;
  EXPECT_NE(result.status.message().find(kTask1), std::string::npos) << result.status;
  EXPECT_NE(result.status.message().find("connection refused"), std::string::npos);
}

TEST_F(RemoteRendezvousTest, AbortCancelsInFlightRemoteRecv) {
  RecvResult result;
  rendezvous_->RecvAsync(Key(kCpu1, "edge_3"), {}, Collect(&result));
  auto call = peer_.WaitForCall();
  ASSERT_NE(call, nullptr);
  rendezvous_->StartAbort(Aborted("the step failed elsewhere"));
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(kTimeout));
  EXPECT_TRUE(IsAborted(result.status)) << result.status;
  EXPECT_EQ(result.status.message(), "the step failed elsewhere");
  EXPECT_TRUE(call->options->IsCancelled());
  // After the abort, new receives fail at once without calling the peer.
  RecvResult late;
  rendezvous_->RecvAsync(Key(kCpu1, "edge_4"), {}, Collect(&late));
  ASSERT_TRUE(late.done.WaitForNotificationWithTimeout(kTimeout));
  EXPECT_TRUE(IsAborted(late.status)) << late.status;
}

TEST_F(RemoteRendezvousTest, StepCancellationCancelsRemoteRecv) {
  CancellationManager cancellation;
  Rendezvous::Args args;
  args.cancellation_manager = &cancellation;
  RecvResult result;
  rendezvous_->RecvAsync(Key(kCpu1, "edge_5"), args, Collect(&result));
  ASSERT_NE(peer_.WaitForCall(), nullptr);
  cancellation.StartCancel();
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(kTimeout));
  EXPECT_TRUE(IsCancelled(result.status)) << result.status;
  EXPECT_NE(result.status.message().find("edge_5"), std::string::npos) << result.status;
}

TEST_F(RemoteRendezvousTest, UnknownSourceTaskIsInternal) {
  RecvResult result;
  auto key = Rendezvous::ParseKey(
                 Rendezvous::CreateKey("/job:ps/replica:0/task:0/device:CPU:0", 1, kCpu0, "a", {}))
                 .value();
  rendezvous_->RecvAsync(key, {}, Collect(&result));
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(kTimeout));
  EXPECT_TRUE(IsInternal(result.status)) << result.status;
  EXPECT_NE(result.status.message().find("/job:ps/replica:0/task:0"), std::string::npos);
}

TEST(RendezvousMgrTest, FindOrCreateReturnsTheStepsRendezvous) {
  RendezvousMgr mgr;
  auto a = mgr.FindOrCreate(1);
  auto b = mgr.FindOrCreate(1);
  auto c = mgr.FindOrCreate(2);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_NE(a->get(), c->get());
  EXPECT_EQ((*c)->step_id(), 2);
}

TEST(RendezvousMgrTest, CleanupAbortsAndRemembersTheStep) {
  RendezvousMgr mgr(/*max_cleaned_up_steps=*/2);
  auto rendezvous = mgr.FindOrCreate(5).value();
  RecvResult result;
  rendezvous->RecvLocalAsync(Key(kCpu0, "a"), {}, Collect(&result));
  mgr.Cleanup(5);
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(kTimeout));
  EXPECT_TRUE(IsAborted(result.status)) << result.status;
  EXPECT_EQ(result.status.message(), "step 5 was cleaned up");
  auto again = mgr.FindOrCreate(5);
  EXPECT_TRUE(IsAborted(again.status())) << again.status();
  // The memory is bounded: the oldest cleaned-up step is forgotten.
  mgr.Cleanup(6);
  mgr.Cleanup(7);
  EXPECT_TRUE(mgr.FindOrCreate(5).ok());
  EXPECT_FALSE(mgr.FindOrCreate(7).ok());
}

TEST(RendezvousMgrTest, CleanupAllAbortsEveryStep) {
  RendezvousMgr mgr;
  auto first = mgr.FindOrCreate(1).value();
  auto second = mgr.FindOrCreate(2).value();
  RecvResult a, b;
  first->RecvLocalAsync(Key(kCpu0, "a"), {}, Collect(&a));
  second->RecvLocalAsync(Key(kCpu0, "a"), {}, Collect(&b));
  mgr.CleanupAll(Aborted("shutting down"));
  ASSERT_TRUE(a.done.WaitForNotificationWithTimeout(kTimeout));
  ASSERT_TRUE(b.done.WaitForNotificationWithTimeout(kTimeout));
  EXPECT_TRUE(IsAborted(a.status));
  EXPECT_TRUE(IsAborted(b.status));
  EXPECT_NE(mgr.FindOrCreate(1).value().get(), first.get());
}

}  // namespace
}  // namespace weft
