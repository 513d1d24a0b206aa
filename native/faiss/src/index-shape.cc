#include "index-shape.h"

#include <climits>
#include <string>

#include "errors.h"

namespace fenec {

namespace {

bool SupportedMetric(faiss::MetricType m) {
  return m == faiss::METRIC_L2 || m == faiss::METRIC_INNER_PRODUCT;
}

void Require(bool ok, const std::string& what) {
  if (!ok) throw BadIndexError(what);
}

void CheckVectors(const faiss::IndexFlat& flat, const faiss::Index& outer) {
  Require(flat.d == outer.d, "the stored vectors have another dimension than the index");
  Require(flat.ntotal == outer.ntotal, "the index and its stored vectors count different totals");
  Require(flat.metric_type == outer.metric_type, "the index and its stored vectors use different metrics");
  Require(flat.code_size == sizeof(float) * static_cast<size_t>(flat.d), "unexpected vector code size");
  Require(flat.codes.size() == flat.code_size * static_cast<size_t>(flat.ntotal),
          "the stored vectors do not fill ntotal × dims floats");
}

void CheckGraph(const faiss::IndexHNSWFlat& index) {
  const faiss::HNSW& g = index.hnsw;
  const size_t n = static_cast<size_t>(index.ntotal);
  Require(index.reconstruct_from_neighbors == nullptr, "unsupported HNSW variant");
  Require(g.levels.size() == n, "HNSW levels do not cover every vector");
  Require(g.offsets.size() == n + 1 && g.offsets[0] == 0, "HNSW offsets do not cover every vector");
  Require(g.neighbors.size() == g.offsets[n], "HNSW links do not match their offsets");
  Require(g.max_level >= (n == 0 ? -1 : 0) &&
              static_cast<size_t>(g.max_level + 1) < g.cum_nneighbor_per_level.size(),
          "HNSW max_level is outside its level table");
  // add() draws new levels from assign_probas and indexes the level table with them.
  Require(!g.assign_probas.empty() && g.assign_probas.size() < g.cum_nneighbor_per_level.size(),
          "HNSW level probabilities do not fit its level table");
  Require(g.upper_beam >= 1, "HNSW upper_beam must be at least 1");
  for (size_t i = 0; i < n; i++) {
    int level = g.levels[i];
    Require(level >= 1 && level <= g.max_level + 1, "HNSW node " + std::to_string(i) + " has a bad level");
    Require(g.offsets[i + 1] >= g.offsets[i] &&
                g.offsets[i + 1] - g.offsets[i] == static_cast<size_t>(g.cum_nb_neighbors(level)),
            "HNSW node " + std::to_string(i) + " has a bad link range");
  }
  for (faiss::HNSW::storage_idx_t v : g.neighbors) {
    Require(v >= -1 && static_cast<size_t>(v + 1) <= n, "an HNSW link points outside the index");
  }
  if (n == 0) {
    Require(g.entry_point == -1, "an empty HNSW graph has an entry point");
  } else {
    Require(g.entry_point >= 0 && static_cast<size_t>(g.entry_point) < n, "the HNSW entry point is outside the index");
    Require(g.levels[g.entry_point] == g.max_level + 1, "the HNSW entry point is not on the top level");
  }
}

}  // namespace

IndexShape ShapeOf(const faiss::Index& index) {
  Require(SupportedMetric(index.metric_type), "metric is neither L2 nor inner product");
  if (auto* hnsw = dynamic_cast<const faiss::IndexHNSWFlat*>(&index)) {
    auto* vectors = dynamic_cast<const faiss::IndexFlat*>(hnsw->storage);
    Require(vectors != nullptr, "an HNSW index whose storage is not flat vectors");
    return IndexShape{IndexKind::kHnsw, hnsw, vectors};
  }
  if (auto* flat = dynamic_cast<const faiss::IndexFlat*>(&index)) {
    return IndexShape{IndexKind::kFlat, nullptr, flat};
  }
  throw BadIndexError("an index type other than IndexHNSWFlat or IndexFlat");
}

void CheckDeserialized(const faiss::Index& index) {
  Require(index.d >= 1, "dimension below 1");
  Require(index.ntotal >= 0 && index.ntotal <= INT_MAX, "ntotal outside 0 … 2^31-1");
  IndexShape shape = ShapeOf(index);
  CheckVectors(*shape.vectors, index);
  if (shape.hnsw != nullptr) CheckGraph(*shape.hnsw);
}

size_t NativeBytes(const faiss::Index& index) {
  IndexShape shape = ShapeOf(index);
  size_t bytes = shape.vectors->codes.size();
  if (shape.hnsw != nullptr) {
    const faiss::HNSW& g = shape.hnsw->hnsw;
    bytes += g.neighbors.size() * sizeof(faiss::HNSW::storage_idx_t) + g.offsets.size() * sizeof(size_t) +
             g.levels.size() * sizeof(int);
  }
  return bytes;
}

int HnswM(const faiss::IndexHNSWFlat& index) {
  const faiss::HNSW& g = index.hnsw;
  return g.cum_nneighbor_per_level.size() > 2 ? g.nb_neighbors(1) : g.nb_neighbors(0) / 2;
}

}  // namespace fenec
