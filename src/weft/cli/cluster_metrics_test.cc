// The metrics endpoints of a real two-task cluster: `weft server --metrics-port 0` on both tasks,
// steps of a graph whose result on task 0 reads tensors of task 1, and a scrape before and after
// that shows the steps, their latencies, the bytes per peer and the RPCs by method all move.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "weft/cli/testing/cluster_test_util.h"
#include "weft/cli/testing/metrics_test_util.h"
#include "weft/core/str_util.h"
#include "weft/distributed/rpc/grpc_session.h"

namespace weft::cli {
namespace {

using testing::Addresses;
using testing::ClusterOptions;
using testing::CrossTaskGraph;
using testing::kTask0;
using testing::kTask1;
using testing::NewInitializedCrossTaskSession;
using testing::StartCluster;

constexpr char kMetricsLine[] = "weft server metrics at http://";
constexpr int kSteps = 5;

// GET /metrics of the endpoint at "127.0.0.1:PORT/metrics"; "" (and the test failed) on error.
std::string Scrape(const std::string& url) {
  const std::string address = url.substr(0, url.find('/'));
  httplib::Result result = testing::ClientFor(address)->Get("/metrics");
  EXPECT_TRUE(result) << "scraping " << url << ": " << httplib::to_string(result.error());
  if (!result) return "";
  EXPECT_EQ(result->status, 200);
  return result->body;
}

// The value of `series` (name and labels exactly as exported); 0 when it is not there yet.
double Sample(const std::string& text, const std::string& series) {
  const std::string line_start = "\n" + series + " ";
  const size_t at = ("\n" + text).find(line_start);
  return at == std::string::npos ? 0 : std::stod(text.substr(at + line_start.size() - 1));
}

TEST(ClusterMetricsTest, ValuesMoveAfterSteps) {
  auto servers = StartCluster(2, {"--metrics-port", "0"});
  ASSERT_EQ(servers.size(), 2u);
  std::vector<std::string> urls;
  for (auto& server : servers) {
    StatusOr<std::string> url = server->ReadLineAfter(kMetricsLine, 20000);
    ASSERT_TRUE(url.ok()) << url.status();
    EXPECT_EQ(url->rfind("127.0.0.1:", 0), 0u) << *url;  // loopback unless told otherwise
    urls.push_back(*url);
  }
  const std::string before0 = Scrape(urls[0]);
  const std::string before1 = Scrape(urls[1]);

  CrossTaskGraph graph;
  std::unique_ptr<Session> session =
      NewInitializedCrossTaskSession(ClusterOptions(Addresses(servers)), &graph);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> outputs;
  for (int step = 0; step < kSteps; ++step) {
    ASSERT_TRUE(
        session->Run({{graph.x, Tensor::Scalar(1.0f)}}, {graph.y}, {graph.update}, &outputs).ok());
  }
  ASSERT_TRUE(session->Close().ok());
  const std::string after0 = Scrape(urls[0]);
  const std::string after1 = Scrape(urls[1]);

  EXPECT_THAT(after0, ::testing::HasSubstr("# TYPE weft_rpc_server_seconds histogram"));
  auto moved = [](const std::string& before, const std::string& after, const std::string& series) {
    return Sample(after, series) - Sample(before, series);
  };
  // Task 0 hosts the master: the initialisation and kSteps steps, each a RunGraph on both tasks.
  EXPECT_GE(moved(before0, after0, R"(weft_steps_total{role="master",code="OK"})"), kSteps + 1)
      << after0;
  EXPECT_GE(moved(before0, after0, R"(weft_step_seconds_count{role="master"})"), kSteps + 1);
  EXPECT_GT(moved(before0, after0, R"(weft_step_seconds_sum{role="master"})"), 0);
  EXPECT_GE(moved(before1, after1, R"(weft_steps_total{role="worker",code="OK"})"), kSteps)
      << after1;
  EXPECT_GE(
      moved(
          before1, after1,
          R"(weft_rpc_server_seconds_count{method="/weft.proto.WorkerService/RunGraph",code="OK"})"),
      kSteps);
  // y (task 0) reads two scalars of task 1 every step: 8 bytes each way, counted at both ends.
  EXPECT_GE(moved(before0, after0, StrCat(R"(weft_received_bytes_total{peer=")", kTask1, R"("})")),
            8 * kSteps);
  EXPECT_GE(moved(before1, after1, StrCat(R"(weft_sent_bytes_total{peer=")", kTask0, R"("})")),
            8 * kSteps);
}

}  // namespace
}  // namespace weft::cli
