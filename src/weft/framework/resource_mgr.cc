#include "weft/framework/resource_mgr.h"

namespace weft {
namespace {

std::string Describe(std::string_view container, std::string_view name) {
  return StrCat("resource '", name, "' in container '", container, "'");
}

}  // namespace

Status ResourceMgr::Create(std::string_view container, std::string_view name,
                           std::shared_ptr<ResourceBase> resource) {
  WEFT_CHECK(resource != nullptr);
  MutexLock lock(mu_);
  auto [it, inserted] =
      resources_.try_emplace(Key(std::string(container), std::string(name)), std::move(resource));
  if (!inserted) {
    return AlreadyExists(Describe(container, name), " already exists (", it->second->DebugString(),
                         ")");
  }
  return Status::OK();
}

StatusOr<std::shared_ptr<ResourceBase>> ResourceMgr::LookupBase(std::string_view container,
                                                                std::string_view name) const {
  MutexLock lock(mu_);
  auto it = resources_.find(Key(std::string(container), std::string(name)));
  if (it == resources_.end()) return NotFound(Describe(container, name), " not found");
  return it->second;
}

StatusOr<std::shared_ptr<ResourceBase>> ResourceMgr::LookupOrCreateBase(
    std::string_view container, std::string_view name,
    const std::function<StatusOr<std::shared_ptr<ResourceBase>>()>& creator) {
  MutexLock lock(mu_);
  Key key{std::string(container), std::string(name)};
  auto it = resources_.find(key);
  if (it != resources_.end()) return it->second;
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<ResourceBase> made, creator());
  if (made == nullptr) return Internal("creator of ", Describe(container, name), " made nothing");
  resources_.emplace(std::move(key), made);
  return made;
}

Status ResourceMgr::WrongType(const ResourceBase& resource, std::string_view container,
                              std::string_view name, const char* wanted) {
  return InvalidArgument(Describe(container, name), " holds ", resource.DebugString(),
                         ", not the requested type ", wanted);
}

Status ResourceMgr::Delete(std::string_view container, std::string_view name) {
  std::shared_ptr<ResourceBase> removed;  // destroyed outside the lock
  MutexLock lock(mu_);
  auto it = resources_.find(Key(std::string(container), std::string(name)));
  if (it == resources_.end()) return NotFound(Describe(container, name), " not found");
  removed = std::move(it->second);
  resources_.erase(it);
  return Status::OK();
}

Status ResourceMgr::Cleanup(std::string_view container) {
  std::vector<std::shared_ptr<ResourceBase>> removed;
  MutexLock lock(mu_);
  for (auto it = resources_.begin(); it != resources_.end();) {
    if (it->first.first == container) {
      removed.push_back(std::move(it->second));
      it = resources_.erase(it);
    } else {
      ++it;
    }
  }
  if (removed.empty()) return NotFound("container '", container, "' holds no resources");
  return Status::OK();
}

void ResourceMgr::Clear() {
  std::map<Key, std::shared_ptr<ResourceBase>, std::less<>> removed;
  MutexLock lock(mu_);
  removed.swap(resources_);
}

std::vector<std::string> ResourceMgr::DebugStrings() const {
  MutexLock lock(mu_);
  std::vector<std::string> out;
  for (const auto& [key, resource] : resources_) {
    out.push_back(StrCat(key.first, "/", key.second, ": ", resource->DebugString()));
  }
  return out;
}

}  // namespace weft
