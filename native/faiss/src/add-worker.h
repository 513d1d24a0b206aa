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

class AddWorker : public Napi::AsyncWorker {
 public:
  /** `vectors` is a copy: JS may detach or change its array while the worker reads. */
  AddWorker(Napi::Env env, FaissIndex* owner, Napi::Object owner_object, std::shared_ptr<SharedIndex> shared,
            std::vector<float> vectors, size_t n);

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error& error) override;
  void OnWorkComplete(Napi::Env env, napi_status status) override;

 private:
  Napi::Promise::Deferred deferred_;
  Napi::ObjectReference owner_ref_;  // keeps the owner from being collected while the add runs
  FaissIndex* owner_;
  std::shared_ptr<SharedIndex> shared_;
  std::vector<float> vectors_;
  size_t n_;
  int64_t first_label_;
};

class SerializeWorker : public Napi::AsyncWorker {
 public:
  SerializeWorker(Napi::Env env, FaissIndex* owner, Napi::Object owner_object, std::shared_ptr<SharedIndex> shared);

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error& error) override;
  void OnWorkComplete(Napi::Env env, napi_status status) override;

 private:
  Napi::Promise::Deferred deferred_;
  Napi::ObjectReference owner_ref_;
  FaissIndex* owner_;
  std::shared_ptr<SharedIndex> shared_;
  std::vector<uint8_t> bytes_;
};

}  // namespace fenec
