// The JS class FaissIndex: one Faiss index (HNSW over flat vectors, or flat), owned by one JS object.
#pragma once

#include <faiss/Index.h>
#include <napi.h>

#include <cstdint>
#include <memory>

#include "index-shape.h"

namespace fenec {

class FaissIndex : public Napi::ObjectWrap<FaissIndex> {
 public:
  /** Defines the class and keeps its constructor for deserialize(). */
  static Napi::Function Init(Napi::Env env);

  /** new FaissIndex({ kind, dims, metric, m?, efConstruction?, efSearch? }) */
  explicit FaissIndex(const Napi::CallbackInfo& info);
  ~FaissIndex() override;

  /** Called on the main thread by the async add when it ends, whether it succeeded or not. */
  void EndAsyncAdd(Napi::Env env);

 private:
  static Napi::Value Deserialize(const Napi::CallbackInfo& info);
  Napi::Value Add(const Napi::CallbackInfo& info);
  Napi::Value AddAsync(const Napi::CallbackInfo& info);
  Napi::Value Search(const Napi::CallbackInfo& info);
  Napi::Value Serialize(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value Dims(const Napi::CallbackInfo& info);
  Napi::Value Ntotal(const Napi::CallbackInfo& info);
  Napi::Value Kind(const Napi::CallbackInfo& info);
  Napi::Value Metric(const Napi::CallbackInfo& info);
  Napi::Value Busy(const Napi::CallbackInfo& info);

  void Adopt(Napi::Env env, std::unique_ptr<faiss::Index> index);
  /** The index, or ERR_FAISS_DISPOSED / ERR_FAISS_BUSY. */
  faiss::Index& Usable(Napi::Env env);
  /** Checks vectors to add; returns how many rows they hold. */
  size_t CheckAdd(Napi::Env env, const Napi::Float32Array& vectors);
  /** Tells V8 how much native memory this object holds, so GC weighs it. */
  void ReportMemory(Napi::Env env, int64_t bytes);

  // Shared with a running async add, which keeps the index alive even if this object is collected.
  std::shared_ptr<faiss::Index> index_;
  IndexKind kind_ = IndexKind::kFlat;
  faiss::MetricType metric_ = faiss::METRIC_L2;
  int dims_ = 0;
  int64_t ntotal_ = 0;  // as of the last finished call: readable while an async add runs
  bool busy_ = false;
  int64_t reported_bytes_ = 0;
};

}  // namespace fenec
