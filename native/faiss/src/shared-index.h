// An index and what lets a search run beside the background work on it.
#pragma once

#include <faiss/Index.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <shared_mutex>

#include "hnsw-add.h"

namespace fenec {

/**
 * Shared by the JS object and a running background job (which keeps it alive if the object is
 * collected). A background add takes `mutex` exclusively for each part it adds (see kAddPartFloats
 * and kBulkPartVectors) and a search takes it shared, so a search waits at most for one part and never
 * reads the graph while it changes; `ntotal` is how many vectors the parts added so far hold.
 */
struct SharedIndex {
  std::unique_ptr<faiss::Index> index;
  std::shared_mutex mutex;
  std::atomic<int64_t> ntotal{0};
  /** What the adds to this index keep from one to the next; only the add that runs touches it. */
  InsertScratch scratch;
  /** When a search last came (steady clock, ms): a background add keeps to small parts for a while after. */
  std::atomic<int64_t> last_search_ms{kNeverSearched};

  static constexpr int64_t kNeverSearched = INT64_MIN / 2;

  static int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  /** Vectors of `dims` the next part of a background add takes: kAddPartFloats' worth while searches come, else kBulkPartVectors. */
  size_t PartVectors(size_t dims) const;
};

/**
 * Floats a background add adds per part, holding the index exclusively: 4 vectors of 384 dims,
 * about a millisecond of HNSW inserts on a quiet core, so that a search waits no longer than that
 * (on a machine with many more runnable threads than cores, a part's wall time is several times
 * its CPU time: measured at 3000 × 384 on 2 cores under a load of 18, parts of 42 vectors held a
 * search for up to 570 ms).
 */
constexpr size_t kAddPartFloats = 1536;

/**
 * Vectors a part takes when no search of the index came for kSearchQuietMs. Each part costs O(ntotal)
 * besides its inserts (a lock and a visited mark per vector of the index, hnsw-add.cc), which parts of
 * 4 pay 64 times as often, and a part of 4 keeps at most 4 threads busy, with a barrier at its end.
 * A search that comes during a large part waits for it (tens of milliseconds at 384 dims on a quiet
 * machine); the parts after it are small again.
 */
constexpr size_t kBulkPartVectors = 256;

/** A search within this long makes the add go in small parts. */
constexpr int64_t kSearchQuietMs = 1000;

inline size_t SharedIndex::PartVectors(size_t dims) const {
  if (NowMs() - last_search_ms.load(std::memory_order_relaxed) >= kSearchQuietMs) return kBulkPartVectors;
  return std::max<size_t>(1, kAddPartFloats / dims);
}

}  // namespace fenec
