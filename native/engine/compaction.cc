#include "engine/compaction.h"

#include <errno.h>

#include <algorithm>
#include <cstring>

#include "engine/index_builder.h"
#include "util/crc32c.h"
#include "util/hash.h"

namespace oyster {
namespace {

constexpr size_t kWriteChunk = 4 << 20;

}  // namespace

Compaction::Compaction(const EngineSet& set, std::shared_ptr<Engine> engine, std::shared_ptr<Blob> blob,
                       const CompactionOptions& options)
    : set_(set),
      engine_(std::move(engine)),
      source_(std::move(blob)),
      options_(options),
      key_size_(engine_->options().key_size),
      fs_(engine_->fs_),
      blob_path_(JoinPath(engine_->dir(), BlobFileName(engine_->options().blob_file_prefix, source_->id()))),
      index_path_(JoinPath(engine_->dir(), IndexFileName(engine_->options().blob_file_prefix, source_->id()))),
      new_blob_path_(
          JoinPath(engine_->dir(), CompactedBlobFileName(engine_->options().blob_file_prefix, source_->id()))),
      new_index_path_(
          JoinPath(engine_->dir(), CompactedIndexFileName(engine_->options().blob_file_prefix, source_->id()))),
      index_(engine_->options().key_size) {
  stats_.blob_id = source_->id();
  stats_.source_size = source_->size();
  stats_.source_records = source_->records();
}

Status Compaction::Begin(const EngineSet& set, std::shared_ptr<Engine> engine, uint64_t blob_id,
                         const CompactionOptions& options, std::unique_ptr<Compaction>* compaction) {
  if (engine->shut_.load(std::memory_order_acquire)) return Status::Closed("engine is closed");
  if (std::find(set.engines().begin(), set.engines().end(), engine) == set.engines().end()) {
    return Status::InvalidArgument("the engine is not one of the set's");
  }
  std::shared_ptr<Blob> blob;
  for (const auto& b : engine->Current()->blobs) {
    if (b->id() == blob_id) blob = b;
  }
  if (!blob) return Status::NotFound("no blob " + std::to_string(blob_id) + " in " + engine->dir());
  if (blob->in_memory()) {
    return Status::InvalidArgument("blob " + std::to_string(blob_id) + " is not closed (it has no index file yet)");
  }
  bool idle = false;
  if (!engine->compacting_.compare_exchange_strong(idle, true)) {
    return Status::Busy("a compaction of " + engine->dir() + " is under way");
  }
  std::unique_ptr<Compaction> c(new Compaction(set, std::move(engine), std::move(blob), options));
  Status s = RecordWalker::Open(c->source_, c->key_size_, &c->walker_);
  if (s.ok()) s = c->CreateOutput();
  if (!s.ok()) return s;
  c->stats_.entries = c->walker_->entries();
  *compaction = std::move(c);
  return Status::OK();
}

Compaction::~Compaction() {
  if (created_ && !stats_.installed) {
    // Best effort: the next open removes what is left.
    out_.reset();
    fs_->Remove(new_blob_path_);
    fs_->Remove(new_index_path_);
  }
  engine_->compacting_.store(false);
}

Status Compaction::CreateOutput() {
  Status s = fs_->OpenFile(new_blob_path_, true, &out_);
  if (s.IsIOError() && s.err() == EEXIST) {
    // Left by an attempt that failed without cleaning up; never swapped in.
    s = fs_->Remove(new_blob_path_);
    if (s.ok()) s = fs_->OpenFile(new_blob_path_, true, &out_);
  }
  if (!s.ok()) return s;
  created_ = true;
  BlobHeader h;
  h.key_size = static_cast<uint32_t>(key_size_);
  h.blob_id = source_->id();
  char header[kBlobHeaderSize];
  EncodeBlobHeader(h, header);
  return Write(header, kBlobHeaderSize);
}

bool Compaction::TombstoneExpired(const char* key, const IndexEntry& e) const {
  if (!options_.tombstones.Expired(e.version)) return false;
  // Anything older of the key anywhere in the vdisk would come back.
  const uint64_t hash = KeyHash64(key, key_size_);
  for (const std::shared_ptr<Engine>& engine : set_.engines()) {
    std::vector<std::shared_ptr<Blob>> blobs;
    if (!engine->CurrentBlobs(&blobs).ok()) return false;
    for (const std::shared_ptr<Blob>& b : blobs) {
      if (b == source_) continue;
      IndexEntry other;
      bool found = false;
      Status s = b->Find(key, hash, &other, &found);
      if (!s.ok() || found) return false;
    }
  }
  return true;
}

Status Compaction::Step(uint64_t budget, bool* done) {
  *done = false;
  const uint64_t start = walker_->bytes_read() + stats_.bytes_written;
  const uint64_t visited = stats_.visited;
  const uint64_t dropped = stats_.dropped_records;
  while (!walker_->done()) {
    // At least one record per step, whatever the budget.
    const uint64_t spent = walker_->bytes_read() + stats_.bytes_written - start +
                           (stats_.dropped_records - dropped) * RecordWalker::kSkippedCost;
    if (stats_.visited > visited && spent >= budget) break;
    const char* key = walker_->key();
    const IndexEntry e = walker_->entry();
    // Kept only while it is what a read of the key returns.
    LookupResult newest;
    EngineSet::Location where;
    Status s = set_.Locate(ReadOptions(), key, &newest, &where);
    if (!s.ok()) return s;
    bool keep = where.engine == engine_.get() && where.record.blob == source_ && where.record.entry.offset == e.offset;
    if (keep && e.tombstone() && TombstoneExpired(key, e)) {
      keep = false;
      stats_.dropped_tombstones++;
    }
    stats_.visited++;
    if (!keep) {
      walker_->Skip();
      stats_.dropped_records++;
      continue;
    }
    s = Copy(e);
    if (!s.ok()) return s;
  }
  stats_.bytes_read = walker_->bytes_read();
  *done = walker_->done();
  return Status::OK();
}

Status Compaction::Copy(const IndexEntry& e) {
  const char* key = walker_->key();
  const size_t hsize = RecordHeaderSize(kBlobFormatVersion, key_size_);
  const uint64_t at = out_size_;
  // The header goes in front of the value, its CRC known only after it: a
  // place is kept for it and filled in once the value is through.
  std::vector<char> header(hsize);
  EncodeRecordHeaderWithCrc(static_cast<uint8_t>(e.flags), at, e.version, key, key_size_, e.value_size, 0,
                            header.data());
  uint32_t crc = RecordCrcPrefix(kBlobFormatVersion, header.data(), key_size_);
  Status s = Write(header.data(), hsize);
  if (!s.ok()) return s;
  RecordWalker::Check check;
  s = walker_->ReadAsIndexed(
      [&](const char* data, size_t n, bool value) {
        if (value) crc = crc32c::Extend(crc, data, n);
        return Write(data, n);
      },
      &check);
  if (!s.ok()) return s;
  if (!check.header_ok) {
    // A damaged header is written anew from the index entry (which has
    // checksums of its own); the body is copied as it was. Its value keeps
    // the CRC computed over it only where its block checksums vouch for it
    // (or it is empty): one with nothing left to check it by gets a CRC it
    // cannot match, so that reads still report it damaged and scrub repairs
    // it — a blob no longer stays uncompacted for one damaged header.
    stats_.headers_rebuilt++;
    if (!check.value_ok) {
      crc = ~crc;
      stats_.damaged_kept++;
    }
  } else if (!check.value_ok) {
    // A damaged value stays damaged: its stored CRC is carried over, which
    // the new header's fields do not match either.
    crc = check.header.record_crc;
    stats_.damaged_kept++;
  }
  EncodeRecordHeaderWithCrc(static_cast<uint8_t>(e.flags), at, e.version, key, key_size_, e.value_size, crc,
                            header.data());
  if (at >= out_flushed_) {
    std::memcpy(buf_.data() + (at - out_flushed_), header.data(), hsize);
  } else {
    IoSlice slice{header.data(), hsize};
    s = out_->Write(at, &slice, 1);
    if (!s.ok()) return s;
  }
  IndexEntry moved = e;
  moved.offset = at;
  index_.Insert(key, KeyHash64(key, key_size_), moved);
  max_stamp_ = std::max(max_stamp_, e.version.stamp);
  // Kept only as the newest record of its key: a tombstone is a live one.
  if (e.tombstone()) kept_tombstones_++;
  stats_.kept_records++;
  return Status::OK();
}

Status Compaction::Write(const char* data, size_t n) {
  buf_.insert(buf_.end(), data, data + n);
  out_size_ += n;
  stats_.bytes_written += n;
  return buf_.size() >= kWriteChunk ? Flush() : Status::OK();
}

Status Compaction::Flush() {
  if (buf_.empty()) return Status::OK();
  IoSlice slice{buf_.data(), buf_.size()};
  Status s = out_->Write(out_flushed_, &slice, 1);
  if (!s.ok()) return s;
  out_flushed_ += buf_.size();
  buf_.clear();
  return Status::OK();
}

Status Compaction::Install() {
  if (!walker_->done()) return Status::InvalidArgument("the compaction has records left to decide");
  if (stats_.installed) return Status::OK();
  Status s = Flush();
  if (s.ok()) s = out_->Sync();
  std::unique_ptr<IndexReader> built;
  if (s.ok() && stats_.kept_records > 0) {
    IndexBuildParams p;
    p.dir = engine_->dir();
    p.prefix = engine_->options().blob_file_prefix;
    p.blob_id = source_->id();
    p.blob_size = out_size_;
    p.records_total = stats_.kept_records;
    p.max_stamp = max_stamp_;
    p.bloom_bits_per_key = engine_->options().bloom_bits_per_key;
    p.file_name = p.temp_name = CompactedIndexFileName(p.prefix, p.blob_id);
    s = BuildIndexFile(fs_, p, index_, &built);
  }
  // What supersedes the records left out must be as durable as they were.
  for (const std::shared_ptr<Engine>& engine : set_.engines()) {
    if (!s.ok()) break;
    s = engine->SyncWritten();
  }
  if (!s.ok()) return s;
  built.reset();
  out_.reset();
  std::lock_guard<std::mutex> l(engine_->repair_mu_);
  return InstallLocked();
}

Status Compaction::InstallLocked() {
  if (engine_->shut_.load(std::memory_order_acquire)) return Status::Closed("engine is closed");
  if (!engine_->Serves(source_)) return Status::Busy("blob " + std::to_string(source_->id()) + " left service");
  const std::string& dir = engine_->dir();
  if (stats_.kept_records == 0) {
    // Nothing left: removing the blob commits; its index is an orphan the
    // next open would remove.
    Status s = fs_->Remove(new_blob_path_);
    if (s.ok()) s = fs_->Remove(blob_path_);
    if (!s.ok()) return s;
    created_ = false;
    stats_.installed = true;
    engine_->ReplaceBlob(source_, nullptr);
    s = fs_->Remove(index_path_);
    if (s.ok()) s = fs_->SyncDir(dir);
    return s;
  }
  Status s = fs_->Rename(new_blob_path_, blob_path_);
  if (!s.ok()) return s;
  // Committed: from here on the new blob is the blob, whatever happens.
  stats_.installed = true;
  created_ = false;
  s = fs_->SyncDir(dir);
  if (s.ok()) s = fs_->Rename(new_index_path_, index_path_);
  if (s.ok()) s = fs_->SyncDir(dir);
  std::unique_ptr<File> blob_file, index_file;
  if (s.ok()) s = fs_->OpenFile(blob_path_, false, &blob_file);
  if (s.ok()) s = fs_->OpenFile(index_path_, false, &index_file);
  std::unique_ptr<IndexReader> reader;
  if (s.ok()) {
    s = IndexReader::Open(std::move(index_file), key_size_, source_->id(), out_size_, &reader,
                          engine_->options().cache);
  }
  // On failure the old blob stays in service from its open file: it holds
  // every record the new one does, and the next open serves the new one.
  if (!s.ok()) return s;
  // Nothing it holds is garbage yet (a record superseded since it was
  // copied is counted against the old blob: the next recount sets that
  // right), and every tombstone it holds is a live one.
  auto blob = std::make_shared<Blob>(source_->id(), kBlobFormatVersion, std::move(blob_file), out_size_,
                                     std::move(reader));
  blob->SetLiveTombstones(kept_tombstones_);
  engine_->ReplaceBlob(source_, std::move(blob));
  stats_.new_size = out_size_;
  return Status::OK();
}

}  // namespace oyster
