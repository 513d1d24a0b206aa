// k-nearest-neighbour search over an index the addon made, with an optional allow-list.
#pragma once

#include <faiss/Index.h>

#include <cstddef>
#include <cstdint>

namespace fenec {

struct SearchRequest {
  const float* queries;  // nq × d floats
  size_t nq;
  size_t k;
  int ef_search;           // HNSW only; 0 = the index's own efSearch
  bool has_allow;          // false: every label may be returned
  const uint8_t* allow;    // bit i (LSB first) of byte i/8 = label i may be returned (may be null when empty)
  size_t allow_bytes;
};

/**
 * Writes nq × k results, nearest first: `labels` in 0 … ntotal-1, or -1 where fewer than k labels
 * exist or are allowed; `distances` squared L2 (ascending) or inner product (descending), and
 * +Infinity (L2) or -Infinity (inner product) where the label is -1.
 *
 * With an allow-list, a flat index searches the allowed vectors only. An HNSW index does the same
 * when that is cheaper than a graph search that skips disallowed labels (faiss::IDSelectorBitmap)
 * with efSearch widened by ntotal / allowed (see PlanFilter in search.cc), and otherwise runs that
 * graph search. A query for which the graph search finds fewer than min(k, allowed) labels is redone
 * exactly, so a search returns min(k, allowed) labels whatever the selectivity.
 *
 * Runs Faiss's OpenMP loops; it validates nothing (the caller has) and throws what Faiss throws.
 * Not reentrant on one index: an HNSW search sets the index's efSearch for its duration.
 */
void Search(faiss::Index& index, const SearchRequest& request, float* distances, int32_t* labels);

/** Allowed labels among 0 … ntotal-1. */
size_t CountAllowed(const uint8_t* bitmap, size_t bytes, size_t ntotal);

}  // namespace fenec
