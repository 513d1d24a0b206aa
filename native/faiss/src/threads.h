// The OpenMP (and OpenBLAS) thread count the addon's Faiss calls use.
#pragma once

namespace fenec {

/** Sets the count for later calls, on every thread the addon runs Faiss on. n ≥ 1. */
void SetThreads(int n);

/** The count set by SetThreads, or 0 when never set (OpenMP's default: OMP_NUM_THREADS or the cores). */
int ConfiguredThreads();

/** The count a parallel region started now on this thread would use. */
int EffectiveThreads();

/**
 * Applies the configured count on the calling thread. OpenMP keeps the count per thread, so a libuv
 * worker running an async add does not see what setThreads did on the main thread until this runs.
 */
void ApplyThreads();

}  // namespace fenec
