// CompactionWrap is the JavaScript face of one Compaction (NativeCompaction
// in src/store/native.ts), made by engineSet.beginCompaction. Its calls
// return promises; their work runs on the addon's pool one call after the
// other (a Strand), as a Compaction takes one call at a time. Also the
// binding of EngineSet::CountGarbage, which shares the tombstone policy
// argument.

#ifndef OYSTER_ADDON_COMPACTION_WRAP_H_
#define OYSTER_ADDON_COMPACTION_WRAP_H_

#include <napi.h>

#include <memory>

#include "addon/addon_data.h"
#include "engine/compaction.h"
#include "engine/engine_set.h"
#include "addon/strand_held.h"

namespace oyster {

class CompactionWrap : public Napi::ObjectWrap<CompactionWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  // A new JavaScript object for `compaction`.
  static Napi::Object New(Napi::Env env, AddonData* data, std::unique_ptr<Compaction> compaction);

  explicit CompactionWrap(const Napi::CallbackInfo& info);

  // engineSet.beginCompaction(engine, blobId, graceSeconds, dropTombstones,
  // nowSeconds) -> Promise<NativeCompaction>: Compaction::Begin.
  static Napi::Value Begin(const Napi::CallbackInfo& info, const std::shared_ptr<const EngineSet>& set);
  // engineSet.countGarbage(graceSeconds, dropTombstones, nowSeconds) ->
  // Promise<GarbageSummary>: EngineSet::CountGarbage.
  static Napi::Value CountGarbage(const Napi::CallbackInfo& info, const std::shared_ptr<const EngineSet>& set);

 private:
  // step(budget) -> Promise<{done, stats}>: Compaction::Step.
  Napi::Value Step(const Napi::CallbackInfo& info);
  // install() -> Promise<stats>: Compaction::Install.
  Napi::Value Install(const Napi::CallbackInfo& info);
  // close() -> Promise<void>: drops the compaction once the calls under way
  // are done; uninstalled, its new files are removed. Idempotent.
  Napi::Value Close(const Napi::CallbackInfo& info);

  StrandHeld<Compaction> compaction_;  // dropped uninstalled, its files are removed
};

}  // namespace oyster

#endif  // OYSTER_ADDON_COMPACTION_WRAP_H_
