#include "addon/js_status.h"

#include <cstring>

namespace oyster {
namespace {

const char* CodeString(Status::Code c) {
  switch (c) {
    case Status::kOk: return "OYSTER_OK";
    case Status::kNotFound: return "OYSTER_NOT_FOUND";
    case Status::kCorruption: return "OYSTER_CORRUPTION";
    case Status::kNotSupported: return "OYSTER_NOT_SUPPORTED";
    case Status::kInvalidArgument: return "OYSTER_INVALID_ARGUMENT";
    case Status::kIOError: return "OYSTER_IO_ERROR";
    case Status::kBusy: return "OYSTER_BUSY";
    case Status::kClosed: return "OYSTER_CLOSED";
    case Status::kWouldBlock: return "OYSTER_WOULD_BLOCK";
  }
  return "OYSTER_UNKNOWN";
}

}  // namespace

Napi::Error StatusToError(Napi::Env env, const Status& s) {
  Napi::Error e = Napi::Error::New(env, s.ToString());
  e.Set("code", Napi::String::New(env, CodeString(s.code())));
  if (s.err() != 0) {
    e.Set("errno", Napi::Number::New(env, s.err()));
    const char* name = strerrorname_np(s.err());
    if (name != nullptr) e.Set("syscallCode", Napi::String::New(env, name));
  }
  return e;
}

Napi::Promise RejectedPromise(Napi::Env env, const Status& s) {
  auto d = Napi::Promise::Deferred::New(env);
  d.Reject(StatusToError(env, s).Value());
  return d.Promise();
}

}  // namespace oyster
