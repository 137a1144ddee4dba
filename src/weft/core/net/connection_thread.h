// ConnectionThread: one accepted socket served by a thread of its own, the way the bulk data
// server and the address exchange serve their connections, and the bookkeeping both need: joining
// the threads that have finished and, at shutdown, all of them. The list belongs to its server,
// which guards it with its own lock; these functions take no lock.
#pragma once

#include <atomic>
#include <list>
#include <memory>
#include <thread>

#include "weft/core/net/socket.h"

namespace weft {

struct ConnectionThread {
  net::Socket socket;  // closed after the join, so no thread touches a reused descriptor number
  std::thread thread;
  std::atomic<bool> finished{false};  // set by the thread as its last act
};

using ConnectionThreads = std::list<std::unique_ptr<ConnectionThread>>;

// Joins the threads that have finished, closes their sockets and drops them from the list.
inline void ReapFinishedConnections(ConnectionThreads* connections) {
  for (auto it = connections->begin(); it != connections->end();) {
    if ((*it)->finished) {
      (*it)->thread.join();
      it = connections->erase(it);
    } else {
      ++it;
    }
  }
}

// Joins every thread and closes every socket; the caller has made the threads return (shut their
// sockets down).
inline void JoinAndCloseConnections(ConnectionThreads* connections) {
  for (auto& connection : *connections) connection->thread.join();
  connections->clear();
}

}  // namespace weft
