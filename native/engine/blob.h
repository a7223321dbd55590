// Blob is one blob file with the index that serves lookups in it. While the
// blob is written to (and until its index file exists) that is an exact
// ActiveIndex in memory; afterwards an IndexReader over the index file, which
// holds only a bloom filter and sparse fences in memory.

#ifndef OYSTER_ENGINE_BLOB_H_
#define OYSTER_ENGINE_BLOB_H_

#include <atomic>
#include <functional>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "engine/active_index.h"
#include "engine/format.h"
#include "engine/index_reader.h"
#include "engine/version.h"
#include "util/file_system.h"
#include "util/status.h"

namespace oyster {

// A record's bytes as read from disk; the value is a slice of `storage`.
// Reading into a RecordBuffer again reuses its storage when it is large enough.
struct RecordBuffer {
  std::unique_ptr<char[]> storage;
  size_t capacity = 0;  // bytes allocated at `storage`
  size_t value_offset = 0;
  size_t value_size = 0;

  const char* value() const { return storage.get() + value_offset; }
};

class Blob {
 public:
  // A blob of blob format `format` served from memory (new, or rebuilt by a
  // scan); max_version and max_stamp are those of its `records` records.
  Blob(uint64_t id, uint32_t format, std::unique_ptr<File> file, uint64_t size, std::unique_ptr<ActiveIndex> index,
       uint64_t records, const Version& max_version, uint64_t max_stamp);
  // A closed blob served by its index file.
  Blob(uint64_t id, uint32_t format, std::unique_ptr<File> file, uint64_t size, std::unique_ptr<IndexReader> reader);

  Blob(const Blob&) = delete;
  Blob& operator=(const Blob&) = delete;

  uint64_t id() const { return id_; }
  // The blob format its records are in (kBlobFormatVersion, or 1).
  uint32_t format() const { return format_; }
  File* file() const { return file_.get(); }
  uint64_t size() const { return size_.load(std::memory_order_acquire); }
  uint64_t records() const { return records_.load(std::memory_order_acquire); }
  // The largest version of any record in the blob. Its two halves are read
  // one after the other: only the active blob changes, and a lookup visits
  // that one first, so it never relies on a pair read during a Publish.
  Version max_version() const {
    return Version{max_ts_.load(std::memory_order_acquire), max_ts_stamp_.load(std::memory_order_acquire)};
  }
  // The largest stamp of any record (not necessarily that of max_version).
  uint64_t max_stamp() const { return max_stamp_.load(std::memory_order_acquire); }

  // Calls fn for the newest entry of every key in this blob (any order).
  Status ForEachEntry(const std::function<void(const char* key, const IndexEntry& e)>& fn) const;

  // Thread-safe lookup of the newest entry of key in this blob. With
  // no_wait, WouldBlock rather than waiting for a writer's lock or the disk.
  Status Find(const char* key, uint64_t key_hash, IndexEntry* e, bool* found, bool no_wait = false) const;
  // False when Find would certainly not find the key: the blob is indexed
  // and its bloom filter says so. Lock-free, to pass over many blobs
  // cheaply.
  bool MayContain(uint64_t key_hash) const {
    const IndexReader* r = filter_.load(std::memory_order_acquire);
    return r == nullptr || r->MayContain(key_hash);
  }
  // Reads the record an entry points at and verifies it belongs to `key`
  // and passes its checksum; Corruption otherwise. With no_wait, WouldBlock
  // when the record is not in the page cache.
  Status ReadRecord(const char* key, size_t key_size, const IndexEntry& e, RecordBuffer* out,
                    bool no_wait = false) const;
  // Checks the header of the record an entry points at, as read from the
  // file into `header` (RecordHeaderSize bytes): a valid header at e.offset
  // (docs/FORMAT.md §3.2) of `key`, with the entry's version and value
  // size; decoded into *h. Corruption otherwise.
  Status CheckRecordHeader(const char* key, size_t key_size, const IndexEntry& e, const char* header,
                           RecordHeader* h) const;
  // Corruption: `what` was found in this blob's record at `offset`.
  Status Damaged(const std::string& what, uint64_t offset) const;

  // ---- Writer side (the engine serializes these).
  struct NewRecord {
    const char* key;
    uint64_t key_hash;
    IndexEntry entry;
  };
  // Publishes records already written to the file; the blob now ends at
  // new_size. displaced[i] receives, under the lock lookups take, what
  // records[i] did to its key's entry in the blob (the entry it displaced,
  // or itself if it lost to it): for the garbage accounting
  // (GarbageLedger), which counts nothing here.
  void Publish(const std::vector<NewRecord>& records, uint64_t new_size, ActiveIndex::Displaced* displaced);
  // Space for a streamed put, written void: the blob now ends at new_size,
  // and one stream is open on it until EndStream.
  void Reserve(uint64_t new_size);
  // Publishes the record of a streamed put, whose space Reserve took; as
  // Publish does.
  void PublishStreamed(const NewRecord& record, ActiveIndex::Displaced* displaced);
  // A stream opened by Reserve has ended (published or left void). True
  // when it was the last one and an index build was refused meanwhile: the
  // caller builds the index now.
  bool EndStream();

  // True while lookups are served from memory (no index file yet).
  bool in_memory() const;
  // The opposite, without the lock: once true, no record is published any
  // more and max_version() is final (an in-memory blob's may be read torn
  // during a publish).
  bool indexed() const { return filter_.load(std::memory_order_acquire) != nullptr; }
  // The in-memory index; only valid while in_memory() and once no more records
  // are published (the blob is sealed).
  const ActiveIndex& sealed_index() const { return *active_; }
  // Switches lookups to the index file and frees the in-memory index.
  void AttachIndexReader(std::unique_ptr<IndexReader> reader);
  // Serves lookups from a rebuilt index file instead of a damaged one. The
  // reader replaced is kept until the blob goes: MayContain may be reading
  // its filter (repairs are rare).
  void ReplaceIndexReader(std::unique_ptr<IndexReader> reader);
  // Changes whenever the index serving lookups changes.
  uint64_t index_generation() const { return index_generation_.load(std::memory_order_acquire); }

  // Exactly one thread writes a sealed blob's index file, and only once no
  // stream is open on it (refused until then: EndStream tells when).
  bool ClaimIndexBuild();
  void ReleaseIndexBuild() { index_build_claimed_.store(false); }

  // ---- Garbage: records of this blob no read returns any more, because a
  // newer record of their key exists in the vdisk (superseded, or deleted
  // under a tombstone), or because they are void. Counted as writes arrive,
  // each against the older records of its key across the vdisk
  // (GarbageLedger), and set anew by a recount (EngineSet::CountGarbage).
  // An estimate, to choose what to compact: a compaction decides record by
  // record.
  uint64_t garbage_records() const { return garbage_records_.load(std::memory_order_relaxed); }
  uint64_t garbage_bytes() const { return garbage_bytes_.load(std::memory_order_relaxed); }
  void AddGarbage(uint64_t records, uint64_t bytes);
  void SetGarbage(uint64_t records, uint64_t bytes);
  // Tombstones that hide nothing any more and are past their grace period,
  // as of the last recount: what a compaction would drop besides garbage.
  uint64_t dead_tombstones() const { return dead_tombstones_.load(std::memory_order_relaxed); }
  uint64_t dead_tombstone_bytes() const { return dead_tombstone_bytes_.load(std::memory_order_relaxed); }
  void SetDeadTombstones(uint64_t records, uint64_t bytes);
  // Live tombstones: records of this blob that are the newest of their key
  // across the vdisk and are tombstones. Every key of the vdisk has exactly
  // one record that is not garbage, so records() - garbage_records() -
  // live_tombstones(), summed over the vdisk's blobs, is the number of keys
  // whose newest record is a value. Kept as garbage is (GarbageLedger, a
  // recount, a compaction for the blob it writes), and as inexact in the
  // same cases; a removal from a blob at 0 is lost rather than wrapping.
  uint64_t live_tombstones() const { return live_tombstones_.load(std::memory_order_relaxed); }
  void AddLiveTombstone();
  void RemoveLiveTombstone();
  void SetLiveTombstones(uint64_t records);
  // The bytes a record of this blob with entry `e` takes.
  uint64_t RecordBytes(const IndexEntry& e) const;

  size_t IndexMemoryUsage() const;
  size_t FilterMemoryUsage() const;
  uint64_t IndexFileSize() const;

 private:
  const uint64_t id_;
  const uint32_t format_;
  const size_t key_size_;
  const std::unique_ptr<File> file_;
  std::atomic<uint64_t> size_;
  std::atomic<uint64_t> records_;
  std::atomic<uint64_t> max_ts_;        // max_version().timestamp
  std::atomic<uint64_t> max_ts_stamp_;  // max_version().stamp
  std::atomic<uint64_t> max_stamp_;
  std::atomic<uint64_t> index_generation_{0};
  std::atomic<bool> index_build_claimed_{false};
  std::atomic<uint64_t> garbage_records_{0};
  std::atomic<uint64_t> garbage_bytes_{0};
  std::atomic<uint64_t> dead_tombstones_{0};
  std::atomic<uint64_t> dead_tombstone_bytes_{0};
  std::atomic<uint64_t> live_tombstones_{0};

  std::mutex streams_mu_;  // guards the two below, and claims against them
  int open_streams_ = 0;
  bool build_refused_ = false;

  void Insert(const NewRecord* records, size_t n, ActiveIndex::Displaced* displaced);

  mutable std::shared_mutex mu_;  // guards active_, reader_ and retired_
  std::unique_ptr<ActiveIndex> active_;
  std::unique_ptr<IndexReader> reader_;
  std::vector<std::unique_ptr<IndexReader>> retired_;  // replaced by ReplaceIndexReader
  std::atomic<const IndexReader*> filter_{nullptr};  // reader_ once indexed, read without the lock
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_BLOB_H_
