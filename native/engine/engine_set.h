// EngineSet reads the engines of one vdisk (the partitions it is split
// into) as one store: the newest record of a key across them, chosen by
// CompareRecords; a full tie goes to the engine earlier in the list. Reads
// first locate the record in every engine (bloom filters and memory, no
// value read) and then read only the winner's value. Digest and Entries
// summarise and list the newest records of whole key ranges, by which
// replicas of a vdisk find where they differ.

#ifndef OYSTER_ENGINE_ENGINE_SET_H_
#define OYSTER_ENGINE_ENGINE_SET_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/active_index.h"
#include "engine/digest.h"
#include "engine/engine.h"
#include "engine/tombstone_policy.h"
#include "util/status.h"

namespace oyster {

// The newest record of a key as EngineSet::Open answers it: as Get, with a
// large value left in the file, to be read through `reader`.
struct OpenResult {
  GetResult::Kind kind = GetResult::kAbsent;
  Version version;          // of the newest record (also set when it is corrupt)
  uint64_t value_size = 0;  // kFound: the value's length
  // kFound, value_size <= whole_up_to: the record, as Get reads it (reader null).
  RecordBuffer record;
  // kFound, larger values: where to read the value (record unused).
  std::unique_ptr<ValueReader> reader;
};

class EngineSet {
 public:
  // Where the newest record of a key is: which engine, and where in it.
  struct Location {
    Engine* engine = nullptr;  // nullptr: no engine holds a record of the key
    RecordLocation record;
  };

  // Requires a non-empty list of open engines sharing one key size.
  // Installs a GarbageLedger over them in each (Engine::JoinLedger): from
  // then on every write to any of them is accounted against the records of
  // all, until a set built later installs its own. Copies share the ledger.
  explicit EngineSet(std::vector<std::shared_ptr<Engine>> engines);

  // Like Engine::Locate across the engines.
  Status Locate(const ReadOptions& options, const char* key, LookupResult* result, Location* where) const;
  // Reads the record a Locate of `key` found (result kFound), as Get does.
  Status Read(const ReadOptions& options, const char* key, const Location& where, GetResult* result) const;
  // Like Engine::Get across the engines. Corruption if the newest record
  // fails its checks (result->version is still set).
  Status Get(const ReadOptions& options, const char* key, GetResult* result) const;
  // Like Engine::Lookup across the engines.
  Status Lookup(const ReadOptions& options, const char* key, LookupResult* result) const;
  // Like Get, except that a value of more than whole_up_to bytes is not
  // read: result->reader reads it (Engine::OpenValue). Corruption if the
  // newest record fails the checks made (result->version is still set).
  Status Open(const ReadOptions& options, const char* key, uint64_t whole_up_to, OpenResult* result) const;

  // How Digest and Entries scan the set.
  struct ScanOptions {
    // The keys one slice is planned to hold (0 counts as 1): the memory of
    // a scan, up to about K + 75 bytes a key, against the number of passes
    // over the indexes.
    uint64_t slice_keys = kDigestSliceKeys;
  };

  // Summarises the newest record (by CompareRecords, tombstones included) of
  // every key stored in any engine: *digests gets 2^bits entries, entry b the
  // sum (mod 2^64) of EntryHash over the keys of DigestBucket b (digest.h,
  // docs/FORMAT.md §11), and *keys the number of distinct keys. Two sets
  // holding the same newest record of every key have equal digests however
  // the records are spread over engines and blobs, and whatever superseded
  // records they also hold; a key whose newest record differs changes the
  // digest of its bucket (up to hash collisions). Records written during the
  // call may or may not count. InvalidArgument if bits > kMaxDigestBits,
  // Closed if an engine is; *digests and *keys are unspecified on failure.
  //
  // Cost: no value is read. The keys are resolved slice by slice
  // (DigestSlices: about records / slice_keys slices, records counting every
  // record in every blob); each slice reads every entry of every index, the
  // index files of closed blobs and the in-memory indexes of the others, and
  // keeps in memory only the newest record of each of its own keys. So
  // slices x (index entries of all blobs) entries are read and hashed, and
  // memory stays below about slice_keys x (K + 75) bytes whatever the size
  // of the set.
  Status Digest(const ScanOptions& options, uint32_t bits, std::vector<uint64_t>* digests, uint64_t* keys) const;
  Status Digest(uint32_t bits, std::vector<uint64_t>* digests, uint64_t* keys) const {
    return Digest(ScanOptions(), bits, digests, keys);
  }

  // The newest record of every key whose DigestBucket among 2^bits is one of
  // `buckets` (any order, duplicates allowed), packed as Engine::Snapshot
  // packs them and sorted by key bytes (memcmp), so that two replicas' lists
  // merge in one pass. InvalidArgument if bits > kMaxDigestBits or a bucket
  // is not below 2^bits, Closed if an engine is; *packed is unspecified on
  // failure. Costs as Digest, with slices planned for the buckets asked for
  // only; memory holds the answer twice (once while it is sorted) besides
  // one slice.
  Status Entries(const ScanOptions& options, uint32_t bits, const std::vector<uint32_t>& buckets,
                 std::string* packed) const;
  Status Entries(uint32_t bits, const std::vector<uint32_t>& buckets, std::string* packed) const {
    return Entries(ScanOptions(), bits, buckets, packed);
  }

  // What CountGarbage found, summed over the set's blobs.
  struct GarbageSummary {
    uint64_t keys = 0;              // distinct keys (the newest record of each is live)
    uint64_t tombstones = 0;        // of them, deleted
    uint64_t garbage_records = 0;   // records no read returns any more
    uint64_t garbage_bytes = 0;     // their bytes, and those of void and damaged stretches
    uint64_t dead_tombstones = 0;   // live tombstones a compaction would drop (TombstonePolicy)
    uint64_t dead_tombstone_bytes = 0;
  };

  // Counts anew, for every blob of the set, the records a read no longer
  // returns (Blob::SetGarbage: every record but the newest of its key across
  // the set, and the bytes besides those of the newest records), its live
  // tombstones (Blob::SetLiveTombstones: newest records that are
  // tombstones) and its dead tombstones (Blob::SetDeadTombstones: live
  // tombstones with no other record of their key in the set, expired by
  // `tombstones`).
  // Costs as Digest. Records written during the count may be counted wrong
  // until the next count. Closed if an engine is. Between counts the
  // engines' GarbageLedger keeps the garbage counters up to date.
  Status CountGarbage(const ScanOptions& options, const TombstonePolicy& tombstones,
                      GarbageSummary* summary) const;

  const std::vector<std::shared_ptr<Engine>>& engines() const { return engines_; }
  size_t key_size() const { return engines_[0]->options().key_size; }

 private:
  // A scan's blobs are ranked: an entry's offset in SliceView::newest
  // carries the number of its blob above kRankShift bits.
  static constexpr int kRankShift = 48;
  static constexpr uint64_t kMaxRankedBlobs = 1u << 16;

  // One slice of a scan.
  struct SliceView {
    const ActiveIndex* newest = nullptr;  // the newest entry of each key, offsets ranked
    const std::vector<uint32_t>* copies = nullptr;  // by key number: entries of the key across blobs
    const std::vector<std::shared_ptr<Blob>>* blobs = nullptr;  // by rank
  };

  // Resolves the keys of `buckets` slice by slice over one view of every
  // engine's blobs, handing fn the newest entry of each key of a slice;
  // *ranked (if given) receives the blobs of that view by rank.
  Status ScanSlices(const ScanOptions& options, uint32_t bits, const std::vector<uint32_t>& buckets,
                    const std::function<void(const SliceView& slice)>& fn,
                    std::vector<std::shared_ptr<Blob>>* ranked = nullptr) const;

  const std::vector<std::shared_ptr<Engine>> engines_;
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_ENGINE_SET_H_
