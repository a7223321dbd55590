// Reads that must not wait (ReadOptions::no_wait), as the event loop makes
// them: they answer exactly as blocking reads do, or WouldBlock, never
// anything else; what is not in memory or the page cache, a damaged index
// block (it needs a repair), a damaged record and a blob a writer holds are
// left to a blocking read.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/format.h"
#include "test/fault_file_system.h"
#include "test/test_util.h"
#include "test/testharness.h"

namespace oyster {
namespace {

using test::FaultInjectingFileSystem;
using test::Key;
using test::Puts;
using test::TestEngine;
using test::ValueFor;
using test::WriteEach;
using test::WriteOp;

ReadOptions NoWait() {
  ReadOptions o;
  o.no_wait = true;
  return o;
}

// Whether this machine serves non-blocking reads of a file just written
// (Linux 4.14+ on a file system that takes RWF_NOWAIT).
bool NoWaitReadsWork() {
  std::unique_ptr<File> f;
  const std::string path = test::TmpDir() + "/probe";
  if (!FileSystem::Default()->OpenFile(path, true, &f).ok()) return false;
  const IoSlice data{"probe", 5};
  if (!f->Write(0, &data, 1).ok()) return false;
  char buf[5];
  size_t n = 0;
  return f->ReadNoWait(0, 5, buf, &n).ok();
}

// The value of a found Get, or the kind of what it found.
std::string Describe(const Status& s, const GetResult& g) {
  if (!s.ok()) return s.ToString();
  if (g.kind == GetResult::kAbsent) return "NOT_FOUND";
  if (g.kind == GetResult::kDeleted) return "DELETED@" + std::to_string(g.version.timestamp);
  return std::string(g.record.value(), g.record.value_size) + "@" + std::to_string(g.version.timestamp);
}

}  // namespace

// ReadNoWait returns what Read returns, or WouldBlock; at the end of a file
// it stops short as Read does.
TEST(NoWaitRead, FileReadsMatchBlockingReads) {
  std::unique_ptr<File> f;
  ASSERT_OK(FileSystem::Default()->OpenFile(test::TmpDir() + "/file", true, &f));
  const std::string data = ValueFor(Key(1), 1, 10000);
  const IoSlice slice{data.data(), data.size()};
  ASSERT_OK(f->Write(0, &slice, 1));
  std::string buf(20000, '\0');
  size_t n = 0;
  Status s = f->ReadNoWait(100, 5000, buf.data(), &n);
  if (s.IsWouldBlock()) {
    test::Note("non-blocking reads are not available here; every no-wait read goes to the pool");
    return;
  }
  ASSERT_OK(s);
  ASSERT_EQ(n, 5000u);
  ASSERT_TRUE(buf.compare(0, 5000, data, 100, 5000) == 0);
  ASSERT_OK(f->ReadNoWait(9000, 5000, buf.data(), &n));
  ASSERT_EQ(n, 1000u);  // the end of the file
  ASSERT_TRUE(buf.compare(0, 1000, data, 9000, 1000) == 0);
  ASSERT_OK(f->ReadNoWait(20000, 10, buf.data(), &n));
  ASSERT_EQ(n, 0u);
}

// Reads leave a file's access time alone: updating it could make a read on
// the event loop wait for the file system's journal.
TEST(NoWaitRead, ReadsLeaveAccessTimes) {
  const std::string path = test::TmpDir() + "/file";
  std::unique_ptr<File> f;
  ASSERT_OK(FileSystem::Default()->OpenFile(path, true, &f));
  const IoSlice data{"0123456789", 10};
  ASSERT_OK(f->Write(0, &data, 1));
  // An access time older than the last change: relatime would renew it on the next read.
  struct timespec times[2] = {{1000000000, 0}, {0, UTIME_OMIT}};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  char buf[10];
  size_t n = 0;
  ASSERT_OK(f->Read(0, 10, buf, &n));
  Status s = f->ReadNoWait(0, 10, buf, &n);
  ASSERT_TRUE(s.ok() || s.IsWouldBlock()) << s.ToString();
  std::unique_ptr<File> again;
  ASSERT_OK(FileSystem::Default()->OpenFile(path, false, &again));
  ASSERT_OK(again->Read(0, 10, buf, &n));
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  ASSERT_EQ(static_cast<int64_t>(st.st_atim.tv_sec), 1000000000);
}

// Across active and closed blobs, overwrites and tombstones, after a reopen
// and after a crash: a no-wait Get and Lookup agree with the blocking ones
// whenever they answer; with the page cache warm they always answer.
TEST(NoWaitRead, EngineReadsMatchBlockingReads) {
  const bool served = NoWaitReadsWork();
  TestEngine db(test::TmpDir() + "/partition");
  db.options.max_data_in_blob = 40;
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 100, 5, 300), &model);
  WriteEach(db.get(), Puts(0, 30, 7, 20), &model);
  std::vector<WriteOp> deletes;
  for (uint64_t i = 20; i < 40; i += 2) deletes.push_back(WriteOp::Delete(Key(i), 9));
  WriteEach(db.get(), deletes, &model);
  for (int round = 0; round < 3; round++) {
    if (round == 1) {
      ASSERT_OK(db.Reopen());
    }
    if (round == 2) {
      db.Crash();
      ASSERT_OK(db.Open());
    }
    model.Verify(db.get());  // warms the page cache
    for (uint64_t i = 0; i < 110; i++) {
      GetResult blocking, now;
      const Status bs = db->Get(Key(i).data(), &blocking);
      const Status ns = db->Get(NoWait(), Key(i).data(), &now);
      if (ns.IsWouldBlock() && !served) continue;
      ASSERT_EQ(Describe(ns, now), Describe(bs, blocking)) << "key " << i << ", round " << round;
      LookupResult lb, ln;
      ASSERT_OK(db->Lookup(Key(i).data(), &lb));
      ASSERT_OK(db->Lookup(NoWait(), Key(i).data(), &ln));
      ASSERT_EQ(ln.kind, lb.kind);
      ASSERT_EQ(ln.version.timestamp, lb.version.timestamp);
      ASSERT_EQ(ln.value_size, now.kind == GetResult::kFound ? now.record.value_size : 0u);
    }
  }
  ASSERT_EQ(db->Stats().corrupt_reads, 0u);
}

// Locate and Read are a Get in two steps.
TEST(NoWaitRead, LocateThenRead) {
  TestEngine db(test::TmpDir() + "/partition");
  db.options.max_data_in_blob = 3;
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 10, 1, 50), &model);
  WriteEach(db.get(), {WriteOp::Put(Key(4), 3, "newer"), WriteOp::Delete(Key(5), 3)}, &model);
  LookupResult l;
  RecordLocation where;
  ASSERT_OK(db->Locate(ReadOptions(), Key(4).data(), &l, &where));
  ASSERT_EQ(l.kind, GetResult::kFound);
  ASSERT_EQ(l.version.timestamp, 3u);
  ASSERT_EQ(l.value_size, 5u);
  GetResult g;
  ASSERT_OK(db->Read(ReadOptions(), Key(4).data(), where, &g));
  ASSERT_EQ(Describe(Status::OK(), g), "newer@3");
  ASSERT_OK(db->Locate(ReadOptions(), Key(5).data(), &l, &where));
  ASSERT_EQ(l.kind, GetResult::kDeleted);
  ASSERT_EQ(l.value_size, 0u);
  ASSERT_OK(db->Locate(ReadOptions(), Key(99).data(), &l, &where));
  ASSERT_EQ(l.kind, GetResult::kAbsent);
  // A location read with another key is caught as damage, not served.
  ASSERT_OK(db->Locate(ReadOptions(), Key(4).data(), &l, &where));
  ASSERT_STATUS(kCorruption, db->Read(ReadOptions(), Key(6).data(), where, &g));
}

// With nothing in the page cache, every read that needs the disk (a record,
// an index block) is WouldBlock; what memory answers (the active blob's
// index, bloom filters and fences) is still answered. Blocking reads work.
TEST(NoWaitRead, UncachedDataWouldBlock) {
  FaultInjectingFileSystem fs;
  TestEngine db(test::TmpDir() + "/partition");
  db.options.fs = &fs;
  db.options.max_data_in_blob = 50;
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 70, 1, 100), &model);
  ASSERT_OK(db.Reopen());
  ASSERT_EQ(db.report().indexes_loaded, 2u);
  WriteEach(db.get(), Puts(100, 110, 1, 100), &model);  // into a new active blob
  fs.UncacheReads(true);
  fs.ResetCounters();
  GetResult g;
  LookupResult l;
  ASSERT_STATUS(kWouldBlock, db->Get(NoWait(), Key(10).data(), &g));  // closed blob: its index block
  ASSERT_STATUS(kWouldBlock, db->Lookup(NoWait(), Key(10).data(), &l));
  ASSERT_STATUS(kWouldBlock, db->Get(NoWait(), Key(105).data(), &g));  // active blob: its record
  ASSERT_OK(db->Lookup(NoWait(), Key(105).data(), &l));                // ... but not its index
  ASSERT_EQ(l.kind, GetResult::kFound);
  // Keys outside the closed blob's fences need no index block.
  ASSERT_OK(db->Get(NoWait(), Key(5000).data(), &g));
  ASSERT_EQ(g.kind, GetResult::kAbsent);
  ASSERT_TRUE(fs.no_wait_reads() >= 3u);
  model.Verify(db.get());  // blocking reads are not affected
  fs.UncacheReads(false);
  if (NoWaitReadsWork()) {
    ASSERT_OK(db->Get(NoWait(), Key(10).data(), &g));
    ASSERT_EQ(Describe(Status::OK(), g), ValueFor(Key(10), 1, 100) + "@1");
  }
}

// A damaged index block needs the blob scanned to repair it: a no-wait read
// leaves that to a blocking one, which repairs the index; nothing is
// counted twice.
TEST(NoWaitRead, DamagedIndexBlockWaitsForTheRepair) {
  TestEngine db(test::TmpDir() + "/partition");
  test::Model model;
  test::WriteBlobWithDamagedIndexBlock(&db, &model);
  GetResult g;
  ASSERT_STATUS(kWouldBlock, db->Get(NoWait(), Key(250).data(), &g));
  ASSERT_EQ(db->Stats().corrupt_reads, 0u);
  ASSERT_EQ(db->Stats().index_repairs, 0u);
  ASSERT_OK(db->Get(Key(250).data(), &g));
  ASSERT_EQ(db->Stats().index_repairs, 1u);
  ASSERT_EQ(db->Stats().corrupt_reads, 1u);
  if (NoWaitReadsWork()) {
    ASSERT_OK(db->Get(NoWait(), Key(250).data(), &g));
    ASSERT_EQ(Describe(Status::OK(), g), ValueFor(Key(250), 1, 10) + "@1");
  }
  model.Verify(db.get());
}

// A damaged record is left to the read that may wait, which reports and
// counts it once; the keys around it are served without waiting.
TEST(NoWaitRead, DamagedRecordIsLeftToABlockingRead) {
  if (!NoWaitReadsWork()) {
    test::Note("non-blocking reads are not available here");
    return;
  }
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 20, 4, 100), &model);
  LookupResult l;
  RecordLocation where;
  ASSERT_OK(db->Locate(ReadOptions(), Key(5).data(), &l, &where));
  ASSERT_OK(db.Close());
  test::FlipByte(test::BlobPath(db.dir(), 1), where.entry.offset + RecordHeaderSize(kBlobFormatVersion, 16) + 42, 0x10);
  ASSERT_OK(db.Open());
  GetResult g;
  ASSERT_OK(db->Get(Key(6).data(), &g));  // warms the page cache for the damaged record's page too
  ASSERT_STATUS(kWouldBlock, db->Get(NoWait(), Key(5).data(), &g));
  ASSERT_EQ(db->Stats().corrupt_reads, 0u);
  ASSERT_STATUS(kCorruption, db->Get(Key(5).data(), &g));
  ASSERT_EQ(g.version.timestamp, 4u);
  ASSERT_EQ(db->Stats().corrupt_reads, 1u);
  ASSERT_OK(db->Get(NoWait(), Key(6).data(), &g));
  ASSERT_EQ(Describe(Status::OK(), g), ValueFor(Key(6), 4, 100) + "@4");
}

// Reads and writes at once: a no-wait read sees every acknowledged write
// or answers WouldBlock (the writer held the blob); never a wrong version.
TEST(NoWaitRead, ConcurrentWithWriters) {
  TestEngine db(test::TmpDir() + "/partition");
  db.options.max_data_in_blob = 200;
  ASSERT_OK(db.Open());
  std::atomic<uint64_t> acknowledged{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (uint64_t ts = 1; ts <= 60 && !stop; ts++) {
      for (const Status& s : test::WriteAll(db.get(), Puts(0, 50, ts, 30))) {
        if (!s.ok()) stop = true;
      }
      acknowledged = ts;
    }
  });
  uint64_t reads = 0, blocked = 0;
  while (acknowledged < 60 && !stop) {
    const uint64_t floor = acknowledged.load();
    for (uint64_t i = 0; i < 50; i++) {
      GetResult g;
      Status s = db->Get(NoWait(), Key(i).data(), &g);
      reads++;
      if (s.IsWouldBlock()) {
        blocked++;
        continue;
      }
      ASSERT_OK(s);
      if (floor == 0 && g.kind == GetResult::kAbsent) continue;
      ASSERT_EQ(g.kind, GetResult::kFound);
      ASSERT_TRUE(g.version.timestamp >= floor) << "key " << i << " at " << g.version.timestamp << ", acknowledged " << floor;
      ASSERT_EQ(std::string(g.record.value(), g.record.value_size), ValueFor(Key(i), g.version.timestamp, 30));
    }
  }
  writer.join();
  ASSERT_FALSE(stop.load());
  test::Note(std::to_string(reads) + " no-wait reads, " + std::to_string(blocked) + " would have blocked");
}

}  // namespace oyster
