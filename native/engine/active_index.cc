#include "engine/active_index.h"

#include <algorithm>
#include <cstring>

namespace oyster {

ActiveIndex::ActiveIndex(size_t key_size) : key_size_(key_size), slots_(64, kEmpty) {}

uint32_t ActiveIndex::Insert(const char* key, uint64_t key_hash, const IndexEntry& e, Displaced* displaced) {
  if (displaced) displaced->any = false;
  size_t mask = slots_.size() - 1;
  for (size_t pos = key_hash & mask;; pos = (pos + 1) & mask) {
    uint32_t n = slots_[pos];
    if (n == kEmpty) {
      n = static_cast<uint32_t>(entries_.size());
      keys_.insert(keys_.end(), key, key + key_size_);
      entries_.push_back(e);
      hashes_.push_back(key_hash);
      slots_[pos] = n;
      // Keep the load factor at or below 0.7 so probe chains stay short.
      if (entries_.size() * 10 > slots_.size() * 7) Grow();
      return n;
    }
    if (hashes_[n] == key_hash && std::memcmp(key_at(n), key, key_size_) == 0) {
      const bool newer = entries_[n].SupersededBy(e);
      if (displaced) {
        displaced->any = true;
        displaced->entry = newer ? entries_[n] : e;
      }
      if (newer) entries_[n] = e;
      return n;
    }
  }
}

bool ActiveIndex::Find(const char* key, uint64_t key_hash, IndexEntry* e) const {
  size_t mask = slots_.size() - 1;
  for (size_t pos = key_hash & mask;; pos = (pos + 1) & mask) {
    uint32_t n = slots_[pos];
    if (n == kEmpty) return false;
    if (hashes_[n] == key_hash && std::memcmp(key_at(n), key, key_size_) == 0) {
      *e = entries_[n];
      return true;
    }
  }
}

void ActiveIndex::Grow() {
  std::vector<uint32_t> slots(slots_.size() * 2, kEmpty);
  size_t mask = slots.size() - 1;
  for (uint32_t n = 0; n < entries_.size(); n++) {
    size_t pos = hashes_[n] & mask;
    while (slots[pos] != kEmpty) pos = (pos + 1) & mask;
    slots[pos] = n;
  }
  slots_.swap(slots);
}

std::vector<uint32_t> ActiveIndex::SortedOrder() const {
  std::vector<uint32_t> order(entries_.size());
  for (uint32_t i = 0; i < order.size(); i++) order[i] = i;
  std::sort(order.begin(), order.end(), [this](uint32_t a, uint32_t b) {
    return std::memcmp(key_at(a), key_at(b), key_size_) < 0;
  });
  return order;
}

size_t ActiveIndex::MemoryUsage() const {
  return keys_.capacity() + entries_.capacity() * sizeof(IndexEntry) +
         hashes_.capacity() * sizeof(uint64_t) + slots_.capacity() * sizeof(uint32_t);
}

}  // namespace oyster
