// The engine under I/O failures injected by FaultInjectingFileSystem: what
// fails, what keeps working, and what a reopen recovers.

#include <errno.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/format.h"
#include "test/fault_file_system.h"
#include "test/test_util.h"
#include "test/testharness.h"

namespace oyster {
namespace {

using test::FaultInjectingFileSystem;
using test::Eventually;
using test::Key;
using test::Puts;
using test::Read;
using test::TestEngine;
using test::ValueFor;
using test::WriteEach;
using test::WriteOp;

std::string PartitionDir() { return test::TmpDir() + "/partition"; }

size_t CountFiles(const std::string& dir, FileKind kind) {
  size_t n = 0;
  for (const std::string& name : test::ListDir(dir)) {
    uint64_t id;
    if (ParseFileName(name, "oyster", &id) == kind) n++;
  }
  return n;
}

// A put that runs `on_done` when the engine reports its outcome (on the
// writer's thread, before the next batch is taken).
class HookedPut final : public WriteRequest {
 public:
  HookedPut(std::string k, std::function<void()> on_done) : key_(std::move(k)), on_done_(std::move(on_done)) {
    key = key_.data();
    version = test::Ts(1);
    value = "hooked";
    value_size = 6;
  }
  void Done(const Status& s) override {
    status = s;
    on_done_();
    latch.CountDown();
  }
  Status status;
  test::Latch latch{1};

 private:
  const std::string key_;
  const std::function<void()> on_done_;
};

}  // namespace

// A write error fails the requests of that batch only; the blob is rolled
// back to its last record and later batches succeed.
TEST(Fault, FailedWriteFailsOnlyItsBatch) {
  FaultInjectingFileSystem fs;
  TestEngine db(PartitionDir());
  test::GatedExecutor* gate = db.gate();
  db.options.fs = &fs;
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 20), &model);
  const std::string blob = test::BlobPath(db.dir(), 1);
  const uint64_t size = test::FileSize(blob);

  // 612 writes queued at once are written as a batch of 512 (the batch
  // limit, docs/FORMAT.md 7.1) and one of 100. The first batch's write
  // fails after 1000 of its bytes reached the file; the fault is cleared as
  // soon as its outcome is reported.
  gate->Close();
  HookedPut first(Key(1000), [&] { fs.ClearFaults(); });
  db->Write(&first);
  const std::vector<WriteOp> rest = Puts(1001, 1612, 2);
  std::vector<Status> results;
  {
    test::PendingWrites pending(db.get(), rest);
    fs.FailWritesFrom(1, 1000);
    gate->Open();
    first.latch.Wait();
    results = pending.Wait();
  }
  ASSERT_STATUS(kIOError, first.status);
  ASSERT_EQ(first.status.err(), EIO);
  for (size_t i = 0; i < rest.size(); i++) {
    if (i < 511) {
      ASSERT_STATUS(kIOError, results[i]) << "write " << i << " shares the failed batch";
    } else {
      ASSERT_OK(results[i]) << "write " << i << " is in the next batch";
      model.Apply(rest[i]);
    }
  }
  ASSERT_EQ(Read(db.get(), Key(1000)), "NOT_FOUND");
  ASSERT_EQ(Read(db.get(), Key(1001)), "NOT_FOUND");
  ASSERT_EQ(db->Stats().write_error, "");
  ASSERT_EQ(db->RecordsCount(), 120u);
  // The torn bytes were cut off: nothing of the failed batch is left
  // between the records.
  ASSERT_EQ(test::FileSize(blob), size + 100 * (RecordHeaderSize(kBlobFormatVersion, 16) + 60));
  WriteEach(db.get(), Puts(2000, 2010), &model);
  model.Verify(db.get());

  db.Crash();
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().bytes_truncated, 0u);
  ASSERT_EQ(db.report().skipped_bytes, 0u);
  model.Verify(db.get());
  ASSERT_EQ(Read(db.get(), Key(1000)), "NOT_FOUND");
}

// A torn write whose rollback fails too leaves unknown bytes at the end of
// the blob: writes are refused from then on, reads go on, and a reopen cuts
// the torn bytes and recovers every acknowledged write.
TEST(Fault, TornWriteWithFailedRollbackPoisonsWrites) {
  for (bool orderly_close : {false, true}) {
    FaultInjectingFileSystem fs;
    TestEngine db(test::TmpDir() + (orderly_close ? "/close" : "/crash"));
    db.options.fs = &fs;
    ASSERT_OK(db.Open());
    test::Model model;
    WriteEach(db.get(), Puts(0, 20), &model);
    WriteEach(db.get(), {WriteOp::Delete(Key(3), 2)}, &model);
    const std::string blob = test::BlobPath(db.dir(), 1);
    const uint64_t size = test::FileSize(blob);

    fs.FailWritesFrom(1, 30);
    fs.FailTruncates(true);
    ASSERT_STATUS(kIOError, test::Put(db.get(), Key(100), 1, ValueFor(Key(100), 1, 500)));
    fs.ClearFaults();
    ASSERT_EQ(test::FileSize(blob), size + 30);  // the torn bytes really are there
    ASSERT_NE(db->Stats().write_error, "");

    Status s = test::Put(db.get(), Key(101), 1, "refused");
    ASSERT_STATUS(kIOError, s);
    ASSERT_TRUE(s.message().find("reopened") != std::string::npos) << s.ToString();
    ASSERT_STATUS(kIOError, test::Delete(db.get(), Key(0), 5));
    ASSERT_EQ(test::FileSize(blob), size + 30);  // nothing appended behind the damage
    model.Verify(db.get());
    ASSERT_EQ(Read(db.get(), Key(100)), "NOT_FOUND");

    if (orderly_close) {
      db.Close();  // its outcome does not matter; the reopen must repair
    } else {
      db.Crash();
    }
    ASSERT_OK(db.Open());
    ASSERT_EQ(db.report().bytes_truncated, 30u);
    ASSERT_EQ(test::FileSize(blob), size);
    ASSERT_EQ(db->Stats().write_error, "");
    model.Verify(db.get());
    ASSERT_EQ(Read(db.get(), Key(100)), "NOT_FOUND");
    WriteEach(db.get(), Puts(200, 210), &model);
    ASSERT_OK(db.Reopen());
    model.Verify(db.get());
  }
}

// After a failed fdatasync nothing unsynced can be trusted: the batch fails
// and so does every later write until the engine is reopened.
TEST(Fault, FailedSyncPoisonsWrites) {
  FaultInjectingFileSystem fs;
  TestEngine db(PartitionDir());
  db.options.fs = &fs;
  db.options.sync_writes = true;
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 10), &model);
  fs.FailSyncs(true);
  ASSERT_STATUS(kIOError, test::Put(db.get(), Key(100), 1, "unsynced"));
  ASSERT_EQ(Read(db.get(), Key(100)), "NOT_FOUND");  // never acknowledged, never visible
  fs.ClearFaults();
  ASSERT_STATUS(kIOError, test::Put(db.get(), Key(101), 1, "refused"));
  ASSERT_TRUE(db->Stats().write_error.find("fdatasync") != std::string::npos) << db->Stats().write_error;
  model.Verify(db.get());
  db.Crash();
  ASSERT_OK(db.Open());
  model.Verify(db.get());
  ASSERT_EQ(Read(db.get(), Key(101)), "NOT_FOUND");
  // The failed batch was cut off again: it does not come back after a restart.
  ASSERT_EQ(Read(db.get(), Key(100)), "NOT_FOUND");
  WriteEach(db.get(), Puts(10, 20), &model);
  model.Verify(db.get());
}

// A streamed put whose write-back fails is aborted, and, as after the
// writer's own failed sync, every later write fails until the engine is
// reopened: the kernel may have dropped pages of records acknowledged since
// the last good sync, and the next sync need not say so. What was
// acknowledged before stays readable. The write-back runs beside the
// appends: its failure fails the next call, Append or Finish.
TEST(Fault, FailedStreamSyncDisablesWrites) {
  FaultInjectingFileSystem fs;
  TestEngine db(PartitionDir());
  db.options.fs = &fs;
  db.options.max_dirty_bytes_before_sync = 100000;
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 10), &model);
  const std::string value = ValueFor(Key(50), 2, 300000);
  std::unique_ptr<PutStream> stream;
  ASSERT_OK(test::BeginStream(db.get(), Key(50), test::Ts(2), value.size(), &stream));
  fs.FailSyncs(true);
  // Past max_dirty_bytes_before_sync the append hands over a write-back,
  // which fails; the next append, due to write back as well, waits for it
  // and fails.
  ASSERT_OK(stream->Append(value.data(), 150000));
  ASSERT_STATUS(kIOError, stream->Append(value.data() + 150000, 150000));
  ASSERT_STATUS(kClosed, stream->Finish());
  fs.ClearFaults();
  ASSERT_TRUE(db->Stats().write_error.find("writeback") != std::string::npos) << db->Stats().write_error;
  ASSERT_STATUS(kIOError, test::Put(db.get(), Key(101), 1, "refused"));
  ASSERT_EQ(Read(db.get(), Key(50)), "NOT_FOUND");
  model.Verify(db.get());
  stream.reset();
  db.Crash();
  ASSERT_OK(db.Open());
  model.Verify(db.get());
  ASSERT_EQ(Read(db.get(), Key(50)), "NOT_FOUND");
  ASSERT_EQ(Read(db.get(), Key(101)), "NOT_FOUND");
  WriteEach(db.get(), Puts(10, 20), &model);
  model.Verify(db.get());

  // A write-back handed over by the last append fails Finish: the record is never published.
  ASSERT_OK(test::BeginStream(db.get(), Key(51), test::Ts(3), value.size(), &stream));
  fs.FailSyncs(true);
  ASSERT_OK(stream->Append(value.data(), value.size()));
  ASSERT_STATUS(kIOError, stream->Finish());
  fs.ClearFaults();
  ASSERT_EQ(Read(db.get(), Key(51)), "NOT_FOUND");
  ASSERT_STATUS(kIOError, test::Put(db.get(), Key(102), 1, "refused"));
  stream.reset();
  ASSERT_OK(db.Reopen());
  ASSERT_EQ(Read(db.get(), Key(51)), "NOT_FOUND");
  model.Verify(db.get());
}

// Failing to create a blob (disk full) fails the writes that needed it; once
// space is back a retry succeeds.
TEST(Fault, FailedBlobCreation) {
  FaultInjectingFileSystem fs;
  TestEngine db(PartitionDir());
  db.options.fs = &fs;
  db.options.max_data_in_blob = 5;
  ASSERT_OK(db.Open());
  test::Model model;

  fs.FailCreates(true);
  Status s = test::Put(db.get(), Key(0), 1, "no space");
  ASSERT_STATUS(kIOError, s);
  ASSERT_EQ(s.err(), ENOSPC);
  ASSERT_EQ(CountFiles(db.dir(), FileKind::kBlob), 0u);
  fs.ClearFaults();
  WriteEach(db.get(), Puts(0, 5), &model);
  ASSERT_EQ(db->Stats().active_blob_id, 2u);  // id 1 was consumed by the failed attempt

  // The header write of a new blob fails: the half-made file is removed.
  fs.FailWritesFrom(1);
  ASSERT_STATUS(kIOError, test::Put(db.get(), Key(5), 1, "x"));
  fs.ClearFaults();
  ASSERT_EQ(CountFiles(db.dir(), FileKind::kBlob), 1u);
  ASSERT_EQ(db->Stats().write_error, "");

  // Rotation into a full disk: the sealed blob stays readable.
  WriteEach(db.get(), Puts(5, 10), &model);
  ASSERT_EQ(db->Stats().active_blob_id, 4u);
  fs.FailCreates(true);
  ASSERT_STATUS(kIOError, test::Put(db.get(), Key(10), 1, ValueFor(Key(10), 1, 60)));
  ASSERT_FALSE(db->Stats().has_active_blob);
  model.Verify(db.get());
  fs.ClearFaults();
  WriteEach(db.get(), Puts(10, 15), &model);
  ASSERT_EQ(db->Stats().active_blob_id, 6u);
  model.Verify(db.get());
  ASSERT_OK(db.Reopen());
  model.Verify(db.get());
}

// Index builds after rotation fail (here: rename): the sealed blobs keep
// serving from memory, the error is reported, and Close or a reopen
// finishes the job.
TEST(Fault, FailedIndexBuildDuringRotation) {
  enum Ending { kCloseAfterFix, kCloseWhileFailing, kCrash };
  for (Ending ending : {kCloseAfterFix, kCloseWhileFailing, kCrash}) {
    FaultInjectingFileSystem fs;
    // One thread: the background builds run in the order they were scheduled.
    TestEngine db(test::TmpDir() + "/" + std::to_string(ending), 1);
    db.options.fs = &fs;
    db.options.max_data_in_blob = 10;
    ASSERT_OK(db.Open());
    test::Model model;
    fs.FailRenames(true);
    WriteEach(db.get(), Puts(0, 35), &model);
    ASSERT_TRUE(Eventually([&] { return db->Stats().background_error.find("blob 3") != std::string::npos; }))
        << db->Stats().background_error;
    EngineStats st = db->Stats();
    ASSERT_EQ(st.blobs, 4u);
    ASSERT_EQ(st.blobs_in_memory, 4u);
    ASSERT_EQ(CountFiles(db.dir(), FileKind::kIndex), 0u);
    ASSERT_EQ(CountFiles(db.dir(), FileKind::kTempIndex), 0u);
    model.Verify(db.get());
    WriteEach(db.get(), Puts(35, 40), &model);  // writes are not affected

    switch (ending) {
      case kCloseAfterFix:
        fs.ClearFaults();
        ASSERT_OK(db.Close());
        ASSERT_EQ(CountFiles(db.dir(), FileKind::kIndex), 4u);
        ASSERT_OK(db.Open());
        ASSERT_EQ(db.report().indexes_loaded, 4u);
        break;
      case kCloseWhileFailing:
        ASSERT_STATUS(kIOError, db.Close());
        fs.ClearFaults();
        ASSERT_OK(db.Open());
        ASSERT_EQ(db.report().indexes_rebuilt, 3u);
        break;
      case kCrash:
        db.Crash();
        fs.ClearFaults();
        ASSERT_OK(db.Open());
        ASSERT_EQ(db.report().indexes_rebuilt, 3u);
        ASSERT_EQ(db->Stats().active_blob_id, 4u);
        break;
    }
    ASSERT_EQ(CountFiles(db.dir(), FileKind::kTempIndex), 0u);
    model.Verify(db.get());
    WriteEach(db.get(), Puts(40, 45), &model);
    ASSERT_OK(db.Reopen());
    model.Verify(db.get());
  }
}

TEST(Fault, FailedCloseActiveBlob) {
  FaultInjectingFileSystem fs;
  TestEngine db(PartitionDir());
  db.options.fs = &fs;
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 10), &model);
  fs.FailRenames(true);
  ASSERT_STATUS(kIOError, db->CloseActiveBlob());
  fs.ClearFaults();
  model.Verify(db.get());
  EngineStats st = db->Stats();
  ASSERT_FALSE(st.has_active_blob);  // sealed all the same; served from memory
  ASSERT_EQ(st.blobs_in_memory, 1u);
  WriteEach(db.get(), Puts(10, 20), &model);
  ASSERT_EQ(db->Stats().active_blob_id, 2u);
  ASSERT_OK(db.Close());  // retries the index of blob 1
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().indexes_loaded, 2u);
  model.Verify(db.get());
}

// Recovery does not serve a partition it could not repair.
TEST(Fault, RecoveryStopsOnIOErrors) {
  FaultInjectingFileSystem fs;
  TestEngine db(PartitionDir());
  db.options.fs = &fs;
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 10), &model);
  db.Crash();
  const std::string blob = test::BlobPath(db.dir(), 1);
  const uint64_t size = test::FileSize(blob);
  test::AppendToFile(blob, "torn");
  fs.FailTruncates(true);
  ASSERT_STATUS(kIOError, db.Open());
  ASSERT_EQ(test::FileSize(blob), size + 4);
  fs.ClearFaults();
  fs.FailSyncs(true);  // the repaired blob cannot be made durable
  ASSERT_STATUS(kIOError, db.Open());
  fs.ClearFaults();
  ASSERT_OK(db.Open());
  ASSERT_EQ(test::FileSize(blob), size);
  model.Verify(db.get());
}

// A blob deleted while open (its disk directory removed) still accepts
// writes that could never be read back: they fail instead of being
// acknowledged, and every later write fails too.
TEST(Fault, RemovedBlobRefusesWrites) {
  TestEngine db(PartitionDir());
  ASSERT_OK(db.Open());
  ASSERT_OK(test::Put(db.get(), Key(1), 1, "kept"));
  test::RemoveFile(test::BlobPath(db.dir(), 1));
  Status s = test::Put(db.get(), Key(2), 1, "lost");
  ASSERT_STATUS(kIOError, s);
  ASSERT_EQ(s.err(), ENOENT);
  ASSERT_STATUS(kIOError, test::Put(db.get(), Key(3), 1, "refused"));
  ASSERT_TRUE(db->Stats().write_error.find("removed") != std::string::npos) << db->Stats().write_error;
}

}  // namespace oyster
