#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/active_index.h"
#include "engine/format.h"
#include "engine/index_builder.h"
#include "engine/index_format.h"
#include "engine/index_reader.h"
#include "test/fault_file_system.h"
#include "test/test_util.h"
#include "test/testharness.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/hash.h"

namespace oyster {
namespace {

uint64_t Hash(const std::string& k) { return KeyHash64(k.data(), k.size()); }

// The entry that key number i gets in these tests.
IndexEntry EntryFor(uint64_t i) {
  IndexEntry e;
  e.version = Version::Of(1000 + i % 777, i * 7 % 1000, static_cast<uint32_t>(i % 4096));
  e.offset = 32 + i * 64;
  e.value_size = static_cast<uint32_t>(i % 5 == 0 ? 0 : i);
  e.flags = i % 5 == 0 ? kFlagTombstone : 0;
  return e;
}

// An active index of keys 0, 2, 4, ... (odd keys stay absent), inserted in a
// scrambled order.
std::unique_ptr<ActiveIndex> MakeIndex(size_t key_size, uint64_t n) {
  auto index = std::make_unique<ActiveIndex>(key_size);
  for (uint64_t j = 0; j < n; j++) {
    const uint64_t i = 2 * ((j * 7919) % n);
    const std::string k = test::Key(i, key_size);
    index->Insert(k.data(), Hash(k), EntryFor(i));
  }
  return index;
}

IndexBuildParams Params(const std::string& dir, uint64_t n) {
  IndexBuildParams p;
  p.dir = dir;
  p.prefix = "oyster";
  p.blob_id = 7;
  p.blob_size = 32 + 2 * n * 64;
  p.records_total = n + 3;
  p.bloom_bits_per_key = 10;
  return p;
}

void AssertEntry(const IndexEntry& got, const IndexEntry& want, uint64_t i) {
  ASSERT_EQ(got.version.timestamp, want.version.timestamp) << "key " << i;
  ASSERT_EQ(got.version.stamp, want.version.stamp) << "key " << i;
  ASSERT_EQ(got.offset, want.offset) << "key " << i;
  ASSERT_EQ(got.value_size, want.value_size) << "key " << i;
  ASSERT_EQ(got.flags, want.flags) << "key " << i;
}

// Every present key is found with its entry, absent ones are not.
void CheckReader(const IndexReader& r, size_t key_size, uint64_t n) {
  for (uint64_t j = 0; j < n; j++) {
    const std::string k = test::Key(2 * j, key_size);
    IndexEntry e;
    bool found = false;
    ASSERT_OK(r.Find(k.data(), Hash(k), &e, &found));
    ASSERT_TRUE(found) << "key " << 2 * j;
    AssertEntry(e, EntryFor(2 * j), 2 * j);
  }
  std::vector<std::string> absent;
  for (uint64_t j = 0; j < n; j++) absent.push_back(test::Key(2 * j + 1, key_size));
  if (key_size > 8) {
    // Keys are padded with 'k': these sort before the first fence and after the last.
    absent.push_back(std::string(key_size, '\0'));
    absent.push_back(std::string(key_size, '\xff'));
  }
  for (const std::string& k : absent) {
    IndexEntry e;
    bool found = true;
    ASSERT_OK(r.Find(k.data(), Hash(k), &e, &found));
    ASSERT_FALSE(found) << "absent key " << test::internal::PrintString(k);
  }
  // ForEach visits every entry once, in key order.
  uint64_t seen = 0;
  uint64_t out_of_order = 0;
  uint64_t wrong_entries = 0;
  std::string last;
  ASSERT_OK(r.ForEach([&](const char* key, const IndexEntry& e) {
    std::string k(key, key_size);
    if (seen > 0 && !(last < k)) out_of_order++;
    if (k != test::Key(2 * seen, key_size) || e.offset != EntryFor(2 * seen).offset) wrong_entries++;
    last = k;
    seen++;
  }));
  ASSERT_EQ(seen, n);
  ASSERT_EQ(out_of_order, 0u);
  ASSERT_EQ(wrong_entries, 0u);
}

std::unique_ptr<IndexReader> OpenFromString(const std::string& bytes, size_t key_size, uint64_t blob_id,
                                            uint64_t blob_size, Status* s) {
  std::unique_ptr<IndexReader> r;
  *s = IndexReader::Open(std::make_unique<test::StringFile>(bytes), key_size, blob_id, blob_size, &r);
  return r;
}

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size();) {
    if (hex[i] == ' ') {
      i++;
      continue;
    }
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    i += 2;
  }
  return out;
}

}  // namespace

TEST(IndexFile, BuildAndReopen) {
  struct Case {
    size_t key_size;
    uint64_t n;
    uint32_t bloom_bits;
  };
  const Case cases[] = {{8, 5000, 10}, {16, 5000, 10}, {16, 3000, 0}, {100, 1000, 10}, {1024, 100, 10}, {16, 1, 10}};
  for (const Case& c : cases) {
    const std::string dir = test::TmpDir() + "/k" + std::to_string(c.key_size) + "b" + std::to_string(c.bloom_bits);
    ASSERT_OK(FileSystem::Default()->CreateDir(dir));
    auto index = MakeIndex(c.key_size, c.n);
    IndexBuildParams p = Params(dir, c.n);
    p.bloom_bits_per_key = c.bloom_bits;
    std::unique_ptr<IndexReader> built;
    ASSERT_OK(BuildIndexFile(FileSystem::Default(), p, *index, &built));
    CheckReader(*built, c.key_size, c.n);

    const std::string path = JoinPath(dir, IndexFileName("oyster", 7));
    ASSERT_FALSE(test::FileExists(path + ".tmp"));
    std::unique_ptr<File> file;
    ASSERT_OK(FileSystem::Default()->OpenFile(path, false, &file));
    std::unique_ptr<IndexReader> reader;
    ASSERT_OK(IndexReader::Open(std::move(file), c.key_size, 7, p.blob_size, &reader));
    CheckReader(*reader, c.key_size, c.n);

    const IndexHeader& h = reader->header();
    ASSERT_EQ(h.entry_count, c.n);
    ASSERT_EQ(h.records_total, c.n + 3);
    ASSERT_EQ(h.key_size, c.key_size);
    ASSERT_EQ(h.blob_id, 7u);
    ASSERT_EQ(h.blob_size, p.blob_size);
    ASSERT_EQ(h.file_size(), test::FileSize(path));
    ASSERT_EQ(h.block_size, kIndexBlockSize);
    ASSERT_EQ(h.entries_per_block, (kIndexBlockSize - 4) / (c.key_size + 32));
    ASSERT_EQ(h.bloom_blocks, BloomBlocks(c.n, c.bloom_bits));
    ASSERT_EQ(reader->FilterMemoryUsage(), h.bloom_blocks * 64);
    uint64_t min_ts = ~0ull, max_stamp = 0;
    Version max_version;
    for (uint64_t j = 0; j < c.n; j++) {
      const Version v = EntryFor(2 * j).version;
      min_ts = std::min(min_ts, v.timestamp);
      if (CompareVersions(v, max_version) > 0) max_version = v;
      max_stamp = std::max(max_stamp, v.stamp);
    }
    ASSERT_EQ(h.min_timestamp, min_ts);
    ASSERT_EQ(h.max_timestamp, max_version.timestamp);
    ASSERT_EQ(h.max_stamp_of_newest, max_version.stamp);
    ASSERT_EQ(h.max_stamp, max_stamp);
  }
}

// max_stamp covers the records the caller saw, not only the entries kept
// (a superseded record may carry the largest tick).
TEST(IndexFile, MaxStampCoversSupersededRecords) {
  auto index = MakeIndex(16, 10);
  IndexBuildParams p = Params(test::TmpDir(), 10);
  const uint64_t big = Version::MakeStamp(kMaxTick, 9);
  p.max_stamp = big;
  std::unique_ptr<IndexReader> built;
  ASSERT_OK(BuildIndexFile(FileSystem::Default(), p, *index, &built));
  ASSERT_EQ(built->header().max_stamp, big);
  ASSERT_TRUE(built->header().max_stamp_of_newest < big);
}

TEST(IndexFile, EmptyIndex) {
  ActiveIndex index(16);
  IndexBuildParams p = Params(test::TmpDir(), 0);
  p.blob_size = 32;
  p.records_total = 0;
  std::unique_ptr<IndexReader> built;
  ASSERT_OK(BuildIndexFile(FileSystem::Default(), p, index, &built));
  const std::string path = JoinPath(test::TmpDir(), IndexFileName("oyster", 7));
  ASSERT_EQ(test::FileSize(path), 4096u);  // docs/FORMAT.md, section 4.1
  std::unique_ptr<File> file;
  ASSERT_OK(FileSystem::Default()->OpenFile(path, false, &file));
  std::unique_ptr<IndexReader> reader;
  ASSERT_OK(IndexReader::Open(std::move(file), 16, 7, 32, &reader));
  for (const IndexReader* r : {built.get(), reader.get()}) {
    ASSERT_EQ(r->header().entry_count, 0u);
    ASSERT_EQ(r->header().block_count, 0u);
    const std::string k = test::Key(1);
    IndexEntry e;
    bool found = true;
    ASSERT_OK(r->Find(k.data(), Hash(k), &e, &found));
    ASSERT_FALSE(found);
    int visits = 0;
    ASSERT_OK(r->ForEach([&](const char*, const IndexEntry&) { visits++; }));
    ASSERT_EQ(visits, 0);
  }
}

TEST(IndexFile, MismatchedBlobIsCorruption) {
  auto index = MakeIndex(16, 100);
  IndexBuildParams p = Params(test::TmpDir(), 100);
  std::unique_ptr<IndexReader> built;
  ASSERT_OK(BuildIndexFile(FileSystem::Default(), p, *index, &built));
  const std::string bytes = test::ReadFileOrThrow(JoinPath(test::TmpDir(), IndexFileName("oyster", 7)));
  Status s;
  ASSERT_TRUE(OpenFromString(bytes, 16, 7, p.blob_size, &s) != nullptr);
  ASSERT_OK(s);
  OpenFromString(bytes, 16, 7, p.blob_size + 1, &s);
  ASSERT_STATUS(kCorruption, s) << "blob grew";
  OpenFromString(bytes, 16, 7, p.blob_size - 1, &s);
  ASSERT_STATUS(kCorruption, s) << "blob shrank";
  OpenFromString(bytes, 16, 8, p.blob_size, &s);
  ASSERT_STATUS(kCorruption, s) << "another blob's index";
  OpenFromString(bytes, 8, 7, p.blob_size, &s);
  ASSERT_STATUS(kCorruption, s) << "other key size";
  // A file cut short or grown.
  OpenFromString(bytes.substr(0, bytes.size() - 1), 16, 7, p.blob_size, &s);
  ASSERT_STATUS(kCorruption, s);
  OpenFromString(bytes + std::string(1, '\0'), 16, 7, p.blob_size, &s);
  ASSERT_STATUS(kCorruption, s);
  OpenFromString(bytes.substr(0, 100), 16, 7, p.blob_size, &s);
  ASSERT_STATUS(kCorruption, s) << "shorter than a header";
  OpenFromString("", 16, 7, p.blob_size, &s);
  ASSERT_STATUS(kCorruption, s) << "empty file";
}

// Header, fences and filter are checked when the index is opened.
TEST(IndexFile, DamagedHeaderFencesOrFilterFailOpen) {
  const uint64_t n = 1000;
  auto index = MakeIndex(16, n);
  IndexBuildParams p = Params(test::TmpDir(), n);
  std::unique_ptr<IndexReader> built;
  ASSERT_OK(BuildIndexFile(FileSystem::Default(), p, *index, &built));
  const IndexHeader h = built->header();
  const std::string bytes = test::ReadFileOrThrow(JoinPath(test::TmpDir(), IndexFileName("oyster", 7)));
  const uint64_t checked_end = h.bloom_offset + h.bloom_blocks * kBloomBlockBytes;
  ASSERT_GT(h.bloom_blocks, 0u);
  ASSERT_GT(h.fences_size(), 0u);
  for (uint64_t i = 0; i < checked_end; i++) {
    for (uint8_t mask : {0x01, 0x80}) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      Status s;
      OpenFromString(bad, 16, 7, p.blob_size, &s);
      ASSERT_STATUS(kCorruption, s) << "byte " << i << " mask " << static_cast<int>(mask);
    }
  }
  // The padding up to the first block is not read, so damage there is harmless.
  for (uint64_t i = checked_end; i < h.blocks_offset; i += 97) {
    std::string bad = bytes;
    bad[i] ^= 0x01;
    Status s;
    auto r = OpenFromString(bad, 16, 7, p.blob_size, &s);
    ASSERT_OK(s) << "padding byte " << i;
    CheckReader(*r, 16, n);
  }
}

// Blocks are checked when read: a damaged block fails the lookups of its own
// keys and no others.
TEST(IndexFile, DamagedBlockFailsOnlyItsKeys) {
  const uint64_t n = 1000;
  auto index = MakeIndex(16, n);
  IndexBuildParams p = Params(test::TmpDir(), n);
  std::unique_ptr<IndexReader> built;
  ASSERT_OK(BuildIndexFile(FileSystem::Default(), p, *index, &built));
  const IndexHeader h = built->header();
  ASSERT_GE(h.block_count, 5u);
  const std::string bytes = test::ReadFileOrThrow(JoinPath(test::TmpDir(), IndexFileName("oyster", 7)));
  for (uint64_t block : {uint64_t{0}, uint64_t{3}, h.block_count - 1}) {
    // First entry byte, a timestamp byte, the zero padding of the block and its CRC.
    const uint64_t base = h.blocks_offset + block * h.block_size;
    for (uint64_t at : {base, base + 16 + 3, base + h.block_size - 10, base + h.block_size - 1}) {
      std::string bad = bytes;
      bad[at] ^= 0x10;
      Status s;
      auto r = OpenFromString(bad, 16, 7, p.blob_size, &s);
      ASSERT_OK(s) << "block damage is found on read, not at open";
      for (uint64_t j = 0; j < n; j++) {
        // Keys are 0, 2, 4, ... in memcmp order, so key 2j is entry j.
        const std::string k = test::Key(2 * j);
        IndexEntry e;
        bool found = false;
        s = r->Find(k.data(), Hash(k), &e, &found);
        if (j / h.entries_per_block == block) {
          ASSERT_STATUS(kCorruption, s) << "key " << 2 * j << " in damaged block " << block;
        } else {
          ASSERT_OK(s) << "key " << 2 * j << " outside damaged block " << block;
          ASSERT_TRUE(found);
          AssertEntry(e, EntryFor(2 * j), 2 * j);
        }
      }
      ASSERT_STATUS(kCorruption, r->ForEach([](const char*, const IndexEntry&) {}));
    }
  }
}

TEST(IndexFile, HeaderRoundTripAndConsistencyChecks) {
  IndexHeader h;
  h.key_size = 16;
  h.blob_id = 3;
  h.blob_size = 123456;
  h.records_total = 500;
  h.entry_count = 400;
  h.min_timestamp = 10;
  h.max_timestamp = 20;
  h.max_stamp_of_newest = Version::MakeStamp(1700000000000001, 4);
  h.max_stamp = Version::MakeStamp(1700000000000009, 1);
  h.entry_size = 48;
  h.block_size = 4096;
  h.entries_per_block = 85;
  h.block_count = 5;
  h.bloom_probes = 6;
  h.bloom_blocks = 8;
  h.fences_offset = 144;
  h.bloom_offset = 144 + 6 * 16;
  h.blocks_offset = 4096;
  h.sections_crc = 0xDEADBEEF;
  char buf[kIndexHeaderSize];
  EncodeIndexHeader(h, buf);
  ASSERT_EQ(std::string(buf, 8), "OYSTINDX");
  ASSERT_EQ(IndexHeaderVersion(buf), 2u);
  IndexHeader d;
  ASSERT_OK(DecodeIndexHeader(buf, &d));
  ASSERT_EQ(d.blob_size, 123456u);
  ASSERT_EQ(d.entry_count, 400u);
  ASSERT_EQ(d.max_timestamp, 20u);
  ASSERT_EQ(d.max_stamp_of_newest, h.max_stamp_of_newest);
  ASSERT_EQ(d.max_stamp, h.max_stamp);
  ASSERT_EQ(d.sections_crc, 0xDEADBEEFu);
  ASSERT_EQ(d.file_size(), 4096u + 5 * 4096u);

  // Each field made inconsistent, with a valid header CRC.
  struct Change {
    const char* what;
    void (*apply)(IndexHeader*);
  };
  const Change changes[] = {
      {"version", [](IndexHeader* x) { x->version = 3; }},
      {"entry_size", [](IndexHeader* x) { x->entry_size = 40; }},
      {"block_size too small", [](IndexHeader* x) { x->block_size = 256; x->entries_per_block = 5; }},
      {"block_size too large", [](IndexHeader* x) { x->block_size = 2 << 20; x->entries_per_block = (2 << 20) / 48; }},
      {"entries_per_block", [](IndexHeader* x) { x->entries_per_block = 84; }},
      {"block_count", [](IndexHeader* x) { x->block_count = 6; }},
      {"entry_count > records_total", [](IndexHeader* x) { x->records_total = 399; }},
      {"bloom_probes", [](IndexHeader* x) { x->bloom_probes = 31; }},
      {"fences_offset", [](IndexHeader* x) { x->fences_offset = 0; }},
      {"bloom_offset", [](IndexHeader* x) { x->bloom_offset += 1; }},
      {"blocks_offset overlaps", [](IndexHeader* x) { x->bloom_blocks = 100; }},
      {"blocks_offset unaligned", [](IndexHeader* x) { x->blocks_offset = 4096 + 512; }},
      {"bloom_blocks", [](IndexHeader* x) { x->bloom_blocks = (1ull << 32) + 1; x->blocks_offset = 1ull << 50; }},
  };
  for (const Change& c : changes) {
    IndexHeader bad = h;
    c.apply(&bad);
    EncodeIndexHeader(bad, buf);
    ASSERT_STATUS(kCorruption, DecodeIndexHeader(buf, &d)) << c.what;
  }
}

// The header of an index written by the previous engine (version 1, 128
// bytes): not read any more, and named for what it is rather than damage.
TEST(IndexFile, Version1HeaderIsNoLongerRead) {
  char buf[kIndexHeaderSize] = {};
  EncodeFixed64(buf, kIndexMagic);
  EncodeFixed32(buf + 8, 1);
  EncodeFixed32(buf + 12, 16);
  EncodeFixed32(buf + 124, crc32c::Value(buf, 124));
  ASSERT_EQ(IndexHeaderVersion(buf), 1u);
  IndexHeader d;
  Status s = DecodeIndexHeader(buf, &d);
  ASSERT_STATUS(kCorruption, s);
  ASSERT_TRUE(s.message().find("index format version 1") != std::string::npos) << s.ToString();
  char other[kIndexHeaderSize] = {};
  ASSERT_EQ(IndexHeaderVersion(other), 0u) << "no magic, no version";
}

// docs/FORMAT.md, section 4.9: the index of the one-record blob of section
// 3.3 (its first record only: an 89-byte blob).
TEST(IndexFile, WorkedExample) {
  ActiveIndex index(8);
  IndexEntry e;
  e.version = Version::Of(1700000000, 1700000000123456, 3);
  e.offset = 32;
  e.value_size = 5;
  index.Insert("key-0001", KeyHash64("key-0001", 8), e);
  IndexBuildParams p;
  p.dir = test::TmpDir();
  p.prefix = "oyster";
  p.blob_id = 1;
  p.blob_size = 89;
  p.records_total = 1;
  p.max_stamp = e.version.stamp;
  p.bloom_bits_per_key = 10;
  std::unique_ptr<IndexReader> reader;
  ASSERT_OK(BuildIndexFile(FileSystem::Default(), p, index, &reader));
  const std::string bytes = test::ReadFileOrThrow(JoinPath(test::TmpDir(), "oyster.1.index"));
  ASSERT_EQ(bytes.size(), 8192u);
  const std::string head = FromHex(
      "4f 59 53 54 49 4e 44 58 02 00 00 00 08 00 00 00"
      "01 00 00 00 00 00 00 00 59 00 00 00 00 00 00 00"
      "01 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00"
      "00 f1 53 65 00 00 00 00 00 f1 53 65 00 00 00 00"
      "28 00 00 00 00 10 00 00 66 00 00 00 06 00 00 00"
      "01 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00"
      "90 00 00 00 00 00 00 00 a0 00 00 00 00 00 00 00"
      "00 10 00 00 00 00 00 00 03 00 24 02 82 41 a2 60"
      "03 00 24 02 82 41 a2 60 c5 23 4d 57 b8 0f 1b c8"
      "6b 65 79 2d 30 30 30 31 6b 65 79 2d 30 30 30 31"
      "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
      "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
      "00 00 00 00 00 02 00 10 00 80 00 00 04 00 20 00"
      "00 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00");
  ASSERT_TRUE(bytes.substr(0, head.size()) == head) << test::internal::PrintString(bytes.substr(0, 0xe0));
  ASSERT_TRUE(bytes.substr(0xe0, 0x1000 - 0xe0) == std::string(0x1000 - 0xe0, '\0'));
  const std::string entry = FromHex(
      "6b 65 79 2d 30 30 30 31 00 f1 53 65 00 00 00 00"
      "03 00 24 02 82 41 a2 60 20 00 00 00 00 00 00 00"
      "05 00 00 00 00 00 00 00");
  ASSERT_TRUE(bytes.substr(0x1000, 0x28) == entry);
  ASSERT_TRUE(bytes.substr(0x1028, 0x1ffc - 0x1028) == std::string(0x1ffc - 0x1028, '\0'));
  ASSERT_TRUE(bytes.substr(0x1ffc, 4) == FromHex("a0 c3 0f ad"));
}

TEST(IndexFile, LeftoverTempFileIsReplaced) {
  const std::string tmp = JoinPath(test::TmpDir(), TempIndexFileName("oyster", 7));
  test::WriteFileOrThrow(tmp, std::string(10000, 'x'));
  auto index = MakeIndex(16, 300);
  IndexBuildParams p = Params(test::TmpDir(), 300);
  std::unique_ptr<IndexReader> built;
  ASSERT_OK(BuildIndexFile(FileSystem::Default(), p, *index, &built));
  ASSERT_FALSE(test::FileExists(tmp));
  CheckReader(*built, 16, 300);
}

// A failed build leaves neither the temporary file nor a final index.
TEST(IndexFile, FailedBuildLeavesNoFiles) {
  test::FaultInjectingFileSystem fs;
  // 30000 entries take 353 blocks: the blocks are written in two 1 MiB chunks.
  const uint64_t n = 30000;
  auto index = MakeIndex(16, n);
  IndexBuildParams p = Params(test::TmpDir(), n);
  std::unique_ptr<IndexReader> built;
  for (int fault = 0; fault < 6; fault++) {
    fs.ClearFaults();
    if (fault == 0) fs.FailWritesFrom(1);       // header, fences and filter
    if (fault == 1) fs.FailWritesFrom(2, 100);  // first chunk of blocks, torn
    if (fault == 2) fs.FailWritesFrom(3, 5000);  // second chunk, torn
    if (fault == 3) fs.FailSyncs(true);
    if (fault == 4) fs.FailRenames(true);
    if (fault == 5) fs.FailCreates(true);
    Status s = BuildIndexFile(&fs, p, *index, &built);
    ASSERT_STATUS(kIOError, s) << "fault " << fault;
    ASSERT_EQ(test::ListDir(test::TmpDir()).size(), 0u) << "fault " << fault;
  }
  fs.ClearFaults();
  fs.ResetCounters();
  ASSERT_OK(BuildIndexFile(&fs, p, *index, &built));
  ASSERT_EQ(fs.writes(), 3u);
  ASSERT_EQ(fs.syncs(), 1u);
  ASSERT_EQ(fs.dir_syncs(), 1u);
  ASSERT_EQ(test::ListDir(test::TmpDir()).size(), 1u);
  CheckReader(*built, 16, n);
}

}  // namespace oyster
