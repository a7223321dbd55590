// Compaction: what it keeps and drops, reads and writes going on while it
// runs, damage it meets, and crashes (kills and power losses) after every
// change it makes to the disk.

#include "engine/compaction.h"

#include <atomic>
#include <cstdio>
#include <random>
#include <thread>

#include "engine/format.h"
#include "test/fault_file_system.h"
#include "test/test_util.h"
#include "test/testharness.h"

namespace oyster {
namespace {

using test::FaultInjectingFileSystem;
using test::Key;
using test::Model;
using test::Read;
using test::TestEngine;
using test::ValueFor;
using test::WriteOp;

constexpr uint64_t kGrace = 1000;

CompactionOptions Options(uint64_t now_seconds, bool drop = true) {
  CompactionOptions o;
  o.tombstones.grace_seconds = kGrace;
  o.tombstones.drop = drop;
  o.tombstones.now_seconds = now_seconds;
  return o;
}

// An EngineSet over one engine the TestEngine owns.
EngineSet SetOf(TestEngine* db) { return EngineSet({std::shared_ptr<Engine>(std::shared_ptr<Engine>(), db->get())}); }

// Runs a whole compaction of blob `id` of set.engines()[engine] in steps of `budget` bytes.
Status Compact(const EngineSet& set, size_t engine, uint64_t id, const CompactionOptions& options,
               CompactionStats* stats = nullptr, uint64_t budget = 64 << 10) {
  std::unique_ptr<Compaction> c;
  Status s = Compaction::Begin(set, set.engines()[engine], id, options, &c);
  bool done = false;
  while (s.ok() && !done) s = c->Step(budget, &done);
  if (s.ok()) s = c->Install();
  if (stats && c) *stats = c->stats();
  return s;
}

// The closed blobs, once every blob but the newest is closed: a blob the
// writer sealed gets its index in the background, and a test that listed
// the blobs before it was written would leave that blob uncompacted.
std::vector<uint64_t> ClosedBlobs(Engine* engine) {
  std::vector<uint64_t> ids;
  ASSERT_TRUE(test::Eventually([&] {
    const std::vector<BlobStats> blobs = engine->Stats().blob_stats;
    uint64_t newest = 0;
    for (const BlobStats& b : blobs) newest = std::max(newest, b.id);
    ids.clear();
    bool settled = true;
    for (const BlobStats& b : blobs) {
      if (b.closed) ids.push_back(b.id);
      else if (b.id != newest) settled = false;
    }
    return settled;
  }));
  return ids;
}

// Bytes of blob and index files in dir, and whether any compaction file is left.
uint64_t StoredBytes(const std::string& dir, bool* leftovers = nullptr) {
  uint64_t n = 0;
  if (leftovers) *leftovers = false;
  for (const std::string& name : test::ListDir(dir)) {
    uint64_t id;
    FileKind kind = ParseFileName(name, "oyster", &id);
    if (kind == FileKind::kBlob || kind == FileKind::kIndex) n += test::FileSize(JoinPath(dir, name));
    if (leftovers && (kind == FileKind::kCompactedBlob || kind == FileKind::kCompactedIndex ||
                      kind == FileKind::kTempIndex)) {
      *leftovers = true;
    }
  }
  return n;
}

}  // namespace

// Ten versions of every key, half of them deleted: after compaction the
// engine holds about the newest values and the tombstones, and every read
// answers as before, also after a reopen.
TEST(Compaction, KeepsOnlyWhatReadsReturn) {
  TestEngine db(test::TmpDir() + "/p");
  db.options.max_data_in_blob = 100;
  ASSERT_OK(db.Open());
  Model model;
  for (uint64_t round = 1; round <= 10; round++) {
    std::vector<WriteOp> ops;
    for (uint64_t i = 0; i < 100; i++) ops.push_back(WriteOp::Put(Key(i), round, ValueFor(Key(i), round, 200)));
    test::WriteEach(db.get(), ops, &model);
  }
  std::vector<WriteOp> deletes;
  for (uint64_t i = 0; i < 50; i++) deletes.push_back(WriteOp::Delete(Key(i), 11));
  test::WriteEach(db.get(), deletes, &model);
  ASSERT_OK(db->CloseActiveBlob());
  const uint64_t before = StoredBytes(db.dir());

  EngineSet set = SetOf(&db);
  EngineSet::GarbageSummary g;
  ASSERT_OK(set.CountGarbage(EngineSet::ScanOptions(), Options(11 + kGrace - 1).tombstones, &g));
  ASSERT_EQ(g.keys, 100u);
  ASSERT_EQ(g.tombstones, 50u);
  ASSERT_EQ(g.garbage_records, 1050u - 100u);
  ASSERT_EQ(g.dead_tombstones, 0u);  // within their grace
  const EngineStats counted = db->Stats();
  ASSERT_EQ(counted.garbage_records, 950u);
  ASSERT_EQ(counted.garbage_bytes, g.garbage_bytes);

  for (uint64_t id : ClosedBlobs(db.get())) {
    CompactionStats st;
    ASSERT_OK(Compact(set, 0, id, Options(11 + kGrace - 1), &st));
    ASSERT_EQ(st.visited, st.entries);
    ASSERT_EQ(st.damaged_kept, 0u);
  }
  model.Verify(db.get());
  bool leftovers = true;
  const uint64_t after = StoredBytes(db.dir(), &leftovers);
  ASSERT_FALSE(leftovers);
  // 50 values of 200 bytes and 50 tombstones, with headers and indexes.
  ASSERT_LT(after, before / 6);
  const EngineStats st = db->Stats();
  ASSERT_EQ(st.records, 100u);
  ASSERT_EQ(st.garbage_bytes, 0u);
  ASSERT_OK(set.CountGarbage(EngineSet::ScanOptions(), Options(11 + kGrace - 1).tombstones, &g));
  ASSERT_EQ(g.garbage_records, 0u);

  // Past their grace the tombstones go too: nothing older is left.
  ASSERT_OK(set.CountGarbage(EngineSet::ScanOptions(), Options(11 + kGrace).tombstones, &g));
  ASSERT_EQ(g.dead_tombstones, 50u);
  for (uint64_t id : ClosedBlobs(db.get())) ASSERT_OK(Compact(set, 0, id, Options(11 + kGrace)));
  ASSERT_EQ(db->Stats().records, 50u);
  for (uint64_t i = 0; i < 50; i++) ASSERT_EQ(Read(db.get(), Key(i)), "NOT_FOUND");
  for (uint64_t i = 50; i < 100; i++) ASSERT_EQ(Read(db.get(), Key(i)), ValueFor(Key(i), 10, 200));

  ASSERT_OK(db.Reopen());
  ASSERT_EQ(db.report().indexes_rebuilt, 0u);
  for (uint64_t i = 50; i < 100; i++) ASSERT_EQ(Read(db.get(), Key(i)), ValueFor(Key(i), 10, 200));
  ASSERT_EQ(Read(db.get(), Key(3)), "NOT_FOUND");
}

// A record is garbage when a newer one of its key is anywhere in the vdisk:
// in another engine (partition) too. A tombstone stays while anything older
// of its key is left anywhere, and while records of the vdisk may still
// come from elsewhere (drop = false), however old it is.
TEST(Compaction, LooksAcrossTheVdisk) {
  test::Engines e(2);
  ASSERT_OK(test::Put(e[1], Key(1), 100, "old"));
  ASSERT_OK(test::Put(e[1], Key(2), 100, "old 2"));
  ASSERT_OK(test::Put(e[0], Key(1), 200, "new"));
  ASSERT_OK(test::Delete(e[0], Key(2), 200));
  ASSERT_OK(test::Delete(e[0], Key(3), 200));  // hides nothing
  ASSERT_OK(e[0]->CloseActiveBlob());
  ASSERT_OK(e[1]->CloseActiveBlob());
  EngineSet set = e.Set({0, 1});
  const uint64_t late = 200 + kGrace;

  // The tombstone of key 2 stays while the value it deletes is left.
  CompactionStats st;
  ASSERT_OK(Compact(set, 0, ClosedBlobs(e[0])[0], Options(late), &st));
  ASSERT_EQ(st.kept_records, 2u);
  ASSERT_EQ(st.dropped_tombstones, 1u);  // key 3's
  ASSERT_EQ(Read(e[0], Key(2)), "DELETED");
  // Both old values are superseded: their blob goes away.
  ASSERT_OK(Compact(set, 1, ClosedBlobs(e[1])[0], Options(late), &st));
  ASSERT_EQ(st.kept_records, 0u);
  ASSERT_EQ(e[1]->Stats().blobs, 0u);
  ASSERT_STATUS(kNotFound, Compact(set, 1, 1, Options(late)));
  // Now key 2's tombstone hides nothing; not dropped while drop is off.
  ASSERT_OK(Compact(set, 0, ClosedBlobs(e[0])[0], Options(late, false), &st));
  ASSERT_EQ(st.kept_records, 2u);
  ASSERT_OK(Compact(set, 0, ClosedBlobs(e[0])[0], Options(late), &st));
  ASSERT_EQ(st.kept_records, 1u);
  GetResult g;
  ASSERT_OK(set.Get(ReadOptions(), Key(1).data(), &g));
  ASSERT_EQ(std::string(g.record.value(), g.record.value_size), "new");
  ASSERT_OK(set.Get(ReadOptions(), Key(2).data(), &g));
  ASSERT_EQ(g.kind, GetResult::kAbsent);
}

// What a compaction refuses: blobs still written to, unknown blobs, a
// second compaction of the same engine.
TEST(Compaction, Refusals) {
  TestEngine db(test::TmpDir() + "/p");
  ASSERT_OK(db.Open());
  ASSERT_OK(test::Put(db.get(), Key(1), 1, "a"));
  EngineSet set = SetOf(&db);
  std::unique_ptr<Compaction> c;
  ASSERT_STATUS(kInvalidArgument, Compaction::Begin(set, set.engines()[0], 1, Options(0), &c));
  ASSERT_OK(db->CloseActiveBlob());
  ASSERT_STATUS(kNotFound, Compaction::Begin(set, set.engines()[0], 7, Options(0), &c));
  ASSERT_OK(Compaction::Begin(set, set.engines()[0], 1, Options(0), &c));
  std::unique_ptr<Compaction> second;
  ASSERT_STATUS(kBusy, Compaction::Begin(set, set.engines()[0], 1, Options(0), &second));
  ASSERT_STATUS(kInvalidArgument, c->Install());  // not stepped through
  ASSERT_TRUE(test::FileExists(JoinPath(db.dir(), "oyster.1.blob.new")));
  c.reset();  // abandoned: its file goes, the engine is free again
  ASSERT_FALSE(test::FileExists(JoinPath(db.dir(), "oyster.1.blob.new")));
  ASSERT_OK(Compact(set, 0, 1, Options(0)));
  ASSERT_EQ(Read(db.get(), Key(1)), "a");
}

// A step decides at least one record whatever its budget: a step of budget
// 0 makes progress, the first one as every later one.
TEST(Compaction, EveryStepMovesOn) {
  TestEngine db(test::TmpDir() + "/p");
  ASSERT_OK(db.Open());
  for (uint64_t i = 0; i < 3; i++) ASSERT_OK(test::Put(db.get(), Key(i), 1, "v"));
  ASSERT_OK(db->CloseActiveBlob());
  EngineSet set = SetOf(&db);
  std::unique_ptr<Compaction> c;
  ASSERT_OK(Compaction::Begin(set, set.engines()[0], 1, Options(0), &c));
  bool done = false;
  for (uint64_t step = 1; step <= 3; step++) {
    ASSERT_OK(c->Step(0, &done));
    ASSERT_EQ(c->stats().visited, step);
  }
  ASSERT_TRUE(done);
  ASSERT_OK(c->Install());
  for (uint64_t i = 0; i < 3; i++) ASSERT_EQ(Read(db.get(), Key(i)), "v");
}

// A value that fails its checksum is copied as it is and still fails it: a
// compaction never turns damage into a valid record, nor drops the newest
// record of a key because it is damaged.
TEST(Compaction, DamageStaysVisible) {
  TestEngine db(test::TmpDir() + "/p");
  ASSERT_OK(db.Open());
  const std::string big(200000, 'b');  // with block checksums
  ASSERT_OK(test::Put(db.get(), Key(1), 1, "superseded"));
  ASSERT_OK(test::Put(db.get(), Key(2), 1, "damaged value"));
  ASSERT_OK(test::Put(db.get(), Key(3), 1, big));
  ASSERT_OK(test::Put(db.get(), Key(1), 2, "newest"));
  ASSERT_OK(db->CloseActiveBlob());
  // Key 2's record: after the blob header and key 1's record.
  const uint64_t first = kBlobHeaderSize + RecordSize(kBlobFormatVersion, 16, 0, 10);
  test::FlipByte(test::BlobPath(db.dir(), 1), first + RecordHeaderSize(kBlobFormatVersion, 16) + 3);
  // And one byte of the third block of key 3's value.
  const uint64_t third = first + RecordSize(kBlobFormatVersion, 16, 0, 13);
  test::FlipByte(test::BlobPath(db.dir(), 1), third + RecordHeaderSize(kBlobFormatVersion, 16) + 2 * 65536 + 5);
  EngineSet set = SetOf(&db);
  CompactionStats st;
  ASSERT_OK(Compact(set, 0, 1, Options(0), &st));
  ASSERT_EQ(st.kept_records, 3u);
  ASSERT_EQ(st.damaged_kept, 2u);
  ASSERT_EQ(Read(db.get(), Key(1)), "newest");
  ASSERT_TRUE(Read(db.get(), Key(2)).rfind("ERROR: Corruption", 0) == 0) << Read(db.get(), Key(2));
  ASSERT_TRUE(Read(db.get(), Key(3)).rfind("ERROR: Corruption", 0) == 0);
  // A reader of the damaged block is told so; one of another block is not.
  OpenResult open;
  ASSERT_OK(set.Open(ReadOptions(), Key(3).data(), 0, &open));
  std::string part(1000, '\0');
  ASSERT_OK(open.reader->Read(0, part.size(), &part[0]));
  ASSERT_EQ(part, std::string(1000, 'b'));
  ASSERT_STATUS(kCorruption, open.reader->Read(2 * 65536, part.size(), &part[0]));
}

// Records whose headers are damaged (a flipped byte no replica could repair)
// no longer stop their blob's compaction: each is written with a new header
// from its index entry. A value its block checksums vouch for reads whole
// again, a tombstone keeps hiding what it deleted, and a value with nothing
// left to check it by (or a damaged block) still reads as damaged.
TEST(Compaction, DamagedHeadersAreWrittenAnewFromTheIndex) {
  TestEngine db(test::TmpDir() + "/p");
  ASSERT_OK(db.Open());
  const std::string big(200000, 'b');  // with block checksums
  const std::string other(300000, 'o');
  ASSERT_OK(test::Put(db.get(), Key(4), 1, "deleted later"));
  ASSERT_OK(db->CloseActiveBlob());
  ASSERT_OK(test::Put(db.get(), Key(1), 1, "superseded"));
  ASSERT_OK(test::Put(db.get(), Key(2), 1, "small value"));
  ASSERT_OK(test::Put(db.get(), Key(3), 1, big));
  ASSERT_OK(test::Delete(db.get(), Key(4), 2));
  ASSERT_OK(test::Put(db.get(), Key(5), 1, other));
  ASSERT_OK(test::Put(db.get(), Key(1), 2, "newest"));
  ASSERT_OK(db->CloseActiveBlob());
  const std::string blob2 = test::BlobPath(db.dir(), 2);
  auto offset = [&](int k) {
    LookupResult l;
    RecordLocation where;
    Status s = db->Locate(ReadOptions(), Key(k).data(), &l, &where);
    if (!s.ok() || where.blob == nullptr || where.blob->id() != 2) FAIL() << "key " << k << " is not in blob 2";
    return where.entry.offset;
  };
  // A byte of each header's version, and one of key 5's third block.
  for (int k : {2, 3, 4, 5}) test::FlipByte(blob2, offset(k) + 17);
  test::FlipByte(blob2, offset(5) + RecordHeaderSize(kBlobFormatVersion, 16) + 2 * 65536 + 5);
  for (int k : {2, 3, 5}) ASSERT_TRUE(Read(db.get(), Key(k)).rfind("ERROR: Corruption", 0) == 0) << k;

  CompactionStats st;
  ASSERT_OK(Compact(SetOf(&db), 0, 2, Options(0, false), &st));
  ASSERT_EQ(st.kept_records, 5u);
  ASSERT_EQ(st.headers_rebuilt, 4u);
  ASSERT_EQ(st.damaged_kept, 2u);  // key 2 (no blocks), key 5 (a damaged block)
  for (int pass = 0; pass < 2; pass++) {
    ASSERT_EQ(Read(db.get(), Key(1)), "newest");
    ASSERT_TRUE(Read(db.get(), Key(2)).rfind("ERROR: Corruption", 0) == 0) << Read(db.get(), Key(2));
    ASSERT_EQ(Read(db.get(), Key(3)), big);
    ASSERT_EQ(Read(db.get(), Key(4)), "DELETED");
    OpenResult open;
    ASSERT_OK(SetOf(&db).Open(ReadOptions(), Key(5).data(), 0, &open));
    std::string part(1000, '\0');
    ASSERT_OK(open.reader->Read(0, part.size(), &part[0]));
    ASSERT_EQ(part, std::string(1000, 'o'));
    ASSERT_STATUS(kCorruption, open.reader->Read(2 * 65536, part.size(), &part[0]));
    // The same after a reopen.
    if (pass == 0) {
      ASSERT_OK(db.Reopen());
    }
  }
  // The next compaction of it meets no damaged header: only the damage that stayed.
  ASSERT_OK(Compact(SetOf(&db), 0, 2, Options(0, false), &st));
  ASSERT_EQ(st.headers_rebuilt, 0u);
  ASSERT_EQ(st.damaged_kept, 2u);
}

// Writers and readers go on while a blob holding their keys is compacted:
// no write fails, no read goes back behind a write acknowledged before it
// started, and every key ends at its last acknowledged write.
TEST(Compaction, ReadsAndWritesGoOn) {
  TestEngine db(test::TmpDir() + "/p");
  db.options.max_data_in_blob = 2000;
  ASSERT_OK(db.Open());
  constexpr uint64_t kKeys = 500;
  std::vector<WriteOp> ops;
  for (uint64_t ts = 1; ts <= 4; ts++) {
    for (uint64_t i = 0; i < kKeys; i++) ops.push_back(WriteOp::Put(Key(i), ts, ValueFor(Key(i), ts, 300)));
  }
  for (const Status& s : test::WriteAll(db.get(), ops)) ASSERT_OK(s);
  ASSERT_OK(db->CloseActiveBlob());
  std::vector<std::atomic<uint64_t>> acked(kKeys);
  for (auto& a : acked) a.store(4);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> failures{0}, stale{0}, reads{0};
  std::thread writer([&] {
    std::mt19937_64 rng(7);
    for (uint64_t ts = 5; !stop.load(); ts++) {
      const uint64_t i = rng() % kKeys;
      Status s = test::Put(db.get(), Key(i), ts, ValueFor(Key(i), ts, 300));
      if (s.ok()) {
        acked[i].store(ts);
      } else {
        failures++;
      }
    }
  });
  std::thread reader([&] {
    std::mt19937_64 rng(8);
    while (!stop.load()) {
      const uint64_t i = rng() % kKeys;
      const uint64_t floor = acked[i].load();
      GetResult g;
      Status s = db->Get(Key(i).data(), &g);
      reads++;
      if (!s.ok() || g.kind != GetResult::kFound) {
        failures++;
      } else if (g.version.timestamp < floor ||
                 std::string(g.record.value(), g.record.value_size) != ValueFor(Key(i), g.version.timestamp, 300)) {
        stale++;
      }
    }
  });
  EngineSet set = SetOf(&db);
  for (int round = 0; round < 3; round++) {
    for (uint64_t id : ClosedBlobs(db.get())) {
      Status s = Compact(set, 0, id, Options(0), nullptr, 4096);
      ASSERT_OK(s);
    }
    ASSERT_OK(db->CloseActiveBlob());
  }
  stop.store(true);
  writer.join();
  reader.join();
  ASSERT_EQ(failures.load(), 0u);
  ASSERT_EQ(stale.load(), 0u);
  ASSERT_GT(reads.load(), 0u);
  for (uint64_t i = 0; i < kKeys; i++) ASSERT_EQ(Read(db.get(), Key(i)), ValueFor(Key(i), acked[i].load(), 300));
}

namespace {

// The state a crash test starts from, all of it synced: blob 1 holds keys
// 0..59 at ts 1; blob 2 overwrites 0..19 and deletes 20..29 at ts 2. Then,
// not synced, the active blob 3 overwrites 30..39 at ts 3. Blob 1 is what
// gets compacted: only keys 40..59 are left to keep. The tombstones stay
// within their grace.
void CrashSetup(TestEngine* db, FaultInjectingFileSystem* fs) {
  db->options.fs = fs;
  db->options.max_dirty_bytes_before_sync = 1 << 30;
  ASSERT_OK(fs->TrackUnsyncedData(false));
  ASSERT_OK(db->Open());
  std::vector<WriteOp> ops;
  for (uint64_t i = 0; i < 60; i++) ops.push_back(WriteOp::Put(Key(i), 1, ValueFor(Key(i), 1, 3000)));
  for (const Status& s : test::WriteAll(db->get(), ops)) ASSERT_OK(s);
  ASSERT_OK((*db)->CloseActiveBlob());
  ops.clear();
  for (uint64_t i = 0; i < 20; i++) ops.push_back(WriteOp::Put(Key(i), 2, ValueFor(Key(i), 2, 3000)));
  for (uint64_t i = 20; i < 30; i++) ops.push_back(WriteOp::Delete(Key(i), 2));
  for (const Status& s : test::WriteAll(db->get(), ops)) ASSERT_OK(s);
  ASSERT_OK((*db)->CloseActiveBlob());
  ASSERT_OK(db->Close());
  ASSERT_OK(fs->TrackUnsyncedData(true));  // everything so far is durable
  ASSERT_OK(db->Open());
  ops.clear();
  for (uint64_t i = 30; i < 40; i++) ops.push_back(WriteOp::Put(Key(i), 3, ValueFor(Key(i), 3, 3000)));
  for (const Status& s : test::WriteAll(db->get(), ops)) ASSERT_OK(s);
}

// Every key reads as the crash allows: keys 30..39 their unsynced ts-3
// value, or (power lost) their synced ts-1 one; never nothing, never older.
void CheckAfterCrash(Engine* engine, bool power_lost) {
  for (uint64_t i = 0; i < 60; i++) {
    const std::string got = Read(engine, Key(i));
    if (i < 20) {
      ASSERT_EQ(got, ValueFor(Key(i), 2, 3000)) << "key " << i;
    } else if (i < 30) {
      ASSERT_EQ(got, "DELETED") << "key " << i;
    } else if (i < 40 && (!power_lost || got != ValueFor(Key(i), 1, 3000))) {
      ASSERT_EQ(got, ValueFor(Key(i), 3, 3000)) << "key " << i;
    } else if (i >= 40) {
      ASSERT_EQ(got, ValueFor(Key(i), 1, 3000)) << "key " << i;
    }
  }
}

// Compacts blob 1 as CrashSetup left it; the power goes after `cut` changes
// to the disk (0: it stays on).
Status CompactBlobOne(TestEngine* db, FaultInjectingFileSystem* fs, uint64_t cut) {
  EngineSet set = SetOf(db);
  fs->ResetCounters();
  fs->CutPowerAfter(cut);
  return Compact(set, 0, 1, Options(10), nullptr, 8 << 10);
}

}  // namespace

// A crash after every change a compaction makes to the disk, as a kill
// (the files keep what was written) and as a power loss (what was not
// synced is lost): the reopened engine has lost nothing, resurrected
// nothing, left no compaction file behind, and compacts again.
TEST(Compaction, CrashAtEveryStep) {
  uint64_t changes = 0;
  {
    FaultInjectingFileSystem fs;
    TestEngine db(test::TmpDir() + "/count");
    CrashSetup(&db, &fs);
    ASSERT_OK(CompactBlobOne(&db, &fs, 0));
    changes = fs.changes();
    CheckAfterCrash(db.get(), false);
    ASSERT_OK(db.Close());
  }
  // Output writes and their sync, the index written and synced, every
  // engine's unsynced records synced, two renames and directory syncs.
  ASSERT_GE(changes, 10u);
  uint64_t points = 0;
  for (bool power_lost : {false, true}) {
    for (uint64_t cut = 1; cut <= changes; cut++) {
      FaultInjectingFileSystem fs;
      TestEngine db(test::TmpDir() + "/cut" + std::to_string(cut) + (power_lost ? "p" : "k"));
      CrashSetup(&db, &fs);
      Status s = CompactBlobOne(&db, &fs, cut);
      db.Crash();
      ASSERT_OK(power_lost ? fs.DropUnsyncedData() : fs.RestorePower());
      ASSERT_OK(db.Open()) << "after " << cut << " changes: " << s.ToString();
      bool leftovers = true;
      StoredBytes(db.dir(), &leftovers);
      ASSERT_FALSE(leftovers) << "after " << cut << " changes";
      CheckAfterCrash(db.get(), power_lost);
      // Whatever state the crash left, compacting again ends the same way.
      for (uint64_t id : ClosedBlobs(db.get())) ASSERT_OK(Compact(SetOf(&db), 0, id, Options(10)));
      CheckAfterCrash(db.get(), power_lost);
      ASSERT_OK(db.Close());
      ASSERT_OK(fs.TrackUnsyncedData(false));
      points++;
    }
  }
  ASSERT_GE(points, 20u);
  std::printf("# %llu crash points\n", static_cast<unsigned long long>(points));
}

}  // namespace oyster
