#include "engine/engine.h"

#include <errno.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "engine/blob_scanner.h"
#include "engine/format.h"
#include "engine/garbage_ledger.h"
#include "engine/index_builder.h"
#include "util/coding.h"
#include "util/hash.h"

namespace oyster {
namespace {

// A batch is written with one pwritev; these bound its size.
constexpr size_t kMaxBatchRecords = 512;
constexpr uint64_t kMaxBatchBytes = 8 << 20;
// Batches one writer task writes before yielding its thread to other work.
constexpr int kBatchesPerTask = 4;

// How the engine stores a put's value: with block checksums above one block.
uint8_t ValueFlags(const WriteRequest* r) {
  if (r->tombstone) return kFlagTombstone;
  return ValueHasBlocks(r->value_size) ? kFlagBlocks : 0;
}

// The record's whole size in its blob (a streamed put's included).
uint64_t RecordBytes(const WriteRequest* r, size_t key_size) {
  return RecordHeaderSize(kBlobFormatVersion, key_size) + (r->tombstone ? 0 : RecordBodySize(ValueFlags(r), r->value_size));
}

// What writing the request takes now: a streamed put only its void header.
uint64_t BatchBytes(const WriteRequest* r, size_t key_size) {
  return r->streamed ? RecordHeaderSize(kBlobFormatVersion, key_size) : RecordBytes(r, key_size);
}

// The records published into `blob`, for the ledger.
GarbageLedger::Batch LedgerBatch(const Engine* engine, Blob* blob, const std::vector<Blob::NewRecord>& records,
                                 const std::vector<ActiveIndex::Displaced>& displaced) {
  GarbageLedger::Batch b;
  b.engine = engine;
  b.blob = blob;
  b.records = records.data();
  b.displaced = displaced.data();
  b.n = records.size();
  return b;
}

}  // namespace

Engine::Engine(const EngineOptions& options, std::string dir)
    : options_(options),
      dir_(std::move(dir)),
      fs_(options.fs ? options.fs : FileSystem::Default()),
      current_(std::make_shared<BlobSet>()),
      drop_behind_(options.cached_large_value_bytes) {}

// Streams cannot write into files nobody serves any more.
Engine::~Engine() { streams_->AbandonAll(); }

Status Engine::Open(const EngineOptions& options, const std::string& dir,
                    std::shared_ptr<Engine>* engine, RecoveryReport* report) {
  *report = RecoveryReport();
  Status s = options.Validate();
  if (!s.ok()) return s;
  std::shared_ptr<Engine> e(new Engine(options, dir));
  // Its own vdisk until an EngineSet makes it part of one.
  e->JoinLedger(std::make_shared<GarbageLedger>(std::vector<std::weak_ptr<Engine>>{e}));
  s = e->fs_->CreateDir(dir);
  if (s.ok()) s = e->fs_->SyncDir(ParentDir(dir));
  if (s.ok()) s = e->fs_->LockDir(dir, &e->lock_);
  if (s.ok()) s = e->Recover(report);
  if (!s.ok()) return s;
  *engine = std::move(e);
  return Status::OK();
}

// ---------------------------------------------------------------- recovery

namespace {

// Id of a file name as written by Quarantine: "<prefix>.<id>.blob" with an
// optional ".<k>" appended to avoid overwriting an earlier file.
bool QuarantinedId(std::string name, const std::string& prefix, uint64_t* id) {
  size_t dot = name.rfind('.');
  if (dot != std::string::npos && dot + 1 < name.size() &&
      name.find_first_not_of("0123456789", dot + 1) == std::string::npos && name.compare(dot, 5, ".blob") != 0) {
    name.resize(dot);
  }
  return ParseFileName(name, prefix, id) == FileKind::kBlob;
}

}  // namespace

Status Engine::Recover(RecoveryReport* report) {
  std::vector<std::string> names;
  Status s = fs_->ListDir(dir_, &names);
  if (!s.ok()) return s;
  struct Files {
    bool blob = false;
    bool index = false;
  };
  std::map<uint64_t, Files> files;
  std::vector<std::string> temp_indexes;
  std::vector<uint64_t> compacted_blobs, compacted_indexes;
  uint64_t max_id = 0;
  for (const std::string& name : names) {
    uint64_t id = 0;
    switch (ParseFileName(name, options_.blob_file_prefix, &id)) {
      case FileKind::kBlob: files[id].blob = true; break;
      case FileKind::kIndex: files[id].index = true; break;
      case FileKind::kTempIndex: temp_indexes.push_back(name); break;
      case FileKind::kCompactedBlob: compacted_blobs.push_back(id); break;
      case FileKind::kCompactedIndex: compacted_indexes.push_back(id); break;
      case FileKind::kOther:
        if (name == kCorruptedDir) {
          std::vector<std::string> quarantined;
          s = fs_->ListDir(JoinPath(dir_, name), &quarantined);
          for (const std::string& q : quarantined) {
            if (QuarantinedId(q, options_.blob_file_prefix, &id)) max_id = std::max(max_id, id);
          }
        }
        continue;
    }
    max_id = std::max(max_id, id);
  }
  // Ids are never reused, not even those of removed or quarantined blobs, so
  // no stale file can ever describe a new blob.
  next_blob_id_ = max_id + 1;

  // Check every blob before repairing anything: a partition the engine must
  // not touch (another format or key size) is refused with nothing changed.
  for (const auto& [id, f] : files) {
    if (!f.blob) continue;
    s = CheckBlob(id);
    if (!s.ok()) return s;
  }

  bool changed = false;
  for (const std::string& name : temp_indexes) {
    // An index build interrupted by a crash; never renamed into place.
    s = fs_->Remove(JoinPath(dir_, name));
    if (!s.ok()) return s;
    report->files_removed++;
    report->events.push_back("removed unfinished index file " + name);
    changed = true;
  }
  s = RecoverCompactions(compacted_blobs, compacted_indexes, report, &changed);
  if (!s.ok()) return s;
  for (uint64_t id : compacted_indexes) {
    if (std::find(compacted_blobs.begin(), compacted_blobs.end(), id) == compacted_blobs.end()) {
      files[id].index = true;
    }
  }
  std::vector<uint64_t> ids;
  for (const auto& [id, f] : files) {
    if (f.blob) {
      ids.push_back(id);
    } else {
      s = fs_->Remove(JoinPath(dir_, IndexFileName(options_.blob_file_prefix, id)));
      if (!s.ok()) return s;
      report->files_removed++;
      report->events.push_back("removed index file of missing blob " + std::to_string(id));
      changed = true;
    }
  }
  std::vector<std::shared_ptr<Blob>> blobs;
  for (size_t i = 0; i < ids.size(); i++) {
    size_t before = report->files_removed + report->blobs_quarantined;
    s = RecoverBlob(ids[i], i + 1 == ids.size(), files[ids[i]].index, report, &blobs);
    if (!s.ok()) return s;
    if (report->files_removed + report->blobs_quarantined != before) changed = true;
  }
  if (changed) {
    s = fs_->SyncDir(dir_);
    if (!s.ok()) return s;
  }
  std::reverse(blobs.begin(), blobs.end());
  report->blobs = blobs.size();
  InstallBlobSet(std::move(blobs));
  if (active_) active_id_.store(active_->id());
  has_active_.store(active_ != nullptr);
  return Status::OK();
}

Status Engine::RecoverCompactions(const std::vector<uint64_t>& blobs, const std::vector<uint64_t>& indexes,
                                  RecoveryReport* report, bool* changed) {
  const std::string& prefix = options_.blob_file_prefix;
  // A new blob still under its temporary name was never swapped in: the
  // compaction is rolled back, its index (if it got that far) with it.
  for (uint64_t id : blobs) {
    Status s = fs_->Remove(JoinPath(dir_, CompactedBlobFileName(prefix, id)));
    if (!s.ok()) return s;
    report->files_removed++;
    if (std::find(indexes.begin(), indexes.end(), id) != indexes.end()) {
      s = fs_->Remove(JoinPath(dir_, CompactedIndexFileName(prefix, id)));
      if (!s.ok()) return s;
      report->files_removed++;
    }
    report->events.push_back("rolled back an unfinished compaction of blob " + std::to_string(id));
    *changed = true;
  }
  // A new index alone belongs to a blob that was swapped in (Compaction::
  // Install renames the blob first): it replaces the old blob's index. Should
  // it not describe the blob after all, the blob's index is rebuilt as any
  // unusable one.
  for (uint64_t id : indexes) {
    if (std::find(blobs.begin(), blobs.end(), id) != blobs.end()) continue;
    const std::string from = JoinPath(dir_, CompactedIndexFileName(prefix, id));
    Status s = fs_->Rename(from, JoinPath(dir_, IndexFileName(prefix, id)));
    if (!s.ok()) return s;
    report->events.push_back("finished the compaction of blob " + std::to_string(id) + ": its new index put in place");
    *changed = true;
  }
  return Status::OK();
}

Status Engine::CheckBlob(uint64_t id) {
  const std::string path = JoinPath(dir_, BlobFileName(options_.blob_file_prefix, id));
  std::unique_ptr<File> file;
  Status s = fs_->OpenFile(path, false, &file);
  if (!s.ok()) return s;
  char hbuf[kBlobHeaderSize];
  size_t n = 0;
  s = file->Read(0, kBlobHeaderSize, hbuf, &n);
  if (!s.ok()) return s;
  if (n >= 8 && DecodeFixed64(hbuf) == kPearlBlobMagic) {
    return Status::NotSupported(path + " is a pearl (bob) blob file; Oyster stores its own format and cannot open it");
  }
  if (n < kBlobHeaderSize) return Status::OK();  // removed during recovery: it never held a record
  BlobHeader header;
  s = DecodeBlobHeader(hbuf, &header);
  if (s.code() == Status::kNotSupported) return Status::NotSupported(path + ": " + s.message());
  if (!s.ok()) return Status::OK();  // quarantined during recovery
  if (header.key_size != options_.key_size) {
    return Status::InvalidArgument(path + " holds " + std::to_string(header.key_size) +
                                   "-byte keys; the engine is configured for " + std::to_string(options_.key_size));
  }
  return Status::OK();
}

Status Engine::RecoverBlob(uint64_t id, bool last, bool has_index, RecoveryReport* report,
                           std::vector<std::shared_ptr<Blob>>* blobs) {
  const std::string& prefix = options_.blob_file_prefix;
  const std::string name = BlobFileName(prefix, id);
  const std::string path = JoinPath(dir_, name);
  const std::string index_path = JoinPath(dir_, IndexFileName(prefix, id));
  std::unique_ptr<File> file;
  Status s = fs_->OpenFile(path, false, &file);
  if (!s.ok()) return s;
  uint64_t size = 0;
  s = file->Size(&size);
  if (!s.ok()) return s;

  if (size < kBlobHeaderSize) {
    // A blob's header is synced before its first record is written, so a
    // blob shorter than a header never held a record.
    file.reset();
    s = fs_->Remove(path);
    if (s.ok() && has_index) s = fs_->Remove(index_path);
    if (!s.ok()) return s;
    report->files_removed += has_index ? 2 : 1;
    report->events.push_back("removed " + name + ": shorter than a blob header (" + std::to_string(size) +
                             " bytes), it never held a record");
    return Status::OK();
  }
  char hbuf[kBlobHeaderSize];
  size_t n = 0;
  s = file->Read(0, kBlobHeaderSize, hbuf, &n);
  if (!s.ok()) return s;
  BlobHeader header;
  s = DecodeBlobHeader(hbuf, &header);  // version and key size were checked by CheckBlob
  if (s.ok() && header.blob_id != id) s = Status::Corruption("header names blob " + std::to_string(header.blob_id));
  if (!s.ok()) {
    file.reset();
    if (has_index) {
      s = fs_->Remove(index_path);
      if (!s.ok()) return s;
      report->files_removed++;
    }
    return Quarantine(name, s.message(), report);
  }

  const uint32_t format = header.version;
  if (has_index) {
    std::unique_ptr<File> index_file;
    s = fs_->OpenFile(index_path, false, &index_file);
    std::unique_ptr<IndexReader> reader;
    if (s.ok()) s = IndexReader::Open(std::move(index_file), options_.key_size, id, size, &reader, options_.cache);
    if (s.ok()) {
      blobs->push_back(std::make_shared<Blob>(id, format, std::move(file), size, std::move(reader)));
      report->indexes_loaded++;
      return Status::OK();
    }
    if (!s.IsCorruption()) return s;
    report->events.push_back("index of " + name + " is unusable (" + s.message() + "); rebuilding it");
  }

  auto index = std::make_unique<ActiveIndex>(options_.key_size);
  Version max_version;
  uint64_t max_stamp = 0;
  ScanResult scan;
  s = ScanBlob(*file, format, kBlobHeaderSize, size, options_.key_size,
               [&](const char* key, const IndexEntry& e, bool) {
                 index->Insert(key, KeyHash64(key, options_.key_size), e);
                 if (CompareVersions(e.version, max_version) > 0) max_version = e.version;
                 max_stamp = std::max(max_stamp, e.version.stamp);
               },
               &scan);
  if (!s.ok()) return s;
  report->blobs_scanned++;
  report->corrupt_records += scan.corrupt_records;
  report->skipped_bytes += scan.skipped_bytes;
  if (scan.corrupt_records > 0) {
    report->events.push_back(name + ": " + std::to_string(scan.corrupt_records) +
                             " record(s) fail their checksum; reads of them report corruption");
  }
  if (scan.skipped_regions > 0) {
    report->events.push_back(name + ": stepped over " + std::to_string(scan.skipped_regions) +
                             " damaged region(s), " + std::to_string(scan.skipped_bytes) + " bytes");
  }
  if (scan.valid_end < size) {
    s = file->Truncate(scan.valid_end);
    if (!s.ok()) return s;
    report->bytes_truncated += size - scan.valid_end;
    report->events.push_back(name + ": cut a torn tail of " + std::to_string(size - scan.valid_end) +
                             " bytes at offset " + std::to_string(scan.valid_end));
  }
  // The blob that was being written continues, unless it is of an older
  // format: records are only ever appended in the current one.
  const bool resume = last && !has_index && format == kBlobFormatVersion;
  if (scan.records == 0 && !resume) {
    // Nothing survived: only the header is left (the tail was cut).
    file.reset();
    s = fs_->Remove(path);
    if (s.ok() && has_index) s = fs_->Remove(index_path);
    if (!s.ok()) return s;
    report->files_removed += has_index ? 2 : 1;
    report->events.push_back("removed " + name + ": no valid record left");
    return Status::OK();
  }
  auto blob = std::make_shared<Blob>(id, format, std::move(file), scan.valid_end, std::move(index), scan.records,
                                     max_version, max_stamp);
  // What survived the crash in the page cache becomes durable before new
  // records are appended behind it.
  s = blob->file()->Sync();
  if (!s.ok()) return s;
  if (resume) {
    active_ = blob;
  } else {
    if (last && !has_index) {
      report->events.push_back(name + " is a format-" + std::to_string(format) +
                               " blob: sealed and indexed; new records go to a new blob");
    }
    blob->ClaimIndexBuild();
    s = BuildIndex(blob);
    if (!s.ok()) return s;
    report->indexes_rebuilt++;
  }
  blobs->push_back(std::move(blob));
  return Status::OK();
}

Status Engine::Quarantine(const std::string& name, const std::string& why, RecoveryReport* report) {
  const std::string dir = JoinPath(dir_, kCorruptedDir);
  Status s = fs_->CreateDir(dir);
  std::vector<std::string> present;
  if (s.ok()) s = fs_->ListDir(dir, &present);
  if (!s.ok()) return s;
  // An earlier file of the same name is kept: the new one gets ".<k>" appended.
  std::string target = name;
  for (int k = 1; std::find(present.begin(), present.end(), target) != present.end(); k++) {
    target = name + "." + std::to_string(k);
  }
  s = fs_->Rename(JoinPath(dir_, name), JoinPath(dir, target));
  if (s.ok()) s = fs_->SyncDir(dir);
  if (!s.ok()) return s;
  report->blobs_quarantined++;
  report->events.push_back("moved " + name + " to " + kCorruptedDir + "/" + target + ": " + why);
  return Status::OK();
}

// ------------------------------------------------------------------- reads

std::shared_ptr<const Engine::BlobSet> Engine::Current() const {
  std::lock_guard<std::mutex> l(set_mu_);
  return current_;
}

void Engine::InstallBlobSet(std::vector<std::shared_ptr<Blob>> blobs) {
  auto set = std::make_shared<BlobSet>();
  set->blobs = std::move(blobs);
  std::lock_guard<std::mutex> l(set_mu_);
  current_ = std::move(set);
}

Status Engine::FindNewest(const ReadOptions& options, const char* key, std::shared_ptr<Blob>* blob,
                          IndexEntry* entry, bool* found) {
  *found = false;
  if (shut_.load(std::memory_order_acquire)) return Status::Closed("engine is closed");
  const uint64_t hash = KeyHash64(key, options_.key_size);
  std::shared_ptr<const BlobSet> set;
  if (!options.no_wait) {
    set = Current();
  } else {
    std::unique_lock<std::mutex> l(set_mu_, std::try_to_lock);
    if (!l.owns_lock()) return Status::WouldBlock("blob set is being replaced");
    set = current_;
  }
  for (const std::shared_ptr<Blob>& b : set->blobs) {
    // Blobs are visited newest first, and an older blob loses full ties, so
    // a blob where even a tombstone at its largest version would not be
    // newer than what was found cannot matter.
    if (*found && CompareRecords(b->max_version(), true, entry->version, entry->tombstone()) <= 0) continue;
    IndexEntry e;
    bool f = false;
    const uint64_t generation = b->index_generation();
    Status s = b->Find(key, hash, &e, &f, options.no_wait);
    // Repairing a damaged index block means scanning the blob: not without waiting.
    if (s.IsCorruption() && options.no_wait) return Status::WouldBlock("index block needs a repair");
    if (s.IsCorruption()) {
      // A damaged index block: the blob is the source of truth, rebuild
      // its index and look again.
      corrupt_reads_.fetch_add(1, std::memory_order_relaxed);
      Status r = RepairIndex(b, generation);
      s = r.ok() ? b->Find(key, hash, &e, &f)
                 : Status::Corruption(s.message() + "; rebuilding the index failed: " + r.ToString());
    }
    if (!s.ok()) return s;
    if (f && (!*found || CompareRecords(e.version, e.tombstone(), entry->version, entry->tombstone()) > 0)) {
      *entry = e;
      *blob = b;
      *found = true;
    }
  }
  return Status::OK();
}

Status Engine::RepairIndex(const std::shared_ptr<Blob>& blob, uint64_t seen_generation) {
  std::lock_guard<std::mutex> l(repair_mu_);
  if (shut_.load(std::memory_order_acquire)) return Status::Closed("engine is closed");
  if (blob->index_generation() != seen_generation) return Status::OK();  // repaired meanwhile
  // Compacted meanwhile: its file is gone, its index file is another's.
  if (!Serves(blob)) return Status::OK();
  ActiveIndex index(options_.key_size);
  uint64_t max_stamp = 0;
  ScanResult scan;
  Status s = ScanBlob(*blob->file(), blob->format(), kBlobHeaderSize, blob->size(), options_.key_size,
                      [&](const char* key, const IndexEntry& e, bool) {
                        index.Insert(key, KeyHash64(key, options_.key_size), e);
                        max_stamp = std::max(max_stamp, e.version.stamp);
                      },
                      &scan);
  if (!s.ok()) return s;
  std::unique_ptr<IndexReader> reader;
  s = WriteIndexFile(*blob, scan.records, max_stamp, index, &reader);
  if (!s.ok()) return s;
  blob->ReplaceIndexReader(std::move(reader));
  index_repairs_.fetch_add(1, std::memory_order_relaxed);
  return Status::OK();
}

bool Engine::Serves(const std::shared_ptr<Blob>& blob) const {
  std::shared_ptr<const BlobSet> set = Current();
  return std::find(set->blobs.begin(), set->blobs.end(), blob) != set->blobs.end();
}

bool Engine::ReplaceBlob(const std::shared_ptr<Blob>& old, std::shared_ptr<Blob> replacement) {
  std::lock_guard<std::mutex> l(set_mu_);
  std::vector<std::shared_ptr<Blob>> blobs;
  bool found = false;
  for (const auto& b : current_->blobs) {
    if (b != old) {
      blobs.push_back(b);
    } else {
      found = true;
      if (replacement) blobs.push_back(std::move(replacement));
    }
  }
  if (!found) return false;
  auto set = std::make_shared<BlobSet>();
  set->blobs = std::move(blobs);
  current_ = std::move(set);
  return true;
}

Status Engine::Locate(const ReadOptions& options, const char* key, LookupResult* result, RecordLocation* where) {
  bool found = false;
  *result = LookupResult();
  Status s = FindNewest(options, key, &where->blob, &where->entry, &found);
  if (!s.ok() || !found) return s;
  const IndexEntry& e = where->entry;
  result->version = e.version;
  result->kind = e.tombstone() ? GetResult::kDeleted : GetResult::kFound;
  result->value_size = result->kind == GetResult::kFound ? e.value_size : 0;
  return Status::OK();
}

Status Engine::Read(const ReadOptions& options, const char* key, const RecordLocation& where, GetResult* result) {
  result->kind = GetResult::kAbsent;
  result->version = where.entry.version;
  Status s = where.blob->ReadRecord(key, options_.key_size, where.entry, &result->record, options.no_wait);
  // The read that may wait counts and reports damage; a no-wait read leaves it to that one.
  if (s.IsCorruption() && options.no_wait) return Status::WouldBlock("record failed its checks");
  if (s.IsCorruption()) corrupt_reads_.fetch_add(1, std::memory_order_relaxed);
  if (s.ok()) result->kind = GetResult::kFound;
  return s;
}

Status Engine::OpenValue(const ReadOptions& options, const char* key, const RecordLocation& where,
                         std::unique_ptr<ValueReader>* reader) {
  Status s = ValueReader::Open(weak_from_this(), where.blob, where.entry, key, options_.key_size, options.no_wait,
                               reader);
  if (s.IsCorruption() && options.no_wait) return Status::WouldBlock("record failed its checks");
  if (s.IsCorruption()) corrupt_reads_.fetch_add(1, std::memory_order_relaxed);
  return s;
}

Status Engine::Get(const ReadOptions& options, const char* key, GetResult* result) {
  RecordLocation where;
  LookupResult newest;
  Status s = Locate(options, key, &newest, &where);
  if (!s.ok() || newest.kind != GetResult::kFound) {
    result->kind = newest.kind;
    result->version = newest.version;
    return s;
  }
  return Read(options, key, where, result);
}

Status Engine::Lookup(const ReadOptions& options, const char* key, LookupResult* result) {
  RecordLocation where;
  return Locate(options, key, result, &where);
}

Status Engine::Snapshot(std::string* out) {
  if (shut_.load(std::memory_order_acquire)) return Status::Closed("engine is closed");
  const size_t k = options_.key_size;
  std::shared_ptr<const BlobSet> set = Current();
  ActiveIndex newest(k);
  // Oldest blob first; the rank in the offset's high bits makes a later blob
  // win a full tie, as reads do.
  const size_t n = set->blobs.size();
  for (size_t i = 0; i < n; i++) {
    const uint64_t rank = static_cast<uint64_t>(i) << 48;
    Status s = set->blobs[n - 1 - i]->ForEachEntry([&](const char* key, const IndexEntry& e) {
      IndexEntry ranked = e;
      ranked.offset = rank | e.offset;
      newest.Insert(key, KeyHash64(key, k), ranked);
    });
    if (!s.ok()) return s;
  }
  out->clear();
  out->reserve(newest.size() * (kSnapshotEntryFixedSize + k));
  for (uint32_t i = 0; i < newest.size(); i++) AppendSnapshotEntry(newest.key_at(i), k, newest.entry_at(i), out);
  return Status::OK();
}

Status Engine::CurrentBlobs(std::vector<std::shared_ptr<Blob>>* blobs) const {
  if (shut_.load(std::memory_order_acquire)) return Status::Closed("engine is closed");
  *blobs = Current()->blobs;
  return Status::OK();
}

void AppendSnapshotEntry(const char* key, size_t key_size, const IndexEntry& e, std::string* out) {
  char fixed[kSnapshotEntryFixedSize];
  fixed[0] = e.tombstone() ? 2 : 1;
  EncodeFixed64(fixed + 1, e.version.timestamp);
  EncodeFixed64(fixed + 9, e.version.stamp);
  out->append(fixed, kSnapshotEntryFixedSize);
  out->append(key, key_size);
}

// ------------------------------------------------------------------ writes

void Engine::Write(WriteRequest* req) {
  if (!req->tombstone && req->value_size > kMaxValueSize) {
    req->Done(Status::InvalidArgument("value larger than 4 GiB - 1"));
    return;
  }
  if (req->streamed && (req->tombstone || req->value_size > kMaxStreamedValueSize)) {
    req->Done(Status::InvalidArgument(req->tombstone ? "a tombstone has no value to stream"
                                                     : "streamed value larger than " +
                                                           std::to_string(kMaxStreamedValueSize) + " bytes"));
    return;
  }
  bool accepted = false;
  bool schedule = false;
  {
    std::lock_guard<std::mutex> l(queue_mu_);
    if (accepting_) {
      queue_.push_back(req);
      accepted = true;
      schedule = !writer_scheduled_;
      writer_scheduled_ = true;
    }
  }
  if (!accepted) {
    req->Done(Status::Closed("engine is closed"));
  } else if (schedule) {
    ScheduleWriter();
  }
}

void Engine::ScheduleWriter() {
  std::shared_ptr<Engine> self = shared_from_this();
  options_.executor->Schedule([self] { self->WriterTask(); });
}

namespace {

// Moves the next batch out of the queue; empty when the queue is.
std::vector<WriteRequest*> TakeBatch(std::deque<WriteRequest*>* queue, size_t key_size) {
  std::vector<WriteRequest*> batch;
  uint64_t bytes = 0;
  while (!queue->empty() && batch.size() < kMaxBatchRecords) {
    uint64_t b = BatchBytes(queue->front(), key_size);
    if (!batch.empty() && bytes + b > kMaxBatchBytes) break;
    bytes += b;
    batch.push_back(queue->front());
    queue->pop_front();
  }
  return batch;
}

}  // namespace

void Engine::WriterTask() {
  std::unique_lock<std::mutex> wl(write_mu_);
  for (int round = 0; round < kBatchesPerTask; round++) {
    std::vector<WriteRequest*> batch;
    {
      std::lock_guard<std::mutex> l(queue_mu_);
      batch = TakeBatch(&queue_, options_.key_size);
      if (batch.empty()) {
        writer_scheduled_ = false;
        return;
      }
    }
    WriteBatchLocked(batch);
  }
  wl.unlock();
  // More may be queued: continue as a new task so other engines' work and
  // reads get a turn on the pool (writer_scheduled_ stays set).
  ScheduleWriter();
}

void Engine::DrainQueueLocked() {
  for (;;) {
    std::vector<WriteRequest*> batch;
    {
      std::lock_guard<std::mutex> l(queue_mu_);
      batch = TakeBatch(&queue_, options_.key_size);
    }
    if (batch.empty()) return;
    WriteBatchLocked(batch);
  }
}

void Engine::WriteBatchLocked(const std::vector<WriteRequest*>& batch) {
  const size_t k = options_.key_size;
  size_t i = 0;
  while (i < batch.size()) {
    Status s;
    if (stream_sync_failed_.load(std::memory_order_acquire) && write_error_.ok()) {
      std::lock_guard<std::mutex> l(build_mu_);
      write_error_ = stream_sync_error_;
    }
    if (closed_) {
      s = Status::Closed("engine is closed");
    } else if (!write_error_.ok()) {
      s = write_error_;
    } else if (!active_) {
      s = CreateActiveBlobLocked();
    }
    if (!s.ok()) {
      for (size_t j = i; j < batch.size(); j++) batch[j]->Done(s);
      return;
    }
    // The records that still fit into the active blob, up to a streamed
    // put, which is written alone: its space is reserved, not written.
    const uint64_t size = active_->size();
    const uint64_t records = active_->records();
    size_t j = i;
    uint64_t bytes = 0;
    while (j < batch.size() && (j == i || !batch[j]->streamed)) {
      uint64_t rec = RecordBytes(batch[j], k);
      uint64_t n = records + (j - i);
      if (n >= options_.max_data_in_blob) break;
      // An empty blob takes a record of any size.
      if (size + bytes > kBlobHeaderSize && size + bytes + rec > options_.max_blob_size) break;
      bytes += rec;
      j++;
      if (batch[j - 1]->streamed) break;
    }
    if (j == i) {
      s = SealActiveLocked(false);
      if (!s.ok()) {
        for (size_t m = i; m < batch.size(); m++) batch[m]->Done(s);
        return;
      }
      continue;
    }
    const bool streamed = batch[i]->streamed;  // Done may free the request
    Blob* const blob = active_.get();
    std::shared_ptr<GarbageLedger> accounting = streamed ? nullptr : ledger();
    s = streamed ? ReserveLocked(batch[i]) : AppendLocked(batch, i, j, accounting.get());
    for (size_t m = i; m < j; m++) batch[m]->Done(s);
    // After the acknowledgements, which the lookups across the vdisk need
    // not delay (a streamed put is accounted as it is published).
    if (s.ok() && !streamed) accounting->Account(LedgerBatch(this, blob, publish_buf_, displaced_buf_));
    i = j;
  }
}

Status Engine::AppendLocked(const std::vector<WriteRequest*>& batch, size_t from, size_t to,
                            GarbageLedger* ledger) {
  const size_t k = options_.key_size;
  const size_t hsize = RecordHeaderSize(kBlobFormatVersion, k);
  header_buf_.resize((to - from) * hsize);
  // Block checksums of the large values, where the batch's iovecs point.
  size_t blocks_bytes = 0;
  for (size_t i = from; i < to; i++) {
    if (ValueFlags(batch[i]) & kFlagBlocks) blocks_bytes += 4 * ValueBlockCount(batch[i]->value_size);
  }
  blocks_buf_.resize(blocks_bytes);
  char* blocks = blocks_buf_.data();
  iov_buf_.clear();
  publish_buf_.clear();
  keys_buf_.resize((to - from) * k);
  const uint64_t start = active_->size();
  uint64_t offset = start;
  for (size_t i = from; i < to; i++) {
    const WriteRequest* r = batch[i];
    char* h = header_buf_.data() + (i - from) * hsize;
    const uint8_t flags = ValueFlags(r);
    const uint32_t vsize = r->tombstone ? 0 : static_cast<uint32_t>(r->value_size);
    EncodeRecordHeader(flags, offset, r->version, r->key, k, r->value, vsize, h, blocks);
    iov_buf_.push_back(IoSlice{h, hsize});
    if (vsize > 0) iov_buf_.push_back(IoSlice{r->value, vsize});
    if (flags & kFlagBlocks) {
      const size_t n = 4 * ValueBlockCount(vsize);
      iov_buf_.push_back(IoSlice{blocks, n});
      blocks += n;
    }
    IndexEntry e;
    e.version = r->version;
    e.offset = offset;
    e.value_size = vsize;
    e.flags = flags;
    char* key = keys_buf_.data() + (i - from) * k;
    std::memcpy(key, r->key, k);
    publish_buf_.push_back(Blob::NewRecord{key, KeyHash64(key, k), e});
    offset += hsize + RecordBodySize(flags, vsize);
  }
  File* f = active_->file();
  Status s = f->Write(start, iov_buf_.data(), static_cast<int>(iov_buf_.size()));
  if (!s.ok()) {
    // Cut the partial batch off so that the blob ends at a record boundary.
    Status t = f->Truncate(start);
    if (!t.ok()) {
      SetWriteError(Status::IOError("cannot roll back a failed write in " + f->path() +
                                    "; writes are disabled until the engine is reopened", t.err()));
    }
    return s;
  }
  // A blob deleted under us (its disk directory removed) still takes writes
  // that could never be read back: they must not be acknowledged.
  bool removed = false;
  s = f->Removed(&removed);
  if (s.ok() && removed) s = Status::IOError("blob " + f->path() + " was removed while in use", ENOENT);
  if (!s.ok()) {
    SetWriteError(s);
    return s;
  }
  const uint64_t written = offset - start;
  dirty_bytes_ += written;
  for (const Blob::NewRecord& r : publish_buf_) {
    if (DropBehind::Applies(r.entry.value_size)) drop_behind_.Written(active_->id(), r.entry.offset + hsize, r.entry.value_size);
  }
  if (options_.sync_writes || AtRisk() > options_.max_dirty_bytes_before_sync) {
    const uint64_t acked = SyncBegins(written);
    s = drop_behind_.Sync(active_->id(), f);
    syncing_bytes_ -= acked;
    if (!s.ok()) {
      // After a failed fdatasync the kernel may have dropped the dirty pages:
      // nothing written since the last good sync can be trusted any more.
      // The batch is reported as failed, so it must not reappear after a
      // restart either (best effort: the device may refuse this as well).
      f->Truncate(start);
      SetWriteError(Status::IOError("fdatasync failed on " + f->path() +
                                    "; writes are disabled until the engine is reopened", s.err()));
      return s;
    }
  }
  displaced_buf_.resize(publish_buf_.size());
  ledger->Announce(LedgerBatch(this, active_.get(), publish_buf_, displaced_buf_));
  active_->Publish(publish_buf_, offset, displaced_buf_.data());
  return Status::OK();
}

Status Engine::ReserveLocked(WriteRequest* req) {
  const size_t k = options_.key_size;
  const size_t hsize = RecordHeaderSize(kBlobFormatVersion, k);
  const uint8_t flags = ValueFlags(req);
  const uint64_t body = RecordBodySize(flags, req->value_size);
  const uint64_t offset = active_->size();
  header_buf_.resize(hsize);
  EncodeVoidHeader(offset, k, static_cast<uint32_t>(body), header_buf_.data());
  IoSlice slice{header_buf_.data(), hsize};
  File* f = active_->file();
  Status s = f->Write(offset, &slice, 1);
  if (!s.ok()) {
    Status t = f->Truncate(offset);
    if (!t.ok()) {
      SetWriteError(Status::IOError("cannot roll back a failed write in " + f->path() +
                                    "; writes are disabled until the engine is reopened", t.err()));
    }
    return s;
  }
  active_->Reserve(offset + hsize + body);
  std::unique_ptr<PutStream> stream(new PutStream(weak_from_this(), streams_, options_.sync_writes, active_, offset,
                                                  std::string(req->key, k), req->version, req->value_size, flags));
  if (!streams_->Add(stream.get())) {
    // Close has begun: the space stays void (the stream aborts as it goes).
    return Status::Closed("engine is closed");
  }
  req->stream = std::move(stream);
  return Status::OK();
}

uint64_t Engine::SyncBegins(uint64_t unacknowledged) {
  // Every record counted so far was written before the sync begins, so it
  // covers them; streams that count theirs meanwhile count from zero.
  const uint64_t counted = dirty_bytes_.exchange(0);
  const uint64_t acked = counted > unacknowledged ? counted - unacknowledged : 0;
  syncing_bytes_ += acked;
  return acked;
}

Status Engine::FinishStream(Blob* blob, uint64_t bytes, bool sync) {
  // Not under the writer's lock, which a writer holds while it takes the
  // streams' lock.
  uint64_t acked = 0;
  if (!has_active_.load(std::memory_order_acquire) || active_id_.load(std::memory_order_acquire) != blob->id()) {
    sync = true;  // a sealed blob's own sync waits for its index build, after its last stream
  } else {
    dirty_bytes_ += bytes;
    if (sync || AtRisk() > options_.max_dirty_bytes_before_sync) {
      sync = true;
      acked = SyncBegins(bytes);
    }
  }
  if (!sync) return Status::OK();
  Status s = SyncStreamed(blob);
  syncing_bytes_ -= acked;
  return s;
}

Status Engine::WriteBackStreamed(Blob* blob, uint64_t offset, uint64_t n) {
  Status s = drop_behind_.WriteBack(blob->id(), blob->file(), offset, n);
  if (!s.ok()) {
    // The kernel may have dropped pages it failed to write, and a later
    // fdatasync need not report that again.
    StreamSyncFailed(Status::IOError("writeback (sync_file_range) failed on " + blob->file()->path() +
                                     " (a streamed put); writes are disabled until the engine is reopened",
                                     s.err()));
  }
  return s;
}

Status Engine::SyncStreamed(Blob* blob) {
  Status s = drop_behind_.Sync(blob->id(), blob->file());
  if (!s.ok()) {
    StreamSyncFailed(Status::IOError("fdatasync failed on " + blob->file()->path() +
                                     " (a streamed put); writes are disabled until the engine is reopened",
                                     s.err()));
  }
  return s;
}

void Engine::IndexAfterStreams(const std::shared_ptr<Blob>& blob) {
  if (shut_.load(std::memory_order_acquire)) {
    // Close waits for the claim to succeed.
    { std::lock_guard<std::mutex> l(build_mu_); }
    build_cv_.notify_all();
    return;
  }
  std::shared_ptr<Engine> self = shared_from_this();
  options_.executor->Schedule([self, blob] { self->BackgroundBuild(blob); });
}

std::shared_ptr<GarbageLedger> Engine::ledger() const {
  std::lock_guard<std::mutex> l(ledger_mu_);
  return ledger_;
}

void Engine::JoinLedger(std::shared_ptr<GarbageLedger> ledger) {
  std::lock_guard<std::mutex> l(ledger_mu_);
  ledger_.swap(ledger);
  // The ledger left (`ledger` now) is released once the lock is.
}

void Engine::StreamSyncFailed(const Status& s) {
  std::lock_guard<std::mutex> l(build_mu_);
  if (stream_sync_failed_.load(std::memory_order_relaxed)) return;
  stream_sync_error_ = s;
  if (write_error_text_.empty()) write_error_text_ = s.ToString();  // seen in Stats at once
  stream_sync_failed_.store(true, std::memory_order_release);
}

void Engine::SetWriteError(const Status& s) {
  write_error_ = s;
  std::lock_guard<std::mutex> l(build_mu_);
  write_error_text_ = s.ToString();
}

Status Engine::CreateActiveBlobLocked() {
  const uint64_t id = next_blob_id_++;
  const std::string path = JoinPath(dir_, BlobFileName(options_.blob_file_prefix, id));
  std::unique_ptr<File> file;
  Status s = fs_->OpenFile(path, true, &file);
  if (!s.ok()) return s;
  BlobHeader h;
  h.key_size = options_.key_size;
  h.blob_id = id;
  char buf[kBlobHeaderSize];
  EncodeBlobHeader(h, buf);
  IoSlice slice{buf, kBlobHeaderSize};
  s = file->Write(0, &slice, 1);
  if (s.ok()) s = file->Sync();
  if (s.ok()) s = fs_->SyncDir(dir_);
  if (!s.ok()) {
    file.reset();
    fs_->Remove(path);  // best effort: a short blob is removed on the next open anyway
    return s;
  }
  auto blob = std::make_shared<Blob>(id, kBlobFormatVersion, std::move(file), kBlobHeaderSize,
                                     std::make_unique<ActiveIndex>(options_.key_size), 0, Version(), 0);
  std::vector<std::shared_ptr<Blob>> blobs{blob};
  std::shared_ptr<const BlobSet> set = Current();
  for (const auto& b : set->blobs) blobs.push_back(b);
  InstallBlobSet(std::move(blobs));
  active_ = std::move(blob);
  active_id_.store(id);
  has_active_.store(true);
  dirty_bytes_ = 0;
  return Status::OK();
}

Status Engine::SealActiveLocked(bool build_now) {
  if (!active_) return Status::OK();
  std::shared_ptr<Blob> blob = std::move(active_);
  active_.reset();
  has_active_.store(false);
  dirty_bytes_ = 0;  // the index build syncs the blob first
  if (blob->records() == 0 && blob->ClaimIndexBuild()) {
    // (A blob whose only records are streams still open is kept: they end
    // up in its index, which is built as the last of them ends.)
    // Nothing to index: drop the empty file instead.
    std::vector<std::shared_ptr<Blob>> rest;
    std::shared_ptr<const BlobSet> set = Current();
    for (const auto& b : set->blobs) {
      if (b != blob) rest.push_back(b);
    }
    InstallBlobSet(std::move(rest));
    const std::string path = blob->file()->path();
    blob.reset();
    Status s = fs_->Remove(path);
    if (s.ok()) s = fs_->SyncDir(dir_);
    return s;
  }
  if (build_now) {
    // Refused while streams are open: the last of them has it built.
    if (!blob->ClaimIndexBuild()) return Status::OK();
    Status s = BuildIndex(blob);
    if (!s.ok()) blob->ReleaseIndexBuild();  // Close retries
    return s;
  }
  std::shared_ptr<Engine> self = shared_from_this();
  options_.executor->Schedule([self, blob] { self->BackgroundBuild(blob); });
  return Status::OK();
}

Status Engine::WriteIndexFile(const Blob& blob, uint64_t records, uint64_t max_stamp, const ActiveIndex& index,
                              std::unique_ptr<IndexReader>* reader) {
  IndexBuildParams p;
  p.dir = dir_;
  p.prefix = options_.blob_file_prefix;
  p.blob_id = blob.id();
  p.blob_size = blob.size();
  p.records_total = records;
  p.max_stamp = max_stamp;
  p.bloom_bits_per_key = options_.bloom_bits_per_key;
  p.cache = options_.cache;
  return BuildIndexFile(fs_, p, index, reader);
}

Status Engine::BuildIndex(const std::shared_ptr<Blob>& blob) {
  Status s = blob->file()->Sync();
  if (!s.ok()) return s;
  std::unique_ptr<IndexReader> reader;
  s = WriteIndexFile(*blob, blob->records(), blob->max_stamp(), blob->sealed_index(), &reader);
  if (!s.ok()) return s;
  blob->AttachIndexReader(std::move(reader));
  return Status::OK();
}

void Engine::BackgroundBuild(const std::shared_ptr<Blob>& blob) {
  if (shut_.load(std::memory_order_acquire) || !blob->ClaimIndexBuild()) return;
  Status s = BuildIndex(blob);
  {
    std::lock_guard<std::mutex> l(build_mu_);
    if (!s.ok()) {
      // The blob keeps serving from memory; Close tries again.
      background_error_ = "index build of blob " + std::to_string(blob->id()) + ": " + s.ToString();
      blob->ReleaseIndexBuild();
    }
  }
  build_cv_.notify_all();
}

// ----------------------------------------------------------------- control

Status Engine::CloseActiveBlob() {
  std::lock_guard<std::mutex> wl(write_mu_);
  if (closed_) return Status::Closed("engine is closed");
  DrainQueueLocked();
  return SealActiveLocked(true);
}

Status Engine::Close() {
  {
    std::lock_guard<std::mutex> l(queue_mu_);
    accepting_ = false;
  }
  // Streamed puts still open are never published, and no new one starts; a
  // stream in the middle of a write finishes that write first. Before the
  // writer's lock: a stream finishing holds its own lock, then takes the
  // writer's. (Streams stay registered until destroyed; aborting a finished
  // one does nothing.)
  streams_->AbortAll();
  std::lock_guard<std::mutex> wl(write_mu_);
  if (closed_) return Status::OK();
  DrainQueueLocked();
  shut_.store(true, std::memory_order_release);
  // A repair in progress finishes first; later ones see shut_.
  { std::lock_guard<std::mutex> rl(repair_mu_); }
  Status result = SealActiveLocked(true);
  std::shared_ptr<const BlobSet> set = Current();
  for (const auto& blob : set->blobs) {
    std::unique_lock<std::mutex> bl(build_mu_);
    while (blob->in_memory()) {
      if (blob->ClaimIndexBuild()) {
        bl.unlock();
        Status s = BuildIndex(blob);
        if (result.ok()) result = s;
        bl.lock();
        break;
      }
      // A background build of this blob is running; it notifies when done.
      build_cv_.wait(bl);
    }
  }
  closed_ = true;
  lock_.reset();
  return result;
}

Status Engine::SyncWritten() {
  // The blobs are taken under the writer's lock and synced outside it, so
  // that writes go on meanwhile (as streamed puts sync beside the writer):
  // an fdatasync makes durable everything written before it began.
  std::vector<std::shared_ptr<Blob>> unsynced;
  {
    std::lock_guard<std::mutex> wl(write_mu_);
    if (closed_) return Status::Closed("engine is closed");
    for (const auto& b : Current()->blobs) {
      if (b->in_memory()) unsynced.push_back(b);  // indexed blobs were synced before their index was written
    }
  }
  for (const std::shared_ptr<Blob>& b : unsynced) {
    Status s = drop_behind_.Sync(b->id(), b->file());
    if (!s.ok()) {
      // After a failed fdatasync the kernel may have dropped dirty pages:
      // nothing written since the last good sync can be trusted, as in Write.
      std::lock_guard<std::mutex> wl(write_mu_);
      SetWriteError(Status::IOError("fdatasync failed on " + b->file()->path() +
                                    "; writes are disabled until the engine is reopened", s.err()));
      return s;
    }
  }
  return Status::OK();
}

// ------------------------------------------------------------------- stats

uint64_t Engine::RecordsCount() const {
  // Hold the set: a temporary's lifetime does not cover a range-for over its
  // member, and a writer may replace (and so free) the current set meanwhile.
  std::shared_ptr<const BlobSet> set = Current();
  uint64_t n = 0;
  for (const auto& b : set->blobs) n += b->records();
  return n;
}

EngineStats Engine::Stats() const {
  EngineStats st;
  std::shared_ptr<const BlobSet> set = Current();  // see RecordsCount
  for (const auto& b : set->blobs) {
    st.blobs++;
    st.records += b->records();
    st.disk_bytes += b->size() + b->IndexFileSize();
    st.index_memory += b->IndexMemoryUsage();
    st.filter_memory += b->FilterMemoryUsage();
    if (b->in_memory()) st.blobs_in_memory++;
    BlobStats bs;
    bs.id = b->id();
    bs.size = b->size();
    bs.records = b->records();
    bs.closed = !b->in_memory();
    bs.garbage_records = b->garbage_records();
    bs.garbage_bytes = b->garbage_bytes();
    bs.dead_tombstones = b->dead_tombstones();
    bs.dead_tombstone_bytes = b->dead_tombstone_bytes();
    bs.live_tombstones = b->live_tombstones();
    st.garbage_records += bs.garbage_records;
    st.garbage_bytes += bs.garbage_bytes;
    st.dead_tombstones += bs.dead_tombstones;
    st.dead_tombstone_bytes += bs.dead_tombstone_bytes;
    st.live_tombstones += bs.live_tombstones;
    st.blob_stats.push_back(bs);
    const Version v = b->max_version();
    if (CompareVersions(v, st.max_version) > 0) st.max_version = v;
    st.max_tick = std::max(st.max_tick, b->max_stamp() >> kStampNodeBits);
  }
  // Below 0 only while the counters are off (a recount sets them right).
  const uint64_t counted = st.garbage_records + st.live_tombstones;
  st.live_keys = st.records > counted ? st.records - counted : 0;
  st.has_active_blob = has_active_.load();
  st.active_blob_id = st.has_active_blob ? active_id_.load() : 0;
  st.corrupt_reads = corrupt_reads_.load();
  st.index_repairs = index_repairs_.load();
  std::lock_guard<std::mutex> l(build_mu_);
  st.background_error = background_error_;
  st.write_error = write_error_text_;
  return st;
}

}  // namespace oyster
