#include "addon/completion_queue.h"

namespace oyster {

bool CompletionQueue::Start(napi_env env, napi_finalize on_finalize, void* finalize_data) {
  env_ = env;
  napi_value name;
  napi_create_string_utf8(env, "oyster.engine", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, nullptr, nullptr, name, 0, 1, finalize_data, on_finalize, this,
                                      &CompletionQueue::Deliver, &tsfn_) != napi_ok) {
    return false;
  }
  napi_unref_threadsafe_function(env, tsfn_);
  return true;
}

void CompletionQueue::Push(Completion* c) {
  bool wake;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopped_) {
      delete c;
      return;
    }
    // One wake-up per burst: whoever finds the queue empty asks for a call,
    // the call drains everything pushed until then.
    wake = items_.empty();
    items_.push_back(c);
  }
  if (wake) napi_call_threadsafe_function(tsfn_, nullptr, napi_tsfn_nonblocking);
}

void CompletionQueue::Begin() {
  if (outstanding_++ == 0) napi_ref_threadsafe_function(env_, tsfn_);
}

void CompletionQueue::End() {
  if (--outstanding_ == 0) napi_unref_threadsafe_function(env_, tsfn_);
}

void CompletionQueue::Stop() {
  std::vector<Completion*> items;
  {
    std::lock_guard<std::mutex> l(mu_);
    stopped_ = true;
    items.swap(items_);
  }
  for (Completion* c : items) delete c;
}

void CompletionQueue::Release() { napi_release_threadsafe_function(tsfn_, napi_tsfn_abort); }

void CompletionQueue::Deliver(napi_env env, napi_value, void* context, void*) {
  if (env == nullptr) return;  // the environment is going away
  static_cast<CompletionQueue*>(context)->Drain(env);
}

void CompletionQueue::Drain(napi_env env) {
  std::vector<Completion*> items;
  {
    std::lock_guard<std::mutex> l(mu_);
    items.swap(items_);
  }
  for (Completion* c : items) {
    napi_handle_scope scope;
    napi_open_handle_scope(env, &scope);
    c->Complete(env);
    napi_close_handle_scope(env, scope);
    delete c;
    End();
  }
}

}  // namespace oyster
