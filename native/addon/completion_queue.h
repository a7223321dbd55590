// CompletionQueue carries finished engine work from pool threads to the
// JavaScript thread. Many completions share one wake-up of the event loop,
// which is what keeps per-operation overhead low under load.

#ifndef OYSTER_ADDON_COMPLETION_QUEUE_H_
#define OYSTER_ADDON_COMPLETION_QUEUE_H_

#include <node_api.h>

#include <mutex>
#include <vector>

namespace oyster {

// Work whose result is delivered on the JavaScript thread.
class Completion {
 public:
  virtual ~Completion() = default;
  // Runs on the JavaScript thread inside its own handle scope; the queue
  // deletes the completion afterwards.
  virtual void Complete(napi_env env) = 0;
};

class CompletionQueue {
 public:
  CompletionQueue() = default;
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  // JavaScript thread. on_finalize(env, finalize_data) runs when Node
  // finalizes the underlying thread-safe function.
  bool Start(napi_env env, napi_finalize on_finalize, void* finalize_data);

  // Any thread. After Stop the completion is freed without delivery.
  void Push(Completion* c);

  // JavaScript thread: an operation whose completion will be pushed has
  // started. The event loop is kept alive while operations are outstanding.
  void Begin();

  // JavaScript thread: no more deliveries; undelivered completions are freed.
  void Stop();

  // JavaScript thread: releases the thread-safe function (not needed once Node has finalized it).
  void Release();

 private:
  static void Deliver(napi_env env, napi_value js_cb, void* context, void* data);
  void Drain(napi_env env);
  void End();

  napi_env env_ = nullptr;
  napi_threadsafe_function tsfn_ = nullptr;
  std::mutex mu_;
  std::vector<Completion*> items_;
  bool stopped_ = false;
  size_t outstanding_ = 0;  // JavaScript thread only
};

}  // namespace oyster

#endif  // OYSTER_ADDON_COMPLETION_QUEUE_H_
