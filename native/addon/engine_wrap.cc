#include "addon/engine_wrap.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "addon/cache_wrap.h"
#include "addon/compaction_wrap.h"
#include "addon/scrub_wrap.h"
#include "addon/js_args.h"
#include "addon/js_records.h"
#include "addon/js_status.h"
#include "addon/pool_op.h"
#include "addon/put_stream_wrap.h"
#include "addon/value_reader_wrap.h"
#include "engine/digest.h"
#include "engine/format.h"
#include "engine/version.h"
#include "util/coding.h"

namespace oyster {
namespace {

// Values up to this size are copied when handed over; larger ones are shared
// with JavaScript without a copy.
constexpr size_t kCopyThreshold = 64 << 10;

// Whether a read got as far as the newest record, whose version a
// corruption error then names.
bool Known(const Version& v) { return v.timestamp != 0 || v.stamp != 0; }

// A copy of one key, kept inside the operation (no allocation for the usual sizes).
class KeyCopy {
 public:
  KeyCopy(const char* key, size_t n) : heap_(n > sizeof(inline_) ? new char[n] : nullptr) {
    std::memcpy(data(), key, n);
  }
  char* data() { return heap_ ? heap_.get() : inline_; }

 private:
  char inline_[32];
  std::unique_ptr<char[]> heap_;
};

// A request queued to the engine's writer, answered on the JS thread.
class EngineWriteOp : public PoolOp, public WriteRequest {
 public:
  EngineWriteOp(Napi::Env env, AddonData* data, std::shared_ptr<Engine> engine, const char* key_bytes,
                const Version& v)
      : PoolOp(env, data), engine_(std::move(engine)), key_(key_bytes, engine_->options().key_size) {
    key = key_.data();
    version = v;
  }

  void Submit() { engine_->Write(this); }

  void Done(const Status& s) override {
    status_ = s;
    data_->queue()->Push(this);
  }

 private:
  std::shared_ptr<Engine> engine_;
  KeyCopy key_;
};

// A put or a delete.
class WriteOp final : public EngineWriteOp {
 public:
  WriteOp(Napi::Env env, AddonData* data, std::shared_ptr<Engine> engine, const char* key_bytes,
          const Version& v, bool is_tombstone)
      : EngineWriteOp(env, data, std::move(engine), key_bytes, v) {
    tombstone = is_tombstone;
  }

  void SetValue(Napi::Env env, Napi::Uint8Array v) {
    value_size = v.ByteLength();
    if (value_size <= kCopyThreshold) {
      copy_.assign(reinterpret_cast<const char*>(v.Data()), value_size);
      value = copy_.data();
    } else {
      Hold(env, v);
      value = reinterpret_cast<const char*>(v.Data());
    }
  }

 private:
  std::string copy_;
};

// Starts a streamed put: the engine's writer reserves the record's space.
class BeginStreamOp final : public EngineWriteOp {
 public:
  BeginStreamOp(Napi::Env env, AddonData* data, std::shared_ptr<Engine> engine, const char* key_bytes,
                const Version& v, uint64_t size)
      : EngineWriteOp(env, data, std::move(engine), key_bytes, v) {
    value_size = size;
    streamed = true;
  }

  Napi::Value Result(Napi::Env env) override { return PutStreamWrap::New(env, data_, std::move(stream)); }
};

Napi::Value MakeBuffer(Napi::Env env, RecordBuffer* rec) {
  const char* p = rec->storage.get() + rec->value_offset;
  if (rec->value_size <= kCopyThreshold) return Napi::Buffer<char>::Copy(env, p, rec->value_size);
  char* base = rec->storage.release();
  rec->capacity = 0;
  return Napi::Buffer<char>::New(env, base + rec->value_offset, rec->value_size,
                                 [](Napi::Env, char*, char* hint) { delete[] hint; }, base);
}

Napi::Value GetResultToJs(Napi::Env env, GetResult* r) {
  return RecordToJs(env, r->kind, r->version, r->kind == GetResult::kFound ? MakeBuffer(env, &r->record) : Napi::Value());
}

Napi::Value LookupsToJs(Napi::Env env, const std::vector<LookupResult>& results) {
  Napi::Array a = Napi::Array::New(env, results.size());
  for (uint32_t i = 0; i < results.size(); i++) a.Set(i, RecordToJs(env, results[i].kind, results[i].version));
  return a;
}

// Names the damaged record's version on a corruption error.
void DecorateCorruption(Napi::Env env, const Status& s, const Version& v, Napi::Error& e) {
  if (s.IsCorruption() && Known(v)) e.Set("version", VersionToJs(env, v));
}

class GetOp final : public PoolOp {
 public:
  GetOp(Napi::Env env, AddonData* data, std::shared_ptr<Engine> engine, const char* k)
      : PoolOp(env, data), engine_(std::move(engine)), key_(k, engine_->options().key_size) {}

  void Run() override { status_ = engine_->Get(key_.data(), &result_); }

  Napi::Value Result(Napi::Env env) override { return GetResultToJs(env, &result_); }

  void Decorate(Napi::Env env, Napi::Error& e) override { DecorateCorruption(env, status_, result_.version, e); }

 private:
  std::shared_ptr<Engine> engine_;
  KeyCopy key_;
  GetResult result_;
};

// Newest record of a key across the engines of a set in one trip to the
// pool; only the winner's value is read.
class GetNewestOp final : public PoolOp {
 public:
  GetNewestOp(Napi::Env env, AddonData* data, std::shared_ptr<const EngineSet> set, const char* k)
      : PoolOp(env, data), set_(std::move(set)), key_(k, set_->key_size()) {}

  void Run() override { status_ = set_->Get(ReadOptions(), key_.data(), &result_); }

  Napi::Value Result(Napi::Env env) override { return GetResultToJs(env, &result_); }

  void Decorate(Napi::Env env, Napi::Error& e) override { DecorateCorruption(env, status_, result_.version, e); }

 private:
  std::shared_ptr<const EngineSet> set_;
  KeyCopy key_;
  GetResult result_;
};

// {kind: 'found', version, size, head, reader} for a value opened to be read in parts.
Napi::Value OpenedToJs(Napi::Env env, AddonData* data, std::unique_ptr<ValueReader> reader) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("kind", Napi::String::New(env, "found"));
  o.Set("version", VersionToJs(env, reader->version()));
  o.Set("size", Napi::Number::New(env, static_cast<double>(reader->size())));
  const std::string& head = reader->head();
  o.Set("head", Napi::Buffer<char>::Copy(env, head.data(), head.size()));
  o.Set("reader", ValueReaderWrap::New(env, data, std::move(reader)));
  return o;
}

// Newest record of a key across the engines of a set, a large value as a
// reader rather than read.
class OpenNewestOp final : public PoolOp {
 public:
  OpenNewestOp(Napi::Env env, AddonData* data, std::shared_ptr<const EngineSet> set, const char* k,
               uint64_t whole_up_to)
      : PoolOp(env, data), set_(std::move(set)), key_(k, set_->key_size()), whole_up_to_(whole_up_to) {}

  void Run() override { status_ = set_->Open(ReadOptions(), key_.data(), whole_up_to_, &result_); }

  Napi::Value Result(Napi::Env env) override {
    if (!result_.reader) {
      const bool found = result_.kind == GetResult::kFound;
      return RecordToJs(env, result_.kind, result_.version, found ? MakeBuffer(env, &result_.record) : Napi::Value());
    }
    return OpenedToJs(env, data_, std::move(result_.reader));
  }

  void Decorate(Napi::Env env, Napi::Error& e) override { DecorateCorruption(env, status_, result_.version, e); }

 private:
  std::shared_ptr<const EngineSet> set_;
  KeyCopy key_;
  const uint64_t whole_up_to_;
  OpenResult result_;
};

// Newest version (without value) of each key across the engines of a set.
class LookupNewestOp final : public PoolOp {
 public:
  LookupNewestOp(Napi::Env env, AddonData* data, std::shared_ptr<const EngineSet> set, std::string keys)
      : PoolOp(env, data), set_(std::move(set)), keys_(std::move(keys)) {}

  void Run() override {
    const size_t k = set_->key_size();
    results_.resize(keys_.size() / k);
    for (size_t i = 0; i < results_.size() && status_.ok(); i++) {
      status_ = set_->Lookup(ReadOptions(), keys_.data() + i * k, &results_[i]);
    }
  }

  Napi::Value Result(Napi::Env env) override { return LookupsToJs(env, results_); }

 private:
  std::shared_ptr<const EngineSet> set_;
  std::string keys_;
  std::vector<LookupResult> results_;
};

// Digests of the newest records of a set's keys, per bucket.
class DigestOp final : public PoolOp {
 public:
  DigestOp(Napi::Env env, AddonData* data, std::shared_ptr<const EngineSet> set, uint32_t bits)
      : PoolOp(env, data), set_(std::move(set)), bits_(bits) {}

  void Run() override {
    std::vector<uint64_t> digests;
    status_ = set_->Digest(bits_, &digests, &keys_);
    if (!status_.ok()) return;
    packed_.resize(digests.size() * 8);
    for (size_t i = 0; i < digests.size(); i++) EncodeFixed64(&packed_[i * 8], digests[i]);
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Object o = Napi::Object::New(env);
    o.Set("digests", Napi::Buffer<char>::Copy(env, packed_.data(), packed_.size()));
    o.Set("keys", Napi::Number::New(env, static_cast<double>(keys_)));
    return o;
  }

 private:
  std::shared_ptr<const EngineSet> set_;
  const uint32_t bits_;
  std::string packed_;  // u64 LE each
  uint64_t keys_ = 0;
};

// The newest records of the keys of some buckets, packed as Snapshot packs them.
class EntriesOp final : public PoolOp {
 public:
  EntriesOp(Napi::Env env, AddonData* data, std::shared_ptr<const EngineSet> set, uint32_t bits,
            std::vector<uint32_t> buckets)
      : PoolOp(env, data), set_(std::move(set)), bits_(bits), buckets_(std::move(buckets)) {}

  void Run() override { status_ = set_->Entries(bits_, buckets_, &packed_); }
  Napi::Value Result(Napi::Env env) override { return Napi::Buffer<char>::Copy(env, packed_.data(), packed_.size()); }

 private:
  std::shared_ptr<const EngineSet> set_;
  const uint32_t bits_;
  const std::vector<uint32_t> buckets_;
  std::string packed_;
};

class ExistsOp final : public PoolOp {
 public:
  ExistsOp(Napi::Env env, AddonData* data, std::shared_ptr<Engine> engine, std::string keys)
      : PoolOp(env, data), engine_(std::move(engine)), keys_(std::move(keys)) {}

  void Run() override {
    const size_t k = engine_->options().key_size;
    results_.resize(keys_.size() / k);
    for (size_t i = 0; i < results_.size() && status_.ok(); i++) {
      status_ = engine_->Lookup(keys_.data() + i * k, &results_[i]);
    }
  }

  Napi::Value Result(Napi::Env env) override { return LookupsToJs(env, results_); }

 private:
  std::shared_ptr<Engine> engine_;
  std::string keys_;
  std::vector<LookupResult> results_;
};

class SnapshotOp final : public PoolOp {
 public:
  SnapshotOp(Napi::Env env, AddonData* data, std::shared_ptr<Engine> engine) : PoolOp(env, data), engine_(std::move(engine)) {}
  void Run() override { status_ = engine_->Snapshot(&packed_); }
  Napi::Value Result(Napi::Env env) override { return Napi::Buffer<char>::Copy(env, packed_.data(), packed_.size()); }

 private:
  std::shared_ptr<Engine> engine_;
  std::string packed_;
};

class ControlOp final : public PoolOp {
 public:
  enum Kind { kCloseActiveBlob, kClose };
  ControlOp(Napi::Env env, AddonData* data, std::shared_ptr<Engine> engine, Kind kind)
      : PoolOp(env, data), engine_(std::move(engine)), kind_(kind) {}

  void Run() override {
    status_ = kind_ == kClose ? engine_->Close() : engine_->CloseActiveBlob();
  }

 private:
  std::shared_ptr<Engine> engine_;
  Kind kind_;
};

Napi::Object RecoveryToObject(Napi::Env env, const RecoveryReport& r) {
  Napi::Object o = Napi::Object::New(env);
  SetU64(o, "blobs", r.blobs);
  SetU64(o, "indexesLoaded", r.indexes_loaded);
  SetU64(o, "blobsScanned", r.blobs_scanned);
  SetU64(o, "indexesRebuilt", r.indexes_rebuilt);
  SetU64(o, "bytesTruncated", r.bytes_truncated);
  SetU64(o, "corruptRecords", r.corrupt_records);
  SetU64(o, "skippedBytes", r.skipped_bytes);
  SetU64(o, "blobsQuarantined", r.blobs_quarantined);
  SetU64(o, "filesRemoved", r.files_removed);
  Napi::Array events = Napi::Array::New(env, r.events.size());
  for (uint32_t i = 0; i < r.events.size(); i++) events.Set(i, Napi::String::New(env, r.events[i]));
  o.Set("events", events);
  return o;
}

class OpenOp final : public PoolOp {
 public:
  OpenOp(Napi::Env env, AddonData* data, EngineOptions options, std::string dir)
      : PoolOp(env, data), options_(std::move(options)), dir_(std::move(dir)) {}

  void Run() override { status_ = Engine::Open(options_, dir_, &engine_, &report_); }

  Napi::Value Result(Napi::Env env) override {
    Napi::Object wrap = data_->engine_ctor().New({});
    Napi::ObjectWrap<EngineWrap>::Unwrap(wrap)->Attach(std::move(engine_));
    Napi::Object o = Napi::Object::New(env);
    o.Set("engine", wrap);
    o.Set("recovery", RecoveryToObject(env, report_));
    return o;
  }

 private:
  EngineOptions options_;
  std::string dir_;
  std::shared_ptr<Engine> engine_;
  RecoveryReport report_;
};

// Reads an optional non-negative integer option; false (with an exception
// pending) if it is present but unusable.
bool IntegerOption(Napi::Object opts, const char* name, double max, uint64_t* out) {
  Napi::Env env = opts.Env();
  Napi::Value v = opts.Get(name);
  if (v.IsUndefined()) return true;
  if (!v.IsNumber()) {
    Napi::TypeError::New(env, std::string("option ") + name + " must be a number").ThrowAsJavaScriptException();
    return false;
  }
  double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0) || d > max || std::floor(d) != d) {
    Napi::RangeError::New(env, std::string("option ") + name + " must be an integer in 0.." +
                                   std::to_string(static_cast<uint64_t>(max)))
        .ThrowAsJavaScriptException();
    return false;
  }
  *out = static_cast<uint64_t>(d);
  return true;
}

// The version passed as arguments i, i+1, i+2 (timestamp, tick, node).
bool VersionArgs(const Napi::CallbackInfo& info, size_t i, Version* v) {
  uint64_t timestamp, tick, node;
  if (!IntegerArg(info, i, "timestamp", kMaxSafeInteger, "0..2^53-1", &timestamp) ||
      !IntegerArg(info, i + 1, "tick", static_cast<double>(kMaxTick), "0..2^52-1", &tick) ||
      !IntegerArg(info, i + 2, "node", static_cast<double>(kMaxNodeId), "0..4095", &node)) {
    return false;
  }
  *v = Version::Of(timestamp, tick, static_cast<uint32_t>(node));
  return true;
}

// Concatenates an array of k-byte keys; throws and returns false if it is not one.
bool KeyListArg(Napi::Value v, size_t k, std::string* keys) {
  Napi::Env env = v.Env();
  if (!v.IsArray()) {
    Napi::TypeError::New(env, "keys must be an array of Buffers").ThrowAsJavaScriptException();
    return false;
  }
  Napi::Array arr = v.As<Napi::Array>();
  keys->reserve(arr.Length() * k);
  for (uint32_t i = 0; i < arr.Length(); i++) {
    Napi::Value e = arr.Get(i);
    if (!IsBytes(e) || e.As<Napi::Uint8Array>().ByteLength() != k) {
      Napi::TypeError::New(env, "keys[" + std::to_string(i) + "] must be a Buffer of " + std::to_string(k) + " bytes")
          .ThrowAsJavaScriptException();
      return false;
    }
    keys->append(reinterpret_cast<const char*>(e.As<Napi::Uint8Array>().Data()), k);
  }
  return true;
}

}  // namespace

Napi::Function EngineWrap::Define(Napi::Env env) {
  return DefineClass(env, "Engine",
                     {
                         InstanceMethod<&EngineWrap::Put>("put"),
                         InstanceMethod<&EngineWrap::Delete>("delete"),
                         InstanceMethod<&EngineWrap::BeginStream>("beginStream"),
                         InstanceMethod<&EngineWrap::Get>("get"),
                         InstanceMethod<&EngineWrap::Exists>("exists"),
                         InstanceMethod<&EngineWrap::RecordsCount>("recordsCount"),
                         InstanceMethod<&EngineWrap::Stats>("stats"),
                         InstanceMethod<&EngineWrap::Snapshot>("snapshot"),
                         InstanceMethod<&EngineWrap::CloseActiveBlob>("closeActiveBlob"),
                         InstanceMethod<&EngineWrap::Close>("close"),
                     });
}

EngineWrap::EngineWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<EngineWrap>(info) {}

Napi::Value EngineWrap::Open(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) {
    Napi::TypeError::New(env, "dir must be a string").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  if (!info[1].IsObject()) {
    Napi::TypeError::New(env, "options must be an object").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Object o = info[1].As<Napi::Object>();
  EngineOptions opts;
  uint64_t v;
  v = opts.key_size;
  if (!IntegerOption(o, "keySize", 1024, &v)) return env.Undefined();
  opts.key_size = static_cast<uint32_t>(v);
  if (!IntegerOption(o, "maxBlobSize", kMaxSafeInteger, &opts.max_blob_size)) return env.Undefined();
  if (!IntegerOption(o, "maxDataInBlob", kMaxSafeInteger, &opts.max_data_in_blob)) return env.Undefined();
  if (!IntegerOption(o, "maxDirtyBytesBeforeSync", kMaxSafeInteger, &opts.max_dirty_bytes_before_sync)) {
    return env.Undefined();
  }
  v = opts.bloom_bits_per_key;
  if (!IntegerOption(o, "bloomBitsPerKey", 64, &v)) return env.Undefined();
  opts.bloom_bits_per_key = static_cast<uint32_t>(v);
  Napi::Value sync = o.Get("syncWrites");
  if (!sync.IsUndefined()) {
    if (!sync.IsBoolean()) {
      Napi::TypeError::New(env, "option syncWrites must be a boolean").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    opts.sync_writes = sync.As<Napi::Boolean>().Value();
  }
  Napi::Value prefix = o.Get("blobFilePrefix");
  if (!prefix.IsUndefined()) {
    if (!prefix.IsString()) {
      Napi::TypeError::New(env, "option blobFilePrefix must be a string").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    opts.blob_file_prefix = prefix.As<Napi::String>().Utf8Value();
  }
  bool ok = false;
  opts.cache = CacheWrap::FromOption(o.Get("cache"), &ok);
  if (!ok) return env.Undefined();
  opts.executor = env.GetInstanceData<AddonData>()->pool();
  Status s = opts.Validate();
  if (!s.ok()) {
    Napi::RangeError::New(env, s.message()).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  return StartOp<OpenOp>(env, std::move(opts), info[0].As<Napi::String>().Utf8Value());
}

// The engines of an array of open EngineWrap objects with one key size;
// throws and returns false otherwise.
static bool EnginesArg(Napi::Value v, std::vector<std::shared_ptr<Engine>>* engines) {
  Napi::Env env = v.Env();
  if (!v.IsArray() || v.As<Napi::Array>().Length() == 0) {
    Napi::TypeError::New(env, "engines must be a non-empty array of engines").ThrowAsJavaScriptException();
    return false;
  }
  Napi::Array arr = v.As<Napi::Array>();
  for (uint32_t i = 0; i < arr.Length(); i++) {
    Napi::Value e = arr.Get(i);
    std::shared_ptr<Engine> engine = EngineWrap::EngineOf(env, e);
    if (!engine) {
      Napi::TypeError::New(env, "engines[" + std::to_string(i) + "] is not an open engine").ThrowAsJavaScriptException();
      return false;
    }
    if (!engines->empty() && engine->options().key_size != (*engines)[0]->options().key_size) {
      Napi::RangeError::New(env, "engines must share one key size").ThrowAsJavaScriptException();
      return false;
    }
    engines->push_back(std::move(engine));
  }
  return true;
}

// The data and length of a typed array of `type` in one call; false if the
// value is something else.
static bool TypedArrayArg(napi_env env, napi_value v, napi_typedarray_type type, void** data, size_t* length) {
  napi_typedarray_type actual;
  return napi_get_typedarray_info(env, v, &actual, length, data, nullptr, nullptr) == napi_ok && actual == type;
}

Napi::Function EngineSetWrap::Define(Napi::Env env) {
  return DefineClass(env, "EngineSet",
                     {
                         InstanceMethod<&EngineSetWrap::GetNewest>("getNewest"),
                         InstanceMethod<&EngineSetWrap::OpenNewest>("openNewest"),
                         InstanceMethod<&EngineSetWrap::ReadNewestNow>("readNewestNow"),
                         InstanceMethod<&EngineSetWrap::LookupNewest>("lookupNewest"),
                         InstanceMethod<&EngineSetWrap::LookupNewestNow>("lookupNewestNow"),
                         InstanceMethod<&EngineSetWrap::Digest>("digest"),
                         InstanceMethod<&EngineSetWrap::Entries>("entries"),
                         InstanceMethod<&EngineSetWrap::BeginCompaction>("beginCompaction"),
                         InstanceMethod<&EngineSetWrap::BeginScrub>("beginScrub"),
                         InstanceMethod<&EngineSetWrap::CountGarbage>("countGarbage"),
                     });
}

EngineSetWrap::EngineSetWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<EngineSetWrap>(info) {
  Napi::Env env = info.Env();
  std::vector<std::shared_ptr<Engine>> engines;
  if (!EnginesArg(info[0], &engines)) return;
  void* into = nullptr;
  void* meta = nullptr;
  size_t meta_length = 0;
  if (!TypedArrayArg(env, info[1], napi_uint8_array, &into, &into_size_) ||
      !TypedArrayArg(env, info[2], napi_float64_array, &meta, &meta_length) || meta_length < 3) {
    Napi::TypeError::New(env, "new EngineSet(engines, into: Buffer, meta: Float64Array(3))").ThrowAsJavaScriptException();
    return;
  }
  set_ = std::make_shared<const EngineSet>(std::move(engines));
  into_ = static_cast<char*>(into);
  meta_ = static_cast<double*>(meta);
  // Their memory stays where it is (ArrayBuffer backing stores do not move)
  // as long as they are referenced.
  into_ref_ = Napi::Persistent(info[1].As<Napi::Object>());
  meta_ref_ = Napi::Persistent(info[2].As<Napi::Object>());
}

bool EngineSetWrap::CheckConstructed(Napi::Env env) {
  if (set_) return true;
  Napi::Error::New(env, "the engine set was not constructed").ThrowAsJavaScriptException();
  return false;
}

const char* EngineSetWrap::KeyArg(const Napi::CallbackInfo& info) {
  if (!CheckConstructed(info.Env())) return nullptr;
  void* key = nullptr;
  size_t n = 0;
  const size_t k = set_->key_size();
  if (!TypedArrayArg(info.Env(), info[0], napi_uint8_array, &key, &n) || n != k) {
    Napi::TypeError::New(info.Env(), "key must be a Buffer of " + std::to_string(k) + " bytes").ThrowAsJavaScriptException();
    return nullptr;
  }
  return static_cast<const char*>(key);
}

Napi::Value EngineSetWrap::GetNewest(const Napi::CallbackInfo& info) {
  const char* key = KeyArg(info);
  if (key == nullptr) return info.Env().Undefined();
  return StartOp<GetNewestOp>(info.Env(), set_, key);
}

Napi::Value EngineSetWrap::OpenNewest(const Napi::CallbackInfo& info) {
  const char* key = KeyArg(info);
  uint64_t whole_up_to;
  if (key == nullptr || !IntegerArg(info, 1, "wholeUpTo", kMaxSafeInteger, "0..2^53-1", &whole_up_to)) {
    return info.Env().Undefined();
  }
  return StartOp<OpenNewestOp>(info.Env(), set_, key, whole_up_to);
}

Napi::Value EngineSetWrap::ReadNewestNow(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* key = KeyArg(info);
  if (key == nullptr) return env.Undefined();
  ReadOptions no_wait;
  no_wait.no_wait = true;
  LookupResult newest;
  EngineSet::Location where;
  Status s = set_->Locate(no_wait, key, &newest, &where);
  if (s.ok() && newest.kind == GetResult::kFound) {
    // A large value is no job for the event loop, even from the page cache;
    // opening it (its header and block checksums) is.
    if (newest.value_size > into_size_) {
      std::unique_ptr<ValueReader> reader;
      if (!info[1].ToBoolean() || !where.engine->OpenValue(no_wait, key, where.record, &reader).ok()) {
        return env.Undefined();
      }
      return OpenedToJs(env, env.GetInstanceData<AddonData>(), std::move(reader));
    }
    s = set_->Read(no_wait, key, where, &read_);
  }
  // Damage is never among the failures: a no-wait read leaves it to getNewest.
  if (s.ok() && newest.kind == GetResult::kFound) std::memcpy(into_, read_.record.value(), read_.record.value_size);
  return NowAnswer(env, s, newest, static_cast<double>(read_.record.value_size));
}

Napi::Value EngineSetWrap::NowAnswer(Napi::Env env, const Status& s, const LookupResult& newest, double found) {
  if (s.IsWouldBlock()) return env.Undefined();
  if (!s.ok()) {
    StatusToError(env, s).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  if (newest.kind == GetResult::kAbsent) return Napi::Number::New(env, -1);
  meta_[0] = static_cast<double>(newest.version.timestamp);
  meta_[1] = static_cast<double>(newest.version.tick());
  meta_[2] = newest.version.node();
  return Napi::Number::New(env, newest.kind == GetResult::kDeleted ? -2 : found);
}

Napi::Value EngineSetWrap::LookupNewestNow(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* key = KeyArg(info);
  if (key == nullptr) return env.Undefined();
  ReadOptions no_wait;
  no_wait.no_wait = true;
  LookupResult newest;
  Status s = set_->Lookup(no_wait, key, &newest);
  return NowAnswer(env, s, newest, 1);
}

Napi::Value EngineSetWrap::LookupNewest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string keys;
  if (!CheckConstructed(env) || !KeyListArg(info[0], set_->key_size(), &keys)) return env.Undefined();
  return StartOp<LookupNewestOp>(env, set_, std::move(keys));
}

Napi::Value EngineSetWrap::Digest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t bits;
  if (!CheckConstructed(env) || !IntegerArg(info, 0, "bits", kMaxDigestBits, "0..16", &bits)) return env.Undefined();
  return StartOp<DigestOp>(env, set_, static_cast<uint32_t>(bits));
}

Napi::Value EngineSetWrap::Entries(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t bits;
  if (!CheckConstructed(env) || !IntegerArg(info, 0, "bits", kMaxDigestBits, "0..16", &bits)) return env.Undefined();
  void* data = nullptr;
  size_t n = 0;
  if (!TypedArrayArg(env, info[1], napi_uint32_array, &data, &n)) {
    Napi::TypeError::New(env, "buckets must be a Uint32Array").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const uint32_t* first = static_cast<const uint32_t*>(data);
  std::vector<uint32_t> buckets(first, first + n);
  for (size_t i = 0; i < n; i++) {
    if (buckets[i] >> bits != 0) {
      Napi::RangeError::New(env, "buckets[" + std::to_string(i) + "] must be below 2^" + std::to_string(bits))
          .ThrowAsJavaScriptException();
      return env.Undefined();
    }
  }
  return StartOp<EntriesOp>(env, set_, static_cast<uint32_t>(bits), std::move(buckets));
}

Napi::Value EngineSetWrap::BeginCompaction(const Napi::CallbackInfo& info) {
  if (!CheckConstructed(info.Env())) return info.Env().Undefined();
  return CompactionWrap::Begin(info, set_);
}

Napi::Value EngineSetWrap::BeginScrub(const Napi::CallbackInfo& info) {
  if (!CheckConstructed(info.Env())) return info.Env().Undefined();
  return ScrubWrap::Begin(info, set_);
}

Napi::Value EngineSetWrap::CountGarbage(const Napi::CallbackInfo& info) {
  if (!CheckConstructed(info.Env())) return info.Env().Undefined();
  return CompactionWrap::CountGarbage(info, set_);
}

std::shared_ptr<Engine> EngineWrap::EngineOf(Napi::Env env, Napi::Value v) {
  AddonData* data = env.GetInstanceData<AddonData>();
  if (!v.IsObject() || !v.As<Napi::Object>().InstanceOf(data->engine_ctor().Value())) return nullptr;
  return Napi::ObjectWrap<EngineWrap>::Unwrap(v.As<Napi::Object>())->engine();
}

bool EngineWrap::EngineBlobArgs(const Napi::CallbackInfo& info, std::shared_ptr<Engine>* engine, uint64_t* blob_id) {
  *engine = EngineOf(info.Env(), info[0]);
  if (!*engine) {
    Napi::TypeError::New(info.Env(), "engine must be an open engine").ThrowAsJavaScriptException();
    return false;
  }
  return IntegerArg(info, 1, "blobId", kMaxSafeInteger, "0..2^53-1", blob_id);
}

const char* EngineWrap::KeyArg(const Napi::CallbackInfo& info, size_t i) {
  Napi::Env env = info.Env();
  if (!CheckOpen(env)) return nullptr;
  if (!IsBytes(info[i])) {
    Napi::TypeError::New(env, "key must be a Buffer").ThrowAsJavaScriptException();
    return nullptr;
  }
  Napi::Uint8Array k = info[i].As<Napi::Uint8Array>();
  if (k.ByteLength() != engine_->options().key_size) {
    Napi::RangeError::New(env, "key must be exactly " + std::to_string(engine_->options().key_size) + " bytes")
        .ThrowAsJavaScriptException();
    return nullptr;
  }
  return reinterpret_cast<const char*>(k.Data());
}

Napi::Value EngineWrap::Put(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* key = KeyArg(info, 0);
  Version v;
  if (key == nullptr || !VersionArgs(info, 1, &v)) return env.Undefined();
  if (!IsBytes(info[4])) {
    Napi::TypeError::New(env, "value must be a Buffer").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  if (info[4].As<Napi::Uint8Array>().ByteLength() > kMaxValueSize) {
    Napi::RangeError::New(env, "value must be smaller than 4 GiB").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  auto* op = new WriteOp(env, data(env), engine_, key, v, false);
  op->SetValue(env, info[4].As<Napi::Uint8Array>());
  Napi::Promise p = op->promise();
  op->Submit();
  return p;
}

Napi::Value EngineWrap::Delete(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* key = KeyArg(info, 0);
  Version v;
  if (key == nullptr || !VersionArgs(info, 1, &v)) return env.Undefined();
  auto* op = new WriteOp(env, data(env), engine_, key, v, true);
  Napi::Promise p = op->promise();
  op->Submit();
  return p;
}

Napi::Value EngineWrap::BeginStream(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* key = KeyArg(info, 0);
  Version v;
  uint64_t size;
  if (key == nullptr || !VersionArgs(info, 1, &v) ||
      !IntegerArg(info, 4, "size", kMaxSafeInteger, "0..2^53-1", &size)) {
    return env.Undefined();
  }
  auto* op = new BeginStreamOp(env, data(env), engine_, key, v, size);
  Napi::Promise p = op->promise();
  op->Submit();
  return p;
}

Napi::Value EngineWrap::Get(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* key = KeyArg(info, 0);
  if (key == nullptr) return env.Undefined();
  return StartOp<GetOp>(env, engine_, key);
}

Napi::Value EngineWrap::Exists(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string keys;
  if (!CheckOpen(env) || !KeyListArg(info[0], engine_->options().key_size, &keys)) return env.Undefined();
  return StartOp<ExistsOp>(env, engine_, std::move(keys));
}

// Counters live in memory: answered at once, as a resolved promise to keep
// the interface uniform.
Napi::Value EngineWrap::RecordsCount(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto d = Napi::Promise::Deferred::New(env);
  if (!engine_) {
    d.Reject(Napi::Error::New(env, "engine is not open").Value());
  } else {
    d.Resolve(Napi::Number::New(env, static_cast<double>(engine_->RecordsCount())));
  }
  return d.Promise();
}

Napi::Value EngineWrap::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto d = Napi::Promise::Deferred::New(env);
  if (!engine_) {
    d.Reject(Napi::Error::New(env, "engine is not open").Value());
    return d.Promise();
  }
  EngineStats st = engine_->Stats();
  Napi::Object o = Napi::Object::New(env);
  SetU64(o, "blobs", st.blobs);
  SetU64(o, "records", st.records);
  o.Set("activeBlobId", st.has_active_blob ? Napi::Number::New(env, static_cast<double>(st.active_blob_id))
                                           : env.Null());
  SetU64(o, "diskBytes", st.disk_bytes);
  SetU64(o, "indexMemory", st.index_memory);
  SetU64(o, "filterMemory", st.filter_memory);
  SetU64(o, "blobsInMemory", st.blobs_in_memory);
  SetU64(o, "corruptReads", st.corrupt_reads);
  SetU64(o, "indexRepairs", st.index_repairs);
  SetU64(o, "maxTimestamp", st.max_version.timestamp);
  SetU64(o, "maxTick", st.max_tick);
  o.Set("backgroundError", st.background_error.empty() ? env.Null() : Napi::String::New(env, st.background_error));
  o.Set("writeError", st.write_error.empty() ? env.Null() : Napi::String::New(env, st.write_error));
  SetU64(o, "garbageRecords", st.garbage_records);
  SetU64(o, "garbageBytes", st.garbage_bytes);
  SetU64(o, "deadTombstones", st.dead_tombstones);
  SetU64(o, "deadTombstoneBytes", st.dead_tombstone_bytes);
  SetU64(o, "liveTombstones", st.live_tombstones);
  SetU64(o, "liveKeys", st.live_keys);
  Napi::Array blobs = Napi::Array::New(env, st.blob_stats.size());
  for (uint32_t i = 0; i < st.blob_stats.size(); i++) {
    const BlobStats& b = st.blob_stats[i];
    Napi::Object bo = Napi::Object::New(env);
    SetU64(bo, "id", b.id);
    SetU64(bo, "size", b.size);
    SetU64(bo, "records", b.records);
    bo.Set("closed", Napi::Boolean::New(env, b.closed));
    SetU64(bo, "garbageRecords", b.garbage_records);
    SetU64(bo, "garbageBytes", b.garbage_bytes);
    SetU64(bo, "deadTombstones", b.dead_tombstones);
    SetU64(bo, "deadTombstoneBytes", b.dead_tombstone_bytes);
    SetU64(bo, "liveTombstones", b.live_tombstones);
    blobs.Set(i, bo);
  }
  o.Set("blobStats", blobs);
  d.Resolve(o);
  return d.Promise();
}

Napi::Value EngineWrap::Snapshot(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!CheckOpen(env)) return env.Undefined();
  return StartOp<SnapshotOp>(env, engine_);
}

Napi::Value EngineWrap::CloseActiveBlob(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!CheckOpen(env)) return env.Undefined();
  return StartOp<ControlOp>(env, engine_, ControlOp::kCloseActiveBlob);
}

Napi::Value EngineWrap::Close(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!CheckOpen(env)) return env.Undefined();
  return StartOp<ControlOp>(env, engine_, ControlOp::kClose);
}

bool EngineWrap::CheckOpen(Napi::Env env) {
  if (engine_) return true;
  Napi::Error::New(env, "engine is not open").ThrowAsJavaScriptException();
  return false;
}

}  // namespace oyster
