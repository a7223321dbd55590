// Per-environment state of the addon: the I/O thread pool shared by all
// engines, the completion queue and the constructors of the classes the
// addon makes objects of.
//
// Two finalizers own it: the environment's (instance data) and the
// completion queue's thread-safe function's. Node runs them in either order
// at teardown; the first one stops the pool, the last one frees the state.

#ifndef OYSTER_ADDON_ADDON_DATA_H_
#define OYSTER_ADDON_ADDON_DATA_H_

#include <napi.h>

#include <memory>

#include "addon/completion_queue.h"
#include "util/thread_pool.h"

namespace oyster {

class AddonData {
 public:
  // Creates the state and registers both finalizers; nullptr on failure.
  static AddonData* Create(Napi::Env env, int threads);

  ThreadPool* pool() { return pool_.get(); }
  // For finalizers, which may run after Teardown (at exit): empty by then.
  std::weak_ptr<ThreadPool> weak_pool() { return pool_; }
  CompletionQueue* queue() { return &queue_; }
  Napi::FunctionReference& engine_ctor() { return engine_ctor_; }
  Napi::FunctionReference& cache_ctor() { return cache_ctor_; }
  Napi::FunctionReference& put_stream_ctor() { return put_stream_ctor_; }
  Napi::FunctionReference& value_reader_ctor() { return value_reader_ctor_; }
  Napi::FunctionReference& compaction_ctor() { return compaction_ctor_; }
  Napi::FunctionReference& scrub_ctor() { return scrub_ctor_; }

 private:
  AddonData() = default;
  static void OnEnvFinalize(napi_env env, void* data, void* hint);
  static void OnQueueFinalize(napi_env env, void* data, void* hint);
  // Stops deliveries, then runs what is queued on the pool and joins it:
  // afterwards no thread pushes completions.
  void Teardown();
  void Unref();

  std::shared_ptr<ThreadPool> pool_;
  CompletionQueue queue_;
  Napi::FunctionReference engine_ctor_;
  Napi::FunctionReference cache_ctor_;
  Napi::FunctionReference put_stream_ctor_;
  Napi::FunctionReference value_reader_ctor_;
  Napi::FunctionReference compaction_ctor_;
  Napi::FunctionReference scrub_ctor_;
  bool queue_alive_ = true;
  int owners_ = 2;
};

}  // namespace oyster

#endif  // OYSTER_ADDON_ADDON_DATA_H_
