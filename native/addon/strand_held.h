// StrandHeld is how a JavaScript wrapper holds a native object that takes one
// call at a time (a Compaction, a Scrub): each call is a PoolOp run on a
// Strand of the pool, so calls run in order and never at once; closing drops
// the object on the pool once the calls under way are done, since its
// destructor may do I/O (an uninstalled compaction removes its files).

#ifndef OYSTER_ADDON_STRAND_HELD_H_
#define OYSTER_ADDON_STRAND_HELD_H_

#include <napi.h>

#include <memory>
#include <utility>

#include "addon/addon_data.h"
#include "addon/js_status.h"
#include "addon/pool_op.h"
#include "util/strand.h"
#include "util/thread_pool.h"

namespace oyster {

template <typename T>
class StrandHeld {
 public:
  StrandHeld() = default;
  StrandHeld(const StrandHeld&) = delete;
  StrandHeld& operator=(const StrandHeld&) = delete;
  // An object still held is dropped on the pool.
  ~StrandHeld() {
    std::shared_ptr<ThreadPool> pool = pool_.lock();
    if (object_ && pool) pool->Schedule([o = std::move(object_)]() mutable { o.reset(); });
  }

  // Holds `object`; its calls run on a new strand of `data`'s pool.
  void Hold(AddonData* data, std::unique_ptr<T> object) {
    object_ = std::move(object);
    strand_ = std::make_shared<Strand>(data->pool());
    pool_ = data->weak_pool();
  }

  // Creates an operation Op(env, object, args...), runs it on the strand and
  // returns its promise; a promise rejected with Closed once closed.
  template <typename Op, typename... Args>
  Napi::Value Start(Napi::Env env, const char* what, Args&&... args) {
    if (!object_) return RejectedPromise(env, Status::Closed(std::string("the ") + what + " is closed"));
    auto* op = new Op(env, object_, std::forward<Args>(args)...);
    Napi::Promise p = op->promise();
    op->ScheduleOn(strand_.get());
    return p;
  }

  // Lets go of the object once the calls under way are done; a promise of
  // undefined. Idempotent.
  Napi::Value Close(Napi::Env env) {
    if (!object_) {
      auto d = Napi::Promise::Deferred::New(env);
      d.Resolve(env.Undefined());
      return d.Promise();
    }
    auto* op = new DropOp(env, std::move(object_));
    Napi::Promise p = op->promise();
    op->ScheduleOn(strand_.get());
    return p;
  }

 private:
  class DropOp final : public PoolOp {
   public:
    DropOp(Napi::Env env, std::shared_ptr<T> object)
        : PoolOp(env, env.GetInstanceData<AddonData>()), object_(std::move(object)) {}
    void Run() override { object_.reset(); }

   private:
    std::shared_ptr<T> object_;
  };

  std::shared_ptr<T> object_;
  std::shared_ptr<Strand> strand_;
  std::weak_ptr<ThreadPool> pool_;
};

}  // namespace oyster

#endif  // OYSTER_ADDON_STRAND_HELD_H_
