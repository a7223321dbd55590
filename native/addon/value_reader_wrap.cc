#include "addon/value_reader_wrap.h"

#include <errno.h>
#include <unistd.h>

#include <string>

#include "addon/js_args.h"
#include "addon/js_records.h"
#include "addon/js_status.h"
#include "addon/pool_op.h"

namespace oyster {
namespace {

// A call of one reader: its corruption errors carry the record's version.
class ReaderOp : public PoolOp {
 protected:
  ReaderOp(Napi::Env env, std::shared_ptr<ValueReader> reader)
      : PoolOp(env, env.GetInstanceData<AddonData>()), reader_(std::move(reader)) {}

  void Decorate(Napi::Env env, Napi::Error& e) override {
    if (status_.IsCorruption()) e.Set("version", VersionToJs(env, reader_->version()));
  }

  const std::shared_ptr<ValueReader> reader_;
};

class ReadOp final : public ReaderOp {
 public:
  ReadOp(Napi::Env env, std::shared_ptr<ValueReader> reader, uint64_t offset, Napi::Uint8Array target)
      : ReaderOp(env, std::move(reader)),
        offset_(offset),
        dst_(reinterpret_cast<char*>(target.Data())),
        n_(target.ByteLength()) {
    Hold(env, target);
  }

  void Run() override { status_ = reader_->Read(offset_, n_, dst_); }

 private:
  const uint64_t offset_;
  char* const dst_;
  const size_t n_;
};

class CheckRestOp final : public ReaderOp {
 public:
  CheckRestOp(Napi::Env env, std::shared_ptr<ValueReader> reader) : ReaderOp(env, std::move(reader)) {}

  void Run() override { status_ = reader_->CheckRest(); }
};

// Sends on its own duplicate of the socket's descriptor: should the socket
// be closed while the send runs, its number may be reused at once, and the
// value's bytes must not go to whatever gets it. The duplicate keeps the
// connection open until the send returns.
class SendOp final : public ReaderOp {
 public:
  SendOp(Napi::Env env, std::shared_ptr<ValueReader> reader, int fd, uint64_t offset, uint64_t n, std::string prefix)
      : ReaderOp(env, std::move(reader)), fd_(::dup(fd)), offset_(offset), n_(n), prefix_(std::move(prefix)) {
    if (fd_ < 0) status_ = Status::IOError("dup of socket " + std::to_string(fd), errno);
  }
  ~SendOp() override {
    if (fd_ >= 0) ::close(fd_);
  }

  void Run() override {
    if (fd_ >= 0) status_ = reader_->SendTo(offset_, static_cast<size_t>(n_), fd_, prefix_, &sent_);
  }

  Napi::Value Result(Napi::Env env) override { return Napi::Number::New(env, static_cast<double>(sent_)); }

 private:
  const int fd_;
  const uint64_t offset_;
  const uint64_t n_;
  const std::string prefix_;
  size_t sent_ = 0;
};

}  // namespace

Napi::Function ValueReaderWrap::Define(Napi::Env env) {
  return DefineClass(env, "ValueReader",
                     {
                         InstanceAccessor<&ValueReaderWrap::Size>("size"),
                         InstanceMethod<&ValueReaderWrap::Read>("read"),
                         InstanceMethod<&ValueReaderWrap::SendTo>("sendTo"),
                         InstanceMethod<&ValueReaderWrap::CheckRest>("checkRest"),
                         InstanceMethod<&ValueReaderWrap::Close>("close"),
                     });
}

Napi::Object ValueReaderWrap::New(Napi::Env env, AddonData* data, std::unique_ptr<ValueReader> reader) {
  Napi::Object o = data->value_reader_ctor().New({});
  ValueReaderWrap* w = Unwrap(o);
  w->size_ = static_cast<double>(reader->size());
  w->reader_ = std::move(reader);
  w->strand_ = std::make_shared<Strand>(data->pool());
  return o;
}

ValueReaderWrap::ValueReaderWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ValueReaderWrap>(info) {}

Napi::Value ValueReaderWrap::Size(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), size_); }

Napi::Value ValueReaderWrap::Read(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t offset;
  if (!IntegerArg(info, 0, "offset", kMaxSafeInteger, "0..2^53-1", &offset) || !BufferArg(info, 1, "target")) {
    return env.Undefined();
  }
  if (!reader_) return RejectedPromise(env, Status::Closed("the value reader is closed"));
  auto* op = new ReadOp(env, reader_, offset, info[1].As<Napi::Uint8Array>());
  Napi::Promise p = op->promise();
  op->ScheduleOn(strand_.get());
  return p;
}

Napi::Value ValueReaderWrap::SendTo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t fd, offset, n;
  if (!IntegerArg(info, 0, "fd", INT32_MAX, "0..2^31-1", &fd) ||
      !IntegerArg(info, 1, "offset", kMaxSafeInteger, "0..2^53-1", &offset) ||
      !IntegerArg(info, 2, "n", kMaxSafeInteger, "0..2^53-1", &n)) {
    return env.Undefined();
  }
  std::string prefix;
  if (!Latin1Arg(info, 3, "prefix", &prefix)) return env.Undefined();
  if (!reader_) return RejectedPromise(env, Status::Closed("the value reader is closed"));
  auto* op = new SendOp(env, reader_, static_cast<int>(fd), offset, n, std::move(prefix));
  Napi::Promise p = op->promise();
  op->ScheduleOn(strand_.get());
  return p;
}

Napi::Value ValueReaderWrap::CheckRest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!reader_) return RejectedPromise(env, Status::Closed("the value reader is closed"));
  auto* op = new CheckRestOp(env, reader_);
  Napi::Promise p = op->promise();
  op->ScheduleOn(strand_.get());
  return p;
}

Napi::Value ValueReaderWrap::Close(const Napi::CallbackInfo& info) {
  reader_.reset();
  return info.Env().Undefined();
}

}  // namespace oyster
