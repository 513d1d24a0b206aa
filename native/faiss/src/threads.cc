#include "threads.h"

#include <omp.h>

#include <atomic>
#include <mutex>

extern "C" void openblas_set_num_threads(int n);  // libopenblas; Faiss's batched exact search calls sgemm

namespace fenec {

namespace {
std::atomic<int> configured{0};
}  // namespace

void SetThreads(int n) {
  configured.store(n);
}

int ConfiguredThreads() {
  return configured.load();
}

int BackgroundThreads() {
  int n = configured.load();
  return n > 0 ? n : omp_get_num_procs();
}

void ApplyThreads() {
  int n = configured.load();
  if (n > 0) omp_set_num_threads(n);
}

void ServeSingleThreaded() {
  // Per thread (an OpenMP ICV of the calling thread): a worker thread's own count is left alone.
  omp_set_num_threads(1);
  // OpenBLAS's count is process-wide; only the batched exact search of a flat index reaches it.
  static std::once_flag blas;
  std::call_once(blas, [] { openblas_set_num_threads(1); });
}

}  // namespace fenec
