// How the addon reports failures: every one is a JS exception with a `code`, never an abort.
//
//   TypeError  ERR_INVALID_ARG_TYPE  an argument of the wrong type (not a Float32Array, not a number)
//   RangeError ERR_OUT_OF_RANGE      an argument of the right type and a wrong value (length, k, dims)
//   Error      ERR_FAISS             Faiss or the C++ library threw (std::exception, bad_alloc)
//   Error      ERR_FAISS_BAD_INDEX   deserialize was given bytes that are not a sound index
//   Error      ERR_FAISS_BUSY        a call while an async add runs on the same index
//   Error      ERR_FAISS_DISPOSED    a call after dispose()
#pragma once

#include <napi.h>

#include <new>
#include <stdexcept>
#include <string>

namespace fenec {

[[noreturn]] void ThrowTypeError(Napi::Env env, const std::string& message);
[[noreturn]] void ThrowRangeError(Napi::Env env, const std::string& message);
[[noreturn]] void ThrowCoded(Napi::Env env, const char* code, const std::string& message);

/** An index's bytes are not what serialize() writes (bad envelope, checksum, or structure). */
struct BadIndexError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** Builds (does not throw) the JS error for a C++ exception caught off the main thread. */
Napi::Error CodedError(Napi::Env env, const char* code, const std::string& message);

/**
 * Runs `body` and turns any C++ exception into a JS one: a Napi::Error passes through, a
 * BadIndexError becomes ERR_FAISS_BAD_INDEX, any other std::exception (faiss::FaissException,
 * std::bad_alloc, ...) becomes ERR_FAISS. Every entry point runs its Faiss calls inside one.
 */
template <class Body>
auto Guard(Napi::Env env, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Napi::Error&) {
    throw;
  } catch (const BadIndexError& e) {
    ThrowCoded(env, "ERR_FAISS_BAD_INDEX", std::string("not a valid fenecdb Faiss index: ") + e.what());
  } catch (const std::bad_alloc&) {
    ThrowCoded(env, "ERR_FAISS", "faiss: out of memory");
  } catch (const std::exception& e) {
    ThrowCoded(env, "ERR_FAISS", std::string("faiss: ") + e.what());
  } catch (...) {
    ThrowCoded(env, "ERR_FAISS", "faiss: unknown C++ exception");
  }
}

}  // namespace fenec
