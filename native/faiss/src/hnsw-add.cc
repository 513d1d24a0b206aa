#include "hnsw-add.h"

#include <faiss/IndexHNSW.h>
#include <faiss/impl/AuxIndexStructures.h>
#include <faiss/impl/DistanceComputer.h>
#include <faiss/impl/HNSW.h>
#include <faiss/utils/random.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

namespace fenec {

namespace {

/** Similarity as a distance (smaller is nearer), as Faiss's HNSW wants it for an inner-product storage. */
class NegatedDistance : public faiss::DistanceComputer {
 public:
  explicit NegatedDistance(faiss::DistanceComputer* base) : base_(base) {}
  void set_query(const float* x) override { base_->set_query(x); }
  float operator()(idx_t i) override { return -(*base_)(i); }
  float symmetric_dis(idx_t i, idx_t j) override { return -base_->symmetric_dis(i, j); }

 private:
  std::unique_ptr<faiss::DistanceComputer> base_;
};

/** What IndexHNSW's own add measures distances with (IndexHNSW.cpp, storage_distance_computer). */
std::unique_ptr<faiss::DistanceComputer> DistanceOf(const faiss::Index& storage) {
  std::unique_ptr<faiss::DistanceComputer> base(storage.get_distance_computer());
  if (storage.metric_type != faiss::METRIC_INNER_PRODUCT) return base;
  return std::make_unique<NegatedDistance>(base.release());
}

/** IndexHNSW::add (Faiss 1.7: IndexHNSW.cpp, hnsw_add_vertices), each level's inserts dealt out one at a time. */
void AddToHnsw(faiss::IndexHNSW& index, size_t n, const float* x, InsertScratch& scratch) {
  FAISS_THROW_IF_NOT_MSG(index.storage != nullptr, "an HNSW index without storage");
  faiss::HNSW& hnsw = index.hnsw;
  const size_t d = static_cast<size_t>(index.d);
  const size_t n0 = static_cast<size_t>(index.ntotal);
  // Before the index changes: what cannot be had leaves it as it was.
  scratch.Prepare(n0 + n, omp_get_max_threads());
  index.storage->add(static_cast<faiss::Index::idx_t>(n), x);
  index.ntotal = index.storage->ntotal;
  hnsw.prepare_level_tab(n, false);

  // The new vertices by level (level i of a vertex: levels[id] - 1), lowest level first.
  std::vector<size_t> starts(1, 0);
  for (size_t i = 0; i < n; i++) {
    const size_t level = static_cast<size_t>(hnsw.levels[n0 + i] - 1);
    if (level + 2 > starts.size()) starts.resize(level + 2, 0);
    starts[level + 1]++;
  }
  for (size_t level = 1; level < starts.size(); level++) starts[level] += starts[level - 1];
  std::vector<int> order(n);
  {
    std::vector<size_t> next(starts.begin(), starts.end() - 1);
    for (size_t i = 0; i < n; i++) order[next[hnsw.levels[n0 + i] - 1]++] = static_cast<int>(n0 + i);
  }

  faiss::RandomGenerator shuffle(789);  // Faiss's seed: the same order as its own add
  for (size_t level = starts.size() - 1; level-- > 0;) {
    const long from = static_cast<long>(starts[level]);
    const long to = static_cast<long>(starts[level + 1]);
    // Against the order the vectors came in, as Faiss does.
    for (long j = from; j < to; j++) std::swap(order[j], order[j + shuffle.rand_int(static_cast<int>(to - j))]);
    // An exception must not leave an OpenMP region (std::terminate), nor skip the loop every thread
    // of the team must reach: the first is kept, the level's other inserts skipped, and it is thrown
    // once the team has ended (the caller then drops the index).
    std::exception_ptr failure;
    std::atomic<bool> failed{false};
    auto fail = [&] {
#pragma omp critical(fenec_add_failure)
      if (!failed.exchange(true)) failure = std::current_exception();
    };
#pragma omp parallel if (to - from > 1)
    {
      faiss::VisitedTable& visited = scratch.visited(omp_get_thread_num());
      std::unique_ptr<faiss::DistanceComputer> distance;
      try {
        distance = DistanceOf(*index.storage);
      } catch (...) {
        fail();
      }
#pragma omp for schedule(dynamic, 1)
      for (long i = from; i < to; i++) {
        if (failed.load(std::memory_order_relaxed) || !distance) continue;
        const int id = order[i];
        try {
          distance->set_query(x + (static_cast<size_t>(id) - n0) * d);
          hnsw.add_with_locks(*distance, static_cast<int>(level), id, scratch.locks(), visited);
        } catch (...) {
          // add_with_locks holds the vertex's own lock from before anything in it can throw: let
          // go of it, so that no insert still running waits for it.
          omp_unset_lock(&scratch.locks()[id]);
          fail();
        }
      }
    }
    if (failure) std::rethrow_exception(failure);
  }
}

}  // namespace

InsertScratch::InsertScratch() = default;

InsertScratch::~InsertScratch() {
  DestroyLocks();
}

void InsertScratch::DestroyLocks() {
  for (omp_lock_t& lock : locks_) omp_destroy_lock(&lock);
  locks_.clear();
}

void InsertScratch::Prepare(size_t vertices, int threads) {
  if (locks_.size() < vertices) {
    const size_t capacity = std::max(vertices, locks_.size() + locks_.size() / 2);
    DestroyLocks();
    locks_ = std::vector<omp_lock_t>(capacity);
    for (omp_lock_t& lock : locks_) omp_init_lock(&lock);
  }
  if (visited_.size() < static_cast<size_t>(threads)) visited_.resize(static_cast<size_t>(threads));
  for (int thread = 0; thread < threads; thread++) {
    std::unique_ptr<faiss::VisitedTable>& table = visited_[static_cast<size_t>(thread)];
    if (!table || table->visited.size() < vertices) table = std::make_unique<faiss::VisitedTable>(static_cast<int>(locks_.size()));
  }
}

void AddVectors(faiss::Index& index, size_t n, const float* x, InsertScratch& scratch) {
  if (n == 0) return;
  if (auto* hnsw = dynamic_cast<faiss::IndexHNSW*>(&index)) {
    AddToHnsw(*hnsw, n, x, scratch);
    return;
  }
  index.add(static_cast<faiss::Index::idx_t>(n), x);
}

}  // namespace fenec
