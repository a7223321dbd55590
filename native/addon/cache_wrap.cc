#include "addon/cache_wrap.h"

#include "addon/addon_data.h"

namespace oyster {

Napi::Function CacheWrap::Define(Napi::Env env) {
  return DefineClass(env, "Cache", {InstanceMethod<&CacheWrap::Stats>("stats")});
}

CacheWrap::CacheWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<CacheWrap>(info) {
  Napi::Env env = info.Env();
  const double capacity = info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
  if (!(capacity >= 0 && capacity <= 9007199254740991.0) || capacity != static_cast<double>(static_cast<uint64_t>(capacity))) {
    Napi::TypeError::New(env, "new Cache(capacity): capacity must be a whole number of bytes >= 0")
        .ThrowAsJavaScriptException();
    return;
  }
  cache_ = std::make_shared<Cache>(static_cast<size_t>(capacity));
}

std::shared_ptr<Cache> CacheWrap::FromOption(Napi::Value v, bool* ok) {
  *ok = true;
  if (v.IsUndefined()) return nullptr;
  Napi::Env env = v.Env();
  AddonData* data = env.GetInstanceData<AddonData>();
  if (!v.IsObject() || !v.As<Napi::Object>().InstanceOf(data->cache_ctor().Value())) {
    Napi::TypeError::New(env, "option cache must be a Cache").ThrowAsJavaScriptException();
    *ok = false;
    return nullptr;
  }
  return Unwrap(v.As<Napi::Object>())->cache_;
}

Napi::Value CacheWrap::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Cache::Stats s = cache_->GetStats();
  Napi::Object o = Napi::Object::New(env);
  o.Set("capacity", Napi::Number::New(env, static_cast<double>(s.capacity)));
  o.Set("usage", Napi::Number::New(env, static_cast<double>(s.usage)));
  o.Set("entries", Napi::Number::New(env, static_cast<double>(s.entries)));
  o.Set("hits", Napi::Number::New(env, static_cast<double>(s.hits)));
  o.Set("misses", Napi::Number::New(env, static_cast<double>(s.misses)));
  return o;
}

}  // namespace oyster
