// Which written bytes the page cache may let go of once they are on the
// device (synced, or written back by a stream as it goes).
//
// A blob store writes its large values far more often than it reads them
// back soon after, and caching them costs more than the memory: an
// append-only blob takes new page-cache pages for every write, and on Linux
// allocating those costs a write more CPU than copying into them (most of
// all in a virtual machine, where a page new to the guest is first backed
// by the host). So once a sync, or a stream's write-back, covers the value
// of a record of at least kMinValueSize bytes, the engine tells the kernel
// it may free the value's pages (File::DropCache), and the next writes take
// them again. Smaller records stay cached: the page cache is what serves
// their reads. So do the newest `keep_bytes` of the large values on the
// device in the blob being written:
// a value is often read soon after it was written, and pages written stay
// in large folios, which are cheaper to read and to send than the small
// ones a random read brings back from the disk.
//
// Thread-safe: the engine's writer and streamed puts write and sync the
// active blob beside each other.

#ifndef OYSTER_ENGINE_DROP_BEHIND_H_
#define OYSTER_ENGINE_DROP_BEHIND_H_

#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "util/file_system.h"

namespace oyster {

class DropBehind {
 public:
  explicit DropBehind(uint64_t keep_bytes) : keep_bytes_(keep_bytes) {}

  // Values this large leave the page cache once durable.
  static constexpr uint64_t kMinValueSize = 256 * 1024;
  // At most this many ranges wait for a sync; past it the oldest stay cached.
  static constexpr size_t kMaxPending = 1024;

  // Whether a value of this many bytes leaves the cache once durable.
  static bool Applies(uint64_t value_size) { return value_size >= kMinValueSize; }

  // Notes that [offset, offset + n) of blob `blob_id`, bytes of a value
  // that Applies to, was just written.
  void Written(uint64_t blob_id, uint64_t offset, uint64_t n);
  // Syncs `file`, the file of blob `blob_id`, and returns what the sync
  // returned. Once it succeeded, the ranges of that blob written before it
  // began are synced: the oldest synced ranges of the blob leave the page
  // cache until at most keep_bytes of them stay. Ranges of other blobs,
  // written or synced before, are forgotten (a blob is synced as it is
  // sealed; its last values stay cached).
  Status Sync(uint64_t blob_id, File* file);
  // Writes bytes [offset, offset + n) of `file`, the file of blob
  // `blob_id`, back to the device (File::WriteBack) and returns what that
  // returned. Once it succeeded, the ranges of that blob within them are
  // clean and leave the page cache as synced ones do; nothing is durable.
  Status WriteBack(uint64_t blob_id, File* file, uint64_t offset, uint64_t n);

 private:
  struct Range {
    uint64_t seq;
    uint64_t blob_id;
    uint64_t offset;
    uint64_t n;
  };
  const uint64_t keep_bytes_;
  std::mutex mu_;
  uint64_t next_seq_ = 0;
  // Ranges of blob_id now clean join clean_ (forgetting those of another
  // blob); the oldest beyond keep_bytes_ leave it for *drop.
  void CleanLocked(uint64_t blob_id, const std::vector<Range>& clean, std::vector<Range>* drop);

  std::vector<Range> pending_;  // in the order written (increasing seq)
  std::deque<Range> clean_;     // of one blob, synced or written back, oldest first: still cached
  uint64_t clean_bytes_ = 0;
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_DROP_BEHIND_H_
