// Version is a write's place in the order of the writes of one key: bob's
// timestamp (seconds since the epoch) followed by a stamp of Oyster's own,
// (tick << 12) | node, where tick is the writing coordinator's hybrid logical
// clock in microseconds and node its node id. Writes that carry no stamp
// (from bob peers, and every record of a format-1 blob) have stamp 0 and so
// lose every tie against a write an Oyster node stamped in the same second.
//
// CompareRecords is the one rule by which every level (a blob's index, the
// blobs of an engine, the engines of a vdisk) chooses between two records of
// a key; src/model/version.ts states the same rule for TypeScript, and both
// are tested against test/fixtures/version-order.txt.

#ifndef OYSTER_ENGINE_VERSION_H_
#define OYSTER_ENGINE_VERSION_H_

#include <cstdint>
#include <string>

namespace oyster {

constexpr int kStampNodeBits = 12;
constexpr uint64_t kMaxNodeId = (1ull << kStampNodeBits) - 1;  // 4095
constexpr uint64_t kMaxTick = (1ull << (64 - kStampNodeBits)) - 1;  // 2^52 - 1

struct Version {
  uint64_t timestamp = 0;  // bob's: seconds since the epoch
  uint64_t stamp = 0;      // (tick << 12) | node; 0 when the write carries none

  // Requires tick <= kMaxTick and node <= kMaxNodeId.
  static Version Of(uint64_t timestamp, uint64_t tick, uint32_t node) {
    return Version{timestamp, MakeStamp(tick, node)};
  }
  static uint64_t MakeStamp(uint64_t tick, uint32_t node) { return (tick << kStampNodeBits) | node; }

  uint64_t tick() const { return stamp >> kStampNodeBits; }
  uint32_t node() const { return static_cast<uint32_t>(stamp & kMaxNodeId); }

  // "1700000000.1700000000123456@3" (timestamp.tick@node), as
  // src/model/version.ts formatVersion writes it: for messages.
  std::string ToString() const;
};

// -1, 0 or 1 as a is older than, the same as, or newer than b: by timestamp,
// then by stamp (that is, tick, then node).
inline int CompareVersions(const Version& a, const Version& b) {
  if (a.timestamp != b.timestamp) return a.timestamp < b.timestamp ? -1 : 1;
  if (a.stamp != b.stamp) return a.stamp < b.stamp ? -1 : 1;
  return 0;
}

// -1, 0 or 1 as record a is older than, as new as, or newer than record b of
// the same key. The later version wins; of two records with the same version
// a tombstone wins (a delete is never undone by a copy of the value it
// deleted). 0 means the same write stored twice: the caller decides (within
// an engine the later record wins, among engines the earlier engine).
inline int CompareRecords(const Version& a, bool a_tombstone, const Version& b, bool b_tombstone) {
  int c = CompareVersions(a, b);
  if (c != 0 || a_tombstone == b_tombstone) return c;
  return a_tombstone ? 1 : -1;
}

}  // namespace oyster

#endif  // OYSTER_ENGINE_VERSION_H_
