// IndexEntry locates the newest record of one key inside one blob.

#ifndef OYSTER_ENGINE_INDEX_ENTRY_H_
#define OYSTER_ENGINE_INDEX_ENTRY_H_

#include <cstdint>

namespace oyster {

struct IndexEntry {
  uint64_t timestamp = 0;
  uint64_t offset = 0;  // of the record header in the blob
  uint32_t value_size = 0;
  uint32_t flags = 0;  // record flags (kFlagTombstone)

  // Newest wins; on equal timestamps the later write (higher offset) wins.
  bool SupersededBy(const IndexEntry& other) const {
    return other.timestamp > timestamp || (other.timestamp == timestamp && other.offset > offset);
  }
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_INDEX_ENTRY_H_
