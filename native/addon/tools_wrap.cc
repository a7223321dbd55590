#include "addon/tools_wrap.h"

#include <memory>
#include <string>
#include <vector>

#include "addon/addon_data.h"
#include "addon/pool_op.h"
#include "engine/index_format.h"
#include "tools/partition_check.h"
#include "tools/partition_recovery.h"
#include "util/file_system.h"

namespace oyster {
namespace {

Napi::Value Num(Napi::Env env, uint64_t v) { return Napi::Number::New(env, static_cast<double>(v)); }

Napi::Array Strings(Napi::Env env, const std::vector<std::string>& v) {
  Napi::Array a = Napi::Array::New(env, v.size());
  for (uint32_t i = 0; i < v.size(); i++) a.Set(i, Napi::String::New(env, v[i]));
  return a;
}

// One tool run: a PoolOp (addon/pool_op.h) with progress counters that
// JavaScript may read while it runs.
class ToolOp : public PoolOp {
 public:
  // Schedules the work; returns { promise, progress }.
  Napi::Object Start(Napi::Env env) {
    Napi::Object task = Napi::Object::New(env);
    task.Set("promise", promise());
    std::shared_ptr<ToolProgress> progress = progress_;
    task.Set("progress", Napi::Function::New(
                             env,
                             [progress](const Napi::CallbackInfo& info) -> Napi::Value {
                               Napi::Object o = Napi::Object::New(info.Env());
                               o.Set("done", Num(info.Env(), progress->done()));
                               o.Set("total", Num(info.Env(), progress->total()));
                               return o;
                             },
                             "progress"));
    Schedule();
    return task;
  }

 protected:
  ToolOp(Napi::Env env, AddonData* data) : PoolOp(env, data) {}

  std::shared_ptr<ToolProgress> progress_ = std::make_shared<ToolProgress>();
};

Napi::Object IndexHeaderToJs(Napi::Env env, const IndexHeader& h) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("version", Num(env, h.version));
  o.Set("keySize", Num(env, h.key_size));
  o.Set("blobId", Num(env, h.blob_id));
  o.Set("blobSize", Num(env, h.blob_size));
  o.Set("recordsTotal", Num(env, h.records_total));
  o.Set("entryCount", Num(env, h.entry_count));
  o.Set("minTimestamp", Num(env, h.min_timestamp));
  o.Set("maxTimestamp", Num(env, h.max_timestamp));
  o.Set("newestTick", Num(env, h.max_version().tick()));
  o.Set("newestNode", Num(env, h.max_version().node()));
  o.Set("maxTick", Num(env, h.max_stamp >> kStampNodeBits));
  o.Set("blockSize", Num(env, h.block_size));
  o.Set("blockCount", Num(env, h.block_count));
  o.Set("bloomBlocks", Num(env, h.bloom_blocks));
  o.Set("bloomProbes", Num(env, h.bloom_probes));
  return o;
}

Napi::Object BlobReportToJs(Napi::Env env, const BlobReport& r) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("name", r.name);
  o.Set("prefix", r.prefix);
  o.Set("id", Num(env, r.id));
  o.Set("size", Num(env, r.size));
  o.Set("active", r.active);
  o.Set("header", HeaderStateName(r.header));
  o.Set("headerProblem", r.header_problem);
  o.Set("version", Num(env, r.version));
  o.Set("keySize", Num(env, r.key_size));
  o.Set("scanned", r.scanned);
  if (r.scanned) {
    o.Set("records", Num(env, r.records));
    o.Set("tombstones", Num(env, r.tombstones));
    o.Set("keys", Num(env, r.keys));
    o.Set("corruptRecords", Num(env, r.corrupt_records));
    o.Set("corruptNewest", Num(env, r.corrupt_newest));
    o.Set("skippedRegions", Num(env, r.skipped_regions));
    o.Set("skippedBytes", Num(env, r.skipped_bytes));
    o.Set("validEnd", Num(env, r.valid_end));
    o.Set("tailBytes", Num(env, r.tail_bytes));
    o.Set("minTimestamp", Num(env, r.min_timestamp));
    o.Set("maxTimestamp", Num(env, r.max_version.timestamp));
    o.Set("maxTick", Num(env, r.max_stamp >> kStampNodeBits));
  }
  o.Set("index", IndexStateName(r.index));
  o.Set("indexProblem", r.index_problem);
  o.Set("indexSize", Num(env, r.index_size));
  o.Set("indexEntriesVerified", r.index_entries_verified);
  o.Set("indexHeader", r.index_header_valid ? IndexHeaderToJs(env, r.index_header) : env.Null());
  return o;
}

class CheckOp final : public ToolOp {
 public:
  CheckOp(Napi::Env env, AddonData* data, std::string dir, CheckOptions options)
      : ToolOp(env, data), dir_(std::move(dir)), options_(std::move(options)) {}

  void Run() override { status_ = CheckPartition(FileSystem::Default(), dir_, options_, progress_.get(), &report_); }

  Napi::Value Result(Napi::Env env) override {
    Napi::Object o = Napi::Object::New(env);
    o.Set("dir", report_.dir);
    o.Set("keySize", Num(env, report_.key_size));
    Napi::Array blobs = Napi::Array::New(env, report_.blobs.size());
    for (uint32_t i = 0; i < report_.blobs.size(); i++) blobs.Set(i, BlobReportToJs(env, report_.blobs[i]));
    o.Set("blobs", blobs);
    o.Set("orphanIndexes", Strings(env, report_.orphan_indexes));
    o.Set("tempIndexes", Strings(env, report_.temp_indexes));
    o.Set("quarantined", Strings(env, report_.quarantined));
    return o;
  }

 private:
  std::string dir_;
  CheckOptions options_;
  PartitionReport report_;
};

class RecoverOp final : public ToolOp {
 public:
  RecoverOp(Napi::Env env, AddonData* data, std::string dir, RecoverOptions options)
      : ToolOp(env, data), dir_(std::move(dir)), options_(std::move(options)) {}

  void Run() override { status_ = RecoverPartition(FileSystem::Default(), dir_, options_, progress_.get(), &result_); }

  Napi::Value Result(Napi::Env env) override {
    Napi::Object o = Napi::Object::New(env);
    o.Set("dir", result_.dir);
    o.Set("outDir", result_.out_dir.empty() ? env.Null() : Napi::String::New(env, result_.out_dir));
    o.Set("keySize", Num(env, result_.key_size));
    Napi::Array blobs = Napi::Array::New(env, result_.blobs.size());
    for (uint32_t i = 0; i < result_.blobs.size(); i++) {
      const BlobRecovery& b = result_.blobs[i];
      Napi::Object r = Napi::Object::New(env);
      r.Set("name", b.name);
      r.Set("action", RecoveryActionName(b.action));
      r.Set("reason", b.reason);
      r.Set("recordsKept", Num(env, b.rewrite.records));
      r.Set("corruptDropped", Num(env, b.rewrite.corrupt_dropped));
      r.Set("corruptNewest", Num(env, b.rewrite.corrupt_newest));
      r.Set("bytesDropped", Num(env, b.rewrite.bytes_dropped));
      r.Set("size", Num(env, b.rewrite.size));
      r.Set("indexWritten", b.index_written);
      r.Set("keptAs", b.kept_as.empty() ? env.Null() : Napi::String::New(env, b.kept_as));
      blobs.Set(i, r);
    }
    o.Set("blobs", blobs);
    return o;
  }

 private:
  std::string dir_;
  RecoverOptions options_;
  PartitionRecovery result_;
};

// The common arguments (dir, { keySize, only }); throws and returns false if unusable.
bool CommonArgs(const Napi::CallbackInfo& info, std::string* dir, uint32_t* key_size, std::string* only,
                Napi::Object* opts) {
  Napi::Env env = info.Env();
  if (!info[0].IsString() || !info[1].IsObject()) {
    Napi::TypeError::New(env, "expected (dir: string, options: object)").ThrowAsJavaScriptException();
    return false;
  }
  *dir = info[0].As<Napi::String>().Utf8Value();
  *opts = info[1].As<Napi::Object>();
  Napi::Value k = opts->Get("keySize");
  if (!k.IsUndefined()) {
    double d = k.IsNumber() ? k.As<Napi::Number>().DoubleValue() : -1;
    if (!(d >= 1 && d <= kMaxIndexKeySize && d == static_cast<uint32_t>(d))) {
      Napi::RangeError::New(env, "option keySize must be an integer in 1..1024").ThrowAsJavaScriptException();
      return false;
    }
    *key_size = static_cast<uint32_t>(d);
  }
  Napi::Value o = opts->Get("only");
  if (!o.IsUndefined()) {
    if (!o.IsString()) {
      Napi::TypeError::New(env, "option only must be a file name").ThrowAsJavaScriptException();
      return false;
    }
    *only = o.As<Napi::String>().Utf8Value();
  }
  return true;
}

Napi::Value CheckPartitionJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string dir;
  CheckOptions options;
  Napi::Object opts;
  if (!CommonArgs(info, &dir, &options.key_size, &options.only, &opts)) return env.Undefined();
  Napi::Value scan = opts.Get("scan");
  if (!scan.IsUndefined()) options.scan = scan.ToBoolean().Value();
  auto* op = new CheckOp(env, env.GetInstanceData<AddonData>(), std::move(dir), std::move(options));
  return op->Start(env);
}

Napi::Value RecoverPartitionJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string dir;
  RecoverOptions options;
  Napi::Object opts;
  if (!CommonArgs(info, &dir, &options.key_size, &options.only, &opts)) return env.Undefined();
  Napi::Value out = opts.Get("outDir");
  if (!out.IsUndefined()) {
    if (!out.IsString() || out.As<Napi::String>().Utf8Value().empty()) {
      Napi::TypeError::New(env, "option outDir must be a directory path").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    options.out_dir = out.As<Napi::String>().Utf8Value();
  }
  auto* op = new RecoverOp(env, env.GetInstanceData<AddonData>(), std::move(dir), std::move(options));
  return op->Start(env);
}

}  // namespace

Napi::Object ToolsExports(Napi::Env env) {
  Napi::Object tools = Napi::Object::New(env);
  tools.Set("checkPartition", Napi::Function::New(env, &CheckPartitionJs, "checkPartition"));
  tools.Set("recoverPartition", Napi::Function::New(env, &RecoverPartitionJs, "recoverPartition"));
  return tools;
}

}  // namespace oyster
