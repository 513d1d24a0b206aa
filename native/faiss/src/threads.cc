#include "threads.h"

#include <omp.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>

extern "C" void openblas_set_num_threads(int n);  // libopenblas; Faiss's batched exact search calls sgemm

namespace fenec {

namespace {
std::atomic<int> configured{0};
/** Background index work's nice value over the serving thread's: below the worker threads that run statements (worker-main.ts). */
constexpr int kBackgroundNice = 10;
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
  // Linux keeps a nice value per thread: this libuv worker yields to the threads that serve requests.
  // Lowering a priority needs no privilege, and the thread never needs it back: libuv's workers do
  // only background work here.
  static thread_local bool lowered = false;
  if (!lowered) {
    // Over the serving thread's (the one whose id is the process's), whoever made this thread.
    errno = 0;
    const int serving = getpriority(PRIO_PROCESS, static_cast<id_t>(getpid()));
    if (errno == 0) setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), std::min(19, serving + kBackgroundNice));
    lowered = true;
  }
}

void ServeSingleThreaded() {
  // Per thread (an OpenMP ICV of the calling thread): a worker thread's own count is left alone.
  omp_set_num_threads(1);
  // OpenBLAS's count is process-wide; only the batched exact search of a flat index reaches it.
  static std::once_flag blas;
  std::call_once(blas, [] { openblas_set_num_threads(1); });
}

}  // namespace fenec
