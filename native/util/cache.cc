#include "util/cache.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace oyster {

namespace {

// One piece: a node of its shard's hash chain and LRU list, its bytes inline.
struct Entry {
  Entry* next_hash;
  Entry* prev;  // LRU list: toward the most recently used
  Entry* next;  // toward the least recently used
  uint64_t id;
  uint64_t offset;
  uint64_t hash;
  size_t size;
  char data[1];

  size_t charge() const { return size + Cache::kEntryOverhead; }
};

Entry* NewEntry(uint64_t id, uint64_t offset, uint64_t hash, const char* buf, size_t n) {
  void* mem = std::malloc(offsetof(Entry, data) + (n == 0 ? 1 : n));
  if (mem == nullptr) return nullptr;
  Entry* e = static_cast<Entry*>(mem);
  e->next_hash = e->prev = e->next = nullptr;
  e->id = id;
  e->offset = offset;
  e->hash = hash;
  e->size = n;
  std::memcpy(e->data, buf, n);
  return e;
}

uint64_t Mix(uint64_t id, uint64_t offset) {
  // splitmix64's finalizer over both halves of the key.
  uint64_t x = id * 0x9E3779B97F4A7C15ull ^ offset;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

// A part of the cache with its own lock: a chained hash table of entries and
// their LRU list, within its share of the capacity.
class Cache::Shard {
 public:
  Shard() { Resize(); }
  ~Shard() {
    for (Entry* e = head_.next; e != &head_;) {
      Entry* next = e->next;
      std::free(e);
      e = next;
    }
    delete[] table_;
  }

  void set_capacity(size_t capacity) { capacity_ = capacity; }

  bool Lookup(uint64_t id, uint64_t offset, uint64_t hash, size_t n, char* buf, bool no_wait) {
    std::unique_lock<std::mutex> l(mu_, std::defer_lock);
    if (!Acquire(&l, no_wait)) {
      misses_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    Entry* e = *Find(id, offset, hash);
    if (e == nullptr || e->size != n) {
      misses_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    std::memcpy(buf, e->data, n);
    Unlink(e);
    LinkFront(e);
    hits_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  void Insert(uint64_t id, uint64_t offset, uint64_t hash, const char* buf, size_t n, bool no_wait) {
    if (n + kEntryOverhead > capacity_) return;
    // Allocated and filled before the lock is taken: the lock guards only links.
    Entry* e = NewEntry(id, offset, hash, buf, n);
    if (e == nullptr) return;
    std::unique_lock<std::mutex> l(mu_, std::defer_lock);
    if (!Acquire(&l, no_wait)) {
      std::free(e);
      return;
    }
    Entry** slot = Find(id, offset, hash);
    Entry* old = *slot;
    e->next_hash = old == nullptr ? nullptr : old->next_hash;
    *slot = e;
    if (old != nullptr) {
      Unlink(old);
      usage_ -= old->charge();
      std::free(old);
    } else if (++elems_ > length_) {
      Resize();
    }
    LinkFront(e);
    usage_ += e->charge();
    while (usage_ > capacity_ && head_.prev != e) Evict(head_.prev);
  }

  void AddStats(Stats* s) const {
    std::lock_guard<std::mutex> l(mu_);
    s->usage += usage_;
    s->entries += elems_;
    s->hits += hits_.load(std::memory_order_relaxed);
    s->misses += misses_.load(std::memory_order_relaxed);
  }

 private:
  bool Acquire(std::unique_lock<std::mutex>* l, bool no_wait) {
    if (no_wait) return l->try_lock();
    l->lock();
    return true;
  }

  // The slot that holds, or would hold, the entry of (id, offset).
  Entry** Find(uint64_t id, uint64_t offset, uint64_t hash) {
    Entry** p = &table_[hash & (length_ - 1)];
    while (*p != nullptr && ((*p)->id != id || (*p)->offset != offset)) p = &(*p)->next_hash;
    return p;
  }

  void Evict(Entry* e) {
    Entry** p = Find(e->id, e->offset, e->hash);
    *p = e->next_hash;
    Unlink(e);
    usage_ -= e->charge();
    elems_--;
    std::free(e);
  }

  void Unlink(Entry* e) {
    e->prev->next = e->next;
    e->next->prev = e->prev;
  }

  void LinkFront(Entry* e) {
    e->next = head_.next;
    e->prev = &head_;
    head_.next->prev = e;
    head_.next = e;
  }

  // Doubles the table (or makes the first one); chains stay short.
  void Resize() {
    size_t length = length_ == 0 ? 64 : length_ * 2;
    Entry** table = new Entry*[length]();
    for (size_t i = 0; i < length_; i++) {
      for (Entry* e = table_[i]; e != nullptr;) {
        Entry* next = e->next_hash;
        Entry** p = &table[e->hash & (length - 1)];
        e->next_hash = *p;
        *p = e;
        e = next;
      }
    }
    delete[] table_;
    table_ = table;
    length_ = length;
  }

  mutable std::mutex mu_;
  size_t capacity_ = 0;
  size_t usage_ = 0;
  size_t elems_ = 0;
  size_t length_ = 0;
  Entry** table_ = nullptr;
  // The LRU list's sentinel: head_.next is the most recently used entry.
  Entry head_{&head_, &head_, &head_, 0, 0, 0, 0, {0}};
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
};

Cache::Cache(size_t capacity) : capacity_(capacity), shards_(new Shard[kShards]) {
  const size_t share = (capacity + kShards - 1) / kShards;
  for (int i = 0; i < kShards; i++) shards_[i].set_capacity(share);
}

Cache::~Cache() = default;

Cache::Shard& Cache::ShardOf(uint64_t hash) { return shards_[hash >> (64 - kShardBits)]; }

bool Cache::Lookup(uint64_t id, uint64_t offset, size_t n, char* buf, bool no_wait) {
  if (capacity_ == 0) return false;
  const uint64_t hash = Mix(id, offset);
  return ShardOf(hash).Lookup(id, offset, hash, n, buf, no_wait);
}

void Cache::Insert(uint64_t id, uint64_t offset, const char* buf, size_t n, bool no_wait) {
  if (capacity_ == 0 || n > kMaxPiece) return;
  const uint64_t hash = Mix(id, offset);
  ShardOf(hash).Insert(id, offset, hash, buf, n, no_wait);
}

Cache::Stats Cache::GetStats() const {
  Stats s;
  s.capacity = capacity_;
  for (int i = 0; i < kShards; i++) shards_[i].AddStats(&s);
  return s;
}

}  // namespace oyster
