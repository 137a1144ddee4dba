// ResourceMgr: the resources (variables, and later queues or iterators) that live on one device,
// keyed by (container, name) and shared by every step and kernel running there. A resource is
// reference counted: Lookup hands out a std::shared_ptr, so a kernel still using a resource keeps
// it alive after Delete or Clear removes it from the manager. Every method is thread-safe; the
// resources synchronise their own state.
//
//   WEFT_ASSIGN_OR_RETURN(std::shared_ptr<Var> var, mgr->Lookup<Var>(handle.container,
//                                                                     handle.name));
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/statusor.h"

namespace weft {

// Base of everything a ResourceMgr holds.
class ResourceBase {
 public:
  virtual ~ResourceBase() = default;
  // A short description for error messages and debugging, e.g. "Var<float32, [2,3]>".
  virtual std::string DebugString() const = 0;
};

class ResourceMgr {
 public:
  ResourceMgr() = default;
  ResourceMgr(const ResourceMgr&) = delete;
  ResourceMgr& operator=(const ResourceMgr&) = delete;

  // Adds `resource` under (container, name); AlreadyExists when that key is taken.
  Status Create(std::string_view container, std::string_view name,
                std::shared_ptr<ResourceBase> resource);

  // The resource under (container, name) as a T. NotFound naming container and name when absent;
  // InvalidArgument when it is not a T.
  template <typename T>
  StatusOr<std::shared_ptr<T>> Lookup(std::string_view container, std::string_view name) const {
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<ResourceBase> base, LookupBase(container, name));
    return Cast<T>(std::move(base), container, name);
  }

  // Like Lookup, but when the key is absent makes the resource with `creator` and adds it. Two
  // threads racing on one key see the same resource; `creator` runs under the manager's lock, so
  // it must not call back into this manager.
  template <typename T>
  StatusOr<std::shared_ptr<T>> LookupOrCreate(
      std::string_view container, std::string_view name,
      const std::function<StatusOr<std::shared_ptr<T>>()>& creator) {
    WEFT_ASSIGN_OR_RETURN(
        std::shared_ptr<ResourceBase> base,
        LookupOrCreateBase(container, name,
                           [&creator]() -> StatusOr<std::shared_ptr<ResourceBase>> {
                             WEFT_ASSIGN_OR_RETURN(std::shared_ptr<T> made, creator());
                             return std::shared_ptr<ResourceBase>(std::move(made));
                           }));
    return Cast<T>(std::move(base), container, name);
  }

  // Removes (container, name); NotFound when absent. Users still holding it keep it alive.
  Status Delete(std::string_view container, std::string_view name);
  // Removes every resource of `container`; NotFound when the container holds none.
  Status Cleanup(std::string_view container);
  // Removes every resource.
  void Clear();

  // "container/name: DebugString" for each resource, sorted; for debugging.
  std::vector<std::string> DebugStrings() const;

 private:
  using Key = std::pair<std::string, std::string>;

  StatusOr<std::shared_ptr<ResourceBase>> LookupBase(std::string_view container,
                                                     std::string_view name) const;
  StatusOr<std::shared_ptr<ResourceBase>> LookupOrCreateBase(
      std::string_view container, std::string_view name,
      const std::function<StatusOr<std::shared_ptr<ResourceBase>>()>& creator);
  static Status WrongType(const ResourceBase& resource, std::string_view container,
                          std::string_view name, const char* wanted);

  template <typename T>
  static StatusOr<std::shared_ptr<T>> Cast(std::shared_ptr<ResourceBase> base,
                                           std::string_view container, std::string_view name) {
    std::shared_ptr<T> typed = std::dynamic_pointer_cast<T>(base);
    if (typed == nullptr) return WrongType(*base, container, name, typeid(T).name());
    return typed;
  }

  mutable Mutex mu_;
  std::map<Key, std::shared_ptr<ResourceBase>, std::less<>> resources_ WEFT_GUARDED_BY(mu_);
};

}  // namespace weft
