// fenec_faiss: fenecdb's N-API binding over Faiss (Debian's static libfaiss 1.7.3).
// node/vector/faiss.ts is the one module that loads it.
#include <faiss/Index.h>
#include <napi.h>

#include <string>

#include "args.h"
#include "faiss-index.h"
#include "memory.h"
#include "threads.h"

namespace fenec {

namespace {

constexpr int64_t kMaxThreads = 1024;

/** setThreads(n): the OpenMP threads of later background work (async adds, serializations). */
Napi::Value SetThreadsJs(const Napi::CallbackInfo& info) {
  SetThreads(static_cast<int>(RequireInt(info.Env(), info[0], 1, kMaxThreads, "threads")));
  return info.Env().Undefined();
}

/** getThreads(): the threads background work uses (searches and sync adds use one). */
Napi::Value GetThreadsJs(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), BackgroundThreads());
}

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("FaissIndex", FaissIndex::Init(env));
  exports.Set("setThreads", Napi::Function::New<SetThreadsJs>(env, "setThreads"));
  exports.Set("getThreads", Napi::Function::New<GetThreadsJs>(env, "getThreads"));
  exports.Set("releaseFreeMemory", Napi::Function::New<ReleaseFreeMemoryJs>(env, "releaseFreeMemory"));
  exports.Set("faissVersion",
              Napi::String::New(env, std::to_string(FAISS_VERSION_MAJOR) + "." + std::to_string(FAISS_VERSION_MINOR) +
                                         "." + std::to_string(FAISS_VERSION_PATCH)));
  return exports;
}

}  // namespace fenec

static Napi::Object InitFenecFaiss(Napi::Env env, Napi::Object exports) {
  return fenec::Init(env, exports);
}

NODE_API_MODULE(fenec_faiss, InitFenecFaiss)
