// What a parameter-server training step sends between tasks, counted on the graph the optimizer
// builds: every (source, output, destination task) that crosses is a transfer of its own each step
// (graph/partition.h), so the bookkeeping of updates on several ps tasks must not grow with the
// number of variables. The servers are fakes: only the graph is built, nothing runs.
#include <map>
#include <set>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "weft/core/str_util.h"
#include "weft/distribute/parameter_server_strategy.h"
#include "weft/distributed/server.h"
#include "weft/train/models.h"
#include "weft/train/optimizer.h"

namespace weft::train {
namespace {

class GraphOnlyServer final : public ServerInterface {
 public:
  explicit GraphOnlyServer(std::string task_name) : task_name_(std::move(task_name)) {}
  std::string address() const override { return "127.0.0.1:1"; }
  const std::string& task_name() const override { return task_name_; }
  WorkerCacheInterface* worker_cache() override { return nullptr; }
  const std::string& local_target() const override { return target_; }
  void Stop() override {}

 private:
  const std::string task_name_;
  const std::string target_ = "graph-only";
};

// "/job:ps/replica:0/task:1" of a requested device ("/job:worker" for the replica's), or "" for
// one elsewhere.
std::string PsTaskOf(const std::string& device) {
  if (device.rfind("/job:worker/", 0) == 0) return "/job:worker";
  if (device.rfind("/job:ps/", 0) != 0) return "";
  const size_t task = device.find("/task:");
  if (task == std::string::npos) return "";
  return device.substr(0, device.find('/', task + 1));
}

// Transfers between tasks per step: source task -> destination task -> crossing sources.
std::map<std::pair<std::string, std::string>, int> TransfersBetweenTasks(const Graph& graph) {
  std::set<std::tuple<int, int, std::string>> crossing;  // (source id, output, destination task)
  std::map<std::pair<std::string, std::string>, int> counts;
  for (const Node* node : graph.nodes()) {
    const std::string from = PsTaskOf(node->requested_device());
    if (from.empty()) continue;
    for (const Edge* edge : node->out_edges()) {
      const std::string to = PsTaskOf(edge->dst->requested_device());
      if (to.empty() || to == from) continue;
      if (crossing.emplace(node->id(), edge->src_output, to).second) ++counts[{from, to}];
    }
  }
  return counts;
}

TEST(ParameterServerStepTest, EachTaskSendsAnotherOneTensorPerStepWhateverTheVariables) {
  RegisterServerFactory("graph_only", [](const ServerOptions& options) {
    return StatusOr<std::unique_ptr<ServerInterface>>(std::make_unique<GraphOnlyServer>(
        StrCat("/job:", options.server.task.job, "/replica:0/task:", options.server.task.index)));
  });
  distribute::ParameterServerOptions options;
  options.protocol = "graph_only";
  options.server.cluster = ClusterSpec::FromJobs({{"chief", {"127.0.0.1:1"}},
                                                  {"worker", {"127.0.0.1:2"}},
                                                  {"ps", {"127.0.0.1:3", "127.0.0.1:4"}}})
                               .value();
  options.server.task = {"chief", 0};
  auto strategy = distribute::ParameterServerStrategy::Create(options);
  ASSERT_TRUE(strategy.ok()) << strategy.status();

  Scope root = Scope::NewRootScope();
  std::unique_ptr<Optimizer> optimizer = NewAdagradOptimizer(0.05);
  distribute::StrategyScope in_scope = (*strategy)->Scope();
  auto run = (*strategy)->Run(
      root, [&](distribute::ReplicaContext&, const Scope& scope) -> StatusOr<std::vector<Output>> {
        WEFT_ASSIGN_OR_RETURN(BuiltModel model, BuildModel(scope, ModelKind::kMlp, 7));
        WEFT_ASSIGN_OR_RETURN(Output train_op,
                              optimizer->Minimize(scope, model.loss, model.variables));
        return std::vector<Output>{train_op};
      });
  ASSERT_TRUE(run.ok()) << run.status();

  // The MLP's variables alternate between the two tasks, so each holds several updates.
  std::map<std::string, int> variables_on;
  for (const auto& variable : (*strategy)->variables()) {
    ++variables_on[PsTaskOf(variable->devices()[0])];
  }
  ASSERT_GE(variables_on["/job:ps/replica:0/task:0"], 2);
  ASSERT_GE(variables_on["/job:ps/replica:0/task:1"], 2);
  // The learning rate lives on task 0 and is read there once for task 1's updates; task 1's
  // updates are done when one op there says so.
  const auto transfers = TransfersBetweenTasks(*root.graph());
  const std::pair<std::string, std::string> zero_to_one{"/job:ps/replica:0/task:0",
                                                        "/job:ps/replica:0/task:1"};
  const std::pair<std::string, std::string> one_to_zero{zero_to_one.second, zero_to_one.first};
  EXPECT_EQ(transfers.count(zero_to_one) ? transfers.at(zero_to_one) : 0, 1);
  EXPECT_EQ(transfers.count(one_to_zero) ? transfers.at(one_to_zero) : 0, 1);
  // The worker's dense gradients travel to each task as one tensor (distribute/packed_transfer.h).
  for (const char* task : {"/job:ps/replica:0/task:0", "/job:ps/replica:0/task:1"}) {
    SCOPED_TRACE(task);
    const std::pair<std::string, std::string> worker_to_task{"/job:worker", task};
    EXPECT_EQ(transfers.count(worker_to_task) ? transfers.at(worker_to_task) : 0, 1);
  }
}

}  // namespace
}  // namespace weft::train
