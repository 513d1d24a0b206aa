#include "args.h"

#include <cmath>
#include <string>

#include "errors.h"

namespace fenec {

namespace {
bool IsTypedArrayOf(Napi::Value value, napi_typedarray_type type) {
  return value.IsTypedArray() && value.As<Napi::TypedArray>().TypedArrayType() == type;
}
}  // namespace

Napi::Float32Array RequireFloat32Array(Napi::Env env, Napi::Value value, const char* name) {
  if (!IsTypedArrayOf(value, napi_float32_array)) ThrowTypeError(env, std::string(name) + " must be a Float32Array");
  return value.As<Napi::Float32Array>();
}

Napi::Uint8Array RequireUint8Array(Napi::Env env, Napi::Value value, const char* name) {
  if (!IsTypedArrayOf(value, napi_uint8_array)) ThrowTypeError(env, std::string(name) + " must be a Uint8Array");
  return value.As<Napi::Uint8Array>();
}

size_t RowsOf(Napi::Env env, const Napi::Float32Array& array, int dims, const char* name) {
  size_t length = array.ElementLength();
  if (length % static_cast<size_t>(dims) != 0) {
    ThrowRangeError(env, std::string(name) + " holds " + std::to_string(length) +
                             " floats, not a multiple of the index's " + std::to_string(dims) + " dims");
  }
  return length / static_cast<size_t>(dims);
}

void RequireFinite(Napi::Env env, const float* x, size_t count, int dims, const char* name) {
  for (size_t i = 0; i < count; i++) {
    if (!std::isfinite(x[i])) {
      ThrowRangeError(env, std::string(name) + ": vector " + std::to_string(i / dims) + ", component " +
                               std::to_string(i % dims) + " is not a finite number");
    }
  }
}

int64_t RequireInt(Napi::Env env, Napi::Value value, int64_t lo, int64_t hi, const char* name) {
  if (!value.IsNumber()) ThrowTypeError(env, std::string(name) + " must be a number");
  double v = value.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(v) || std::floor(v) != v || v < static_cast<double>(lo) || v > static_cast<double>(hi)) {
    ThrowRangeError(env, std::string(name) + " must be an integer from " + std::to_string(lo) + " to " +
                             std::to_string(hi) + " (got " + value.ToString().Utf8Value() + ")");
  }
  return static_cast<int64_t>(v);
}

int64_t OptionalInt(Napi::Env env, Napi::Object options, const char* key, int64_t fallback, int64_t lo, int64_t hi) {
  Napi::Value value = options.Get(key);
  if (value.IsUndefined()) return fallback;
  return RequireInt(env, value, lo, hi, key);
}

std::string RequireChoice(Napi::Env env, Napi::Object options, const char* key, const char* a, const char* b) {
  Napi::Value value = options.Get(key);
  std::string s = value.IsString() ? value.As<Napi::String>().Utf8Value() : "";
  if (s != a && s != b) ThrowTypeError(env, std::string(key) + " must be '" + a + "' or '" + b + "'");
  return s;
}

}  // namespace fenec
