// Replica digests (EngineSet::Digest and Entries): they depend on the newest
// record of every key only, not on how records are spread over engines and
// blobs or on the superseded records kept besides; a scan in slices answers
// as a single pass does; and the per-key hash is the one docs/FORMAT.md §11
// defines.

#include "engine/digest.h"

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/engine_set.h"
#include "test/test_util.h"
#include "test/testharness.h"
#include "util/coding.h"
#include "util/hash.h"

namespace oyster {
namespace {

using test::Engines;
using test::Key;
using test::WriteOp;

constexpr size_t kKeySize = 16;  // test::TestOptions

struct Digests {
  std::vector<uint64_t> buckets;
  uint64_t keys = 0;
};

Digests DigestOf(const EngineSet& set, uint32_t bits, uint64_t slice_keys = kDigestSliceKeys) {
  EngineSet::ScanOptions options;
  options.slice_keys = slice_keys;
  Digests d;
  Status s = set.Digest(options, bits, &d.buckets, &d.keys);
  if (!s.ok()) FAIL() << "Digest: " << s.ToString();
  if (d.buckets.size() != size_t{1} << bits) FAIL() << d.buckets.size() << " digests at bits " << bits;
  return d;
}

// "b1 b2 ...": the buckets whose digests differ ("" if none), and the key
// counts if they do.
std::string Differing(const Digests& a, const Digests& b) {
  std::string out;
  for (size_t i = 0; i < a.buckets.size(); i++) {
    if (a.buckets[i] != b.buckets[i]) out += (out.empty() ? "" : " ") + std::to_string(i);
  }
  if (a.keys != b.keys) out += " keys " + std::to_string(a.keys) + " vs " + std::to_string(b.keys);
  return out;
}

uint32_t BucketOf(uint64_t key, uint32_t bits) { return DigestBucket(KeyHash64(Key(key).data(), kKeySize), bits); }

// The key number of a test::Key (its last 8 bytes, big-endian).
uint64_t NumberOf(const char* key) {
  uint64_t n = 0;
  for (size_t j = kKeySize - 8; j < kKeySize; j++) n = (n << 8) | static_cast<uint8_t>(key[j]);
  return n;
}

// One line per entry, "<key number> <version>" or "<key number> DELETED@<version>".
std::string Readable(const std::string& packed) {
  const size_t size = kSnapshotEntryFixedSize + kKeySize;
  if (packed.size() % size != 0) FAIL() << "packed entries of " << packed.size() << " bytes";
  std::string out;
  for (size_t off = 0; off < packed.size(); off += size) {
    const char* p = packed.data() + off;
    const Version v{DecodeFixed64(p + 1), DecodeFixed64(p + 9)};
    out += std::to_string(NumberOf(p + kSnapshotEntryFixedSize)) + (p[0] == 2 ? " DELETED@" : " ") + v.ToString() +
           "\n";
  }
  return out;
}

std::string EntriesOf(const EngineSet& set, uint32_t bits, const std::vector<uint32_t>& buckets,
                      uint64_t slice_keys = kDigestSliceKeys) {
  EngineSet::ScanOptions options;
  options.slice_keys = slice_keys;
  std::string packed;
  Status s = set.Entries(options, bits, buckets, &packed);
  if (!s.ok()) FAIL() << "Entries: " << s.ToString();
  return Readable(packed);
}

// Writes ops in one go, failing the test on any error.
void WriteOk(Engine* engine, const std::vector<WriteOp>& ops) {
  for (const Status& s : test::WriteAll(engine, ops)) ASSERT_OK(s);
}

// The newest record of every key, kept by the rule of CompareRecords without
// the engine, and what Digest and Entries must answer for it by the
// definitions of docs/FORMAT.md §11, spelled out again here.
class Newest {
 public:
  void Apply(const WriteOp& op) {
    auto it = newest_.find(op.key);
    if (it == newest_.end() ||
        CompareRecords(op.version, op.tombstone, it->second.first, it->second.second) > 0) {
      newest_[op.key] = {op.version, op.tombstone};
    }
  }
  void Apply(const std::vector<WriteOp>& ops) {
    for (const WriteOp& op : ops) Apply(op);
  }

  Digests DigestAt(uint32_t bits) const {
    Digests d;
    d.buckets.assign(size_t{1} << bits, 0);
    d.keys = newest_.size();
    for (const auto& [key, record] : newest_) {
      const uint64_t key_hash = KeyHash64(key.data(), key.size());
      const uint32_t bucket = bits == 0 ? 0 : static_cast<uint32_t>(key_hash >> (64 - bits));
      d.buckets[bucket] += KeyHash64(Packed(key, record).data(), kSnapshotEntryFixedSize + key.size());
    }
    return d;
  }

  std::string EntriesAt(uint32_t bits, const std::vector<uint32_t>& buckets) const {
    std::vector<bool> asked(size_t{1} << bits);
    for (uint32_t b : buckets) asked[b] = true;
    std::string packed;
    // std::map orders keys as memcmp does.
    for (const auto& [key, record] : newest_) {
      if (asked[DigestBucket(KeyHash64(key.data(), key.size()), bits)]) packed += Packed(key, record);
    }
    return Readable(packed);
  }

 private:
  static std::string Packed(const std::string& key, const std::pair<Version, bool>& record) {
    char fixed[kSnapshotEntryFixedSize];
    fixed[0] = record.second ? 2 : 1;
    EncodeFixed64(fixed + 1, record.first.timestamp);
    EncodeFixed64(fixed + 9, record.first.stamp);
    return std::string(fixed, sizeof(fixed)) + key;
  }

  std::map<std::string, std::pair<Version, bool>> newest_;
};

// The newest record of key i of the fixtures below: a value, or every
// seventh a tombstone, at a stamped version.
WriteOp NewestOf(uint64_t i) {
  const Version v = Version::Of(1000 + i, 1700000000000000 + i % 5, static_cast<uint32_t>(1 + i % 3));
  return i % 7 == 0 ? WriteOp::Delete(Key(i), v) : WriteOp::Put(Key(i), v, "newest " + std::to_string(i));
}

// Keys [0, n) with their newest records written in one engine, one blob.
void WriteCompact(Engine* engine, uint64_t n, Newest* model) {
  std::vector<WriteOp> ops;
  for (uint64_t i = 0; i < n; i++) ops.push_back(NewestOf(i));
  WriteOk(engine, ops);
  model->Apply(ops);
}

// The same newest records spread over three engines, in closed blobs (some
// served by index files after a reopen) and active ones, among older
// versions of the keys, copies of the newest records, and values that a
// tombstone of the same version beats.
void WriteSpread(const Engines& e, uint64_t n) {
  std::vector<WriteOp> older[3], first_half[3], second_half[3], extra[3];
  for (uint64_t i = 0; i < n; i++) {
    const WriteOp newest = NewestOf(i);
    if (i % 4 == 0) older[i % 3].push_back(WriteOp::Put(Key(i), i, "old"));  // same engine, an earlier blob
    (i < n / 2 ? first_half : second_half)[i % 3].push_back(newest);
    if (i % 2 == 0) extra[(i + 1) % 3].push_back(WriteOp::Put(Key(i), Version::Of(1000 + i, 1, 0), "older"));
    if (i % 11 == 0) extra[(i + 2) % 3].push_back(newest);  // a second copy of the newest record
    if (newest.tombstone) extra[(i + 2) % 3].push_back(WriteOp::Put(Key(i), newest.version, "deleted value"));
  }
  for (int j = 0; j < 3; j++) WriteOk(e[j], older[j]);
  ASSERT_OK(e[0]->CloseActiveBlob());
  ASSERT_OK(e[1]->CloseActiveBlob());
  for (int j = 0; j < 3; j++) WriteOk(e[j], first_half[j]);
  ASSERT_OK(e[0]->CloseActiveBlob());
  ASSERT_OK(e[2]->CloseActiveBlob());
  for (int j = 0; j < 3; j++) WriteOk(e[j], second_half[j]);
  for (int j = 0; j < 3; j++) WriteOk(e[j], extra[j]);
  ASSERT_OK(e.db(1)->Reopen());
}

}  // namespace

TEST(Digest, EntryHashIsFrozen) {
  // The example of docs/FORMAT.md §11 (K = 8).
  const std::string key = "key-0001";
  IndexEntry e;
  e.version = Version::Of(1700000000, 1700000000123456, 3);
  std::string entry;
  AppendSnapshotEntry(key.data(), key.size(), e, &entry);
  ASSERT_EQ(entry.size(), 25u);
  ASSERT_EQ(entry, std::string("\x01\x00\xf1\x53\x65\x00\x00\x00\x00"
                               "\x03\x00\x24\x02\x82\x41\xa2\x60key-0001",
                               25));
  ASSERT_EQ(EntryHash(entry.data(), key.size()), 0x8A4CEAA503ED5F03ull);
  e.flags = kFlagTombstone;
  entry.clear();
  AppendSnapshotEntry(key.data(), key.size(), e, &entry);
  ASSERT_EQ(entry[0], 2);
  ASSERT_EQ(EntryHash(entry.data(), key.size()), 0xD410DBDBF660BE97ull);
  // KeyHash64("key-0001") = 0x1F8695614BD85988 (§5.1).
  ASSERT_EQ(DigestBucket(0x1F8695614BD85988ull, 0), 0u);
  ASSERT_EQ(DigestBucket(0x1F8695614BD85988ull, 12), 0x1F8u);
  ASSERT_EQ(DigestBucket(0x1F8695614BD85988ull, 16), 0x1F86u);

  // An engine holding that record (and an older one) digests to the same.
  test::TestEngine db(test::TmpDir() + "/k8");
  db.options.key_size = 8;
  ASSERT_OK(db.Open());
  ASSERT_OK(test::Put(db.get(), key, Version::Of(1700000000, 1700000000123455, 3), "older"));
  ASSERT_OK(test::Put(db.get(), key, e.version, "value"));
  const EngineSet set({std::shared_ptr<Engine>(std::shared_ptr<Engine>(), db.get())});
  std::vector<uint64_t> digests;
  uint64_t keys = 0;
  ASSERT_OK(set.Digest(12, &digests, &keys));
  ASSERT_EQ(keys, 1u);
  ASSERT_EQ(digests[0x1F8], 0x8A4CEAA503ED5F03ull);
}

TEST(Digest, SpreadOverEnginesAndBlobsDoesNotMatter) {
  const uint64_t n = 600;
  Engines one(1, "one");
  Newest model;
  WriteCompact(one[0], n, &model);
  Engines spread(3, "spread");
  WriteSpread(spread, n);
  ASSERT_EQ(spread[1]->Stats().blobs_in_memory, 0u) << "reopened: served by index files";
  ASSERT_GT(spread[0]->Stats().blobs, 2u);
  for (uint32_t bits : {0u, 1u, 8u, 12u, 16u}) {
    const Digests expected = model.DigestAt(bits);
    ASSERT_EQ(expected.keys, n);
    ASSERT_EQ(Differing(DigestOf(one.Set({0}), bits), expected), "") << "bits " << bits;
    ASSERT_EQ(Differing(DigestOf(spread.Set({0, 1, 2}), bits), expected), "") << "bits " << bits;
    ASSERT_EQ(Differing(DigestOf(spread.Set({2, 0, 1}), bits), expected), "") << "bits " << bits;
  }
  const std::vector<uint32_t> buckets = {0, 3, 5, 9, 15, 3};
  const std::string expected = model.EntriesAt(4, buckets);
  ASSERT_EQ(EntriesOf(one.Set({0}), 4, buckets), expected);
  ASSERT_EQ(EntriesOf(spread.Set({1, 2, 0}), 4, buckets), expected);
  ASSERT_EQ(EntriesOf(spread.Set({0, 1, 2}), 0, {0}), model.EntriesAt(0, {0}));
}

TEST(Digest, OneDifferenceChangesOneBucket) {
  const uint32_t bits = 12;
  Engines a(2, "a");
  Engines b(1, "b");
  Newest model;
  WriteCompact(b[0], 500, &model);
  std::vector<WriteOp> split[2];
  for (uint64_t i = 0; i < 500; i++) split[i % 2].push_back(NewestOf(i));
  WriteOk(a[0], split[0]);
  ASSERT_OK(a[0]->CloseActiveBlob());
  WriteOk(a[1], split[1]);
  const EngineSet sa = a.Set({0, 1});
  const EngineSet sb = b.Set({0});
  ASSERT_EQ(Differing(DigestOf(sa, bits), DigestOf(sb, bits)), "");

  // A newer version of one key, on one side.
  ASSERT_OK(test::Put(b[0], Key(77), Version::Of(5000, 1, 1), "newer"));
  ASSERT_EQ(Differing(DigestOf(sa, bits), DigestOf(sb, bits)), std::to_string(BucketOf(77, bits)));
  const std::string ours = EntriesOf(sa, bits, {BucketOf(77, bits)});
  const std::string theirs = EntriesOf(sb, bits, {BucketOf(77, bits)});
  ASSERT_EQ(ours, model.EntriesAt(bits, {BucketOf(77, bits)}));
  model.Apply(WriteOp::Put(Key(77), Version::Of(5000, 1, 1), "newer"));
  ASSERT_EQ(theirs, model.EntriesAt(bits, {BucketOf(77, bits)}));
  ASSERT_TRUE(ours.find("77 DELETED@1077.") != std::string::npos) << ours;
  ASSERT_TRUE(theirs.find("77 5000.1@1\n") != std::string::npos) << theirs;
  // The other side catches up, in its other engine.
  ASSERT_OK(test::Put(a[0], Key(77), Version::Of(5000, 1, 1), "newer"));
  ASSERT_EQ(Differing(DigestOf(sa, bits), DigestOf(sb, bits)), "");

  // An extra tombstone: a key the other side never saw.
  ASSERT_OK(test::Delete(a[1], Key(1000), Version::Of(6000, 2, 2)));
  ASSERT_EQ(Differing(DigestOf(sa, bits), DigestOf(sb, bits)), std::to_string(BucketOf(1000, bits)) + " keys 501 vs 500");
  const std::string with = EntriesOf(sa, bits, {BucketOf(1000, bits)});
  ASSERT_TRUE(with.find("1000 DELETED@6000.2@2\n") != std::string::npos) << with;
  ASSERT_TRUE(EntriesOf(sb, bits, {BucketOf(1000, bits)}).find("1000 ") == std::string::npos);
  ASSERT_OK(test::Delete(b[0], Key(1000), Version::Of(6000, 2, 2)));
  ASSERT_EQ(Differing(DigestOf(sa, bits), DigestOf(sb, bits)), "");

  // A tombstone of a value's very version beats it.
  ASSERT_EQ(NewestOf(5).tombstone, false);
  ASSERT_OK(test::Delete(b[0], Key(5), NewestOf(5).version));
  ASSERT_EQ(Differing(DigestOf(sa, bits), DigestOf(sb, bits)), std::to_string(BucketOf(5, bits)));
  ASSERT_OK(test::Delete(a[1], Key(5), NewestOf(5).version));

  // Older versions, wherever they land, change nothing.
  const Digests before = DigestOf(sa, bits);
  ASSERT_OK(test::Put(a[0], Key(200), Version::Of(10, 1, 1), "older"));
  ASSERT_OK(test::Put(a[1], Key(201), Version::Of(1201, 0, 0), "older, same second"));
  ASSERT_OK(test::Delete(a[1], Key(202), Version::Of(3, 0, 0)));
  ASSERT_EQ(Differing(DigestOf(sa, bits), before), "");
  ASSERT_EQ(Differing(DigestOf(sa, bits), DigestOf(sb, bits)), "");
}

TEST(Digest, Bits0And16) {
  Engines e(2);
  Newest model;
  WriteCompact(e[0], 300, &model);
  ASSERT_OK(test::Put(e[1], Key(10), Version::Of(9000, 0, 0), "newer"));
  model.Apply(WriteOp::Put(Key(10), Version::Of(9000, 0, 0), "newer"));
  const EngineSet set = e.Set({0, 1});
  const Digests d0 = DigestOf(set, 0);
  const Digests d16 = DigestOf(set, 16);
  ASSERT_EQ(Differing(d0, model.DigestAt(0)), "");
  ASSERT_EQ(Differing(d16, model.DigestAt(16)), "");
  ASSERT_EQ(d0.keys, 300u);
  ASSERT_EQ(d16.keys, 300u);
  uint64_t sum = 0;
  size_t used = 0;
  for (uint64_t x : d16.buckets) {
    sum += x;
    used += x != 0;
  }
  ASSERT_EQ(sum, d0.buckets[0]) << "a bucket's digest is the sum over its keys";
  ASSERT_GT(used, 290u);
  ASSERT_EQ(EntriesOf(set, 0, {0, 0}), model.EntriesAt(0, {0}));
  const std::string ten = EntriesOf(set, 16, {BucketOf(10, 16)});
  ASSERT_EQ(ten, model.EntriesAt(16, {BucketOf(10, 16)}));
  ASSERT_TRUE(ten.find("10 9000.0@0\n") != std::string::npos) << ten;
  ASSERT_EQ(EntriesOf(set, 16, {}), "");

  std::vector<uint64_t> digests;
  uint64_t keys;
  std::string packed;
  ASSERT_STATUS(kInvalidArgument, set.Digest(17, &digests, &keys));
  ASSERT_STATUS(kInvalidArgument, set.Entries(17, {0}, &packed));
  ASSERT_STATUS(kInvalidArgument, set.Entries(0, {1}, &packed));
  ASSERT_STATUS(kInvalidArgument, set.Entries(16, {3, 65536}, &packed));
}

TEST(Digest, EmptyAndClosedEngines) {
  Engines e(2);
  const EngineSet set = e.Set({0, 1});
  const Digests d = DigestOf(set, 8);
  ASSERT_EQ(d.keys, 0u);
  for (uint64_t x : d.buckets) ASSERT_EQ(x, 0u);
  ASSERT_EQ(EntriesOf(set, 8, {1, 2}), "");
  ASSERT_OK(test::Put(e[0], Key(1), 1, "v"));
  // Closed, not dropped: the set refers to the engine without owning it.
  ASSERT_OK(e[1]->Close());
  std::vector<uint64_t> digests;
  uint64_t keys;
  std::string packed;
  ASSERT_STATUS(kClosed, set.Digest(8, &digests, &keys));
  ASSERT_STATUS(kClosed, set.Entries(8, {1}, &packed));
}

TEST(Digest, SlicesAnswerAsOnePass) {
  Engines e(2);
  Newest model;
  for (int round = 0; round < 3; round++) {
    for (int j = 0; j < 2; j++) {
      std::vector<WriteOp> ops;
      for (uint64_t i = 0; i < 600; i++) {
        if ((i + round + j) % 3 == 0) continue;
        const Version v = Version::Of(100 + (i * 7 + round * 13 + j) % 50, i % 4, static_cast<uint32_t>(j));
        ops.push_back((i + round) % 9 == 0 ? WriteOp::Delete(Key(i), v) : WriteOp::Put(Key(i), v, "x"));
      }
      WriteOk(e[j], ops);
      model.Apply(ops);
      if (round < 2) {
        ASSERT_OK(e[j]->CloseActiveBlob());
      }
    }
  }
  const EngineSet set = e.Set({0, 1});
  const uint64_t records = e[0]->RecordsCount() + e[1]->RecordsCount();
  std::vector<uint32_t> all(1u << 5);
  for (uint32_t b = 0; b < all.size(); b++) all[b] = b;
  const std::vector<uint32_t> some = {30, 3, 17, 17};
  for (uint64_t slice_keys : {5ull, 64ull, 1000000ull}) {
    for (uint32_t bits : {0u, 5u, 12u}) {
      ASSERT_EQ(Differing(DigestOf(set, bits, slice_keys), model.DigestAt(bits)), "")
          << "bits " << bits << ", slices of " << slice_keys << " keys";
    }
    ASSERT_EQ(EntriesOf(set, 5, some, slice_keys), model.EntriesAt(5, some)) << "slices of " << slice_keys << " keys";
    ASSERT_EQ(DigestSlices(5, all, records, slice_keys).count() > 1, slice_keys < records);
  }
}

// Digests taken while a writer publishes to the active blob and seals it
// see each key's newest record as of some moment, and never lose a key.
TEST(Digest, WhileWritingAndSealing) {
  Engines e(1);
  const EngineSet set = e.Set({0});
  Newest model;
  std::vector<std::vector<WriteOp>> rounds(12);
  for (uint64_t r = 0; r < rounds.size(); r++) {
    for (uint64_t i = 0; i < 200; i++) {
      rounds[r].push_back(WriteOp::Put(Key(r * 200 + i), Version::Of(r + 1, i, 0), "new key"));
      if (r > 0) rounds[r].push_back(WriteOp::Delete(Key((r - 1) * 200 + i), Version::Of(r + 1, i, 1)));
    }
    model.Apply(rounds[r]);
  }
  std::atomic<bool> done{false};
  std::vector<Status> failures;
  std::thread writer([&] {
    for (uint64_t r = 0; r < rounds.size(); r++) {
      for (const Status& s : test::WriteAll(e[0], rounds[r])) {
        if (!s.ok()) failures.push_back(s);
      }
      if (r % 3 == 2) {
        Status s = e[0]->CloseActiveBlob();
        if (!s.ok()) failures.push_back(s);
      }
    }
    done = true;
  });
  // Checked after the join: a failed assertion must not leave the writer running.
  std::string problems;
  uint64_t seen = 0;
  int digests = 0;
  EngineSet::ScanOptions small;
  small.slice_keys = 150;
  while (!done) {
    std::vector<uint64_t> d;
    uint64_t keys = 0;
    Status s = set.Digest(small, 8, &d, &keys);
    if (!s.ok()) problems += s.ToString() + "; ";
    // A later digest sees every key an earlier one saw.
    if (keys < seen || keys > 2400) problems += std::to_string(keys) + " keys after " + std::to_string(seen) + "; ";
    seen = keys;
    digests++;
  }
  writer.join();
  for (const Status& s : failures) ASSERT_OK(s);
  ASSERT_EQ(problems, "");
  ASSERT_EQ(Differing(DigestOf(set, 8, 150), model.DigestAt(8)), "");
  test::Note(std::to_string(digests) + " digests while writing");
}

TEST(DigestSlices, EvenMonotoneAndComplete) {
  uint64_t x = test::RandomSeed();
  auto next = [&x] {  // splitmix64
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  // One bucket cut into ten slices of hash ranges.
  const DigestSlices one(0, {0}, 1000, 100);
  ASSERT_EQ(one.count(), 10u);
  std::vector<uint32_t> hits(10);
  for (int i = 0; i < 100000; i++) {
    const uint32_t s = one.SliceOf(next());
    ASSERT_LT(s, 10u);
    hits[s]++;
  }
  for (uint32_t h : hits) ASSERT_TRUE(h > 9000 && h < 11000) << h;
  ASSERT_EQ(one.SliceOf(0), 0u);
  ASSERT_EQ(one.SliceOf(~0ull), 9u);

  // Three of 256 buckets (one asked twice): about 2560 * 3 / 256 = 30 keys,
  // slices of 5, each bucket covered by two slices in bucket order.
  const DigestSlices three(8, {200, 3, 3, 100}, 2560, 5);
  ASSERT_EQ(three.count(), 6u);
  auto in = [](uint64_t bucket, uint64_t below) { return (bucket << 56) | below; };
  ASSERT_EQ(three.SliceOf(in(3, 0)), 0u);
  ASSERT_EQ(three.SliceOf(in(3, (1ull << 56) - 1)), 1u);
  ASSERT_EQ(three.SliceOf(in(100, 0)), 2u);
  ASSERT_EQ(three.SliceOf(in(100, 1ull << 55)), 3u);
  ASSERT_EQ(three.SliceOf(in(200, (1ull << 56) - 1)), 5u);
  ASSERT_EQ(three.SliceOf(in(50, 12345)), DigestSlices::kNone);
  ASSERT_EQ(three.SliceOf(in(255, 0)), DigestSlices::kNone);

  ASSERT_EQ(DigestSlices(8, {}, 1000, 5).count(), 0u);
  ASSERT_EQ(DigestSlices(16, {7}, 0, 5).count(), 1u);
  const DigestSlices many(0, {0}, 1ull << 40, 1);
  ASSERT_EQ(many.count(), DigestSlices::kMaxSlices);
  ASSERT_EQ(many.SliceOf(~0ull), DigestSlices::kMaxSlices - 1);
  std::vector<uint32_t> all(1u << 16);
  for (uint32_t b = 0; b < all.size(); b++) all[b] = b;
  const DigestSlices wide(16, all, 1ull << 30, 1000000);
  ASSERT_EQ(wide.count(), 1074u);
  uint32_t last = 0;
  for (uint64_t h = 0; h < 1000; h++) {
    const uint32_t s = wide.SliceOf(h * (~0ull / 1000));
    ASSERT_GE(s, last);
    ASSERT_LT(s, wide.count());
    last = s;
  }
}

}  // namespace oyster
