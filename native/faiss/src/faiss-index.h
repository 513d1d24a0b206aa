// The JS class FaissIndex: one Faiss index (HNSW over flat vectors, or flat), owned by one JS object.
#pragma once

#include <faiss/Index.h>
#include <napi.h>

#include <cstdint>
#include <memory>

#include "index-shape.h"
#include "shared-index.h"

namespace fenec {

class FaissIndex : public Napi::ObjectWrap<FaissIndex> {
 public:
  /** Defines the class and keeps its constructor for deserialize(). */
  static Napi::Function Init(Napi::Env env);

  /** new FaissIndex({ kind, dims, metric, m?, efConstruction?, efSearch? }) */
  explicit FaissIndex(const Napi::CallbackInfo& info);
  ~FaissIndex() override;

  /** Called on the main thread by background work (an add, a serialization) when it ends, whether it succeeded or not. */
  void EndAsync(Napi::Env env);

 private:
  static Napi::Value Deserialize(const Napi::CallbackInfo& info);
  Napi::Value Add(const Napi::CallbackInfo& info);
  Napi::Value AddAsync(const Napi::CallbackInfo& info);
  Napi::Value Search(const Napi::CallbackInfo& info);
  Napi::Value Serialize(const Napi::CallbackInfo& info);
  Napi::Value SerializeAsync(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value Dims(const Napi::CallbackInfo& info);
  Napi::Value Ntotal(const Napi::CallbackInfo& info);
  Napi::Value Kind(const Napi::CallbackInfo& info);
  Napi::Value Metric(const Napi::CallbackInfo& info);
  Napi::Value Busy(const Napi::CallbackInfo& info);

  void Adopt(Napi::Env env, std::unique_ptr<faiss::Index> index);
  /** The index, or ERR_FAISS_DISPOSED / ERR_FAISS_BUSY (background work runs on it). */
  faiss::Index& Usable(Napi::Env env);
  /** The index for a search: ERR_FAISS_DISPOSED only; background work may run beside it. */
  faiss::Index& Searchable(Napi::Env env);
  /** Checks vectors to add; returns how many rows they hold. */
  size_t CheckAdd(Napi::Env env, const Napi::Float32Array& vectors);
  /** Tells V8 how much native memory this object holds, so GC weighs it. */
  void ReportMemory(Napi::Env env, int64_t bytes);

  // Shared with running background work, which keeps the index alive even if this object is collected.
  std::shared_ptr<SharedIndex> shared_;
  IndexKind kind_ = IndexKind::kFlat;
  faiss::MetricType metric_ = faiss::METRIC_L2;
  int dims_ = 0;
  bool busy_ = false;  // background work runs
  int64_t reported_bytes_ = 0;
};

}  // namespace fenec
