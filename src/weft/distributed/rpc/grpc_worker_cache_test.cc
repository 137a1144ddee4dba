#include "weft/distributed/rpc/grpc_worker_cache.h"

#include <gtest/gtest.h>

#include "weft/distributed/rpc/grpc_remote_worker.h"
#include "weft/distributed/rpc/testing/rpc_test_util.h"

namespace weft {
namespace {

TEST(GrpcWorkerCacheTest, LocalRemoteAndUnknownTasks) {
  auto cluster = ClusterSpec::FromFlag("worker=127.0.0.1:1,127.0.0.1:2;ps=127.0.0.1:3");
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  testing::FakeWorker local;
  auto cache = NewGrpcWorkerCache(*cluster, "/job:worker/replica:0/task:0", &local, nullptr,
                                  TransportSecurity());
  EXPECT_EQ(cache->ListWorkers(), cluster->TaskNames());
  EXPECT_EQ(cache->GetOrCreateWorker("/job:worker/replica:0/task:0"), &local);
  WorkerInterface* remote = cache->GetOrCreateWorker("/job:worker/replica:0/task:1");
  ASSERT_NE(remote, nullptr);
  EXPECT_NE(remote, &local);
  EXPECT_EQ(cache->GetOrCreateWorker("/job:worker/replica:0/task:1"), remote);
  auto* grpc_remote = dynamic_cast<GrpcRemoteWorker*>(remote);
  ASSERT_NE(grpc_remote, nullptr);
  EXPECT_EQ(grpc_remote->address(), "127.0.0.1:2");
  EXPECT_NE(cache->GetOrCreateWorker("/job:ps/replica:0/task:0"), nullptr);
  EXPECT_EQ(cache->GetOrCreateWorker("/job:worker/replica:0/task:2"), nullptr);
  EXPECT_EQ(cache->GetOrCreateWorker("/job:nope/replica:0/task:0"), nullptr);
  EXPECT_EQ(cache->TaskAddress("/job:ps/replica:0/task:0"), "127.0.0.1:3");
  EXPECT_EQ(cache->TaskAddress("/job:ps/replica:0/task:1"), "");
}

TEST(GrpcWorkerCacheTest, RemoteWorkerTalksToTheServer) {
  testing::WorkerFixture fixture;
  auto cluster = ClusterSpec::FromFlag("worker=127.0.0.1:1," + fixture.server->address());
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto cache = NewGrpcWorkerCache(*cluster, "", nullptr, std::make_shared<BulkTransferClient>(),
                                  TransportSecurity());
  WorkerInterface* remote = cache->GetOrCreateWorker("/job:worker/replica:0/task:1");
  ASSERT_NE(remote, nullptr);
  CallOptions options;
  options.set_timeout_ms(10000);
  proto::GetStatusResponse response;
  ASSERT_TRUE(remote->GetStatus(&options, proto::GetStatusRequest(), &response).ok());
  EXPECT_EQ(response.task_name(), "/job:worker/replica:0/task:7");
}

}  // namespace
}  // namespace weft
