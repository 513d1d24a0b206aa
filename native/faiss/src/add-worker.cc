#include "add-worker.h"

#include <new>
#include <string>
#include <utility>

#include "errors.h"
#include "faiss-index.h"
#include "threads.h"

namespace fenec {

AddWorker::AddWorker(Napi::Env env, FaissIndex* owner, Napi::Object owner_object, std::shared_ptr<faiss::Index> index,
                     std::vector<float> vectors, size_t n)
    : Napi::AsyncWorker(env, "fenecFaissAdd"),
      deferred_(Napi::Promise::Deferred::New(env)),
      owner_ref_(Napi::Persistent(owner_object)),
      owner_(owner),
      index_(std::move(index)),
      vectors_(std::move(vectors)),
      n_(n),
      first_label_(index_->ntotal) {}

void AddWorker::Execute() {
  // Worker thread: no JS here. Errors travel as a message to OnError, on the main thread.
  try {
    ApplyThreads();
    index_->add(static_cast<faiss::Index::idx_t>(n_), vectors_.data());
  } catch (const std::bad_alloc&) {
    SetError("faiss: out of memory");
  } catch (const std::exception& e) {
    SetError(std::string("faiss: ") + e.what());
  } catch (...) {
    SetError("faiss: unknown C++ exception");
  }
  std::vector<float>().swap(vectors_);
}

void AddWorker::OnOK() {
  owner_->EndAsyncAdd(Env());
  owner_ref_.Reset();
  deferred_.Resolve(Napi::Number::New(Env(), static_cast<double>(first_label_)));
}

void AddWorker::OnError(const Napi::Error& error) {
  owner_->EndAsyncAdd(Env());
  owner_ref_.Reset();
  deferred_.Reject(CodedError(Env(), "ERR_FAISS", error.Message()).Value());
}

}  // namespace fenec
