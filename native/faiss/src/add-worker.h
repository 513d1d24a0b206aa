// Background work on an index, on a libuv worker thread: an add (in parts, see SharedIndex) or a
// serialization. The owning FaissIndex refuses adds, serializations and dispose until it ends;
// searches go on beside it.
#pragma once

#include <napi.h>

#include <memory>
#include <vector>

#include "shared-index.h"

namespace fenec {

class FaissIndex;

/**
 * What every job on an index shares: the promise it settles, the owner it holds alive and ends
 * (FaissIndex::EndAsync) before settling, and the completion that survives a torn-down environment.
 * A job says what it does (Execute, on the worker thread) and what it answers (Result, on the main
 * thread).
 */
class IndexJob : public Napi::AsyncWorker {
 public:
  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  IndexJob(Napi::Env env, const char* name, FaissIndex* owner, Napi::Object owner_object, std::shared_ptr<SharedIndex> shared);

  /** The promise's value once Execute succeeded, made on the main thread after the owner is ended. */
  virtual Napi::Value Result() = 0;

  void OnOK() final;
  void OnError(const Napi::Error& error) final;
  void OnWorkComplete(Napi::Env env, napi_status status) final;

  const std::shared_ptr<SharedIndex> shared_;

 private:
  /** The owner takes jobs again, and may be collected. */
  void EndJob();

  Napi::Promise::Deferred deferred_;
  Napi::ObjectReference owner_ref_;  // keeps the owner from being collected while the job runs
  FaissIndex* owner_;
};

class AddWorker : public IndexJob {
 public:
  /** `vectors` is a copy: JS may detach or change its array while the worker reads. */
  AddWorker(Napi::Env env, FaissIndex* owner, Napi::Object owner_object, std::shared_ptr<SharedIndex> shared,
            std::vector<float> vectors, size_t n);

 protected:
  void Execute() override;
  Napi::Value Result() override;

 private:
  std::vector<float> vectors_;
  size_t n_;
  int64_t first_label_;
};

class SerializeWorker : public IndexJob {
 public:
  SerializeWorker(Napi::Env env, FaissIndex* owner, Napi::Object owner_object, std::shared_ptr<SharedIndex> shared);

 protected:
  void Execute() override;
  Napi::Value Result() override;

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace fenec
