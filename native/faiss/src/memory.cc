#include "memory.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace fenec {

namespace {

class ReleaseWorker : public Napi::AsyncWorker {
 public:
  explicit ReleaseWorker(Napi::Env env)
      : Napi::AsyncWorker(env, "fenecReleaseFreeMemory"), deferred_(Napi::Promise::Deferred::New(env)) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override { released_ = ReleaseFreeMemory(); }
  void OnOK() override { deferred_.Resolve(Napi::Boolean::New(Env(), released_)); }
  void OnError(const Napi::Error& error) override { deferred_.Reject(error.Value()); }
  // A worker thread ended meanwhile (a statement past its time limit): nothing is left to settle.
  void OnWorkComplete(Napi::Env env, napi_status status) override {
    try {
      Napi::AsyncWorker::OnWorkComplete(env, status);
    } catch (const Napi::Error&) {
    }
  }

 private:
  Napi::Promise::Deferred deferred_;
  bool released_ = false;
};

}  // namespace

bool ReleaseFreeMemory() {
#if defined(__GLIBC__)
  return malloc_trim(0) != 0;
#else
  return false;
#endif
}

Napi::Value ReleaseFreeMemoryJs(const Napi::CallbackInfo& info) {
  auto* worker = new ReleaseWorker(info.Env());
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

}  // namespace fenec
