// Drop-behind: once a sync covers the value of a large record, the engine
// tells the file it may let the value's pages go (File::DropCache) — every
// such value exactly once, only after a sync, never a small one — and the
// values read back the same; on a file system that honours the hint (not
// tmpfs) the pages are really gone from the page cache.

#include <string>
#include <vector>

#include "engine/drop_behind.h"
#include "engine/engine.h"
#include "test/fault_file_system.h"
#include "test/test_util.h"
#include "test/testharness.h"

namespace oyster {
namespace {

using test::FaultInjectingFileSystem;
using test::Key;
using test::StreamPut;
using test::TestEngine;
using test::ValueFor;
using test::WriteEach;
using test::WriteOp;

constexpr uint64_t kLarge = DropBehind::kMinValueSize;

// Where the value of the newest record of `key` lies in its blob file.
struct ValueRange {
  std::string path;
  uint64_t offset;
  uint64_t n;
  bool operator==(const ValueRange& o) const { return path == o.path && offset == o.offset && n == o.n; }
};

ValueRange RangeOf(Engine* e, const std::string& key) {
  LookupResult l;
  RecordLocation where;
  Status s = e->Locate(ReadOptions(), key.data(), &l, &where);
  if (!s.ok() || l.kind != GetResult::kFound) FAIL() << "locate " << s.ToString();
  const uint64_t header = RecordHeaderSize(kBlobFormatVersion, key.size());
  return ValueRange{where.blob->file()->path(), where.entry.offset + header, where.entry.value_size};
}

// The ranges dropped so far, those that follow each other in one file joined
// (a streamed value is dropped piece by piece).
std::vector<ValueRange> Drops(const FaultInjectingFileSystem& fs) {
  std::vector<ValueRange> out;
  for (const auto& d : fs.cache_hints(FaultInjectingFileSystem::CacheHint::kDrop)) {
    if (!out.empty() && out.back().path == d.path && out.back().offset + out.back().n == d.offset) {
      out.back().n += d.n;
    } else {
      out.push_back(ValueRange{d.path, d.offset, d.n});
    }
  }
  return out;
}

std::string Describe(const std::vector<ValueRange>& v) {
  std::string out;
  for (const ValueRange& r : v) out += r.path.substr(r.path.rfind('/') + 1) + "@" + std::to_string(r.offset) + "+" + std::to_string(r.n) + " ";
  return out;
}

// Whether File::DropCache really frees pages here: a file written, synced
// and dropped no longer answers a no-wait read (tmpfs keeps its pages, and
// some kernels or file systems take no no-wait reads at all).
bool DropCacheWorks() {
  std::unique_ptr<File> f;
  const std::string path = test::TmpDir() + "/probe";
  if (!FileSystem::Default()->OpenFile(path, true, &f).ok()) return false;
  const std::string data(1 << 20, 'p');
  const IoSlice slice{data.data(), data.size()};
  if (!f->Write(0, &slice, 1).ok() || !f->Sync().ok()) return false;
  char buf[4096];
  size_t n = 0;
  if (!f->ReadNoWait(8192, sizeof buf, buf, &n).ok()) return false;  // no no-wait reads: cannot tell
  f->DropCache(0, data.size());
  return f->ReadNoWait(8192, sizeof buf, buf, &n).IsWouldBlock();
}

}  // namespace

// The newest cached_large_value_bytes of the large values synced in the
// active blob stay cached; older ones leave as newer ones are synced. A new
// blob starts its own count: the last values of the sealed one stay.
TEST(DropBehind, NewestSyncedValuesStayCached) {
  FaultInjectingFileSystem fs;
  TestEngine db(test::TmpDir() + "/partition");
  db.options.fs = &fs;
  db.options.sync_writes = true;
  db.options.cached_large_value_bytes = 2 * kLarge + 100;  // two values
  ASSERT_OK(db.Open());
  test::Model model;
  fs.ResetCounters();
  std::vector<ValueRange> written;
  std::vector<ValueRange> expected;
  for (uint64_t i = 0; i < 5; i++) {
    WriteEach(db.get(), {WriteOp::Put(Key(i), 1, ValueFor(Key(i), 1, kLarge + i))}, &model);
    written.push_back(RangeOf(db.get(), Key(i)));
    if (i >= 2) expected.push_back(written[i - 2]);
    ASSERT_EQ(Describe(Drops(fs)), Describe(expected)) << "after key " << i;
  }
  ASSERT_OK(db->CloseActiveBlob());
  for (uint64_t i = 5; i < 8; i++) {
    WriteEach(db.get(), {WriteOp::Put(Key(i), 1, ValueFor(Key(i), 1, kLarge + i))}, &model);
    written.push_back(RangeOf(db.get(), Key(i)));
  }
  expected.push_back(written[5]);  // keys 3 and 4 stay with the sealed blob
  ASSERT_EQ(Describe(Drops(fs)), Describe(expected));
  model.Verify(db.get());
}

// Without sync_writes: large values are dropped when the sync that covers
// them is done, not before; small ones and values just under the line never.
TEST(DropBehind, LargeValuesLeaveTheCacheOnceSynced) {
  FaultInjectingFileSystem fs;
  TestEngine db(test::TmpDir() + "/partition");
  db.options.fs = &fs;
  db.options.cached_large_value_bytes = 0;  // each value leaves once synced
  db.options.max_dirty_bytes_before_sync = 3 * kLarge;
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), {WriteOp::Put(Key(1), 1, ValueFor(Key(1), 1, 1000))}, &model);  // the blob is created (and synced)
  fs.ResetCounters();
  WriteEach(db.get(), {WriteOp::Put(Key(2), 1, ValueFor(Key(2), 1, kLarge)),
                       WriteOp::Put(Key(3), 1, ValueFor(Key(3), 1, kLarge - 1))},
            &model);
  ASSERT_EQ(fs.syncs(), 0u);
  ASSERT_TRUE(Drops(fs).empty()) << Describe(Drops(fs));  // not synced yet: nothing to let go
  WriteEach(db.get(), {WriteOp::Put(Key(4), 1, ValueFor(Key(4), 1, 2 * kLarge))}, &model);
  ASSERT_EQ(fs.syncs(), 1u);
  ASSERT_EQ(Describe(Drops(fs)), Describe({RangeOf(db.get(), Key(2)), RangeOf(db.get(), Key(4))}));
  // The next sync drops only what was written since.
  WriteEach(db.get(), {WriteOp::Put(Key(5), 1, ValueFor(Key(5), 1, 4 * kLarge))}, &model);
  ASSERT_EQ(fs.syncs(), 2u);
  ASSERT_EQ(Describe(Drops(fs)), Describe({RangeOf(db.get(), Key(2)), RangeOf(db.get(), Key(4)), RangeOf(db.get(), Key(5))}));
  model.Verify(db.get());
  // SyncWritten covers what the threshold has not reached yet.
  WriteEach(db.get(), {WriteOp::Put(Key(6), 1, ValueFor(Key(6), 1, kLarge))}, &model);
  ASSERT_EQ(Drops(fs).size(), 3u);
  ASSERT_OK(db->SyncWritten());
  ASSERT_EQ(Drops(fs).size(), 4u);
  ASSERT_TRUE(Drops(fs).back() == RangeOf(db.get(), Key(6)));
  model.Verify(db.get());
  ASSERT_OK(db.Reopen());
  model.Verify(db.get());
}

// With sync_writes every large value is dropped right after its own write;
// a streamed value as well, once its stream is finished.
TEST(DropBehind, SyncedWritesAndStreamsDropEachLargeValue) {
  FaultInjectingFileSystem fs;
  TestEngine db(test::TmpDir() + "/partition");
  db.options.fs = &fs;
  db.options.cached_large_value_bytes = 0;  // each value leaves once synced
  db.options.sync_writes = true;
  ASSERT_OK(db.Open());
  test::Model model;
  fs.ResetCounters();
  std::vector<ValueRange> expected;
  for (uint64_t i = 0; i < 6; i++) {
    const size_t n = i % 2 == 0 ? kLarge + i : 100 + i;
    WriteEach(db.get(), {WriteOp::Put(Key(i), 1, ValueFor(Key(i), 1, n))}, &model);
    if (n >= kLarge) expected.push_back(RangeOf(db.get(), Key(i)));
    ASSERT_EQ(Describe(Drops(fs)), Describe(expected)) << "after key " << i;
  }
  const std::string value = ValueFor(Key(100), 2, 3 * kLarge + 5);
  ASSERT_OK(StreamPut(db.get(), Key(100), test::Ts(2), value, 70000));
  model.Put(Key(100), 2, value);
  expected.push_back(RangeOf(db.get(), Key(100)));
  ASSERT_EQ(Describe(Drops(fs)), Describe(expected));
  model.Verify(db.get());
}

// A stream longer than max_dirty_bytes_before_sync is written back as it
// goes, and what each write-back covers leaves the cache then, not at the
// end. The write-backs run beside the appends, one at a time: what is
// neither written back nor dropped stays within twice the bound (and a
// piece). Only Finish syncs.
TEST(DropBehind, LongStreamWritesBackAndDropsAsItGoes) {
  FaultInjectingFileSystem fs;
  TestEngine db(test::TmpDir() + "/partition");
  db.options.fs = &fs;
  db.options.cached_large_value_bytes = 0;  // each value leaves once synced
  db.options.max_dirty_bytes_before_sync = 2 * kLarge;
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), {WriteOp::Put(Key(1), 1, ValueFor(Key(1), 1, 1000))}, &model);
  fs.ResetCounters();
  const std::string value = ValueFor(Key(2), 2, 8 * kLarge);
  std::unique_ptr<PutStream> stream;
  ASSERT_OK(test::BeginStream(db.get(), Key(2), test::Ts(2), value.size(), &stream));
  const size_t piece = kLarge / 2;
  for (size_t at = 0; at < value.size(); at += piece) {
    ASSERT_OK(stream->Append(value.data() + at, piece));
    // Each write-back covers everything appended before it.
    const uint64_t dropped = Drops(fs).empty() ? 0 : Drops(fs).front().n;
    ASSERT_LE(at + piece - dropped, 2 * (2 * kLarge) + piece) << "after " << at + piece << " bytes";
    ASSERT_EQ(fs.syncs(), 0u);
  }
  ASSERT_GE(fs.cache_hints(FaultInjectingFileSystem::CacheHint::kWrittenBack).size(), 3u);
  ASSERT_OK(stream->Finish());
  ASSERT_EQ(fs.syncs(), 1u);  // 8 × kLarge: past the bound, synced before it is acknowledged
  model.Put(Key(2), 2, value);
  model.Verify(db.get());
  ASSERT_OK(db->SyncWritten());
  ASSERT_EQ(Describe(Drops(fs)), Describe({RangeOf(db.get(), Key(2))}));
  ASSERT_OK(db.Reopen());
  model.Verify(db.get());
}

// On a real file system the pages of a large value are gone once synced,
// those of a small one stay, and both read back.
TEST(DropBehind, PagesLeaveThePageCache) {
  if (!DropCacheWorks()) {
    std::fprintf(stderr, "skipped: this file system keeps pages it is told to drop, or takes no no-wait reads\n");
    return;
  }
  TestEngine db(test::TmpDir() + "/partition");
  db.options.sync_writes = true;
  db.options.cached_large_value_bytes = 0;
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), {WriteOp::Put(Key(1), 1, ValueFor(Key(1), 1, 4 * kLarge)),
                       WriteOp::Put(Key(2), 1, ValueFor(Key(2), 1, 64 * 1024))},
            &model);
  const ValueRange large = RangeOf(db.get(), Key(1));
  const ValueRange small = RangeOf(db.get(), Key(2));
  std::unique_ptr<File> f;
  ASSERT_OK(FileSystem::Default()->OpenFile(large.path, false, &f));
  char buf[4096];
  size_t n = 0;
  ASSERT_TRUE(f->ReadNoWait(large.offset + large.n / 2, sizeof buf, buf, &n).IsWouldBlock());
  ASSERT_OK(f->ReadNoWait(small.offset + 8192, sizeof buf, buf, &n));
  model.Verify(db.get());
}

}  // namespace oyster
