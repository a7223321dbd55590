// The engine's behaviour while it runs: reads and writes, newest-wins
// across blobs, rotation, control operations, statistics, concurrency.

#include "engine/engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/format.h"
#include "test/fault_file_system.h"
#include "test/test_util.h"
#include "test/testharness.h"
#include "util/coding.h"

namespace oyster {
namespace {

using test::Eventually;
using test::Key;
using test::Read;
using test::TestEngine;
using test::ValueFor;
using test::WriteOp;

std::string PartitionDir() { return test::TmpDir() + "/partition"; }

// Blob files in dir, as ids.
std::vector<uint64_t> BlobIds(const std::string& dir) {
  std::vector<uint64_t> ids;
  for (const std::string& name : test::ListDir(dir)) {
    uint64_t id = 0;
    if (ParseFileName(name, "oyster", &id) == FileKind::kBlob) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

uint64_t DiskBytes(const std::string& dir) {
  uint64_t n = 0;
  for (const std::string& name : test::ListDir(dir)) {
    uint64_t id = 0;
    FileKind kind = ParseFileName(name, "oyster", &id);
    if (kind == FileKind::kBlob || kind == FileKind::kIndex) n += test::FileSize(JoinPath(dir, name));
  }
  return n;
}

// A write request for sizes a test cannot allocate.
class RawWrite final : public WriteRequest {
 public:
  void Done(const Status& s) override {
    status = s;
    latch.CountDown();
  }
  Status status;
  test::Latch latch{1};
};

}  // namespace

TEST(Engine, PutGetValueSizes) {
  TestEngine db(PartitionDir());
  ASSERT_OK(db.Open());
  const size_t sizes[] = {0, 1, 1024, 1 << 20};
  for (size_t i = 0; i < 4; i++) {
    ASSERT_OK(test::Put(db.get(), Key(i), 100 + i, ValueFor(Key(i), 100 + i, sizes[i])));
  }
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < 4; i++) {
      GetResult r;
      ASSERT_OK(db->Get(Key(i).data(), &r));
      ASSERT_EQ(r.kind, GetResult::kFound);
      ASSERT_EQ(r.version.timestamp, 100 + i);
      ASSERT_EQ(r.record.value_size, sizes[i]);
      ASSERT_TRUE(Read(db.get(), Key(i)) == ValueFor(Key(i), 100 + i, sizes[i])) << "size " << sizes[i];
    }
    ASSERT_OK(db.Reopen());  // the second pass reads through index files
  }
  ASSERT_EQ(Read(db.get(), Key(99)), "NOT_FOUND");
}

TEST(Engine, AbsentKey) {
  TestEngine db(PartitionDir());
  ASSERT_OK(db.Open());
  GetResult g;
  ASSERT_OK(db->Get(Key(1).data(), &g));
  ASSERT_EQ(g.kind, GetResult::kAbsent);
  LookupResult l;
  ASSERT_OK(db->Lookup(Key(1).data(), &l));
  ASSERT_EQ(l.kind, GetResult::kAbsent);
  ASSERT_OK(test::Put(db.get(), Key(2), 1, "x"));
  ASSERT_EQ(Read(db.get(), Key(1)), "NOT_FOUND");
}

TEST(Engine, Overwrite) {
  TestEngine db(PartitionDir());
  ASSERT_OK(db.Open());
  const std::string k = Key(1);
  ASSERT_OK(test::Put(db.get(), k, 1, "v1"));
  ASSERT_EQ(Read(db.get(), k), "v1");
  ASSERT_OK(test::Put(db.get(), k, 2, "v2"));
  ASSERT_EQ(Read(db.get(), k), "v2");
  ASSERT_OK(test::Put(db.get(), k, 1, "older"));  // written later, but older
  ASSERT_EQ(Read(db.get(), k), "v2");
  ASSERT_OK(test::Put(db.get(), k, 2, "v2 again"));  // same timestamp: the later write wins
  ASSERT_EQ(Read(db.get(), k), "v2 again");
  ASSERT_EQ(db->RecordsCount(), 4u);
}

TEST(Engine, DeleteAndVersions) {
  TestEngine db(PartitionDir());
  ASSERT_OK(db.Open());
  // Delete then put with the same version: the tombstone stays newer (a
  // delete is never undone by a copy of the value it deleted); a put with a
  // later stamp in the same second brings the key back.
  ASSERT_OK(test::Delete(db.get(), Key(1), 5));
  ASSERT_EQ(Read(db.get(), Key(1)), "DELETED");
  ASSERT_OK(test::Put(db.get(), Key(1), 5, "copy"));
  ASSERT_EQ(Read(db.get(), Key(1)), "DELETED");
  ASSERT_OK(test::Put(db.get(), Key(1), Version::Of(5, 1, 1), "back"));
  ASSERT_EQ(Read(db.get(), Key(1)), "back");
  // Put then delete with the same version.
  ASSERT_OK(test::Put(db.get(), Key(2), 5, "doomed"));
  ASSERT_OK(test::Delete(db.get(), Key(2), 5));
  ASSERT_EQ(Read(db.get(), Key(2)), "DELETED");
  // An older put after a tombstone stays deleted.
  ASSERT_OK(test::Put(db.get(), Key(3), 1, "first"));
  ASSERT_OK(test::Delete(db.get(), Key(3), 10));
  ASSERT_OK(test::Put(db.get(), Key(3), 5, "too old"));
  ASSERT_EQ(Read(db.get(), Key(3)), "DELETED");
  LookupResult l;
  ASSERT_OK(db->Lookup(Key(3).data(), &l));
  ASSERT_EQ(l.kind, GetResult::kDeleted);
  ASSERT_EQ(l.version.timestamp, 10u);
  // Deleting a key that never existed leaves a tombstone.
  ASSERT_OK(test::Delete(db.get(), Key(4), 1));
  ASSERT_EQ(Read(db.get(), Key(4)), "DELETED");
  ASSERT_OK(db.Reopen());
  ASSERT_EQ(Read(db.get(), Key(1)), "back");
  ASSERT_EQ(Read(db.get(), Key(2)), "DELETED");
  ASSERT_EQ(Read(db.get(), Key(3)), "DELETED");
  ASSERT_EQ(Read(db.get(), Key(4)), "DELETED");
}

// The same history gives the same answers whether the records share a blob
// or each has its own (max_data_in_blob = 1), from memory, from index files
// and after a crash.
TEST(Engine, NewestWinsAcrossBlobs) {
  const std::vector<WriteOp> history = {
      WriteOp::Put(Key(1), 10, "A new"),  WriteOp::Put(Key(1), 5, "A old"),          // older loses
      WriteOp::Put(Key(2), 7, "B first"), WriteOp::Put(Key(2), 7, "B second"),       // tie: later wins
      WriteOp::Put(Key(3), 3, "C"),       WriteOp::Delete(Key(3), 9),
      WriteOp::Put(Key(3), 6, "C stale"),                                            // tombstone is newer
      WriteOp::Delete(Key(4), 5),         WriteOp::Put(Key(4), Version::Of(5, 1, 1), "D back"),  // a stamp
      WriteOp::Put(Key(5), 8, "E"),       WriteOp::Delete(Key(5), 8),                // tie: the tombstone
      WriteOp::Put(Key(6), 1, "F1"),      WriteOp::Put(Key(6), 100, "F100"),
      WriteOp::Put(Key(6), 50, "F50"),
      // Same second: the later tick wins, then the higher node, whatever the order of writing.
      WriteOp::Put(Key(7), Version::Of(20, 300, 1), "G tick 300"),
      WriteOp::Put(Key(7), Version::Of(20, 200, 9), "G tick 200"),
      WriteOp::Put(Key(8), Version::Of(20, 300, 2), "H node 2"),
      WriteOp::Put(Key(8), Version::Of(20, 300, 1), "H node 1"),
      // A tombstone in an older blob beats a copy of the value at the same
      // version in a newer one: that blob cannot be skipped.
      WriteOp::Put(Key(9), Version::Of(30, 5, 5), "I"), WriteOp::Delete(Key(9), Version::Of(30, 5, 5)),
      WriteOp::Put(Key(9), Version::Of(30, 5, 5), "I copy"),
  };
  for (uint64_t max_records : {1000000ull, 1ull, 2ull}) {
    TestEngine db(test::TmpDir() + "/max" + std::to_string(max_records));
    db.options.max_data_in_blob = max_records;
    ASSERT_OK(db.Open());
    test::Model model;
    for (const WriteOp& op : history) {
      ASSERT_OK(test::WriteAll(db.get(), {op})[0]);
      model.Apply(op);
    }
    ASSERT_EQ(db->Stats().blobs, (history.size() + max_records - 1) / max_records);
    for (int round = 0; round < 3; round++) {
      ASSERT_EQ(Read(db.get(), Key(1)), "A new");
      ASSERT_EQ(Read(db.get(), Key(2)), "B second");
      ASSERT_EQ(Read(db.get(), Key(3)), "DELETED");
      ASSERT_EQ(Read(db.get(), Key(4)), "D back");
      ASSERT_EQ(Read(db.get(), Key(5)), "DELETED");
      ASSERT_EQ(Read(db.get(), Key(6)), "F100");
      ASSERT_EQ(Read(db.get(), Key(7)), "G tick 300");
      ASSERT_EQ(Read(db.get(), Key(8)), "H node 2");
      ASSERT_EQ(Read(db.get(), Key(9)), "DELETED");
      model.Verify(db.get());
      if (round == 0) {
        ASSERT_OK(db.Reopen());
      }
      if (round == 1) {
        db.Crash();
        ASSERT_OK(db.Open());
      }
    }
    ASSERT_OK(db.Close());
  }
}

TEST(Engine, RotationByRecordCount) {
  TestEngine db(PartitionDir());
  db.options.max_data_in_blob = 3;
  ASSERT_OK(db.Open());
  test::Model model;
  for (uint64_t i = 0; i < 10; i++) {
    ASSERT_OK(test::Put(db.get(), Key(i), 1, "v" + std::to_string(i)));
    model.Put(Key(i), 1, "v" + std::to_string(i));
  }
  EngineStats st = db->Stats();
  ASSERT_EQ(st.blobs, 4u);
  ASSERT_EQ(st.records, 10u);
  ASSERT_TRUE(st.has_active_blob);
  ASSERT_EQ(st.active_blob_id, 4u);
  ASSERT_EQ(BlobIds(db.dir()), (std::vector<uint64_t>{1, 2, 3, 4}));
  // Sealed blobs get their index files in the background.
  ASSERT_TRUE(Eventually([&] { return db->Stats().blobs_in_memory == 1; }));
  for (uint64_t id : {1, 2, 3}) ASSERT_TRUE(test::FileExists(test::IndexPath(db.dir(), id))) << id;
  ASSERT_FALSE(test::FileExists(test::IndexPath(db.dir(), 4)));
  model.Verify(db.get());

  // One batch that spans several blobs.
  std::vector<WriteOp> ops;
  for (uint64_t i = 10; i < 30; i++) ops.push_back(WriteOp::Put(Key(i), 2, ValueFor(Key(i), 2, i)));
  for (const Status& s : test::WriteAll(db.get(), ops)) ASSERT_OK(s);
  for (const WriteOp& op : ops) model.Apply(op);
  ASSERT_EQ(db->Stats().blobs, 10u);
  model.Verify(db.get());
  ASSERT_OK(db.Reopen());
  ASSERT_EQ(db.report().blobs, 10u);
  model.Verify(db.get());
}

TEST(Engine, RotationByBlobSize) {
  const size_t record = RecordHeaderSize(kBlobFormatVersion, 16) + 100;
  TestEngine db(PartitionDir());
  db.options.max_blob_size = kBlobHeaderSize + 3 * record;
  ASSERT_OK(db.Open());
  test::Model model;
  std::vector<WriteOp> ops;
  for (uint64_t i = 0; i < 7; i++) ops.push_back(WriteOp::Put(Key(i), 1, ValueFor(Key(i), 1, 100)));
  // Larger than a blob may be: written anyway, alone in its blob.
  ops.push_back(WriteOp::Put(Key(7), 1, ValueFor(Key(7), 1, 1000)));
  ops.push_back(WriteOp::Put(Key(8), 1, ValueFor(Key(8), 1, 100)));
  ops.push_back(WriteOp::Delete(Key(0), 2));
  for (const WriteOp& op : ops) {
    ASSERT_OK(test::WriteAll(db.get(), {op})[0]);
    model.Apply(op);
  }
  ASSERT_OK(db.Close());
  // 3 + 3 + 1 records of 100 bytes, the large one, then 1 + tombstone.
  const std::vector<uint64_t> ids = BlobIds(db.dir());
  ASSERT_EQ(ids, (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  const uint64_t want[] = {kBlobHeaderSize + 3 * record, kBlobHeaderSize + 3 * record, kBlobHeaderSize + record,
                           kBlobHeaderSize + RecordHeaderSize(kBlobFormatVersion, 16) + 1000,
                           kBlobHeaderSize + record + RecordHeaderSize(kBlobFormatVersion, 16)};
  for (size_t i = 0; i < ids.size(); i++) {
    ASSERT_EQ(test::FileSize(test::BlobPath(db.dir(), ids[i])), want[i]) << "blob " << ids[i];
  }
  ASSERT_OK(db.Open());
  model.Verify(db.get());
}

// A value larger than a batch may be (8 MiB) is written in a batch of its
// own, between its neighbours; a scan after a crash reads it back too.
TEST(Engine, LargeValueBetweenSmallOnes) {
  test::FaultInjectingFileSystem fs;
  TestEngine db(PartitionDir());
  test::GatedExecutor* gate = db.gate();
  db.options.fs = &fs;
  ASSERT_OK(db.Open());
  std::vector<WriteOp> ops = {
      WriteOp::Put(Key(1), 1, "small"),
      WriteOp::Put(Key(2), 1, ValueFor(Key(2), 1, 9 << 20)),
      WriteOp::Put(Key(3), 1, "small too"),
      WriteOp::Delete(Key(1), 2),
  };
  gate->Close();
  {
    test::PendingWrites pending(db.get(), ops);
    gate->Open();
    for (const Status& s : pending.Wait()) ASSERT_OK(s);
  }
  // The blob header, then the batches [small], [large], [small, delete].
  ASSERT_EQ(fs.writes(), 4u);
  test::Model model;
  for (const WriteOp& op : ops) model.Apply(op);
  model.Verify(db.get());
  db.Crash();
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().blobs_scanned, 1u);
  ASSERT_EQ(db.report().bytes_truncated, 0u);
  model.Verify(db.get());
}

TEST(Engine, ValueTooLarge) {
  TestEngine db(PartitionDir());
  ASSERT_OK(db.Open());
  const std::string k = Key(1);
  RawWrite w;
  w.key = k.data();
  w.version = test::Ts(1);
  w.value = "";  // never read: the size is refused first
  w.value_size = kMaxValueSize + 1;
  db->Write(&w);
  w.latch.Wait();
  ASSERT_STATUS(kInvalidArgument, w.status);
  ASSERT_EQ(Read(db.get(), k), "NOT_FOUND");
  // A tombstone's value size is ignored.
  RawWrite d;
  d.key = k.data();
  d.version = test::Ts(2);
  d.tombstone = true;
  d.value_size = kMaxValueSize + 1;
  db->Write(&d);
  d.latch.Wait();
  ASSERT_OK(d.status);
  ASSERT_EQ(Read(db.get(), k), "DELETED");
}

TEST(Engine, OperationsAfterClose) {
  TestEngine db(PartitionDir());
  ASSERT_OK(db.Open());
  ASSERT_OK(test::Put(db.get(), Key(1), 1, "x"));
  std::shared_ptr<Engine> engine;
  RecoveryReport report;
  ASSERT_OK(db->Close());
  ASSERT_STATUS(kClosed, test::Put(db.get(), Key(2), 1, "y"));
  ASSERT_STATUS(kClosed, test::Delete(db.get(), Key(1), 2));
  GetResult g;
  ASSERT_STATUS(kClosed, db->Get(Key(1).data(), &g));
  LookupResult l;
  ASSERT_STATUS(kClosed, db->Lookup(Key(1).data(), &l));
  ASSERT_STATUS(kClosed, db->CloseActiveBlob());
  ASSERT_OK(db->Close());  // twice is fine
  // The directory is free again.
  ASSERT_OK(Engine::Open(db.options, db.dir(), &engine, &report));
  ASSERT_EQ(Read(engine.get(), Key(1)), "x");
  ASSERT_OK(engine->Close());
}

// Writes queued before Close are written, not dropped.
TEST(Engine, CloseFinishesQueuedWrites) {
  TestEngine db(PartitionDir());
  test::GatedExecutor* gate = db.gate();
  ASSERT_OK(db.Open());
  std::vector<WriteOp> ops;
  for (uint64_t i = 0; i < 1500; i++) ops.push_back(WriteOp::Put(Key(i), 1, ValueFor(Key(i), 1, 50)));
  gate->Close();
  {
    test::PendingWrites pending(db.get(), ops);
    ASSERT_OK(db->Close());
    for (const Status& s : pending.Wait()) ASSERT_OK(s);
  }
  gate->Open();
  ASSERT_OK(db.Close());
  ASSERT_OK(db.Open());
  test::Model model;
  for (const WriteOp& op : ops) model.Apply(op);
  model.Verify(db.get());
}

TEST(Engine, CloseActiveBlob) {
  TestEngine db(PartitionDir());
  ASSERT_OK(db.Open());
  ASSERT_OK(db->CloseActiveBlob());  // nothing to close
  ASSERT_EQ(db->Stats().blobs, 0u);
  ASSERT_OK(test::Put(db.get(), Key(1), 1, "one"));
  ASSERT_TRUE(db->Stats().has_active_blob);
  ASSERT_OK(db->CloseActiveBlob());
  EngineStats st = db->Stats();
  ASSERT_FALSE(st.has_active_blob);
  ASSERT_EQ(st.active_blob_id, 0u);
  ASSERT_EQ(st.blobs_in_memory, 0u);
  ASSERT_GT(st.filter_memory, 0u);
  ASSERT_TRUE(test::FileExists(test::IndexPath(db.dir(), 1)));  // on disk when the call returns
  ASSERT_EQ(Read(db.get(), Key(1)), "one");
  ASSERT_OK(test::Put(db.get(), Key(2), 1, "two"));
  ASSERT_EQ(db->Stats().active_blob_id, 2u);
  ASSERT_EQ(Read(db.get(), Key(1)), "one");
  ASSERT_EQ(Read(db.get(), Key(2)), "two");
  ASSERT_OK(db.Reopen());
  ASSERT_EQ(db.report().indexes_loaded, 2u);
  ASSERT_EQ(Read(db.get(), Key(2)), "two");
}

TEST(Engine, StatsAndRecordsCount) {
  TestEngine db(PartitionDir());
  db.options.max_data_in_blob = 50;
  ASSERT_OK(db.Open());
  EngineStats st = db->Stats();
  ASSERT_EQ(st.blobs, 0u);
  ASSERT_EQ(st.records, 0u);
  ASSERT_EQ(st.disk_bytes, 0u);
  std::vector<WriteOp> ops;
  for (uint64_t i = 0; i < 120; i++) ops.push_back(WriteOp::Put(Key(i % 40), i, ValueFor(Key(i), i, 10)));
  for (uint64_t i = 0; i < 10; i++) ops.push_back(WriteOp::Delete(Key(i), 1000));
  for (const Status& s : test::WriteAll(db.get(), ops)) ASSERT_OK(s);
  ASSERT_TRUE(Eventually([&] { return db->Stats().blobs_in_memory == 1; }));
  st = db->Stats();
  ASSERT_EQ(st.blobs, 3u);
  ASSERT_EQ(st.records, 130u);  // superseded versions and tombstones included
  ASSERT_EQ(db->RecordsCount(), 130u);
  ASSERT_EQ(st.disk_bytes, DiskBytes(db.dir()));
  ASSERT_GT(st.index_memory, 0u);
  ASSERT_GT(st.filter_memory, 0u);
  ASSERT_EQ(st.corrupt_reads, 0u);
  ASSERT_EQ(st.background_error, "");
  ASSERT_EQ(st.write_error, "");
  ASSERT_OK(db.Reopen());
  st = db->Stats();
  ASSERT_EQ(st.records, 130u);
  ASSERT_EQ(st.blobs_in_memory, 0u);
  ASSERT_EQ(st.disk_bytes, DiskBytes(db.dir()));
}

TEST(Engine, DirectoryLock) {
  TestEngine db(PartitionDir());
  ASSERT_OK(db.Open());
  TestEngine other(PartitionDir());
  ASSERT_STATUS(kBusy, other.Open());
  ASSERT_OK(test::Put(db.get(), Key(1), 1, "still mine"));
  ASSERT_OK(db.Close());
  ASSERT_OK(other.Open());
  ASSERT_EQ(Read(other.get(), Key(1)), "still mine");
  ASSERT_STATUS(kBusy, db.Open());
  other.Crash();  // a dropped engine releases the lock too
  ASSERT_OK(db.Open());
}

TEST(Engine, PartitionDirectory) {
  // Only the leaf directory is created.
  TestEngine deep(test::TmpDir() + "/missing/partition");
  ASSERT_STATUS(kIOError, deep.Open());
  // A trailing slash names the same directory.
  TestEngine db(PartitionDir() + "/");
  ASSERT_OK(db.Open());
  ASSERT_OK(test::Put(db.get(), Key(1), 1, "x"));
  ASSERT_OK(db.Close());
  ASSERT_TRUE(test::FileExists(test::BlobPath(PartitionDir(), 1)));
  TestEngine same(PartitionDir());
  ASSERT_OK(same.Open());
  ASSERT_EQ(same.report().indexes_loaded, 1u);
  ASSERT_EQ(Read(same.get(), Key(1)), "x");
}

TEST(Engine, OptionsAreValidated) {
  struct Case {
    const char* what;
    void (*apply)(EngineOptions*);
  };
  const Case cases[] = {
      {"key_size 0", [](EngineOptions* o) { o->key_size = 0; }},
      {"key_size 1025", [](EngineOptions* o) { o->key_size = 1025; }},
      {"max_blob_size", [](EngineOptions* o) { o->max_blob_size = kBlobHeaderSize + RecordHeaderSize(kBlobFormatVersion, 16) - 1; }},
      {"max_data_in_blob 0", [](EngineOptions* o) { o->max_data_in_blob = 0; }},
      {"max_data_in_blob huge", [](EngineOptions* o) { o->max_data_in_blob = 0xFFFFFFF1ull; }},
      {"bloom_bits_per_key", [](EngineOptions* o) { o->bloom_bits_per_key = 65; }},
      {"empty prefix", [](EngineOptions* o) { o->blob_file_prefix = ""; }},
      {"prefix with a dot", [](EngineOptions* o) { o->blob_file_prefix = "a.b"; }},
      {"prefix with a slash", [](EngineOptions* o) { o->blob_file_prefix = "a/b"; }},
  };
  ThreadPool pool(1);
  for (const Case& c : cases) {
    EngineOptions o = test::TestOptions();
    o.executor = &pool;
    c.apply(&o);
    std::shared_ptr<Engine> engine;
    RecoveryReport report;
    ASSERT_STATUS(kInvalidArgument, Engine::Open(o, PartitionDir(), &engine, &report)) << c.what;
    ASSERT_TRUE(engine == nullptr);
  }
  EngineOptions o = test::TestOptions();
  std::shared_ptr<Engine> engine;
  RecoveryReport report;
  ASSERT_STATUS(kInvalidArgument, Engine::Open(o, PartitionDir(), &engine, &report)) << "no executor";
  ASSERT_FALSE(test::FileExists(PartitionDir()));  // nothing was created
}

TEST(Engine, KeySizes) {
  for (uint32_t k : {1u, 8u, 1024u}) {
    TestEngine db(test::TmpDir() + "/k" + std::to_string(k));
    db.options.key_size = k;
    db.options.max_data_in_blob = 40;
    ASSERT_OK(db.Open());
    test::Model model;
    std::vector<WriteOp> ops;
    for (uint64_t i = 0; i < 100; i++) ops.push_back(WriteOp::Put(Key(i, k), i + 1, ValueFor(Key(i, k), i, i)));
    for (const Status& s : test::WriteAll(db.get(), ops)) ASSERT_OK(s);
    for (const WriteOp& op : ops) model.Apply(op);
    model.Verify(db.get());
    ASSERT_OK(db.Reopen());
    model.Verify(db.get());
  }
}

TEST(Engine, CustomPrefix) {
  const std::string dir = PartitionDir();
  ASSERT_OK(FileSystem::Default()->CreateDir(dir));
  // Another prefix's files, even broken ones, are not ours.
  test::WriteFileOrThrow(JoinPath(dir, "oyster.1.blob"), "not a blob at all, but not ours either");
  test::WriteFileOrThrow(JoinPath(dir, "oyster.1.index.tmp"), "x");
  TestEngine db(dir);
  db.options.blob_file_prefix = "p1";
  ASSERT_OK(db.Open());
  ASSERT_OK(test::Put(db.get(), Key(1), 1, "x"));
  ASSERT_OK(db.Close());
  ASSERT_EQ(test::ListDir(dir),
            (std::vector<std::string>{"oyster.1.blob", "oyster.1.index.tmp", "p1.1.blob", "p1.1.index"}));
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().indexes_loaded, 1u);
  ASSERT_EQ(db.report().blobs_quarantined, 0u);
  ASSERT_EQ(db.report().files_removed, 0u);
  ASSERT_EQ(Read(db.get(), Key(1)), "x");
}

// Unsynced bytes never exceed max_dirty_bytes_before_sync.
TEST(Engine, DirtyBytesForceSync) {
  test::FaultInjectingFileSystem fs;
  TestEngine db(PartitionDir());
  db.options.fs = &fs;
  db.options.max_dirty_bytes_before_sync = 10 * 1024;
  ASSERT_OK(db.Open());
  ASSERT_OK(test::Put(db.get(), Key(0), 1, "first"));  // creates the blob
  fs.ResetCounters();
  const size_t value = 1024 - RecordHeaderSize(kBlobFormatVersion, 16);  // 1 KiB records
  for (uint64_t i = 1; i <= 100; i++) ASSERT_OK(test::Put(db.get(), Key(i), 1, ValueFor(Key(i), 1, value)));
  ASSERT_EQ(fs.writes(), 100u);
  // A sync whenever more than 10 KiB are dirty: every 11th write.
  ASSERT_GE(fs.syncs(), 8u);
  ASSERT_LE(fs.syncs(), 10u);
}

// With sync_writes, writes that arrive while a sync is in progress share the
// next one.
TEST(Engine, SyncWritesGroupCommit) {
  test::FaultInjectingFileSystem fs;
  TestEngine db(PartitionDir());
  db.options.fs = &fs;
  db.options.sync_writes = true;
  ASSERT_OK(db.Open());
  ASSERT_OK(test::Put(db.get(), Key(0), 1, "first"));
  fs.SetSyncDelay(std::chrono::milliseconds(2));  // a disk slow enough for a queue to form
  fs.ResetCounters();
  const uint64_t n = 3000;
  std::vector<WriteOp> ops;
  for (uint64_t i = 1; i <= n; i++) ops.push_back(WriteOp::Put(Key(i), 1, ValueFor(Key(i), 1, 100)));
  for (const Status& s : test::WriteAll(db.get(), ops)) ASSERT_OK(s);
  // One fdatasync per batch write, and batches of many writes.
  ASSERT_EQ(fs.syncs(), fs.writes());
  ASSERT_LE(fs.syncs(), n / 20) << fs.syncs() << " syncs for " << n << " writes";
  ASSERT_EQ(fs.dir_syncs(), 0u);

  // Writers on several threads, each waiting for its own write.
  fs.ResetCounters();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; t++) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < 50; i++) {
        if (!test::Put(db.get(), Key(10000 + t * 100 + i), 2, "v").ok()) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures.load(), 0);
  ASSERT_LE(fs.syncs(), 200u) << "for 400 writes";
}

// Writers and readers at once: no write is lost and no reader sees a value
// that does not belong to the key and version it asked for.
TEST(Engine, ConcurrentWritersAndReaders) {
  const int kWriters = 4, kReaders = 4;
  const uint64_t kKeys = 3000;  // per writer
  TestEngine db(PartitionDir());
  db.options.max_data_in_blob = 2500;  // rotations and background index builds meanwhile
  ASSERT_OK(db.Open());
  auto key_of = [](int w, uint64_t i) { return Key(static_cast<uint64_t>(w) << 32 | i); };
  auto size_of = [](uint64_t i, uint64_t ts) { return static_cast<size_t>((i * 13 + ts * 101) % 700); };

  std::atomic<uint64_t> acked[kWriters];
  for (auto& a : acked) a = 0;
  std::atomic<int> writers_done{0};
  std::mutex error_mu;
  std::string first_error;
  std::atomic<uint64_t> reads{0};
  auto report = [&](const std::string& e) {
    std::lock_guard<std::mutex> l(error_mu);
    if (first_error.empty()) first_error = e;
  };

  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; w++) {
    threads.emplace_back([&, w] {
      // Version 1 of every key in batches, then version 2 of every other key
      // one by one.
      for (uint64_t i = 0; i < kKeys; i += 50) {
        std::vector<WriteOp> ops;
        for (uint64_t j = i; j < i + 50; j++) {
          ops.push_back(WriteOp::Put(key_of(w, j), 1, ValueFor(key_of(w, j), 1, size_of(j, 1))));
        }
        for (const Status& s : test::WriteAll(db.get(), ops)) {
          if (!s.ok()) report("write: " + s.ToString());
        }
        acked[w] = i + 50;
      }
      for (uint64_t i = 0; i < kKeys; i += 2) {
        Status s = test::Put(db.get(), key_of(w, i), 2, ValueFor(key_of(w, i), 2, size_of(i, 2)));
        if (!s.ok()) report("write: " + s.ToString());
      }
      writers_done++;
    });
  }
  for (int r = 0; r < kReaders; r++) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(r);
      while (writers_done.load() < kWriters) {
        const int w = static_cast<int>(rng() % kWriters);
        const uint64_t n = acked[w].load();
        if (n == 0) continue;
        const uint64_t i = rng() % n;
        const std::string k = key_of(w, i);
        GetResult g;
        Status s = db->Get(k.data(), &g);
        reads++;
        if (!s.ok()) {
          report("get: " + s.ToString());
        } else if (g.kind != GetResult::kFound) {
          report("acknowledged key " + std::to_string(i) + " of writer " + std::to_string(w) + " not found");
        } else if (g.version.timestamp != 1 && g.version.timestamp != 2) {
          report("unexpected timestamp " + std::to_string(g.version.timestamp));
        } else {
          std::string v(g.record.storage.get() + g.record.value_offset, g.record.value_size);
          if (v != ValueFor(k, g.version.timestamp, size_of(i, g.version.timestamp))) {
            report("wrong value for key " + std::to_string(i) + " of writer " + std::to_string(w));
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(first_error, "");
  ASSERT_GT(reads.load(), 0u);

  test::Model model;
  for (int w = 0; w < kWriters; w++) {
    for (uint64_t i = 0; i < kKeys; i++) {
      const uint64_t ts = i % 2 == 0 ? 2 : 1;
      model.Put(key_of(w, i), ts, ValueFor(key_of(w, i), ts, size_of(i, ts)));
    }
  }
  ASSERT_EQ(db->RecordsCount(), kWriters * (kKeys + kKeys / 2));
  model.Verify(db.get());
  ASSERT_OK(db.Reopen());
  ASSERT_EQ(db.report().blobs_scanned, 0u);
  model.Verify(db.get());
}

// Sealing the active blob (index built synchronously) while other threads
// write and read.
TEST(Engine, CloseActiveBlobWhileWriting) {
  TestEngine db(PartitionDir());
  ASSERT_OK(db.Open());
  std::atomic<int> writers_done{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; w++) {
    threads.emplace_back([&, w] {
      for (uint64_t i = 0; i < 400; i++) {
        const std::string k = Key(w * 1000 + i);
        if (!test::Put(db.get(), k, 1, ValueFor(k, 1, 30)).ok()) errors++;
        if (Read(db.get(), k) != ValueFor(k, 1, 30)) errors++;
      }
      writers_done++;
    });
  }
  int seals = 0;
  while (writers_done.load() < 3) {
    Status s = db->CloseActiveBlob();
    if (!s.ok()) errors++;
    seals++;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(errors.load(), 0);
  ASSERT_GT(seals, 1);
  test::Model model;
  for (int w = 0; w < 3; w++) {
    for (uint64_t i = 0; i < 400; i++) model.Put(Key(w * 1000 + i), 1, ValueFor(Key(w * 1000 + i), 1, 30));
  }
  model.Verify(db.get());
  ASSERT_OK(db.Reopen());
  ASSERT_EQ(db.report().blobs_scanned, 0u);
  model.Verify(db.get());
}

// Close while other threads keep writing: every write is either refused
// with Closed or acknowledged, and every acknowledged one survives.
TEST(Engine, CloseWhileWriting) {
  TestEngine db(PartitionDir());
  db.options.max_data_in_blob = 300;
  ASSERT_OK(db.Open());
  std::mutex mu;
  test::Model acked;
  std::atomic<int> unexpected{0};
  std::atomic<uint64_t> total{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; w++) {
    threads.emplace_back([&, w] {
      for (uint64_t i = 0;; i += 10) {
        std::vector<WriteOp> ops;
        for (uint64_t j = i; j < i + 10; j++) {
          ops.push_back(WriteOp::Put(Key(w * 1000000 + j), 1, ValueFor(Key(w * 1000000 + j), 1, 20)));
        }
        std::vector<Status> results = test::WriteAll(db.get(), ops);
        bool closed = false;
        for (size_t j = 0; j < ops.size(); j++) {
          if (results[j].ok()) {
            std::lock_guard<std::mutex> l(mu);
            acked.Apply(ops[j]);
            total++;
          } else if (results[j].IsClosed()) {
            closed = true;
          } else {
            unexpected++;
          }
        }
        if (closed) return;
      }
    });
  }
  ASSERT_TRUE(Eventually([&] { return total.load() > 2000; }));
  Status s = db->Close();
  for (auto& t : threads) t.join();
  ASSERT_OK(s);
  ASSERT_EQ(unexpected.load(), 0);
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().blobs_scanned, 0u);  // Close indexed every blob
  ASSERT_EQ(db->RecordsCount(), total.load());
  acked.Verify(db.get());
}

TEST(Engine, WithoutBloomFilter) {
  TestEngine db(PartitionDir());
  db.options.bloom_bits_per_key = 0;
  ASSERT_OK(db.Open());
  test::Model model;
  std::vector<WriteOp> ops;
  for (uint64_t i = 0; i < 500; i += 2) ops.push_back(WriteOp::Put(Key(i), 1, ValueFor(Key(i), 1, 8)));
  for (const Status& s : test::WriteAll(db.get(), ops)) ASSERT_OK(s);
  for (const WriteOp& op : ops) model.Apply(op);
  ASSERT_OK(db.Reopen());
  ASSERT_EQ(db->Stats().filter_memory, 0u);
  model.Verify(db.get());
  for (uint64_t i = 1; i < 500; i += 2) ASSERT_EQ(Read(db.get(), Key(i)), "NOT_FOUND");
}

// Stats and RecordsCount walk the blob set while writes replace it.
TEST(Engine, StatsWhileRotating) {
  TestEngine db(PartitionDir());
  db.options.max_data_in_blob = 1;  // every write starts a blob
  ASSERT_OK(db.Open());
  std::atomic<bool> done{false};
  std::atomic<uint64_t> max_seen{0};
  std::thread stats([&] {
    while (!done.load()) {
      const EngineStats st = db->Stats();
      const uint64_t n = db->RecordsCount();
      if (st.records > max_seen.load()) max_seen = st.records;
      if (n > max_seen.load()) max_seen = n;
    }
  });
  std::vector<WriteOp> ops;
  for (uint64_t i = 0; i < 100; i++) ops.push_back(WriteOp::Put(Key(i), 1, "v"));
  std::vector<Status> results = test::WriteAll(db.get(), ops);
  done = true;
  stats.join();
  for (const Status& s : results) ASSERT_OK(s);
  ASSERT_LE(max_seen.load(), 100u);
  ASSERT_EQ(db->RecordsCount(), 100u);
}

// Snapshot lists the newest record of every key once, across blobs of every
// state (closed, sealed, active), by the rule of reads.
TEST(Engine, SnapshotNewestPerKey) {
  TestEngine db(PartitionDir());
  db.options.max_data_in_blob = 2;
  ASSERT_OK(db.Open());
  ASSERT_OK(test::Put(db.get(), Key(1), 10, "old"));                                   // blob 1
  ASSERT_OK(test::Put(db.get(), Key(2), 10, "two"));
  ASSERT_OK(test::Put(db.get(), Key(1), 10, "same second, later blob"));               // blob 2
  ASSERT_OK(test::Delete(db.get(), Key(2), 30));
  ASSERT_OK(test::Put(db.get(), Key(5), Version::Of(10, 9, 1), "tick 9"));           // blob 3
  ASSERT_OK(test::Delete(db.get(), Key(4), Version::Of(10, 2, 2)));
  ASSERT_OK(test::Put(db.get(), Key(5), Version::Of(10, 3, 1), "tick 3, later blob"));  // blob 4
  ASSERT_OK(test::Put(db.get(), Key(4), Version::Of(10, 2, 2), "a copy of what was deleted"));
  ASSERT_OK(test::Put(db.get(), Key(3), 5, "three"));                                  // blob 5
  std::string packed;
  ASSERT_OK(db->Snapshot(&packed));
  const size_t entry = kSnapshotEntryFixedSize + 16;
  ASSERT_EQ(entry, 33u);
  ASSERT_EQ(packed.size(), 5 * entry);
  struct Got {
    int kind;
    uint64_t timestamp, stamp;
    bool operator==(const Got& o) const { return kind == o.kind && timestamp == o.timestamp && stamp == o.stamp; }
  };
  std::map<std::string, Got> got;
  for (size_t off = 0; off < packed.size(); off += entry) {
    got[packed.substr(off + 17, 16)] =
        Got{packed[off], DecodeFixed64(packed.data() + off + 1), DecodeFixed64(packed.data() + off + 9)};
  }
  ASSERT_TRUE((got[Key(1)] == Got{1, 10, 0}));
  ASSERT_TRUE((got[Key(2)] == Got{2, 30, 0}));
  ASSERT_TRUE((got[Key(3)] == Got{1, 5, 0}));
  ASSERT_TRUE((got[Key(4)] == Got{2, 10, Version::MakeStamp(2, 2)}));
  ASSERT_TRUE((got[Key(5)] == Got{1, 10, Version::MakeStamp(9, 1)}));
}

// Stats report the largest version and the largest tick stored, also after
// a reopen (from the index files), for the node's clock.
TEST(Engine, StatsMaxVersionAndTick) {
  TestEngine db(PartitionDir());
  db.options.max_data_in_blob = 2;
  ASSERT_OK(db.Open());
  ASSERT_EQ(db->Stats().max_version.timestamp, 0u);
  ASSERT_EQ(db->Stats().max_tick, 0u);
  ASSERT_OK(test::Put(db.get(), Key(1), Version::Of(100, 5000, 1), "a"));
  ASSERT_OK(test::Put(db.get(), Key(1), Version::Of(200, 10, 2), "b"));  // supersedes a larger tick
  ASSERT_OK(test::Put(db.get(), Key(2), Version::Of(150, 7000, 3), "c"));
  ASSERT_OK(test::Delete(db.get(), Key(3), Version::Of(200, 20, 1)));
  for (int round = 0; round < 2; round++) {
    const EngineStats st = db->Stats();
    ASSERT_EQ(st.max_version.timestamp, 200u) << "round " << round;
    ASSERT_EQ(st.max_version.tick(), 20u) << "round " << round;
    ASSERT_EQ(st.max_version.node(), 1u) << "round " << round;
    ASSERT_EQ(st.max_tick, 7000u) << "round " << round;
    ASSERT_OK(db.Reopen());
  }
  // Superseded inside its blob, the largest tick still counts.
  TestEngine one(test::TmpDir() + "/one");
  ASSERT_OK(one.Open());
  ASSERT_OK(test::Put(one.get(), Key(1), Version::Of(100, 9000, 1), "a"));
  ASSERT_OK(test::Put(one.get(), Key(1), Version::Of(101, 1, 1), "b"));
  ASSERT_EQ(one->Stats().max_tick, 9000u);
  ASSERT_OK(one.Reopen());
  ASSERT_EQ(one->Stats().max_tick, 9000u);
  one.Crash();
  ASSERT_OK(one.Open());
  ASSERT_EQ(one->Stats().max_tick, 9000u);
}

}  // namespace oyster
