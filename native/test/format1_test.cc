// Blobs of format 1, written by the previous engine: the committed fixture
// (test/fixtures/format-1) and blobs built here record by record. They are
// read as written, never appended to, lose ties to stamped records, and
// the tools check and rewrite them.

#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_set.h"
#include "engine/format.h"
#include "test/test_util.h"
#include "test/testharness.h"
#include "tools/partition_check.h"
#include "tools/partition_recovery.h"
#include "util/coding.h"

namespace oyster {
namespace {

using test::Read;
using test::TestEngine;

// Keys of the fixture: the number in the first six bytes, little-endian
// (keyOf in test/helpers/records.ts).
std::string FixtureKey(uint64_t n) {
  std::string k(16, '\0');
  for (int i = 0; i < 6; i++) k[i] = static_cast<char>(n >> (8 * i));
  return k;
}

struct Expected {
  uint64_t key;
  const char* read;  // as test::Read reports it
  uint64_t timestamp;
};

// What every key of the fixture reads as (test/fixtures/format-1/README.md).
const Expected kFixture[] = {
    {1, "one, same second, later blob", 1700000001},
    {2, "two, overwritten", 1700000012},
    {3, "DELETED", 1700000013},
    {4, "four, overwritten in blob 2", 1700000014},
    {5, "DELETED", 1700000015},
    {6, "six", 1700000006},
    {7, "", 1700000007},
    {8, "NOT_FOUND", 0},
};

// A copy of the fixture's partition in the test's directory.
std::string FixtureCopy(const std::string& name = "partition") {
  const std::string dir = test::TmpDir() + "/" + name;
  test::CopyDir(test::SourcePath("test/fixtures/format-1/partition"), dir);
  return dir;
}

void ExpectFixtureContent(Engine* engine) {
  for (const Expected& e : kFixture) {
    ASSERT_EQ(Read(engine, FixtureKey(e.key)), e.read) << "key " << e.key;
    LookupResult l;
    ASSERT_OK(engine->Lookup(FixtureKey(e.key).data(), &l));
    ASSERT_EQ(l.version.timestamp, e.timestamp) << "key " << e.key;
    ASSERT_EQ(l.version.stamp, 0u) << "key " << e.key << ": format-1 records carry no stamp";
  }
}

uint32_t BlobFormatOf(const std::string& path) {
  return DecodeFixed32(test::ReadFileOrThrow(path).data() + 8);
}

bool HasEvent(const RecoveryReport& r, const std::string& part) {
  for (const std::string& e : r.events) {
    if (e.find(part) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST(Format1, FixtureIsWhatTheReadmeSays) {
  const std::string dir = test::SourcePath("test/fixtures/format-1/partition");
  ASSERT_EQ(test::ListDir(dir), (std::vector<std::string>{"oyster.1.blob", "oyster.1.index", "oyster.2.blob"}));
  ASSERT_EQ(BlobFormatOf(test::BlobPath(dir, 1)), 1u);
  ASSERT_EQ(BlobFormatOf(test::BlobPath(dir, 2)), 1u);
  ASSERT_EQ(DecodeFixed32(test::ReadFileOrThrow(test::IndexPath(dir, 1)).data() + 8), 1u);
}

// Every key reads as the previous engine wrote it; the version-1 index is
// rebuilt, the format-1 blob that was active is sealed and indexed, and new
// writes start a format-2 blob.
TEST(Format1, FixtureReadsAsWritten) {
  TestEngine db(FixtureCopy());
  ASSERT_OK(db.Open());
  const RecoveryReport& r = db.report();
  ASSERT_EQ(r.blobs, 2u);
  ASSERT_EQ(r.indexes_loaded, 0u);
  ASSERT_EQ(r.blobs_scanned, 2u);
  ASSERT_EQ(r.indexes_rebuilt, 2u);
  ASSERT_EQ(r.bytes_truncated + r.corrupt_records + r.skipped_bytes + r.files_removed + r.blobs_quarantined, 0u);
  ASSERT_TRUE(HasEvent(r, "index of oyster.1.blob is unusable (index format version 1 is no longer read)"));
  ASSERT_TRUE(HasEvent(r, "oyster.2.blob is a format-1 blob: sealed and indexed; new records go to a new blob"));
  ASSERT_FALSE(db->Stats().has_active_blob);
  ASSERT_TRUE(test::FileExists(test::IndexPath(db.dir(), 2)));
  ASSERT_EQ(db->Stats().max_version.timestamp, 1700000015u);
  ASSERT_EQ(db->Stats().max_tick, 0u);
  ExpectFixtureContent(db.get());

  ASSERT_OK(test::Put(db.get(), FixtureKey(9), Version::Of(1700000020, 1700000020000000, 1), "nine"));
  ASSERT_EQ(db->Stats().active_blob_id, 3u);
  ASSERT_EQ(BlobFormatOf(test::BlobPath(db.dir(), 3)), kBlobFormatVersion);
  ASSERT_EQ(BlobFormatOf(test::BlobPath(db.dir(), 2)), 1u) << "a format-1 blob is never rewritten";
  ASSERT_OK(db.Reopen());
  ASSERT_EQ(db.report().indexes_loaded, 3u);
  ASSERT_EQ(db.report().blobs_scanned, 0u);
  ExpectFixtureContent(db.get());
  ASSERT_EQ(Read(db.get(), FixtureKey(9)), "nine");
  ASSERT_EQ(db->Stats().max_tick, 1700000020000000u);

  // A crash before the first write after the upgrade leaves nothing to redo.
  db.Crash();
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().indexes_rebuilt, 0u);
}

// A record of a format-2 blob carries a stamp: in the same second it is
// newer than a format-1 record, which has none. Without a stamp it ties.
TEST(Format1, StampedRecordsWinTiesWithFormat1Records) {
  TestEngine db(FixtureCopy());
  ASSERT_OK(db.Open());
  // Key 5's format-1 tombstone is at 1700000015.
  ASSERT_OK(test::Put(db.get(), FixtureKey(5), Version::Of(1700000015, 1, 1), "five, stamped"));
  ASSERT_EQ(Read(db.get(), FixtureKey(5)), "five, stamped");
  // Key 3's tombstone at 1700000013: a value at the very same version is a
  // copy of what was deleted and stays hidden, though written later.
  ASSERT_OK(test::Put(db.get(), FixtureKey(3), 1700000013, "three, unstamped"));
  ASSERT_EQ(Read(db.get(), FixtureKey(3)), "DELETED");
  // A full tie of two values: the later blob.
  ASSERT_OK(test::Put(db.get(), FixtureKey(6), 1700000006, "six, unstamped, later"));
  ASSERT_EQ(Read(db.get(), FixtureKey(6)), "six, unstamped, later");
  // An older second loses whatever its stamp.
  ASSERT_OK(test::Put(db.get(), FixtureKey(2), Version::Of(1700000011, kMaxTick, kMaxNodeId), "two, older"));
  ASSERT_EQ(Read(db.get(), FixtureKey(2)), "two, overwritten");
  ASSERT_OK(db.Reopen());
  ASSERT_EQ(Read(db.get(), FixtureKey(5)), "five, stamped");
  ASSERT_EQ(Read(db.get(), FixtureKey(3)), "DELETED");
  ASSERT_EQ(Read(db.get(), FixtureKey(6)), "six, unstamped, later");
  ASSERT_EQ(Read(db.get(), FixtureKey(2)), "two, overwritten");
}

// Among the partitions of a vdisk, a stamped record in a later partition
// beats a format-1 record of the same second in an earlier one, which a full
// tie would have given to the earlier partition.
TEST(Format1, StampedRecordsWinAcrossEngines) {
  TestEngine old_db(FixtureCopy());
  TestEngine new_db(test::TmpDir() + "/new");
  ASSERT_OK(old_db.Open());
  ASSERT_OK(new_db.Open());
  ASSERT_OK(test::Put(new_db.get(), FixtureKey(6), Version::Of(1700000006, 1, 1), "six, stamped"));
  ASSERT_OK(test::Put(new_db.get(), FixtureKey(7), 1700000007, "seven, unstamped"));
  ASSERT_OK(test::Put(new_db.get(), FixtureKey(3), Version::Of(1700000013, 5, 2), "three, stamped"));
  // Shared, not owned: the TestEngines close their engines.
  auto share = [](TestEngine* t) { return std::shared_ptr<Engine>(std::shared_ptr<Engine>(), t->get()); };
  const EngineSet set({share(&old_db), share(&new_db)});
  auto read = [&](uint64_t n) {
    GetResult g;
    Status s = set.Get(ReadOptions(), FixtureKey(n).data(), &g);
    if (!s.ok()) return "ERROR: " + s.ToString();
    if (g.kind == GetResult::kAbsent) return std::string("NOT_FOUND");
    if (g.kind == GetResult::kDeleted) return std::string("DELETED");
    return std::string(g.record.value(), g.record.value_size);
  };
  ASSERT_EQ(read(6), "six, stamped");
  ASSERT_EQ(read(7), "") << "a full tie goes to the earlier engine";
  ASSERT_EQ(read(3), "three, stamped");
  ASSERT_EQ(read(2), "two, overwritten");
}

// The tools read format-1 blobs: the fixture checks clean (its version-1
// index is outdated, not damaged), and so does the partition after the
// engine has upgraded it.
TEST(Format1, ToolsCheckTheFixture) {
  const std::string dir = FixtureCopy();
  PartitionReport report;
  ASSERT_OK(CheckPartition(FileSystem::Default(), dir, CheckOptions(), nullptr, &report));
  ASSERT_EQ(report.key_size, 16u);
  ASSERT_EQ(report.blobs.size(), 2u);
  const BlobReport& b1 = report.blobs[0];
  const BlobReport& b2 = report.blobs[1];
  ASSERT_TRUE(b1.header == HeaderState::kOk);
  ASSERT_EQ(b1.version, 1u);
  ASSERT_EQ(b1.records, 7u);
  ASSERT_EQ(b1.keys, 5u);
  ASSERT_EQ(b1.tombstones, 1u);
  ASSERT_EQ(b1.corrupt_records + b1.skipped_bytes + b1.tail_bytes, 0u);
  ASSERT_TRUE(b1.index == IndexState::kOutdated) << IndexStateName(b1.index) << ": " << b1.index_problem;
  ASSERT_FALSE(b1.active);
  ASSERT_EQ(b2.version, 1u);
  ASSERT_TRUE(b2.active);
  ASSERT_TRUE(b2.index == IndexState::kAbsent);
  ASSERT_EQ(b2.records, 6u);
  ASSERT_EQ(b2.tombstones, 1u);
  ASSERT_EQ(b2.max_version.timestamp, 1700000015u);

  {
    TestEngine db(dir);
    ASSERT_OK(db.Open());
    ASSERT_OK(db.Close());
  }
  report = PartitionReport();
  ASSERT_OK(CheckPartition(FileSystem::Default(), dir, CheckOptions(), nullptr, &report));
  for (const BlobReport& b : report.blobs) {
    ASSERT_TRUE(b.index == IndexState::kOk) << b.name << ": " << b.index_problem;
    ASSERT_TRUE(b.index_entries_verified) << b.name;
    ASSERT_EQ(b.version, 1u) << b.name;
    ASSERT_EQ(b.index_header.version, 2u) << b.name;
    ASSERT_FALSE(b.active) << b.name;
  }
}

// Recovery into a new directory writes format-2 blobs (records keep their
// versions, with stamp 0) that read the same.
TEST(Format1, RecoverRewritesAsFormat2) {
  const std::string dir = FixtureCopy();
  const std::string out = test::TmpDir() + "/out";
  ASSERT_OK(FileSystem::Default()->CreateDir(out));
  RecoverOptions options;
  options.out_dir = out;
  PartitionRecovery result;
  ASSERT_OK(RecoverPartition(FileSystem::Default(), dir, options, nullptr, &result));
  ASSERT_EQ(result.blobs.size(), 2u);
  for (const BlobRecovery& b : result.blobs) {
    ASSERT_TRUE(b.action == RecoveryAction::kCopied) << b.name << ": " << RecoveryActionName(b.action);
    ASSERT_EQ(b.reason, "format 1, written as format 2");
    ASSERT_EQ(b.rewrite.bytes_dropped, 0u) << b.name;
  }
  ASSERT_EQ(result.blobs[0].rewrite.records, 7u);
  ASSERT_TRUE(result.blobs[0].index_written);
  ASSERT_FALSE(result.blobs[1].index_written) << "the active blob stays active";
  ASSERT_EQ(BlobFormatOf(test::BlobPath(out, 1)), kBlobFormatVersion);
  ASSERT_EQ(BlobFormatOf(test::BlobPath(out, 2)), kBlobFormatVersion);
  ASSERT_EQ(test::FileSize(test::BlobPath(out, 1)), test::FileSize(test::BlobPath(dir, 1)) + 7 * 8);

  TestEngine db(out);
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().indexes_loaded, 1u);
  ASSERT_EQ(db->Stats().active_blob_id, 2u) << "rewritten in format 2, the active blob takes writes again";
  ExpectFixtureContent(db.get());
  PartitionReport report;
  ASSERT_OK(db.Close());
  ASSERT_OK(CheckPartition(FileSystem::Default(), out, CheckOptions(), nullptr, &report));
  for (const BlobReport& b : report.blobs) ASSERT_TRUE(b.index == IndexState::kOk) << b.name;

  // In place, only the outdated index needs work.
  PartitionRecovery in_place;
  ASSERT_OK(RecoverPartition(FileSystem::Default(), dir, RecoverOptions(), nullptr, &in_place));
  ASSERT_TRUE(in_place.blobs[0].action == RecoveryAction::kIndexRebuilt) << in_place.blobs[0].reason;
  ASSERT_TRUE(in_place.blobs[1].action == RecoveryAction::kUnchanged);
  ASSERT_EQ(BlobFormatOf(test::BlobPath(dir, 1)), 1u);
  TestEngine again(dir);
  ASSERT_OK(again.Open());
  ASSERT_EQ(again.report().indexes_loaded, 1u);
  ExpectFixtureContent(again.get());
}

// A format-1 blob with damage, built here record by record: the scan steps
// over damage and cuts a torn tail as in format 2, a damaged value is
// reported with its version, and the tools rewrite what is intact.
TEST(Format1, DamagedFormat1Blob) {
  const std::string dir = test::TmpDir() + "/damaged";
  ASSERT_OK(FileSystem::Default()->CreateDir(dir));
  std::string blob = test::BlobHeaderBytes(kBlobFormatV1, 16, 1);
  std::vector<uint64_t> offsets;
  for (uint64_t i = 0; i < 10; i++) {
    offsets.push_back(blob.size());
    const std::string value = test::ValueFor(test::Key(i), 100 + i, 50);
    blob += test::RecordHeaderBytes(kBlobFormatV1, 0, blob.size(), Version{100 + i, 0}, test::Key(i), value) + value;
  }
  blob[offsets[3] + 20] ^= 0x01;           // record 3's header: stepped over
  blob[offsets[6] + 36 + 16 + 5] ^= 0x01;  // record 6's value: reported when read
  blob += "OYRC torn";                     // a torn tail
  test::WriteFileOrThrow(test::BlobPath(dir, 1), blob);

  PartitionReport report;
  ASSERT_OK(CheckPartition(FileSystem::Default(), dir, CheckOptions(), nullptr, &report));
  ASSERT_EQ(report.blobs[0].records, 9u);
  ASSERT_EQ(report.blobs[0].corrupt_records, 1u);
  ASSERT_EQ(report.blobs[0].skipped_regions, 1u);
  ASSERT_EQ(report.blobs[0].tail_bytes, 9u);

  const std::string out = test::TmpDir() + "/out";
  ASSERT_OK(FileSystem::Default()->CreateDir(out));
  RecoverOptions options;
  options.out_dir = out;
  PartitionRecovery result;
  ASSERT_OK(RecoverPartition(FileSystem::Default(), dir, options, nullptr, &result));
  ASSERT_TRUE(result.blobs[0].action == RecoveryAction::kRewritten);
  ASSERT_EQ(result.blobs[0].rewrite.records, 8u);
  ASSERT_EQ(result.blobs[0].rewrite.bytes_dropped, 2 * (36 + 16 + 50) + 9u);
  TestEngine copy(out);
  ASSERT_OK(copy.Open());
  for (uint64_t i = 0; i < 10; i++) {
    ASSERT_EQ(Read(copy.get(), test::Key(i)), i == 3 || i == 6 ? "NOT_FOUND" : test::ValueFor(test::Key(i), 100 + i, 50));
  }

  TestEngine db(dir);
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().bytes_truncated, 9u);
  ASSERT_EQ(db.report().corrupt_records, 1u);
  ASSERT_FALSE(db->Stats().has_active_blob) << "sealed, not appended to";
  GetResult g;
  ASSERT_STATUS(kCorruption, db->Get(test::Key(6).data(), &g));
  ASSERT_EQ(g.version.timestamp, 106u);
  ASSERT_EQ(Read(db.get(), test::Key(3)), "NOT_FOUND");
  ASSERT_EQ(Read(db.get(), test::Key(9)), test::ValueFor(test::Key(9), 109, 50));
  ASSERT_OK(test::Put(db.get(), test::Key(6), 107, "replaced"));
  ASSERT_EQ(Read(db.get(), test::Key(6)), "replaced");
  ASSERT_EQ(db->Stats().active_blob_id, 2u);
}

// A lost header does not tell the format: the tools read the records in the
// format in which they are valid.
TEST(Format1, LostHeaderFormatIsGuessed) {
  for (uint32_t format : {kBlobFormatV1, kBlobFormatVersion}) {
    const std::string dir = test::TmpDir() + "/f" + std::to_string(format);
    ASSERT_OK(FileSystem::Default()->CreateDir(dir));
    std::string blob = test::BlobHeaderBytes(format, 16, 1);
    for (uint64_t i = 0; i < 5; i++) {
      blob += test::RecordHeaderBytes(format, 0, blob.size(), Version{i + 1, 0}, test::Key(i), "v") + "v";
    }
    blob[12] ^= 0x01;  // the key size: the header's checksum fails
    test::WriteFileOrThrow(test::BlobPath(dir, 1), blob);
    CheckOptions options;
    options.key_size = 16;
    PartitionReport report;
    ASSERT_OK(CheckPartition(FileSystem::Default(), dir, options, nullptr, &report));
    ASSERT_TRUE(report.blobs[0].header == HeaderState::kCorrupt);
    ASSERT_EQ(report.blobs[0].version, format);
    ASSERT_EQ(report.blobs[0].records, 5u) << "format " << format;
    ASSERT_EQ(report.blobs[0].tail_bytes, 0u);
  }
}

}  // namespace oyster
