// Tests for LocalRendezvous: both orders of Send and Recv, buffer sharing, one Send and one Recv
// per key, abort, cancellation, destruction, concurrency, and isolation between steps.
#include "weft/runtime/local_rendezvous.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/metrics.h"
#include "weft/core/notification.h"
#include "weft/framework/cancellation.h"
#include "weft/framework/device_base.h"
#include "weft/framework/resource_handle.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

constexpr char kSrc[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kDst[] = "/job:localhost/replica:0/task:0/device:CPU:1";
constexpr int64_t kWaitMs = 30000;  // bounds every blocking wait that should succeed

Rendezvous::ParsedKey Key(const std::string& name) {
  StatusOr<Rendezvous::ParsedKey> key =
      Rendezvous::ParseKey(Rendezvous::CreateKey(kSrc, 1, kDst, name, FrameAndIter()));
  EXPECT_TRUE(key.ok()) << key.status();
  return *key;
}

// What one RecvAsync callback saw.
struct Received {
  Notification called;
  std::atomic<int> calls{0};
  Status status;
  Tensor value;
  bool is_dead = false;
  Rendezvous::Args send_args;
  std::thread::id thread;

  Rendezvous::DoneCallback Callback() {
    return [this](const Status& s, const Rendezvous::Args& send_args_in, const Rendezvous::Args&,
                  const Tensor& v, bool dead) {
      status = s;
      value = v;
      is_dead = dead;
      send_args = send_args_in;
      thread = std::this_thread::get_id();
      ++calls;
      called.Notify();
    };
  }
  bool Wait() { return called.WaitForNotificationWithTimeout(std::chrono::milliseconds(kWaitMs)); }
};

TEST(LocalRendezvousTest, SendThenRecvDelivers) {
  LocalRendezvous rendezvous;
  Tensor sent = Tensor::FromVector<float>({1, 2, 3});
  ASSERT_TRUE(rendezvous.Send(Key("x"), Rendezvous::Args(), sent, false).ok());
  Received received;
  rendezvous.RecvAsync(Key("x"), Rendezvous::Args(), received.Callback());
  ASSERT_TRUE(received.called.HasBeenNotified());  // the value was there: called at once
  EXPECT_TRUE(received.status.ok()) << received.status;
  EXPECT_EQ(received.value.raw_data(), sent.raw_data());
  EXPECT_FALSE(received.is_dead);
}

TEST(LocalRendezvousTest, RecvBeforeSendDeliversWhenSent) {
  LocalRendezvous rendezvous;
  Received received;
  rendezvous.RecvAsync(Key("x"), Rendezvous::Args(), received.Callback());
  EXPECT_FALSE(received.called.HasBeenNotified());
  Tensor sent = Tensor::Scalar<int32_t>(42);
  DeviceBase device("/job:localhost/replica:0/task:0/device:CPU:0", "CPU");
  Rendezvous::Args send_args;
  send_args.device = &device;
  ASSERT_TRUE(rendezvous.Send(Key("x"), send_args, sent, false).ok());
  ASSERT_TRUE(received.called.HasBeenNotified());
  EXPECT_TRUE(received.status.ok()) << received.status;
  EXPECT_EQ(received.value.data<int32_t>()[0], 42);
  EXPECT_EQ(received.send_args.device, &device);
  EXPECT_EQ(received.thread, std::this_thread::get_id());  // the sender runs the callback
}

// Only a Recv that came before its Send waited, and only it is counted.
TEST(LocalRendezvousTest, RecvsThatWaitAreCountedInTheWaitMetric) {
  metrics::Histogram* waits = metrics::Registry::Global()
                                  .FindOrAddHistogram("weft_rendezvous_wait_seconds", "")
                                  ->WithLabels({});
  const int64_t before = waits->count();
  LocalRendezvous rendezvous;
  ASSERT_TRUE(rendezvous.Send(Key("sent first"), Rendezvous::Args(), Tensor(), false).ok());
  Received immediate;
  rendezvous.RecvAsync(Key("sent first"), Rendezvous::Args(), immediate.Callback());
  EXPECT_EQ(waits->count(), before);
  Received waited;
  rendezvous.RecvAsync(Key("sent later"), Rendezvous::Args(), waited.Callback());
  ASSERT_TRUE(rendezvous.Send(Key("sent later"), Rendezvous::Args(), Tensor(), false).ok());
  EXPECT_EQ(waits->count(), before + 1);
  EXPECT_THAT(metrics::Registry::Global().ExportText(),
              HasSubstr("# TYPE weft_rendezvous_wait_seconds histogram"));
}

TEST(LocalRendezvousTest, BlockingRecvWaitsForSendFromAnotherThread) {
  LocalRendezvous rendezvous;
  Tensor sent = Tensor::FromVector<double>({1.5, 2.5});
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(rendezvous.Send(Key("x"), Rendezvous::Args(), sent, false).ok());
  });
  Tensor value;
  bool is_dead = true;
  Status status = rendezvous.Recv(Key("x"), Rendezvous::Args(), &value, &is_dead, kWaitMs);
  sender.join();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(value.SharesBufferWith(sent));
  EXPECT_FALSE(is_dead);
}

TEST(LocalRendezvousTest, PassesTensorsWithoutCopying) {
  LocalRendezvous rendezvous;
  Tensor big(DataType::kFloat, TensorShape({256, 256}));
  ASSERT_TRUE(rendezvous.Send(Key("big"), Rendezvous::Args(), big, false).ok());
  Tensor value;
  bool is_dead = false;
  ASSERT_TRUE(rendezvous.Recv(Key("big"), Rendezvous::Args(), &value, &is_dead).ok());
  EXPECT_EQ(value.raw_data(), big.raw_data());
  EXPECT_TRUE(value.SharesBufferWith(big));

  // A resource handle passes as it is.
  ResourceHandle handle;
  handle.device = kSrc;
  handle.name = "v";
  handle.dtype = DataType::kFloat;
  Tensor resource = MakeResourceHandleTensor(handle);
  Received received;
  rendezvous.RecvAsync(Key("handle"), Rendezvous::Args(), received.Callback());
  ASSERT_TRUE(rendezvous.Send(Key("handle"), Rendezvous::Args(), resource, false).ok());
  ASSERT_TRUE(received.called.HasBeenNotified());
  ASSERT_TRUE(received.status.ok()) << received.status;
  EXPECT_EQ(received.value.dtype(), DataType::kResource);
  EXPECT_TRUE(received.value.SharesBufferWith(resource));
  StatusOr<const ResourceHandle*> got = HandleFromTensor(received.value);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)->name, "v");
}

TEST(LocalRendezvousTest, KeepsIsDead) {
  LocalRendezvous rendezvous;
  ASSERT_TRUE(rendezvous.Send(Key("a"), Rendezvous::Args(), Tensor(), true).ok());
  Received first;
  rendezvous.RecvAsync(Key("a"), Rendezvous::Args(), first.Callback());
  EXPECT_TRUE(first.status.ok());
  EXPECT_TRUE(first.is_dead);
  Received second;
  rendezvous.RecvAsync(Key("b"), Rendezvous::Args(), second.Callback());
  ASSERT_TRUE(rendezvous.Send(Key("b"), Rendezvous::Args(), Tensor(), true).ok());
  EXPECT_TRUE(second.is_dead);
}

TEST(LocalRendezvousTest, SecondSendOfAKeyIsAnErrorNamingTheKey) {
  LocalRendezvous rendezvous;
  Rendezvous::ParsedKey key = Key("dup");
  ASSERT_TRUE(rendezvous.Send(key, Rendezvous::Args(), Tensor::Scalar<float>(1), false).ok());
  Status status = rendezvous.Send(key, Rendezvous::Args(), Tensor::Scalar<float>(2), false);
  EXPECT_TRUE(IsAlreadyExists(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(key.full_key));
  // The first value is still the one received; after that, sending again is still an error.
  Tensor value;
  bool is_dead = false;
  ASSERT_TRUE(rendezvous.Recv(key, Rendezvous::Args(), &value, &is_dead).ok());
  EXPECT_EQ(value.data<float>()[0], 1);
  status = rendezvous.Send(key, Rendezvous::Args(), Tensor::Scalar<float>(3), false);
  EXPECT_TRUE(IsAlreadyExists(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(key.full_key));
}

TEST(LocalRendezvousTest, SecondRecvOfAKeyIsAnErrorNamingTheKey) {
  LocalRendezvous rendezvous;
  Rendezvous::ParsedKey key = Key("one_consumer");
  Received first, second, third;
  rendezvous.RecvAsync(key, Rendezvous::Args(), first.Callback());
  rendezvous.RecvAsync(key, Rendezvous::Args(), second.Callback());
  ASSERT_TRUE(second.called.HasBeenNotified());
  EXPECT_TRUE(IsAlreadyExists(second.status)) << second.status;
  EXPECT_THAT(second.status.message(), HasSubstr(key.full_key));
  EXPECT_FALSE(first.called.HasBeenNotified());
  ASSERT_TRUE(rendezvous.Send(key, Rendezvous::Args(), Tensor::Scalar<float>(1), false).ok());
  EXPECT_TRUE(first.status.ok());
  rendezvous.RecvAsync(key, Rendezvous::Args(), third.Callback());
  ASSERT_TRUE(third.called.HasBeenNotified());
  EXPECT_TRUE(IsAlreadyExists(third.status)) << third.status;
  EXPECT_THAT(third.status.message(), HasSubstr(key.full_key));
  EXPECT_EQ(first.calls, 1);
}

TEST(LocalRendezvousTest, AbortWakesWaitersOnOtherThreads) {
  LocalRendezvous rendezvous;
  constexpr int kThreads = 4;
  std::vector<Status> statuses(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      Tensor value;
      bool is_dead = false;
      statuses[i] =
          rendezvous.Recv(Key(StrCat("k", i)), Rendezvous::Args(), &value, &is_dead, kWaitMs);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let them wait (either way works)
  auto start = std::chrono::steady_clock::now();
  rendezvous.StartAbort(Aborted("step failed: boom"));
  for (std::thread& thread : threads) thread.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(kWaitMs / 2));
  for (const Status& status : statuses) {
    EXPECT_TRUE(IsAborted(status)) << status;
    EXPECT_THAT(status.message(), HasSubstr("boom"));
  }
  // The abort status sticks: later Sends and Recvs get it, and a second abort does not replace it.
  rendezvous.StartAbort(Cancelled("second"));
  Status send = rendezvous.Send(Key("later"), Rendezvous::Args(), Tensor::Scalar<float>(1), false);
  EXPECT_TRUE(IsAborted(send)) << send;
  Received later;
  rendezvous.RecvAsync(Key("later"), Rendezvous::Args(), later.Callback());
  ASSERT_TRUE(later.called.HasBeenNotified());
  EXPECT_TRUE(IsAborted(later.status)) << later.status;
  EXPECT_THAT(later.status.message(), HasSubstr("boom"));
}

TEST(LocalRendezvousTest, AbortDropsKeptValues) {
  LocalRendezvous rendezvous;
  Tensor sent = Tensor::Scalar<float>(1);
  ASSERT_TRUE(rendezvous.Send(Key("x"), Rendezvous::Args(), sent, false).ok());
  EXPECT_FALSE(sent.RefCountIsOne());
  rendezvous.StartAbort(Aborted("stop"));
  EXPECT_TRUE(sent.RefCountIsOne());
  Received received;
  rendezvous.RecvAsync(Key("x"), Rendezvous::Args(), received.Callback());
  EXPECT_TRUE(IsAborted(received.status)) << received.status;
}

TEST(LocalRendezvousTest, CancellationWakesAWaitingRecvWithCancelledNamingTheKey) {
  LocalRendezvous rendezvous;
  CancellationManager cancellation;
  Rendezvous::Args args;
  args.cancellation_manager = &cancellation;
  Rendezvous::ParsedKey key = Key("never_sent");
  Status status;
  std::thread receiver([&] {
    Tensor value;
    bool is_dead = false;
    status = rendezvous.Recv(key, args, &value, &is_dead);  // no timeout: only cancel wakes it
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  cancellation.StartCancel();
  receiver.join();
  EXPECT_TRUE(IsCancelled(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(key.full_key));

  // A cancelled Recv is forgotten: the key can still be sent and received.
  ASSERT_TRUE(rendezvous.Send(key, Rendezvous::Args(), Tensor::Scalar<float>(5), false).ok());
  Tensor value;
  bool is_dead = false;
  ASSERT_TRUE(rendezvous.Recv(key, Rendezvous::Args(), &value, &is_dead).ok());
  EXPECT_EQ(value.data<float>()[0], 5);
}

TEST(LocalRendezvousTest, AlreadyCancelledStepFailsAWaitingRecvButDeliversAKeptValue) {
  LocalRendezvous rendezvous;
  CancellationManager cancellation;
  cancellation.StartCancel();
  Rendezvous::Args args;
  args.cancellation_manager = &cancellation;
  Received waits;
  rendezvous.RecvAsync(Key("a"), args, waits.Callback());
  ASSERT_TRUE(waits.called.HasBeenNotified());
  EXPECT_TRUE(IsCancelled(waits.status)) << waits.status;
  EXPECT_THAT(waits.status.message(), HasSubstr(Key("a").full_key));

  ASSERT_TRUE(rendezvous.Send(Key("b"), Rendezvous::Args(), Tensor::Scalar<float>(1), false).ok());
  Received kept;
  rendezvous.RecvAsync(Key("b"), args, kept.Callback());
  EXPECT_TRUE(kept.status.ok()) << kept.status;
}

TEST(LocalRendezvousTest, DeliveredRecvLeavesTheCancellationManager) {
  LocalRendezvous rendezvous;
  CancellationManager cancellation;
  Rendezvous::Args args;
  args.cancellation_manager = &cancellation;
  Received received;
  rendezvous.RecvAsync(Key("x"), args, received.Callback());
  ASSERT_TRUE(rendezvous.Send(Key("x"), Rendezvous::Args(), Tensor::Scalar<float>(1), false).ok());
  EXPECT_TRUE(received.status.ok());
  // The Recv's callback (the manager's first token) is gone, so cancelling does not call the
  // delivered Recv again.
  EXPECT_FALSE(cancellation.DeregisterCallback(0));
  cancellation.StartCancel();
  EXPECT_EQ(received.calls, 1);
  EXPECT_TRUE(received.status.ok());
}

TEST(LocalRendezvousTest, DestructionFailsWaitingRecvs) {
  Received received;
  CancellationManager cancellation;
  Rendezvous::Args args;
  args.cancellation_manager = &cancellation;
  {
    LocalRendezvous rendezvous;
    rendezvous.RecvAsync(Key("orphan"), args, received.Callback());
    EXPECT_FALSE(received.called.HasBeenNotified());
  }
  ASSERT_TRUE(received.called.HasBeenNotified());
  EXPECT_TRUE(IsCancelled(received.status)) << received.status;
  EXPECT_THAT(received.status.message(), HasSubstr("rendezvous destroyed"));
  EXPECT_THAT(received.status.message(), HasSubstr(Key("orphan").full_key));
  cancellation.StartCancel();  // must not reach the destroyed rendezvous
  EXPECT_EQ(received.calls, 1);
}

TEST(LocalRendezvousTest, CallbackMayUseTheRendezvous) {
  LocalRendezvous rendezvous;
  Received second;
  rendezvous.RecvAsync(
      Key("first"), Rendezvous::Args(),
      [&](const Status& status, const Rendezvous::Args&, const Rendezvous::Args&,
          const Tensor& value, bool) {
        ASSERT_TRUE(status.ok());
        EXPECT_TRUE(rendezvous.Send(Key("second"), Rendezvous::Args(), value, false).ok());
      });
  rendezvous.RecvAsync(Key("second"), Rendezvous::Args(), second.Callback());
  ASSERT_TRUE(
      rendezvous.Send(Key("first"), Rendezvous::Args(), Tensor::Scalar<float>(3), false).ok());
  ASSERT_TRUE(second.called.HasBeenNotified());
  EXPECT_EQ(second.value.data<float>()[0], 3);
}

TEST(LocalRendezvousTest, ManyKeysFromSeveralThreads) {
  LocalRendezvous rendezvous;
  constexpr int kPairs = 4;
  constexpr int kKeysPerThread = 500;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kPairs; ++t) {
    threads.emplace_back([&, t] {  // sender
      for (int i = 0; i < kKeysPerThread; ++i) {
        Tensor value = Tensor::Scalar<int64_t>(t * kKeysPerThread + i);
        if (!rendezvous.Send(Key(StrCat("t", t, "_", i)), Rendezvous::Args(), value, false).ok()) {
          ++failures;
        }
      }
    });
    threads.emplace_back([&, t] {  // receiver, alternating blocking and asynchronous Recvs
      for (int i = 0; i < kKeysPerThread; ++i) {
        Tensor value;
        bool is_dead = false;
        Rendezvous::ParsedKey key = Key(StrCat("t", t, "_", i));
        if (i % 2 == 0) {
          if (!rendezvous.Recv(key, Rendezvous::Args(), &value, &is_dead, kWaitMs).ok()) {
            ++failures;
            continue;
          }
        } else {
          auto received = std::make_shared<Received>();
          rendezvous.RecvAsync(key, Rendezvous::Args(), received->Callback());
          if (!received->Wait() || !received->status.ok()) {
            ++failures;
            continue;
          }
          value = received->value;
        }
        if (value.data<int64_t>()[0] != t * kKeysPerThread + i) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures, 0);
}

TEST(LocalRendezvousTest, TwoStepsDoNotSeeEachOthersKeys) {
  LocalRendezvous step1, step2;
  ASSERT_TRUE(step1.Send(Key("x"), Rendezvous::Args(), Tensor::Scalar<float>(1), false).ok());
  ASSERT_TRUE(step2.Send(Key("y"), Rendezvous::Args(), Tensor::Scalar<float>(2), false).ok());
  Tensor value;
  bool is_dead = false;
  Status status = step2.Recv(Key("x"), Rendezvous::Args(), &value, &is_dead, 20);
  EXPECT_TRUE(IsDeadlineExceeded(status)) << status;
  status = step1.Recv(Key("y"), Rendezvous::Args(), &value, &is_dead, 20);
  EXPECT_TRUE(IsDeadlineExceeded(status)) << status;
  // Each step's own key is still there, and the same key may be used once in each step.
  ASSERT_TRUE(step1.Recv(Key("x"), Rendezvous::Args(), &value, &is_dead, kWaitMs).ok());
  EXPECT_EQ(value.data<float>()[0], 1);
  ASSERT_TRUE(step2.Send(Key("x"), Rendezvous::Args(), Tensor::Scalar<float>(3), false).ok());
  ASSERT_TRUE(step2.Recv(Key("x"), Rendezvous::Args(), &value, &is_dead, kWaitMs).ok());
  EXPECT_EQ(value.data<float>()[0], 3);
}

}  // namespace
}  // namespace weft
