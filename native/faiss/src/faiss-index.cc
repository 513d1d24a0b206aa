#include "faiss-index.h"

#include <faiss/IndexFlat.h>
#include <faiss/IndexHNSW.h>
#include <faiss/impl/io.h>
#include <faiss/index_io.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "add-worker.h"
#include "args.h"
#include "envelope.h"
#include "errors.h"
#include "hnsw-add.h"
#include "search.h"
#include "threads.h"

namespace fenec {

namespace {

// Limits. Labels are int32 because HNSW stores node ids as int.
constexpr int64_t kMaxDims = 65536;
constexpr int64_t kMaxLabels = INT_MAX;
constexpr int64_t kMaxK = 1 << 20;
constexpr int64_t kMaxEf = 1 << 16;

// Defaults for new HNSW indexes.
constexpr int kDefaultM = 32;
constexpr int kDefaultEfConstruction = 40;
constexpr int kDefaultEfSearch = 64;

/** read_index straight from the JS Buffer's memory (faiss::VectorIOReader would copy it first). */
struct SpanReader : faiss::IOReader {
  const uint8_t* data;
  size_t size;
  size_t pos = 0;

  SpanReader(const uint8_t* d, size_t n) : data(d), size(n) {}

  size_t operator()(void* ptr, size_t item_size, size_t nitems) override {
    if (item_size == 0 || nitems == 0) return 0;
    size_t items = std::min(nitems, (size - pos) / item_size);
    std::memcpy(ptr, data + pos, items * item_size);
    pos += items * item_size;
    return items;
  }
};

std::unique_ptr<faiss::Index> MakeIndex(Napi::Env env, Napi::Object options) {
  std::string kind = RequireChoice(env, options, "kind", "hnsw", "flat");
  int d = static_cast<int>(RequireInt(env, options.Get("dims"), 1, kMaxDims, "dims"));
  faiss::MetricType metric =
      RequireChoice(env, options, "metric", "l2", "ip") == "l2" ? faiss::METRIC_L2 : faiss::METRIC_INNER_PRODUCT;
  if (kind == "flat") {
    if (metric == faiss::METRIC_L2) return std::make_unique<faiss::IndexFlatL2>(d);
    return std::make_unique<faiss::IndexFlatIP>(d);
  }
  int m = static_cast<int>(OptionalInt(env, options, "m", kDefaultM, 2, 512));
  int ef_construction = static_cast<int>(OptionalInt(env, options, "efConstruction", kDefaultEfConstruction, 1, kMaxEf));
  int ef_search = static_cast<int>(OptionalInt(env, options, "efSearch", kDefaultEfSearch, 1, kMaxEf));
  auto index = Guard(env, [&] { return std::make_unique<faiss::IndexHNSWFlat>(d, m, metric); });
  index->hnsw.efConstruction = ef_construction;
  index->hnsw.efSearch = ef_search;
  return index;
}

}  // namespace

Napi::Function FaissIndex::Init(Napi::Env env) {
  Napi::Function cls = DefineClass(
      env, "FaissIndex",
      {
          StaticMethod<&FaissIndex::Deserialize>("deserialize"),
          InstanceMethod<&FaissIndex::Add>("add"),
          InstanceMethod<&FaissIndex::AddAsync>("addAsync"),
          InstanceMethod<&FaissIndex::Search>("search"),
          InstanceMethod<&FaissIndex::Serialize>("serialize"),
          InstanceMethod<&FaissIndex::SerializeAsync>("serializeAsync"),
          InstanceMethod<&FaissIndex::Dispose>("dispose"),
          InstanceAccessor<&FaissIndex::Dims>("dims"),
          InstanceAccessor<&FaissIndex::Ntotal>("ntotal"),
          InstanceAccessor<&FaissIndex::Kind>("kind"),
          InstanceAccessor<&FaissIndex::Metric>("metric"),
          InstanceAccessor<&FaissIndex::Busy>("busy"),
      });
  env.SetInstanceData<Napi::FunctionReference>(new Napi::FunctionReference(Napi::Persistent(cls)));
  return cls;
}

FaissIndex::FaissIndex(const Napi::CallbackInfo& info) : Napi::ObjectWrap<FaissIndex>(info) {
  Napi::Env env = info.Env();
  if (info[0].IsExternal()) {  // from Deserialize: the index it read, already checked
    Adopt(env, std::move(*info[0].As<Napi::External<std::unique_ptr<faiss::Index>>>().Data()));
    return;
  }
  if (!info[0].IsObject()) ThrowTypeError(env, "options must be an object { kind, dims, metric }");
  Adopt(env, MakeIndex(env, info[0].As<Napi::Object>()));
}

FaissIndex::~FaissIndex() {
  // A finalizer (or env teardown). Running background work holds its own reference to the index.
  shared_.reset();
  if (reported_bytes_ != 0) {
    int64_t ignored;
    napi_adjust_external_memory(Env(), -reported_bytes_, &ignored);  // no throw from a destructor
  }
}

void FaissIndex::Adopt(Napi::Env env, std::unique_ptr<faiss::Index> index) {
  IndexShape shape = Guard(env, [&] { return ShapeOf(*index); });
  kind_ = shape.kind;
  metric_ = index->metric_type;
  dims_ = index->d;
  shared_ = std::make_shared<SharedIndex>();
  shared_->ntotal.store(index->ntotal);
  shared_->index = std::move(index);
  ReportMemory(env, static_cast<int64_t>(NativeBytes(*shared_->index)));
}

faiss::Index& FaissIndex::Searchable(Napi::Env env) {
  if (!shared_) ThrowCoded(env, "ERR_FAISS_DISPOSED", "the index was disposed");
  return *shared_->index;
}

faiss::Index& FaissIndex::Usable(Napi::Env env) {
  faiss::Index& index = Searchable(env);
  if (busy_) ThrowCoded(env, "ERR_FAISS_BUSY", "the index is busy: an addAsync or serializeAsync is running on it (await it first)");
  return index;
}

void FaissIndex::ReportMemory(Napi::Env env, int64_t bytes) {
  int64_t ignored;
  if (napi_adjust_external_memory(env, bytes - reported_bytes_, &ignored) == napi_ok) reported_bytes_ = bytes;
}

size_t FaissIndex::CheckAdd(Napi::Env env, const Napi::Float32Array& vectors) {
  size_t n = RowsOf(env, vectors, dims_, "vectors");
  const int64_t ntotal = shared_->ntotal.load();
  if (static_cast<int64_t>(n) > kMaxLabels - ntotal) {
    ThrowRangeError(env, "adding " + std::to_string(n) + " vectors to " + std::to_string(ntotal) +
                             " would pass the 2^31-1 labels an index holds");
  }
  RequireFinite(env, vectors.Data(), vectors.ElementLength(), dims_, "vectors");
  return n;
}

Napi::Value FaissIndex::Add(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  faiss::Index& index = Usable(env);
  Napi::Float32Array vectors = RequireFloat32Array(env, info[0], "vectors");
  size_t n = CheckAdd(env, vectors);
  int64_t first = index.ntotal;
  ServeSingleThreaded();
  Guard(env, [&] { AddVectors(index, n, vectors.Data(), shared_->scratch); });
  shared_->ntotal.store(index.ntotal);
  ReportMemory(env, static_cast<int64_t>(NativeBytes(index)));
  return Napi::Number::New(env, static_cast<double>(first));
}

Napi::Value FaissIndex::AddAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Usable(env);
  Napi::Float32Array vectors = RequireFloat32Array(env, info[0], "vectors");
  size_t n = CheckAdd(env, vectors);
  std::vector<float> copy = Guard(env, [&] {
    return std::vector<float>(vectors.Data(), vectors.Data() + vectors.ElementLength());
  });
  auto* worker = new AddWorker(env, this, info.This().As<Napi::Object>(), shared_, std::move(copy), n);
  Napi::Promise promise = worker->Promise();
  busy_ = true;
  worker->Queue();
  return promise;
}

Napi::Value FaissIndex::SerializeAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Usable(env);
  auto* worker = new SerializeWorker(env, this, info.This().As<Napi::Object>(), shared_);
  Napi::Promise promise = worker->Promise();
  busy_ = true;
  worker->Queue();
  return promise;
}

void FaissIndex::EndAsync(Napi::Env env) {
  busy_ = false;
  if (!shared_) return;
  shared_->ntotal.store(shared_->index->ntotal);
  ReportMemory(env, static_cast<int64_t>(NativeBytes(*shared_->index)));
}

Napi::Value FaissIndex::Search(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  faiss::Index& index = Searchable(env);
  Napi::Float32Array queries = RequireFloat32Array(env, info[0], "queries");
  size_t nq = RowsOf(env, queries, dims_, "queries");
  size_t k = static_cast<size_t>(RequireInt(env, info[1], 1, kMaxK, "k"));
  SearchRequest request{queries.Data(), nq, k, 0, false, nullptr, 0};
  if (!info[2].IsUndefined()) {
    if (!info[2].IsObject()) ThrowTypeError(env, "search options must be an object { efSearch?, allow? }");
    Napi::Object options = info[2].As<Napi::Object>();
    request.ef_search = static_cast<int>(OptionalInt(env, options, "efSearch", 0, 1, kMaxEf));
    Napi::Value allow = options.Get("allow");
    if (!allow.IsUndefined()) {
      Napi::Uint8Array bitmap = RequireUint8Array(env, allow, "allow");
      request.has_allow = true;
      request.allow = bitmap.Data();
      request.allow_bytes = bitmap.ElementLength();
    }
  }
  RequireFinite(env, queries.Data(), queries.ElementLength(), dims_, "queries");
  Napi::Float32Array distances = Napi::Float32Array::New(env, nq * k);
  Napi::Int32Array labels = Napi::Int32Array::New(env, nq * k);
  ServeSingleThreaded();
  shared_->last_search_ms.store(SharedIndex::NowMs(), std::memory_order_relaxed);
  Guard(env, [&] {
    // Beside a background add, waits for the part it is adding (milliseconds), never reads a graph that changes.
    std::shared_lock<std::shared_mutex> lock(shared_->mutex);
    fenec::Search(index, request, distances.Data(), labels.Data());
  });
  Napi::Object result = Napi::Object::New(env);
  result.Set("distances", distances);
  result.Set("labels", labels);
  return result;
}

Napi::Value FaissIndex::Serialize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  faiss::Index& index = Usable(env);
  return Guard(env, [&] {
    faiss::VectorIOWriter writer;
    faiss::write_index(&index, &writer);
    auto buffer = Napi::Buffer<uint8_t>::New(env, kEnvelopeHeaderSize + writer.data.size());
    WriteEnvelopeHeader(buffer.Data(), writer.data.data(), writer.data.size());
    std::memcpy(buffer.Data() + kEnvelopeHeaderSize, writer.data.data(), writer.data.size());
    return buffer;
  });
}

Napi::Value FaissIndex::Deserialize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Uint8Array bytes = RequireUint8Array(env, info[0], "bytes");
  std::unique_ptr<faiss::Index> index = Guard(env, [&] {
    Payload payload = OpenEnvelope(bytes.Data(), bytes.ElementLength());
    SpanReader reader(payload.data, payload.size);
    std::unique_ptr<faiss::Index> read;
    try {
      read.reset(faiss::read_index(&reader));
    } catch (const std::exception& e) {
      throw BadIndexError(std::string("faiss read_index: ") + e.what());
    }
    if (reader.pos != payload.size) throw BadIndexError("bytes left over after the index");
    CheckDeserialized(*read);
    return read;
  });
  Napi::FunctionReference* cls = env.GetInstanceData<Napi::FunctionReference>();
  // The constructor moves the index out of `index`; if it throws first, `index` still frees it.
  return cls->New({Napi::External<std::unique_ptr<faiss::Index>>::New(env, &index)});
}

Napi::Value FaissIndex::Dispose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!shared_) return env.Undefined();  // twice is fine
  if (busy_) ThrowCoded(env, "ERR_FAISS_BUSY", "the index is busy: an addAsync or serializeAsync is running on it (await it first)");
  shared_.reset();
  ReportMemory(env, 0);
  return env.Undefined();
}

Napi::Value FaissIndex::Dims(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), dims_);
}

Napi::Value FaissIndex::Ntotal(const Napi::CallbackInfo& info) {
  // Live: a background add's parts count as each is added (0 once disposed).
  return Napi::Number::New(info.Env(), shared_ ? static_cast<double>(shared_->ntotal.load()) : 0.0);
}

Napi::Value FaissIndex::Kind(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), kind_ == IndexKind::kHnsw ? "hnsw" : "flat");
}

Napi::Value FaissIndex::Metric(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), metric_ == faiss::METRIC_L2 ? "l2" : "ip");
}

Napi::Value FaissIndex::Busy(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), busy_);
}

}  // namespace fenec
