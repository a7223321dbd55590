// Scrub reads one closed blob of an engine and checks every record its index
// points at (the newest of each key in the blob; older records of a key in
// it are not checked) against its checksums — given the vdisk's EngineSet,
// only those a read of their key returns, since damage to the others loses
// nothing (a repaired record is one of them) — in steps a caller can throttle, as ZFS
// scrubs and Ceph deep-scrubs do: damage is found before a read meets it,
// also where reads never look (a tombstone is answered from the index). It
// only reports; a damaged record is repaired above, by writing a healthy
// replica's copy again at the same version, which wins the full tie.
//
// Scrubs run alongside reads, writes, a compaction and each other. Not
// thread-safe: one call at a time.

#ifndef OYSTER_ENGINE_SCRUB_H_
#define OYSTER_ENGINE_SCRUB_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/blob.h"
#include "engine/engine.h"
#include "engine/engine_set.h"
#include "engine/record_walker.h"
#include "engine/version.h"
#include "util/status.h"

namespace oyster {

// A record that failed its checks.
struct ScrubDamage {
  std::string key;          // key_size bytes
  Version version;          // of the index entry (what the record should hold)
  bool tombstone = false;   // the index entry is a tombstone's
  uint64_t offset = 0;      // of the record's header in the blob
  std::string message;      // what was found (a Corruption status's message)
};

struct ScrubStats {
  uint64_t blob_id = 0;
  uint64_t entries = 0;     // records the blob's index points at (newest of each key in it)
  uint64_t visited = 0;     // of those, passed so far (checked or superseded)
  uint64_t superseded = 0;  // of the visited, left unchecked: a read of the key returns another record
  uint64_t bytes_read = 0;  // from the blob
  uint64_t damaged = 0;     // of the visited, records that failed their checks
  bool index_repaired = false;  // the blob's index file was damaged and rebuilt from the blob
};

class Scrub {
 public:
  // Starts a scrub of blob `blob_id` of `engine`, one of the engines of
  // `vdisk` if that is not null: then a record is checked only while a read
  // of its key across the vdisk returns it (EngineSet::Locate, as a
  // compaction keeps a record). Returns OK and sets
  // *scrub on success; InvalidArgument if `engine` is not one of vdisk's or
  // the blob is not closed (it has no index file yet), NotFound if the
  // engine serves no such blob,
  // Closed if the engine is closed, or the error met reading the index.
  //
  // The index file is read whole here. A damaged index block is counted as
  // a read counts it and the index is rebuilt from the blob, as a read
  // rebuilds it; Corruption if that fails.
  //
  // The scrub holds the blob: a compaction replacing it meanwhile does not
  // disturb it, it goes on checking the file it began with.
  static Status Begin(const EngineSet* vdisk, std::shared_ptr<Engine> engine, uint64_t blob_id,
                      std::unique_ptr<Scrub>* scrub);
  static Status Begin(std::shared_ptr<Engine> engine, uint64_t blob_id, std::unique_ptr<Scrub>* scrub) {
    return Begin(nullptr, std::move(engine), blob_id, scrub);
  }

  Scrub(const Scrub&) = delete;
  Scrub& operator=(const Scrub&) = delete;

  // Checks further records in file order, stopping once about `budget`
  // bytes were read (at least one record; a superseded record passed counts
  // as RecordWalker::kSkippedCost bytes). The file is read in windows of
  // RecordWalker::kPieceSize bytes, so a step reads at most about budget +
  // one record + one window. Sets *done once every record was checked.
  //
  // A record whose header or value fails its checks is added to damaged()
  // and counted in the engine's corrupt reads (EngineStats::corrupt_reads),
  // and the scrub goes on with the next: that is not an error. Returns OK;
  // Closed if the engine was closed; or the error (IOError) that stopped the
  // read of a record. After an error the scrub cannot go on: later calls
  // return the same error (begin another scrub to try again).
  Status Step(uint64_t budget, bool* done);

  // Every damaged record found so far, in file order.
  const std::vector<ScrubDamage>& damaged() const { return damaged_; }
  // The damaged records found since the last call (all so far on the
  // first), for a caller that repairs as it goes.
  std::vector<ScrubDamage> TakeDamaged();

  ScrubStats stats() const;
  // Every record was checked.
  bool done() const { return error_.ok() && walker_->done(); }

 private:
  Scrub(const EngineSet* vdisk, std::shared_ptr<Engine> engine, std::unique_ptr<RecordWalker> walker);
  // Whether a read of `key` across the vdisk returns entry `e` of this blob
  // (always, without a vdisk). Locate's errors other than Corruption are returned.
  Status IsNewest(const char* key, const IndexEntry& e, bool* newest) const;
  void Damage(const char* key, const IndexEntry& e, const std::string& message);

  const std::unique_ptr<const EngineSet> vdisk_;  // null: every record is checked
  const std::shared_ptr<Engine> engine_;
  const std::unique_ptr<RecordWalker> walker_;  // holds the blob
  const size_t key_size_;
  std::vector<ScrubDamage> damaged_;
  size_t taken_ = 0;  // damaged_[0, taken_) were handed out by TakeDamaged
  uint64_t visited_ = 0;
  uint64_t superseded_ = 0;
  bool index_repaired_ = false;
  Status error_;  // non-OK: Step failed, and fails again with it
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_SCRUB_H_
