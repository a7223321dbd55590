// IndexEntry locates the newest record of one key inside one blob.

#ifndef OYSTER_ENGINE_INDEX_ENTRY_H_
#define OYSTER_ENGINE_INDEX_ENTRY_H_

#include <cstdint>

#include "engine/format.h"
#include "engine/version.h"

namespace oyster {

struct IndexEntry {
  Version version;
  uint64_t offset = 0;  // of the record header in the blob
  uint32_t value_size = 0;
  uint32_t flags = 0;  // record flags (kFlagTombstone)

  bool tombstone() const { return (flags & kFlagTombstone) != 0; }

  // By CompareRecords; a full tie goes to the later write (higher offset).
  bool SupersededBy(const IndexEntry& other) const {
    int c = CompareRecords(other.version, other.tombstone(), version, tombstone());
    return c > 0 || (c == 0 && other.offset > offset);
  }
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_INDEX_ENTRY_H_
