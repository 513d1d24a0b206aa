#include "add-worker.h"

#include <faiss/impl/io.h>
#include <faiss/index_io.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <utility>

#include "envelope.h"
#include "errors.h"
#include "faiss-index.h"
#include "hnsw-add.h"
#include "threads.h"

namespace fenec {

namespace {

/** Runs `work`; what it throws, as the worker's error message ("" when nothing was thrown). */
template <typename Work>
std::string Capture(Work&& work) {
  try {
    work();
    return "";
  } catch (const std::bad_alloc&) {
    return "faiss: out of memory";
  } catch (const std::exception& e) {
    return std::string("faiss: ") + e.what();
  } catch (...) {
    return "faiss: unknown C++ exception";
  }
}

/**
 * Settles a finished job's promise. When the environment that awaits it is being torn down (its
 * worker thread terminated: a statement past its time limit), N-API refuses the calls and the
 * Napi::Error they throw, escaping to libuv, would abort the whole process — every tenant of the
 * node — for a job whose thread is already gone. (Node runs pending completions before the
 * environment's cleanup hooks, so the end cannot be seen coming.) Nothing is left to settle then:
 * the error is dropped.
 */
template <typename Complete>
void CompleteUnlessEnding(Complete&& complete) {
  try {
    complete();
  } catch (const Napi::Error&) {
  }
}

}  // namespace

IndexJob::IndexJob(Napi::Env env, const char* name, FaissIndex* owner, Napi::Object owner_object, std::shared_ptr<SharedIndex> shared)
    : Napi::AsyncWorker(env, name),
      shared_(std::move(shared)),
      deferred_(Napi::Promise::Deferred::New(env)),
      owner_ref_(Napi::Persistent(owner_object)),
      owner_(owner) {}

void IndexJob::EndJob() {
  owner_->EndAsync(Env());
  owner_ref_.Reset();
}

void IndexJob::OnOK() {
  EndJob();
  deferred_.Resolve(Result());
}

void IndexJob::OnError(const Napi::Error& error) {
  EndJob();
  deferred_.Reject(CodedError(Env(), "ERR_FAISS", error.Message()).Value());
}

void IndexJob::OnWorkComplete(Napi::Env env, napi_status status) {
  CompleteUnlessEnding([&] { Napi::AsyncWorker::OnWorkComplete(env, status); });
}

AddWorker::AddWorker(Napi::Env env, FaissIndex* owner, Napi::Object owner_object, std::shared_ptr<SharedIndex> shared,
                     std::vector<float> vectors, size_t n)
    : IndexJob(env, "fenecFaissAdd", owner, owner_object, std::move(shared)),
      vectors_(std::move(vectors)),
      n_(n),
      first_label_(shared_->index->ntotal) {}

void AddWorker::Execute() {
  // Worker thread: no JS here. Errors travel as a message to OnError, on the main thread.
  std::string error = Capture([&] {
    ApplyThreads();
    faiss::Index& index = *shared_->index;
    const size_t d = static_cast<size_t>(index.d);
    for (size_t done = 0; done < n_;) {
      const size_t count = std::min(shared_->PartVectors(d), n_ - done);
      std::unique_lock<std::shared_mutex> lock(shared_->mutex);
      AddVectors(index, count, vectors_.data() + done * d, shared_->scratch);
      shared_->ntotal.store(index.ntotal);
      done += count;
    }
  });
  if (!error.empty()) SetError(error);
  std::vector<float>().swap(vectors_);
}

Napi::Value AddWorker::Result() { return Napi::Number::New(Env(), static_cast<double>(first_label_)); }

SerializeWorker::SerializeWorker(Napi::Env env, FaissIndex* owner, Napi::Object owner_object, std::shared_ptr<SharedIndex> shared)
    : IndexJob(env, "fenecFaissSerialize", owner, owner_object, std::move(shared)) {}

void SerializeWorker::Execute() {
  std::string error = Capture([&] {
    // Shared: searches go on; no add runs meanwhile (the owner refuses them while this job runs).
    std::shared_lock<std::shared_mutex> lock(shared_->mutex);
    faiss::VectorIOWriter writer;
    faiss::write_index(shared_->index.get(), &writer);
    bytes_.resize(kEnvelopeHeaderSize + writer.data.size());
    WriteEnvelopeHeader(bytes_.data(), writer.data.data(), writer.data.size());
    std::memcpy(bytes_.data() + kEnvelopeHeaderSize, writer.data.data(), writer.data.size());
  });
  if (!error.empty()) SetError(error);
}

Napi::Value SerializeWorker::Result() {
  // The bytes move into the Buffer (freed by its finalizer): no second copy of a large index.
  auto* held = new std::vector<uint8_t>(std::move(bytes_));
  return Napi::Buffer<uint8_t>::New(
      Env(), held->data(), held->size(), [](Napi::Env, uint8_t*, std::vector<uint8_t>* bytes) { delete bytes; }, held);
}

}  // namespace fenec
