#include "weft/runtime/trace/timeline.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "weft/runtime/trace/step_stats_collector.h"
#include "weft/runtime/trace/step_time_split.h"

namespace weft {
namespace {

using Json = nlohmann::json;
using Kind = proto::NodeExecStats::Kind;

// The rows of one device, in the order they appear under it.
enum class Category { kCompute, kSendRecv, kRecvTensor, kCollective, kRpc };

Category CategoryOf(Kind kind) {
  switch (kind) {
    case proto::NodeExecStats::SEND:
    case proto::NodeExecStats::RECV:
      return Category::kSendRecv;
    case proto::NodeExecStats::RECV_TENSOR:
      return Category::kRecvTensor;
    case proto::NodeExecStats::COLLECTIVE:
      return Category::kCollective;
    case proto::NodeExecStats::RPC:
      return Category::kRpc;
    default:
      return Category::kCompute;
  }
}

const char* KindName(Kind kind) {
  switch (kind) {
    case proto::NodeExecStats::SEND:
      return "send";
    case proto::NodeExecStats::RECV:
      return "recv";
    case proto::NodeExecStats::RECV_TENSOR:
      return "RecvTensor";
    case proto::NodeExecStats::COLLECTIVE:
      return "collective";
    case proto::NodeExecStats::RPC:
      return "rpc";
    default:
      return "compute";
  }
}

std::string TaskOf(const proto::DeviceStepStats& device) {
  return device.task().empty() ? TaskOfDevice(device.device()) : device.task();
}

// "CPU:0" for "/job:w/replica:0/task:1/device:CPU:0", "master" for "/job:w/.../task:1/master".
std::string ShortName(const std::string& device, const std::string& task) {
  std::string name = device.substr(0, task.size()) == task ? device.substr(task.size()) : device;
  if (name.rfind("/device:", 0) == 0) return name.substr(8);
  if (!name.empty() && name[0] == '/') return name.substr(1);
  return name.empty() ? device : name;
}

std::string RowName(const std::string& device_short, Category category, int lane) {
  std::string name = device_short;
  switch (category) {
    case Category::kCompute:
      break;
    case Category::kSendRecv:
      name += " send/recv";
      break;
    case Category::kRecvTensor:
      name += " RecvTensor";
      break;
    case Category::kCollective:
      name += " collectives";
      break;
    case Category::kRpc:
      name += " RunGraph";
      break;
  }
  if (lane > 0) name += " (" + std::to_string(lane + 1) + ")";
  return name;
}

// The process of the steps' own events, and its one row. Not 0: Perfetto keeps pid and tid 0
// for the idle task.
constexpr int kStepsPid = 1;
constexpr int kStepsTid = 1;

// One event placed in the trace: where it is drawn and when.
struct Placed {
  const proto::NodeExecStats* event = nullptr;
  const std::string* device = nullptr;
  int64_t step = 0;
  int64_t start = 0;  // wall nanos
  int64_t end = 0;
  int pid = 0;
  int tid = 0;
};

// Where the rows of the trace come from: every traced event grouped by (task, device, category)
// and packed greedily into lanes so that no lane holds two overlapping events.
class Layout {
 public:
  void Add(const std::string& task, const std::string& device, Category category, Placed placed) {
    groups_[{task, device, category}].push_back(placed);
  }

  // Assigns pids and tids; emits the metadata events into `events` and returns every placed
  // event.
  std::vector<Placed> Place(Json* events) {
    std::map<std::string, int> pids;
    for (const auto& [key, placed] : groups_) pids.emplace(std::get<0>(key), 0);
    int next_pid = kStepsPid + 1;
    for (auto& [task, pid] : pids) {
      pid = next_pid++;
      events->push_back(
          {{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", task}}}});
      events->push_back({{"ph", "M"},
                         {"name", "process_sort_index"},
                         {"pid", pid},
                         {"args", {{"sort_index", pid}}}});
    }
    // Unique across processes: Perfetto, like Linux, takes a tid to name one thread.
    int next_tid = kStepsTid;
    std::vector<Placed> all;
    for (auto& [key, placed] : groups_) {
      const auto& [task, device, category] = key;
      const int pid = pids[task];
      std::sort(placed.begin(), placed.end(),
                [](const Placed& a, const Placed& b) { return a.start < b.start; });
      std::vector<int64_t> lane_ends;
      std::vector<int> lane_tids;
      for (Placed& event : placed) {
        size_t lane = 0;
        while (lane < lane_ends.size() && lane_ends[lane] > event.start) ++lane;
        if (lane == lane_ends.size()) {
          const int tid = ++next_tid;
          lane_ends.push_back(0);
          lane_tids.push_back(tid);
          const std::string name =
              RowName(ShortName(device, task), category, static_cast<int>(lane));
          events->push_back({{"ph", "M"},
                             {"name", "thread_name"},
                             {"pid", pid},
                             {"tid", tid},
                             {"args", {{"name", name}}}});
          events->push_back({{"ph", "M"},
                             {"name", "thread_sort_index"},
                             {"pid", pid},
                             {"tid", tid},
                             {"args", {{"sort_index", tid}}}});
        }
        lane_ends[lane] = event.end;
        event.pid = pid;
        event.tid = lane_tids[lane];
        all.push_back(event);
      }
    }
    return all;
  }

 private:
  std::map<std::tuple<std::string, std::string, Category>, std::vector<Placed>> groups_;
};

double Micros(int64_t nanos) { return static_cast<double>(nanos) / 1000.0; }

Json EventArgs(const Placed& placed) {
  const proto::NodeExecStats& event = *placed.event;
  Json args = {{"name", event.node_name()},
               {"op", event.op()},
               {"step", placed.step},
               {"device", *placed.device}};
  if (event.output_bytes() > 0) args["output_bytes"] = event.output_bytes();
  if (event.transfer_bytes() > 0 || event.kind() != proto::NodeExecStats::COMPUTE) {
    args["bytes"] = event.transfer_bytes();
  }
  if (event.peers_size() > 0) {
    args["peers"] = Json(std::vector<std::string>(event.peers().begin(), event.peers().end()));
  }
  if (!event.rendezvous_key().empty()) args["rendezvous_key"] = event.rendezvous_key();
  if (!event.timeline_label().empty()) args["label"] = event.timeline_label();
  if (event.thread_id() != 0) args["thread"] = event.thread_id();
  return args;
}

// The flow ends: the _Send and the _Recv of each rendezvous key of one step.
struct FlowEnds {
  const Placed* send = nullptr;
  const Placed* recv = nullptr;
};

void AddFlows(const std::vector<Placed>& placed, int64_t origin, Json* events) {
  std::map<std::pair<int64_t, std::string>, FlowEnds> by_key;
  for (const Placed& event : placed) {
    const std::string& key = event.event->rendezvous_key();
    if (key.empty()) continue;
    if (event.event->kind() == proto::NodeExecStats::SEND) by_key[{event.step, key}].send = &event;
    if (event.event->kind() == proto::NodeExecStats::RECV) by_key[{event.step, key}].recv = &event;
  }
  int64_t next_id = 1;
  for (const auto& [key, ends] : by_key) {
    if (ends.send == nullptr || ends.recv == nullptr) continue;
    // Inside each end's slice ("bp":"e" binds to the enclosing slice): the middle of the send,
    // and the same moment in the receive when it was waiting then (else its nearest edge).
    const int64_t send_at = ends.send->start + (ends.send->end - ends.send->start) / 2;
    const int64_t recv_at = std::clamp(send_at, ends.recv->start, ends.recv->end);
    const int64_t id = next_id++;
    const Json args = {{"rendezvous_key", key.second}};
    events->push_back({{"ph", "s"},
                       {"name", "tensor"},
                       {"cat", "transfer"},
                       {"id", id},
                       {"pid", ends.send->pid},
                       {"tid", ends.send->tid},
                       {"ts", Micros(send_at - origin)},
                       {"bp", "e"},
                       {"args", args}});
    events->push_back({{"ph", "f"},
                       {"name", "tensor"},
                       {"cat", "transfer"},
                       {"id", id},
                       {"pid", ends.recv->pid},
                       {"tid", ends.recv->tid},
                       {"ts", Micros(recv_at - origin)},
                       {"bp", "e"},
                       {"args", args}});
  }
}

}  // namespace

void Timeline::AddStep(int64_t step, proto::StepStats stats, int64_t run_start_nanos,
                       int64_t run_end_nanos) {
  steps_.push_back({step, std::move(stats), run_start_nanos, run_end_nanos});
}

std::string Timeline::ToJson() const {
  // The origin: the earliest moment traced, so every ts is small and non-negative.
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const Step& step : steps_) {
    origin = std::min(origin, step.start_nanos);
    for (const proto::DeviceStepStats& device : step.stats.dev_stats()) {
      for (const proto::NodeExecStats& event : device.node_stats()) {
        origin = std::min(origin, EventStartNanos(event));
      }
    }
  }
  if (steps_.empty()) origin = 0;

  Json events = Json::array();
  events.push_back(
      {{"ph", "M"}, {"name", "process_name"}, {"pid", kStepsPid}, {"args", {{"name", "steps"}}}});
  events.push_back({{"ph", "M"},
                    {"name", "process_sort_index"},
                    {"pid", kStepsPid},
                    {"args", {{"sort_index", kStepsPid}}}});
  events.push_back({{"ph", "M"},
                    {"name", "thread_name"},
                    {"pid", kStepsPid},
                    {"tid", kStepsTid},
                    {"args", {{"name", "Session::Run"}}}});
  Json step_summaries = Json::array();
  Layout layout;
  for (const Step& step : steps_) {
    const StepTimeSplit split = SplitStepTime(step.stats);
    const Json summary = {
        {"step", step.step},
        {"wall_ms", static_cast<double>(step.end_nanos - step.start_nanos) / 1e6},
        {"compute_ms", static_cast<double>(split.compute_nanos) / 1e6},
        {"communication_ms", static_cast<double>(split.communication_nanos) / 1e6},
        {"overlap_ms", static_cast<double>(split.overlap_nanos) / 1e6}};
    step_summaries.push_back(summary);
    events.push_back({{"ph", "X"},
                      {"name", "step " + std::to_string(step.step)},
                      {"cat", "step"},
                      {"pid", kStepsPid},
                      {"tid", kStepsTid},
                      {"ts", Micros(step.start_nanos - origin)},
                      {"dur", Micros(std::max<int64_t>(step.end_nanos - step.start_nanos, 0))},
                      {"args", summary}});
    for (const proto::DeviceStepStats& device : step.stats.dev_stats()) {
      const std::string task = TaskOf(device);
      for (const proto::NodeExecStats& event : device.node_stats()) {
        Placed placed;
        placed.event = &event;
        placed.device = &device.device();
        placed.step = step.step;
        placed.start = EventStartNanos(event);
        placed.end = EventEndNanos(event);
        layout.Add(task, device.device(), CategoryOf(event.kind()), placed);
      }
    }
  }
  const std::vector<Placed> placed = layout.Place(&events);
  for (const Placed& event : placed) {
    const proto::NodeExecStats& node = *event.event;
    events.push_back({{"ph", "X"},
                      {"name", node.op()},
                      {"cat", KindName(node.kind())},
                      {"pid", event.pid},
                      {"tid", event.tid},
                      {"ts", Micros(event.start - origin)},
                      {"dur", Micros(event.end - event.start)},
                      {"args", EventArgs(event)}});
  }
  AddFlows(placed, origin, &events);
  const Json trace = {{"traceEvents", std::move(events)},
                      {"displayTimeUnit", "ms"},
                      {"otherData",
                       {{"origin_wall_nanos", origin},
                        {"clock", "wall clock; ts and dur in microseconds from origin_wall_nanos"},
                        {"steps", std::move(step_summaries)}}}};
  return trace.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void RenameTask(std::string_view from, std::string_view to, proto::StepStats* stats) {
  for (proto::DeviceStepStats& device : *stats->mutable_dev_stats()) {
    const std::string& name = device.device();
    if (TaskOfDevice(name) == from) {
      device.set_device(std::string(to) + name.substr(from.size()));
      device.set_task(std::string(to));
    }
  }
}

}  // namespace weft
