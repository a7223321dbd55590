#include "engine/engine_set.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include "engine/garbage_ledger.h"
#include "util/hash.h"

namespace oyster {
namespace {

// Sorts packed Snapshot entries of key_size-byte keys by key bytes.
void SortEntries(size_t key_size, std::string* packed) {
  const size_t size = kSnapshotEntryFixedSize + key_size;
  const size_t n = packed->size() / size;
  const char* p = packed->data();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::memcmp(p + a * size + kSnapshotEntryFixedSize, p + b * size + kSnapshotEntryFixedSize, key_size) < 0;
  });
  std::string sorted;
  sorted.reserve(packed->size());
  for (size_t i : order) sorted.append(p + i * size, size);
  packed->swap(sorted);
}

}  // namespace

EngineSet::EngineSet(std::vector<std::shared_ptr<Engine>> engines) : engines_(std::move(engines)) {
  // Weak pointers from the engines themselves: the set's own pointers may
  // alias without owning (the caller keeps the engines).
  std::vector<std::weak_ptr<Engine>> weak;
  for (const std::shared_ptr<Engine>& e : engines_) weak.push_back(e->weak_from_this());
  auto ledger = std::make_shared<GarbageLedger>(std::move(weak));
  for (const std::shared_ptr<Engine>& e : engines_) e->JoinLedger(ledger);
}

Status EngineSet::Locate(const ReadOptions& options, const char* key, LookupResult* result, Location* where) const {
  *result = LookupResult();
  where->engine = nullptr;
  RecordLocation at;
  for (const std::shared_ptr<Engine>& e : engines_) {
    LookupResult r;
    Status s = e->Locate(options, key, &r, &at);
    if (!s.ok()) return s;
    if (r.kind == GetResult::kAbsent) continue;
    // Strictly newer only: a full tie stays with the earlier engine.
    if (where->engine == nullptr ||
        CompareRecords(r.version, r.tombstone(), result->version, result->tombstone()) > 0) {
      *result = r;
      where->engine = e.get();
      where->record = std::move(at);
    }
  }
  return Status::OK();
}

Status EngineSet::Read(const ReadOptions& options, const char* key, const Location& where, GetResult* result) const {
  return where.engine->Read(options, key, where.record, result);
}

Status EngineSet::Get(const ReadOptions& options, const char* key, GetResult* result) const {
  LookupResult newest;
  Location where;
  Status s = Locate(options, key, &newest, &where);
  if (!s.ok() || newest.kind != GetResult::kFound) {
    result->kind = newest.kind;
    result->version = newest.version;
    return s;
  }
  return Read(options, key, where, result);
}

Status EngineSet::Open(const ReadOptions& options, const char* key, uint64_t whole_up_to,
                       OpenResult* result) const {
  LookupResult newest;
  Location where;
  Status s = Locate(options, key, &newest, &where);
  result->kind = GetResult::kAbsent;
  result->version = newest.version;
  result->value_size = newest.value_size;
  result->reader.reset();
  if (!s.ok() || newest.kind != GetResult::kFound) {
    result->kind = newest.kind;
    return s;
  }
  if (newest.value_size > whole_up_to) {
    s = where.engine->OpenValue(options, key, where.record, &result->reader);
  } else {
    GetResult whole;
    whole.record = std::move(result->record);  // its storage is reused
    s = Read(options, key, where, &whole);
    result->record = std::move(whole.record);
  }
  if (s.ok()) result->kind = GetResult::kFound;
  return s;
}

Status EngineSet::Lookup(const ReadOptions& options, const char* key, LookupResult* result) const {
  Location where;
  return Locate(options, key, result, &where);
}

Status EngineSet::ScanSlices(const ScanOptions& options, uint32_t bits, const std::vector<uint32_t>& buckets,
                             const std::function<void(const SliceView& slice)>& fn,
                             std::vector<std::shared_ptr<Blob>>* ranked) const {
  // One view of the blobs for all slices, as Snapshot takes one: a blob
  // created meanwhile is seen by none of them rather than by some. Ranked
  // as reads choose among full ties: later engines first, and in each engine
  // its oldest blob first, so that the higher rank wins.
  std::vector<std::shared_ptr<Blob>> blobs;
  uint64_t records = 0;
  for (auto e = engines_.rbegin(); e != engines_.rend(); ++e) {
    std::vector<std::shared_ptr<Blob>> view;
    Status s = (*e)->CurrentBlobs(&view);
    if (!s.ok()) return s;
    for (auto b = view.rbegin(); b != view.rend(); ++b) {
      records += (*b)->records();
      blobs.push_back(std::move(*b));
    }
  }
  if (blobs.size() > kMaxRankedBlobs) {
    return Status::NotSupported("a scan of more than " + std::to_string(kMaxRankedBlobs) + " blobs");
  }
  const DigestSlices slices(bits, buckets, records, std::max<uint64_t>(options.slice_keys, 1));
  const size_t k = key_size();
  SliceView view;
  view.blobs = &blobs;
  for (uint32_t slice = 0; slice < slices.count(); slice++) {
    ActiveIndex newest(k);
    std::vector<uint32_t> copies;
    for (uint64_t rank = 0; rank < blobs.size(); rank++) {
      Status s = blobs[rank]->ForEachEntry([&](const char* key, const IndexEntry& e) {
        const uint64_t hash = KeyHash64(key, k);
        if (slices.SliceOf(hash) != slice) return;
        IndexEntry ranked = e;
        ranked.offset = (rank << kRankShift) | e.offset;
        const uint32_t n = newest.Insert(key, hash, ranked);
        if (n >= copies.size()) copies.resize(n + 1, 0);
        copies[n]++;
      });
      if (!s.ok()) return s;
    }
    view.newest = &newest;
    view.copies = &copies;
    fn(view);
  }
  if (ranked) *ranked = std::move(blobs);
  return Status::OK();
}

Status EngineSet::CountGarbage(const ScanOptions& options, const TombstonePolicy& tombstones,
                               GarbageSummary* summary) const {
  *summary = GarbageSummary();
  struct Live {
    uint64_t records = 0, bytes = 0, tombstones = 0, dead_tombstones = 0, dead_tombstone_bytes = 0;
  };
  std::vector<Live> live;
  std::vector<uint32_t> all(size_t{1} << kMaxDigestBits);
  std::iota(all.begin(), all.end(), 0u);
  std::vector<std::shared_ptr<Blob>> ranked;
  Status s = ScanSlices(options, kMaxDigestBits, all, [&](const SliceView& slice) {
    const std::vector<std::shared_ptr<Blob>>* blobs = slice.blobs;
    live.resize(blobs->size());
    const ActiveIndex& newest = *slice.newest;
    for (uint32_t i = 0; i < newest.size(); i++) {
      IndexEntry e = newest.entry_at(i);
      const uint64_t rank = e.offset >> kRankShift;
      const Blob& blob = *(*blobs)[rank];
      const uint64_t bytes = blob.RecordBytes(e);
      Live& l = live[rank];
      l.records++;
      l.bytes += bytes;
      summary->keys++;
      if (!e.tombstone()) continue;
      summary->tombstones++;
      l.tombstones++;
      if ((*slice.copies)[i] == 1 && tombstones.Expired(e.version)) {
        l.dead_tombstones++;
        l.dead_tombstone_bytes += bytes;
      }
    }
  }, &ranked);
  if (!s.ok()) return s;
  live.resize(ranked.size());
  for (size_t rank = 0; rank < ranked.size(); rank++) {
    Blob& blob = *ranked[rank];
    const Live& l = live[rank];
    const uint64_t payload = blob.size() - kBlobHeaderSize;
    const uint64_t records = blob.records();
    // Records published during the scan may be counted in the size and not
    // among the live ones, or the other way round: the next count corrects it.
    const uint64_t garbage_records = records > l.records ? records - l.records : 0;
    const uint64_t garbage_bytes = payload > l.bytes ? payload - l.bytes : 0;
    blob.SetGarbage(garbage_records, garbage_bytes);
    blob.SetDeadTombstones(l.dead_tombstones, l.dead_tombstone_bytes);
    blob.SetLiveTombstones(l.tombstones);
    summary->garbage_records += garbage_records;
    summary->garbage_bytes += garbage_bytes;
    summary->dead_tombstones += l.dead_tombstones;
    summary->dead_tombstone_bytes += l.dead_tombstone_bytes;
  }
  return Status::OK();
}

Status EngineSet::Digest(const ScanOptions& options, uint32_t bits, std::vector<uint64_t>* digests,
                         uint64_t* keys) const {
  if (bits > kMaxDigestBits) return Status::InvalidArgument("bits must be in 0.." + std::to_string(kMaxDigestBits));
  digests->assign(size_t{1} << bits, 0);
  *keys = 0;
  std::vector<uint32_t> all(digests->size());
  std::iota(all.begin(), all.end(), 0u);
  const size_t k = key_size();
  std::string entry;
  return ScanSlices(options, bits, all, [&](const SliceView& slice) {
    const ActiveIndex& newest = *slice.newest;
    for (uint32_t i = 0; i < newest.size(); i++) {
      entry.clear();
      AppendSnapshotEntry(newest.key_at(i), k, newest.entry_at(i), &entry);
      (*digests)[DigestBucket(newest.hash_at(i), bits)] += EntryHash(entry.data(), k);
    }
    *keys += newest.size();
  });
}

Status EngineSet::Entries(const ScanOptions& options, uint32_t bits, const std::vector<uint32_t>& buckets,
                          std::string* packed) const {
  if (bits > kMaxDigestBits) return Status::InvalidArgument("bits must be in 0.." + std::to_string(kMaxDigestBits));
  for (uint32_t b : buckets) {
    if (b >> bits != 0) {
      return Status::InvalidArgument("bucket " + std::to_string(b) + " is not below 2^" + std::to_string(bits));
    }
  }
  packed->clear();
  const size_t k = key_size();
  Status s = ScanSlices(options, bits, buckets, [&](const SliceView& slice) {
    const ActiveIndex& newest = *slice.newest;
    for (uint32_t i = 0; i < newest.size(); i++) AppendSnapshotEntry(newest.key_at(i), k, newest.entry_at(i), packed);
  });
  if (!s.ok()) return s;
  SortEntries(k, packed);
  return Status::OK();
}

}  // namespace oyster
