// WorkerSessions over fake workers (sessions of a "fakeworker://" target whose worker can be taken
// down and brought back as a new incarnation): a lost worker's session is re-created with every
// graph delta once it answers, a restarted ps is restored once, Recover gives up at its deadline
// naming the worker, StopRecoveries ends a waiting Recover at once, and the model's own session
// moves on to a worker that is there.
#include "weft/train/worker_sessions.h"

#include <chrono>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "weft/core/notification.h"
#include "weft/core/str_util.h"

namespace weft::train {
namespace {

// The fake workers, by target: whether each is up and its incarnation.
class FakeWorkers {
 public:
  static FakeWorkers& Get() {
    static FakeWorkers* workers = new FakeWorkers();
    return *workers;
  }
  void Set(const std::string& target, bool up) {
    MutexLock lock(mu_);
    if (up && !up_[target]) ++incarnation_[target];
    up_[target] = up;
  }
  // The incarnation serving `target`, or -1 when it is down.
  int Serving(const std::string& target) {
    MutexLock lock(mu_);
    return up_[target] ? incarnation_[target] : -1;
  }

 private:
  Mutex mu_;
  std::map<std::string, bool> up_ WEFT_GUARDED_BY(mu_);
  std::map<std::string, int> incarnation_ WEFT_GUARDED_BY(mu_);
};

// The fake ps task every fake worker's session also uses (as a ParameterServerStrategy worker's
// session uses the ps tasks): its state goes with its incarnation.
constexpr char kPsTarget[] = "fakeps";
constexpr char kPsDevice[] = "/job:ps/replica:0/task:0/device:CPU:0";

// A session on one fake worker incarnation and the fake ps's: Run fetches how many nodes it was
// given; either restarting loses the session.
class FakeSession final : public Session {
 public:
  explicit FakeSession(std::string target) : target_(std::move(target)) {}
  Status Create(const proto::GraphDef& graph) override {
    incarnation_ = FakeWorkers::Get().Serving(target_);
    ps_incarnation_ = FakeWorkers::Get().Serving(kPsTarget);
    return Extend(graph);
  }
  Status Extend(const proto::GraphDef& graph) override {
    WEFT_RETURN_IF_ERROR(CheckThere());
    nodes_ += graph.node_size();
    return Status::OK();
  }
  Status Run(const NamedTensorList&, const std::vector<std::string>&,
             const std::vector<std::string>&, std::vector<Tensor>* outputs) override {
    WEFT_RETURN_IF_ERROR(CheckThere());
    *outputs = {Tensor::FromVector<int64_t>({nodes_.load()})};
    return Status::OK();
  }
  Status Run(const proto::RunOptions&, const NamedTensorList& inputs,
             const std::vector<std::string>& outputs_names, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs, proto::RunMetadata*) override {
    return Run(inputs, outputs_names, targets, outputs);
  }
  Status ListDevices(std::vector<proto::DeviceAttributes>* devices) override {
    WEFT_RETURN_IF_ERROR(CheckThere());
    devices->resize(2);
    (*devices)[0].set_name(StrCat(target_, "/device:CPU:0"));
    (*devices)[0].set_incarnation(static_cast<uint64_t>(incarnation_));
    (*devices)[1].set_name(kPsDevice);
    (*devices)[1].set_incarnation(static_cast<uint64_t>(ps_incarnation_));
    return Status::OK();
  }
  Status Close() override { return Status::OK(); }

 private:
  Status CheckThere() const {
    const int serving = FakeWorkers::Get().Serving(target_);
    if (serving < 0 || serving != incarnation_) {
      return Unavailable("fake worker ", target_, " is gone (incarnation ", incarnation_, ")");
    }
    const int ps = FakeWorkers::Get().Serving(kPsTarget);
    if (ps < 0 || ps != ps_incarnation_) {
      return Aborted("the fake ps lost the session (incarnation ", ps_incarnation_, ")");
    }
    return Status::OK();
  }

  const std::string target_;
  int incarnation_ = -1;
  int ps_incarnation_ = -1;
  std::atomic<int64_t> nodes_{0};
};

constexpr char kScheme[] = "fakeworker://";

// A graph of `nodes` NoOps named after `prefix`.
proto::GraphDef Graph(const std::string& prefix, int nodes) {
  proto::GraphDef graph;
  for (int i = 0; i < nodes; ++i) {
    proto::NodeDef* node = graph.add_node();
    node->set_name(StrCat(prefix, i));
    node->set_op("NoOp");
  }
  return graph;
}

class WorkerSessionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static const bool registered = [] {
      RegisterSessionFactory(kScheme, [](const SessionOptions& options) {
        return StatusOr<std::unique_ptr<Session>>(std::make_unique<FakeSession>(options.target));
      });
      return true;
    }();
    (void)registered;
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    FakeWorkers::Get().Set(kPsTarget, true);
    std::vector<SessionOptions> options;
    for (int w = 0; w < 2; ++w) {
      targets_.push_back(StrCat(kScheme, test->name(), "/", w));
      FakeWorkers::Get().Set(targets_.back(), true);
      options.emplace_back();
      options.back().target = targets_.back();
    }
    auto made =
        WorkerSessions::Create(std::move(options), {targets_[0], targets_[1]}, Graph("a", 3),
                               [this](Session& session, const std::vector<std::string>& tasks) {
                                 // The new session is usable: restoring runs steps in it.
                                 std::vector<Tensor> outputs;
                                 WEFT_RETURN_IF_ERROR(session.Run({}, {"count"}, {}, &outputs));
                                 MutexLock lock(restores_mu_);
                                 restores_.push_back(tasks);
                                 return Status::OK();
                               });
    ASSERT_TRUE(made.ok()) << made.status();
    sessions_ = std::move(made).value();
  }

  // The node count worker `w`'s current session reports.
  StatusOr<int64_t> Nodes(int w) {
    std::vector<Tensor> outputs;
    WEFT_RETURN_IF_ERROR(sessions_->session(w)->Run({}, {"count"}, {}, &outputs));
    return outputs[0].data<int64_t>()[0];
  }

  std::vector<std::vector<std::string>> Restores() {
    MutexLock lock(restores_mu_);
    return restores_;
  }

  std::vector<std::string> targets_;
  Mutex restores_mu_;
  std::vector<std::vector<std::string>> restores_ WEFT_GUARDED_BY(restores_mu_);
  std::unique_ptr<WorkerSessions> sessions_;
};

TEST_F(WorkerSessionsTest, ALostWorkersSessionIsRecreatedWithTheWholeGraphOnceItAnswers) {
  ASSERT_TRUE(sessions_->Extend(Graph("b", 2)).ok());
  EXPECT_EQ(Nodes(1).value(), 5);
  FakeWorkers::Get().Set(targets_[1], false);
  EXPECT_TRUE(IsUnavailable(Nodes(1).status()));
  Status recovered;
  Notification done;
  std::thread recovering([&] {
    recovered = sessions_->Recover(1, std::chrono::seconds(30));
    done.Notify();
  });
  FakeWorkers::Get().Set(targets_[1], true);  // a new incarnation: the old session stays gone
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(std::chrono::seconds(20)));
  recovering.join();
  ASSERT_TRUE(recovered.ok()) << recovered;
  EXPECT_EQ(Nodes(1).value(), 5);  // the first graph and the delta sent since
  EXPECT_EQ(sessions_->recoveries(), 1);
  EXPECT_EQ(Nodes(0).value(), 5);   // the other worker's session is untouched
  EXPECT_TRUE(Restores().empty());  // a worker's own restart loses no state
}

// A restarted ps (a new incarnation) is restored once, by the first worker that comes back to it,
// before that worker's new session is used; the second finds it restored.
TEST_F(WorkerSessionsTest, ARestartedPsIsRestoredOnceBeforeAnyStepRunsOnIt) {
  FakeWorkers::Get().Set(kPsTarget, false);
  FakeWorkers::Get().Set(kPsTarget, true);
  EXPECT_TRUE(IsAborted(Nodes(0).status()));
  EXPECT_TRUE(IsAborted(Nodes(1).status()));
  ASSERT_TRUE(sessions_->Recover(1, std::chrono::seconds(30)).ok());
  ASSERT_EQ(Restores().size(), 1u);
  EXPECT_EQ(Restores()[0], std::vector<std::string>{"/job:ps/replica:0/task:0"});
  ASSERT_TRUE(sessions_->Recover(0, std::chrono::seconds(30)).ok());
  EXPECT_EQ(Restores().size(), 1u);
  EXPECT_EQ(Nodes(0).value(), 3);
  EXPECT_EQ(Nodes(1).value(), 3);
}

TEST_F(WorkerSessionsTest, RecoverGivesUpAtItsDeadlineNamingTheWorker) {
  FakeWorkers::Get().Set(targets_[1], false);
  const auto start = std::chrono::steady_clock::now();
  Status recovered = sessions_->Recover(1, std::chrono::milliseconds(300));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_TRUE(IsUnavailable(recovered)) << recovered;
  EXPECT_NE(recovered.message().find(targets_[1] + " did not come back within 300 ms"),
            std::string::npos)
      << recovered;
  EXPECT_EQ(sessions_->recoveries(), 0);
}

TEST_F(WorkerSessionsTest, StopRecoveriesEndsAWaitingRecoverAtOnce) {
  FakeWorkers::Get().Set(targets_[0], false);
  Status recovered;
  Notification done;
  std::thread recovering([&] {
    recovered = sessions_->Recover(0, std::chrono::minutes(5));
    done.Notify();
  });
  sessions_->StopRecoveries();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(std::chrono::seconds(20)));
  recovering.join();
  EXPECT_TRUE(IsCancelled(recovered)) << recovered;
  EXPECT_NE(recovered.message().find(targets_[0]), std::string::npos) << recovered;
}

TEST_F(WorkerSessionsTest, TheModelsSessionRunsInAWorkerThatIsThere) {
  std::unique_ptr<Session> any = sessions_->NewAnyWorkerSession();
  ASSERT_TRUE(any->Extend(Graph("c", 4)).ok());
  FakeWorkers::Get().Set(targets_[0], false);
  std::vector<Tensor> outputs;
  ASSERT_TRUE(any->Run({}, {"count"}, {}, &outputs).ok());
  EXPECT_EQ(outputs[0].data<int64_t>()[0], 7);
  FakeWorkers::Get().Set(targets_[1], false);
  Status none = any->Run({}, {"count"}, {}, &outputs);
  EXPECT_TRUE(IsUnavailable(none)) << none;
  EXPECT_TRUE(IsAlreadyExists(any->Create(Graph("d", 1))));
}

}  // namespace
}  // namespace weft::train
