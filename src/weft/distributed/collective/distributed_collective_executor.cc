// DistributedCollectiveExecutor (see the header): local members join per instance under one lock;
// the member completing the local part hands one operation to the group's thread.
#include "weft/distributed/collective/distributed_collective_executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "weft/core/metrics.h"
#include "weft/core/str_util.h"
#include "weft/distributed/collective/device_staging.h"
#include "weft/distributed/collective/distributed_collective_executor_mgr.h"
#include "weft/framework/device_base.h"

namespace weft {
namespace {

using Member = DistributedCollectiveExecutor::Member;
using Kind = DistributedCollectiveExecutor::Kind;

std::string InstanceLabel(const CollectiveParams& params) {
  return StrCat("collective instance (group_key ", params.group_key, ", instance_key ",
                params.instance_key, ")");
}

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kAllReduce:
      return "all-reduce";
    case Kind::kBroadcast:
      return "broadcast";
    case Kind::kAllGather:
      return "all-gather";
  }
  return "collective";
}

// Checks that `member` agrees with the members that joined before it.
Status CheckLocalMember(const std::string& label, Kind kind, const std::vector<Member>& joined,
                        const Member& member) {
  for (const Member& other : joined) {
    if (other.device->name() == member.device->name()) {
      return InvalidArgument(label, ": device '", member.device->name(), "' joined twice");
    }
    if (kind == Kind::kBroadcast && other.is_source && member.is_source) {
      return InvalidArgument(label, ": devices '", other.device->name(), "' and '",
                             member.device->name(), "' are both the broadcast's source");
    }
  }
  if (joined.empty() || kind == Kind::kAllReduce) return Status::OK();
  const Member& first = joined.front();
  if (first.dtype != member.dtype || !(first.shape == member.shape)) {
    return InvalidArgument(label, ": device '", member.device->name(), "' has ",
                           DataTypeName(member.dtype), " ", member.shape, ", but device '",
                           first.device->name(), "' has ", DataTypeName(first.dtype), " ",
                           first.shape);
  }
  return Status::OK();
}

// The local members' inputs concatenated along dimension 0 in device-name order (the group's
// member order within a task).
StatusOr<Tensor> ConcatenateLocal(std::vector<Member>& members) {
  std::sort(members.begin(), members.end(),
            [](const Member& a, const Member& b) { return a.device->name() < b.device->name(); });
  const Tensor& first = members[0].values[0];
  TensorShape shape = first.shape();
  shape.set_dim(0, first.dim_size(0) * static_cast<int64_t>(members.size()));
  WEFT_ASSIGN_OR_RETURN(Tensor block, Tensor::Allocate(first.dtype(), shape));
  char* out = static_cast<char*>(block.raw_data());
  for (const Member& member : members) {
    const Tensor& input = member.values[0];
    std::memcpy(out, input.raw_data(), input.TotalBytes());
    out += input.TotalBytes();
  }
  return block;
}

// A broadcast across processes: the tasks first learn which one holds the source (an all-gather
// of one flag each), then the source's task sends its value.
Status BroadcastAcrossProcesses(CollectiveTransport& transport, const TransportOp& identity,
                                const std::vector<Member>& members, Tensor* result) {
  const Member* source = nullptr;
  for (const Member& member : members) {
    if (member.is_source) source = &member;
  }
  WEFT_ASSIGN_OR_RETURN(Tensor flag, Tensor::Allocate(DataType::kFloat, TensorShape({1})));
  flag.data<float>()[0] = source != nullptr ? 1.0f : 0.0f;
  Tensor flags;
  WEFT_RETURN_IF_ERROR(transport.AllGather(identity, flag, &flags));
  int root = -1;
  int roots = 0;
  for (int64_t rank = 0; rank < flags.NumElements(); ++rank) {
    if (flags.data<float>()[rank] != 0.0f) {
      root = static_cast<int>(rank);
      ++roots;
    }
  }
  if (roots != 1) {
    return InvalidArgument(identity.label, ": ", roots,
                           " tasks hold a broadcast source; exactly one must");
  }
  Tensor value;
  if (source != nullptr) {
    value = source->values[0];
  } else {
    WEFT_ASSIGN_OR_RETURN(value, Tensor::Allocate(members[0].dtype, members[0].shape));
  }
  WEFT_RETURN_IF_ERROR(transport.Broadcast(identity, root, &value));
  *result = std::move(value);
  return Status::OK();
}

// Wraps `op` to add its time on the group's thread to the process's weft_collective_seconds.
CollectiveGroup::Op TimedOp(CollectiveGroup::Op op, Kind kind, const std::string& transport_name) {
  static metrics::HistogramFamily* const seconds = metrics::Registry::Global().FindOrAddHistogram(
      "weft_collective_seconds",
      "Time of a collective operation across tasks on its group's thread, by kind and transport.",
      {"kind", "transport"});
  metrics::Histogram* series = seconds->WithLabels({KindName(kind), transport_name});
  return [op = std::move(op), series](CollectiveTransport& transport, const TransportOp& identity) {
    const auto start = std::chrono::steady_clock::now();
    Status status = op(transport, identity);
    series->Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return status;
  };
}

// Wraps `op` to record it in `stats` when it runs on the group's thread: its time, the bytes of
// its result, and the group's other tasks as peers (under `device`, this process's first member).
CollectiveGroup::Op TracedOp(CollectiveGroup::Op op, const CollectiveGroup& group,
                             const CollectiveParams& params, Kind kind, std::string device,
                             std::shared_ptr<std::vector<Tensor>> results,
                             StepStatsCollector* stats) {
  return [op = std::move(op), &group, params, kind, device = std::move(device),
          results = std::move(results),
          stats](CollectiveTransport& transport, const TransportOp& identity) {
    const int64_t start = StepStatsNowNanos();
    Status status = op(transport, identity);
    proto::NodeExecStats event;
    SetStatsTimes(start, StepStatsNowNanos(), &event);
    event.set_node_name(InstanceLabel(params));
    event.set_op(StrCat(KindName(kind), " across tasks"));
    event.set_kind(proto::NodeExecStats::COLLECTIVE);
    event.set_collective_group_key(params.group_key);
    event.set_collective_instance_key(params.instance_key);
    int64_t bytes = 0;
    for (const Tensor& result : *results) bytes += static_cast<int64_t>(result.TotalBytes());
    event.set_transfer_bytes(bytes);
    for (size_t rank = 0; rank < group.tasks().size(); ++rank) {
      if (static_cast<int>(rank) != group.task_rank()) event.add_peers(group.tasks()[rank]);
    }
    event.set_timeline_label(StrCat(KindName(kind), " of ", bytes, " bytes with ",
                                    group.tasks().size() - 1, " other tasks over ",
                                    group.transport_name(), status.ok() ? "" : " (failed)"));
    stats->Save(device, std::move(event));
    return status;
  };
}

}  // namespace

void DistributedCollectiveExecutor::WithGroupAsync(
    const CollectiveParams& params, DeviceBase* device,
    std::function<void(std::shared_ptr<CollectiveGroup>)> spanning, std::function<void()> local,
    StatusCallback done) {
  if (device == nullptr) {
    done(InvalidArgument(InstanceLabel(params), ": a member needs a device"));
    return;
  }
  mgr_->GetGroupAsync(params, device,
                      [params, done = std::move(done), spanning = std::move(spanning),
                       local = std::move(local)](StatusOr<std::shared_ptr<CollectiveGroup>> group) {
                        if (!group.ok()) {
                          done(group.status().WithContext(InstanceLabel(params)));
                        } else if (!(*group)->spans_tasks()) {
                          local();
                        } else {
                          spanning(std::move(group).value());
                        }
                      });
}

void DistributedCollectiveExecutor::AllReduceAsync(const CollectiveParams& params,
                                                   DeviceBase* device, std::vector<Tensor> inputs,
                                                   std::vector<Tensor>* outputs,
                                                   StatusCallback done) {
  auto shared_inputs = std::make_shared<std::vector<Tensor>>(std::move(inputs));
  WithGroupAsync(
      params, device,
      [this, params, device, shared_inputs, outputs, done](std::shared_ptr<CollectiveGroup> group) {
        // The members of this process sum first; the mean divides after the sum across tasks.
        CollectiveParams local_params = params;
        local_params.group_size = group->local_size();
        local_params.final_op = "Id";
        auto local_sum = std::make_shared<std::vector<Tensor>>();
        local_.AllReduceAsync(
            local_params, device, std::move(*shared_inputs), local_sum.get(),
            [this, params, device, outputs, done, group, local_sum](const Status& status) {
              if (!status.ok()) {
                // The other tasks will wait for this one in vain; stop the group.
                group->StartAbort(status);
                done(status);
                return;
              }
              Member member;
              member.device = device;
              member.values = std::move(*local_sum);
              member.outputs = outputs;
              member.done = done;
              JoinStaged(group, params, Kind::kAllReduce, std::move(member));
            });
      },
      [this, params, device, shared_inputs, outputs, done] {
        local_.AllReduceAsync(params, device, std::move(*shared_inputs), outputs, done);
      },
      done);
}

void DistributedCollectiveExecutor::BroadcastAsync(const CollectiveParams& params,
                                                   DeviceBase* device, bool is_source,
                                                   DataType expected_dtype,
                                                   const TensorShape& expected_shape, Tensor* value,
                                                   StatusCallback done) {
  WithGroupAsync(
      params, device,
      [=, this](std::shared_ptr<CollectiveGroup> group) {
        Member member;
        member.device = device;
        member.is_source = is_source;
        member.dtype = is_source ? value->dtype() : expected_dtype;
        member.shape = is_source ? value->shape() : expected_shape;
        if (is_source) member.values.push_back(*value);
        member.target = value;
        member.done = done;
        JoinStaged(group, params, Kind::kBroadcast, std::move(member));
      },
      [=, this] {
        local_.BroadcastAsync(params, device, is_source, expected_dtype, expected_shape, value,
                              done);
      },
      done);
}

void DistributedCollectiveExecutor::AllGatherAsync(const CollectiveParams& params,
                                                   DeviceBase* device, Tensor input, Tensor* output,
                                                   StatusCallback done) {
  WithGroupAsync(
      params, device,
      [=, this](std::shared_ptr<CollectiveGroup> group) {
        if (input.dims() < 1) {
          done(InvalidArgument(InstanceLabel(params), ": device '", device->name(),
                               "' gives a scalar; all-gather needs at least one dimension"));
          return;
        }
        Member member;
        member.device = device;
        member.dtype = input.dtype();
        member.shape = input.shape();
        member.values.push_back(input);
        member.target = output;
        member.done = done;
        JoinStaged(group, params, Kind::kAllGather, std::move(member));
      },
      [=, this] { local_.AllGatherAsync(params, device, input, output, done); }, done);
}

void DistributedCollectiveExecutor::JoinStaged(const std::shared_ptr<CollectiveGroup>& group,
                                               const CollectiveParams& params, Kind kind,
                                               Member member) {
  if (member.device->HasHostMemory()) {
    Join(group, params, kind, std::move(member));
    return;
  }
  DeviceBase* device = member.device;
  const std::vector<Tensor> device_values = std::move(member.values);
  CopyToHostAsync(
      device, device_values,
      [this, group, params, kind, member](const Status& status, std::vector<Tensor> values) {
        if (!status.ok()) {
          // The other tasks would wait for this one in vain; stop the group.
          group->StartAbort(status);
          member.done(status.WithContext(InstanceLabel(params)));
          return;
        }
        // The transport leaves host results in `results`; they reach the device before `done`.
        auto results = std::make_shared<std::vector<Tensor>>(member.outputs != nullptr ? 0 : 1);
        Member staged = member;
        staged.values = std::move(values);
        if (member.outputs != nullptr) {
          staged.outputs = results.get();
        } else {
          staged.target = results->data();
        }
        staged.done = [device = member.device, results, outputs = member.outputs,
                       target = member.target, done = member.done, params](const Status& status) {
          if (!status.ok()) {
            done(status);
            return;
          }
          CopyToDeviceAsync(device, *results,
                            [results, outputs, target, done, params](const Status& copied,
                                                                     std::vector<Tensor> copies) {
                              if (copied.ok() && outputs != nullptr) *outputs = std::move(copies);
                              if (copied.ok() && outputs == nullptr) *target = std::move(copies[0]);
                              done(copied.WithContext(InstanceLabel(params)));
                            });
        };
        Join(group, params, kind, std::move(staged));
      });
}

void DistributedCollectiveExecutor::Join(const std::shared_ptr<CollectiveGroup>& group,
                                         const CollectiveParams& params, Kind kind, Member member) {
  const std::string label = InstanceLabel(params);
  Members complete;
  Members failed;
  Status status;
  {
    MutexLock lock(mu_);
    auto [found, created] =
        joining_.try_emplace({params.group_key, params.instance_key}, Joining{kind, {}});
    Joining& joining = found->second;
    if (!abort_status_.ok()) {
      status = abort_status_.WithContext(label);
    } else if (joining.kind != kind) {
      status =
          InvalidArgument(label, ": device '", member.device->name(), "' runs a ", KindName(kind),
                          " where another member runs a ", KindName(joining.kind));
    } else {
      status = CheckLocalMember(label, kind, joining.members, member);
    }
    if (!status.ok()) {
      failed = std::move(joining.members);
      joining_.erase(found);
    } else {
      joining.members.push_back(std::move(member));
      if (static_cast<int>(joining.members.size()) == group->local_size()) {
        complete = std::move(joining.members);
        joining_.erase(found);
      }
    }
  }
  if (!status.ok()) {
    group->StartAbort(status);
    for (Member& other : failed) other.done(status);
    member.done(status);
    return;
  }
  if (!complete.empty()) RunAcrossProcesses(group, params, kind, std::move(complete));
}

void DistributedCollectiveExecutor::RunAcrossProcesses(
    const std::shared_ptr<CollectiveGroup>& group, const CollectiveParams& params, Kind kind,
    Members members) {
  {
    MutexLock lock(mu_);
    if (!abort_status_.ok()) {
      const Status status = abort_status_.WithContext(InstanceLabel(params));
      lock.Unlock();
      for (Member& member : members) member.done(status);
      return;
    }
    ++in_flight_[group.get()];
  }
  auto shared = std::make_shared<Members>(std::move(members));
  auto results = std::make_shared<std::vector<Tensor>>();
  CollectiveGroup::Op op;
  switch (kind) {
    case Kind::kAllReduce: {
      const double divisor = params.final_op == "Div" ? params.group_size : 1.0;
      op = [shared, results, divisor](CollectiveTransport& transport, const TransportOp& id) {
        return transport.AllReduce(id, (*shared)[0].values, divisor, results.get());
      };
      break;
    }
    case Kind::kBroadcast:
      op = [shared, results](CollectiveTransport& transport, const TransportOp& id) {
        results->resize(1);
        return BroadcastAcrossProcesses(transport, id, *shared, &(*results)[0]);
      };
      break;
    case Kind::kAllGather:
      op = [shared, results](CollectiveTransport& transport, const TransportOp& id) {
        WEFT_ASSIGN_OR_RETURN(Tensor block, ConcatenateLocal(*shared));
        results->resize(1);
        return transport.AllGather(id, block, &(*results)[0]);
      };
      break;
  }
  op = TimedOp(std::move(op), kind, group->transport_name());
  // The step (and so its collector) lasts until the members' dones, which follow the operation.
  if (stats_ != nullptr) {
    op =
        TracedOp(std::move(op), *group, params, kind, (*shared)[0].device->name(), results, stats_);
  }
  group->EnqueueAsync(params.instance_key, InstanceLabel(params), std::move(op),
                      [this, group = group.get(), shared, results, kind](const Status& status) {
                        {
                          MutexLock lock(mu_);
                          if (--in_flight_[group] == 0) in_flight_.erase(group);
                        }
                        // The last done may end the step and destroy this executor: nothing after
                        // them.
                        for (Member& member : *shared) {
                          if (status.ok()) {
                            if (kind == Kind::kAllReduce) {
                              *member.outputs = *results;
                            } else if (kind == Kind::kAllGather || !member.is_source) {
                              *member.target = (*results)[0];
                            }
                          }
                          member.done(status);
                        }
                      });
}

void DistributedCollectiveExecutor::StartAbort(const Status& status) {
  local_.StartAbort(status);
  Members waiting;
  std::vector<CollectiveGroup*> running;
  Status abort_status;
  {
    MutexLock lock(mu_);
    if (!abort_status_.ok()) return;
    abort_status_ = Status(status.ok() ? Code::kAborted : status.code(),
                           StrCat("collective ops of step ", step_id_, " aborted by: ",
                                  status.ok() ? "an abort without a reason" : status.message()));
    abort_status = abort_status_;
    for (auto& [key, joining] : joining_) {
      for (Member& member : joining.members) waiting.push_back(std::move(member));
    }
    joining_.clear();
    for (auto& [group, count] : in_flight_) running.push_back(group);
  }
  for (auto& group : running) group->StartAbort(abort_status);
  for (Member& member : waiting) member.done(abort_status);
}

}  // namespace weft
