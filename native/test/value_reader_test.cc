// ValueReader: a value read in parts returns exactly its bytes for every
// range; with block checksums a damaged block fails only the reads that
// cover it, without them the read that reaches the end fails; a file cut
// under a reader never yields garbage as good; a reader keeps reading its
// record across newer puts, sealing, close and removal of the files; and
// EngineSet::Open picks the newest record as Get does, whole or as a reader.

#include "engine/value_reader.h"

#include <algorithm>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_set.h"
#include "engine/format.h"
#include "test/fault_file_system.h"
#include "test/test_util.h"
#include "test/testharness.h"

namespace oyster {
namespace {

using test::Engines;
using test::FaultInjectingFileSystem;
using test::Key;
using test::OpenReader;
using test::TestEngine;
using test::ValueFor;
using test::WriteLegacyBlob;

constexpr uint64_t B = kValueBlockSize;
const size_t kHeader = RecordHeaderSize(kBlobFormatVersion, 16);

// Value bytes [pos, pos + n) as read, or "ERROR: ..." if the read fails.
std::string ReadRange(ValueReader* r, uint64_t pos, size_t n) {
  std::string out(n, '\0');
  Status s = r->Read(pos, n, out.data());
  return s.ok() ? out : "ERROR: " + s.ToString();
}

// The whole value, read in order in pieces of `piece` bytes.
Status ReadAll(ValueReader* r, size_t piece, std::string* out) {
  out->assign(r->size(), '\0');
  for (uint64_t at = 0; at < r->size(); at += piece) {
    Status s = r->Read(at, std::min<uint64_t>(piece, r->size() - at), out->data() + at);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

uint64_t CorruptReads(Engine* e) { return e->Stats().corrupt_reads; }

}  // namespace

TEST(ValueReader, RangesAroundEveryBlockBoundary) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  const std::string key = Key(1);
  const std::string value = ValueFor(key, 2, 5 * B + 1234);
  ASSERT_OK(test::Put(db.get(), key, 2, value));
  ASSERT_OK(test::StreamPut(db.get(), Key(2), test::Ts(2), value, 50000));
  for (const std::string& k : {key, Key(2)}) {
    std::unique_ptr<ValueReader> r = OpenReader(db.get(), k);
    ASSERT_EQ(r->size(), value.size());
    ASSERT_EQ(r->version().timestamp, 2u);
    ASSERT_EQ(r->head(), value.substr(0, ValueReader::kHeadSize));
    for (uint64_t boundary = 0; boundary <= value.size(); boundary += B) {
      for (uint64_t pos : {boundary - 1, boundary, boundary + 1}) {
        for (uint64_t n : {uint64_t{1}, uint64_t{2}, B - 1, B, B + 1, 3 * B}) {
          if (pos > value.size() || n > value.size() - pos) continue;
          ASSERT_EQ(ReadRange(r.get(), pos, n), value.substr(pos, n)) << k << " [" << pos << ", +" << n << ")";
        }
      }
    }
    ASSERT_EQ(ReadRange(r.get(), 0, value.size()), value);                // whole
    ASSERT_EQ(ReadRange(r.get(), value.size() - 10, 10), value.substr(value.size() - 10));  // last
    ASSERT_EQ(ReadRange(r.get(), 2 * B + 7, 1000), value.substr(2 * B + 7, 1000));         // middle
    for (size_t piece : {size_t{7919}, size_t{B + 3}, size_t{100000}}) {
      std::string all;
      ASSERT_OK(ReadAll(r.get(), piece, &all));
      ASSERT_TRUE(all == value) << piece;
    }
  }
  ASSERT_EQ(CorruptReads(db.get()), 0u);
}

// The first bytes come with the open, whatever the value's size.
TEST(ValueReader, HeadHoldsTheFirstBytes) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  const size_t h = ValueReader::kHeadSize;
  for (size_t size : {size_t{0}, size_t{1}, h - 1, h, h + 1, 2 * B}) {
    const std::string key = Key(size);
    const std::string value = ValueFor(key, 1, size);
    ASSERT_OK(test::Put(db.get(), key, 1, value));
    ASSERT_EQ(OpenReader(db.get(), key)->head(), value.substr(0, h)) << size;
  }
}

TEST(ValueReader, RangesOutsideTheValue) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  const std::string value = ValueFor(Key(1), 1, 3 * B);
  ASSERT_OK(test::Put(db.get(), Key(1), 1, value));
  std::unique_ptr<ValueReader> r = OpenReader(db.get(), Key(1));
  char c;
  ASSERT_STATUS(kInvalidArgument, r->Read(value.size(), 1, &c));
  ASSERT_STATUS(kInvalidArgument, r->Read(1, value.size(), &c));
  ASSERT_STATUS(kInvalidArgument, r->Read(UINT64_MAX, 2, &c));
  ASSERT_OK(r->Read(value.size(), 0, &c));
  ASSERT_EQ(ReadRange(r.get(), value.size() - 1, 1), value.substr(value.size() - 1));
}

// A damaged byte in one block fails the reads that cover that block and no
// other; the engine counts the reader's corruption once.
TEST(ValueReader, DamagedBlockFailsOnlyTheReadsOfIt) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  const std::string key = Key(1);
  const std::string value = ValueFor(key, 1, 4 * B + 500);
  ASSERT_OK(test::Put(db.get(), key, 1, value));
  ASSERT_OK(db->CloseActiveBlob());
  RecordLocation at;
  std::unique_ptr<ValueReader> r = OpenReader(db.get(), key, &at);
  test::FlipByte(test::BlobPath(db.dir(), 1), at.entry.offset + kHeader + 2 * B + 100);
  ASSERT_EQ(ReadRange(r.get(), 0, 2 * B), value.substr(0, 2 * B));
  ASSERT_EQ(ReadRange(r.get(), 3 * B, B + 500), value.substr(3 * B));
  ASSERT_EQ(ReadRange(r.get(), 2 * B - 10, 10), value.substr(2 * B - 10, 10));
  std::string all(value.size(), ' ');
  ASSERT_STATUS(kCorruption, r->Read(2 * B + 100, 1, all.data()));
  ASSERT_STATUS(kCorruption, r->Read(2 * B - 1, 2, all.data()));
  ASSERT_STATUS(kCorruption, r->Read(0, value.size(), all.data()));
  ASSERT_EQ(CorruptReads(db.get()), 1u);  // three failed reads of one reader
  std::unique_ptr<ValueReader> other = OpenReader(db.get(), key);
  ASSERT_STATUS(kCorruption, other->Read(2 * B, B, all.data()));
  ASSERT_EQ(CorruptReads(db.get()), 2u);
  ASSERT_TRUE(test::Read(db.get(), key).rfind("ERROR: Corruption", 0) == 0);  // the record CRC as well
  // A damaged block checksum (read as a reader opens) fails its block the same way.
  test::FlipByte(test::BlobPath(db.dir(), 1), at.entry.offset + kHeader + value.size() + 4 * 4);
  std::unique_ptr<ValueReader> third = OpenReader(db.get(), key);
  ASSERT_STATUS(kCorruption, third->Read(4 * B, 1, all.data()));
  ASSERT_EQ(ReadRange(third.get(), 3 * B, B), value.substr(3 * B, B));
}

// A value of one block or less has no block checksums: served in any order
// (jumps ahead read what lies between, jumps back start again), checked as
// the end is reached.
TEST(ValueReader, SmallValueCheckedAtItsEnd) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  const std::string key = Key(1);
  const std::string value = ValueFor(key, 1, B);
  ASSERT_OK(test::Put(db.get(), key, 1, value));
  RecordLocation at;
  std::unique_ptr<ValueReader> r = OpenReader(db.get(), key, &at);
  ASSERT_EQ(at.entry.flags, 0u);
  std::string all;
  ASSERT_OK(ReadAll(r.get(), 999, &all));
  ASSERT_TRUE(all == value);
  ASSERT_EQ(ReadRange(r.get(), 100, 50), value.substr(100, 50));     // back: from the start again
  ASSERT_EQ(ReadRange(r.get(), 40000, 50), value.substr(40000, 50));  // ahead
  ASSERT_EQ(ReadRange(r.get(), B - 5, 5), value.substr(B - 5));      // ahead to the end
  ASSERT_EQ(ReadRange(r.get(), 10, B - 10), value.substr(10));        // back, to the end
  test::FlipByte(test::BlobPath(db.dir(), 1), at.entry.offset + kHeader + 30000);
  // Earlier pieces come back unverified; the read that reaches the end fails.
  ASSERT_EQ(ReadRange(r.get(), 0, 1000), value.substr(0, 1000));
  ASSERT_STATUS(kCorruption, r->Read(1000, B - 1000, all.data()));
  ASSERT_STATUS(kCorruption, r->Read(B - 1, 1, all.data()));  // from the start again, failing again
  ASSERT_STATUS(kCorruption, r->Read(0, B, all.data()));
  ASSERT_EQ(CorruptReads(db.get()), 1u);
}

// A large value written without block checksums (by an engine before they
// existed; format 1 or 2) is read like a small one.
TEST(ValueReader, LegacyLargeValueCheckedAtItsEnd) {
  for (uint32_t format : {kBlobFormatV1, kBlobFormatVersion}) {
    const std::string dir = test::TmpDir() + "/format" + std::to_string(format);
    const std::string key = Key(9);
    const std::string value = ValueFor(key, 3, 3 * B + 77);
    ASSERT_OK(FileSystem::Default()->CreateDir(dir));
    WriteLegacyBlob(dir, format, key, test::Ts(3), value);
    TestEngine db(dir);
    ASSERT_OK(db.Open());
    ASSERT_EQ(test::Read(db.get(), key), value);
    RecordLocation at;
    std::unique_ptr<ValueReader> r = OpenReader(db.get(), key, &at);
    ASSERT_EQ(r->size(), value.size());
    ASSERT_EQ(r->head(), value.substr(0, ValueReader::kHeadSize));
    std::string all;
    ASSERT_OK(ReadAll(r.get(), 10007, &all));
    ASSERT_TRUE(all == value) << format;
    ASSERT_EQ(ReadRange(r.get(), 2 * B, B + 77), value.substr(2 * B));  // a jump back to the end
    ASSERT_EQ(ReadRange(r.get(), B, 5), value.substr(B, 5));
    ASSERT_EQ(ReadRange(r.get(), 3 * B, 77), value.substr(3 * B));
    ASSERT_OK(r->CheckRest());  // the whole value read back: passed
    // A reader that stops short of the end checks the rest before its last bytes go.
    std::unique_ptr<ValueReader> ranged = OpenReader(db.get(), key);
    ASSERT_EQ(ReadRange(ranged.get(), B, 5), value.substr(B, 5));
    ASSERT_OK(ranged->CheckRest());
    ASSERT_EQ(ReadRange(ranged.get(), B + 5, 5), value.substr(B + 5, 5));  // where it left off
    test::FlipByte(test::BlobPath(dir, 1), at.entry.offset + RecordHeaderSize(format, 16) + 2 * B + 1);
    ASSERT_OK(ranged->CheckRest());  // checked once: what it checked was good then
    ASSERT_EQ(ReadRange(r.get(), 0, 2 * B), value.substr(0, 2 * B));
    ASSERT_STATUS(kCorruption, r->Read(2 * B, B + 77, all.data()));
    ASSERT_EQ(CorruptReads(db.get()), 1u);
    // The damage lies past a range that stops short of it: the range's bytes come back, CheckRest fails.
    std::unique_ptr<ValueReader> early = OpenReader(db.get(), key);
    ASSERT_EQ(ReadRange(early.get(), 10, 100), value.substr(10, 100));
    ASSERT_STATUS(kCorruption, early->CheckRest());
    ASSERT_STATUS(kCorruption, early->CheckRest());  // and again
    ASSERT_EQ(ReadRange(early.get(), 110, 100), value.substr(110, 100));  // the position kept
  }
}

// With block checksums every read checks its own bytes: CheckRest has
// nothing left to check, whatever lies beyond them.
TEST(ValueReader, CheckRestWithBlocksChecksNothingMore) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  const std::string key = Key(1);
  const std::string value = ValueFor(key, 1, 4 * B);
  ASSERT_OK(test::Put(db.get(), key, 1, value));
  RecordLocation at;
  std::unique_ptr<ValueReader> r = OpenReader(db.get(), key, &at);
  ASSERT_NE(at.entry.flags & kFlagBlocks, 0u);
  test::FlipByte(test::BlobPath(db.dir(), 1), at.entry.offset + kHeader + 3 * B + 9);
  ASSERT_EQ(ReadRange(r.get(), 0, B), value.substr(0, B));
  ASSERT_OK(r->CheckRest());
  std::string buf(10, '\0');
  ASSERT_STATUS(kCorruption, r->Read(3 * B, buf.size(), buf.data()));
}

// A file cut under an open reader: what is gone fails, nothing is made up.
TEST(ValueReader, FileCutUnderTheReader) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  const std::string big = ValueFor(Key(1), 1, 4 * B);
  const std::string small = ValueFor(Key(2), 1, 50000);
  ASSERT_OK(test::Put(db.get(), Key(2), 1, small));
  ASSERT_OK(test::Put(db.get(), Key(1), 1, big));
  ASSERT_OK(db->CloseActiveBlob());
  RecordLocation at;
  std::unique_ptr<ValueReader> blocks = OpenReader(db.get(), Key(1), &at);
  std::unique_ptr<ValueReader> whole = OpenReader(db.get(), Key(2));
  test::TruncateFile(test::BlobPath(db.dir(), 1), at.entry.offset + kHeader + 2 * B + 10);
  ASSERT_EQ(ReadRange(blocks.get(), 0, 2 * B), big.substr(0, 2 * B));
  std::string buf(4 * B, ' ');
  ASSERT_STATUS(kCorruption, blocks->Read(2 * B, 5, buf.data()));
  ASSERT_STATUS(kCorruption, blocks->Read(B, 3 * B, buf.data()));
  std::string all;
  ASSERT_OK(ReadAll(whole.get(), 7000, &all));  // lies before the cut
  ASSERT_TRUE(all == small);
  test::TruncateFile(test::BlobPath(db.dir(), 1), at.entry.offset - 100);
  ASSERT_STATUS(kCorruption, whole->Read(0, small.size(), buf.data()));
  ASSERT_EQ(CorruptReads(db.get()), 2u);
  // Cut before the reader opens: its block checksums are missing.
  LookupResult l;
  ASSERT_OK(db->Locate(ReadOptions(), Key(1).data(), &l, &at));
  std::unique_ptr<ValueReader> r;
  ASSERT_STATUS(kCorruption, db->OpenValue(ReadOptions(), Key(1).data(), at, &r));
  ASSERT_EQ(CorruptReads(db.get()), 3u);
}

// The header is checked at open, as a Get checks it.
TEST(ValueReader, DamagedHeaderFailsTheOpen) {
  Engines e(1);
  const std::string value = ValueFor(Key(1), 5, 3 * B);
  ASSERT_OK(test::Put(e[0], Key(1), Version::Of(5, 6, 7), value));
  LookupResult l;
  RecordLocation at;
  ASSERT_OK(e[0]->Locate(ReadOptions(), Key(1).data(), &l, &at));
  test::FlipByte(test::BlobPath(e.db(0)->dir(), 1), at.entry.offset + 40);  // in the key
  OpenResult o;
  ASSERT_STATUS(kCorruption, e.Set({0}).Open(ReadOptions(), Key(1).data(), 0, &o));
  ASSERT_EQ(o.version.ToString(), "5.6@7");
  ASSERT_TRUE(o.reader == nullptr);
  ASSERT_EQ(CorruptReads(e[0]), 1u);
  ReadOptions no_wait;
  no_wait.no_wait = true;
  ASSERT_STATUS(kWouldBlock, e.Set({0}).Open(no_wait, Key(1).data(), 0, &o));  // left to the read that waits
  ASSERT_EQ(CorruptReads(e[0]), 1u);
}

// A reader keeps its record: newer versions, the blob sealed and indexed,
// the engine closed and the files removed change nothing for it.
TEST(ValueReader, OutlivesNewPutsSealingCloseAndRemoval) {
  TestEngine db(test::TmpDir() + "/partition");
  db.options.max_data_in_blob = 3;
  ASSERT_OK(db.Open());
  const std::string key = Key(1);
  const std::string first = ValueFor(key, 1, 2 * B + 5);
  ASSERT_OK(test::Put(db.get(), key, 1, first));
  std::unique_ptr<ValueReader> r = OpenReader(db.get(), key);
  std::unique_ptr<ValueReader> small;
  ASSERT_OK(test::Put(db.get(), Key(2), 1, "short"));
  small = OpenReader(db.get(), Key(2));
  ASSERT_EQ(ReadRange(r.get(), 0, B), first.substr(0, B));
  for (uint64_t ts = 2; ts < 10; ts++) ASSERT_OK(test::Put(db.get(), key, ts, ValueFor(key, ts, B + ts)));
  ASSERT_TRUE(test::Eventually([&] { return db->Stats().blobs_in_memory <= 1; }));
  ASSERT_EQ(ReadRange(r.get(), B, B + 5), first.substr(B));
  ASSERT_OK(db.Close());
  ASSERT_EQ(ReadRange(r.get(), 0, first.size()), first);
  for (const std::string& name : test::ListDir(db.dir())) test::RemoveFile(db.dir() + "/" + name);
  ASSERT_EQ(ReadRange(r.get(), 5, first.size() - 5), first.substr(5));
  ASSERT_EQ(ReadRange(small.get(), 0, 5), "short");
}

// Read failures of the file are I/O errors, not damage; a reader reads
// again once the file can be read.
TEST(ValueReader, ReadErrorsAreNotCorruption) {
  FaultInjectingFileSystem fs;
  TestEngine db(test::TmpDir() + "/partition");
  db.options.fs = &fs;
  ASSERT_OK(db.Open());
  const std::string value = ValueFor(Key(1), 1, 3 * B);
  ASSERT_OK(test::Put(db.get(), Key(1), 1, value));
  ASSERT_OK(test::Put(db.get(), Key(2), 1, value.substr(0, 1000)));
  std::unique_ptr<ValueReader> blocks = OpenReader(db.get(), Key(1));
  std::unique_ptr<ValueReader> whole = OpenReader(db.get(), Key(2));
  fs.FailReads(true);
  std::string buf(value.size(), ' ');
  ASSERT_STATUS(kIOError, blocks->Read(10, B, buf.data()));
  ASSERT_STATUS(kIOError, whole->Read(0, 1000, buf.data()));
  LookupResult l;
  RecordLocation at;
  ASSERT_OK(db->Locate(ReadOptions(), Key(1).data(), &l, &at));
  std::unique_ptr<ValueReader> r;
  ASSERT_STATUS(kIOError, db->OpenValue(ReadOptions(), Key(1).data(), at, &r));
  fs.ClearFaults();
  ASSERT_EQ(ReadRange(blocks.get(), 10, B), value.substr(10, B));
  ASSERT_EQ(ReadRange(whole.get(), 0, 1000), value.substr(0, 1000));
  ASSERT_EQ(CorruptReads(db.get()), 0u);
  // Without waiting, a header that is not in the page cache is not read.
  fs.UncacheReads(true);
  ReadOptions no_wait;
  no_wait.no_wait = true;
  ASSERT_STATUS(kWouldBlock, db->OpenValue(no_wait, Key(1).data(), at, &r));
  fs.ClearFaults();
  ASSERT_OK(db.Close());
}

// EngineSet::Open chooses the newest record across the engines as Get does,
// and answers it whole up to whole_up_to bytes, as a reader above.
TEST(EngineSetOpen, NewestAcrossEnginesWholeOrReader) {
  Engines e(3);
  const std::string k = Key(1);
  const std::string big = ValueFor(k, 200, 2 * B + 3);
  ASSERT_OK(test::Put(e[0], k, 100, "older"));
  ASSERT_OK(test::Put(e[1], k, 200, big));
  ASSERT_OK(test::Delete(e[2], k, 150));
  for (const std::vector<size_t>& order : {std::vector<size_t>{0, 1, 2}, {2, 1, 0}, {1, 0, 2}}) {
    const EngineSet set = e.Set(order);
    OpenResult o;
    ASSERT_OK(set.Open(ReadOptions(), k.data(), big.size(), &o));
    ASSERT_EQ(o.kind, GetResult::kFound);
    ASSERT_EQ(o.version.timestamp, 200u);
    ASSERT_EQ(o.value_size, big.size());
    ASSERT_TRUE(o.reader == nullptr);
    ASSERT_TRUE(std::string(o.record.value(), o.record.value_size) == big);
    ASSERT_OK(set.Open(ReadOptions(), k.data(), big.size() - 1, &o));
    ASSERT_EQ(o.kind, GetResult::kFound);
    ASSERT_EQ(o.value_size, big.size());
    ASSERT_TRUE(o.reader != nullptr);
    ASSERT_EQ(o.reader->version().timestamp, 200u);
    ASSERT_EQ(ReadRange(o.reader.get(), 0, big.size()), big);
  }
  // A newer tombstone, a full tie (the earlier engine's), nothing at all.
  ASSERT_OK(test::Delete(e[2], k, 300));
  OpenResult o;
  ASSERT_OK(e.Set({0, 1, 2}).Open(ReadOptions(), k.data(), 0, &o));
  ASSERT_EQ(o.kind, GetResult::kDeleted);
  ASSERT_EQ(o.version.timestamp, 300u);
  ASSERT_TRUE(o.reader == nullptr);
  const Version tie = Version::Of(400, 1, 1);
  ASSERT_OK(test::Put(e[0], Key(2), tie, ValueFor(Key(2), 0, 100000)));
  ASSERT_OK(test::Put(e[1], Key(2), tie, ValueFor(Key(2), 1, 100000)));
  for (size_t first : {0, 1}) {
    ASSERT_OK(e.Set({first, 1 - first}).Open(ReadOptions(), Key(2).data(), 10, &o));
    ASSERT_EQ(ReadRange(o.reader.get(), 0, 100000), ValueFor(Key(2), first, 100000));
  }
  ASSERT_OK(e.Set({0, 1, 2}).Open(ReadOptions(), Key(3).data(), 0, &o));
  ASSERT_EQ(o.kind, GetResult::kAbsent);
}

}  // namespace oyster
