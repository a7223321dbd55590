// ScrubWrap is the JavaScript face of one Scrub (NativeScrub in
// src/store/native.ts), made by engineSet.beginScrub. Its calls return
// promises; their work runs on the addon's pool one call after the other (a
// Strand), as a Scrub takes one call at a time.

#ifndef OYSTER_ADDON_SCRUB_WRAP_H_
#define OYSTER_ADDON_SCRUB_WRAP_H_

#include <napi.h>

#include <memory>

#include "addon/addon_data.h"
#include "addon/strand_held.h"
#include "engine/engine_set.h"
#include "engine/scrub.h"

namespace oyster {

class ScrubWrap : public Napi::ObjectWrap<ScrubWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  // A new JavaScript object for `scrub`.
  static Napi::Object New(Napi::Env env, AddonData* data, std::unique_ptr<Scrub> scrub);

  explicit ScrubWrap(const Napi::CallbackInfo& info);

  // engineSet.beginScrub(engine, blobId) -> Promise<NativeScrub>:
  // Scrub::Begin with the set as the vdisk.
  static Napi::Value Begin(const Napi::CallbackInfo& info, const std::shared_ptr<const EngineSet>& set);

 private:
  // step(budget) -> Promise<{done, stats, damaged}>: Scrub::Step, then
  // TakeDamaged (each damaged record is handed out once).
  Napi::Value Step(const Napi::CallbackInfo& info);
  // close() -> Promise<void>: drops the scrub once the calls under way are
  // done. Idempotent.
  Napi::Value Close(const Napi::CallbackInfo& info);

  StrandHeld<Scrub> scrub_;
};

}  // namespace oyster

#endif  // OYSTER_ADDON_SCRUB_WRAP_H_
