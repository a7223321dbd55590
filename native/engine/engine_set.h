// EngineSet reads the engines of one vdisk (the partitions it is split
// into) as one store: the newest record of a key across them, chosen by
// CompareRecords; a full tie goes to the engine earlier in the list. Reads
// first locate the record in every engine (bloom filters and memory, no
// value read) and then read only the winner's value.

#ifndef OYSTER_ENGINE_ENGINE_SET_H_
#define OYSTER_ENGINE_ENGINE_SET_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "engine/engine.h"
#include "util/status.h"

namespace oyster {

class EngineSet {
 public:
  // Where the newest record of a key is: which engine, and where in it.
  struct Location {
    Engine* engine = nullptr;  // nullptr: no engine holds a record of the key
    RecordLocation record;
  };

  // Requires a non-empty list of open engines sharing one key size.
  explicit EngineSet(std::vector<std::shared_ptr<Engine>> engines);

  // Like Engine::Locate across the engines.
  Status Locate(const ReadOptions& options, const char* key, LookupResult* result, Location* where) const;
  // Reads the record a Locate of `key` found (result kFound), as Get does.
  Status Read(const ReadOptions& options, const char* key, const Location& where, GetResult* result) const;
  // Like Engine::Get across the engines. Corruption if the newest record
  // fails its checks (result->version is still set).
  Status Get(const ReadOptions& options, const char* key, GetResult* result) const;
  // Like Engine::Lookup across the engines.
  Status Lookup(const ReadOptions& options, const char* key, LookupResult* result) const;

  const std::vector<std::shared_ptr<Engine>>& engines() const { return engines_; }
  size_t key_size() const { return engines_[0]->options().key_size; }

 private:
  const std::vector<std::shared_ptr<Engine>> engines_;
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_ENGINE_SET_H_
