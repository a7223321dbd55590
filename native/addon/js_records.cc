#include "addon/js_records.h"

namespace oyster {
namespace {

// A plain, writable, enumerable data property (Node defines these on its fast path).
napi_property_descriptor Property(const char* name, napi_value value) {
  return napi_property_descriptor{name, nullptr, nullptr, nullptr, nullptr, value, napi_default_jsproperty, nullptr};
}

Napi::Object WithProperties(Napi::Env env, const napi_property_descriptor* properties, size_t n) {
  Napi::Object o = Napi::Object::New(env);
  napi_define_properties(env, o, n, properties);
  return o;
}

}  // namespace

void SetU64(Napi::Object o, const char* name, uint64_t v) {
  o.Set(name, Napi::Number::New(o.Env(), static_cast<double>(v)));
}

Napi::Object VersionToJs(Napi::Env env, const Version& v) {
  const napi_property_descriptor properties[] = {
      Property("timestamp", Napi::Number::New(env, static_cast<double>(v.timestamp))),
      Property("tick", Napi::Number::New(env, static_cast<double>(v.tick()))),
      Property("node", Napi::Number::New(env, v.node())),
  };
  return WithProperties(env, properties, 3);
}

Napi::Value RecordToJs(Napi::Env env, GetResult::Kind kind, const Version& v, napi_value value) {
  if (kind == GetResult::kAbsent) return env.Null();
  const napi_property_descriptor properties[] = {
      Property("kind", Napi::String::New(env, kind == GetResult::kFound ? "found" : "deleted")),
      Property("version", VersionToJs(env, v)),
      Property("value", value),
  };
  return WithProperties(env, properties, value != nullptr ? 3 : 2);
}

}  // namespace oyster
