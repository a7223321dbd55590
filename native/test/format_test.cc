#include "engine/format.h"

#include <cstring>
#include <string>
#include <vector>

#include "test/test_util.h"
#include "test/testharness.h"
#include "util/coding.h"
#include "util/crc32c.h"

namespace oyster {
namespace {

// "4f 59 ..." -> bytes.
std::string FromHex(const std::string& hex) {
  std::string out;
  int nibbles = 0;
  unsigned v = 0;
  for (char c : hex) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      continue;
    }
    v = v * 16 + static_cast<unsigned>(d);
    if (++nibbles == 2) {
      out.push_back(static_cast<char>(v));
      nibbles = 0;
      v = 0;
    }
  }
  return out;
}

// A format-2 record header.
std::string EncodeRecord(uint8_t flags, uint64_t offset, const Version& v, const std::string& key,
                         const std::string& value) {
  std::string h(RecordHeaderSize(kBlobFormatVersion, key.size()), '\0');
  std::string blocks(4 * ValueBlockCount(value.size()), '\0');
  EncodeRecordHeader(flags, offset, v, key.data(), key.size(), value.data(), static_cast<uint32_t>(value.size()),
                     &h[0], &blocks[0]);
  return h;
}

std::string EncodeRecord(uint8_t flags, uint64_t offset, uint64_t ts, const std::string& key,
                         const std::string& value) {
  return EncodeRecord(flags, offset, Version{ts, 0}, key, value);
}

// Recomputes the header CRC of a record of `format` after a deliberate
// change, so that only the semantic checks can reject the header.
void ResealHeader(std::string* h, size_t key_size, uint32_t format = kBlobFormatVersion) {
  const size_t at = RecordHeaderSize(format, key_size) - 4;
  EncodeFixed32(&(*h)[at], crc32c::Value(h->data(), at));
}

}  // namespace

// A value with block checksums: each block's CRC as if computed alone, and
// the record CRC as if computed over the whole value, from one pass.
TEST(Format, BlockCrcsAndRecordCrcFromOnePass) {
  for (uint64_t n : {kValueBlockSize + 1, 2 * kValueBlockSize, 3 * kValueBlockSize + 4095, 16 * kValueBlockSize}) {
    const std::string key = test::Key(n, 8);
    const std::string value = test::ValueFor(key, 1, static_cast<size_t>(n));
    std::string h(RecordHeaderSize(kBlobFormatVersion, key.size()), '\0');
    std::string blocks(4 * ValueBlockCount(n), '\0');
    EncodeRecordHeader(kFlagBlocks, 32, Version{7, 0}, key.data(), key.size(), value.data(),
                       static_cast<uint32_t>(n), &h[0], &blocks[0]);
    RecordHeader d;
    ASSERT_TRUE(DecodeRecordHeader(kBlobFormatVersion, h.data(), key.size(), 32, &d));
    ASSERT_TRUE(RecordValueCrcMatches(kBlobFormatVersion, h.data(), key.size(), value.data(), value.size(),
                                      d.record_crc));
    for (uint64_t at = 0, i = 0; at < n; at += kValueBlockSize, i++) {
      const size_t len = static_cast<size_t>(std::min(kValueBlockSize, n - at));
      ASSERT_EQ(DecodeFixed32(blocks.data() + 4 * i), crc32c::Value(value.data() + at, len)) << "block " << i;
    }
  }
}

TEST(Format, RecordHeaderRoundTrip) {
  for (size_t k : {1, 8, 16, 1024}) {
    for (size_t vsize : {0, 1, 100}) {
      for (uint64_t ts : {0ull, 1700000000ull, ~0ull}) {
        for (uint64_t stamp : {uint64_t{0}, Version::MakeStamp(1700000000123456, 3), ~uint64_t{0}}) {
          const std::string key = test::Key(ts + vsize, k);
          const std::string value = test::ValueFor(key, ts, vsize);
          const uint64_t at = 32 + (1ull << 40);
          const std::string h = EncodeRecord(0, at, Version{ts, stamp}, key, value);
          ASSERT_EQ(h.size(), 44 + k);
          RecordHeader r;
          ASSERT_TRUE(DecodeRecordHeader(kBlobFormatVersion, h.data(), k, at, &r)) << "key size " << k;
          ASSERT_EQ(r.flags, 0u);
          ASSERT_EQ(r.offset, at);
          ASSERT_EQ(r.version.timestamp, ts);
          ASSERT_EQ(r.version.stamp, stamp);
          ASSERT_EQ(r.value_size, vsize);
          ASSERT_TRUE(std::memcmp(r.key, key.data(), k) == 0);
          ASSERT_TRUE(RecordValueCrcMatches(kBlobFormatVersion, h.data(), k, value.data(), value.size(), r.record_crc));
          if (vsize > 0) {
            std::string bad = value;
            bad[vsize / 2] ^= 0x20;
            ASSERT_FALSE(RecordValueCrcMatches(kBlobFormatVersion, h.data(), k, bad.data(), bad.size(), r.record_crc));
            ASSERT_FALSE(RecordValueCrcMatches(kBlobFormatVersion, h.data(), k, value.data(), vsize - 1, r.record_crc));
          }
        }
      }
    }
  }
}

// Format-1 records (as the previous engine wrote them) decode with stamp 0.
TEST(Format, Format1RecordDecodes) {
  for (size_t k : {1, 16, 1024}) {
    for (size_t vsize : {0, 100}) {
      const std::string key = test::Key(vsize, k);
      const std::string value = test::ValueFor(key, 7, vsize);
      const std::string h = test::RecordHeaderBytes(kBlobFormatV1, 0, 4096, Version{1700000000, 0}, key, value);
      ASSERT_EQ(h.size(), 36 + k);
      RecordHeader r;
      ASSERT_TRUE(DecodeRecordHeader(kBlobFormatV1, h.data(), k, 4096, &r)) << "key size " << k;
      ASSERT_EQ(r.version.timestamp, 1700000000u);
      ASSERT_EQ(r.version.stamp, 0u);
      ASSERT_EQ(r.value_size, vsize);
      ASSERT_TRUE(std::memcmp(r.key, key.data(), k) == 0);
      ASSERT_TRUE(RecordValueCrcMatches(kBlobFormatV1, h.data(), k, value.data(), value.size(), r.record_crc));
      // Neither format takes the other's header for one of its own.
      const std::string h2 = EncodeRecord(0, 4096, Version{1700000000, 0}, key, value);
      // Read as the current format, the V1 header is followed by zeros up to
      // the current header's size: the decoder reads that many bytes.
      std::string padded = h;
      if (padded.size() < RecordHeaderSize(kBlobFormatVersion, k)) padded.resize(RecordHeaderSize(kBlobFormatVersion, k), '\0');
      ASSERT_FALSE(DecodeRecordHeader(kBlobFormatVersion, padded.data(), k, 4096, &r));
      ASSERT_FALSE(DecodeRecordHeader(kBlobFormatV1, h2.data(), k, 4096, &r));
    }
  }
  const std::string key = test::Key(3);
  const std::string t = test::RecordHeaderBytes(kBlobFormatV1, kFlagTombstone, 32, Version{9, 0}, key, "");
  RecordHeader r;
  ASSERT_TRUE(DecodeRecordHeader(kBlobFormatV1, t.data(), 16, 32, &r));
  ASSERT_TRUE(r.tombstone());
  ASSERT_TRUE(RecordValueCrcMatches(kBlobFormatV1, t.data(), 16, nullptr, 0, r.record_crc));
}

TEST(Format, TombstoneRoundTrip) {
  const std::string key = test::Key(7);
  const std::string h = EncodeRecord(kFlagTombstone, 32, 99, key, "");
  RecordHeader r;
  ASSERT_TRUE(DecodeRecordHeader(kBlobFormatVersion, h.data(), key.size(), 32, &r));
  ASSERT_EQ(r.flags, kFlagTombstone);
  ASSERT_TRUE(r.tombstone());
  ASSERT_EQ(r.value_size, 0u);
  ASSERT_TRUE(RecordValueCrcMatches(kBlobFormatVersion, h.data(), key.size(), nullptr, 0, r.record_crc));
}

TEST(Format, EveryFlippedHeaderBitFailsDecode) {
  for (uint32_t format : {kBlobFormatVersion, kBlobFormatV1}) {
    for (size_t k : {1, 16}) {
      const std::string key = test::Key(12345, k);
      const Version v{1700000000, format == kBlobFormatV1 ? 0 : Version::MakeStamp(1700000000000001, 5)};
      const std::string h = test::RecordHeaderBytes(format, 0, 4096, v, key, "some value");
      for (size_t i = 0; i < h.size(); i++) {
        for (int bit = 0; bit < 8; bit++) {
          std::string bad = h;
          bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
          RecordHeader r;
          ASSERT_FALSE(DecodeRecordHeader(format, bad.data(), k, 4096, &r))
              << "format " << format << " byte " << i << " bit " << bit;
        }
      }
    }
  }
}

TEST(Format, WrongOffsetFailsDecode) {
  const std::string key = test::Key(1);
  const std::string h = EncodeRecord(0, 1000, 5, key, "v");
  RecordHeader r;
  ASSERT_TRUE(DecodeRecordHeader(kBlobFormatVersion, h.data(), key.size(), 1000, &r));
  ASSERT_FALSE(DecodeRecordHeader(kBlobFormatVersion, h.data(), key.size(), 999, &r));
  ASSERT_FALSE(DecodeRecordHeader(kBlobFormatVersion, h.data(), key.size(), 1001, &r));
  ASSERT_FALSE(DecodeRecordHeader(kBlobFormatVersion, h.data(), key.size(), 1000 + (1ull << 32), &r));
}

TEST(Format, SemanticallyInvalidHeadersFail) {
  const std::string key = test::Key(1);
  const size_t k = key.size();
  for (uint32_t format : {kBlobFormatVersion, kBlobFormatV1}) {
    RecordHeader r;
    // A tombstone that claims a value, even with correct checksums.
    std::string h = test::RecordHeaderBytes(format, kFlagTombstone, 32, Version{5, 0}, key, "abc");
    ASSERT_FALSE(DecodeRecordHeader(format, h.data(), k, 32, &r));
    // Unknown flag bits (format 1 knows the tombstone only).
    for (int bit = format == kBlobFormatV1 ? 1 : 3; bit < 8; bit++) {
      h = test::RecordHeaderBytes(format, static_cast<uint8_t>(1 << bit), 32, Version{5, 0}, key, "");
      ASSERT_FALSE(DecodeRecordHeader(format, h.data(), k, 32, &r)) << "flag bit " << bit;
    }
    // Flags that exclude each other: a void record is nothing else, a tombstone has no blocks.
    if (format == kBlobFormatVersion) {
      for (uint8_t flags : {kFlagVoid | kFlagTombstone, kFlagVoid | kFlagBlocks, kFlagBlocks | kFlagTombstone}) {
        h = test::RecordHeaderBytes(format, flags, 32, Version{5, 0}, key, "");
        ASSERT_FALSE(DecodeRecordHeader(format, h.data(), k, 32, &r)) << "flags " << int(flags);
      }
      for (uint8_t flags : {kFlagVoid, kFlagBlocks}) {
        h = test::RecordHeaderBytes(format, flags, 32, Version{5, 0}, key, "");
        ASSERT_TRUE(DecodeRecordHeader(format, h.data(), k, 32, &r)) << "flags " << int(flags);
      }
    }
    // Reserved bytes must be zero.
    for (int i = 5; i < 8; i++) {
      h = test::RecordHeaderBytes(format, 0, 32, Version{5, 0}, key, "v");
      ASSERT_TRUE(DecodeRecordHeader(format, h.data(), k, 32, &r));
      h[i] = 1;
      ResealHeader(&h, k, format);
      ASSERT_FALSE(DecodeRecordHeader(format, h.data(), k, 32, &r)) << "reserved byte " << i;
    }
    // Wrong magic with a matching CRC.
    h = test::RecordHeaderBytes(format, 0, 32, Version{5, 0}, key, "v");
    h[0] = 'X';
    ResealHeader(&h, k, format);
    ASSERT_FALSE(DecodeRecordHeader(format, h.data(), k, 32, &r));
  }
}

TEST(Format, BlobHeaderRoundTrip) {
  BlobHeader h;
  h.key_size = 1024;
  h.blob_id = 123456789012345ull;
  char buf[kBlobHeaderSize];
  EncodeBlobHeader(h, buf);
  BlobHeader d;
  ASSERT_OK(DecodeBlobHeader(buf, &d));
  ASSERT_EQ(d.version, kBlobFormatVersion);
  ASSERT_EQ(d.version, 2u);
  ASSERT_EQ(d.key_size, 1024u);
  ASSERT_EQ(d.blob_id, 123456789012345ull);
  ASSERT_EQ(std::string(buf, 8), "OYSTBLOB");
}

TEST(Format, DamagedBlobHeaderIsCorruption) {
  BlobHeader h;
  h.key_size = 16;
  h.blob_id = 3;
  char good[kBlobHeaderSize];
  EncodeBlobHeader(h, good);
  for (size_t i = 0; i < kBlobHeaderSize; i++) {
    if (i >= 24 && i < 28) continue;  // reserved: see below
    char bad[kBlobHeaderSize];
    std::memcpy(bad, good, sizeof(bad));
    bad[i] ^= 0x04;
    BlobHeader d;
    ASSERT_STATUS(kCorruption, DecodeBlobHeader(bad, &d)) << "byte " << i;
  }
  // Reserved bytes are covered by the CRC only.
  char bad[kBlobHeaderSize];
  std::memcpy(bad, good, sizeof(bad));
  bad[25] = 1;
  BlobHeader d;
  ASSERT_STATUS(kCorruption, DecodeBlobHeader(bad, &d));
  EncodeFixed32(bad + 28, crc32c::Value(bad, 28));
  ASSERT_OK(DecodeBlobHeader(bad, &d));
  // Bad magic, whatever the CRC says.
  std::memcpy(bad, good, sizeof(bad));
  bad[0] = 'X';
  EncodeFixed32(bad + 28, crc32c::Value(bad, 28));
  ASSERT_STATUS(kCorruption, DecodeBlobHeader(bad, &d));
}

TEST(Format, Format1BlobHeaderIsAccepted) {
  const std::string buf = test::BlobHeaderBytes(kBlobFormatV1, 16, 9);
  BlobHeader d;
  ASSERT_OK(DecodeBlobHeader(buf.data(), &d));
  ASSERT_EQ(d.version, 1u);
  ASSERT_EQ(d.key_size, 16u);
  ASSERT_EQ(d.blob_id, 9u);
}

TEST(Format, OtherBlobVersionIsNotSupported) {
  for (uint32_t version : {0u, 3u, 0xFFFFFFFFu}) {
    BlobHeader h;
    h.version = version;
    h.key_size = 16;
    h.blob_id = 1;
    char buf[kBlobHeaderSize];
    EncodeBlobHeader(h, buf);
    BlobHeader d;
    ASSERT_STATUS(kNotSupported, DecodeBlobHeader(buf, &d)) << "version " << version;
  }
}

// docs/FORMAT.md, section 3.3: the bytes of a blob holding one put and one
// tombstone of "key-0001" (K = 8), both stamped by node 3.
TEST(Format, WorkedExample) {
  const std::string expected = FromHex(
      "4f 59 53 54 42 4c 4f 42 02 00 00 00 08 00 00 00"
      "01 00 00 00 00 00 00 00 00 00 00 00 ae da d1 bf"
      "4f 59 52 43 00 00 00 00 20 00 00 00 00 00 00 00"
      "00 f1 53 65 00 00 00 00 03 00 24 02 82 41 a2 60"
      "05 00 00 00 6b 65 79 2d 30 30 30 31 aa 7d 5c 5d"
      "17 22 9c 9b 68 65 6c 6c 6f"
      "4f 59 52 43 01 00 00"
      "00 59 00 00 00 00 00 00 00 01 f1 53 65 00 00 00"
      "00 03 00 24 d8 82 41 a2 60 00 00 00 00 6b 65 79"
      "2d 30 30 30 31 f7 e3 00 41 c7 4b 67 48");
  ASSERT_EQ(expected.size(), 89u + 52u);
  BlobHeader bh;
  bh.key_size = 8;
  bh.blob_id = 1;
  std::string blob(kBlobHeaderSize, '\0');
  EncodeBlobHeader(bh, &blob[0]);
  blob += EncodeRecord(0, 32, Version::Of(1700000000, 1700000000123456, 3), "key-0001", "hello") + "hello";
  ASSERT_EQ(blob.size(), 89u);
  blob += EncodeRecord(kFlagTombstone, 89, Version::Of(1700000001, 1700000001000000, 3), "key-0001", "");
  ASSERT_TRUE(blob == expected) << "encoded " << test::internal::PrintString(blob);
}

// docs/FORMAT.md, section 3.4: the same writes as the previous engine laid
// them out in a format-1 blob, read back with stamp 0.
TEST(Format, Format1WorkedExample) {
  const std::string blob = FromHex(
      "4f 59 53 54 42 4c 4f 42 01 00 00 00 08 00 00 00"
      "01 00 00 00 00 00 00 00 00 00 00 00 69 c2 15 e6"
      "4f 59 52 43 00 00 00 00 20 00 00 00 00 00 00 00"
      "00 f1 53 65 00 00 00 00 05 00 00 00 6b 65 79 2d"
      "30 30 30 31 c9 be 6e aa 6c 33 e3 28 68 65 6c 6c"
      "6f"
      "4f 59 52 43 01 00 00 00 51 00 00 00 00 00 00 00"
      "01 f1 53 65 00 00 00 00 00 00 00 00 6b 65 79 2d"
      "30 30 30 31 25 2f 92 a4 c7 4b 67 48");
  BlobHeader bh;
  ASSERT_OK(DecodeBlobHeader(blob.data(), &bh));
  ASSERT_EQ(bh.version, kBlobFormatV1);
  RecordHeader r;
  ASSERT_TRUE(DecodeRecordHeader(kBlobFormatV1, blob.data() + 32, 8, 32, &r));
  ASSERT_EQ(r.version.timestamp, 1700000000u);
  ASSERT_EQ(r.version.stamp, 0u);
  ASSERT_EQ(r.value_size, 5u);
  ASSERT_TRUE(RecordValueCrcMatches(kBlobFormatV1, blob.data() + 32, 8, blob.data() + 76, 5, r.record_crc));
  ASSERT_TRUE(DecodeRecordHeader(kBlobFormatV1, blob.data() + 81, 8, 81, &r));
  ASSERT_TRUE(r.tombstone());
  ASSERT_EQ(r.version.timestamp, 1700000001u);
  ASSERT_TRUE(test::RecordHeaderBytes(kBlobFormatV1, kFlagTombstone, 81, Version{1700000001, 0}, "key-0001", "") ==
              blob.substr(81));
}

TEST(Format, FileNames) {
  ASSERT_EQ(BlobFileName("oyster", 7), "oyster.7.blob");
  ASSERT_EQ(IndexFileName("oyster", 7), "oyster.7.index");
  ASSERT_EQ(TempIndexFileName("oyster", 7), "oyster.7.index.tmp");

  struct Case {
    const char* name;
    FileKind kind;
    uint64_t id;
  };
  const Case cases[] = {
      {"oyster.1.blob", FileKind::kBlob, 1},
      {"oyster.42.index", FileKind::kIndex, 42},
      {"oyster.42.index.tmp", FileKind::kTempIndex, 42},
      {"oyster.0.blob", FileKind::kBlob, 0},
      {"oyster.9999999999999999999.blob", FileKind::kBlob, 9999999999999999999ull},  // 19 digits
      {"oyster.10000000000000000000.blob", FileKind::kOther, 0},                     // 20 digits
      {"oyster.07.blob", FileKind::kOther, 0},   // leading zero: one spelling per id
      {"oyster.00.blob", FileKind::kOther, 0},
      {"oyster..blob", FileKind::kOther, 0},
      {"oyster.blob", FileKind::kOther, 0},
      {"oyster.1", FileKind::kOther, 0},
      {"oyster.1.", FileKind::kOther, 0},
      {"oyster.1.blob.bak", FileKind::kOther, 0},
      {"oyster.1.index.tmp.x", FileKind::kOther, 0},
      {"oyster.1.idx", FileKind::kOther, 0},
      {"oyster.-1.blob", FileKind::kOther, 0},
      {"oyster.1a.blob", FileKind::kOther, 0},
      {"other.1.blob", FileKind::kOther, 0},
      {"oysterx.1.blob", FileKind::kOther, 0},
      {"oyste.1.blob", FileKind::kOther, 0},
      {"oyster", FileKind::kOther, 0},
      {"oyster.", FileKind::kOther, 0},
      {"corrupted", FileKind::kOther, 0},
      {"", FileKind::kOther, 0},
  };
  for (const Case& c : cases) {
    uint64_t id = 0;
    FileKind kind = ParseFileName(c.name, "oyster", &id);
    ASSERT_TRUE(kind == c.kind) << "\"" << c.name << "\" parsed as kind " << static_cast<int>(kind);
    if (kind != FileKind::kOther) {
      ASSERT_EQ(id, c.id) << c.name;
    }
  }
  // Names the engine writes parse back to their id.
  for (uint64_t id : {1ull, 10ull, 18446744073709551615ull / 10}) {
    uint64_t got = 0;
    ASSERT_TRUE(ParseFileName(BlobFileName("p", id), "p", &got) == FileKind::kBlob);
    ASSERT_EQ(got, id);
    ASSERT_TRUE(ParseFileName(IndexFileName("p", id), "p", &got) == FileKind::kIndex);
    ASSERT_TRUE(ParseFileName(TempIndexFileName("p", id), "p", &got) == FileKind::kTempIndex);
  }
}

}  // namespace oyster
