// Adding vectors to an index: Faiss's HNSW inserts, scheduled by us.
#pragma once

#include <faiss/Index.h>
#include <omp.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace faiss {
struct VisitedTable;
}

namespace fenec {

/**
 * What the HNSW inserts of one index keep from one add to the next: a lock per vertex and a visited
 * table per thread, each sized for the whole index. Made afresh for every add (as Faiss does) they
 * cost O(ntotal) an add — at 100 000 vectors, as much as the inserts of a 4-vector part themselves:
 * kept, and grown by half again when the index outgrows them, parts of 4 cost 0.6× as much a vector
 * and parts of 16 0.8× (100 000 × 384, two threads). About 5 bytes a vector, beside the 4 × dims of the
 * vector itself. One add at a time uses it (an index takes one add at a time); after an add that
 * failed, the index is dropped, and with it what a failed insert may have left locked.
 */
class InsertScratch {
 public:
  InsertScratch();
  ~InsertScratch();
  InsertScratch(const InsertScratch&) = delete;
  InsertScratch& operator=(const InsertScratch&) = delete;

  /** Sized for `vertices` and `threads`: locks none holds, tables for the threads numbered below `threads`. */
  void Prepare(size_t vertices, int threads);
  std::vector<omp_lock_t>& locks() { return locks_; }
  faiss::VisitedTable& visited(int thread) { return *visited_[static_cast<size_t>(thread)]; }

 private:
  void DestroyLocks();

  std::vector<omp_lock_t> locks_;
  std::vector<std::unique_ptr<faiss::VisitedTable>> visited_;
};

/**
 * Adds n vectors to `index` on the calling thread's OpenMP team (its count as set for the thread).
 * An HNSW index gets Faiss's own inserts (HNSW::add_with_locks, what IndexHNSW::add runs) in Faiss's
 * order — levels from the top down, each level's vectors shuffled alike — but shared out one by one
 * as threads come free, and on the whole team at every level: IndexHNSW::add splits a level evenly
 * between the threads (`schedule(static)`), so every level waits for the thread that got the least
 * CPU, and runs the levels of 100 vectors or fewer on one thread. Other indexes: Index::add.
 */
void AddVectors(faiss::Index& index, size_t n, const float* x, InsertScratch& scratch);

}  // namespace fenec
