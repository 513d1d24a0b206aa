// The two index types the addon makes and accepts back from deserialize().
#pragma once

#include <faiss/IndexFlat.h>
#include <faiss/IndexHNSW.h>

#include <cstddef>
#include <memory>

namespace fenec {

enum class IndexKind { kHnsw, kFlat };

/** An index seen as what the addon needs: its kind, its HNSW part if any, and its flat vectors. */
struct IndexShape {
  IndexKind kind;
  const faiss::IndexHNSWFlat* hnsw;  // null for kFlat
  const faiss::IndexFlat* vectors;   // the index itself (kFlat) or the HNSW's storage (kHnsw)
};

/** The shape of an index the addon made; a BadIndexError for any other type or metric. */
IndexShape ShapeOf(const faiss::Index& index);

/**
 * Checks what read_index returned before anything searches it: a supported type and metric, and
 * an HNSW graph whose offsets, levels and links all stay inside the index. read_index checks
 * none of this, and a search over a graph with an out-of-range link reads outside its arrays.
 */
void CheckDeserialized(const faiss::Index& index);

/** Bytes the index holds in native memory (vectors plus graph), for V8's external-memory hint. */
size_t NativeBytes(const faiss::Index& index);

/** The HNSW M (neighbours per node above level 0; level 0 holds 2·M). */
int HnswM(const faiss::IndexHNSWFlat& index);

}  // namespace fenec
