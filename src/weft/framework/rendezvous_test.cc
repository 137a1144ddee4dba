// Tests for rendezvous keys (CreateKey/ParseKey), ParsedKey copies and the blocking Recv helper,
// which runs here over a small fake Rendezvous (the real one lives in runtime/).
#include "weft/framework/rendezvous.h"

#include <chrono>
#include <map>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/mutex.h"
#include "weft/framework/cancellation.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

constexpr char kSrc[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kDst[] = "/job:worker/replica:0/task:1/device:GPU:0";

// A minimal rendezvous: one slot per key, one waiter per key. Honors the recv's cancellation
// manager unless told not to (to test Recv against implementations that ignore it).
class FakeRendezvous final : public Rendezvous {
 public:
  explicit FakeRendezvous(bool honor_cancellation = true)
      : honor_cancellation_(honor_cancellation) {}

  Status Send(const ParsedKey& key, const Args& send_args, const Tensor& value,
              bool is_dead) override {
    DoneCallback waiter;
    Args recv_args;
    {
      MutexLock lock(mu_);
      auto it = waiters_.find(key.full_key);
      if (it == waiters_.end()) {
        values_[key.full_key] = {value, is_dead};
        return Status::OK();
      }
      waiter = std::move(it->second.done);
      recv_args = it->second.args;
      waiters_.erase(it);
    }
    waiter(Status::OK(), send_args, recv_args, value, is_dead);
    return Status::OK();
  }

  void RecvAsync(const ParsedKey& key, const Args& recv_args, DoneCallback done) override {
    MutexLock lock(mu_);
    auto it = values_.find(key.full_key);
    if (it != values_.end()) {
      auto [value, is_dead] = it->second;
      values_.erase(it);
      lock.Unlock();
      done(Status::OK(), Args(), recv_args, value, is_dead);
      return;
    }
    CancellationManager* cm = honor_cancellation_ ? recv_args.cancellation_manager : nullptr;
    if (cm != nullptr) {
      std::string full_key = key.full_key;
      if (!cm->RegisterCallback(cm->NewToken(), [this, full_key] { Cancel(full_key); })) {
        lock.Unlock();
        done(Cancelled("recv of '", key.full_key, "' cancelled"), Args(), recv_args, Tensor(),
             false);
        return;
      }
    }
    waiters_[key.full_key] = {recv_args, std::move(done)};
  }

  void StartAbort(const Status&) override {}

 private:
  struct Waiter {
    Args args;
    DoneCallback done;
  };

  void Cancel(const std::string& full_key) {
    Waiter waiter;
    {
      MutexLock lock(mu_);
      auto it = waiters_.find(full_key);
      if (it == waiters_.end()) return;
      waiter = std::move(it->second);
      waiters_.erase(it);
    }
    waiter.done(Cancelled("recv of '", full_key, "' cancelled"), Args(), waiter.args, Tensor(),
                false);
  }

  const bool honor_cancellation_;
  Mutex mu_;
  std::map<std::string, std::pair<Tensor, bool>> values_ WEFT_GUARDED_BY(mu_);
  std::map<std::string, Waiter> waiters_ WEFT_GUARDED_BY(mu_);
};

Rendezvous::ParsedKey MakeKey(const std::string& name) {
  StatusOr<Rendezvous::ParsedKey> key =
      Rendezvous::ParseKey(Rendezvous::CreateKey(kSrc, 0xa1, kDst, name, FrameAndIter()));
  EXPECT_TRUE(key.ok()) << key.status();
  return *key;
}

TEST(RendezvousKeyTest, CreateKeyUsesSixteenHexDigitsAndDecimalFrame) {
  EXPECT_EQ(Rendezvous::CreateKey(kSrc, 0xa1, kDst, "edge_5_x", FrameAndIter()),
            "/job:worker/replica:0/task:0/device:CPU:0;00000000000000a1;"
            "/job:worker/replica:0/task:1/device:GPU:0;edge_5_x;0:0");
  EXPECT_EQ(Rendezvous::CreateKey(kSrc, 0xFFFFFFFFFFFFFFFFull, kDst, "t", FrameAndIter{12, 3}),
            std::string(kSrc) + ";ffffffffffffffff;" + kDst + ";t;12:3");
  EXPECT_EQ(Rendezvous::CreateKey(kSrc, 0, kDst, "t", FrameAndIter()),
            std::string(kSrc) + ";0000000000000000;" + kDst + ";t;0:0");
}

TEST(RendezvousKeyTest, ParseKeyRoundTrips) {
  const uint64_t incarnations[] = {0, 1, 0xa1, 0x0123456789abcdefull, 0xFFFFFFFFFFFFFFFFull};
  for (uint64_t incarnation : incarnations) {
    std::string key =
        Rendezvous::CreateKey(kSrc, incarnation, kDst, "edge_7_y/z", FrameAndIter{5, 1000});
    StatusOr<Rendezvous::ParsedKey> parsed = Rendezvous::ParseKey(key);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->full_key, key);
    EXPECT_EQ(parsed->src_device, kSrc);
    EXPECT_EQ(parsed->src_incarnation, incarnation);
    EXPECT_EQ(parsed->dst_device, kDst);
    EXPECT_EQ(parsed->edge_name, "edge_7_y/z");
    EXPECT_EQ(parsed->frame_iter.frame_id, 5);
    EXPECT_EQ(parsed->frame_iter.iter_id, 1000);
    EXPECT_EQ(Rendezvous::CreateKey(parsed->src_device, parsed->src_incarnation, parsed->dst_device,
                                    parsed->edge_name, parsed->frame_iter),
              key);
  }
}

TEST(RendezvousKeyTest, ParseKeyRejectsMalformedKeysNamingKeyAndProblem) {
  const std::string src(kSrc), dst(kDst), inc("00000000000000a1");
  struct Case {
    std::string key;
    std::string problem;
  };
  const Case cases[] = {
      {src + ";" + inc + ";" + dst + ";t", "has 4 ';'-separated parts"},
      {src + ";" + inc + ";" + dst + ";t;0:0;extra", "has 6 ';'-separated parts"},
      {"", "has 1 ';'-separated parts"},
      {src + ";0000000000000g01;" + dst + ";t;0:0", "source incarnation '0000000000000g01'"},
      {src + ";a1;" + dst + ";t;0:0", "source incarnation 'a1'"},
      {src + ";00000000000000A1;" + dst + ";t;0:0", "source incarnation '00000000000000A1'"},
      {src + ";000000000000000a1;" + dst + ";t;0:0", "is not 16 lower-case hex digits"},
      {"/device:CPU:0;" + inc + ";" + dst + ";t;0:0", "source device '/device:CPU:0'"},
      {"cpu0;" + inc + ";" + dst + ";t;0:0", "source device 'cpu0' is not a full device name"},
      {src + ";" + inc + ";/job:w/replica:x/task:0/device:CPU:0;t;0:0", "destination device"},
      {src + ";" + inc + ";/job:w/replica:0/task:0/device:CPU;t;0:0", "destination device"},
      {src + ";" + inc + ";/job:w/replica:0/task:0/device:CPU:0/x;t;0:0", "destination device"},
      {src + ";" + inc + ";;t;0:0", "destination device '' is not a full device name"},
      {src + ";" + inc + ";" + dst + ";;0:0", "tensor name is empty"},
      {src + ";" + inc + ";" + dst + ";t;0", "frame '0'"},
      {src + ";" + inc + ";" + dst + ";t;a:0", "frame 'a:0'"},
      {src + ";" + inc + ";" + dst + ";t;-1:0", "frame '-1:0'"},
      {src + ";" + inc + ";" + dst + ";t;0:", "frame '0:'"},
      {src + ";" + inc + ";" + dst + ";t;0:1:2", "frame '0:1:2'"},
      {src + ";" + inc + ";" + dst + ";t;99999999999999999999:0", "frame"},
  };
  for (const Case& c : cases) {
    StatusOr<Rendezvous::ParsedKey> parsed = Rendezvous::ParseKey(c.key);
    ASSERT_FALSE(parsed.ok()) << c.key;
    EXPECT_TRUE(IsInvalidArgument(parsed.status())) << parsed.status();
    EXPECT_THAT(parsed.status().message(), HasSubstr("'" + c.key + "'"));
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.problem));
  }
}

TEST(RendezvousKeyTest, CopiedParsedKeyPointsIntoItsOwnString) {
  auto original = std::make_unique<Rendezvous::ParsedKey>(MakeKey("a_fairly_long_edge_name_x"));
  Rendezvous::ParsedKey copy(*original);
  Rendezvous::ParsedKey assigned;
  assigned = *original;
  original.reset();  // the views of the copies must not point into the freed string
  for (const Rendezvous::ParsedKey* key : {&copy, &assigned}) {
    const char* begin = key->full_key.data();
    const char* end = begin + key->full_key.size();
    for (std::string_view view : {key->src_device, key->dst_device, key->edge_name}) {
      EXPECT_GE(view.data(), begin);
      EXPECT_LE(view.data() + view.size(), end);
    }
    EXPECT_EQ(key->src_device, kSrc);
    EXPECT_EQ(key->dst_device, kDst);
    EXPECT_EQ(key->edge_name, "a_fairly_long_edge_name_x");
    EXPECT_EQ(key->src_incarnation, 0xa1u);
  }
  Rendezvous::ParsedKey& self = copy;
  copy = self;
  EXPECT_EQ(copy.edge_name, "a_fairly_long_edge_name_x");
  Rendezvous::ParsedKey empty, empty_copy(empty);
  EXPECT_TRUE(empty_copy.full_key.empty());
  EXPECT_TRUE(empty_copy.edge_name.empty());
}

TEST(RendezvousRecvTest, ReturnsValueSentBefore) {
  FakeRendezvous rendezvous;
  Rendezvous::ParsedKey key = MakeKey("x");
  Tensor sent = Tensor::FromVector<float>({1, 2, 3});
  ASSERT_TRUE(rendezvous.Send(key, Rendezvous::Args(), sent, false).ok());
  Tensor received;
  bool is_dead = true;
  ASSERT_TRUE(rendezvous.Recv(key, Rendezvous::Args(), &received, &is_dead).ok());
  EXPECT_TRUE(received.SharesBufferWith(sent));
  EXPECT_FALSE(is_dead);
}

TEST(RendezvousRecvTest, WaitsForSendFromAnotherThread) {
  for (int64_t timeout_ms : {int64_t{0}, int64_t{60000}}) {
    FakeRendezvous rendezvous;
    Rendezvous::ParsedKey key = MakeKey("x");
    Tensor sent = Tensor::Scalar<int64_t>(7);
    std::thread sender([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      EXPECT_TRUE(rendezvous.Send(key, Rendezvous::Args(), sent, false).ok());
    });
    Tensor received;
    bool is_dead = true;
    Status status = rendezvous.Recv(key, Rendezvous::Args(), &received, &is_dead, timeout_ms);
    sender.join();
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_TRUE(received.SharesBufferWith(sent));
    EXPECT_FALSE(is_dead);
  }
}

TEST(RendezvousRecvTest, TimeoutIsDeadlineExceededNamingKeyAndForgetsTheWaiter) {
  FakeRendezvous rendezvous;
  Rendezvous::ParsedKey key = MakeKey("late");
  Tensor received;
  bool is_dead = false;
  Status status = rendezvous.Recv(key, Rendezvous::Args(), &received, &is_dead, 20);
  EXPECT_TRUE(IsDeadlineExceeded(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(key.full_key));
  EXPECT_FALSE(received.IsInitialized());
  // The abandoned Recv no longer waits, so a later Send is kept for the next Recv.
  Tensor sent = Tensor::Scalar<float>(1);
  ASSERT_TRUE(rendezvous.Send(key, Rendezvous::Args(), sent, false).ok());
  ASSERT_TRUE(rendezvous.Recv(key, Rendezvous::Args(), &received, &is_dead, 1000).ok());
  EXPECT_TRUE(received.SharesBufferWith(sent));
}

TEST(RendezvousRecvTest, CallbackAfterTimeoutIsSafe) {
  // An implementation that ignores cancellation calls back after Recv has returned.
  FakeRendezvous rendezvous(/*honor_cancellation=*/false);
  Rendezvous::ParsedKey key = MakeKey("late");
  Tensor received;
  bool is_dead = false;
  Status status = rendezvous.Recv(key, Rendezvous::Args(), &received, &is_dead, 10);
  EXPECT_TRUE(IsDeadlineExceeded(status)) << status;
  ASSERT_TRUE(rendezvous.Send(key, Rendezvous::Args(), Tensor::Scalar<float>(1), false).ok());
  EXPECT_FALSE(received.IsInitialized());
}

TEST(RendezvousRecvTest, StepCancellationWakesATimedRecv) {
  FakeRendezvous rendezvous;
  CancellationManager cancellation;
  Rendezvous::Args args;
  args.cancellation_manager = &cancellation;
  Rendezvous::ParsedKey key = MakeKey("never");
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    cancellation.StartCancel();
  });
  Tensor received;
  bool is_dead = false;
  auto start = std::chrono::steady_clock::now();
  Status status = rendezvous.Recv(key, args, &received, &is_dead, 60000);
  canceller.join();
  EXPECT_TRUE(IsCancelled(status)) << status;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(RendezvousRecvTest, AlreadyCancelledStepFailsAtOnce) {
  FakeRendezvous rendezvous;
  CancellationManager cancellation;
  cancellation.StartCancel();
  Rendezvous::Args args;
  args.cancellation_manager = &cancellation;
  Tensor received;
  bool is_dead = false;
  for (int64_t timeout_ms : {int64_t{0}, int64_t{60000}}) {
    Status status = rendezvous.Recv(MakeKey("x"), args, &received, &is_dead, timeout_ms);
    EXPECT_TRUE(IsCancelled(status)) << status;
  }
}

}  // namespace
}  // namespace weft
