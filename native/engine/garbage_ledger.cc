#include "engine/garbage_ledger.h"

#include <algorithm>
#include <utility>

#include "engine/version.h"

namespace oyster {
namespace {

// A record of a key and where it is, to choose between two as reads do.
struct Held {
  Blob* blob = nullptr;  // null: no record
  size_t engine = 0;     // the place of its engine in the ledger
  IndexEntry entry;
};

// Whether a is newer than b (records of one key): by CompareRecords; a full
// tie goes to the earlier engine (EngineSet), within an engine to the blob
// of higher id (Engine), within a blob to the later record (ActiveIndex).
bool Newer(const Held& a, const Held& b) {
  const int c = CompareRecords(a.entry.version, a.entry.tombstone(), b.entry.version, b.entry.tombstone());
  if (c != 0) return c > 0;
  if (a.engine != b.engine) return a.engine < b.engine;
  if (a.blob->id() != b.blob->id()) return a.blob->id() > b.blob->id();
  return a.entry.offset > b.entry.offset;
}

void CountGarbage(const Held& h) { h.blob->AddGarbage(1, h.blob->RecordBytes(h.entry)); }

// The number of the record of `batch` at `offset`, batch.n if none.
size_t RecordAt(const GarbageLedger::Batch& batch, uint64_t offset) {
  const Blob::NewRecord* end = batch.records + batch.n;
  const Blob::NewRecord* it = std::lower_bound(
      batch.records, end, offset, [](const Blob::NewRecord& r, uint64_t o) { return r.entry.offset < o; });
  return it != end && it->entry.offset == offset ? static_cast<size_t>(it - batch.records) : batch.n;
}

}  // namespace

GarbageLedger::GarbageLedger(std::vector<std::weak_ptr<Engine>> engines) : engines_(std::move(engines)) {}

void GarbageLedger::Announce(const Batch& batch) {
  std::lock_guard<std::mutex> l(pending_mu_);
  pending_.push_back(Announced{++announced_, batch});
}

void GarbageLedger::WaitAccounted() {
  std::unique_lock<std::mutex> l(pending_mu_);
  const uint64_t upto = announced_;
  accounted_cv_.wait(l, [&] {
    for (const Announced& p : pending_) {
      if (p.seq <= upto) return false;
    }
    return true;
  });
}

bool GarbageLedger::Unaccounted(const Blob* b, const IndexEntry& e, const Batch& current, size_t r,
                                ActiveIndex::Displaced* behind) {
  if (b == current.blob) {
    const size_t i = RecordAt(current, e.offset);
    if (i < current.n) {
      if (i < r) return false;
      *behind = current.displaced[i];
      return true;
    }
  }
  // Published, so announced before: found here if not accounted. (Its
  // `displaced` was filled in under the blob's lock, before the lookup saw
  // the record.)
  std::lock_guard<std::mutex> l(pending_mu_);
  for (const Announced& a : pending_) {
    const Batch& p = a.batch;
    if (p.blob != b || p.records == current.records) continue;
    const size_t i = RecordAt(p, e.offset);
    if (i < p.n) {
      *behind = p.displaced[i];
      return true;
    }
  }
  return false;
}

void GarbageLedger::Account(const Batch& batch) {
  std::lock_guard<std::mutex> l(mu_);
  // One view of the vdisk's blobs for the whole batch: those of records
  // accounted before are all in it. Holding the sets, not the engines: the
  // blobs are all the lookups need.
  size_t mine = engines_.size();
  bool usable = true;
  for (size_t i = 0; i < engines_.size() && usable; i++) {
    std::shared_ptr<Engine> e = engines_[i].lock();
    if (e == nullptr) {
      sets_.push_back(nullptr);
      continue;
    }
    // A closed engine's blobs are on their way out: nothing is looked up in them.
    usable = !e->shut_.load(std::memory_order_acquire);
    if (e.get() == batch.engine) mine = i;
    sets_.push_back(e->Current());
  }
  for (size_t r = 0; usable && mine < engines_.size() && r < batch.n; r++) {
    const Blob::NewRecord& record = batch.records[r];
    const Held written{batch.blob, mine, record.entry};
    const ActiveIndex::Displaced& displaced = batch.displaced[r];
    if (displaced.any && displaced.entry.offset == record.entry.offset) {
      // It lost to its key's entry in its own blob: superseded on arrival.
      // Nothing else changes (the key's newest record stays what it was):
      // no lookup ever returns it.
      CountGarbage(written);
      continue;
    }
    Held newest;  // of the other records of the key accounted so far
    bool failed = false;
    for (size_t i = 0; i < sets_.size() && !failed; i++) {
      if (sets_[i] == nullptr) continue;
      for (const std::shared_ptr<Blob>& b : sets_[i]->blobs) {
        // A blob where even a tombstone at its largest version would be
        // older than what was found cannot matter. Only indexed blobs are
        // passed over: their largest version is final.
        if (newest.blob != nullptr && b->indexed() &&
            CompareRecords(b->max_version(), true, newest.entry.version, newest.entry.tombstone()) < 0) {
          continue;
        }
        // Most blobs of a vdisk do not hold a given key: their filters say
        // so without a lock.
        if (!b->MayContain(record.key_hash)) continue;
        IndexEntry e;
        bool found = false;
        if (!b->Find(record.key, record.key_hash, &e, &found).ok()) {
          failed = true;  // left to the next recount
          break;
        }
        // Records not accounted yet (this one included) are looked past, to
        // what they displaced. An indexed blob holds none: a blob is sealed
        // and indexed only after its records are accounted.
        ActiveIndex::Displaced behind;
        while (found && !b->indexed() && Unaccounted(b.get(), e, batch, r, &behind)) {
          found = behind.any && behind.entry.offset != e.offset;
          e = behind.entry;
        }
        if (!found) continue;
        const Held other{b.get(), i, e};
        if (newest.blob == nullptr || Newer(other, newest)) newest = other;
      }
    }
    if (failed) continue;
    // The key's one record that is not garbage was `newest` (none: R is its
    // first); it is now the newer of the two, whose blob counts it as a
    // live tombstone if it is one.
    if (newest.blob != nullptr && !Newer(written, newest)) {
      CountGarbage(written);
      continue;
    }
    if (newest.blob != nullptr) {
      CountGarbage(newest);
      if (newest.entry.tombstone()) newest.blob->RemoveLiveTombstone();
    }
    if (record.entry.tombstone()) batch.blob->AddLiveTombstone();
  }
  sets_.clear();
  // Forgotten before the next step begins: from then on its records count
  // as accounted.
  {
    std::lock_guard<std::mutex> pl(pending_mu_);
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->batch.records == batch.records) {
        pending_.erase(it);
        break;
      }
    }
  }
  accounted_cv_.notify_all();
}

}  // namespace oyster
