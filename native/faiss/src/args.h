// Argument checks shared by the entry points. Each throws a TypeError or RangeError that names the
// argument, before any Faiss code runs: Faiss itself checks little, and it runs inside OpenMP
// regions where an exception cannot be caught and ends the process.
#pragma once

#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace fenec {

/** A Float32Array, as a view on its own memory (no copy). */
Napi::Float32Array RequireFloat32Array(Napi::Env env, Napi::Value value, const char* name);

/** A Uint8Array (a Buffer is one), as a view on its own memory. */
Napi::Uint8Array RequireUint8Array(Napi::Env env, Napi::Value value, const char* name);

/** The number of dims-long rows in `array`; a RangeError when its length is not a multiple of dims. */
size_t RowsOf(Napi::Env env, const Napi::Float32Array& array, int dims, const char* name);

/** A RangeError naming the row and component of the first NaN or infinity. */
void RequireFinite(Napi::Env env, const float* x, size_t count, int dims, const char* name);

/** An integer in lo … hi; `name` is how the message names it. */
int64_t RequireInt(Napi::Env env, Napi::Value value, int64_t lo, int64_t hi, const char* name);

/** options[key] as an integer in lo … hi, or `fallback` when it is undefined. */
int64_t OptionalInt(Napi::Env env, Napi::Object options, const char* key, int64_t fallback, int64_t lo, int64_t hi);

/** options[key] as a string, one of `a` or `b`. */
std::string RequireChoice(Napi::Env env, Napi::Object options, const char* key, const char* a, const char* b);

}  // namespace fenec
