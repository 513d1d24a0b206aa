#include "search.h"

#include <faiss/impl/IDSelector.h>
#include <faiss/utils/distances.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "index-shape.h"

namespace fenec {

namespace {

using idx_t = faiss::Index::idx_t;

/** The allowed labels among 0 … ntotal-1, ascending. */
std::vector<idx_t> AllowedLabels(const uint8_t* bitmap, size_t bytes, size_t ntotal, size_t count) {
  std::vector<idx_t> labels;
  labels.reserve(count);
  const size_t used = std::min(bytes, (ntotal + 7) / 8);
  for (size_t i = 0; i < used; i++) {
    for (unsigned bits = bitmap[i]; bits != 0; bits &= bits - 1) {
      idx_t label = static_cast<idx_t>(i * 8 + __builtin_ctz(bits));
      if (static_cast<size_t>(label) < ntotal) labels.push_back(label);
    }
  }
  return labels;
}

/** Exact search over the listed vectors only: cost in proportion to the list, not to ntotal. */
void ExactOver(const faiss::IndexFlat& vectors, const std::vector<idx_t>& subset, const float* x, size_t nq,
               size_t k, float* d, idx_t* ids) {
  const size_t dims = static_cast<size_t>(vectors.d);
  if (vectors.metric_type == faiss::METRIC_INNER_PRODUCT) {
    faiss::knn_inner_products_by_idx(x, vectors.get_xb(), subset.data(), dims, nq, subset.size(), k, d, ids, 0);
  } else {
    faiss::knn_L2sqr_by_idx(x, vectors.get_xb(), subset.data(), dims, nq, subset.size(), k, d, ids, 0);
  }
}

/**
 * Faiss 1.7.3 sizes the HNSW candidate list from the index's own efSearch and reads
 * SearchParametersHNSW::efSearch only for its stopping rule (fixed upstream in faiss#3233), so a
 * larger per-search efSearch would not widen the search. The member is set for the call and put
 * back. Safe: searches run on the main thread, and never while an async add holds the index.
 */
void HnswSearch(faiss::IndexHNSWFlat& index, const float* x, size_t nq, size_t k, int ef, faiss::IDSelector* sel,
                float* d, idx_t* ids) {
  struct Restore {
    int& member;
    int saved;
    ~Restore() { member = saved; }
  } restore{index.hnsw.efSearch, index.hnsw.efSearch};
  index.hnsw.efSearch = ef;
  faiss::SearchParametersHNSW params;
  params.efSearch = ef;
  params.sel = sel;
  index.search(nq, x, k, d, ids, &params);
}

/**
 * How a filtered HNSW search runs. Faiss 1.7.3's graph search walks through disallowed nodes
 * without returning them, so with a share s of labels allowed it finds about s·efSearch allowed
 * candidates, and its recall falls as s does (measured at 100 000 × 384: 0.69 at s = 5 %). The
 * binding widens efSearch to efSearch / s to keep about efSearch allowed candidates; that costs
 * about M·efSearch / s distances, against `allowed` = s·ntotal for an exact search over the
 * allowed vectors, which is always right. It searches exactly when that is the cheaper:
 * allowed² ≤ M·efSearch·ntotal (at M 32, efSearch 64: up to 45 % allowed of 10 000, 14 % of
 * 100 000, 4.5 % of 1 000 000).
 */
struct FilterPlan {
  bool exact;
  int ef;  // for the graph search
};

FilterPlan PlanFilter(int m, int ef, size_t allowed, size_t ntotal) {
  const double a = static_cast<double>(allowed);
  if (a * a <= static_cast<double>(m) * ef * static_cast<double>(ntotal)) return {true, ef};
  const double widened = std::ceil(static_cast<double>(ef) * static_cast<double>(ntotal) / a);
  return {false, static_cast<int>(std::min(widened, static_cast<double>(std::max<size_t>(ntotal, ef))))};
}

size_t Found(const idx_t* ids, size_t k) {
  return static_cast<size_t>(std::count_if(ids, ids + k, [](idx_t id) { return id >= 0; }));
}

}  // namespace

size_t CountAllowed(const uint8_t* bitmap, size_t bytes, size_t ntotal) {
  size_t full = std::min(bytes, ntotal / 8);
  size_t count = 0;
  for (size_t i = 0; i < full; i++) count += __builtin_popcount(bitmap[i]);
  size_t rest = ntotal % 8;
  if (rest != 0 && full < bytes) count += __builtin_popcount(bitmap[full] & ((1u << rest) - 1));
  return count;
}

void Search(faiss::Index& index, const SearchRequest& req, float* distances, int32_t* labels) {
  const IndexShape shape = ShapeOf(index);
  const size_t ntotal = static_cast<size_t>(index.ntotal);
  const float missing = index.metric_type == faiss::METRIC_INNER_PRODUCT ? -std::numeric_limits<float>::infinity()
                                                                         : std::numeric_limits<float>::infinity();
  std::fill(distances, distances + req.nq * req.k, missing);
  std::fill(labels, labels + req.nq * req.k, -1);

  const size_t allowed = req.has_allow ? CountAllowed(req.allow, req.allow_bytes, ntotal) : ntotal;
  const size_t kk = std::min(req.k, allowed);  // more than this many labels cannot be found
  if (kk == 0 || req.nq == 0) return;

  const size_t d = static_cast<size_t>(index.d);
  std::vector<float> dist(req.nq * kk);
  std::vector<idx_t> ids(req.nq * kk);
  std::vector<idx_t> subset;  // the allowed labels, listed when searched exactly
  auto exact_subset = [&]() -> const std::vector<idx_t>& {
    if (subset.empty()) subset = AllowedLabels(req.allow, req.allow_bytes, ntotal, allowed);
    return subset;
  };

  if (shape.kind == IndexKind::kFlat) {
    if (req.has_allow) {
      ExactOver(*shape.vectors, exact_subset(), req.queries, req.nq, kk, dist.data(), ids.data());
    } else {
      shape.vectors->search(req.nq, req.queries, kk, dist.data(), ids.data());  // BLAS from 20 queries on
    }
  } else {
    faiss::IndexHNSWFlat& hnsw = const_cast<faiss::IndexHNSWFlat&>(*shape.hnsw);
    int ef = req.ef_search > 0 ? req.ef_search : hnsw.hnsw.efSearch;
    ef = static_cast<int>(std::clamp<size_t>(static_cast<size_t>(std::max(ef, 1)), kk, std::max(ntotal, kk)));
    std::unique_ptr<faiss::IDSelectorBitmap> sel;
    if (req.has_allow) sel = std::make_unique<faiss::IDSelectorBitmap>(req.allow_bytes, req.allow);
    const FilterPlan plan = req.has_allow ? PlanFilter(HnswM(hnsw), ef, allowed, ntotal) : FilterPlan{false, ef};
    if (plan.exact) {
      ExactOver(*shape.vectors, exact_subset(), req.queries, req.nq, kk, dist.data(), ids.data());
    } else {
      ef = plan.ef;
      HnswSearch(hnsw, req.queries, req.nq, kk, ef, sel.get(), dist.data(), ids.data());
      for (size_t q = 0; q < req.nq; q++) {
        if (Found(&ids[q * kk], kk) == kk) continue;
        // The graph search came back short (a selective filter, or an unreachable corner): redo it exactly.
        const float* x = req.queries + q * d;
        if (req.has_allow) {
          ExactOver(*shape.vectors, exact_subset(), x, 1, kk, &dist[q * kk], &ids[q * kk]);
        } else {
          shape.vectors->search(1, x, kk, &dist[q * kk], &ids[q * kk]);
        }
      }
    }
  }

  for (size_t q = 0; q < req.nq; q++) {
    for (size_t j = 0; j < kk; j++) {
      idx_t id = ids[q * kk + j];
      if (id < 0) continue;
      labels[q * req.k + j] = static_cast<int32_t>(id);
      distances[q * req.k + j] = dist[q * kk + j];
    }
  }
}

}  // namespace fenec
