// The benches' raw Faiss build: Faiss's own IndexHNSWFlat::add, in one call, on every core, as a
// user of Faiss's C++ or Python API builds an index. fenecdb's addon schedules Faiss's inserts itself
// (native/faiss/src/hnsw-add.cc), so the baseline cannot be the addon.
//
//   raw-faiss VECTORS_FILE DIMS M EF_CONSTRUCTION ip|l2
//
// VECTORS_FILE: float32 vectors, native byte order, DIMS each. Prints {"seconds": …, "ntotal": …}:
// the add alone, not the read of the file.
#include <faiss/IndexHNSW.h>
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 6 || (std::strcmp(argv[5], "ip") != 0 && std::strcmp(argv[5], "l2") != 0)) {
    std::fprintf(stderr, "usage: raw-faiss VECTORS_FILE DIMS M EF_CONSTRUCTION ip|l2\n");
    return 2;
  }
  const int dims = std::atoi(argv[2]);
  const int m = std::atoi(argv[3]);
  const int ef_construction = std::atoi(argv[4]);
  std::ifstream file(argv[1], std::ios::binary | std::ios::ate);
  if (!file || dims <= 0 || m < 2 || ef_construction < 1) {
    std::fprintf(stderr, "raw-faiss: cannot read %s, or bad parameters\n", argv[1]);
    return 2;
  }
  const size_t bytes = static_cast<size_t>(file.tellg());
  const size_t n = bytes / (sizeof(float) * static_cast<size_t>(dims));
  std::vector<float> vectors(n * static_cast<size_t>(dims));
  file.seekg(0);
  file.read(reinterpret_cast<char*>(vectors.data()), static_cast<std::streamsize>(vectors.size() * sizeof(float)));

  faiss::IndexHNSWFlat index(dims, m, std::strcmp(argv[5], "ip") == 0 ? faiss::METRIC_INNER_PRODUCT : faiss::METRIC_L2);
  index.hnsw.efConstruction = ef_construction;
  omp_set_num_threads(omp_get_num_procs());
  const auto start = std::chrono::steady_clock::now();
  index.add(static_cast<faiss::Index::idx_t>(n), vectors.data());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("{\"seconds\":%.4f,\"ntotal\":%lld}\n", seconds, static_cast<long long>(index.ntotal));
  return 0;
}
