// Adding vectors to an index: Faiss's HNSW inserts, scheduled by us.
#pragma once

#include <faiss/Index.h>

#include <cstddef>

namespace fenec {

/**
 * Adds n vectors to `index` on the calling thread's OpenMP team (its count as set for the thread).
 * An HNSW index gets Faiss's own inserts (HNSW::add_with_locks, what IndexHNSW::add runs) in Faiss's
 * order — levels from the top down, each level's vectors shuffled alike — but shared out one by one
 * as threads come free, and on the whole team at every level: IndexHNSW::add splits a level evenly
 * between the threads (`schedule(static)`), so every level waits for the thread that got the least
 * CPU, and runs the levels of 100 vectors or fewer on one thread. Other indexes: Index::add.
 */
void AddVectors(faiss::Index& index, size_t n, const float* x);

}  // namespace fenec
