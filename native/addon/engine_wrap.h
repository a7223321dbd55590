// EngineWrap is the JavaScript face of one Engine: every method returns a
// Promise; the work runs on the addon's thread pool or the engine's writer.

#ifndef OYSTER_ADDON_ENGINE_WRAP_H_
#define OYSTER_ADDON_ENGINE_WRAP_H_

#include <napi.h>

#include <memory>

#include "addon/addon_data.h"
#include "engine/engine.h"

namespace oyster {

class EngineWrap : public Napi::ObjectWrap<EngineWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  // open(dir, options) -> Promise<{ engine, recovery }>
  static Napi::Value Open(const Napi::CallbackInfo& info);
  // getNewest(engines, key) -> Promise<GetResult>: newest across engines
  static Napi::Value GetNewest(const Napi::CallbackInfo& info);
  // lookupNewest(engines, keys) -> Promise<LookupResult[]>
  static Napi::Value LookupNewest(const Napi::CallbackInfo& info);

  explicit EngineWrap(const Napi::CallbackInfo& info);
  void Attach(std::shared_ptr<Engine> engine) { engine_ = std::move(engine); }
  const std::shared_ptr<Engine>& engine() const { return engine_; }

 private:
  Napi::Value Put(const Napi::CallbackInfo& info);
  Napi::Value Delete(const Napi::CallbackInfo& info);
  Napi::Value Get(const Napi::CallbackInfo& info);
  Napi::Value Exists(const Napi::CallbackInfo& info);
  Napi::Value RecordsCount(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value Snapshot(const Napi::CallbackInfo& info);
  Napi::Value CloseActiveBlob(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);

  // Throws and returns false unless the engine is open.
  bool CheckOpen(Napi::Env env);
  // Validates the key argument; throws and returns nullptr if it is unusable.
  const char* KeyArg(const Napi::CallbackInfo& info, size_t i);
  AddonData* data(Napi::Env env) const { return env.GetInstanceData<AddonData>(); }

  std::shared_ptr<Engine> engine_;
};

}  // namespace oyster

#endif  // OYSTER_ADDON_ENGINE_WRAP_H_
