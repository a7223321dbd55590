// GarbageLedger keeps the garbage counters of a vdisk's blobs
// (Blob::garbage_records, garbage_bytes, live_tombstones) up to date as
// writes arrive, without scans: every record published is accounted against
// the newest other record of its key across the vdisk, and of the two, the
// one reads no longer return is counted in its blob. Before the record
// came, that newest other record was the one record of the key not counted,
// so every record is counted once: as it is superseded, or as it arrives if
// the vdisk holds a newer record of its key already. The one record of each
// key not counted is its newest; where that is a tombstone, its blob counts
// it among its live tombstones, from which the number of keys whose newest
// record is a value follows (Blob::live_tombstones).
//
// The vdisk is the engines of an EngineSet: its constructor makes a ledger
// over them and installs it in each (Engine::JoinLedger; the set built last
// wins). An engine in no set has a ledger over itself alone.
//
// A write is accounted after it is acknowledged, so a later write of its
// key (to another engine) may be published first; and the writes to the
// engines of a vdisk are accounted one at a time. So that the order of
// publishing does not matter, a batch of records is announced before it is
// published, and until it is accounted the lookups of other accounting
// steps look past its records (to the entries they displaced in their
// blob): every step sees exactly the records accounted before it, as if the
// writes had come in the order they are accounted in. The counts are thus
// exact however writes interleave, also concurrent writes of one key, save
// for these, which a recount (EngineSet::CountGarbage) sets right: records
// whose accounting was skipped (see Account); writes accounted by an older
// ledger while a new set's ledger takes over; counts made against a blob
// while a compaction replaces it. The counters start from nothing when an
// engine opens.
//
// Cost per record: a lock-free filter check in each indexed blob of the
// vdisk (Blob::MayContain), a lookup in each blob in memory, and an index
// block read where the key is found; blobs whose records are all older than
// what was found are passed over. A record that lost to its key's entry in
// its own blob costs nothing more.
//
// Thread-safe.

#ifndef OYSTER_ENGINE_GARBAGE_LEDGER_H_
#define OYSTER_ENGINE_GARBAGE_LEDGER_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/active_index.h"
#include "engine/blob.h"
#include "engine/engine.h"

namespace oyster {

class GarbageLedger {
 public:
  // Records published into one blob together, with what each displaced
  // there. The memory pointed at is the caller's and must stay unchanged
  // from Announce until Account returns, except that Blob::Publish fills
  // `displaced` in.
  struct Batch {
    const Engine* engine = nullptr;  // one of the ledger's
    Blob* blob = nullptr;            // one of the engine's, in memory
    const Blob::NewRecord* records = nullptr;  // in offset order
    const ActiveIndex::Displaced* displaced = nullptr;  // Blob::Publish's, per record
    size_t n = 0;
  };

  // Over `engines`, in the order of their EngineSet: of two records of a
  // key with the same version and kind, the one in the earlier engine is
  // the newer (as reads choose).
  explicit GarbageLedger(std::vector<std::weak_ptr<Engine>> engines);

  GarbageLedger(const GarbageLedger&) = delete;
  GarbageLedger& operator=(const GarbageLedger&) = delete;

  // `batch` is about to be published. Required before it is; quick.
  void Announce(const Batch& batch);

  // Accounts `batch`, announced and since published (the same Batch). For
  // each record R of key K, in order:
  //  - if R lost to the entry of K its blob had, R is garbage (no lookup);
  //  - otherwise the newest other record of K is the newest, by
  //    CompareRecords, of the newest accounted entry of K in every blob of
  //    every engine (a full tie goes to the earlier engine, within an engine
  //    to the later blob, within a blob to the later record); the older of
  //    R and that record is garbage. If R is the newer (or K has no other
  //    record), R counts as a live tombstone in its blob if it is a
  //    tombstone, and the other record no longer does in its own.
  // Nothing is counted for any record while an engine of the ledger is
  // closed, nor for a record whose lookup fails (a damaged index block):
  // accounting never fails a write. Engines destroyed are no longer part of
  // the vdisk. Lookups may read index blocks from the disk; one accounting
  // step of the ledger runs at a time.
  void Account(const Batch& batch);

  // Returns once every batch announced before the call is accounted: the
  // writes acknowledged by then are counted (for tests and recounts).
  void WaitAccounted();

 private:
  struct Announced {
    uint64_t seq;  // announced as the seq-th batch
    Batch batch;
  };

  // Whether `e`, the entry of a key found in blob `b`, is of a record not
  // accounted yet (while record r of `current` is: records before it are
  // accounted); if so *behind is what it displaced in `b`.
  bool Unaccounted(const Blob* b, const IndexEntry& e, const Batch& current, size_t r,
                   ActiveIndex::Displaced* behind);

  const std::vector<std::weak_ptr<Engine>> engines_;

  std::mutex mu_;  // held by Account: one accounting step at a time
  // The blobs of every engine (null: the engine is gone) during one Account;
  // kept between calls for their capacity only. Guarded by mu_.
  std::vector<std::shared_ptr<const Engine::BlobSet>> sets_;

  std::mutex pending_mu_;  // held only briefly; guards the three below
  std::condition_variable accounted_cv_;  // a batch was accounted
  uint64_t announced_ = 0;  // batches announced so far
  std::vector<Announced> pending_;  // announced, not accounted yet
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_GARBAGE_LEDGER_H_
