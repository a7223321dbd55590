// ActiveIndex is the exact in-memory index of a blob that is still being
// written: for every key, the entry of its newest record. It is an
// open-addressing hash table over flat arrays (about K + 38 bytes per key).
// Not thread-safe; the owning blob guards it with a reader/writer lock.

#ifndef OYSTER_ENGINE_ACTIVE_INDEX_H_
#define OYSTER_ENGINE_ACTIVE_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/index_entry.h"

namespace oyster {

class ActiveIndex {
 public:
  explicit ActiveIndex(size_t key_size);

  // Of an Insert of a key that already had an entry: the entry not kept,
  // the old one or the one inserted.
  struct Displaced {
    bool any = false;
    IndexEntry entry;
  };

  // Keeps `e` for key unless the key already has a newer entry. Returns the
  // key's number (as key_at takes it); *displaced, if given, tells which
  // entry lost.
  uint32_t Insert(const char* key, uint64_t key_hash, const IndexEntry& e, Displaced* displaced = nullptr);
  bool Find(const char* key, uint64_t key_hash, IndexEntry* e) const;

  size_t size() const { return entries_.size(); }
  size_t key_size() const { return key_size_; }
  const char* key_at(uint32_t i) const { return keys_.data() + static_cast<size_t>(i) * key_size_; }
  const IndexEntry& entry_at(uint32_t i) const { return entries_[i]; }
  uint64_t hash_at(uint32_t i) const { return hashes_[i]; }

  // Entry numbers ordered by key bytes (memcmp), for writing an index file.
  std::vector<uint32_t> SortedOrder() const;

  size_t MemoryUsage() const;

 private:
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;

  void Grow();

  const size_t key_size_;
  std::vector<char> keys_;            // key i at [i*K, (i+1)*K)
  std::vector<IndexEntry> entries_;   // entry of key i
  std::vector<uint64_t> hashes_;      // hash of key i (avoids rehashing on growth and dumps)
  std::vector<uint32_t> slots_;       // key numbers, kEmpty for free slots; size is a power of 2
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_ACTIVE_INDEX_H_
