// An index and what lets a search run beside the background work on it.
#pragma once

#include <faiss/Index.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>

namespace fenec {

/**
 * Shared by the JS object and a running background job (which keeps it alive if the object is
 * collected). A background add takes `mutex` exclusively for each part it adds (see kAddPartFloats)
 * and a search takes it shared, so a search waits at most for one part and never reads the graph
 * while it changes; `ntotal` is how many vectors the parts added so far hold.
 */
struct SharedIndex {
  std::unique_ptr<faiss::Index> index;
  std::shared_mutex mutex;
  std::atomic<int64_t> ntotal{0};
};

/**
 * Floats a background add adds per part, holding the index exclusively: 4 vectors of 384 dims,
 * about a millisecond of HNSW inserts on a quiet core, so that a search waits no longer than that
 * (on a machine with many more runnable threads than cores, a part's wall time is several times
 * its CPU time: measured at 3000 × 384 on 2 cores under a load of 18, parts of 42 vectors held a
 * search for up to 570 ms).
 */
constexpr size_t kAddPartFloats = 1536;

}  // namespace fenec
