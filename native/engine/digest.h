// Replica digests: the bucket of a key and the hash of a key's newest record
// by which EngineSet::Digest summarises a replica (docs/FORMAT.md §11 defines
// both, so that another implementation computes the same digests), and
// DigestSlices, the plan that splits a scan of every key into slices small
// enough to resolve in memory.

#ifndef OYSTER_ENGINE_DIGEST_H_
#define OYSTER_ENGINE_DIGEST_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/engine.h"
#include "util/hash.h"

namespace oyster {

// Digests come in 2^bits buckets, bits in 0..kMaxDigestBits (2^16 digests
// are 512 KiB).
constexpr uint32_t kMaxDigestBits = 16;

// Keys one slice of a scan is planned to hold: about 20 MB of memory at
// 16-byte keys, and a hash table small enough to stay in the caches
// (measured on a million keys: 215 ms and +15 MB against 480 ms and +86 MB
// with one slice of a million), at the price of one more pass over the
// indexes per 250 000 keys.
constexpr uint64_t kDigestSliceKeys = 250000;

// The bucket of a key among 2^bits (bits <= kMaxDigestBits): the top `bits`
// bits of key_hash = KeyHash64(key, K); 0 when bits is 0.
inline uint32_t DigestBucket(uint64_t key_hash, uint32_t bits) {
  return bits == 0 ? 0 : static_cast<uint32_t>(key_hash >> (64 - bits));
}

// The hash of a key's newest record: KeyHash64 of its Engine::Snapshot
// entry, the kSnapshotEntryFixedSize + key_size bytes at `entry`
// ([u8 kind][u64 timestamp LE][u64 stamp LE][key]). A bucket's digest is the
// sum (mod 2^64) of the EntryHash of its keys: independent of the order in
// which they are found.
inline uint64_t EntryHash(const char* entry, size_t key_size) {
  return KeyHash64(entry, kSnapshotEntryFixedSize + key_size);
}

// DigestSlices splits the keys of some buckets into slices of about equal
// expected size, so that a scan resolves one slice at a time in bounded
// memory. The key hashes of the buckets asked for, taken in bucket order,
// are cut into count() equal ranges: a slice may cover several buckets or a
// part of one.
class DigestSlices {
 public:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  static constexpr uint32_t kMaxSlices = 1u << 16;

  // Plans slices of about `slice_keys` keys (at most kMaxSlices of them) for
  // a store of at most `records` keys. Requires bits <= kMaxDigestBits,
  // every bucket below 2^bits (duplicates allowed) and slice_keys >= 1.
  DigestSlices(uint32_t bits, const std::vector<uint32_t>& buckets, uint64_t records, uint64_t slice_keys);

  // 0 when no bucket was asked for, else at least 1.
  uint32_t count() const { return count_; }

  // The slice (0..count()-1) of the key whose KeyHash64 is key_hash, or
  // kNone when its bucket was not asked for.
  uint32_t SliceOf(uint64_t key_hash) const {
    const uint32_t rank = rank_[DigestBucket(key_hash, bits_)];
    if (rank == kNone) return kNone;
    // Where the key falls among the buckets asked for, in units of 2^-32 of
    // a bucket: below 2^48, so that the product with count_ fits 64 bits.
    const uint64_t position = (static_cast<uint64_t>(rank) << 32) | ((key_hash << bits_) >> 32);
    return static_cast<uint32_t>(position * count_ / span_);
  }

 private:
  const uint32_t bits_;
  std::vector<uint32_t> rank_;  // of each bucket among those asked for, or kNone
  uint64_t span_ = 0;           // buckets asked for, << 32
  uint32_t count_ = 0;
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_DIGEST_H_
