#include "engine/engine_set.h"

#include <utility>

namespace oyster {

EngineSet::EngineSet(std::vector<std::shared_ptr<Engine>> engines) : engines_(std::move(engines)) {}

Status EngineSet::Locate(const ReadOptions& options, const char* key, LookupResult* result, Location* where) const {
  *result = LookupResult();
  where->engine = nullptr;
  RecordLocation at;
  for (const std::shared_ptr<Engine>& e : engines_) {
    LookupResult r;
    Status s = e->Locate(options, key, &r, &at);
    if (!s.ok()) return s;
    if (r.kind == GetResult::kAbsent) continue;
    // Strictly newer only: a full tie stays with the earlier engine.
    if (where->engine == nullptr ||
        CompareRecords(r.version, r.tombstone(), result->version, result->tombstone()) > 0) {
      *result = r;
      where->engine = e.get();
      where->record = std::move(at);
    }
  }
  return Status::OK();
}

Status EngineSet::Read(const ReadOptions& options, const char* key, const Location& where, GetResult* result) const {
  return where.engine->Read(options, key, where.record, result);
}

Status EngineSet::Get(const ReadOptions& options, const char* key, GetResult* result) const {
  LookupResult newest;
  Location where;
  Status s = Locate(options, key, &newest, &where);
  if (!s.ok() || newest.kind != GetResult::kFound) {
    result->kind = newest.kind;
    result->version = newest.version;
    return s;
  }
  return Read(options, key, where, result);
}

Status EngineSet::Lookup(const ReadOptions& options, const char* key, LookupResult* result) const {
  Location where;
  return Locate(options, key, result, &where);
}

}  // namespace oyster
