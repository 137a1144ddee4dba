// Cache hints for loops that visit rows of a large table in an order no hardware prefetcher can
// guess (embedding lookups and their sparse optimizer updates): asking for the row a few
// iterations ahead overlaps the memory misses instead of paying them one after another. Hints
// only: they never fault and never change a result. Stateless, so safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft::kernels {

// How many rows ahead of the one in use such a loop asks for: enough to cover a miss to memory
// (a few hundred cycles) with the work of the rows in between, few enough to stay in L1.
inline constexpr int64_t kPrefetchRowsAhead = 8;

// Asks for the first and the last cache line of the row of `bytes` bytes at `row`, to be read.
// Between them a longer row is a sequential stream, which the hardware prefetcher does follow.
// Two calls rather than a loop over the row's lines: GCC 12 dropped every prefetch of that loop
// (seen in the object file).
inline void PrefetchRowForRead(const void* row, size_t bytes) {
  const char* first = static_cast<const char*>(row);
  __builtin_prefetch(first, /*rw=*/0, /*locality=*/3);
  if (bytes > 64) __builtin_prefetch(first + bytes - 1, /*rw=*/0, /*locality=*/3);
}

// The same for a row that is about to be written.
inline void PrefetchRowForWrite(void* row, size_t bytes) {
  char* first = static_cast<char*>(row);
  __builtin_prefetch(first, /*rw=*/1, /*locality=*/3);
  if (bytes > 64) __builtin_prefetch(first + bytes - 1, /*rw=*/1, /*locality=*/3);
}

}  // namespace weft::kernels
