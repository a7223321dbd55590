#include "addon/put_stream_wrap.h"

#include <string>
#include <vector>

#include "addon/js_args.h"
#include "addon/pool_op.h"

namespace oyster {
namespace {

class StreamOp final : public PoolOp {
 public:
  enum Kind { kAppend, kFinish, kAbort };

  StreamOp(Napi::Env env, std::shared_ptr<PutStream> stream, Kind kind)
      : PoolOp(env, env.GetInstanceData<AddonData>()), stream_(std::move(stream)), kind_(kind) {}
  // An append of `pieces`, whose Buffers `held` keeps.
  StreamOp(Napi::Env env, std::shared_ptr<PutStream> stream, std::vector<IoSlice> pieces, Napi::Array held)
      : StreamOp(env, std::move(stream), kAppend) {
    pieces_ = std::move(pieces);
    Hold(env, held);
  }

  // Schedules the op after the stream's earlier calls; returns its promise.
  Napi::Value StartOn(Strand* strand) {
    Napi::Promise p = promise();
    ScheduleOn(strand);
    return p;
  }

  void Run() override {
    switch (kind_) {
      case kAppend:
        status_ = stream_->Append(pieces_.data(), static_cast<int>(pieces_.size()));
        // Whatever went wrong, the value is no longer the one the caller is
        // sending: the stream ends here (native.ts promises the abort).
        if (!status_.ok()) stream_->Abort();
        break;
      case kFinish:
        status_ = stream_->Finish();
        break;
      case kAbort:
        stream_->Abort();
        break;
    }
    // Let go here: the last owner of an unfinished stream aborts it, which
    // is no job for the JavaScript thread, where the op is deleted.
    stream_.reset();
  }

 private:
  std::shared_ptr<PutStream> stream_;
  const Kind kind_;
  std::vector<IoSlice> pieces_;
};

}  // namespace

Napi::Function PutStreamWrap::Define(Napi::Env env) {
  return DefineClass(env, "PutStream",
                     {
                         InstanceMethod<&PutStreamWrap::Append>("append"),
                         InstanceMethod<&PutStreamWrap::Finish>("finish"),
                         InstanceMethod<&PutStreamWrap::Abort>("abort"),
                     });
}

Napi::Object PutStreamWrap::New(Napi::Env env, AddonData* data, std::unique_ptr<PutStream> stream) {
  Napi::Object o = data->put_stream_ctor().New({});
  PutStreamWrap* w = Unwrap(o);
  w->stream_ = std::move(stream);
  w->strand_ = std::make_shared<Strand>(data->pool());
  w->pool_ = data->weak_pool();
  return o;
}

PutStreamWrap::PutStreamWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<PutStreamWrap>(info) {}

PutStreamWrap::~PutStreamWrap() {
  if (stream_ == nullptr) return;
  std::shared_ptr<ThreadPool> pool = pool_.lock();
  if (pool != nullptr) {
    pool->Schedule([stream = std::move(stream_)] {});
    return;
  }
  // At exit, once the pool is gone: the stream is left as a crash leaves it,
  // as its engine is (dropped unclosed). Aborting it could schedule its
  // blob's index build on the pool that is gone.
  new std::shared_ptr<PutStream>(std::move(stream_));
}

bool PutStreamWrap::CheckStream(Napi::Env env) {
  if (stream_) return true;
  Napi::Error::New(env, "not a stream made by beginStream").ThrowAsJavaScriptException();
  return false;
}

Napi::Value PutStreamWrap::Append(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!CheckStream(env)) return env.Undefined();
  if (!info[0].IsArray()) {
    Napi::TypeError::New(env, "pieces must be an array of Buffers").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Array pieces = info[0].As<Napi::Array>();
  // Held in an array of our own: the caller's may change before the append runs.
  Napi::Array held = Napi::Array::New(env, pieces.Length());
  std::vector<IoSlice> slices;
  slices.reserve(pieces.Length());
  for (uint32_t i = 0; i < pieces.Length(); i++) {
    Napi::Value piece = pieces.Get(i);
    if (!IsBytes(piece)) {
      Napi::TypeError::New(env, "pieces[" + std::to_string(i) + "] must be a Buffer").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    Napi::Uint8Array bytes = piece.As<Napi::Uint8Array>();
    slices.push_back(IoSlice{reinterpret_cast<const char*>(bytes.Data()), bytes.ByteLength()});
    held.Set(i, piece);
  }
  return (new StreamOp(env, stream_, std::move(slices), held))->StartOn(strand_.get());
}

Napi::Value PutStreamWrap::Finish(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!CheckStream(env)) return env.Undefined();
  return (new StreamOp(env, stream_, StreamOp::kFinish))->StartOn(strand_.get());
}

Napi::Value PutStreamWrap::Abort(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!CheckStream(env)) return env.Undefined();
  return (new StreamOp(env, stream_, StreamOp::kAbort))->StartOn(strand_.get());
}

}  // namespace oyster
