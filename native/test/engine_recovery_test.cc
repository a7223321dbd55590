// What Engine::Open finds and repairs: orderly reopen, crashes, torn and
// damaged files, stray files.

#include <algorithm>
#include <string>
#include <vector>

#include "engine/blob_scanner.h"
#include "engine/engine.h"
#include "engine/format.h"
#include "test/test_util.h"
#include "test/testharness.h"
#include "util/coding.h"

namespace oyster {
namespace {

using test::Key;
using test::Puts;
using test::Read;
using test::TestEngine;
using test::ValueFor;
using test::WriteEach;
using test::WriteOp;

std::string PartitionDir() { return test::TmpDir() + "/partition"; }

// The newest record of `key` in a blob file, found by scanning it.
IndexEntry RecordOf(const std::string& blob_path, const std::string& key) {
  std::unique_ptr<File> file;
  Status s = FileSystem::Default()->OpenFile(blob_path, false, &file);
  if (!s.ok()) FAIL() << s.ToString();
  IndexEntry found;
  bool any = false;
  ScanResult r;
  s = ScanBlob(*file, kBlobFormatVersion, kBlobHeaderSize, test::FileSize(blob_path), key.size(),
               [&](const char* k, const IndexEntry& e, bool) {
                 if (std::string(k, key.size()) == key) {
                   found = e;
                   any = true;
                 }
               },
               &r);
  if (!s.ok() || !any) FAIL() << "no record of the key in " << blob_path;
  return found;
}

bool HasEvent(const RecoveryReport& r, const std::string& part) {
  for (const std::string& e : r.events) {
    if (e.find(part) != std::string::npos) return true;
  }
  return false;
}

// A blob file holding only a header.
void WriteHeaderOnlyBlob(const std::string& path, uint64_t id, uint32_t key_size = 16,
                         uint32_t version = kBlobFormatVersion) {
  BlobHeader h;
  h.version = version;
  h.key_size = key_size;
  h.blob_id = id;
  std::string bytes(kBlobHeaderSize, '\0');
  EncodeBlobHeader(h, &bytes[0]);
  test::WriteFileOrThrow(path, bytes);
}

}  // namespace

TEST(Recovery, EmptyDirectory) {
  TestEngine db(PartitionDir());
  ASSERT_OK(db.Open());
  const RecoveryReport& r = db.report();
  ASSERT_EQ(r.blobs + r.indexes_loaded + r.blobs_scanned + r.indexes_rebuilt + r.bytes_truncated +
                r.corrupt_records + r.skipped_bytes + r.blobs_quarantined + r.files_removed,
            0u);
  ASSERT_EQ(r.events.size(), 0u);
  ASSERT_TRUE(test::FileExists(PartitionDir()));
  ASSERT_OK(db.Close());
  ASSERT_EQ(test::ListDir(PartitionDir()).size(), 0u);  // nothing written, nothing left
}

TEST(Recovery, ReopenAfterCloseUsesIndexFiles) {
  TestEngine db(PartitionDir());
  db.options.max_data_in_blob = 100;
  ASSERT_OK(db.Open());
  test::Model model;
  std::vector<WriteOp> ops = Puts(0, 450, 1, 40);
  for (uint64_t i = 0; i < 450; i += 7) ops.push_back(WriteOp::Delete(Key(i), 2));
  for (const Status& s : test::WriteAll(db.get(), ops)) ASSERT_OK(s);
  for (const WriteOp& op : ops) model.Apply(op);
  ASSERT_OK(db.Close());
  ASSERT_OK(db.Open());
  const RecoveryReport& r = db.report();
  ASSERT_EQ(r.blobs, 6u);
  ASSERT_EQ(r.indexes_loaded, r.blobs);
  ASSERT_EQ(r.blobs_scanned, 0u);
  ASSERT_EQ(r.indexes_rebuilt, 0u);
  ASSERT_EQ(r.bytes_truncated, 0u);
  ASSERT_EQ(r.files_removed, 0u);
  EngineStats st = db->Stats();
  ASSERT_FALSE(st.has_active_blob);
  ASSERT_EQ(st.blobs_in_memory, 0u);
  ASSERT_EQ(st.records, ops.size());
  model.Verify(db.get());
  // The next write starts a new blob: closed blobs are never appended to.
  ASSERT_OK(test::Put(db.get(), Key(1000), 3, "new"));
  ASSERT_EQ(db->Stats().active_blob_id, 7u);
}

// Dropping the engine without Close is a crash: the active blob has no index
// and is rescanned, then written on.
TEST(Recovery, CrashRescansTheActiveBlob) {
  TestEngine db(PartitionDir());
  db.options.max_data_in_blob = 100;
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 250, 1, 30), &model);
  WriteEach(db.get(), {WriteOp::Delete(Key(240), 5), WriteOp::Put(Key(10), 5, "ten")}, &model);
  const uint64_t active = db->Stats().active_blob_id;
  ASSERT_EQ(active, 3u);
  db.Crash();
  ASSERT_FALSE(test::FileExists(test::IndexPath(db.dir(), 3)));
  ASSERT_OK(db.Open());
  const RecoveryReport& r = db.report();
  ASSERT_EQ(r.blobs, 3u);
  ASSERT_EQ(r.indexes_loaded, 2u);
  ASSERT_EQ(r.blobs_scanned, 1u);
  ASSERT_EQ(r.indexes_rebuilt, 0u);
  ASSERT_EQ(r.bytes_truncated, 0u);
  ASSERT_EQ(db->Stats().active_blob_id, active);
  model.Verify(db.get());
  // Appends continue in the same blob.
  const uint64_t size = test::FileSize(test::BlobPath(db.dir(), active));
  WriteEach(db.get(), Puts(250, 260, 1, 30), &model);
  ASSERT_GT(test::FileSize(test::BlobPath(db.dir(), active)), size);
  ASSERT_EQ(db->Stats().blobs, 3u);
  db.Crash();
  ASSERT_OK(db.Open());
  model.Verify(db.get());
  ASSERT_OK(db.Reopen());
  ASSERT_EQ(db.report().indexes_loaded, 3u);
  model.Verify(db.get());
}

TEST(Recovery, MissingIndexIsRebuilt) {
  TestEngine db(PartitionDir());
  db.options.max_data_in_blob = 100;
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 300, 1, 20), &model);
  ASSERT_OK(db.Close());
  test::RemoveFile(test::IndexPath(db.dir(), 2));
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().blobs, 3u);
  ASSERT_EQ(db.report().indexes_loaded, 2u);
  ASSERT_EQ(db.report().blobs_scanned, 1u);
  ASSERT_EQ(db.report().indexes_rebuilt, 1u);
  ASSERT_TRUE(test::FileExists(test::IndexPath(db.dir(), 2)));
  ASSERT_FALSE(db->Stats().has_active_blob);
  model.Verify(db.get());
  ASSERT_OK(db.Reopen());
  ASSERT_EQ(db.report().indexes_loaded, 3u);
}

// The last blob without any index file is the blob that was being written:
// it becomes the active blob again (docs/FORMAT.md, section 8).
TEST(Recovery, LastBlobWithoutIndexBecomesActive) {
  TestEngine db(PartitionDir());
  db.options.max_data_in_blob = 100;
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 150, 1, 20), &model);
  ASSERT_OK(db.Close());
  test::RemoveFile(test::IndexPath(db.dir(), 2));
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().indexes_rebuilt, 0u);
  ASSERT_EQ(db.report().blobs_scanned, 1u);
  ASSERT_EQ(db->Stats().active_blob_id, 2u);
  WriteEach(db.get(), Puts(150, 160, 1, 20), &model);
  ASSERT_EQ(db->Stats().blobs, 2u);
  model.Verify(db.get());
}

// An index that fails validation is rebuilt from its blob; when it belongs
// to the last blob, that blob is not written on again.
TEST(Recovery, UnusableIndexIsRebuilt) {
  struct Damage {
    const char* what;
    void (*apply)(const std::string& index, const std::string& other_index);
  };
  const Damage damages[] = {
      {"garbage", [](const std::string& p, const std::string&) {
         test::WriteFileOrThrow(p, ValueFor("garbage", 1, test::FileSize(p)));
       }},
      {"empty", [](const std::string& p, const std::string&) { test::WriteFileOrThrow(p, ""); }},
      {"truncated", [](const std::string& p, const std::string&) { test::TruncateFile(p, test::FileSize(p) - 1); }},
      {"header byte", [](const std::string& p, const std::string&) { test::FlipByte(p, 40); }},
      {"fence byte", [](const std::string& p, const std::string&) { test::FlipByte(p, 130); }},
      {"another blob's index", [](const std::string& p, const std::string& other) {
         test::WriteFileOrThrow(p, test::ReadFileOrThrow(other));
       }},
  };
  for (const Damage& d : damages) {
    for (uint64_t damaged : {1, 3}) {
      const std::string dir = test::TmpDir() + "/" + std::to_string(damaged) + d.what;
      TestEngine db(dir);
      db.options.max_data_in_blob = 100;
      ASSERT_OK(db.Open());
      test::Model model;
      WriteEach(db.get(), Puts(0, 300, 1, 20), &model);
      ASSERT_OK(db.Close());
      d.apply(test::IndexPath(dir, damaged), test::IndexPath(dir, 2));
      ASSERT_OK(db.Open()) << d.what;
      ASSERT_EQ(db.report().indexes_loaded, 2u) << d.what;
      ASSERT_EQ(db.report().indexes_rebuilt, 1u) << d.what;
      ASSERT_TRUE(HasEvent(db.report(), "unusable")) << d.what;
      ASSERT_FALSE(db->Stats().has_active_blob) << d.what;
      model.Verify(db.get());
      WriteEach(db.get(), {WriteOp::Put(Key(5), 2, "five")}, &model);
      ASSERT_EQ(db->Stats().active_blob_id, 4u) << d.what;
      ASSERT_OK(db.Reopen());
      ASSERT_EQ(db.report().indexes_loaded, 4u) << d.what;
      model.Verify(db.get());
    }
  }
}

// A write interrupted anywhere inside the last record of the active blob:
// open cuts the torn tail and keeps every earlier record.
TEST(Recovery, TornActiveBlobAtEveryOffset) {
  const std::string dir = PartitionDir();
  TestEngine db(dir);
  ASSERT_OK(db.Open());
  test::Model before;  // the state without the last record
  WriteEach(db.get(), Puts(0, 10, 1, 50), &before);
  WriteEach(db.get(), {WriteOp::Delete(Key(7), 2)}, &before);
  test::Model after = before;
  WriteEach(db.get(), {WriteOp::Put(Key(3), 9, ValueFor(Key(3), 9, 100))}, &after);  // overwrites key 3
  db.Crash();
  const std::string path = test::BlobPath(dir, 1);
  const std::string full = test::ReadFileOrThrow(path);
  const uint64_t last = RecordOf(path, Key(3)).offset;
  ASSERT_EQ(full.size() - last, RecordHeaderSize(kBlobFormatVersion, 16) + 100);
  for (uint64_t cut = last; cut <= full.size(); cut++) {
    test::WriteFileOrThrow(path, full.substr(0, cut));
    ASSERT_OK(db.Open()) << "cut at " << cut;
    const bool complete = cut == full.size();
    ASSERT_EQ(db.report().bytes_truncated, complete ? 0 : cut - last) << "cut at " << cut;
    ASSERT_EQ(db.report().blobs_scanned, 1u);
    ASSERT_EQ(test::FileSize(path), complete ? full.size() : last) << "cut at " << cut;
    (complete ? after : before).Verify(db.get());
    if (cut == last + 1) {
      // Writes continue at the cut, and survive another crash.
      test::Model more = before;
      WriteEach(db.get(), {WriteOp::Put(Key(20), 1, "twenty")}, &more);
      db.Crash();
      ASSERT_OK(db.Open());
      ASSERT_EQ(db.report().bytes_truncated, 0u);
      more.Verify(db.get());
    }
    db.Crash();
  }
}

// A blob sealed just before a power failure may have lost unsynced bytes
// before its index was written: it is scanned, cut and indexed, and the
// blob after it stays the active one.
TEST(Recovery, TornSealedBlobWithoutIndex) {
  TestEngine db(PartitionDir());
  db.options.max_data_in_blob = 10;
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 9, 1, 80), &model);
  test::Model lost = model;  // what survives: the last record of blob 1 is torn
  WriteEach(db.get(), Puts(9, 15, 1, 80), &model);
  for (const WriteOp& op : Puts(10, 15, 1, 80)) lost.Apply(op);
  db.Crash();
  test::RemoveFile(test::IndexPath(db.dir(), 1));
  const std::string blob1 = test::BlobPath(db.dir(), 1);
  const uint64_t cut = test::FileSize(blob1) - 50;
  test::TruncateFile(blob1, cut);
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().bytes_truncated, cut - (kBlobHeaderSize + 9 * (RecordHeaderSize(kBlobFormatVersion, 16) + 80)));
  ASSERT_EQ(db.report().indexes_rebuilt, 1u);
  ASSERT_EQ(db.report().blobs_scanned, 2u);
  ASSERT_EQ(db->Stats().active_blob_id, 2u);
  lost.Verify(db.get());
  ASSERT_EQ(Read(db.get(), Key(9)), "NOT_FOUND");
}

TEST(Recovery, GarbageTailIsCut) {
  TestEngine db(PartitionDir());
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 20, 1, 100), &model);
  db.Crash();
  const std::string path = test::BlobPath(db.dir(), 1);
  const uint64_t size = test::FileSize(path);
  test::AppendToFile(path, ValueFor("garbage", 1, 1000));
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().bytes_truncated, 1000u);
  ASSERT_TRUE(HasEvent(db.report(), "torn tail"));
  ASSERT_EQ(test::FileSize(path), size);
  model.Verify(db.get());
}

// A damaged value is found when it is read: that key's Get fails, other
// keys are unaffected, and the failure is counted.
TEST(Recovery, DamagedValueFailsOnlyItsKey) {
  for (bool crash : {false, true}) {
    TestEngine db(test::TmpDir() + (crash ? "/crash" : "/close"));
    ASSERT_OK(db.Open());
    test::Model model;
    WriteEach(db.get(), Puts(0, 20, 1, 100), &model);
    const std::string path = test::BlobPath(db.dir(), 1);
    if (crash) {
      db.Crash();
    } else {
      ASSERT_OK(db.Close());
    }
    const IndexEntry e = RecordOf(path, Key(5));
    test::FlipByte(path, e.offset + RecordHeaderSize(kBlobFormatVersion, 16) + 42, 0x10);
    ASSERT_OK(db.Open());
    if (crash) {
      ASSERT_EQ(db.report().blobs_scanned, 1u);
      ASSERT_EQ(db.report().corrupt_records, 1u);
      ASSERT_TRUE(HasEvent(db.report(), "checksum"));
    } else {
      ASSERT_EQ(db.report().indexes_loaded, 1u);
    }
    GetResult g;
    ASSERT_STATUS(kCorruption, db->Get(Key(5).data(), &g));
    ASSERT_EQ(g.version.timestamp, 1u);  // reported with the error
    ASSERT_EQ(db->Stats().corrupt_reads, 1u);
    LookupResult l;
    ASSERT_OK(db->Lookup(Key(5).data(), &l));  // does not read the value
    ASSERT_EQ(l.kind, GetResult::kFound);
    for (uint64_t i = 0; i < 20; i++) {
      if (i != 5) {
        ASSERT_EQ(Read(db.get(), Key(i)), ValueFor(Key(i), 1, 100)) << "key " << i;
      }
    }
    ASSERT_STATUS(kCorruption, db->Get(Key(5).data(), &g));
    ASSERT_EQ(db->Stats().corrupt_reads, 2u);
    // A newer version replaces the damaged one.
    ASSERT_OK(test::Put(db.get(), Key(5), 2, "repaired"));
    ASSERT_EQ(Read(db.get(), Key(5)), "repaired");
  }
}

// A damaged record header: served from an index, the read reports the
// damage; when the blob is scanned, the record is stepped over.
TEST(Recovery, DamagedRecordHeader) {
  for (bool crash : {false, true}) {
    TestEngine db(test::TmpDir() + (crash ? "/crash" : "/close"));
    ASSERT_OK(db.Open());
    test::Model model;
    WriteEach(db.get(), Puts(0, 20, 1, 100), &model);
    WriteEach(db.get(), {WriteOp::Put(Key(5), 2, ValueFor(Key(5), 2, 70))}, &model);
    WriteEach(db.get(), Puts(20, 30, 1, 100), &model);
    const std::string path = test::BlobPath(db.dir(), 1);
    if (crash) {
      db.Crash();
    } else {
      ASSERT_OK(db.Close());
    }
    const IndexEntry e = RecordOf(path, Key(5));
    ASSERT_EQ(e.version.timestamp, 2u);
    test::FlipByte(path, e.offset + 17);  // its timestamp
    ASSERT_OK(db.Open());
    if (crash) {
      ASSERT_EQ(db.report().skipped_bytes, RecordHeaderSize(kBlobFormatVersion, 16) + 70);
      ASSERT_EQ(db.report().bytes_truncated, 0u);
      ASSERT_TRUE(HasEvent(db.report(), "damaged region"));
      // The older version is all that is left of key 5.
      ASSERT_EQ(Read(db.get(), Key(5)), ValueFor(Key(5), 1, 100));
    } else {
      GetResult g;
      ASSERT_STATUS(kCorruption, db->Get(Key(5).data(), &g));
      ASSERT_EQ(db->Stats().corrupt_reads, 1u);
    }
    for (uint64_t i = 0; i < 30; i++) {
      if (i != 5) {
        ASSERT_EQ(Read(db.get(), Key(i)), ValueFor(Key(i), 1, 100)) << "key " << i;
      }
    }
  }
}

// Index blocks are verified when read; the first lookup that meets a damaged
// one counts a corrupt read, rebuilds the index from the blob and succeeds.
TEST(Recovery, DamagedIndexBlock) {
  TestEngine db(PartitionDir());
  test::Model model;
  test::WriteBlobWithDamagedIndexBlock(&db, &model);
  ASSERT_EQ(db.report().indexes_loaded, 1u);
  for (uint64_t i = 0; i < 500; i++) {
    GetResult g;
    ASSERT_OK(db->Get(Key(i).data(), &g)) << "key " << i;
    ASSERT_EQ(g.kind, GetResult::kFound);
  }
  ASSERT_EQ(db->Stats().corrupt_reads, 1u);
  ASSERT_EQ(db->Stats().index_repairs, 1u);
  model.Verify(db.get());
  // The repaired index file is used as it is on the next open.
  ASSERT_OK(db.Close());
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().indexes_loaded, 1u);
  ASSERT_EQ(db.report().indexes_rebuilt, 0u);
  model.Verify(db.get());
}

TEST(Recovery, DamagedBlobHeaderIsQuarantined) {
  for (bool valid_crc : {false, true}) {
    const std::string dir = test::TmpDir() + (valid_crc ? "/wrong_id" : "/garbage");
    TestEngine db(dir);
    ASSERT_OK(db.Open());
    ASSERT_OK(test::Put(db.get(), Key(1), 1, "in blob 1"));
    ASSERT_OK(db->CloseActiveBlob());
    ASSERT_OK(test::Put(db.get(), Key(2), 1, "in blob 2"));
    ASSERT_OK(db->CloseActiveBlob());
    ASSERT_OK(test::Put(db.get(), Key(3), 1, "in blob 3"));
    db.Crash();
    const std::string victim = valid_crc ? test::BlobPath(dir, 3) : test::BlobPath(dir, 1);
    const uint64_t victim_id = valid_crc ? 3 : 1;
    std::string bytes = test::ReadFileOrThrow(victim);
    if (valid_crc) {
      // A well-formed header that names another blob.
      BlobHeader h;
      h.key_size = 16;
      h.blob_id = 99;
      EncodeBlobHeader(h, &bytes[0]);
    } else {
      for (size_t i = 0; i < kBlobHeaderSize; i++) bytes[i] = static_cast<char>(i * 7);
    }
    test::WriteFileOrThrow(victim, bytes);
    ASSERT_OK(db.Open());
    ASSERT_EQ(db.report().blobs_quarantined, 1u);
    // Blob 1 was closed: its index goes with it.
    ASSERT_EQ(db.report().files_removed, valid_crc ? 0u : 1u);
    ASSERT_EQ(db.report().blobs, 2u);
    ASSERT_TRUE(HasEvent(db.report(), "corrupted/"));
    ASSERT_FALSE(test::FileExists(victim));
    const std::string moved = dir + "/corrupted/" + BlobFileName("oyster", victim_id);
    ASSERT_TRUE(test::ReadFileOrThrow(moved) == bytes);
    for (uint64_t k = 1; k <= 3; k++) {
      ASSERT_EQ(Read(db.get(), Key(k)), k == victim_id ? "NOT_FOUND" : "in blob " + std::to_string(k));
    }
    // Blob 3 continues as the active blob unless it is the one moved away;
    // then a new blob starts, and ids are not reused.
    ASSERT_OK(test::Put(db.get(), Key(4), 1, "four"));
    ASSERT_EQ(db->Stats().active_blob_id, valid_crc ? 4u : 3u);
    ASSERT_OK(db.Close());
    ASSERT_OK(db.Open());
    ASSERT_EQ(db.report().files_removed, 0u);
    ASSERT_EQ(db.report().blobs_quarantined, 0u);
    ASSERT_TRUE(test::FileExists(moved));
  }
}

TEST(Recovery, UnsupportedBlobVersionRefusesOpen) {
  const std::string dir = PartitionDir();
  ASSERT_OK(FileSystem::Default()->CreateDir(dir));
  WriteHeaderOnlyBlob(test::BlobPath(dir, 1), 1, 16, 3);
  TestEngine db(dir);
  ASSERT_STATUS(kNotSupported, db.Open());
  ASSERT_EQ(test::ListDir(dir), (std::vector<std::string>{"oyster.1.blob"}));
  ASSERT_EQ(test::FileSize(test::BlobPath(dir, 1)), kBlobHeaderSize);
}

TEST(Recovery, KeySizeMismatchRefusesOpen) {
  TestEngine db(PartitionDir());
  ASSERT_OK(db.Open());
  ASSERT_OK(test::Put(db.get(), Key(1), 1, "x"));
  db.Crash();
  const std::string before = test::ReadFileOrThrow(test::BlobPath(db.dir(), 1));
  db.options.key_size = 8;
  ASSERT_STATUS(kInvalidArgument, db.Open());
  ASSERT_TRUE(test::ReadFileOrThrow(test::BlobPath(db.dir(), 1)) == before);
  db.options.key_size = 16;
  ASSERT_OK(db.Open());
  ASSERT_EQ(Read(db.get(), Key(1)), "x");
}

TEST(Recovery, StrayFilesAreRemoved) {
  const std::string dir = PartitionDir();
  ASSERT_OK(FileSystem::Default()->CreateDir(dir));
  test::WriteFileOrThrow(test::BlobPath(dir, 5), std::string(10, 'x'));   // shorter than a header
  test::WriteFileOrThrow(test::IndexPath(dir, 5), "index of the short blob");
  test::WriteFileOrThrow(dir + "/oyster.7.index.tmp", "interrupted build");
  test::WriteFileOrThrow(test::IndexPath(dir, 9), "orphan");
  test::WriteFileOrThrow(dir + "/README", "not ours");
  test::WriteFileOrThrow(dir + "/oyster.012.blob", "not ours: leading zero");
  ASSERT_OK(FileSystem::Default()->CreateDir(dir + "/subdir"));
  TestEngine db(dir);
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().files_removed, 4u);  // the short blob, its index, the temp and the orphan index
  ASSERT_EQ(db.report().blobs, 0u);
  ASSERT_EQ(test::ListDir(dir), (std::vector<std::string>{"README", "oyster.012.blob", "subdir"}));
  // The largest id seen (9) is not reused.
  ASSERT_OK(test::Put(db.get(), Key(1), 1, "x"));
  ASSERT_EQ(db->Stats().active_blob_id, 10u);
}

TEST(Recovery, HeaderOnlyBlob) {
  const std::string dir = PartitionDir();
  ASSERT_OK(FileSystem::Default()->CreateDir(dir));
  // The last blob, created just before a crash: it continues as the active blob.
  WriteHeaderOnlyBlob(test::BlobPath(dir, 1), 1);
  TestEngine db(dir);
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().blobs, 1u);
  ASSERT_EQ(db->Stats().active_blob_id, 1u);
  ASSERT_EQ(db->Stats().records, 0u);
  ASSERT_OK(test::Put(db.get(), Key(1), 1, "x"));
  ASSERT_EQ(db->Stats().blobs, 1u);
  ASSERT_OK(db.Reopen());
  ASSERT_EQ(Read(db.get(), Key(1)), "x");
  ASSERT_OK(db.Close());

  // An empty active blob is removed, not indexed, when it is sealed.
  const std::string dir2 = test::TmpDir() + "/second";
  ASSERT_OK(FileSystem::Default()->CreateDir(dir2));
  WriteHeaderOnlyBlob(test::BlobPath(dir2, 3), 3);
  TestEngine db2(dir2);
  ASSERT_OK(db2.Open());
  ASSERT_OK(db2.Close());
  ASSERT_EQ(test::ListDir(dir2).size(), 0u);

  // A record-less blob that is not the last one holds nothing: it is removed.
  const std::string dir3 = test::TmpDir() + "/third";
  ASSERT_OK(FileSystem::Default()->CreateDir(dir3));
  WriteHeaderOnlyBlob(test::BlobPath(dir3, 1), 1);
  WriteHeaderOnlyBlob(test::BlobPath(dir3, 2), 2);
  TestEngine db3(dir3);
  ASSERT_OK(db3.Open());
  ASSERT_EQ(db3.report().indexes_rebuilt, 0u);
  ASSERT_EQ(db3.report().files_removed, 1u);
  ASSERT_FALSE(test::FileExists(test::BlobPath(dir3, 1)));
  ASSERT_EQ(db3->Stats().active_blob_id, 2u);
  ASSERT_EQ(Read(db3.get(), Key(1)), "NOT_FOUND");

  // A record-less format-1 blob does not become the active blob (nothing is
  // appended to format 1): it is removed, and the next write starts blob 2.
  const std::string dir4 = test::TmpDir() + "/fourth";
  ASSERT_OK(FileSystem::Default()->CreateDir(dir4));
  WriteHeaderOnlyBlob(test::BlobPath(dir4, 1), 1, 16, kBlobFormatV1);
  TestEngine db4(dir4);
  ASSERT_OK(db4.Open());
  ASSERT_EQ(db4.report().files_removed, 1u);
  ASSERT_FALSE(db4->Stats().has_active_blob);
  ASSERT_OK(test::Put(db4.get(), Key(1), 1, "x"));
  ASSERT_EQ(db4->Stats().active_blob_id, 2u);
}

// bob's pearl files share the directory layout but not the format: the open
// is refused, and nothing in the directory is touched.
TEST(Recovery, PearlBlobRefusesOpen) {
  const std::string dir = PartitionDir();
  ASSERT_OK(FileSystem::Default()->CreateDir(dir));
  std::string pearl(20, '\0');
  EncodeFixed64(&pearl[0], 0xDEAFABCDull);  // pearl's blob magic, version 1 follows
  EncodeFixed32(&pearl[8], 1);
  test::WriteFileOrThrow(test::BlobPath(dir, 0), pearl + "records");
  test::WriteFileOrThrow(dir + "/oyster.3.index.tmp", "left alone as well");
  TestEngine db(dir);
  Status s = db.Open();
  ASSERT_STATUS(kNotSupported, s);
  ASSERT_TRUE(s.message().find("pearl") != std::string::npos) << s.ToString();
  ASSERT_EQ(test::ListDir(dir), (std::vector<std::string>{"oyster.0.blob", "oyster.3.index.tmp"}));
}

// Ids of quarantined blobs are not reused, and a quarantined file never
// replaces an earlier one of the same name.
TEST(Recovery, QuarantineKeepsEveryFile) {
  const std::string dir = PartitionDir();
  ASSERT_OK(FileSystem::Default()->CreateDir(dir));
  ASSERT_OK(FileSystem::Default()->CreateDir(dir + "/corrupted"));
  test::WriteFileOrThrow(dir + "/corrupted/oyster.2.blob", "quarantined earlier");
  test::WriteFileOrThrow(dir + "/corrupted/oyster.7.blob.1", "quarantined earlier still");
  test::WriteFileOrThrow(test::BlobPath(dir, 2), std::string(64, 'g'));  // garbage header
  TestEngine db(dir);
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().blobs_quarantined, 1u);
  ASSERT_EQ(test::ListDir(dir + "/corrupted"),
            (std::vector<std::string>{"oyster.2.blob", "oyster.2.blob.1", "oyster.7.blob.1"}));
  ASSERT_EQ(test::ReadFileOrThrow(dir + "/corrupted/oyster.2.blob"), "quarantined earlier");
  ASSERT_OK(test::Put(db.get(), Key(1), 1, "x"));
  ASSERT_EQ(db->Stats().active_blob_id, 8u);
}

}  // namespace oyster
