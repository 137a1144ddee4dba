#include "weft/distributed/worker/local_worker_cache.h"

#include <utility>
#include <vector>

namespace weft {
namespace {

class LocalWorkerCache final : public WorkerCacheInterface {
 public:
  explicit LocalWorkerCache(std::map<std::string, WorkerInterface*> workers)
      : workers_(std::move(workers)) {}

  std::vector<std::string> ListWorkers() const override {
    std::vector<std::string> names;
    for (const auto& [name, worker] : workers_) names.push_back(name);
    return names;
  }

  WorkerInterface* GetOrCreateWorker(const std::string& task_name) override {
    auto it = workers_.find(task_name);
    return it == workers_.end() ? nullptr : it->second;
  }

  std::string TaskAddress(const std::string& task_name) const override {
    return workers_.count(task_name) != 0 ? "in-process" : "";
  }

 private:
  const std::map<std::string, WorkerInterface*> workers_;
};

}  // namespace

std::unique_ptr<WorkerCacheInterface> NewLocalWorkerCache(
    std::map<std::string, WorkerInterface*> workers) {
  return std::make_unique<LocalWorkerCache>(std::move(workers));
}

}  // namespace weft
