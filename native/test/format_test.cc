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

std::string EncodeRecord(uint8_t flags, uint64_t offset, uint64_t ts, const std::string& key,
                         const std::string& value) {
  std::string h(RecordHeaderSize(key.size()), '\0');
  EncodeRecordHeader(flags, offset, ts, key.data(), key.size(), value.data(),
                     static_cast<uint32_t>(value.size()), &h[0]);
  return h;
}

// Recomputes the header CRC after a deliberate change, so that only the
// semantic checks can reject the header.
void ResealHeader(std::string* h, size_t key_size) {
  EncodeFixed32(&(*h)[32 + key_size], crc32c::Value(h->data(), 32 + key_size));
}

}  // namespace

TEST(Format, RecordHeaderRoundTrip) {
  for (size_t k : {1, 8, 16, 1024}) {
    for (size_t vsize : {0, 1, 100}) {
      for (uint64_t ts : {0ull, 1700000000ull, ~0ull}) {
        const std::string key = test::Key(ts + vsize, k);
        const std::string value = test::ValueFor(key, ts, vsize);
        const uint64_t at = 32 + (1ull << 40);
        const std::string h = EncodeRecord(0, at, ts, key, value);
        ASSERT_EQ(h.size(), 36 + k);
        RecordHeader r;
        ASSERT_TRUE(DecodeRecordHeader(h.data(), k, at, &r)) << "key size " << k;
        ASSERT_EQ(r.flags, 0u);
        ASSERT_EQ(r.offset, at);
        ASSERT_EQ(r.timestamp, ts);
        ASSERT_EQ(r.value_size, vsize);
        ASSERT_TRUE(std::memcmp(r.key, key.data(), k) == 0);
        ASSERT_TRUE(RecordValueCrcMatches(h.data(), k, value.data(), value.size(), r.record_crc));
        if (vsize > 0) {
          std::string bad = value;
          bad[vsize / 2] ^= 0x20;
          ASSERT_FALSE(RecordValueCrcMatches(h.data(), k, bad.data(), bad.size(), r.record_crc));
          ASSERT_FALSE(RecordValueCrcMatches(h.data(), k, value.data(), vsize - 1, r.record_crc));
        }
      }
    }
  }
}

TEST(Format, TombstoneRoundTrip) {
  const std::string key = test::Key(7);
  const std::string h = EncodeRecord(kFlagTombstone, 32, 99, key, "");
  RecordHeader r;
  ASSERT_TRUE(DecodeRecordHeader(h.data(), key.size(), 32, &r));
  ASSERT_EQ(r.flags, kFlagTombstone);
  ASSERT_EQ(r.value_size, 0u);
  ASSERT_TRUE(RecordValueCrcMatches(h.data(), key.size(), nullptr, 0, r.record_crc));
}

TEST(Format, EveryFlippedHeaderBitFailsDecode) {
  for (size_t k : {1, 16}) {
    const std::string key = test::Key(12345, k);
    const std::string h = EncodeRecord(0, 4096, 1700000000, key, "some value");
    for (size_t i = 0; i < h.size(); i++) {
      for (int bit = 0; bit < 8; bit++) {
        std::string bad = h;
        bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
        RecordHeader r;
        ASSERT_FALSE(DecodeRecordHeader(bad.data(), k, 4096, &r)) << "byte " << i << " bit " << bit;
      }
    }
  }
}

TEST(Format, WrongOffsetFailsDecode) {
  const std::string key = test::Key(1);
  const std::string h = EncodeRecord(0, 1000, 5, key, "v");
  RecordHeader r;
  ASSERT_TRUE(DecodeRecordHeader(h.data(), key.size(), 1000, &r));
  ASSERT_FALSE(DecodeRecordHeader(h.data(), key.size(), 999, &r));
  ASSERT_FALSE(DecodeRecordHeader(h.data(), key.size(), 1001, &r));
  ASSERT_FALSE(DecodeRecordHeader(h.data(), key.size(), 1000 + (1ull << 32), &r));
}

TEST(Format, SemanticallyInvalidHeadersFail) {
  const std::string key = test::Key(1);
  const size_t k = key.size();
  RecordHeader r;
  // A tombstone that claims a value, even with correct checksums.
  std::string h = EncodeRecord(kFlagTombstone, 32, 5, key, "abc");
  ASSERT_FALSE(DecodeRecordHeader(h.data(), k, 32, &r));
  // Unknown flag bits.
  for (int bit = 1; bit < 8; bit++) {
    h = EncodeRecord(static_cast<uint8_t>(1 << bit), 32, 5, key, "");
    ASSERT_FALSE(DecodeRecordHeader(h.data(), k, 32, &r)) << "flag bit " << bit;
  }
  // Reserved bytes must be zero.
  for (int i = 5; i < 8; i++) {
    h = EncodeRecord(0, 32, 5, key, "v");
    h[i] = 1;
    ResealHeader(&h, k);
    ASSERT_FALSE(DecodeRecordHeader(h.data(), k, 32, &r)) << "reserved byte " << i;
  }
  // Wrong magic with a matching CRC.
  h = EncodeRecord(0, 32, 5, key, "v");
  h[0] = 'X';
  ResealHeader(&h, k);
  ASSERT_FALSE(DecodeRecordHeader(h.data(), k, 32, &r));
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

TEST(Format, OtherBlobVersionIsNotSupported) {
  for (uint32_t version : {0u, 2u, 0xFFFFFFFFu}) {
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
// tombstone of "key-0001" (K = 8).
TEST(Format, WorkedExample) {
  const std::string expected = FromHex(
      "4f 59 53 54 42 4c 4f 42 01 00 00 00 08 00 00 00"
      "01 00 00 00 00 00 00 00 00 00 00 00 69 c2 15 e6"
      "4f 59 52 43 00 00 00 00 20 00 00 00 00 00 00 00"
      "00 f1 53 65 00 00 00 00 05 00 00 00 6b 65 79 2d"
      "30 30 30 31 c9 be 6e aa 6c 33 e3 28 68 65 6c 6c"
      "6f"
      "4f 59 52 43 01 00 00 00 51 00 00 00 00 00 00 00"
      "01 f1 53 65 00 00 00 00 00 00 00 00 6b 65 79 2d"
      "30 30 30 31 25 2f 92 a4 c7 4b 67 48");
  ASSERT_EQ(expected.size(), 81u + 44u);
  BlobHeader bh;
  bh.key_size = 8;
  bh.blob_id = 1;
  std::string blob(kBlobHeaderSize, '\0');
  EncodeBlobHeader(bh, &blob[0]);
  blob += EncodeRecord(0, 32, 1700000000, "key-0001", "hello") + "hello";
  ASSERT_EQ(blob.size(), 81u);
  blob += EncodeRecord(kFlagTombstone, 81, 1700000001, "key-0001", "");
  ASSERT_TRUE(blob == expected) << "encoded " << test::internal::PrintString(blob);
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
