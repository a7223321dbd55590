// Engine stores the records of one partition directory: append-only blob
// files, index files for closed blobs, crash recovery on open. Reads are
// thread-safe and may block, unless ReadOptions::no_wait; writes are queued
// and written in batches by one writer at a time on the executor, which also
// gives group commit.

#ifndef OYSTER_ENGINE_ENGINE_H_
#define OYSTER_ENGINE_ENGINE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/blob.h"
#include "engine/drop_behind.h"
#include "engine/options.h"
#include "engine/put_stream.h"
#include "engine/value_reader.h"
#include "engine/version.h"
#include "util/file_system.h"
#include "util/status.h"

namespace oyster {

class GarbageLedger;

// A put or a delete (tombstone), or the start of a streamed put. Owned by
// the caller; the engine calls Done exactly once, from one of its threads,
// and does not touch it afterwards.
class WriteRequest {
 public:
  virtual ~WriteRequest() = default;
  virtual void Done(const Status& s) = 0;

  const char* key = nullptr;  // key_size bytes
  Version version;
  const char* value = nullptr;
  uint64_t value_size = 0;
  bool tombstone = false;
  // A streamed put: no value here, value_size bytes to come. Before Done
  // reports success, `stream` receives the PutStream that takes them.
  bool streamed = false;
  std::unique_ptr<PutStream> stream;
};

struct GetResult {
  enum Kind { kAbsent, kFound, kDeleted };
  Kind kind = kAbsent;
  Version version;      // of the newest record (also set when it is corrupt)
  RecordBuffer record;  // kFound: the record; the value is a slice of it
};

struct LookupResult {
  GetResult::Kind kind = GetResult::kAbsent;
  Version version;
  uint64_t value_size = 0;  // kFound: bytes a Get would return

  bool tombstone() const { return kind == GetResult::kDeleted; }
};

// Where the newest record of a key is: a Get split in two (Locate, then
// Read), so that a caller comparing several engines reads only the winner.
struct RecordLocation {
  std::shared_ptr<Blob> blob;
  IndexEntry entry;
};

// How a read may proceed (as LevelDB's ReadOptions).
struct ReadOptions {
  // Answer from memory and the page cache only: WouldBlock instead of waiting
  // for the disk, for a lock a writer holds, or for an index repair, and
  // instead of reporting a damaged record (the read that follows reports and
  // counts it). The event loop reads this way and hands the reads that would
  // block to the pool.
  bool no_wait = false;
};

// What Open found and repaired, for logs and tests.
struct RecoveryReport {
  uint64_t blobs = 0;               // blob files in service after open
  uint64_t indexes_loaded = 0;      // closed blobs served by their existing index file
  uint64_t blobs_scanned = 0;       // blobs read record by record (no valid index)
  uint64_t indexes_rebuilt = 0;     // index files written during open
  uint64_t bytes_truncated = 0;     // torn or garbage tails cut off
  uint64_t corrupt_records = 0;     // records found with a failing checksum
  uint64_t skipped_bytes = 0;       // damaged regions inside blobs, stepped over
  uint64_t blobs_quarantined = 0;   // blobs with an unreadable header, moved to corrupted/
  uint64_t files_removed = 0;       // empty blobs, temporary and orphaned index files
  std::vector<std::string> events;  // one line per repair, for the log
};

// One blob of an engine, as Stats reports it.
struct BlobStats {
  uint64_t id = 0;
  uint64_t size = 0;                  // of the blob file
  uint64_t records = 0;               // every record, superseded ones and tombstones included
  bool closed = false;                // takes no more records and has its index file: may be compacted
  uint64_t garbage_records = 0;       // Blob::garbage_records
  uint64_t garbage_bytes = 0;
  uint64_t dead_tombstones = 0;       // Blob::dead_tombstones
  uint64_t dead_tombstone_bytes = 0;
  uint64_t live_tombstones = 0;       // Blob::live_tombstones
};

struct EngineStats {
  uint64_t blobs = 0;
  uint64_t records = 0;          // every record: superseded versions and tombstones included
  uint64_t active_blob_id = 0;   // 0 when there is no active blob
  bool has_active_blob = false;
  uint64_t disk_bytes = 0;       // blob and index files
  uint64_t index_memory = 0;     // in-memory indexes and fences
  uint64_t filter_memory = 0;    // bloom filters of closed blobs
  uint64_t blobs_in_memory = 0;  // blobs without an index file yet (active, or index pending)
  uint64_t corrupt_reads = 0;    // reads that met a checksum failure since open
  uint64_t index_repairs = 0;    // index files rebuilt at run time after a damaged block
  Version max_version;           // the largest version of any record stored
  uint64_t max_tick = 0;         // the largest tick of any record stored (a node's clock starts above it)
  std::string background_error;  // last failure of a background index build, if any
  std::string write_error;       // set when a failed write poisoned the engine
  uint64_t garbage_bytes = 0;    // sums of the blobs' garbage and dead tombstones
  uint64_t garbage_records = 0;
  uint64_t dead_tombstone_bytes = 0;
  uint64_t dead_tombstones = 0;
  uint64_t live_tombstones = 0;  // sum of the blobs' live tombstones
  // records - garbage_records - live_tombstones (0 if below): this
  // engine's share of the keys of its vdisk whose newest record is a value.
  // Summed over the engines of an EngineSet, the number of those keys,
  // exact when the blobs' counters are (Blob::live_tombstones).
  uint64_t live_keys = 0;
  std::vector<BlobStats> blob_stats;  // newest blob first
};

// Where recovery moves blob files whose header cannot be read.
constexpr const char* kCorruptedDir = "corrupted";

// Bytes of an entry of Engine::Snapshot besides the key.
constexpr size_t kSnapshotEntryFixedSize = 17;

// Appends the entry of Engine::Snapshot for `key` (key_size bytes) whose
// newest record `e` is.
void AppendSnapshotEntry(const char* key, size_t key_size, const IndexEntry& e, std::string* out);

class Engine : public std::enable_shared_from_this<Engine> {
 public:
  // Opens (creating the leaf directory if needed) and recovers `dir`.
  static Status Open(const EngineOptions& options, const std::string& dir,
                     std::shared_ptr<Engine>* engine, RecoveryReport* report);

  // Closes files without writing indexes, as a crash would; Close() is the
  // orderly way.
  ~Engine();

  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a put, a delete or the start of a streamed put; req->Done
  // reports the outcome. A streamed put's value may be up to
  // kMaxStreamedValueSize bytes; writes queued after it are not held up by it.
  void Write(WriteRequest* req);

  // The newest record of key across all blobs (by CompareRecords; a full
  // tie goes to the higher blob id). Corruption if that record fails its
  // checksum (result->version is still set).
  Status Get(const ReadOptions& options, const char* key, GetResult* result);
  Status Get(const char* key, GetResult* result) { return Get(ReadOptions(), key, result); }
  // Like Get, without reading the value.
  Status Lookup(const ReadOptions& options, const char* key, LookupResult* result);
  Status Lookup(const char* key, LookupResult* result) { return Lookup(ReadOptions(), key, result); }
  // Lookup that also tells where the record is, for Read.
  Status Locate(const ReadOptions& options, const char* key, LookupResult* result, RecordLocation* where);
  // Reads the record a Locate of `key` found (result kFound); as Get does.
  Status Read(const ReadOptions& options, const char* key, const RecordLocation& where, GetResult* result);
  // Opens a reader of the value of the record a Locate of `key` found
  // (result kFound) instead of reading it: the record's header is read and
  // checked as Read checks it, the value is left to *reader. Corruption,
  // counted as Read counts it, if the header fails its checks; with
  // options.no_wait, WouldBlock instead of that and of waiting for the disk.
  Status OpenValue(const ReadOptions& options, const char* key, const RecordLocation& where,
                   std::unique_ptr<ValueReader>* reader);

  // The newest record of every key stored, packed for the caller as repeated
  // [u8 kind (1 value, 2 tombstone)][u64 timestamp LE][u64 stamp LE][key]
  // (kSnapshotEntryFixedSize + key_size bytes each). A consistent view of the
  // blobs at the time of the call (for handing alien copies over to their
  // owners).
  Status Snapshot(std::string* out);
  // The blobs in service at the time of the call, newest (highest id) first:
  // the consistent view Snapshot scans, for scans of every entry across
  // engines (EngineSet::Digest). Closed once Close has begun.
  Status CurrentBlobs(std::vector<std::shared_ptr<Blob>>* blobs) const;

  // Seals the active blob and writes its index file; the next write starts a
  // new blob. Returns once the index is on disk — or, while streamed puts
  // into the blob are open, once it is certain to be written as they end.
  Status CloseActiveBlob();
  // Finishes queued writes, aborts open streamed puts, writes every missing
  // index file and releases the directory. Later calls fail with Closed.
  Status Close();

  // Makes every record written so far durable, whatever sync_writes says:
  // syncs the active blob and the sealed blobs whose index is still to be
  // written. A compaction calls it before it drops records older ones
  // supersede.
  Status SyncWritten();

  // From now on accounts the garbage the engine's writes make (Blob::
  // garbage_records) with `ledger` (not null), over the engines of the
  // vdisk, instead of the ledger it had. Open gives the engine a ledger over
  // itself alone; EngineSet's constructor one over the set's engines.
  void JoinLedger(std::shared_ptr<GarbageLedger> ledger);
  // The ledger that accounts the engine's writes: each write is accounted
  // just after it is acknowledged (GarbageLedger::WaitAccounted waits).
  std::shared_ptr<GarbageLedger> ledger() const;

  uint64_t RecordsCount() const;
  EngineStats Stats() const;
  const EngineOptions& options() const { return options_; }
  const std::string& dir() const { return dir_; }

 private:
  friend class Compaction;  // claims the engine, replaces a blob
  friend class GarbageLedger;  // looks keys up in the blobs served
  friend class PutStream;
  friend class Scrub;  // counts the damage it finds, repairs a damaged index as reads do
  friend class ValueReader;  // counts the corruption its reads meet

  struct BlobSet {
    std::vector<std::shared_ptr<Blob>> blobs;  // newest (highest id) first
  };

  Engine(const EngineOptions& options, std::string dir);

  Status Recover(RecoveryReport* report);
  // Refuses blobs the engine must not touch: another format, version or key size.
  Status CheckBlob(uint64_t id);
  // Rolls back or finishes the compactions a crash interrupted (their
  // "<id>.blob.new" and "<id>.index.new" files).
  Status RecoverCompactions(const std::vector<uint64_t>& blobs, const std::vector<uint64_t>& indexes,
                            RecoveryReport* report, bool* changed);
  Status RecoverBlob(uint64_t id, bool last, bool has_index, RecoveryReport* report,
                     std::vector<std::shared_ptr<Blob>>* blobs);
  Status Quarantine(const std::string& name, const std::string& why, RecoveryReport* report);

  std::shared_ptr<const BlobSet> Current() const;
  void InstallBlobSet(std::vector<std::shared_ptr<Blob>> blobs);
  Status FindNewest(const ReadOptions& options, const char* key, std::shared_ptr<Blob>* blob, IndexEntry* entry,
                    bool* found);
  // Rebuilds a closed blob's index from the blob; a no-op if another thread
  // did so since `seen_generation`.
  Status RepairIndex(const std::shared_ptr<Blob>& blob, uint64_t seen_generation);
  // Whether `blob` is served (in the current set).
  bool Serves(const std::shared_ptr<Blob>& blob) const;
  // Serves `replacement` (null: nothing) where `old` was served. False if
  // `old` is not served.
  bool ReplaceBlob(const std::shared_ptr<Blob>& old, std::shared_ptr<Blob> replacement);

  // ---- Writer side; everything below runs with write_mu_ held.
  void ScheduleWriter();
  void WriterTask();
  void DrainQueueLocked();
  void WriteBatchLocked(const std::vector<WriteRequest*>& batch);
  // Writes and publishes batch[from, to) into the active blob, announcing
  // it to `ledger` (GarbageLedger::Announce) just before it is published.
  Status AppendLocked(const std::vector<WriteRequest*>& batch, size_t from, size_t to, GarbageLedger* ledger);
  // Reserves the place of a streamed put in the active blob and writes it void.
  Status ReserveLocked(WriteRequest* req);
  Status CreateActiveBlobLocked();
  // Moves the active blob to the sealed state; its index is built in the
  // background unless `build_now`.
  Status SealActiveLocked(bool build_now);
  // Writes the index file of `blob` from `index` (its `records` records,
  // whose largest stamp is max_stamp).
  Status WriteIndexFile(const Blob& blob, uint64_t records, uint64_t max_stamp, const ActiveIndex& index,
                        std::unique_ptr<IndexReader>* reader);
  Status BuildIndex(const std::shared_ptr<Blob>& blob);
  void BackgroundBuild(const std::shared_ptr<Blob>& blob);
  void SetWriteError(const Status& s);
  // Acknowledged bytes of the active blob a power failure may take now:
  // those counted since the last sync began, and those syncs still under
  // way are to cover.
  uint64_t AtRisk() const { return dirty_bytes_.load() + syncing_bytes_.load(); }
  // A sync of the active blob begins: the bytes counted so far move to
  // syncing_bytes_, but for `unacknowledged` of them (the records the sync
  // is for, acknowledged only after it). Returns the bytes moved, which
  // the caller takes off syncing_bytes_ once the sync is over.
  uint64_t SyncBegins(uint64_t unacknowledged);

  // ---- For PutStream.
  // A streamed record of `bytes` in `blob`, all of it written, is about to
  // be acknowledged: counts it, and syncs the blob first when `sync`, when
  // that takes the acknowledged bytes at risk past the limit, or when `blob`
  // was sealed meanwhile (its own sync waits for its index build, which
  // starts only after its last stream ends). A failed sync disables writes
  // (StreamSyncFailed) and is returned.
  Status FinishStream(Blob* blob, uint64_t bytes, bool sync);
  // Syncs `blob` for a streamed put (the large values it covers leave the
  // page cache); a failure disables writes (StreamSyncFailed).
  Status SyncStreamed(Blob* blob);
  // Waits until the device has bytes [offset, offset + n) of `blob`, for a
  // streamed put (File::WriteBack; they leave the page cache as synced
  // ones do); a failure disables writes as a failed sync does.
  Status WriteBackStreamed(Blob* blob, uint64_t offset, uint64_t n);
  // A streamed put's fdatasync or write-back failed: the kernel may have
  // dropped dirty pages of records the writer acknowledged since the last
  // good sync, as after a failed sync of its own. Called without the
  // writer's lock (a stream holds its own, which the writer may take under
  // it); the writer adopts `s` as its write error before its next batch.
  void StreamSyncFailed(const Status& s);
  // The last stream on a sealed blob ended: its index can be built now.
  void IndexAfterStreams(const std::shared_ptr<Blob>& blob);


  const EngineOptions options_;
  const std::string dir_;
  FileSystem* const fs_;
  std::unique_ptr<DirLock> lock_;

  mutable std::mutex set_mu_;
  std::shared_ptr<const BlobSet> current_;

  std::mutex queue_mu_;
  std::deque<WriteRequest*> queue_;
  bool writer_scheduled_ = false;
  bool accepting_ = true;

  std::mutex write_mu_;
  std::shared_ptr<Blob> active_;
  uint64_t next_blob_id_ = 1;
  // Bytes of the active blob's acknowledged records written since the
  // last sync began; streams add theirs, as they finish, without the
  // writer's lock.
  std::atomic<uint64_t> dirty_bytes_{0};
  // Bytes of acknowledged records that syncs under way are to cover.
  std::atomic<uint64_t> syncing_bytes_{0};
  DropBehind drop_behind_;  // large values written, to leave the page cache once on the device
  std::atomic<bool> stream_sync_failed_{false};  // StreamSyncFailed was called; the status under build_mu_
  Status stream_sync_error_;
  Status write_error_;  // non-OK: every later write fails with it
  bool closed_ = false;
  std::vector<char> header_buf_;
  std::vector<IoSlice> iov_buf_;
  std::vector<char> blocks_buf_;
  std::vector<Blob::NewRecord> publish_buf_;
  // The keys publish_buf_ points at: copies, as the batch is accounted
  // after its requests are done with.
  std::vector<char> keys_buf_;
  std::vector<ActiveIndex::Displaced> displaced_buf_;

  mutable std::mutex ledger_mu_;
  std::shared_ptr<GarbageLedger> ledger_;

  // Index builds of sealed blobs running in the background, and the error
  // strings reported by Stats.
  mutable std::mutex build_mu_;
  std::condition_variable build_cv_;
  std::string background_error_;
  std::string write_error_text_;

  std::atomic<bool> shut_{false};  // Close has begun: no reads, no new background work
  std::atomic<uint64_t> active_id_{0};
  std::atomic<bool> has_active_{false};
  std::atomic<uint64_t> corrupt_reads_{0};
  std::atomic<uint64_t> index_repairs_{0};
  std::mutex repair_mu_;  // held by index repairs and by a compaction swapping a blob
  std::atomic<bool> compacting_{false};  // one compaction at a time (Compaction::Begin claims it)

  const std::shared_ptr<OpenStreams> streams_ = std::make_shared<OpenStreams>();
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_ENGINE_H_
