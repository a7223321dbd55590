#include "addon/scrub_wrap.h"

#include "addon/engine_wrap.h"
#include "addon/js_args.h"
#include "addon/js_records.h"
#include "addon/js_status.h"
#include "addon/pool_op.h"

namespace oyster {
namespace {

Napi::Object StatsToJs(Napi::Env env, const ScrubStats& s) {
  Napi::Object o = Napi::Object::New(env);
  SetU64(o, "blobId", s.blob_id);
  SetU64(o, "entries", s.entries);
  SetU64(o, "visited", s.visited);
  SetU64(o, "superseded", s.superseded);
  SetU64(o, "bytesRead", s.bytes_read);
  SetU64(o, "damaged", s.damaged);
  o.Set("indexRepaired", Napi::Boolean::New(env, s.index_repaired));
  return o;
}

Napi::Object DamageToJs(Napi::Env env, const ScrubDamage& d) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("key", Napi::Buffer<char>::Copy(env, d.key.data(), d.key.size()));
  o.Set("version", VersionToJs(env, d.version));
  o.Set("tombstone", Napi::Boolean::New(env, d.tombstone));
  o.Set("offset", Napi::Number::New(env, static_cast<double>(d.offset)));
  o.Set("message", Napi::String::New(env, d.message));
  return o;
}

class BeginOp final : public PoolOp {
 public:
  BeginOp(Napi::Env env, AddonData* data, std::shared_ptr<const EngineSet> set, std::shared_ptr<Engine> engine,
          uint64_t blob_id)
      : PoolOp(env, data), set_(std::move(set)), engine_(std::move(engine)), blob_id_(blob_id) {}

  void Run() override { status_ = Scrub::Begin(set_.get(), engine_, blob_id_, &scrub_); }

  Napi::Value Result(Napi::Env env) override { return ScrubWrap::New(env, data_, std::move(scrub_)); }

 private:
  const std::shared_ptr<const EngineSet> set_;
  const std::shared_ptr<Engine> engine_;
  const uint64_t blob_id_;
  std::unique_ptr<Scrub> scrub_;
};

class StepOp final : public PoolOp {
 public:
  StepOp(Napi::Env env, std::shared_ptr<Scrub> scrub, uint64_t budget)
      : PoolOp(env, env.GetInstanceData<AddonData>()), scrub_(std::move(scrub)), budget_(budget) {}

  void Run() override {
    status_ = scrub_->Step(budget_, &done_);
    stats_ = scrub_->stats();
    damaged_ = scrub_->TakeDamaged();
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Object o = Napi::Object::New(env);
    o.Set("done", Napi::Boolean::New(env, done_));
    o.Set("stats", StatsToJs(env, stats_));
    Napi::Array damaged = Napi::Array::New(env, damaged_.size());
    for (size_t i = 0; i < damaged_.size(); i++) damaged.Set(static_cast<uint32_t>(i), DamageToJs(env, damaged_[i]));
    o.Set("damaged", damaged);
    return o;
  }

 private:
  const std::shared_ptr<Scrub> scrub_;
  const uint64_t budget_;
  bool done_ = false;
  ScrubStats stats_;
  std::vector<ScrubDamage> damaged_;
};

}  // namespace

Napi::Function ScrubWrap::Define(Napi::Env env) {
  return DefineClass(env, "Scrub",
                     {
                         InstanceMethod<&ScrubWrap::Step>("step"),
                         InstanceMethod<&ScrubWrap::Close>("close"),
                     });
}

Napi::Object ScrubWrap::New(Napi::Env env, AddonData* data, std::unique_ptr<Scrub> scrub) {
  Napi::Object o = data->scrub_ctor().New({});
  Unwrap(o)->scrub_.Hold(data, std::move(scrub));
  return o;
}

ScrubWrap::ScrubWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ScrubWrap>(info) {}

Napi::Value ScrubWrap::Begin(const Napi::CallbackInfo& info, const std::shared_ptr<const EngineSet>& set) {
  Napi::Env env = info.Env();
  std::shared_ptr<Engine> engine;
  uint64_t blob_id;
  if (!EngineWrap::EngineBlobArgs(info, &engine, &blob_id)) return env.Undefined();
  return StartOp<BeginOp>(env, set, std::move(engine), blob_id);
}

Napi::Value ScrubWrap::Step(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t budget;
  if (!IntegerArg(info, 0, "budget", kMaxSafeInteger, "0..2^53-1", &budget)) return env.Undefined();
  return scrub_.Start<StepOp>(env, "scrub", budget);
}

Napi::Value ScrubWrap::Close(const Napi::CallbackInfo& info) { return scrub_.Close(info.Env()); }

}  // namespace oyster
