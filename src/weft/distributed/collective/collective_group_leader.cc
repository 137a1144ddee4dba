// CollectiveGroupLeader (see the header): groups keyed by session and group_key, waiters answered
// outside the lock.
#include "weft/distributed/collective/collective_group_leader.h"

#include <algorithm>
#include <limits>
#include <random>
#include <tuple>
#include <utility>

#include "weft/core/str_util.h"
#include "weft/framework/device_name_utils.h"

namespace weft {
namespace {

std::tuple<std::string, int, int> TaskOrder(const std::string& task) {
  StatusOr<ParsedDeviceName> parsed = ParseDeviceName(task);
  if (!parsed.ok()) return {task, 0, 0};
  return {parsed->job, parsed->replica, parsed->task};
}

std::string ListMembers(const std::vector<proto::CollectiveMember>& members) {
  std::string list;
  for (const proto::CollectiveMember& member : members) {
    if (!list.empty()) list += ", ";
    list += member.device();
  }
  return list.empty() ? "none" : list;
}

// Unique in the job with overwhelming probability, short enough for a shared-memory name.
std::string NewGroupToken(int64_t group_key) {
  std::random_device entropy;
  const uint64_t bits = (uint64_t{entropy()} << 32) ^ entropy();
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(bits));
  return StrCat("g", group_key, "-", hex);
}

}  // namespace

bool CollectiveMemberLess(const proto::CollectiveMember& a, const proto::CollectiveMember& b) {
  const auto task_a = TaskOrder(a.task());
  const auto task_b = TaskOrder(b.task());
  if (task_a != task_b) return task_a < task_b;
  return a.device() < b.device();
}

CollectiveGroupLeader::~CollectiveGroupLeader() {
  std::vector<Waiter> waiting;
  {
    MutexLock lock(mu_);
    for (auto& [key, group] : groups_) {
      for (Waiter& waiter : group.waiters) waiting.push_back(std::move(waiter));
      group.waiters.clear();
    }
  }
  for (Waiter& waiter : waiting) {
    if (waiter.options != nullptr) waiter.options->ClearCancelCallback();
    waiter.done(Aborted("task ", task_name_, " stopped leading collective groups"));
  }
}

void CollectiveGroupLeader::CompleteGroupAsync(CallOptions* options,
                                               const proto::CompleteGroupRequest* request,
                                               proto::CompleteGroupResponse* response,
                                               StatusCallback done) {
  const int64_t key = request->group_key();
  const GroupId id{request->session_handle(), key};
  const proto::CollectiveMember& member = request->member();
  const std::string label = StrCat("collective group ", key);
  if (request->group_size() < 1 || member.device().empty() || member.task().empty()) {
    done(InvalidArgument(label, ": a member needs a task, a device and group_size >= 1 (got ",
                         request->group_size(), " from device '", member.device(), "')"));
    return;
  }
  std::vector<Waiter> answered;
  Status status;
  uint64_t waiter_id = 0;
  {
    MutexLock lock(mu_);
    auto [found, created] = groups_.try_emplace(id);
    Group& group = found->second;
    if (created) {
      group.group_size = request->group_size();
      group.device_type = request->device_type();
    }
    const proto::CollectiveMember* first = group.members.empty() ? nullptr : &group.members[0];
    const std::string first_device = first != nullptr ? first->device() : "(none)";
    auto same_device = std::find_if(
        group.members.begin(), group.members.end(),
        [&](const proto::CollectiveMember& other) { return other.device() == member.device(); });
    if (group.group_size != request->group_size()) {
      status = InvalidArgument(label, ": device '", member.device(), "' has group_size ",
                               request->group_size(), ", but device '", first_device, "' has ",
                               group.group_size);
    } else if (group.device_type != request->device_type()) {
      status = InvalidArgument(label, ": device '", member.device(), "' has device type '",
                               request->device_type(), "', but device '", first_device, "' has '",
                               group.device_type, "'");
    } else if (group.complete) {
      if (same_device != group.members.end() &&
          same_device->incarnation() == member.incarnation()) {
        *response = group.answer;
      } else if (same_device != group.members.end()) {
        status = FailedPrecondition(label, ": task ", member.task(),
                                    " restarted after the group was formed; restart the job");
      } else {
        status = InvalidArgument(label, ": device '", member.device(),
                                 "' joined a group that is already complete (", group.group_size,
                                 " members: ", ListMembers(group.members), ")");
      }
    } else {
      if (same_device != group.members.end()) {
        *same_device = member;  // a retry, or a restart before the group formed
      } else {
        group.members.push_back(member);
      }
      if (static_cast<int32_t>(group.members.size()) < group.group_size) {
        waiter_id = next_waiter_id_++;
        group.waiters.push_back(Waiter{waiter_id, member.device(), options, response, done});
      } else {
        std::sort(group.members.begin(), group.members.end(), CollectiveMemberLess);
        group.complete = true;
        group.answer.set_group_key(key);
        group.answer.set_group_size(group.group_size);
        group.answer.set_group_token(NewGroupToken(key));
        for (const proto::CollectiveMember& joined : group.members) {
          *group.answer.add_members() = joined;
        }
        *response = group.answer;
        for (Waiter& waiter : group.waiters) *waiter.response = group.answer;
        answered = std::move(group.waiters);
        group.waiters.clear();
      }
    }
  }
  if (waiter_id != 0) {
    // Outside the lock: a caller that already gave up runs Withdraw at once.
    if (options != nullptr)
      options->SetCancelCallback([this, id, waiter_id] { Withdraw(id, waiter_id); });
    if (request->timeout_ms() > 0) {
      timer_.Schedule(request->timeout_ms(), [this, id, waiter_id] { Withdraw(id, waiter_id); });
    }
    return;
  }
  for (Waiter& waiter : answered) {
    if (waiter.options != nullptr) waiter.options->ClearCancelCallback();
    waiter.done(Status::OK());
  }
  done(status);
}

void CollectiveGroupLeader::ForgetSession(const std::string& handle) {
  std::vector<Waiter> waiting;
  {
    MutexLock lock(mu_);
    for (auto it = groups_.lower_bound(GroupId{handle, std::numeric_limits<int64_t>::min()});
         it != groups_.end() && it->first.first == handle;) {
      for (Waiter& waiter : it->second.waiters) waiting.push_back(std::move(waiter));
      it = groups_.erase(it);
    }
  }
  for (Waiter& waiter : waiting) {
    if (waiter.options != nullptr) waiter.options->ClearCancelCallback();
    waiter.done(Aborted("session '", handle, "' was deleted on task ", task_name_,
                        " while device '", waiter.device, "' waited for its collective group"));
  }
}

void CollectiveGroupLeader::Withdraw(const GroupId& group_id, uint64_t id) {
  const int64_t group_key = group_id.second;
  Waiter withdrawn;
  std::string joined;
  int32_t group_size = 0;
  {
    MutexLock lock(mu_);
    auto found = groups_.find(group_id);
    if (found == groups_.end()) return;
    Group& group = found->second;
    auto waiter = std::find_if(group.waiters.begin(), group.waiters.end(),
                               [id](const Waiter& w) { return w.id == id; });
    if (waiter == group.waiters.end()) return;  // answered meanwhile
    withdrawn = std::move(*waiter);
    group.waiters.erase(waiter);
    joined = ListMembers(group.members);
    group_size = group.group_size;
    group.members.erase(std::remove_if(group.members.begin(), group.members.end(),
                                       [&](const proto::CollectiveMember& member) {
                                         return member.device() == withdrawn.device;
                                       }),
                        group.members.end());
  }
  if (withdrawn.options != nullptr) withdrawn.options->ClearCancelCallback();
  withdrawn.done(DeadlineExceeded("collective group ", group_key, " was not complete when device '",
                                  withdrawn.device, "' gave up: ", group_size,
                                  " members expected, these had joined: ", joined));
}

}  // namespace weft
