#include "weft/distributed/cluster/cluster_resolver.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

constexpr char kWeftConfig[] =
    R"({"cluster": {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]},
        "task": {"type": "worker", "index": 1}})";

void ExpectError(const Environment& env, std::initializer_list<std::string_view> parts,
                 const ResolveOptions& options = {}) {
  StatusOr<ResolvedCluster> resolved = ResolveCluster(env, options);
  ASSERT_FALSE(resolved.ok());
  EXPECT_TRUE(IsInvalidArgument(resolved.status())) << resolved.status();
  for (std::string_view part : parts) {
    EXPECT_NE(resolved.status().message().find(part), std::string::npos)
        << "'" << part << "' in " << resolved.status();
  }
}

TEST(ClusterResolverTest, NothingSetIsNoCluster) {
  StatusOr<ResolvedCluster> resolved = ResolveCluster({{"HOME", "/root"}});
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->source, ClusterSource::kNone);
  EXPECT_FALSE(resolved->NeedsRendezvous());
  EXPECT_EQ(resolved->devices_per_worker, 0);
}

TEST(ClusterResolverTest, ReadsWeftConfigAndDevices) {
  StatusOr<ResolvedCluster> resolved =
      ResolveCluster({{"WEFT_CONFIG", kWeftConfig}, {"WEFT_DEVICES_PER_WORKER", "2"}});
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->source, ClusterSource::kWeftConfig);
  EXPECT_EQ(resolved->config.cluster.ToFlag(), "worker=127.0.0.1:2222,127.0.0.1:2223");
  EXPECT_EQ(resolved->config.task.job, "worker");
  EXPECT_EQ(resolved->config.task.index, 1);
  EXPECT_EQ(resolved->devices_per_worker, 2);
}

TEST(ClusterResolverTest, WeftConfigWinsOverTfConfigAndSlurm) {
  StatusOr<ResolvedCluster> resolved = ResolveCluster(
      {{"WEFT_CONFIG", kWeftConfig}, {"TF_CONFIG", "not even json"}, {"SLURM_PROCID", "0"}});
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->source, ClusterSource::kWeftConfig);
}

TEST(ClusterResolverTest, TfConfigChiefIsWorkerZeroWithoutPs) {
  const std::string tf_config =
      R"({"cluster": {"chief": ["c:1"], "worker": ["w0:2", "w1:3"]},
          "task": {"type": "worker", "index": 1}, "environment": "cloud"})";
  StatusOr<ResolvedCluster> resolved =
      ResolveCluster({{"TF_CONFIG", tf_config}, {"SLURM_PROCID", "3"}});
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->source, ClusterSource::kTfConfig);
  EXPECT_EQ(resolved->config.cluster.ToFlag(), "worker=c:1,w0:2,w1:3");
  EXPECT_EQ(resolved->config.task.job, "worker");
  EXPECT_EQ(resolved->config.task.index, 2);

  StatusOr<ServerConfig> chief = ParseTfConfig(
      R"({"cluster": {"chief": ["c:1"], "worker": ["w0:2"]}, "task": {"type": "chief"}})");
  ASSERT_TRUE(chief.ok()) << chief.status();
  EXPECT_EQ(chief->task.job, "worker");
  EXPECT_EQ(chief->task.index, 0);
}

TEST(ClusterResolverTest, TfConfigChiefIsItsOwnJobBesidePs) {
  const std::string cluster =
      R"("cluster": {"chief": ["c:1"], "worker": ["w0:2", "w1:3"], "ps": ["p0:4", "p1:5"]})";
  const std::string expected = "chief=c:1;ps=p0:4,p1:5;worker=w0:2,w1:3";
  StatusOr<ServerConfig> worker =
      ParseTfConfig("{" + cluster + R"(, "task": {"type": "worker", "index": 1}})");
  ASSERT_TRUE(worker.ok()) << worker.status();
  EXPECT_EQ(worker->cluster.ToFlag(), expected);
  EXPECT_EQ(worker->task.job, "worker");
  EXPECT_EQ(worker->task.index, 1);

  StatusOr<ServerConfig> chief =
      ParseTfConfig("{" + cluster + R"(, "task": {"type": "chief", "index": 0}})");
  ASSERT_TRUE(chief.ok()) << chief.status();
  EXPECT_EQ(chief->cluster.ToFlag(), expected);
  EXPECT_EQ(chief->task.job, "chief");
  EXPECT_EQ(chief->task.index, 0);

  StatusOr<ServerConfig> ps =
      ParseTfConfig("{" + cluster + R"(, "task": {"type": "ps", "index": 1}})");
  ASSERT_TRUE(ps.ok()) << ps.status();
  EXPECT_EQ(ps->task.job, "ps");
  EXPECT_EQ(ps->task.index, 1);

  // Workers and ps without a chief: nothing to fold, jobs as written.
  StatusOr<ServerConfig> no_chief = ParseTfConfig(
      R"({"cluster": {"worker": ["w0:2"], "ps": ["p:4"]}, "task": {"type": "ps", "index": 0}})");
  ASSERT_TRUE(no_chief.ok()) << no_chief.status();
  EXPECT_EQ(no_chief->cluster.ToFlag(), "ps=p:4;worker=w0:2");
  EXPECT_EQ(no_chief->task.job, "ps");
}

TEST(ClusterResolverTest, BadPsClusterNamesTheJobOrTask) {
  ExpectError({{"TF_CONFIG", R"({"cluster": {"chief": ["a:1", "b:2"], "worker": ["w:3"],
                 "ps": ["p:4"]}, "task": {"type": "worker", "index": 0}})"}},
              {"TF_CONFIG", "job 'chief' has 2 tasks"});
  ExpectError({{"TF_CONFIG", R"({"cluster": {"chief": ["c:1"], "worker": ["w:3"], "ps": []},
                 "task": {"type": "chief", "index": 0}})"}},
              {"TF_CONFIG", "job 'ps' has no tasks"});
  ExpectError({{"TF_CONFIG", R"({"cluster": {"worker": ["w:3"], "ps": ["p:4"]},
                 "task": {"type": "chief", "index": 0}})"}},
              {"TF_CONFIG", "task type 'chief'", "no 'chief' job"});
  ExpectError({{"TF_CONFIG", R"({"cluster": {"chief": ["c:1"], "ps": ["p:4"]},
                 "task": {"type": "ps", "index": 1}})"}},
              {"TF_CONFIG", "ps:1", "not in the cluster"});
}

TEST(ClusterResolverTest, WeftConfigTakesChiefWorkerAndPsAsWritten) {
  const std::string cluster =
      R"("cluster": {"chief": ["c:1"], "worker": ["w0:2", "w1:3"], "ps": ["p0:4"]})";
  for (const auto& [type, index] : std::vector<std::pair<std::string, int>>{
           {"chief", 0}, {"worker", 0}, {"worker", 1}, {"ps", 0}}) {
    const std::string json = "{" + cluster + R"(, "task": {"type": ")" + type + R"(", "index": )" +
                             std::to_string(index) + "}}";
    StatusOr<ResolvedCluster> resolved = ResolveCluster({{"WEFT_CONFIG", json}});
    ASSERT_TRUE(resolved.ok()) << json << ": " << resolved.status();
    EXPECT_EQ(resolved->config.cluster.ToFlag(), "chief=c:1;ps=p0:4;worker=w0:2,w1:3");
    EXPECT_EQ(resolved->config.task.job, type);
    EXPECT_EQ(resolved->config.task.index, index);
  }
}

TEST(ClusterResolverTest, BadPsWeftConfigNamesTheJobOrTask) {
  ExpectError({{"WEFT_CONFIG", R"({"cluster": {"chief": ["a:1", "b:2"], "ps": ["p:4"]},
                 "task": {"type": "ps", "index": 0}})"}},
              {"WEFT_CONFIG", "job 'chief' has 2 tasks"});
  ExpectError({{"WEFT_CONFIG", R"({"cluster": {"chief": ["c:1"], "worker": ["w:3"], "ps": []},
                 "task": {"type": "worker", "index": 0}})"}},
              {"WEFT_CONFIG", "job 'ps' has no tasks"});
  ExpectError({{"WEFT_CONFIG", R"({"cluster": {"worker": ["w:3"], "ps": ["p:4"]},
                 "task": {"type": "chief", "index": 0}})"}},
              {"WEFT_CONFIG", "task chief:0", "no job 'chief'"});
}

TEST(ClusterResolverTest, BadTfConfigNamesTheProblem) {
  ExpectError({{"TF_CONFIG", "{"}}, {"TF_CONFIG", "not valid JSON"});
  ExpectError({{"TF_CONFIG", R"({"task": {}})"}}, {"TF_CONFIG", "cluster"});
  ExpectError({{"TF_CONFIG", R"({"cluster": {"worker": "a:1"}, "task": {"type": "worker"}})"}},
              {"TF_CONFIG", "'worker'", "list"});
  ExpectError({{"TF_CONFIG", R"({"cluster": {"worker": [7]}, "task": {"type": "worker"}})"}},
              {"TF_CONFIG", "not a string"});
  ExpectError({{"TF_CONFIG", R"({"cluster": {"worker": ["nohost"]}, "task": {"type": "worker"}})"}},
              {"TF_CONFIG", "nohost"});
  ExpectError(
      {{"TF_CONFIG", R"({"cluster": {"chief": ["a:1", "b:2"]}, "task": {"type": "chief"}})"}},
      {"TF_CONFIG", "'chief' has 2 tasks"});
  ExpectError({{"TF_CONFIG", R"({"cluster": {"worker": ["a:1"]}})"}}, {"TF_CONFIG", "task"});
  ExpectError({{"TF_CONFIG", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker",
               "index": "0"}})"}},
              {"TF_CONFIG", "index"});
  ExpectError({{"TF_CONFIG",
                R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 1}})"}},
              {"TF_CONFIG", "worker:1", "not in the cluster"});
  ExpectError({{"TF_CONFIG", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "chief"}})"}},
              {"TF_CONFIG", "no 'chief' job"});
  ExpectError(
      {{"TF_CONFIG", R"({"cluster": {"chief": ["a:1"]}, "task": {"type": "chief", "index": 1}})"}},
      {"TF_CONFIG", "chief task index 1"});
  ExpectError({{"TF_CONFIG", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "evaluator"}})"}},
              {"TF_CONFIG", "evaluator"});
}

TEST(ClusterResolverTest, BadWeftConfigAndDevicesNameTheVariable) {
  ExpectError({{"WEFT_CONFIG", "{"}}, {"WEFT_CONFIG"});
  ExpectError({{"WEFT_DEVICES_PER_WORKER", "two"}}, {"WEFT_DEVICES_PER_WORKER", "'two'"});
  ExpectError({{"WEFT_DEVICES_PER_WORKER", "0"}}, {"WEFT_DEVICES_PER_WORKER", "'0'"});
  ExpectError({{"WEFT_DEVICES_PER_WORKER", "3x"}}, {"WEFT_DEVICES_PER_WORKER", "'3x'"});
}

TEST(ClusterResolverTest, ReadsSlurm) {
  StatusOr<ResolvedCluster> resolved = ResolveCluster({{"SLURM_PROCID", "2"},
                                                       {"SLURM_NTASKS", "4"},
                                                       {"SLURM_LOCALID", "0"},
                                                       {"SLURM_NODEID", "1"},
                                                       {"SLURM_STEP_NODELIST", "node[01-02]"},
                                                       {"SLURM_JOB_NODELIST", "bad[list"},
                                                       {"WEFT_COORDINATOR", ":29500"}});
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->source, ClusterSource::kSlurm);
  EXPECT_TRUE(resolved->NeedsRendezvous());
  EXPECT_EQ(resolved->rank, 2);
  EXPECT_EQ(resolved->world_size, 4);
  EXPECT_EQ(resolved->host, "node02");
  EXPECT_EQ(resolved->coordinator, "node01:29500");
}

TEST(ClusterResolverTest, FlagCoordinatorAndWeftHostWin) {
  StatusOr<ResolvedCluster> resolved = ResolveCluster({{"SLURM_PROCID", "0"},
                                                       {"SLURM_NTASKS", "1"},
                                                       {"SLURMD_NODENAME", "n7"},
                                                       {"WEFT_HOST", "10.0.0.7"},
                                                       {"WEFT_COORDINATOR", "nonsense"}},
                                                      ResolveOptions{"head:1234"});
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->coordinator, "head:1234");
  EXPECT_EQ(resolved->host, "10.0.0.7");
}

TEST(ClusterResolverTest, BadSlurmNamesTheVariable) {
  const Environment good = {
      {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"WEFT_COORDINATOR", "head:1"}};
  auto with = [&](const std::string& name, const std::string& value) {
    Environment env = good;
    env[name] = value;
    return env;
  };
  ExpectError(with("SLURM_NTASKS", ""), {"SLURM_NTASKS"});
  ExpectError(with("SLURM_NTASKS", "0"), {"SLURM_NTASKS='0'"});
  ExpectError(with("SLURM_PROCID", "2"), {"SLURM_PROCID='2'", "[0, 1]"});
  ExpectError(with("SLURM_PROCID", "-1"), {"SLURM_PROCID='-1'"});
  ExpectError(with("SLURM_LOCALID", "x"), {"SLURM_LOCALID='x'"});
  ExpectError(with("SLURM_JOB_NODELIST", "n[1-"), {"SLURM_JOB_NODELIST", "n[1-"});
  ExpectError(with("SLURM_STEP_NODELIST", "n[2-1]"), {"SLURM_STEP_NODELIST", "'2-1'"});
  Environment with_node = with("SLURM_STEP_NODELIST", "n[1-2]");
  with_node["SLURM_NODEID"] = "2";
  ExpectError(with_node, {"SLURM_NODEID='2'"});
  ExpectError(with("WEFT_COORDINATOR", ""), {"Slurm", "rank 1 of 2", "WEFT_COORDINATOR"});
  ExpectError(with("WEFT_COORDINATOR", "head"), {"WEFT_COORDINATOR='head'", "HOST:PORT"});
  ExpectError(with("WEFT_COORDINATOR", "head:0"), {"WEFT_COORDINATOR='head:0'", "port"});
  ExpectError(with("WEFT_COORDINATOR", ":80"), {"WEFT_COORDINATOR=':80'", "no host"});
  ExpectError(good, {"--coordinator='x:y'"}, ResolveOptions{"x:y"});
}

TEST(ClusterResolverTest, ReadsOpenMpi) {
  StatusOr<ResolvedCluster> resolved = ResolveCluster({{"OMPI_COMM_WORLD_RANK", "1"},
                                                       {"OMPI_COMM_WORLD_SIZE", "3"},
                                                       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                                       {"WEFT_COORDINATOR", "127.0.0.1:5000"}});
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->source, ClusterSource::kOpenMpi);
  EXPECT_EQ(resolved->rank, 1);
  EXPECT_EQ(resolved->world_size, 3);
  EXPECT_EQ(resolved->local_rank, 1);
  EXPECT_EQ(resolved->host, "");
  EXPECT_EQ(resolved->coordinator, "127.0.0.1:5000");
}

TEST(ClusterResolverTest, BadOpenMpiNamesTheVariable) {
  ExpectError({{"OMPI_COMM_WORLD_RANK", "0"}, {"WEFT_COORDINATOR", "h:1"}},
              {"OMPI_COMM_WORLD_SIZE"});
  ExpectError({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "2"}},
              {"OMPI_COMM_WORLD_RANK='5'"});
  ExpectError({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "two"}},
              {"OMPI_COMM_WORLD_SIZE='two'"});
  ExpectError({{"OMPI_COMM_WORLD_RANK", "0"},
               {"OMPI_COMM_WORLD_SIZE", "2"},
               {"OMPI_COMM_WORLD_LOCAL_RANK", "9"}},
              {"OMPI_COMM_WORLD_LOCAL_RANK='9'"});
  ExpectError({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}},
              {"Open MPI", "WEFT_COORDINATOR"});
  ExpectError(
      {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"WEFT_COORDINATOR", ":80"}},
      {"WEFT_COORDINATOR", "no host"});
}

}  // namespace
}  // namespace weft
