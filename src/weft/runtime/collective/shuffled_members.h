// Test-only: runs the members of many collective instances the way concurrent replicas would,
// each member on a thread of its own joining every instance in its own random order, so
// instances fill up interleaved. Used by the LocalCollectiveExecutor tests.
#pragma once

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

namespace weft::testing {

// Calls join(member, instance) for every member in [0, members) and instance in [0, instances):
// each member's calls on one thread, in an order shuffled by `rng`. Returns once every thread has
// made its calls (not once the collectives have finished).
inline void JoinInShuffledOrders(int members, int instances, std::mt19937& rng,
                                 const std::function<void(int member, int instance)>& join) {
  std::vector<std::thread> threads;
  for (int m = 0; m < members; ++m) {
    std::vector<int> order(instances);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    threads.emplace_back([&join, m, order] {
      for (int k : order) join(m, k);
    });
  }
  for (auto& thread : threads) thread.join();
}

}  // namespace weft::testing
