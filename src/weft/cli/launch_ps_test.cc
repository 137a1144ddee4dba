// `weft launch --ps` end to end: the real binary starts real `weft server` workers and ps tasks
// on loopback and a shell command as the chief. Checks the "started" lines and the cluster the
// chief sees, that the launch exits with the chief's code and leaves no server behind, that
// --restart-failed brings a killed server back on its address (and gives up after
// --max-restarts), that without it a killed server is only named, that parameter-server training
// survives a killed worker and a killed ps, resumes from its checkpoint after a killed chief and
// names a ps task that does not answer, and the flag errors. Every
// launch is a ChildProcess, stopped with SIGTERM (which it forwards) if a test ends early, and its
// processes killed if even that fails.
#include <cerrno>
#include <csignal>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "weft/core/str_util.h"
#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/io/testing/io_test_util.h"
#include "weft/testing/child_process.h"

namespace weft::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using weft::testing::ChildProcess;

constexpr int64_t kWaitMs = 20000;

// One "weft launch: started|restarted TASK pid PID at ADDRESS" line.
struct Start {
  std::string verb;
  std::string task;
  pid_t pid = -1;
  std::string address;
};

std::vector<Start> Starts(const std::string& output) {
  static const std::regex kLine(R"(^weft launch: (started|restarted) (\S+) pid (\d+) at (\S+)$)");
  std::vector<Start> starts;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (!std::regex_match(line, match, kLine)) continue;
    starts.push_back({match[1], match[2], static_cast<pid_t>(std::stol(match[3])), match[4]});
  }
  return starts;
}

Start FindStart(const std::string& output, const std::string& verb, const std::string& task) {
  for (const Start& start : Starts(output)) {
    if (start.verb == verb && start.task == task) return start;
  }
  ADD_FAILURE() << "no '" << verb << " " << task << "' line in:\n" << output;
  return {};
}

// Reaped by the launch: no process has the pid (not even a zombie).
bool Gone(pid_t pid) { return ::kill(pid, 0) == -1 && errno == ESRCH; }

// A `weft launch` run: asks it to stop (SIGTERM, which it forwards to every process) and waits
// for it when a test returns before it exited.
class Launch {
 public:
  explicit Launch(const std::vector<std::string>& argv) {
    StatusOr<std::unique_ptr<ChildProcess>> started = ChildProcess::Start(argv);
    EXPECT_TRUE(started.ok()) << started.status();
    if (started.ok()) process_ = std::move(started).value();
  }
  ~Launch() {
    if (process_ == nullptr || exited_) return;
    process_->Signal(SIGTERM);
    if (process_->WaitForExit(kWaitMs).ok()) return;
    // A launch that does not stop has not reaped its children either, so these pids are still
    // theirs; the ChildProcess then kills the launch itself.
    for (const Start& start : Starts(output())) ::kill(start.pid, SIGKILL);
  }

  bool ok() const { return process_ != nullptr; }
  const std::string& output() const { return process_->output(); }
  Status WaitFor(const std::string& text, size_t from = 0) {
    return process_->WaitForOutput(text, kWaitMs, from);
  }
  int Exit(int64_t wait_ms = kWaitMs) {
    StatusOr<int> code = process_->WaitForExit(wait_ms);
    EXPECT_TRUE(code.ok()) << code.status() << "\n" << output();
    exited_ = code.ok();
    return code.ok() ? *code : -1;
  }

 private:
  std::unique_ptr<ChildProcess> process_;
  bool exited_ = false;
};

std::vector<std::string> LaunchArgs(const std::vector<std::string>& flags,
                                    const std::string& chief_script) {
  std::vector<std::string> argv = {WEFT_BINARY, "launch"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--", "sh", "-c", chief_script});
  return argv;
}

// The chief's script: exits 0 once `path` exists, 9 after about 20 s.
std::string AwaitFile(const std::string& path) {
  return "for i in $(seq 400); do [ -e '" + path + "' ] && exit 0; sleep 0.05; done; echo 'no " +
         path + "'; exit 9";
}

void Touch(const std::string& path) { std::ofstream(path) << "go\n"; }

TEST(LaunchPsTest, StartsEveryTaskAndTheChiefSeesTheWholeCluster) {
  // The launch's stderr is dropped: the "started" lines must come on stdout.
  std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$@\" 2>/dev/null", "sh"};
  for (const std::string& arg :
       LaunchArgs({"--workers", "2", "--ps", "1"}, "echo \"cfg $WEFT_CONFIG\"; exit 3")) {
    argv.push_back(arg);
  }
  Launch launch(argv);
  ASSERT_TRUE(launch.ok());
  EXPECT_EQ(launch.Exit(), 3) << launch.output();
  const std::vector<Start> starts = Starts(launch.output());
  std::vector<std::string> tasks;
  for (const Start& start : starts) tasks.push_back(start.verb + " " + start.task);
  EXPECT_THAT(tasks, ::testing::UnorderedElementsAre("started worker:0", "started worker:1",
                                                     "started ps:0", "started chief:0"))
      << launch.output();
  std::map<std::string, std::string> address_of;
  for (const Start& start : starts) address_of[start.task] = start.address;

  const std::string marker = "[chief] cfg ";
  const size_t at = launch.output().find(marker);
  ASSERT_NE(at, std::string::npos) << launch.output();
  const size_t end = launch.output().find('\n', at);
  StatusOr<ServerConfig> config =
      ParseWeftConfig(launch.output().substr(at + marker.size(), end - at - marker.size()));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->task.job, "chief");
  EXPECT_EQ(config->task.index, 0);
  EXPECT_EQ(config->cluster.ToFlag(),
            StrCat("chief=", address_of["chief:0"], ";ps=", address_of["ps:0"],
                   ";worker=", address_of["worker:0"], ",", address_of["worker:1"]));
  for (const Start& start : starts) EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
}

TEST(LaunchPsTest, RestartFailedBringsAKilledServerBackOnItsAddress) {
  io::testing::TempDir dir;
  Launch launch(LaunchArgs({"--workers", "1", "--ps", "1", "--restart-failed", "--max-restarts",
                            "1", "--timeout-ms", "5000"},
                           AwaitFile(dir.File("go"))));
  ASSERT_TRUE(launch.ok());
  ASSERT_TRUE(launch.WaitFor("weft launch: started chief:0").ok()) << launch.output();
  const Start ps = FindStart(launch.output(), "started", "ps:0");
  const std::string listening = "[ps 0] weft server listening on " + ps.address + "\n";
  ASSERT_TRUE(launch.WaitFor(listening).ok()) << launch.output();

  ASSERT_EQ(::kill(ps.pid, SIGKILL), 0);
  ASSERT_TRUE(
      launch.WaitFor(StrCat("weft launch: ps:0 (pid ", ps.pid, ") exited with signal 9")).ok())
      << launch.output();
  ASSERT_TRUE(launch.WaitFor("weft launch: restarted ps:0 pid ").ok()) << launch.output();
  const Start again = FindStart(launch.output(), "restarted", "ps:0");
  EXPECT_EQ(again.address, ps.address);
  EXPECT_NE(again.pid, ps.pid);
  // The new server serves the same task on the same address.
  const size_t restarted_at = launch.output().find("weft launch: restarted ps:0");
  ASSERT_TRUE(launch.WaitFor(listening, restarted_at).ok()) << launch.output();

  // Its one restart used, the next loss is only reported.
  ASSERT_EQ(::kill(again.pid, SIGKILL), 0);
  ASSERT_TRUE(launch.WaitFor("weft launch: giving up on ps:0 after 1 restart(s)").ok())
      << launch.output();

  Touch(dir.File("go"));
  EXPECT_EQ(launch.Exit(), 0) << launch.output();
  EXPECT_EQ(Starts(launch.output()).size(), 4u) << launch.output();
  for (const Start& start : Starts(launch.output())) {
    EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
  }
}

TEST(LaunchPsTest, WithoutRestartAKilledServerIsNamedAndTheChiefFinishes) {
  io::testing::TempDir dir;
  Launch launch(LaunchArgs({"--workers", "1", "--ps", "2"}, AwaitFile(dir.File("go"))));
  ASSERT_TRUE(launch.ok());
  ASSERT_TRUE(launch.WaitFor("weft launch: started chief:0").ok()) << launch.output();
  // Every server serves its own task of the launch's cluster.
  for (const char* task : {"worker:0", "ps:0", "ps:1"}) {
    const Start server = FindStart(launch.output(), "started", task);
    const std::string job = std::string(task).substr(0, std::string(task).find(':'));
    const std::string index = std::string(task).substr(job.size() + 1);
    ASSERT_TRUE(launch
                    .WaitFor(StrCat("[", job, " ", index, "] weft server listening on ",
                                    server.address, "\n"))
                    .ok())
        << launch.output();
  }
  const Start ps = FindStart(launch.output(), "started", "ps:1");
  ASSERT_EQ(::kill(ps.pid, SIGKILL), 0);
  ASSERT_TRUE(
      launch.WaitFor(StrCat("weft launch: ps:1 (pid ", ps.pid, ") exited with signal 9")).ok())
      << launch.output();

  Touch(dir.File("go"));
  EXPECT_EQ(launch.Exit(), 0) << launch.output();
  EXPECT_THAT(launch.output(), Not(HasSubstr("restarted")));
  for (const Start& start : Starts(launch.output())) {
    EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
  }
}

// `weft train --strategy parameter_server` as the chief of the launch: steps on both workers, the
// variables on both ps tasks, and nothing left running after it.
TEST(LaunchPsTest, ParameterServerTrainingRunsAsTheChief) {
  Launch launch(LaunchArgs(
      {"--workers", "2", "--ps", "2"},
      StrCat("exec ", WEFT_BINARY, " train --strategy parameter_server --max-steps 40 --json")));
  ASSERT_TRUE(launch.ok());
  ASSERT_EQ(launch.Exit(), 0) << launch.output();
  EXPECT_THAT(launch.output(), HasSubstr("\"ps_tasks\":2")) << launch.output();
  EXPECT_THAT(launch.output(), HasSubstr("\"workers\":2"));
  EXPECT_THAT(launch.output(), HasSubstr("\"steps\":40"));
  for (const Start& start : Starts(launch.output())) {
    EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
  }
}

// A worker killed while training (SIGKILL) and brought back by --restart-failed: its step is
// rescheduled on the other worker, its session re-created once it answers, and the job ends well.
TEST(LaunchPsTest, ParameterServerTrainingSurvivesAKilledWorker) {
  Launch launch(LaunchArgs(
      {"--workers", "2", "--ps", "2", "--restart-failed"},
      StrCat("exec ", WEFT_BINARY, " train --strategy parameter_server --epochs 2 --json")));
  ASSERT_TRUE(launch.ok());
  ASSERT_TRUE(launch.WaitFor("weft train: the first step finished").ok()) << launch.output();
  const Start worker = FindStart(launch.output(), "started", "worker:1");
  ASSERT_EQ(::kill(worker.pid, SIGKILL), 0);
  ASSERT_TRUE(launch.WaitFor("weft launch: restarted worker:1").ok()) << launch.output();
  const std::string name = "/job:worker/replica:0/task:1";
  ASSERT_TRUE(launch.WaitFor(StrCat("worker ", name, " is back: it takes steps again")).ok())
      << launch.output();
  // Two epochs of W1: seconds here, a minute or more under the sanitizers.
  ASSERT_EQ(launch.Exit(/*wait_ms=*/300'000), 0) << launch.output();
  const std::string output = launch.output();
  EXPECT_THAT(output, HasSubstr(StrCat("lost with worker ", name))) << output;
  EXPECT_THAT(output, HasSubstr("rescheduled on another"));
  EXPECT_THAT(output, HasSubstr("\"worker_recoveries\":1"));
  // Every step of both epochs ran, and the model learned.
  EXPECT_THAT(output, HasSubstr("\"steps\":936"));
  std::smatch accuracy;
  ASSERT_TRUE(std::regex_search(output, accuracy, std::regex(R"("test_accuracy":([0-9.]+))")));
  EXPECT_GT(std::stod(accuracy[1]), 0.75) << output;
  std::smatch rescheduled;
  ASSERT_TRUE(std::regex_search(output, rescheduled, std::regex(R"("rescheduled_steps":(\d+))")));
  EXPECT_GE(std::stoi(rescheduled[1]), 1);
  for (const Start& start : Starts(output)) {
    EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
  }
}

// Without ps tasks the strategy names what it needs, and the chief's error ends the launch.
TEST(LaunchPsTest, ParameterServerTrainingWithoutAClusterNamesWhatItNeeds) {
  Launch launch({WEFT_BINARY, "train", "--strategy", "parameter_server", "--max-steps", "1"});
  ASSERT_TRUE(launch.ok());
  EXPECT_EQ(launch.Exit(), 2) << launch.output();
  EXPECT_THAT(launch.output(), HasSubstr("--ps M")) << launch.output();
  Launch workers_only(
      LaunchArgs({"--workers", "1"},
                 StrCat("exec ", WEFT_BINARY, " train --strategy parameter_server --max-steps 1")));
  ASSERT_TRUE(workers_only.ok());
  EXPECT_NE(workers_only.Exit(), 0) << workers_only.output();
  EXPECT_THAT(workers_only.output(), HasSubstr("'ps' job")) << workers_only.output();
}

// A ps task killed while training (SIGKILL) and restarted empty by --restart-failed: the workers'
// steps on it are rescheduled, the first worker to reach it again restores its variables from
// the coordinator's snapshot, and training goes on to the end without a restart of the chief.
TEST(LaunchPsTest, ParameterServerTrainingSurvivesAKilledPs) {
  Launch launch(LaunchArgs(
      {"--workers", "2", "--ps", "2", "--restart-failed"},
      StrCat("exec ", WEFT_BINARY, " train --strategy parameter_server --epochs 2 --json")));
  ASSERT_TRUE(launch.ok());
  ASSERT_TRUE(launch.WaitFor("weft train: the first step finished").ok()) << launch.output();
  const Start ps = FindStart(launch.output(), "started", "ps:0");
  ASSERT_EQ(::kill(ps.pid, SIGKILL), 0);
  ASSERT_TRUE(launch.WaitFor("weft launch: restarted ps:0").ok()) << launch.output();
  ASSERT_TRUE(
      launch.WaitFor("/job:ps/replica:0/task:0 restarted and lost its variables: restored").ok())
      << launch.output();
  ASSERT_EQ(launch.Exit(/*wait_ms=*/300'000), 0) << launch.output();
  const std::string output = launch.output();
  EXPECT_THAT(output, HasSubstr("\"ps_recoveries\":1")) << output;
  EXPECT_THAT(output, HasSubstr("\"steps\":936"));
  std::smatch lost;
  ASSERT_TRUE(std::regex_search(output, lost, std::regex(R"("steps_lost":(\d+))")));
  // At most the steps between two snapshots (every 100 steps), plus those in flight.
  EXPECT_LE(std::stoi(lost[1]), 110) << output;
  std::smatch accuracy;
  ASSERT_TRUE(std::regex_search(output, accuracy, std::regex(R"("test_accuracy":([0-9.]+))")));
  EXPECT_GT(std::stod(accuracy[1]), 0.75) << output;
  for (const Start& start : Starts(output)) {
    EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
  }
}

// The chief killed (SIGKILL) after a checkpoint: the launch stops every server, and running the
// same command again resumes from the checkpoint and trains to the end.
TEST(LaunchPsTest, ParameterServerChiefKilledAndRunAgainResumesFromItsCheckpoint) {
  io::testing::TempDir dir;
  const std::vector<std::string> argv = LaunchArgs(
      {"--workers", "2", "--ps", "2"},
      StrCat("exec ", WEFT_BINARY, " train --strategy parameter_server --epochs 2 --json ",
             "--checkpoint-dir ", dir.File("checkpoints"), " --save-every-steps 50"));
  {
    Launch first(argv);
    ASSERT_TRUE(first.ok());
    ASSERT_TRUE(first.WaitFor("weft train: saved checkpoint ").ok()) << first.output();
    const Start chief = FindStart(first.output(), "started", "chief:0");
    ASSERT_EQ(::kill(chief.pid, SIGKILL), 0);
    EXPECT_NE(first.Exit(), 0) << first.output();
    for (const Start& start : Starts(first.output())) {
      EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
    }
  }
  Launch again(argv);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again.Exit(/*wait_ms=*/300'000), 0) << again.output();
  const std::string output = again.output();
  std::smatch resumed;
  ASSERT_TRUE(std::regex_search(output, resumed, std::regex(R"("resumed_from_step":(-?\d+))")))
      << output;
  EXPECT_GE(std::stoi(resumed[1]), 50) << output;
  EXPECT_EQ(std::stoi(resumed[1]) % 50, 0) << output;
  EXPECT_THAT(output, HasSubstr("\"steps\":936"));
}

// A loopback port nobody answers on while the object lives: bound, never listened on.
class DeadPort {
 public:
  DeadPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ADD_FAILURE() << "could not bind a loopback port";
      return;
    }
    port_ = ntohs(address.sin_port);
  }
  ~DeadPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  std::string address() const { return StrCat("127.0.0.1:", port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A cluster whose ps task does not answer: the chief's error names the ps task and its address,
// within the worker timeout, and nothing is left running.
TEST(LaunchPsTest, ParameterServerTrainingNamesAPsTaskThatDoesNotAnswer) {
  DeadPort ps;
  auto worker = ChildProcess::Start(
      {WEFT_BINARY, "server", "--cluster", "worker=127.0.0.1:0", "--task", "0"});
  ASSERT_TRUE(worker.ok()) << worker.status();
  ASSERT_TRUE((*worker)->WaitForOutput("weft server listening on ", kWaitMs).ok());
  const std::string output = (*worker)->output();
  const size_t at = output.find("listening on ") + std::string("listening on ").size();
  const std::string worker_address = output.substr(at, output.find('\n', at) - at);
  const std::string config =
      StrCat(R"({"cluster": {"chief": ["127.0.0.1:0"], "worker": [")", worker_address,
             R"("], "ps": [")", ps.address(), R"("]}, "task": {"type": "chief", "index": 0}})");
  auto chief = ChildProcess::Start({WEFT_BINARY, "train", "--strategy", "parameter_server",
                                    "--max-steps", "1", "--worker-timeout-ms", "2000"},
                                   {{"WEFT_CONFIG", config}});
  ASSERT_TRUE(chief.ok()) << chief.status();
  StatusOr<int> code = (*chief)->WaitForExit(kWaitMs);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 1) << (*chief)->output();
  EXPECT_THAT((*chief)->output(), HasSubstr(StrCat("/job:ps/replica:0/task:0 at ", ps.address())))
      << (*chief)->output();
  EXPECT_THAT((*chief)->output(), HasSubstr("2000 ms")) << (*chief)->output();
  (*worker)->Signal(SIGTERM);
  EXPECT_TRUE((*worker)->WaitForExit(kWaitMs).ok());
}

TEST(LaunchPsTest, BadFlagsExit2NamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--workers", "0", "--ps", "1"}, "--workers"},
      {{"--workers", "1", "--ps", "-1"}, "--ps"},
      {{"--workers", "1", "--ps", "0"}, "--ps"},
      {{"--workers", "1", "--restart-failed"}, "--restart-failed requires --ps"},
      {{"--workers", "1", "--ps", "1", "--max-restarts", "2"},
       "--max-restarts requires --restart-failed"},
      {{"--workers", "1", "--ps", "1", "--restart-failed", "--max-restarts", "-1"},
       "--max-restarts"},
  };
  for (const auto& [flags, message] : cases) {
    Launch launch(LaunchArgs(flags, "exit 0"));
    ASSERT_TRUE(launch.ok());
    EXPECT_EQ(launch.Exit(), 2) << StrJoin(flags, " ") << "\n" << launch.output();
    EXPECT_THAT(launch.output(), HasSubstr(message)) << StrJoin(flags, " ");
    EXPECT_THAT(launch.output(), Not(HasSubstr("weft launch: started")));
  }
}

}  // namespace
}  // namespace weft::cli
