// PoolOp is one asynchronous call of the binding: its work runs on the
// engine's thread pool, and its promise is settled on the JavaScript thread
// with the Status the work left in status_ — resolved with Result(), or
// rejected with StatusToError's error (which Decorate may add to). A Buffer
// the work reads or writes in place is held alive until then (Hold).

#ifndef OYSTER_ADDON_POOL_OP_H_
#define OYSTER_ADDON_POOL_OP_H_

#include <napi.h>

#include <utility>

#include "addon/addon_data.h"
#include "addon/completion_queue.h"
#include "util/thread_pool.h"
#include "util/status.h"

namespace oyster {

class PoolOp : public Completion {
 public:
  Napi::Promise promise() const { return deferred_.Promise(); }

  // Runs Run() on the pool, then Complete() on the JavaScript thread; the
  // completion queue deletes the op after that.
  void Schedule() { ScheduleOn(data_->pool()); }
  // The same on an executor of the pool's threads (a Strand).
  void ScheduleOn(Executor* executor);

  void Complete(napi_env raw) override;

 protected:
  // Keeps the event loop alive until the op completes.
  PoolOp(Napi::Env env, AddonData* data);

  // The work, on a pool thread: sets status_ (and what Result() reads).
  virtual void Run() {}
  // JavaScript thread, when status_ is OK: the promise's value.
  virtual Napi::Value Result(Napi::Env env) { return env.Undefined(); }
  // JavaScript thread, when status_ is not OK: more on the error.
  virtual void Decorate(Napi::Env, Napi::Error&) {}

  // Keeps `buffer` from being collected until the op completes, so that the
  // pool may use its memory; at most one per op.
  void Hold(Napi::Env env, Napi::Value buffer);

  Napi::Promise::Deferred deferred_;
  AddonData* const data_;
  Status status_;

 private:
  napi_ref held_ = nullptr;
};

// Creates an operation T(env, addon data, args...) that runs on the pool,
// starts it, returns its promise.
template <typename T, typename... Args>
Napi::Value StartOp(Napi::Env env, Args&&... args) {
  auto* op = new T(env, env.GetInstanceData<AddonData>(), std::forward<Args>(args)...);
  Napi::Promise p = op->promise();
  op->Schedule();
  return p;
}

}  // namespace oyster

#endif  // OYSTER_ADDON_POOL_OP_H_
