#include "engine/scrub.h"

#include <algorithm>

namespace oyster {

Scrub::Scrub(const EngineSet* vdisk, std::shared_ptr<Engine> engine, std::unique_ptr<RecordWalker> walker)
    : vdisk_(vdisk ? new EngineSet(*vdisk) : nullptr),
      engine_(std::move(engine)),
      walker_(std::move(walker)),
      key_size_(engine_->options().key_size) {}

Status Scrub::Begin(const EngineSet* vdisk, std::shared_ptr<Engine> engine, uint64_t blob_id,
                    std::unique_ptr<Scrub>* scrub) {
  if (vdisk != nullptr && std::find(vdisk->engines().begin(), vdisk->engines().end(), engine) == vdisk->engines().end()) {
    return Status::InvalidArgument("the engine is not one of the set's");
  }
  std::vector<std::shared_ptr<Blob>> blobs;
  Status s = engine->CurrentBlobs(&blobs);
  if (!s.ok()) return s;
  std::shared_ptr<Blob> blob;
  for (const std::shared_ptr<Blob>& b : blobs) {
    if (b->id() == blob_id) blob = b;
  }
  if (!blob) return Status::NotFound("no blob " + std::to_string(blob_id) + " in " + engine->dir());
  if (blob->in_memory()) {
    return Status::InvalidArgument("blob " + std::to_string(blob_id) + " is not closed (it has no index file yet)");
  }
  const size_t key_size = engine->options().key_size;
  const uint64_t generation = blob->index_generation();
  std::unique_ptr<RecordWalker> walker;
  s = RecordWalker::Open(blob, key_size, &walker);
  bool repaired = false;
  if (s.IsCorruption()) {
    // A damaged index block, as a read meets it: counted, and the index
    // rebuilt from the blob, the source of truth.
    engine->corrupt_reads_.fetch_add(1, std::memory_order_relaxed);
    Status r = engine->RepairIndex(blob, generation);
    if (r.IsClosed()) return r;
    if (!r.ok()) return Status::Corruption(s.message() + "; rebuilding the index failed: " + r.ToString());
    repaired = blob->index_generation() != generation;
    s = RecordWalker::Open(blob, key_size, &walker);
  }
  if (!s.ok()) return s;
  std::unique_ptr<Scrub> c(new Scrub(vdisk, std::move(engine), std::move(walker)));
  c->index_repaired_ = repaired;
  *scrub = std::move(c);
  return Status::OK();
}

Status Scrub::Step(uint64_t budget, bool* done) {
  *done = false;
  if (!error_.ok()) return error_;
  if (engine_->shut_.load(std::memory_order_acquire)) {
    error_ = Status::Closed("engine is closed");
    return error_;
  }
  const uint64_t start = walker_->bytes_read();
  uint64_t passed = 0;  // superseded records passed in this step
  for (bool first = true; !walker_->done(); first = false) {
    if (!first && walker_->bytes_read() - start + passed * RecordWalker::kSkippedCost >= budget) break;
    // Read moves on to the next record: what is reported is taken before.
    // The key stays where it is (the walker's copy of the index).
    const char* key = walker_->key();
    const IndexEntry e = walker_->entry();
    bool newest = true;
    Status s = IsNewest(key, e, &newest);
    if (!s.ok()) {
      error_ = s;
      return s;
    }
    if (!newest) {
      walker_->Skip();
      visited_++;
      superseded_++;
      passed++;
      continue;
    }
    RecordWalker::Check check;
    s = walker_->Read(nullptr, &check);
    if (s.IsCorruption()) {
      // The header (or where the record should be) is damaged; the body
      // was not read, the walker is past the record all the same.
      Damage(key, e, s.message());
    } else if (!s.ok()) {
      error_ = s;
      return s;
    } else if (!check.value_ok) {
      const char* what = check.value_crc != check.header.record_crc ? "value does not match its record CRC"
                                                                     : "block checksums do not match the value";
      Damage(key, e, walker_->blob()->Damaged(what, e.offset).message());
    }
    visited_++;
  }
  *done = walker_->done();
  return Status::OK();
}

Status Scrub::IsNewest(const char* key, const IndexEntry& e, bool* newest) const {
  *newest = true;
  if (!vdisk_) return Status::OK();
  LookupResult found;
  EngineSet::Location where;
  Status s = vdisk_->Locate(ReadOptions(), key, &found, &where);
  // A damaged index elsewhere hides what wins: checked, as if it were this.
  if (s.IsCorruption()) return Status::OK();
  if (!s.ok()) return s;
  *newest = where.engine == engine_.get() && where.record.blob == walker_->blob() && where.record.entry.offset == e.offset;
  return Status::OK();
}

void Scrub::Damage(const char* key, const IndexEntry& e, const std::string& message) {
  ScrubDamage d;
  d.key.assign(key, key_size_);
  d.version = e.version;
  d.tombstone = e.tombstone();
  d.offset = e.offset;
  d.message = message;
  damaged_.push_back(std::move(d));
  // Seen by the metrics of corrupt reads, as a read meeting it would be.
  engine_->corrupt_reads_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<ScrubDamage> Scrub::TakeDamaged() {
  std::vector<ScrubDamage> taken(damaged_.begin() + static_cast<std::ptrdiff_t>(taken_), damaged_.end());
  taken_ = damaged_.size();
  return taken;
}

ScrubStats Scrub::stats() const {
  ScrubStats st;
  st.blob_id = walker_->blob()->id();
  st.entries = walker_->entries();
  st.visited = visited_;
  st.bytes_read = walker_->bytes_read();
  st.superseded = superseded_;
  st.damaged = damaged_.size();
  st.index_repaired = index_repaired_;
  return st;
}

}  // namespace oyster
