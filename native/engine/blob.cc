#include "engine/blob.h"

#include <algorithm>
#include <cstring>

#include "engine/format.h"

namespace oyster {

Blob::Blob(uint64_t id, uint32_t format, std::unique_ptr<File> file, uint64_t size,
           std::unique_ptr<ActiveIndex> index, uint64_t records, const Version& max_version, uint64_t max_stamp)
    : id_(id),
      format_(format),
      key_size_(index->key_size()),
      file_(std::move(file)),
      size_(size),
      records_(records),
      max_ts_(max_version.timestamp),
      max_ts_stamp_(max_version.stamp),
      max_stamp_(max_stamp),
      active_(std::move(index)) {}

Blob::Blob(uint64_t id, uint32_t format, std::unique_ptr<File> file, uint64_t size,
           std::unique_ptr<IndexReader> reader)
    : id_(id),
      format_(format),
      key_size_(reader->header().key_size),
      file_(std::move(file)),
      size_(size),
      records_(reader->header().records_total),
      max_ts_(reader->header().max_timestamp),
      max_ts_stamp_(reader->header().max_stamp_of_newest),
      max_stamp_(reader->header().max_stamp),
      index_build_claimed_(true),
      reader_(std::move(reader)),
      filter_(reader_.get()) {}

Status Blob::Find(const char* key, uint64_t key_hash, IndexEntry* e, bool* found, bool no_wait) const {
  std::shared_lock<std::shared_mutex> l(mu_, std::defer_lock);
  // A writer holds the lock only to publish a batch, but that may mean
  // growing a large in-memory index.
  if (!no_wait) {
    l.lock();
  } else if (!l.try_lock()) {
    return Status::WouldBlock("blob " + std::to_string(id_) + " is being published to");
  }
  if (active_) {
    *found = active_->Find(key, key_hash, e);
    return Status::OK();
  }
  return reader_->Find(key, key_hash, e, found, no_wait);
}

Status Blob::ForEachEntry(const std::function<void(const char*, const IndexEntry&)>& fn) const {
  std::shared_lock<std::shared_mutex> l(mu_);
  if (!active_) return reader_->ForEach(fn);
  for (uint32_t i = 0; i < active_->size(); i++) fn(active_->key_at(i), active_->entry_at(i));
  return Status::OK();
}

Status Blob::ReadRecord(const char* key, size_t key_size, const IndexEntry& e, RecordBuffer* out,
                        bool no_wait) const {
  const size_t hsize = RecordHeaderSize(format_, key_size);
  const size_t total = hsize + e.value_size;
  if (out->capacity < total) {
    out->storage.reset(new char[total]);
    out->capacity = total;
  }
  char* buf = out->storage.get();
  size_t n = 0;
  Status s = no_wait ? file_->ReadNoWait(e.offset, total, buf, &n) : file_->Read(e.offset, total, buf, &n);
  if (!s.ok()) return s;
  if (n != total) return Damaged("record truncated", e.offset);
  RecordHeader h;
  s = CheckRecordHeader(key, key_size, e, buf, &h);
  if (!s.ok()) return s;
  if (!RecordValueCrcMatches(format_, buf, key_size, buf + hsize, e.value_size, h.record_crc)) {
    return Damaged("record checksum mismatch", e.offset);
  }
  out->value_offset = hsize;
  out->value_size = e.value_size;
  return Status::OK();
}

Status Blob::CheckRecordHeader(const char* key, size_t key_size, const IndexEntry& e, const char* header,
                               RecordHeader* h) const {
  if (!DecodeRecordHeader(format_, header, key_size, e.offset, h)) return Damaged("record header damaged", e.offset);
  if (std::memcmp(h->key, key, key_size) != 0 || CompareVersions(h->version, e.version) != 0 ||
      h->value_size != e.value_size) {
    return Damaged("index entry does not match the record", e.offset);
  }
  return Status::OK();
}

Status Blob::Damaged(const std::string& what, uint64_t offset) const {
  return Status::Corruption(what + " in " + file_->path() + " at offset " + std::to_string(offset));
}

void Blob::Publish(const std::vector<NewRecord>& records, uint64_t new_size, ActiveIndex::Displaced* displaced) {
  Insert(records.data(), records.size(), displaced);
  size_.store(new_size, std::memory_order_release);
}

void Blob::PublishStreamed(const NewRecord& record, ActiveIndex::Displaced* displaced) {
  Insert(&record, 1, displaced);
}

void Blob::Insert(const NewRecord* records, size_t n, ActiveIndex::Displaced* displaced) {
  // Streamed puts publish from other threads than the writer: under the lock.
  std::unique_lock<std::shared_mutex> l(mu_);
  Version hi = max_version();
  uint64_t hi_stamp = max_stamp_.load(std::memory_order_relaxed);
  for (size_t i = 0; i < n; i++) {
    active_->Insert(records[i].key, records[i].key_hash, records[i].entry, &displaced[i]);
    if (CompareVersions(records[i].entry.version, hi) > 0) hi = records[i].entry.version;
    hi_stamp = std::max(hi_stamp, records[i].entry.version.stamp);
  }
  // Published under the lock, so a reader that finds an entry also sees a
  // max version that covers it.
  max_ts_stamp_.store(hi.stamp, std::memory_order_release);
  max_ts_.store(hi.timestamp, std::memory_order_release);
  max_stamp_.store(hi_stamp, std::memory_order_release);
  records_.fetch_add(n, std::memory_order_acq_rel);
}

void Blob::AddGarbage(uint64_t records, uint64_t bytes) {
  garbage_records_.fetch_add(records, std::memory_order_relaxed);
  garbage_bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

void Blob::SetGarbage(uint64_t records, uint64_t bytes) {
  garbage_records_.store(records, std::memory_order_relaxed);
  garbage_bytes_.store(bytes, std::memory_order_relaxed);
}

void Blob::SetDeadTombstones(uint64_t records, uint64_t bytes) {
  dead_tombstones_.store(records, std::memory_order_relaxed);
  dead_tombstone_bytes_.store(bytes, std::memory_order_relaxed);
}

void Blob::AddLiveTombstone() { live_tombstones_.fetch_add(1, std::memory_order_relaxed); }

void Blob::RemoveLiveTombstone() {
  // At 0 only when the count is off already (counters start from nothing
  // at open): stays at 0, the next recount sets it.
  uint64_t n = live_tombstones_.load(std::memory_order_relaxed);
  while (n > 0 && !live_tombstones_.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) {
  }
}

void Blob::SetLiveTombstones(uint64_t records) { live_tombstones_.store(records, std::memory_order_relaxed); }

uint64_t Blob::RecordBytes(const IndexEntry& e) const {
  return RecordSize(format_, key_size_, static_cast<uint8_t>(e.flags), e.value_size);
}

void Blob::Reserve(uint64_t new_size) {
  {
    std::lock_guard<std::mutex> l(streams_mu_);
    open_streams_++;
  }
  size_.store(new_size, std::memory_order_release);
}

bool Blob::EndStream() {
  std::lock_guard<std::mutex> l(streams_mu_);
  return --open_streams_ == 0 && build_refused_;
}

bool Blob::ClaimIndexBuild() {
  std::lock_guard<std::mutex> l(streams_mu_);
  if (open_streams_ > 0) {
    build_refused_ = true;
    return false;
  }
  build_refused_ = false;
  return !index_build_claimed_.exchange(true);
}

bool Blob::in_memory() const {
  std::shared_lock<std::shared_mutex> l(mu_);
  return active_ != nullptr;
}

void Blob::AttachIndexReader(std::unique_ptr<IndexReader> reader) {
  std::unique_ptr<ActiveIndex> old;
  {
    std::unique_lock<std::shared_mutex> l(mu_);
    reader_ = std::move(reader);
    old = std::move(active_);
    filter_.store(reader_.get(), std::memory_order_release);
  }
  index_generation_.fetch_add(1, std::memory_order_acq_rel);
  // `old` is freed here, outside the lock.
}

void Blob::ReplaceIndexReader(std::unique_ptr<IndexReader> reader) {
  {
    std::unique_lock<std::shared_mutex> l(mu_);
    retired_.push_back(std::move(reader_));
    reader_ = std::move(reader);
    filter_.store(reader_.get(), std::memory_order_release);
  }
  index_generation_.fetch_add(1, std::memory_order_acq_rel);
}

size_t Blob::IndexMemoryUsage() const {
  std::shared_lock<std::shared_mutex> l(mu_);
  if (active_) return active_->MemoryUsage();
  return reader_->MemoryUsage() - reader_->FilterMemoryUsage();
}

size_t Blob::FilterMemoryUsage() const {
  std::shared_lock<std::shared_mutex> l(mu_);
  return active_ ? 0 : reader_->FilterMemoryUsage();
}

uint64_t Blob::IndexFileSize() const {
  std::shared_lock<std::shared_mutex> l(mu_);
  return reader_ ? reader_->file_size() : 0;
}

}  // namespace oyster
