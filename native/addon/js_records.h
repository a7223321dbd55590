// The JavaScript values the engine binding answers reads with (the
// StoredRecord and KeyState of src/model/version.ts):
//   null | { kind: 'found', version, value } | { kind: 'deleted', version }
// where version is { timestamp, tick, node }. Reads are the hot path: each
// object is made with one napi_define_properties call.

#ifndef OYSTER_ADDON_JS_RECORDS_H_
#define OYSTER_ADDON_JS_RECORDS_H_

#include <napi.h>

#include "engine/engine.h"
#include "engine/version.h"

namespace oyster {

Napi::Object VersionToJs(Napi::Env env, const Version& v);

// Sets o[name] to a count or size as a JavaScript number (exact below 2^53,
// where every count and size the engine reports lies).
void SetU64(Napi::Object o, const char* name, uint64_t v);

// null for kAbsent, else a StoredRecord with `value` (the Buffer of a kFound
// record) or, without it, a KeyState.
Napi::Value RecordToJs(Napi::Env env, GetResult::Kind kind, const Version& v, napi_value value = nullptr);

}  // namespace oyster

#endif  // OYSTER_ADDON_JS_RECORDS_H_
