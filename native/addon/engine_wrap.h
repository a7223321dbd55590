// EngineWrap is the JavaScript face of one Engine, EngineSetWrap that of an
// EngineSet (the engines of one vdisk read as one). Methods return Promises;
// the work runs on the addon's thread pool or the engine's writer. The one
// exception, EngineSet.readNewestNow, answers reads that need no waiting on
// the calling (JavaScript) thread. Reads answer with the StoredRecord and
// KeyState shapes of src/model/version.ts (addon/js_records.h).

#ifndef OYSTER_ADDON_ENGINE_WRAP_H_
#define OYSTER_ADDON_ENGINE_WRAP_H_

#include <napi.h>

#include <memory>
#include <vector>

#include "addon/addon_data.h"
#include "engine/engine.h"
#include "engine/engine_set.h"

namespace oyster {

class EngineWrap : public Napi::ObjectWrap<EngineWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  // open(dir, options) -> Promise<{ engine, recovery }>
  static Napi::Value Open(const Napi::CallbackInfo& info);
  // put(key, timestamp, tick, node, value), delete(key, timestamp, tick, node)
  //   -> Promise<void>; the version is passed positionally, not as an object.
  // beginStream(key, timestamp, tick, node, size) -> Promise<PutStream>
  //   (addon/put_stream_wrap.h): a streamed put of size bytes.
  // get(key) -> Promise<StoredRecord | null>
  // exists(keys) -> Promise<Array<KeyState | null>>
  explicit EngineWrap(const Napi::CallbackInfo& info);
  // The engine `v` holds: null unless v is an engine object of this addon
  // that is open.
  static std::shared_ptr<Engine> EngineOf(Napi::Env env, Napi::Value v);
  // Arguments 0 and 1 of a call on one blob of an engine (beginCompaction,
  // beginScrub): an open engine and a blob id. Throws and returns false
  // when they are not.
  static bool EngineBlobArgs(const Napi::CallbackInfo& info, std::shared_ptr<Engine>* engine, uint64_t* blob_id);
  void Attach(std::shared_ptr<Engine> engine) { engine_ = std::move(engine); }
  const std::shared_ptr<Engine>& engine() const { return engine_; }

 private:
  Napi::Value Put(const Napi::CallbackInfo& info);
  Napi::Value Delete(const Napi::CallbackInfo& info);
  Napi::Value BeginStream(const Napi::CallbackInfo& info);
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

class EngineSetWrap : public Napi::ObjectWrap<EngineSetWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  // new EngineSet(engines, into: Buffer, meta: Float64Array(3)): readNewestNow
  // answers in `into` and `meta`.
  explicit EngineSetWrap(const Napi::CallbackInfo& info);

 private:
  // getNewest(key) -> Promise<StoredRecord | null>: the newest record across
  // the engines; full ties go to the earlier engine.
  Napi::Value GetNewest(const Napi::CallbackInfo& info);
  // openNewest(key, wholeUpTo) -> Promise<StoredRecord | { kind: 'found',
  // version, size, head, reader } | null>: EngineSet::Open, a value of more
  // than wholeUpTo bytes as a ValueReader (addon/value_reader_wrap.h), head
  // its first bytes (ValueReader::head).
  Napi::Value OpenNewest(const Napi::CallbackInfo& info);
  // readNewestNow(key, open?) -> number | object | undefined: getNewest
  // answered at once from memory and the page cache: -1 no record, -2 a
  // tombstone, else the value's length, the value at the start of `into`;
  // meta is [timestamp, tick, node]. A value that does not fit `into` is,
  // with `open`, opened as openNewest opens it (its header and block
  // checksums read, not its value), the object openNewest resolves with;
  // else undefined. undefined too where an answer would mean waiting (for
  // the disk, a writer, a repair, a damaged record). Throws what getNewest
  // rejects with otherwise (a closed engine, an I/O error).
  Napi::Value ReadNewestNow(const Napi::CallbackInfo& info);
  // lookupNewest(keys) -> Promise<Array<KeyState | null>>
  Napi::Value LookupNewest(const Napi::CallbackInfo& info);
  // lookupNewestNow(key) -> number | undefined: lookupNewest of one key
  // answered at once from memory and the page cache: -1 no record, -2 a
  // tombstone, 1 a value; meta is [timestamp, tick, node]. undefined where
  // that would mean waiting, as for readNewestNow.
  Napi::Value LookupNewestNow(const Napi::CallbackInfo& info);
  // digest(bits) -> Promise<{ digests: Buffer, keys: number }>: EngineSet::Digest,
  // the 2^bits digests as u64 LE each (bits 0..16).
  Napi::Value Digest(const Napi::CallbackInfo& info);
  // entries(bits, buckets: Uint32Array) -> Promise<Buffer>: EngineSet::Entries,
  // packed as Engine::Snapshot packs (every bucket below 2^bits).
  Napi::Value Entries(const Napi::CallbackInfo& info);
  // beginCompaction(engine, blobId, graceSeconds, dropTombstones,
  // nowSeconds) and countGarbage(graceSeconds, dropTombstones, nowSeconds):
  // see CompactionWrap.
  Napi::Value BeginCompaction(const Napi::CallbackInfo& info);
  Napi::Value CountGarbage(const Napi::CallbackInfo& info);
  // beginScrub(engine, blobId): see ScrubWrap.
  Napi::Value BeginScrub(const Napi::CallbackInfo& info);

  // The answer of a *Now call once `newest` is known without waiting (s OK):
  // -1 no record; else meta_ is set and it is -2 for a tombstone, `found`
  // for a value. undefined when s is WouldBlock; undefined with the error
  // thrown for any other failure.
  Napi::Value NowAnswer(Napi::Env env, const Status& s, const LookupResult& newest, double found);
  // Throws and returns false if the constructor refused its arguments.
  bool CheckConstructed(Napi::Env env);
  // Validates the key argument; throws and returns nullptr if it is unusable.
  const char* KeyArg(const Napi::CallbackInfo& info);

  std::shared_ptr<const EngineSet> set_;  // null if the constructor refused its arguments
  char* into_ = nullptr;
  size_t into_size_ = 0;
  double* meta_ = nullptr;
  Napi::ObjectReference into_ref_;
  Napi::ObjectReference meta_ref_;
  GetResult read_;  // reused: readNewestNow allocates nothing for a record
};

}  // namespace oyster

#endif  // OYSTER_ADDON_ENGINE_WRAP_H_
