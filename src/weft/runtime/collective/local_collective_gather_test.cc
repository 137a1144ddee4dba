// Tests of LocalCollectiveExecutor's broadcast and all-gather: results from every source rank and
// in rank order whatever the arrival order, buffer sharing among host-memory devices and copies
// for devices with memory of their own (TEST_ARENA), the errors (mismatches, two sources or none,
// a different collective on the same keys, duplicate and late members), abort, and many instances
// at once. Members that must race run on threads of their own; members whose arrival order a test
// relies on join one after another from the test's thread (no member blocks).
#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "weft/core/notification.h"
#include "weft/framework/copy_tensor.h"
#include "weft/runtime/collective/local_collective_executor.h"
#include "weft/runtime/collective/shuffled_members.h"
#include "weft/runtime/cpu_device.h"
#include "weft/testing/tensor_matchers.h"
#include "weft/testing/test_arena_device.h"

namespace weft {
namespace {

constexpr auto kWait = std::chrono::seconds(20);

std::string Name(const std::string& type, int index) {
  return StrCat("/job:localhost/replica:0/task:0/device:", type, ":", index);
}

CollectiveParams Group(int size, int64_t instance_key) {
  CollectiveParams params;
  params.group_key = 7;
  params.group_size = size;
  params.instance_key = instance_key;
  return params;
}

std::string Label(int64_t instance_key) {
  return StrCat("collective instance (group_key 7, instance_key ", instance_key, ")");
}

// One member's call: `value` is a broadcast source's input, or the result.
struct Member {
  Status status;
  Tensor value;
  Notification done;
  StatusCallback Done() {
    return [this](const Status& s) {
      status = s;
      done.Notify();
    };
  }
};

class LocalCollectiveGatherTest : public ::testing::Test {
 protected:
  // CPU:0..count-1, each with one intra-op thread.
  std::vector<DeviceBase*> Cpus(int count) {
    std::vector<DeviceBase*> cpus;
    while (static_cast<int>(owned_.size()) < count) {
      owned_.push_back(std::make_unique<CpuDevice>(Name("CPU", owned_.size()), 1));
    }
    for (int i = 0; i < count; ++i) cpus.push_back(owned_[i].get());
    return cpus;
  }

  // A source sends member->value; receivers expect float32 `shape`.
  void Broadcast(DeviceBase* device, bool is_source, int group_size, int64_t instance_key,
                 Member* member, const TensorShape& shape = TensorShape({2})) {
    executor_.BroadcastAsync(Group(group_size, instance_key), device, is_source,
                             is_source ? member->value.dtype() : DataType::kFloat, shape,
                             &member->value, member->Done());
  }
  void AllGather(DeviceBase* device, const Tensor& input, int group_size, int64_t instance_key,
                 Member* member) {
    executor_.AllGatherAsync(Group(group_size, instance_key), device, input, &member->value,
                             member->Done());
  }

  // Waits, bounded, for every member; a member that never finishes fails the test.
  static void WaitAll(std::vector<Member>& members) {
    for (size_t m = 0; m < members.size(); ++m) {
      ASSERT_TRUE(members[m].done.WaitForNotificationWithTimeout(kWait)) << "member " << m;
    }
  }

  // Each member must have failed with InvalidArgument naming the instance and each of `texts`.
  static void ExpectAllFailWith(const std::vector<Member>& members, int64_t instance_key,
                                const std::vector<std::string>& texts) {
    for (const Member& member : members) {
      ASSERT_TRUE(member.done.HasBeenNotified());
      EXPECT_TRUE(IsInvalidArgument(member.status)) << member.status;
      for (const std::string& text : texts) {
        EXPECT_NE(member.status.message().find(text), std::string::npos)
            << member.status << " lacks " << text;
      }
      EXPECT_NE(member.status.message().find(Label(instance_key)), std::string::npos)
          << member.status;
    }
  }

  // Broadcasts a [2, 3] tensor of T from each of `n` CPUs in turn (instance first_instance +
  // source), the members racing on threads of their own.
  template <typename T>
  void CheckBroadcastFromEveryRank(int n, int64_t first_instance) {
    constexpr DataType kType = DataTypeToEnum<T>::value;
    SCOPED_TRACE(StrCat(DataTypeName(kType), " over ", n));
    std::vector<DeviceBase*> cpus = Cpus(n);
    for (int source = 0; source < n; ++source) {
      std::vector<Member> members(n);
      Tensor sent = Tensor::FromVector<T>({T(source), 2, 3, 40, 5, T(-6)}, TensorShape({2, 3}));
      members[source].value = sent;
      std::vector<std::thread> threads;
      for (int m = 0; m < n; ++m) {
        threads.emplace_back([&, m] {
          executor_.BroadcastAsync(Group(n, first_instance + source), cpus[m], m == source, kType,
                                   TensorShape({2, 3}), &members[m].value, members[m].Done());
        });
      }
      for (auto& thread : threads) thread.join();
      WaitAll(members);
      for (int m = 0; m < n; ++m) {
        ASSERT_TRUE(members[m].status.ok()) << members[m].status;
        EXPECT_TENSOR_EQ(members[m].value, sent);
        // Host-memory receivers share the source's buffer; the source keeps its own.
        EXPECT_TRUE(members[m].value.SharesBufferWith(sent)) << "member " << m;
      }
    }
  }

  std::vector<std::unique_ptr<DeviceBase>> owned_;
  LocalCollectiveExecutor executor_;
};

TEST_F(LocalCollectiveGatherTest, BroadcastsFromEveryRankSharingTheSourceBuffer) {
  CheckBroadcastFromEveryRank<float>(3, 100);
  CheckBroadcastFromEveryRank<double>(2, 200);
  CheckBroadcastFromEveryRank<int32_t>(4, 300);
  CheckBroadcastFromEveryRank<int64_t>(3, 400);
}

TEST_F(LocalCollectiveGatherTest, BroadcastOfAGroupOfOneIsItsSource) {
  std::vector<Member> members(1);
  members[0].value = Tensor::FromVector<float>({1, 2});
  Tensor sent = members[0].value;
  Broadcast(Cpus(1)[0], /*is_source=*/true, 1, 1, &members[0]);
  ASSERT_TRUE(members[0].done.HasBeenNotified());  // no waiting
  EXPECT_TRUE(members[0].status.ok()) << members[0].status;
  EXPECT_TRUE(members[0].value.SharesBufferWith(sent));
}

TEST_F(LocalCollectiveGatherTest, BroadcastMismatchesFailEveryMember) {
  std::vector<DeviceBase*> cpus = Cpus(4);
  // A receiver expecting another shape, after the source: names both devices and both values.
  std::vector<Member> members(3);
  members[0].value = Tensor::FromVector<float>({1, 2});
  Broadcast(cpus[0], true, 4, 1, &members[0]);
  Broadcast(cpus[1], false, 4, 1, &members[1]);
  Broadcast(cpus[2], false, 4, 1, &members[2], TensorShape({3}));
  ExpectAllFailWith(members, 1,
                    {StrCat("member on device '", Name("CPU", 2), "' expects float32 [3]"),
                     StrCat("member on device '", Name("CPU", 0), "' sends float32 [2]")});
  // A late member of the failed instance fails at once with the same error.
  std::vector<Member> late(1);
  Broadcast(cpus[3], false, 4, 1, &late[0]);
  ExpectAllFailWith(late, 1, {"expects float32 [3]"});

  // A source sending another dtype than the receiver (first to join) expects.
  std::vector<Member> dtypes(2);
  dtypes[1].value = Tensor::FromVector<double>({1, 2});
  Broadcast(cpus[0], false, 2, 2, &dtypes[0]);
  Broadcast(cpus[1], true, 2, 2, &dtypes[1]);
  ExpectAllFailWith(dtypes, 2, {"sends float64 [2]", "expects float32 [2]", Name("CPU", 0)});

  // A group_size mismatch.
  std::vector<Member> sizes(2);
  sizes[0].value = Tensor::FromVector<float>({1, 2});
  Broadcast(cpus[0], true, 3, 3, &sizes[0]);
  Broadcast(cpus[1], false, 2, 3, &sizes[1]);
  ExpectAllFailWith(sizes, 3, {"group_size 2", "has 3", Name("CPU", 0), Name("CPU", 1)});
}

TEST_F(LocalCollectiveGatherTest, TwoSourcesOrNoneFailEveryMember) {
  std::vector<DeviceBase*> cpus = Cpus(3);
  std::vector<Member> two(2);
  two[0].value = Tensor::FromVector<float>({1, 2});
  two[1].value = Tensor::FromVector<float>({3, 4});
  Broadcast(cpus[0], true, 3, 1, &two[0]);
  Broadcast(cpus[1], true, 3, 1, &two[1]);
  ExpectAllFailWith(two, 1,
                    {StrCat("members on devices '", Name("CPU", 0), "' and '", Name("CPU", 1),
                            "' are both the source")});
  // No source: found when the last member fills the group, and every member is named.
  std::vector<Member> none(3);
  for (int m = 0; m < 3; ++m) Broadcast(cpus[m], false, 3, 2, &none[m]);
  ExpectAllFailWith(none, 2,
                    {"none of the 3 members of the broadcast is its source", Name("CPU", 0),
                     Name("CPU", 1), Name("CPU", 2)});
  std::vector<Member> alone(1);
  Broadcast(cpus[0], false, 1, 3, &alone[0]);
  ExpectAllFailWith(alone, 3, {"none of the 1 members"});
}

TEST_F(LocalCollectiveGatherTest, ADifferentCollectiveOnTheSameKeysFailsEveryMember) {
  std::vector<DeviceBase*> cpus = Cpus(3);
  // An all-reduce first, then a broadcast on its keys.
  std::vector<Member> members(2);
  std::vector<Tensor> sums;
  CollectiveParams reduce = Group(2, 1);
  reduce.merge_op = "Add";
  reduce.final_op = "Id";
  executor_.AllReduceAsync(reduce, cpus[0], {Tensor::FromVector<float>({1})}, &sums,
                           members[0].Done());
  members[1].value = Tensor::FromVector<float>({1, 2});
  Broadcast(cpus[1], true, 2, 1, &members[1]);
  ExpectAllFailWith(members, 1,
                    {StrCat("member on device '", Name("CPU", 1), "' calls broadcast"),
                     StrCat("member on device '", Name("CPU", 0), "' calls all-reduce")});
  // A broadcast, then an all-gather, then an all-reduce: the first mismatch fails the instance.
  std::vector<Member> mixed(3);
  mixed[0].value = Tensor::FromVector<float>({1, 2});
  Broadcast(cpus[0], true, 3, 2, &mixed[0]);
  AllGather(cpus[1], Tensor::FromVector<float>({1, 2}), 3, 2, &mixed[1]);
  CollectiveParams late = reduce;
  late.instance_key = 2;
  late.group_size = 3;
  executor_.AllReduceAsync(late, cpus[2], {Tensor::FromVector<float>({1})}, &sums, mixed[2].Done());
  ExpectAllFailWith(mixed, 2, {"calls all-gather, but member on device", "calls broadcast"});
}

TEST_F(LocalCollectiveGatherTest, DuplicateAndLateMembersFail) {
  std::vector<DeviceBase*> cpus = Cpus(3);
  std::vector<Member> twice(2);
  twice[0].value = Tensor::FromVector<float>({1, 2});
  Broadcast(cpus[0], true, 3, 1, &twice[0]);
  Broadcast(cpus[0], false, 3, 1, &twice[1]);
  ExpectAllFailWith(twice, 1, {StrCat("device '", Name("CPU", 0), "' joined twice")});

  std::vector<Member> full(2);
  AllGather(cpus[0], Tensor::FromVector<float>({1}), 2, 2, &full[0]);
  AllGather(cpus[1], Tensor::FromVector<float>({2}), 2, 2, &full[1]);
  WaitAll(full);
  ASSERT_TRUE(full[0].status.ok()) << full[0].status;
  std::vector<Member> late(1);
  AllGather(cpus[2], Tensor::FromVector<float>({3}), 2, 2, &late[0]);
  ExpectAllFailWith(late, 2, {StrCat("device '", Name("CPU", 2), "' joined after all members")});
}

TEST_F(LocalCollectiveGatherTest, AllGatherConcatenatesInDeviceOrderWhateverTheArrival) {
  std::vector<DeviceBase*> cpus = Cpus(3);
  // inputs[d]: CPU:d's rows.
  std::vector<Tensor> inputs = {
      Tensor::FromVector<float>({0, 1, 2, 3, 4, 5}, TensorShape({2, 3})),
      Tensor::FromVector<float>({10, 11, 12, 13, 14, 15}, TensorShape({2, 3})),
      Tensor::FromVector<float>({20, 21, 22, 23, 24, 25}, TensorShape({2, 3}))};
  Tensor expected = Tensor::FromVector<float>(
      {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23, 24, 25}, TensorShape({6, 3}));
  std::vector<int> order = {0, 1, 2};
  int64_t instance = 0;
  do {
    ++instance;
    SCOPED_TRACE(StrCat("arrival ", order[0], order[1], order[2]));
    std::vector<Member> members(3);
    for (int d : order) AllGather(cpus[d], inputs[d], 3, instance, &members[d]);
    WaitAll(members);
    for (int d = 0; d < 3; ++d) {
      ASSERT_TRUE(members[d].status.ok()) << members[d].status;
      EXPECT_TENSOR_EQ(members[d].value, expected);
      // One fresh buffer, shared by every member.
      EXPECT_TRUE(members[d].value.SharesBufferWith(members[0].value));
      for (const Tensor& input : inputs) EXPECT_FALSE(members[d].value.SharesBufferWith(input));
    }
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST_F(LocalCollectiveGatherTest, AllGatherOfOtherDtypesAndOfAGroupOfOne) {
  std::vector<DeviceBase*> cpus = Cpus(2);
  std::vector<Member> ints(2);
  AllGather(cpus[1], Tensor::FromVector<int64_t>({3}), 2, 1, &ints[1]);
  AllGather(cpus[0], Tensor::FromVector<int64_t>({-1}), 2, 1, &ints[0]);
  WaitAll(ints);
  ASSERT_TRUE(ints[0].status.ok()) << ints[0].status;
  EXPECT_TENSOR_EQ(ints[1].value, Tensor::FromVector<int64_t>({-1, 3}));
  // Empty rows concatenate to empty rows.
  std::vector<Member> empty(2);
  for (int d = 0; d < 2; ++d)
    AllGather(cpus[d], Tensor(DataType::kDouble, {0, 4}), 2, 2, &empty[d]);
  WaitAll(empty);
  ASSERT_TRUE(empty[0].status.ok()) << empty[0].status;
  EXPECT_EQ(empty[1].value.shape(), TensorShape({0, 4}));
  std::vector<Member> alone(1);
  Tensor input = Tensor::FromVector<float>({7, 8});
  AllGather(cpus[0], input, 1, 3, &alone[0]);
  ASSERT_TRUE(alone[0].done.HasBeenNotified());
  ASSERT_TRUE(alone[0].status.ok()) << alone[0].status;
  EXPECT_TRUE(alone[0].value.SharesBufferWith(input));
}

TEST_F(LocalCollectiveGatherTest, AllGatherMismatchesFailEveryMember) {
  std::vector<DeviceBase*> cpus = Cpus(3);
  std::vector<Member> shapes(2);
  AllGather(cpus[0], Tensor::FromVector<float>({1, 2}), 3, 1, &shapes[0]);
  AllGather(cpus[1], Tensor::FromVector<float>({1, 2, 3}), 3, 1, &shapes[1]);
  ExpectAllFailWith(shapes, 1,
                    {StrCat("member on device '", Name("CPU", 1), "' has input of shape [3]"),
                     StrCat("member on device '", Name("CPU", 0), "' has [2]")});
  std::vector<Member> dtypes(2);
  AllGather(cpus[0], Tensor::FromVector<float>({1, 2}), 2, 2, &dtypes[0]);
  AllGather(cpus[1], Tensor::FromVector<int32_t>({1, 2}), 2, 2, &dtypes[1]);
  ExpectAllFailWith(dtypes, 2, {"input of dtype int32", "has float32"});
  std::vector<Member> scalar(1);
  AllGather(cpus[2], Tensor::Scalar<float>(1), 2, 3, &scalar[0]);
  ExpectAllFailWith(scalar, 3, {"gives a scalar", Name("CPU", 2)});
}

TEST_F(LocalCollectiveGatherTest, AbortFailsWaitingMembersAndLaterOnes) {
  std::vector<DeviceBase*> cpus = Cpus(3);
  std::vector<Member> waiting(2);
  waiting[0].value = Tensor::FromVector<float>({1, 2});
  Broadcast(cpus[0], true, 3, 1, &waiting[0]);
  AllGather(cpus[1], Tensor::FromVector<float>({1}), 3, 2, &waiting[1]);
  EXPECT_FALSE(waiting[0].done.HasBeenNotified());
  EXPECT_FALSE(waiting[1].done.HasBeenNotified());
  std::thread aborter([&] { executor_.StartAbort(Cancelled("step 3 was cancelled")); });
  aborter.join();
  WaitAll(waiting);
  std::vector<Member> late(2);
  Broadcast(cpus[2], false, 3, 1, &late[0]);
  AllGather(cpus[2], Tensor::FromVector<float>({1}), 3, 9, &late[1]);
  for (const auto* group : {&waiting, &late}) {
    for (size_t m = 0; m < group->size(); ++m) {
      const Status& status = (*group)[m].status;
      EXPECT_TRUE(IsCancelled(status)) << status;
      EXPECT_NE(status.message().find("aborted by: step 3 was cancelled"), std::string::npos)
          << status;
      EXPECT_NE(status.message().find("collective instance (group_key 7"), std::string::npos)
          << status;
    }
  }
}

// Two TEST_ARENA devices (memory of their own) and two CPUs; rank order is CPU:0, CPU:1,
// TEST_ARENA:0, TEST_ARENA:1.
class LocalCollectiveArenaTest : public LocalCollectiveGatherTest {
 protected:
  void SetUp() override {
    arenas_.push_back(testing::NewTestArenaDevice(Name("TEST_ARENA", 0)));
    arenas_.push_back(testing::NewTestArenaDevice(Name("TEST_ARENA", 1)));
    std::vector<DeviceBase*> cpus = Cpus(2);
    devices_ = {arenas_[0].get(), arenas_[1].get(), cpus[0], cpus[1]};
  }
  // `host` placed on devices_[d] (a copy for an arena, itself for a CPU).
  Tensor On(int d, const Tensor& host) {
    auto placed = CopyTensor(nullptr, devices_[d], {}, host);
    EXPECT_TRUE(placed.ok()) << placed.status();
    return placed.ok() ? *placed : Tensor();
  }

  std::vector<std::unique_ptr<Device>> arenas_;
  std::vector<DeviceBase*> devices_;  // arena 0, arena 1, CPU:0, CPU:1
};

TEST_F(LocalCollectiveArenaTest, BroadcastCopiesOnlyIntoAndOutOfArenas) {
  const Tensor value = Tensor::FromVector<float>({1, -2, 3, 4, 5, 6, 7, 8});
  // From CPU:0: CPU:1 shares its buffer, each arena gets a copy in its own memory.
  testing::ResetArenaCopyStats();
  std::vector<Member> members(4);
  members[2].value = value;
  for (int d : {0, 2, 1, 3}) Broadcast(devices_[d], d == 2, 4, 1, &members[d], {8});
  WaitAll(members);
  for (int d = 0; d < 4; ++d) {
    ASSERT_TRUE(members[d].status.ok()) << members[d].status;
    EXPECT_TENSOR_EQ(members[d].value, value);
  }
  EXPECT_TRUE(members[3].value.SharesBufferWith(value));
  EXPECT_EQ(members[0].value.allocator(), devices_[0]->GetAllocator());
  EXPECT_EQ(members[1].value.allocator(), devices_[1]->GetAllocator());
  testing::ArenaCopyStats copies = testing::GetArenaCopyStats();
  EXPECT_EQ(copies.host_to_device, 2);
  EXPECT_EQ(copies.total(), 2);

  // From arena 0: its value is staged in host memory once, the CPUs share that copy, arena 1
  // gets its own, and the source's value stays where it was.
  Tensor on_arena = On(0, value);
  testing::ResetArenaCopyStats();
  std::vector<Member> from_arena(4);
  from_arena[0].value = on_arena;
  for (int d : {3, 1, 2, 0}) Broadcast(devices_[d], d == 0, 4, 2, &from_arena[d], {8});
  WaitAll(from_arena);
  for (int d = 0; d < 4; ++d) {
    ASSERT_TRUE(from_arena[d].status.ok()) << from_arena[d].status;
    EXPECT_TENSOR_EQ(from_arena[d].value, value);
  }
  EXPECT_TRUE(from_arena[0].value.SharesBufferWith(on_arena));
  EXPECT_TRUE(from_arena[2].value.SharesBufferWith(from_arena[3].value));
  EXPECT_TRUE(from_arena[2].value.IsInHostMemory());
  EXPECT_EQ(from_arena[1].value.allocator(), devices_[1]->GetAllocator());
  copies = testing::GetArenaCopyStats();
  EXPECT_EQ(copies.device_to_host, 1);
  EXPECT_EQ(copies.host_to_device, 1);
  EXPECT_EQ(copies.total(), 2);
}

TEST_F(LocalCollectiveArenaTest, AllGatherStagesArenaInputsAndCopiesTheResultBack) {
  std::vector<Tensor> inputs;
  for (int d = 0; d < 4; ++d) inputs.push_back(Tensor::FromVector<double>({d * 1.0, d + 0.5}));
  testing::ResetArenaCopyStats();
  std::vector<Tensor> placed;
  for (int d = 0; d < 4; ++d) placed.push_back(On(d, inputs[d]));
  testing::ResetArenaCopyStats();
  std::vector<Member> members(4);
  for (int d = 0; d < 4; ++d) AllGather(devices_[d], placed[d], 4, 1, &members[d]);
  WaitAll(members);
  // Rank order: CPU:0 (device 2), CPU:1 (3), arena 0 (0), arena 1 (1).
  Tensor expected = Tensor::FromVector<double>({2, 2.5, 3, 3.5, 0, 0.5, 1, 1.5});
  for (int d = 0; d < 4; ++d) {
    ASSERT_TRUE(members[d].status.ok()) << members[d].status;
    EXPECT_TENSOR_EQ(members[d].value, expected);
  }
  EXPECT_TRUE(members[2].value.SharesBufferWith(members[3].value));
  EXPECT_EQ(members[0].value.allocator(), devices_[0]->GetAllocator());
  EXPECT_EQ(members[1].value.allocator(), devices_[1]->GetAllocator());
  testing::ArenaCopyStats copies = testing::GetArenaCopyStats();
  EXPECT_EQ(copies.device_to_host, 2);
  EXPECT_EQ(copies.host_to_device, 2);
  EXPECT_EQ(copies.device_to_device, 0);
}

TEST_F(LocalCollectiveGatherTest, ManyInstancesRunConcurrently) {
  constexpr int kMembers = 4;
  constexpr int kInstances = 40;
  std::vector<DeviceBase*> cpus = Cpus(kMembers);
  std::mt19937 rng(11);
  // Even instances broadcast from member k % kMembers; odd ones all-gather. inputs[k][m]: member
  // m's input (a broadcast's receivers have none).
  std::vector<std::vector<Tensor>> inputs(kInstances);
  for (int k = 0; k < kInstances; ++k) {
    for (int m = 0; m < kMembers; ++m) {
      std::vector<float> values(1 + k * 50);
      for (float& v : values) v = static_cast<float>(rng() % 1000);
      inputs[k].push_back(Tensor::FromVector<float>(values));
    }
  }
  std::vector<std::vector<Member>> results(kInstances);
  for (auto& instance : results) instance = std::vector<Member>(kMembers);
  testing::JoinInShuffledOrders(kMembers, kInstances, rng, [&](int m, int k) {
    Member* member = &results[k][m];
    if (k % 2 == 1) {
      AllGather(cpus[m], inputs[k][m], kMembers, 500 + k, member);
      return;
    }
    const bool source = m == k / 2 % kMembers;
    if (source) member->value = inputs[k][m];
    Broadcast(cpus[m], source, kMembers, 500 + k, member, inputs[k][m].shape());
  });
  for (int k = 0; k < kInstances; ++k) {
    WaitAll(results[k]);
    std::vector<float> gathered;
    for (int m = 0; m < kMembers; ++m) {
      const float* data = inputs[k][m].data<float>();
      gathered.insert(gathered.end(), data, data + inputs[k][m].NumElements());
    }
    Tensor expected =
        k % 2 == 1 ? Tensor::FromVector<float>(gathered) : inputs[k][k / 2 % kMembers];
    for (int m = 0; m < kMembers; ++m) {
      ASSERT_TRUE(results[k][m].status.ok()) << k << " " << m << " " << results[k][m].status;
      EXPECT_TENSOR_EQ(results[k][m].value, expected);
    }
  }
}

}  // namespace
}  // namespace weft
