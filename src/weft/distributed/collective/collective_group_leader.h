// CollectiveGroupLeader: group resolution for the collective groups a task leads (the reference's
// CompleteGroup on the group leader, task 0 of the job). Every member device of a group sends
// CompleteGroup; the leader holds each call until group_size distinct devices have joined, then
// answers all of them with the same member list, ordered by task (job, replica, task index) and
// then device name, and a group token unique in the job. Members that disagree on group_size or
// device type are refused with InvalidArgument naming both; a device that joins a complete group
// again is answered at once when it comes from the same process (a retry) and refused with
// FailedPrecondition when its process restarted. A cancelled call (its caller's deadline) withdraws
// its device and is answered DeadlineExceeded listing who had joined; so is a call still waiting
// after the request's timeout_ms. Groups are scoped by the request's session handle (one master
// session's groups never meet another's), and ForgetSession drops a deleted session's groups.
// Thread-safe; the destructor answers the calls still waiting with Aborted.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/timer.h"
#include "weft/distributed/worker/worker_interface.h"
#include "weft/worker.pb.h"

namespace weft {

class CollectiveGroupLeader {
 public:
  explicit CollectiveGroupLeader(std::string task_name) : task_name_(std::move(task_name)) {}
  ~CollectiveGroupLeader();
  CollectiveGroupLeader(const CollectiveGroupLeader&) = delete;
  CollectiveGroupLeader& operator=(const CollectiveGroupLeader&) = delete;

  void CompleteGroupAsync(CallOptions* options, const proto::CompleteGroupRequest* request,
                          proto::CompleteGroupResponse* response, StatusCallback done);
  // Drops the groups of worker session `handle`, answering their waiting calls with Aborted.
  void ForgetSession(const std::string& handle);

 private:
  // A group: (session handle, group key).
  using GroupId = std::pair<std::string, int64_t>;
  struct Waiter {
    uint64_t id = 0;
    std::string device;
    CallOptions* options = nullptr;
    proto::CompleteGroupResponse* response = nullptr;
    StatusCallback done;
  };
  struct Group {
    int32_t group_size = 0;
    std::string device_type;
    std::vector<proto::CollectiveMember> members;  // in joining order until complete
    std::vector<Waiter> waiters;
    bool complete = false;
    proto::CompleteGroupResponse answer;  // once complete
  };

  // Removes waiter `id` of group `group` (its caller gave up) and answers it.
  void Withdraw(const GroupId& group, uint64_t id);

  const std::string task_name_;
  Mutex mu_;
  std::map<GroupId, Group> groups_ WEFT_GUARDED_BY(mu_);
  uint64_t next_waiter_id_ WEFT_GUARDED_BY(mu_) = 1;
  // The requests' timeouts. Declared last so it stops (and no Withdraw runs) before the rest goes.
  Timer timer_;
};

// Orders members as every member of a group sees them: by job, replica and task index (numeric),
// then device name.
bool CollectiveMemberLess(const proto::CollectiveMember& a, const proto::CollectiveMember& b);

}  // namespace weft
