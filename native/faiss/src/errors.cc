#include "errors.h"

namespace fenec {

namespace {
template <class E>
E WithCode(Napi::Env env, E error, const char* code) {
  error.Set("code", Napi::String::New(env, code));
  return error;
}
}  // namespace

void ThrowTypeError(Napi::Env env, const std::string& message) {
  throw WithCode(env, Napi::TypeError::New(env, message), "ERR_INVALID_ARG_TYPE");
}

void ThrowRangeError(Napi::Env env, const std::string& message) {
  throw WithCode(env, Napi::RangeError::New(env, message), "ERR_OUT_OF_RANGE");
}

void ThrowCoded(Napi::Env env, const char* code, const std::string& message) {
  throw CodedError(env, code, message);
}

Napi::Error CodedError(Napi::Env env, const char* code, const std::string& message) {
  return WithCode(env, Napi::Error::New(env, message), code);
}

}  // namespace fenec
