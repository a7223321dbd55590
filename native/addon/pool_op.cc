#include "addon/pool_op.h"

#include "addon/js_status.h"

namespace oyster {

PoolOp::PoolOp(Napi::Env env, AddonData* data) : deferred_(Napi::Promise::Deferred::New(env)), data_(data) {
  data_->queue()->Begin();
}

void PoolOp::ScheduleOn(Executor* executor) {
  executor->Schedule([this] {
    Run();
    data_->queue()->Push(this);
  });
}

void PoolOp::Hold(Napi::Env env, Napi::Value buffer) { napi_create_reference(env, buffer, 1, &held_); }

void PoolOp::Complete(napi_env raw) {
  Napi::Env env(raw);
  if (held_ != nullptr) napi_delete_reference(env, held_);
  if (status_.ok()) {
    deferred_.Resolve(Result(env));
  } else {
    Napi::Error e = StatusToError(env, status_);
    Decorate(env, e);
    deferred_.Reject(e.Value());
  }
}

}  // namespace oyster
