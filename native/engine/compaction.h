// Compaction rewrites one closed blob of an engine without the records no
// read can return any more, and swaps the new blob in while reads and
// writes go on:
//  - records superseded by a newer record of their key anywhere in the
//    vdisk (the engines of an EngineSet), tombstones included, and records
//    the blob's own index no longer points at, are dropped;
//  - a tombstone that is the newest record of its key is dropped only when
//    nothing older of the key is left anywhere in the vdisk and it was
//    written at least the grace period ago (other replicas and alien copies
//    elsewhere may still hold an older value, which anti-entropy or hand-off
//    would otherwise bring back; docs/OPERATIONS.md "Compaction");
//  - every other record is copied, checked against its checksums on the way;
//    one whose value fails them is copied as it is, still failing them.
//
// The new blob has the old one's id. It is written as "<id>.blob.new" with
// its index "<id>.index.new", both synced; then everything written to the
// vdisk so far is synced (the records that supersede the dropped ones must
// outlive them); then renaming "<id>.blob.new" over the blob commits the
// swap and "<id>.index.new" becomes the index. A crash before that rename
// leaves the old blob (recovery removes the new files), after it the new
// one (recovery puts the new index in place). Readers that hold the old
// blob go on reading it; its file is freed when the last lets go.
//
// One compaction per engine at a time. Not thread-safe: one call at a time.

#ifndef OYSTER_ENGINE_COMPACTION_H_
#define OYSTER_ENGINE_COMPACTION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/active_index.h"
#include "engine/engine.h"
#include "engine/engine_set.h"
#include "engine/record_walker.h"
#include "engine/tombstone_policy.h"
#include "util/status.h"

namespace oyster {

struct CompactionOptions {
  TombstonePolicy tombstones;
};

struct CompactionStats {
  uint64_t blob_id = 0;
  uint64_t source_size = 0;        // bytes of the blob compacted
  uint64_t source_records = 0;     // its records, superseded ones included
  uint64_t entries = 0;            // records its index points at (newest of each key in it)
  uint64_t visited = 0;            // of those, decided so far
  uint64_t kept_records = 0;       // copied
  uint64_t dropped_records = 0;    // of the entries, dropped (tombstones included)
  uint64_t dropped_tombstones = 0; // tombstones past their grace with nothing left to hide
  uint64_t damaged_kept = 0;       // copied although their value fails its checksums
  uint64_t headers_rebuilt = 0;    // records whose damaged header was written anew from the index entry
  uint64_t bytes_read = 0;         // from the old blob
  uint64_t bytes_written = 0;      // to the new blob (so far)
  bool installed = false;
  uint64_t new_size = 0;           // of the new blob once installed (0: the blob was removed)
};

class Compaction {
 public:
  // Starts compacting blob `blob_id` of `engine`, which must be one of
  // `set`'s engines: NotFound if the engine serves no such blob,
  // InvalidArgument if it is not closed (no index file yet), Busy if a
  // compaction of the engine is under way, Closed if the engine is.
  static Status Begin(const EngineSet& set, std::shared_ptr<Engine> engine, uint64_t blob_id,
                      const CompactionOptions& options, std::unique_ptr<Compaction>* compaction);

  // Removes the new files unless installed; releases the engine.
  ~Compaction();

  Compaction(const Compaction&) = delete;
  Compaction& operator=(const Compaction&) = delete;

  // Decides on and copies further records, stopping once about `budget`
  // bytes were read and written (at least one record; a record dropped
  // counts as RecordWalker::kSkippedCost bytes). *done once every
  // record was decided. A record kept whose header is damaged gets a new one
  // from its index entry (CompactionStats::headers_rebuilt); its value keeps
  // failing its checks unless its block checksums vouch for it. Corruption
  // if a record's body lies past the end of the blob (the compaction cannot
  // go on; the blob stays as it is).
  Status Step(uint64_t budget, bool* done);

  // After Step reported done: swaps the new blob in (see above), or removes
  // the blob when nothing was kept. Closed if the engine was closed
  // meanwhile; the old blob stays in service on any failure.
  Status Install();

  const CompactionStats& stats() const { return stats_; }

 private:
  Compaction(const EngineSet& set, std::shared_ptr<Engine> engine, std::shared_ptr<Blob> blob,
             const CompactionOptions& options);
  Status CreateOutput();
  // Whether the newest record of `key` (entry e, in the blob compacted) is
  // a tombstone to drop.
  bool TombstoneExpired(const char* key, const IndexEntry& e) const;
  Status Copy(const IndexEntry& e);
  Status Write(const char* data, size_t n);
  Status Flush();
  Status InstallLocked();

  const EngineSet set_;
  const std::shared_ptr<Engine> engine_;
  const std::shared_ptr<Blob> source_;
  const CompactionOptions options_;
  const size_t key_size_;
  FileSystem* const fs_;
  const std::string blob_path_, index_path_, new_blob_path_, new_index_path_;
  std::unique_ptr<RecordWalker> walker_;
  std::unique_ptr<File> out_;
  std::vector<char> buf_;   // bytes not yet written, from out_flushed_ on
  uint64_t out_flushed_ = 0;
  uint64_t out_size_ = 0;   // of the new blob, buffered bytes included
  ActiveIndex index_;       // of the new blob
  uint64_t max_stamp_ = 0;
  uint64_t kept_tombstones_ = 0;  // copied into the new blob: its live tombstones
  bool created_ = false;
  CompactionStats stats_;
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_COMPACTION_H_
