#include "addon/socket_wrap.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cstring>
#include <string>

namespace oyster {
namespace {

Napi::Value ErrnoError(Napi::Env env, int err, const char* what) {
  Napi::Error e = Napi::Error::New(env, std::string(what) + ": " + std::strerror(err));
  const char* code = err == EBADF ? "EBADF" : err == ENOTSOCK ? "ENOTSOCK" : err == EMFILE ? "EMFILE" : "EIO";
  e.Set("code", Napi::String::New(env, code));
  e.ThrowAsJavaScriptException();
  return env.Undefined();
}

Napi::Value Duplicate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber()) {
    Napi::TypeError::New(env, "socket.duplicate expects a descriptor").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int fd = info[0].As<Napi::Number>().Int32Value();
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError(env, errno, "socket.duplicate");
  if (!S_ISSOCK(st.st_mode)) return ErrnoError(env, ENOTSOCK, "socket.duplicate");
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return ErrnoError(env, errno, "socket.duplicate");
  return Napi::Number::New(env, copy);
}

}  // namespace

Napi::Object SocketExports(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("duplicate", Napi::Function::New(env, &Duplicate, "duplicate"));
  return o;
}

}  // namespace oyster
