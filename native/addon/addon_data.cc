#include "addon/addon_data.h"

namespace oyster {

AddonData* AddonData::Create(Napi::Env env, int threads) {
  auto* d = new AddonData();
  if (!d->queue_.Start(env, &AddonData::OnQueueFinalize, d)) {
    delete d;
    return nullptr;
  }
  d->pool_ = std::make_shared<ThreadPool>(threads);
  napi_set_instance_data(env, d, &AddonData::OnEnvFinalize, nullptr);
  return d;
}

void AddonData::Teardown() {
  queue_.Stop();
  pool_.reset();
}

void AddonData::Unref() {
  if (--owners_ == 0) delete this;
}

void AddonData::OnEnvFinalize(napi_env, void* data, void*) {
  auto* d = static_cast<AddonData*>(data);
  d->engine_ctor_.Reset();
  d->cache_ctor_.Reset();
  d->put_stream_ctor_.Reset();
  d->value_reader_ctor_.Reset();
  d->Teardown();
  if (d->queue_alive_) d->queue_.Release();
  d->Unref();
}

void AddonData::OnQueueFinalize(napi_env, void* data, void*) {
  auto* d = static_cast<AddonData*>(data);
  d->queue_alive_ = false;
  d->Teardown();
  d->Unref();
}

}  // namespace oyster
