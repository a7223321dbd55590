#include "addon/compaction_wrap.h"

#include "addon/engine_wrap.h"
#include "addon/js_args.h"
#include "addon/js_records.h"
#include "addon/js_status.h"
#include "addon/pool_op.h"

namespace oyster {
namespace {

Napi::Object StatsToJs(Napi::Env env, const CompactionStats& s) {
  Napi::Object o = Napi::Object::New(env);
  SetU64(o, "blobId", s.blob_id);
  SetU64(o, "sourceSize", s.source_size);
  SetU64(o, "sourceRecords", s.source_records);
  SetU64(o, "entries", s.entries);
  SetU64(o, "visited", s.visited);
  SetU64(o, "keptRecords", s.kept_records);
  SetU64(o, "droppedRecords", s.dropped_records);
  SetU64(o, "droppedTombstones", s.dropped_tombstones);
  SetU64(o, "damagedKept", s.damaged_kept);
  SetU64(o, "headersRebuilt", s.headers_rebuilt);
  SetU64(o, "bytesRead", s.bytes_read);
  SetU64(o, "bytesWritten", s.bytes_written);
  o.Set("installed", Napi::Boolean::New(env, s.installed));
  SetU64(o, "newSize", s.new_size);
  return o;
}

// The tombstone policy from arguments first.. first+2: graceSeconds,
// dropTombstones, nowSeconds (0: now).
bool PolicyArgs(const Napi::CallbackInfo& info, size_t first, TombstonePolicy* policy) {
  uint64_t grace, now;
  if (!IntegerArg(info, first, "graceSeconds", kMaxSafeInteger, "0..2^53-1", &grace)) return false;
  if (!info[first + 1].IsBoolean()) {
    Napi::TypeError::New(info.Env(), "dropTombstones must be a boolean").ThrowAsJavaScriptException();
    return false;
  }
  if (!IntegerArg(info, first + 2, "nowSeconds", kMaxSafeInteger, "0..2^53-1", &now)) return false;
  policy->grace_seconds = grace;
  policy->drop = info[first + 1].As<Napi::Boolean>().Value();
  policy->now_seconds = now;
  return true;
}

class BeginOp final : public PoolOp {
 public:
  BeginOp(Napi::Env env, AddonData* data, std::shared_ptr<const EngineSet> set, std::shared_ptr<Engine> engine,
          uint64_t blob_id, const CompactionOptions& options)
      : PoolOp(env, data), set_(std::move(set)), engine_(std::move(engine)), blob_id_(blob_id), options_(options) {}

  void Run() override { status_ = Compaction::Begin(*set_, engine_, blob_id_, options_, &compaction_); }

  Napi::Value Result(Napi::Env env) override { return CompactionWrap::New(env, data_, std::move(compaction_)); }

 private:
  const std::shared_ptr<const EngineSet> set_;
  const std::shared_ptr<Engine> engine_;
  const uint64_t blob_id_;
  const CompactionOptions options_;
  std::unique_ptr<Compaction> compaction_;
};

class StepOp final : public PoolOp {
 public:
  StepOp(Napi::Env env, std::shared_ptr<Compaction> c, uint64_t budget)
      : PoolOp(env, env.GetInstanceData<AddonData>()), compaction_(std::move(c)), budget_(budget) {}

  void Run() override {
    status_ = compaction_->Step(budget_, &done_);
    stats_ = compaction_->stats();
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Object o = Napi::Object::New(env);
    o.Set("done", Napi::Boolean::New(env, done_));
    o.Set("stats", StatsToJs(env, stats_));
    return o;
  }

 private:
  const std::shared_ptr<Compaction> compaction_;
  const uint64_t budget_;
  bool done_ = false;
  CompactionStats stats_;
};

class InstallOp final : public PoolOp {
 public:
  InstallOp(Napi::Env env, std::shared_ptr<Compaction> c)
      : PoolOp(env, env.GetInstanceData<AddonData>()), compaction_(std::move(c)) {}

  void Run() override {
    status_ = compaction_->Install();
    stats_ = compaction_->stats();
  }

  Napi::Value Result(Napi::Env env) override { return StatsToJs(env, stats_); }

 private:
  const std::shared_ptr<Compaction> compaction_;
  CompactionStats stats_;
};

class CountGarbageOp final : public PoolOp {
 public:
  CountGarbageOp(Napi::Env env, AddonData* data, std::shared_ptr<const EngineSet> set, const TombstonePolicy& policy)
      : PoolOp(env, data), set_(std::move(set)), policy_(policy) {}

  void Run() override { status_ = set_->CountGarbage(EngineSet::ScanOptions(), policy_, &summary_); }

  Napi::Value Result(Napi::Env env) override {
    Napi::Object o = Napi::Object::New(env);
    SetU64(o, "keys", summary_.keys);
    SetU64(o, "tombstones", summary_.tombstones);
    SetU64(o, "garbageRecords", summary_.garbage_records);
    SetU64(o, "garbageBytes", summary_.garbage_bytes);
    SetU64(o, "deadTombstones", summary_.dead_tombstones);
    SetU64(o, "deadTombstoneBytes", summary_.dead_tombstone_bytes);
    return o;
  }

 private:
  const std::shared_ptr<const EngineSet> set_;
  const TombstonePolicy policy_;
  EngineSet::GarbageSummary summary_;
};

}  // namespace

Napi::Function CompactionWrap::Define(Napi::Env env) {
  return DefineClass(env, "Compaction",
                     {
                         InstanceMethod<&CompactionWrap::Step>("step"),
                         InstanceMethod<&CompactionWrap::Install>("install"),
                         InstanceMethod<&CompactionWrap::Close>("close"),
                     });
}

Napi::Object CompactionWrap::New(Napi::Env env, AddonData* data, std::unique_ptr<Compaction> compaction) {
  Napi::Object o = data->compaction_ctor().New({});
  Unwrap(o)->compaction_.Hold(data, std::move(compaction));
  return o;
}

CompactionWrap::CompactionWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<CompactionWrap>(info) {}

Napi::Value CompactionWrap::Begin(const Napi::CallbackInfo& info, const std::shared_ptr<const EngineSet>& set) {
  Napi::Env env = info.Env();
  std::shared_ptr<Engine> engine;
  uint64_t blob_id;
  CompactionOptions options;
  if (!EngineWrap::EngineBlobArgs(info, &engine, &blob_id) || !PolicyArgs(info, 2, &options.tombstones)) {
    return env.Undefined();
  }
  return StartOp<BeginOp>(env, set, std::move(engine), blob_id, options);
}

Napi::Value CompactionWrap::CountGarbage(const Napi::CallbackInfo& info, const std::shared_ptr<const EngineSet>& set) {
  Napi::Env env = info.Env();
  TombstonePolicy policy;
  if (!PolicyArgs(info, 0, &policy)) return env.Undefined();
  return StartOp<CountGarbageOp>(env, set, policy);
}

Napi::Value CompactionWrap::Step(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t budget;
  if (!IntegerArg(info, 0, "budget", kMaxSafeInteger, "0..2^53-1", &budget)) return env.Undefined();
  return compaction_.Start<StepOp>(env, "compaction", budget);
}

Napi::Value CompactionWrap::Install(const Napi::CallbackInfo& info) {
  return compaction_.Start<InstallOp>(info.Env(), "compaction");
}

Napi::Value CompactionWrap::Close(const Napi::CallbackInfo& info) { return compaction_.Close(info.Env()); }

}  // namespace oyster
