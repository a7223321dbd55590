#include "addon/js_args.h"

#include <cmath>
#include <string>

namespace oyster {

bool IntegerArg(const Napi::CallbackInfo& info, size_t i, const char* name, double max, const char* range,
                uint64_t* out) {
  Napi::Env env = info.Env();
  double d;
  // One call: fails for anything but a number.
  if (napi_get_value_double(env, info[i], &d) != napi_ok) {
    Napi::TypeError::New(env, std::string(name) + " must be a number").ThrowAsJavaScriptException();
    return false;
  }
  if (!(d >= 0) || d > max || std::floor(d) != d) {
    Napi::RangeError::New(env, std::string(name) + " must be an integer in " + range).ThrowAsJavaScriptException();
    return false;
  }
  *out = static_cast<uint64_t>(d);
  return true;
}

bool IsBytes(Napi::Value v) {
  return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array;
}

bool BufferArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (IsBytes(info[i])) return true;
  Napi::TypeError::New(info.Env(), std::string(name) + " must be a Buffer").ThrowAsJavaScriptException();
  return false;
}

bool Latin1Arg(const Napi::CallbackInfo& info, size_t i, const char* name, std::string* out) {
  Napi::Env env = info.Env();
  out->clear();
  if (info[i].IsUndefined()) return true;
  size_t length = 0;
  if (!info[i].IsString() || napi_get_value_string_latin1(env, info[i], nullptr, 0, &length) != napi_ok) {
    Napi::TypeError::New(env, std::string(name) + " must be a string").ThrowAsJavaScriptException();
    return false;
  }
  // The call writes a terminating NUL after the characters.
  out->resize(length + 1);
  napi_get_value_string_latin1(env, info[i], out->data(), out->size(), &length);
  out->resize(length);
  return true;
}

}  // namespace oyster
