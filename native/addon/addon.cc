// Module entry point of the native addon (build/Release/oyster.node).

#include <napi.h>

#include <cstdlib>

#include "addon/addon_data.h"
#include "addon/cache_wrap.h"
#include "addon/compaction_wrap.h"
#include "addon/scrub_wrap.h"
#include "addon/socket_wrap.h"
#include "addon/engine_wrap.h"
#include "addon/files_wrap.h"
#include "addon/put_stream_wrap.h"
#include "addon/tools_wrap.h"
#include "addon/value_reader_wrap.h"
#include "engine/format.h"
#include "engine/index_format.h"
#include "util/crc32c.h"

namespace oyster {
namespace {

// OYSTER_ENGINE_THREADS overrides the pool size (default 4: I/O mostly waits,
// so more threads than cores keeps the disks busy).
int PoolSize() {
  const char* v = std::getenv("OYSTER_ENGINE_THREADS");
  if (v != nullptr) {
    int n = std::atoi(v);
    if (n >= 1 && n <= 256) return n;
  }
  return 4;
}

Napi::Value Crc32c(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    Napi::TypeError::New(env, "crc32c expects a Buffer").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Uint8Array b = info[0].As<Napi::Uint8Array>();
  return Napi::Number::New(env, crc32c::Value(reinterpret_cast<const char*>(b.Data()), b.ByteLength()));
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  AddonData* data = AddonData::Create(env, PoolSize());
  if (data == nullptr) {
    Napi::Error::New(env, "cannot create the engine completion queue").ThrowAsJavaScriptException();
    return exports;
  }
  data->engine_ctor() = Napi::Persistent(EngineWrap::Define(env));
  data->put_stream_ctor() = Napi::Persistent(PutStreamWrap::Define(env));
  data->value_reader_ctor() = Napi::Persistent(ValueReaderWrap::Define(env));
  data->compaction_ctor() = Napi::Persistent(CompactionWrap::Define(env));
  data->scrub_ctor() = Napi::Persistent(ScrubWrap::Define(env));
  Napi::Function cache = CacheWrap::Define(env);
  data->cache_ctor() = Napi::Persistent(cache);

  exports.Set("open", Napi::Function::New(env, &EngineWrap::Open, "open"));
  exports.Set("EngineSet", EngineSetWrap::Define(env));
  exports.Set("Cache", cache);
  exports.Set("crc32c", Napi::Function::New(env, &Crc32c, "crc32c"));
  exports.Set("tools", ToolsExports(env));
  exports.Set("files", FilesExports(env));
  exports.Set("socket", SocketExports(env));
  exports.Set("poolSize", Napi::Number::New(env, data->pool()->size()));
  exports.Set("crc32cHardware", Napi::Boolean::New(env, crc32c::HardwareAccelerated()));
  Napi::Object format = Napi::Object::New(env);
  format.Set("blobHeaderSize", Napi::Number::New(env, kBlobHeaderSize));
  format.Set("recordFixedSize", Napi::Number::New(env, kRecordFixedSize));
  format.Set("indexHeaderSize", Napi::Number::New(env, kIndexHeaderSize));
  format.Set("indexBlockSize", Napi::Number::New(env, kIndexBlockSize));
  exports.Set("format", format);
  return exports;
}

}  // namespace
}  // namespace oyster

static Napi::Object InitOyster(Napi::Env env, Napi::Object exports) { return oyster::Init(env, exports); }

NODE_API_MODULE(oyster, InitOyster)
