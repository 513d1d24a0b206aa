#include "threads.h"

#include <omp.h>

#include <atomic>

extern "C" void openblas_set_num_threads(int n);  // libopenblas; Faiss's batched exact search calls sgemm

namespace fenec {

namespace {
std::atomic<int> configured{0};
}  // namespace

void SetThreads(int n) {
  configured.store(n);
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

int ConfiguredThreads() {
  return configured.load();
}

int EffectiveThreads() {
  return omp_get_max_threads();
}

void ApplyThreads() {
  int n = configured.load();
  if (n > 0) omp_set_num_threads(n);
}

}  // namespace fenec
