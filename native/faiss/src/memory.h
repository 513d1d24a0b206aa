// Giving the C allocator's free memory back to the system.
#pragma once

#include <napi.h>

namespace fenec {

/**
 * Returns the free pages of every malloc arena to the system (glibc's malloc_trim(0)); true when some were.
 * glibc keeps what a burst of work freed — an index build's scratch on its thread's arena, a load's statements on
 * the main one — for later mallocs, and an idle process makes none: it stays in the process's RSS. It walks every
 * arena's free chunks, holding that arena's lock meanwhile: milliseconds on a big heap, so never on a thread that
 * serves requests. Elsewhere than glibc it does nothing (false).
 */
bool ReleaseFreeMemory();

/** releaseFreeMemory(): a promise of ReleaseFreeMemory()'s answer, run on one of libuv's threads. */
Napi::Value ReleaseFreeMemoryJs(const Napi::CallbackInfo& info);

}  // namespace fenec
