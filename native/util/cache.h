// Cache keeps recently read pieces of immutable files in memory (as LevelDB's
// block cache does), so that a piece read again costs a copy instead of a
// system call: the blocks of index files. One cache is shared by every
// engine of a process and holds at most `capacity` bytes, its bookkeeping
// included; the least recently used pieces go first.
//
// Pieces are keyed by a file id and an offset. A file gets its id once, from
// NewId, for the life of the object that reads it: bytes at an offset of such
// a file never change, so an entry never goes stale and nothing is ever
// invalidated; a file opened again gets a new id, and the entries of its
// predecessor age out. Callers put only verified bytes in, and verify what
// they take out as they verify what they read from a file.
//
// Thread-safe. The lock of a shard is held only to copy a piece in or out;
// with no_wait, a call that would have to wait for it answers as a miss, so
// that the event loop never waits for an engine thread.

#ifndef OYSTER_UTIL_CACHE_H_
#define OYSTER_UTIL_CACHE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace oyster {

class Cache {
 public:
  // Pieces larger than this are never kept: a large piece costs its copy
  // more than its system call, and would push out many small pieces.
  static constexpr size_t kMaxPiece = 64 * 1024;
  // What an entry costs beyond its bytes (its node and its table slot).
  static constexpr size_t kEntryOverhead = 64;

  // A cache of `capacity` bytes; 0 keeps nothing.
  explicit Cache(size_t capacity);
  ~Cache();

  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // An id no other file of this cache has had.
  uint64_t NewId() { return next_id_.fetch_add(1, std::memory_order_relaxed); }

  // Copies the n bytes kept for (id, offset) to buf and returns true when
  // such an entry exists with exactly n bytes; false otherwise, and with
  // no_wait also when another thread holds its shard.
  bool Lookup(uint64_t id, uint64_t offset, size_t n, char* buf, bool no_wait);

  // Keeps a copy of buf[0, n) for (id, offset), replacing what was kept
  // there, and evicts the least recently used entries of its shard beyond
  // its share of the capacity. Does nothing for pieces over kMaxPiece, for a
  // cache of capacity 0, and with no_wait when the shard is busy.
  void Insert(uint64_t id, uint64_t offset, const char* buf, size_t n, bool no_wait);

  struct Stats {
    uint64_t capacity = 0;
    uint64_t usage = 0;    // bytes charged: entries and their overhead
    uint64_t entries = 0;
    uint64_t hits = 0;     // lookups answered
    uint64_t misses = 0;   // lookups not answered (busy shards included)
  };
  Stats GetStats() const;

  size_t capacity() const { return capacity_; }

 private:
  class Shard;
  static constexpr int kShardBits = 4;
  static constexpr int kShards = 1 << kShardBits;

  Shard& ShardOf(uint64_t hash);

  const size_t capacity_;
  std::atomic<uint64_t> next_id_{1};
  std::unique_ptr<Shard[]> shards_;
};

// One file's view of a cache: its id, and nothing at all without a cache.
class FileCache {
 public:
  FileCache() = default;
  explicit FileCache(std::shared_ptr<Cache> cache)
      : cache_(std::move(cache)), id_(cache_ != nullptr ? cache_->NewId() : 0) {}

  bool Lookup(uint64_t offset, size_t n, char* buf, bool no_wait) const {
    return cache_ != nullptr && cache_->Lookup(id_, offset, n, buf, no_wait);
  }
  void Insert(uint64_t offset, const char* buf, size_t n, bool no_wait) const {
    if (cache_ != nullptr) cache_->Insert(id_, offset, buf, n, no_wait);
  }

 private:
  std::shared_ptr<Cache> cache_;
  uint64_t id_ = 0;
};

}  // namespace oyster

#endif  // OYSTER_UTIL_CACHE_H_
