// TombstonePolicy says when a tombstone that is the newest record of its
// key may be dropped: compaction drops it, and the garbage count counts it
// as reclaimable, only once nothing older of the key is left in the vdisk
// (checked by the caller) and the grace period has passed since it was
// written. Other replicas, and alien copies on other nodes, may still hold
// an older value for as long as they are out of reach; anti-entropy and
// hand-off would bring that value back if the tombstone were gone
// (docs/OPERATIONS.md, "Compaction").

#ifndef OYSTER_ENGINE_TOMBSTONE_POLICY_H_
#define OYSTER_ENGINE_TOMBSTONE_POLICY_H_

#include <cstdint>
#include <ctime>

#include "engine/version.h"

namespace oyster {

struct TombstonePolicy {
  // A tombstone is kept at least this long after it was written.
  uint64_t grace_seconds = 10 * 24 * 3600;
  // False keeps every tombstone (while older records of the vdisk may still
  // arrive from elsewhere on this node, such as alien copies).
  bool drop = true;
  // Seconds since the epoch to measure the grace period from; 0: now.
  uint64_t now_seconds = 0;

  // When a record was written, in seconds since the epoch, as far as its
  // version tells: by the coordinator's clock (the stamp's tick, in
  // microseconds) if stamped, else by its timestamp.
  static uint64_t WrittenAt(const Version& v) { return v.stamp != 0 ? v.tick() / 1000000 : v.timestamp; }

  // Whether a tombstone of version v is past its grace (and dropping is allowed).
  bool Expired(const Version& v) const {
    if (!drop) return false;
    const uint64_t now = now_seconds != 0 ? now_seconds : static_cast<uint64_t>(std::time(nullptr));
    const uint64_t written = WrittenAt(v);
    return written <= now && now - written >= grace_seconds;
  }
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_TOMBSTONE_POLICY_H_
