// LocalRendezvous: a table from full key to that key's state (value kept, Recv waiting, or done),
// under one mutex. Callbacks always run after the lock is released, since they usually continue
// the receiving executor and may Send or Recv again.
#include "weft/runtime/local_rendezvous.h"

#include <chrono>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "weft/core/logging.h"
#include "weft/core/metrics.h"
#include "weft/core/mutex.h"
#include "weft/framework/cancellation.h"

namespace weft {
namespace {

// A Recv waiting for its value.
struct Waiter {
  std::string key;
  Rendezvous::Args recv_args;
  Rendezvous::DoneCallback done;
  CancellationManager* cancellation = nullptr;  // recv_args.cancellation_manager, if registered
  CancellationManager::Token token = 0;
  uint64_t id = 0;  // tells a cancelled waiter from a later one of the same key
  std::chrono::steady_clock::time_point since;  // when the Recv began to wait
};

// How long Recvs that came before their Send waited for it (a Recv whose value was already there
// does not wait and is not counted).
metrics::Histogram* RendezvousWaits() {
  static metrics::Histogram* waits =
      metrics::Registry::Global()
          .FindOrAddHistogram("weft_rendezvous_wait_seconds",
                              "Time a Recv waited in a rendezvous for the Send of its value.")
          ->WithLabels({});
  return waits;
}

// Stops the cancellation of waiters leaving the table (their value came or the step ended).
void DeregisterAll(const std::vector<Waiter>& waiters) {
  for (const Waiter& waiter : waiters) {
    if (waiter.cancellation != nullptr) waiter.cancellation->DeregisterCallback(waiter.token);
  }
}

}  // namespace

struct LocalRendezvous::Table {
  struct Entry {
    enum class State { kSent, kWaiting, kDone };
    State state = State::kDone;
    // kSent: the value waiting for its Recv.
    Args send_args;
    Tensor value;
    bool is_dead = false;
    // kWaiting: the Recv waiting for its value.
    Waiter waiter;
  };

  // Runs from a Recv's cancellation manager: fails that Recv if it is still waiting.
  void CancelRecv(const std::string& key, uint64_t waiter_id) {
    Waiter waiter;
    {
      MutexLock lock(mu);
      auto it = entries.find(key);
      if (it == entries.end() || it->second.state != Entry::State::kWaiting ||
          it->second.waiter.id != waiter_id) {
        return;  // the value came first, or the step was aborted
      }
      waiter = std::move(it->second.waiter);
      entries.erase(it);  // the key has no consumer now; another Recv may wait for it
    }
    waiter.done(Cancelled("Recv of rendezvous key '", key, "' was cancelled"), Args(),
                waiter.recv_args, Tensor(), false);
  }

  // Takes every waiting Recv out of the table and drops kept values.
  std::vector<Waiter> TakeAllWaiters() WEFT_REQUIRES(mu) {
    std::vector<Waiter> waiters;
    for (auto& [key, entry] : entries) {
      if (entry.state == Entry::State::kWaiting) waiters.push_back(std::move(entry.waiter));
    }
    entries.clear();
    return waiters;
  }

  Mutex mu;
  std::unordered_map<std::string, Entry> entries WEFT_GUARDED_BY(mu);
  Status abort_status WEFT_GUARDED_BY(mu);
  uint64_t next_waiter_id WEFT_GUARDED_BY(mu) = 0;
};

LocalRendezvous::LocalRendezvous() : table_(std::make_shared<Table>()) {}

LocalRendezvous::~LocalRendezvous() {
  std::vector<Waiter> waiters;
  {
    MutexLock lock(table_->mu);
    waiters = table_->TakeAllWaiters();
  }
  DeregisterAll(waiters);
  for (Waiter& waiter : waiters) {
    waiter.done(Cancelled("rendezvous destroyed while a Recv of key '", waiter.key,
                          "' was waiting (the step ended)"),
                Args(), waiter.recv_args, Tensor(), false);
  }
}

Status LocalRendezvous::Send(const ParsedKey& key, const Args& send_args, const Tensor& value,
                             bool is_dead) {
  Waiter waiter;
  {
    MutexLock lock(table_->mu);
    if (!table_->abort_status.ok()) return table_->abort_status;
    auto [it, inserted] = table_->entries.try_emplace(key.full_key);
    Table::Entry& entry = it->second;
    if (inserted) {
      entry.state = Table::Entry::State::kSent;
      entry.send_args = send_args;
      entry.value = value;  // shares the buffer
      entry.is_dead = is_dead;
      return Status::OK();
    }
    if (entry.state != Table::Entry::State::kWaiting) {
      return AlreadyExists("rendezvous key '", key.full_key,
                           "' was already sent in this step (one Send per key)");
    }
    waiter = std::move(entry.waiter);
    entry = Table::Entry();  // kDone: a later Send or Recv of this key is an error
  }
  if (waiter.cancellation != nullptr) waiter.cancellation->DeregisterCallback(waiter.token);
  RendezvousWaits()->Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - waiter.since).count());
  waiter.done(Status::OK(), send_args, waiter.recv_args, value, is_dead);
  return Status::OK();
}

void LocalRendezvous::RecvAsync(const ParsedKey& key, const Args& recv_args, DoneCallback done) {
  Status error;
  Args send_args;
  Tensor value;
  bool is_dead = false;
  {
    MutexLock lock(table_->mu);
    if (!table_->abort_status.ok()) {
      error = table_->abort_status;
    } else if (auto it = table_->entries.find(key.full_key); it != table_->entries.end()) {
      Table::Entry& entry = it->second;
      if (entry.state == Table::Entry::State::kSent) {
        send_args = entry.send_args;
        value = std::move(entry.value);
        is_dead = entry.is_dead;
        entry = Table::Entry();  // kDone
      } else {
        error = AlreadyExists("rendezvous key '", key.full_key, "' ",
                              entry.state == Table::Entry::State::kWaiting
                                  ? "already has a waiting Recv"
                                  : "was already received",
                              " in this step (one Recv per key)");
      }
    } else {
      // No value yet: wait for it, cancellable with the step.
      Waiter waiter;
      waiter.key = key.full_key;
      waiter.recv_args = recv_args;
      waiter.id = ++table_->next_waiter_id;
      waiter.since = std::chrono::steady_clock::now();
      CancellationManager* cancellation = recv_args.cancellation_manager;
      if (cancellation != nullptr) {
        CancellationManager::Token token = cancellation->NewToken();
        bool registered = cancellation->RegisterCallback(
            token, [table = table_, full_key = key.full_key, id = waiter.id] {
              table->CancelRecv(full_key, id);
            });
        if (!registered) {
          error = Cancelled("Recv of rendezvous key '", key.full_key,
                            "' was cancelled: the step was already cancelled");
        } else {
          waiter.cancellation = cancellation;
          waiter.token = token;
        }
      }
      if (error.ok()) {
        waiter.done = std::move(done);
        Table::Entry& entry = table_->entries[key.full_key];
        entry.state = Table::Entry::State::kWaiting;
        entry.waiter = std::move(waiter);
        return;
      }
    }
  }
  if (!error.ok()) {
    done(error, Args(), recv_args, Tensor(), false);
    return;
  }
  done(Status::OK(), send_args, recv_args, value, is_dead);
}

void LocalRendezvous::StartAbort(const Status& status) {
  WEFT_CHECK(!status.ok()) << "StartAbort needs an error status";
  std::vector<Waiter> waiters;
  Status abort_status;
  {
    MutexLock lock(table_->mu);
    if (table_->abort_status.ok()) table_->abort_status = status;
    abort_status = table_->abort_status;
    waiters = table_->TakeAllWaiters();
  }
  DeregisterAll(waiters);
  for (Waiter& waiter : waiters) {
    waiter.done(abort_status, Args(), waiter.recv_args, Tensor(), false);
  }
}

}  // namespace weft
