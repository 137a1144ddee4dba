#include "weft/cli/metrics_endpoint.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "weft/cli/testing/metrics_test_util.h"
#include "weft/core/metrics.h"

namespace weft::cli {
namespace {

using ::testing::HasSubstr;

using testing::ClientFor;

TEST(MetricsEndpointTest, ServesThePrometheusTextOfTheRegistry) {
  metrics::Registry::Global()
      .FindOrAddCounter("test_endpoint_total", "Scraped.")
      ->WithLabels({})
      ->Increment(3);
  StatusOr<std::unique_ptr<MetricsEndpoint>> endpoint = MetricsEndpoint::Start({});
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  httplib::Result result = ClientFor((*endpoint)->address())->Get("/metrics");
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, 200);
  EXPECT_THAT(result->get_header_value("Content-Type"), HasSubstr("version=0.0.4"));
  EXPECT_THAT(result->body,
              HasSubstr("# TYPE test_endpoint_total counter\ntest_endpoint_total 3\n"));
  EXPECT_EQ(ClientFor((*endpoint)->address())->Get("/other")->status, 404);
  (*endpoint)->Stop();
  (*endpoint)->Stop();  // idempotent
}

TEST(MetricsEndpointTest, WithATokenEveryScrapeMustBearIt) {
  MetricsEndpointOptions options;
  options.token = "s3cret-token";
  StatusOr<std::unique_ptr<MetricsEndpoint>> endpoint = MetricsEndpoint::Start(options);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  std::unique_ptr<httplib::Client> client = ClientFor((*endpoint)->address());
  EXPECT_EQ(client->Get("/metrics")->status, 401);
  EXPECT_EQ(client->Get("/metrics", {{"Authorization", "Bearer wrong-token!"}})->status, 401);
  EXPECT_EQ(client->Get("/metrics", {{"Authorization", "Basic s3cret-token"}})->status, 401);
  httplib::Result good = client->Get("/metrics", {{"Authorization", "Bearer s3cret-token"}});
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200);
}

TEST(MetricsEndpointTest, BeyondLoopbackWithoutATokenIsRefusedBeforeBinding) {
  MetricsEndpointOptions options;
  options.bind_host = "0.0.0.0";
  StatusOr<std::unique_ptr<MetricsEndpoint>> endpoint = MetricsEndpoint::Start(options);
  ASSERT_FALSE(endpoint.ok());
  EXPECT_TRUE(IsInvalidArgument(endpoint.status()));
  EXPECT_THAT(endpoint.status().message(), HasSubstr("0.0.0.0"));
  EXPECT_THAT(endpoint.status().message(), HasSubstr("--token-file"));
}

TEST(MetricsEndpointTest, ABusyPortIsUnavailableNamingIt) {
  StatusOr<std::unique_ptr<MetricsEndpoint>> first = MetricsEndpoint::Start({});
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string address = (*first)->address();
  MetricsEndpointOptions options;
  options.port = std::stoi(address.substr(address.rfind(':') + 1));
  StatusOr<std::unique_ptr<MetricsEndpoint>> second = MetricsEndpoint::Start(options);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(), HasSubstr(address));

  options.port = 70000;
  EXPECT_TRUE(IsInvalidArgument(MetricsEndpoint::Start(options).status()));
}

}  // namespace
}  // namespace weft::cli
