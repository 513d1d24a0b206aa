// The OpenMP (and OpenBLAS) thread counts of the addon's Faiss calls.
#pragma once

namespace fenec {

/**
 * Sets the count of background work (async adds and serializations, on libuv's worker threads) for
 * later calls. n ≥ 1. Calls on a thread that serves requests (search, add) always run on that one
 * thread: an OpenMP team spun up for one query costs more than it saves, and its spinning threads
 * take the cores other requests need.
 */
void SetThreads(int n);

/** The count set by SetThreads, or 0 when never set (OpenMP's default: OMP_NUM_THREADS or the cores). */
int ConfiguredThreads();

/** The count background work started now would use. */
int BackgroundThreads();

/**
 * Applies the configured count on the calling (worker) thread. OpenMP keeps the count per thread, so
 * a libuv worker does not see what setThreads did until this runs.
 */
void ApplyThreads();

/** One thread for the Faiss calls of the calling thread: a thread that serves requests. */
void ServeSingleThreaded();

}  // namespace fenec
