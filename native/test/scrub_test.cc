// Scrub: a clean blob checked in throttled steps, damage found and
// reported (and counted as corrupt reads), the repair the layer above makes,
// refusals, a damaged index, and a compaction of the blob under way.

#include "engine/scrub.h"

#include <algorithm>
#include <cstdio>

#include "engine/compaction.h"
#include "engine/format.h"
#include "test/test_util.h"
#include "test/testharness.h"
#include "util/hash.h"

namespace oyster {
namespace {

using test::Key;
using test::Read;
using test::TestEngine;
using test::ValueFor;
using test::WriteOp;

constexpr size_t kKeySize = 16;

// A shared_ptr to an engine the TestEngine owns.
std::shared_ptr<Engine> Shared(Engine* engine) { return std::shared_ptr<Engine>(std::shared_ptr<Engine>(), engine); }

EngineSet SetOf(TestEngine* db) { return EngineSet({Shared(db->get())}); }

// What a whole scrub found.
struct ScrubRun {
  ScrubStats stats;
  std::vector<ScrubDamage> damaged;  // damaged() at the end
  std::vector<ScrubDamage> taken;    // TakeDamaged after every step, in order
  uint64_t steps = 0;
  uint64_t max_step_bytes = 0;       // the most bytes a step read
};

// Scrubs blob `id` of `engine` to the end in steps of `budget` bytes.
// With `vdisk`, only what reads of the vdisk return is checked.
Status RunScrub(Engine* engine, uint64_t id, ScrubRun* run, uint64_t budget = 64 << 10,
                const EngineSet* vdisk = nullptr) {
  std::unique_ptr<Scrub> scrub;
  Status s = Scrub::Begin(vdisk, Shared(engine), id, &scrub);
  if (!s.ok()) return s;
  for (bool done = false; !done;) {
    const uint64_t before = scrub->stats().bytes_read;
    s = scrub->Step(budget, &done);
    if (!s.ok()) return s;
    run->steps++;
    run->max_step_bytes = std::max(run->max_step_bytes, scrub->stats().bytes_read - before);
    for (ScrubDamage& d : scrub->TakeDamaged()) run->taken.push_back(std::move(d));
  }
  if (!scrub->done()) return Status::Corruption("done reported, done() says otherwise");
  run->stats = scrub->stats();
  run->damaged = scrub->damaged();
  return Status::OK();
}

// The entry of `key` in blob `id` of `engine` (which must hold it).
IndexEntry EntryOf(Engine* engine, uint64_t id, const std::string& key) {
  std::vector<std::shared_ptr<Blob>> blobs;
  Status s = engine->CurrentBlobs(&blobs);
  if (!s.ok()) FAIL() << s.ToString();
  for (const std::shared_ptr<Blob>& b : blobs) {
    if (b->id() != id) continue;
    IndexEntry e;
    bool found = false;
    s = b->Find(key.data(), KeyHash64(key.data(), key.size()), &e, &found);
    if (!s.ok() || !found) FAIL() << "no entry of the key in blob " << id << ": " << s.ToString();
    return e;
  }
  FAIL() << "no blob " << id;
  return IndexEntry();
}

uint64_t RecordBytes(uint64_t value_size, bool tombstone = false) {
  const uint8_t flags = tombstone ? kFlagTombstone : (ValueHasBlocks(value_size) ? kFlagBlocks : 0);
  return RecordSize(kBlobFormatVersion, kKeySize, flags, value_size);
}

// The value size of key i in Clean: small ones, every tenth over one block
// (with block checksums), key 150 over a read window; every seventh key is
// deleted.
size_t CleanSize(uint64_t i) {
  if (i == 150) return 2 * RecordWalker::kPieceSize + 500000;
  if (i % 10 == 3) return 70000 + i * 1500;
  return 50 + i % 200;
}

}  // namespace

// A healthy blob of values small and large and of tombstones, some keys
// overwritten within it: every record its index points at is checked in
// steps of about the budget, and nothing is reported.
TEST(Scrub, CleanBlob) {
  TestEngine db(test::TmpDir() + "/p");
  ASSERT_OK(db.Open());
  test::Model model;
  constexpr uint64_t kKeys = 300;
  std::vector<WriteOp> ops;
  for (uint64_t i = 0; i < 50; i++) ops.push_back(WriteOp::Put(Key(i), 1, ValueFor(Key(i), 1, 80)));
  uint64_t largest = 0, entry_bytes = 0;
  for (uint64_t i = 0; i < kKeys; i++) {
    if (i % 7 == 0) {
      ops.push_back(WriteOp::Delete(Key(i), 2));
      entry_bytes += RecordBytes(0, true);
    } else {
      ops.push_back(WriteOp::Put(Key(i), 2, ValueFor(Key(i), 2, CleanSize(i))));
      largest = std::max(largest, RecordBytes(CleanSize(i)));
      entry_bytes += RecordBytes(CleanSize(i));
    }
  }
  test::WriteEach(db.get(), ops, &model);
  ASSERT_OK(db->CloseActiveBlob());
  ASSERT_EQ(db->Stats().blob_stats.size(), 1u);

  constexpr uint64_t kBudget = 64 << 10;
  ScrubRun run;
  ASSERT_OK(RunScrub(db.get(), 1, &run, kBudget));
  ASSERT_EQ(run.stats.blob_id, 1u);
  ASSERT_EQ(run.stats.entries, kKeys);
  ASSERT_EQ(run.stats.visited, kKeys);
  ASSERT_EQ(run.stats.damaged, 0u);
  ASSERT_FALSE(run.stats.index_repaired);
  ASSERT_TRUE(run.damaged.empty());
  ASSERT_TRUE(run.taken.empty());
  ASSERT_EQ(db->Stats().corrupt_reads, 0u);
  // Every record read, the superseded ones between them perhaps too (read
  // in windows), nothing twice over.
  ASSERT_GE(run.stats.bytes_read, entry_bytes);
  ASSERT_LE(run.stats.bytes_read, 2 * test::FileSize(test::BlobPath(db.dir(), 1)));
  // Throttled: a step reads at most about the budget, one record and the
  // window it ends in (what a window holds of the next piece is not read again).
  ASSERT_GT(run.steps, 5u);
  ASSERT_LE(run.max_step_bytes, kBudget + largest + RecordWalker::kPieceSize);
  std::printf("# %llu steps, %llu bytes read, at most %llu in one\n", static_cast<unsigned long long>(run.steps),
              static_cast<unsigned long long>(run.stats.bytes_read),
              static_cast<unsigned long long>(run.max_step_bytes));

  // A budget of 0 still checks one record per step.
  std::unique_ptr<Scrub> scrub;
  ASSERT_OK(Scrub::Begin(Shared(db.get()), 1, &scrub));
  bool done = true;
  ASSERT_OK(scrub->Step(0, &done));
  ASSERT_FALSE(done);
  ASSERT_EQ(scrub->stats().visited, 1u);
  ASSERT_OK(scrub->Step(0, &done));
  ASSERT_EQ(scrub->stats().visited, 2u);
}

namespace {

// Keys 0..19 at ts 1 in blob 1: small values, key 5 and key 12 large ones
// (with block checksums), key 7 a tombstone. Then damaged: a byte of key
// 2's value, one in the third block of key 5's value, one in the header of
// key 7's tombstone.
constexpr uint64_t kDamagedKeys = 20;

size_t DamagedBlobSize(uint64_t i) { return i == 5 || i == 12 ? 300000 : 100; }

std::string GoodValue(uint64_t i) { return ValueFor(Key(i), 1, DamagedBlobSize(i)); }

void WriteDamagedBlob(TestEngine* db) {
  std::vector<WriteOp> ops;
  for (uint64_t i = 0; i < kDamagedKeys; i++) {
    ops.push_back(i == 7 ? WriteOp::Delete(Key(i), 1) : WriteOp::Put(Key(i), 1, GoodValue(i)));
  }
  test::Model model;
  test::WriteEach(db->get(), ops, &model);
  ASSERT_OK((*db)->CloseActiveBlob());
  const std::string path = test::BlobPath(db->dir(), 1);
  const size_t hsize = RecordHeaderSize(kBlobFormatVersion, kKeySize);
  test::FlipByte(path, EntryOf(db->get(), 1, Key(2)).offset + hsize + 3);
  test::FlipByte(path, EntryOf(db->get(), 1, Key(5)).offset + hsize + 2 * kValueBlockSize + 5);
  test::FlipByte(path, EntryOf(db->get(), 1, Key(7)).offset + 12);
}

// The damage WriteDamagedBlob made, as a scrub must report it (file order).
void CheckDamage(Engine* engine, const std::vector<ScrubDamage>& damaged) {
  ASSERT_EQ(damaged.size(), 3u);
  const uint64_t keys[3] = {2, 5, 7};
  for (size_t i = 0; i < 3; i++) {
    const ScrubDamage& d = damaged[i];
    ASSERT_EQ(d.key, Key(keys[i])) << "damage " << i;
    ASSERT_EQ(d.version.timestamp, 1u);
    ASSERT_EQ(d.version.stamp, 0u);
    ASSERT_EQ(d.tombstone, keys[i] == 7);
    ASSERT_EQ(d.offset, EntryOf(engine, 1, Key(keys[i])).offset);
    ASSERT_TRUE(d.message.find("oyster.1.blob") != std::string::npos) << d.message;
  }
  ASSERT_TRUE(damaged[0].message.find("record CRC") != std::string::npos) << damaged[0].message;
  ASSERT_TRUE(damaged[2].message.find("header") != std::string::npos) << damaged[2].message;
}

}  // namespace

// A damaged value, a damaged block of a large value and a damaged record
// header are reported with their keys and versions; the scrub goes past
// each to the end, and the engine counts them as corrupt reads.
TEST(Scrub, ReportsDamage) {
  TestEngine db(test::TmpDir() + "/p");
  ASSERT_OK(db.Open());
  WriteDamagedBlob(&db);
  const uint64_t corrupt = db->Stats().corrupt_reads;
  ScrubRun run;
  ASSERT_OK(RunScrub(db.get(), 1, &run, 4096));
  ASSERT_EQ(run.stats.entries, kDamagedKeys);
  ASSERT_EQ(run.stats.visited, kDamagedKeys);
  ASSERT_EQ(run.stats.damaged, 3u);
  CheckDamage(db.get(), run.damaged);
  CheckDamage(db.get(), run.taken);  // handed out once each, as found
  ASSERT_EQ(db->Stats().corrupt_reads, corrupt + 3);
  // Only reported: the records are as they were. A read of key 7 answers
  // from the index without reading the tombstone: only a scrub finds that
  // damage (before an index rebuilt from the blob would lose the tombstone).
  ASSERT_TRUE(Read(db.get(), Key(2)).rfind("ERROR: Corruption", 0) == 0);
  ASSERT_EQ(Read(db.get(), Key(7)), "DELETED");
  ASSERT_EQ(Read(db.get(), Key(12)), GoodValue(12));
}

// The repair the layer above makes: a healthy copy written again at the
// version the scrub reported wins the full tie. The damaged records are
// garbage then, still damaged until a compaction drops them.
TEST(Scrub, RepairByRewrite) {
  TestEngine db(test::TmpDir() + "/p");
  ASSERT_OK(db.Open());
  WriteDamagedBlob(&db);
  ScrubRun run;
  ASSERT_OK(RunScrub(db.get(), 1, &run));
  ASSERT_EQ(run.damaged.size(), 3u);
  for (const ScrubDamage& d : run.damaged) {
    const uint64_t i = d.key == Key(2) ? 2 : d.key == Key(5) ? 5 : 7;
    ASSERT_OK(d.tombstone ? test::Delete(db.get(), d.key, d.version)
                          : test::Put(db.get(), d.key, d.version, GoodValue(i)));
  }
  ASSERT_EQ(Read(db.get(), Key(2)), GoodValue(2));
  ASSERT_EQ(Read(db.get(), Key(5)), GoodValue(5));
  ASSERT_EQ(Read(db.get(), Key(7)), "DELETED");
  for (uint64_t i = 0; i < kDamagedKeys; i++) {
    if (i != 7) {
      ASSERT_EQ(Read(db.get(), Key(i)), GoodValue(i)) << "key " << i;
    }
  }

  // The old blob still holds the damage; a scrub of the vdisk passes it,
  // since no read returns it any more, and checks the rest.
  ScrubRun again;
  ASSERT_OK(RunScrub(db.get(), 1, &again));
  CheckDamage(db.get(), again.damaged);
  const EngineSet vdisk = SetOf(&db);
  ScrubRun of_vdisk;
  ASSERT_OK(RunScrub(db.get(), 1, &of_vdisk, 4096, &vdisk));
  ASSERT_TRUE(of_vdisk.damaged.empty());
  ASSERT_EQ(of_vdisk.stats.visited, kDamagedKeys);
  ASSERT_EQ(of_vdisk.stats.superseded, 3u);

  // Compacted, it holds only what reads return, all of it healthy.
  std::unique_ptr<Compaction> c;
  ASSERT_OK(Compaction::Begin(SetOf(&db), Shared(db.get()), 1, CompactionOptions(), &c));
  for (bool done = false; !done;) ASSERT_OK(c->Step(64 << 10, &done));
  ASSERT_OK(c->Install());
  ASSERT_EQ(c->stats().dropped_records, 3u);
  ASSERT_EQ(c->stats().damaged_kept, 0u);
  c.reset();
  ScrubRun after;
  ASSERT_OK(RunScrub(db.get(), 1, &after));
  ASSERT_EQ(after.stats.entries, kDamagedKeys - 3);
  ASSERT_EQ(after.stats.visited, kDamagedKeys - 3);
  ASSERT_TRUE(after.damaged.empty());
  ASSERT_EQ(Read(db.get(), Key(5)), GoodValue(5));
}

// What a scrub refuses: blobs still written to, unknown blobs, a closed
// engine; and a scrub whose engine closes stops.
TEST(Scrub, Refusals) {
  TestEngine db(test::TmpDir() + "/p");
  ASSERT_OK(db.Open());
  ASSERT_OK(test::Put(db.get(), Key(1), 1, "a"));
  std::unique_ptr<Scrub> scrub;
  ASSERT_STATUS(kInvalidArgument, Scrub::Begin(Shared(db.get()), 1, &scrub));
  ASSERT_OK(db->CloseActiveBlob());
  ASSERT_STATUS(kNotFound, Scrub::Begin(Shared(db.get()), 7, &scrub));
  ASSERT_OK(Scrub::Begin(Shared(db.get()), 1, &scrub));
  ASSERT_OK(db->Close());
  bool done = true;
  ASSERT_STATUS(kClosed, scrub->Step(1 << 20, &done));
  ASSERT_FALSE(done);
  ASSERT_STATUS(kClosed, scrub->Step(1 << 20, &done));
  ASSERT_FALSE(scrub->done());
  std::unique_ptr<Scrub> late;
  ASSERT_STATUS(kClosed, Scrub::Begin(Shared(db.get()), 1, &late));
}

// A damaged index block met by a scrub is counted and repaired as a read
// repairs it, and the scrub then checks every record.
TEST(Scrub, RepairsDamagedIndex) {
  TestEngine db(test::TmpDir() + "/p");
  test::Model model;
  test::WriteBlobWithDamagedIndexBlock(&db, &model);
  const EngineStats before = db->Stats();
  ScrubRun run;
  ASSERT_OK(RunScrub(db.get(), 1, &run));
  ASSERT_TRUE(run.stats.index_repaired);
  ASSERT_EQ(run.stats.entries, 500u);
  ASSERT_EQ(run.stats.visited, 500u);
  ASSERT_TRUE(run.damaged.empty());
  const EngineStats after = db->Stats();
  ASSERT_EQ(after.corrupt_reads, before.corrupt_reads + 1);
  ASSERT_EQ(after.index_repairs, before.index_repairs + 1);
  model.Verify(db.get());
}

// A scrub holds the blob it began on: a compaction replacing the blob
// meanwhile, or removing it, does not disturb it.
TEST(Scrub, CompactionMeanwhile) {
  TestEngine db(test::TmpDir() + "/p");
  ASSERT_OK(db.Open());
  test::Model model;
  constexpr size_t kSize = 10000;  // 200 keys: two read windows
  std::vector<WriteOp> ops;
  for (uint64_t i = 0; i < 200; i++) ops.push_back(WriteOp::Put(Key(i), 1, ValueFor(Key(i), 1, kSize)));
  test::WriteEach(db.get(), ops, &model);
  ASSERT_OK(db->CloseActiveBlob());
  ops.clear();
  for (uint64_t i = 0; i < 100; i++) ops.push_back(WriteOp::Put(Key(i), 2, ValueFor(Key(i), 2, kSize)));
  test::WriteEach(db.get(), ops, &model);
  ASSERT_OK(db->CloseActiveBlob());
  const EngineSet set = SetOf(&db);

  auto compact = [&](uint64_t id, CompactionStats* st) {
    std::unique_ptr<Compaction> c;
    ASSERT_OK(Compaction::Begin(set, Shared(db.get()), id, CompactionOptions(), &c));
    for (bool done = false; !done;) ASSERT_OK(c->Step(64 << 10, &done));
    ASSERT_OK(c->Install());
    *st = c->stats();
  };

  // Replaced by a blob of keys 100..199.
  std::unique_ptr<Scrub> scrub;
  ASSERT_OK(Scrub::Begin(Shared(db.get()), 1, &scrub));
  bool done = false;
  ASSERT_OK(scrub->Step(4096, &done));
  ASSERT_FALSE(done);
  ASSERT_LT(scrub->stats().bytes_read, test::FileSize(test::BlobPath(db.dir(), 1)));
  CompactionStats st;
  compact(1, &st);
  ASSERT_EQ(st.kept_records, 100u);
  while (!done) ASSERT_OK(scrub->Step(4096, &done));
  ASSERT_EQ(scrub->stats().visited, 200u);
  ASSERT_TRUE(scrub->damaged().empty());
  ScrubRun run;
  ASSERT_OK(RunScrub(db.get(), 1, &run));
  ASSERT_EQ(run.stats.visited, 100u);
  ASSERT_TRUE(run.damaged.empty());

  // Removed: everything in it is overwritten.
  ops.clear();
  for (uint64_t i = 100; i < 200; i++) ops.push_back(WriteOp::Put(Key(i), 3, ValueFor(Key(i), 3, kSize)));
  test::WriteEach(db.get(), ops, &model);
  ASSERT_OK(Scrub::Begin(Shared(db.get()), 1, &scrub));
  done = false;
  ASSERT_OK(scrub->Step(4096, &done));
  ASSERT_FALSE(done);
  compact(1, &st);
  ASSERT_EQ(st.kept_records, 0u);
  ASSERT_FALSE(test::FileExists(test::BlobPath(db.dir(), 1)));
  while (!done) ASSERT_OK(scrub->Step(4096, &done));
  ASSERT_EQ(scrub->stats().visited, 100u);
  ASSERT_TRUE(scrub->damaged().empty());
  ASSERT_STATUS(kNotFound, Scrub::Begin(Shared(db.get()), 1, &scrub));
  ASSERT_EQ(db->Stats().corrupt_reads, 0u);
}

}  // namespace oyster
