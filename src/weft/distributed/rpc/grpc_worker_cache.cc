#include "weft/distributed/rpc/grpc_worker_cache.h"

#include <map>
#include <utility>

#include "weft/core/mutex.h"
#include "weft/distributed/rpc/grpc_remote_worker.h"
#include "weft/distributed/rpc/grpc_util.h"

namespace weft {
namespace {

class GrpcWorkerCache final : public WorkerCacheInterface {
 public:
  GrpcWorkerCache(ClusterSpec cluster, std::string local_task, WorkerInterface* local_worker,
                  std::shared_ptr<BulkTransferClient> bulk_client, TransportSecurity security)
      : cluster_(std::move(cluster)),
        local_task_(std::move(local_task)),
        local_worker_(local_worker),
        bulk_client_(std::move(bulk_client)),
        security_(std::move(security)) {
    for (const auto& [job, addresses] : cluster_.jobs()) {
      for (size_t i = 0; i < addresses.size(); ++i) {
        addresses_[StrCat("/job:", job, "/replica:0/task:", i)] = addresses[i];
      }
    }
  }

  std::vector<std::string> ListWorkers() const override { return cluster_.TaskNames(); }

  WorkerInterface* GetOrCreateWorker(const std::string& task_name) override {
    if (!local_task_.empty() && task_name == local_task_ && local_worker_ != nullptr) {
      return local_worker_;
    }
    auto address = addresses_.find(task_name);
    if (address == addresses_.end()) return nullptr;
    MutexLock lock(mu_);
    std::unique_ptr<GrpcRemoteWorker>& worker = workers_[task_name];
    if (worker == nullptr) {
      worker = std::make_unique<GrpcRemoteWorker>(task_name, address->second,
                                                  NewWeftChannel(address->second, security_),
                                                  bulk_client_, security_.token);
    }
    return worker.get();
  }

  std::string TaskAddress(const std::string& task_name) const override {
    auto address = addresses_.find(task_name);
    return address == addresses_.end() ? "" : address->second;
  }

 private:
  const ClusterSpec cluster_;
  const std::string local_task_;
  WorkerInterface* const local_worker_;
  const std::shared_ptr<BulkTransferClient> bulk_client_;
  const TransportSecurity security_;
  std::map<std::string, std::string> addresses_;  // task name -> host:port; immutable
  Mutex mu_;
  std::map<std::string, std::unique_ptr<GrpcRemoteWorker>> workers_ WEFT_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<WorkerCacheInterface> NewGrpcWorkerCache(
    ClusterSpec cluster, std::string local_task, WorkerInterface* local_worker,
    std::shared_ptr<BulkTransferClient> bulk_client, TransportSecurity security) {
  return std::make_unique<GrpcWorkerCache>(std::move(cluster), std::move(local_task), local_worker,
                                           std::move(bulk_client), std::move(security));
}

}  // namespace weft
