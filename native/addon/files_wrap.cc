#include "addon/files_wrap.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "addon/addon_data.h"
#include "addon/js_args.h"
#include "addon/pool_op.h"
#include "util/file_system.h"
#include "util/uncached_io.h"

namespace oyster {
namespace {

// One file operation: its Status-returning work on the pool, its promise
// settled on the JavaScript thread (addon/pool_op.h).
class FileOp : public PoolOp {
 public:
  // Schedules the work; returns the promise.
  Napi::Value Start() {
    Napi::Promise p = promise();
    Schedule();
    return p;
  }

 protected:
  explicit FileOp(Napi::Env env) : PoolOp(env, env.GetInstanceData<AddonData>()) {}

  virtual Status Work() = 0;

 private:
  void Run() final { status_ = Work(); }
};

class CallOp final : public FileOp {
 public:
  CallOp(Napi::Env env, std::function<Status()> call) : FileOp(env), call_(std::move(call)) {}

 private:
  Status Work() override { return call_(); }

  std::function<Status()> call_;
};

// Reads into the caller's Buffer, so that the caller decides where the
// bytes land (after a message header, in a buffer it reuses) and how much
// memory a read takes.
class ReadOp final : public FileOp {
 public:
  ReadOp(Napi::Env env, std::string path, uint64_t offset, Napi::Uint8Array target)
      : FileOp(env),
        path_(std::move(path)),
        offset_(offset),
        bytes_(reinterpret_cast<char*>(target.Data())),
        size_(target.ByteLength()) {
    // The pool reads into the Buffer's own memory.
    Hold(env, target);
  }

 private:
  Status Work() override { return ReadUncached(path_, offset_, size_, bytes_, &read_); }

  Napi::Value Result(Napi::Env env) override { return Napi::Number::New(env, static_cast<double>(read_)); }

  const std::string path_;
  const uint64_t offset_;
  char* const bytes_;
  const size_t size_;
  size_t read_ = 0;
};

class WriteOp final : public FileOp {
 public:
  WriteOp(Napi::Env env, std::string path, uint64_t offset, Napi::Uint8Array data, bool create)
      : FileOp(env),
        path_(std::move(path)),
        offset_(offset),
        bytes_(reinterpret_cast<const char*>(data.Data())),
        size_(data.ByteLength()),
        create_(create) {
    // The pool writes from the Buffer's own memory.
    Hold(env, data);
  }

 private:
  Status Work() override {
    if (create_) {
      std::unique_ptr<File> file;
      Status s = FileSystem::Default()->OpenFile(path_, true, &file);
      if (!s.ok()) return s;
    }
    return size_ == 0 ? Status::OK() : WriteUncached(path_, offset_, bytes_, size_);
  }

  const std::string path_;
  const uint64_t offset_;
  const char* const bytes_;
  const size_t size_;
  const bool create_;
};

class ListOp final : public FileOp {
 public:
  ListOp(Napi::Env env, std::string dir) : FileOp(env), dir_(std::move(dir)) {}

 private:
  Status Work() override { return FileSystem::Default()->ListDir(dir_, &names_); }

  Napi::Value Result(Napi::Env env) override {
    Napi::Array a = Napi::Array::New(env, names_.size());
    for (uint32_t i = 0; i < names_.size(); i++) a.Set(i, Napi::String::New(env, names_[i]));
    return a;
  }

  const std::string dir_;
  std::vector<std::string> names_;
};

// Argument i as a path; throws and returns false unless it is a string. A
// NUL would end the path early, so that another file than the one named
// would be used: refused, as Node's fs refuses it.
bool PathArg(const Napi::CallbackInfo& info, size_t i, const char* name, std::string* out) {
  Napi::Env env = info.Env();
  if (!info[i].IsString()) {
    Napi::TypeError::New(env, std::string(name) + " must be a string").ThrowAsJavaScriptException();
    return false;
  }
  *out = info[i].As<Napi::String>().Utf8Value();
  if (out->find('\0') != std::string::npos) {
    Napi::TypeError::New(env, std::string(name) + " must not contain NUL characters").ThrowAsJavaScriptException();
    return false;
  }
  return true;
}

Napi::Value Call(Napi::Env env, std::function<Status()> call) {
  return (new CallOp(env, std::move(call)))->Start();
}

Napi::Value Read(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path;
  uint64_t offset;
  if (!PathArg(info, 0, "path", &path) || !IntegerArg(info, 1, "offset", kMaxSafeInteger, "0..2^53-1", &offset) ||
      !BufferArg(info, 2, "target")) {
    return env.Undefined();
  }
  return (new ReadOp(env, std::move(path), offset, info[2].As<Napi::Uint8Array>()))->Start();
}

Napi::Value Write(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path;
  uint64_t offset;
  if (!PathArg(info, 0, "path", &path) || !IntegerArg(info, 1, "offset", kMaxSafeInteger, "0..2^53-1", &offset)) {
    return env.Undefined();
  }
  if (!BufferArg(info, 2, "data")) return env.Undefined();
  if (!info[3].IsBoolean()) {
    Napi::TypeError::New(env, "create must be a boolean").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  auto* op = new WriteOp(env, std::move(path), offset, info[2].As<Napi::Uint8Array>(), info[3].As<Napi::Boolean>());
  return op->Start();
}

Napi::Value Sync(const Napi::CallbackInfo& info) {
  std::string path;
  if (!PathArg(info, 0, "path", &path)) return info.Env().Undefined();
  return Call(info.Env(), [path] {
    std::unique_ptr<File> file;
    Status s = FileSystem::Default()->OpenFile(path, false, &file);
    return s.ok() ? file->Sync() : s;
  });
}

Napi::Value SyncDir(const Napi::CallbackInfo& info) {
  std::string dir;
  if (!PathArg(info, 0, "dir", &dir)) return info.Env().Undefined();
  return Call(info.Env(), [dir] { return FileSystem::Default()->SyncDir(dir); });
}

Napi::Value CreateDir(const Napi::CallbackInfo& info) {
  std::string dir;
  if (!PathArg(info, 0, "dir", &dir)) return info.Env().Undefined();
  return Call(info.Env(), [dir] { return FileSystem::Default()->CreateDir(dir); });
}

Napi::Value Rename(const Napi::CallbackInfo& info) {
  std::string from, to;
  if (!PathArg(info, 0, "from", &from) || !PathArg(info, 1, "to", &to)) return info.Env().Undefined();
  return Call(info.Env(), [from, to] { return FileSystem::Default()->Rename(from, to); });
}

Napi::Value Remove(const Napi::CallbackInfo& info) {
  std::string path;
  if (!PathArg(info, 0, "path", &path)) return info.Env().Undefined();
  return Call(info.Env(), [path] { return FileSystem::Default()->Remove(path); });
}

Napi::Value List(const Napi::CallbackInfo& info) {
  std::string dir;
  if (!PathArg(info, 0, "dir", &dir)) return info.Env().Undefined();
  return (new ListOp(info.Env(), std::move(dir)))->Start();
}

}  // namespace

Napi::Object FilesExports(Napi::Env env) {
  Napi::Object files = Napi::Object::New(env);
  files.Set("read", Napi::Function::New(env, &Read, "read"));
  files.Set("write", Napi::Function::New(env, &Write, "write"));
  files.Set("sync", Napi::Function::New(env, &Sync, "sync"));
  files.Set("syncDir", Napi::Function::New(env, &SyncDir, "syncDir"));
  files.Set("createDir", Napi::Function::New(env, &CreateDir, "createDir"));
  files.Set("rename", Napi::Function::New(env, &Rename, "rename"));
  files.Set("remove", Napi::Function::New(env, &Remove, "remove"));
  files.Set("list", Napi::Function::New(env, &List, "list"));
  return files;
}

}  // namespace oyster
