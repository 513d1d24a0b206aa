// The async add: Faiss's add on a libuv worker thread, so a 100 000-vector rebuild does not stall
// the event loop. The owning FaissIndex refuses every other call until EndAsyncAdd.
#pragma once

#include <faiss/Index.h>
#include <napi.h>

#include <memory>
#include <vector>

namespace fenec {

class FaissIndex;

class AddWorker : public Napi::AsyncWorker {
 public:
  /** `vectors` is a copy: JS may detach or change its array while the worker reads. */
  AddWorker(Napi::Env env, FaissIndex* owner, Napi::Object owner_object, std::shared_ptr<faiss::Index> index,
            std::vector<float> vectors, size_t n);

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error& error) override;

 private:
  Napi::Promise::Deferred deferred_;
  Napi::ObjectReference owner_ref_;  // keeps the owner from being collected while the add runs
  FaissIndex* owner_;
  std::shared_ptr<faiss::Index> index_;
  std::vector<float> vectors_;
  size_t n_;
  int64_t first_label_;
};

}  // namespace fenec
