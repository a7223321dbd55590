#include "engine/blob_scanner.h"

#include <string>
#include <vector>

#include "engine/format.h"
#include "test/test_util.h"
#include "test/testharness.h"

namespace oyster {
namespace {

// A blob file image of blob format `format` built record by record. Format-2
// records get stamps, format-1 records have none.
class BlobImage {
 public:
  explicit BlobImage(size_t key_size = 16, uint32_t format = kBlobFormatVersion)
      : k_(key_size), format_(format), bytes_(test::BlobHeaderBytes(format, key_size, 1)) {}

  struct Record {
    std::string key;
    IndexEntry entry;
    uint64_t end;  // offset just past the record
  };

  void Put(const std::string& key, uint64_t ts, const std::string& value) { Add(key, ts, value, 0); }
  void Delete(const std::string& key, uint64_t ts) { Add(key, ts, "", kFlagTombstone); }

  const std::string& bytes() const { return bytes_; }
  const std::vector<Record>& records() const { return records_; }
  size_t key_size() const { return k_; }
  uint32_t format() const { return format_; }
  size_t header_size() const { return RecordHeaderSize(format_, k_); }

 private:
  void Add(const std::string& key, uint64_t ts, const std::string& value, uint8_t flags) {
    const uint64_t at = bytes_.size();
    const Version v{ts, format_ == kBlobFormatV1 ? 0 : Version::MakeStamp(ts * 1000000 + 7, 3)};
    bytes_ += test::RecordHeaderBytes(format_, flags, at, v, key, value);
    bytes_ += value;
    IndexEntry e;
    e.version = v;
    e.offset = at;
    e.value_size = static_cast<uint32_t>(value.size());
    e.flags = flags;
    records_.push_back(Record{key, e, bytes_.size()});
  }

  const size_t k_;
  const uint32_t format_;
  std::string bytes_;
  std::vector<Record> records_;
};

struct Visit {
  std::string key;
  IndexEntry entry;
  bool value_ok;
};

// Scans the first `size` bytes of `bytes`, a blob of `format`.
Status Scan(const std::string& bytes, uint64_t size, size_t key_size, std::vector<Visit>* visits,
            ScanResult* result, uint32_t format = kBlobFormatVersion) {
  visits->clear();
  test::StringFile file(bytes.substr(0, size));
  return ScanBlob(
      file, format, kBlobHeaderSize, size, key_size,
      [&](const char* key, const IndexEntry& e, bool ok) { visits->push_back(Visit{std::string(key, key_size), e, ok}); },
      result);
}

// The visits are exactly the image's records `which`, in order.
void AssertVisits(const std::vector<Visit>& visits, const BlobImage& image, const std::vector<size_t>& which) {
  ASSERT_EQ(visits.size(), which.size());
  for (size_t i = 0; i < which.size(); i++) {
    const BlobImage::Record& r = image.records()[which[i]];
    ASSERT_TRUE(visits[i].key == r.key) << "visit " << i;
    ASSERT_EQ(visits[i].entry.offset, r.entry.offset) << "visit " << i;
    ASSERT_EQ(visits[i].entry.version.timestamp, r.entry.version.timestamp) << "visit " << i;
    ASSERT_EQ(visits[i].entry.version.stamp, r.entry.version.stamp) << "visit " << i;
    ASSERT_EQ(visits[i].entry.value_size, r.entry.value_size) << "visit " << i;
    ASSERT_EQ(visits[i].entry.flags, r.entry.flags) << "visit " << i;
  }
}

std::vector<size_t> Range(size_t from, size_t to) {
  std::vector<size_t> v;
  for (size_t i = from; i < to; i++) v.push_back(i);
  return v;
}

// Eight records of assorted sizes, tombstones and an overwrite among them.
BlobImage SampleImage(size_t key_size = 16, uint32_t format = kBlobFormatVersion) {
  BlobImage image(key_size, format);
  for (uint64_t i = 0; i < 8; i++) {
    const std::string key = test::Key(i % 6, key_size);
    if (i == 4) {
      image.Delete(key, 100 + i);
    } else {
      image.Put(key, 100 + i, test::ValueFor(key, 100 + i, i * 37 % 300));
    }
  }
  return image;
}

}  // namespace

TEST(Scanner, CleanBlob) {
  for (uint32_t format : {kBlobFormatVersion, kBlobFormatV1}) {
    for (size_t k : {1, 16, 200}) {
      BlobImage image = SampleImage(k, format);
      std::vector<Visit> visits;
      ScanResult r;
      ASSERT_OK(Scan(image.bytes(), image.bytes().size(), k, &visits, &r, format));
      AssertVisits(visits, image, Range(0, 8));
      for (const Visit& v : visits) ASSERT_TRUE(v.value_ok);
      ASSERT_EQ(r.valid_end, image.bytes().size());
      ASSERT_EQ(r.records, 8u);
      ASSERT_EQ(r.corrupt_records, 0u);
      ASSERT_EQ(r.skipped_regions, 0u);
      ASSERT_EQ(r.skipped_bytes, 0u);
    }
  }
}

// Read as the other format, no record of a blob is valid: the header sizes
// differ, so the CRCs are looked for in the wrong places.
TEST(Scanner, ReadAsTheOtherFormatNothingIsARecord) {
  for (uint32_t format : {kBlobFormatVersion, kBlobFormatV1}) {
    BlobImage image = SampleImage(16, format);
    std::vector<Visit> visits;
    ScanResult r;
    ASSERT_OK(Scan(image.bytes(), image.bytes().size(), 16, &visits, &r, 3 - format));
    ASSERT_EQ(r.records, 0u) << "format " << format;
    ASSERT_EQ(r.valid_end, kBlobHeaderSize);
  }
}

TEST(Scanner, HeaderOnlyBlob) {
  BlobImage image;
  std::vector<Visit> visits;
  ScanResult r;
  ASSERT_OK(Scan(image.bytes(), image.bytes().size(), 16, &visits, &r));
  ASSERT_EQ(visits.size(), 0u);
  ASSERT_EQ(r.valid_end, kBlobHeaderSize);
  ASSERT_EQ(r.records, 0u);
}

// A write interrupted anywhere inside the last record leaves a tail that is
// cut at the start of that record; everything before it is intact.
TEST(Scanner, TornTailAtEveryOffset) {
  for (uint32_t format : {kBlobFormatVersion, kBlobFormatV1}) {
    BlobImage image = SampleImage(16, format);
    const uint64_t last_start = image.records().back().entry.offset;
    const uint64_t end = image.bytes().size();
    ASSERT_GT(end - last_start, 200u);  // header and a value
    for (uint64_t cut = last_start; cut < end; cut++) {
      std::vector<Visit> visits;
      ScanResult r;
      ASSERT_OK(Scan(image.bytes(), cut, 16, &visits, &r, format));
      ASSERT_EQ(r.valid_end, last_start) << "cut at " << cut;
      ASSERT_EQ(r.records, 7u) << "cut at " << cut;
      ASSERT_EQ(r.skipped_regions, 0u) << "cut at " << cut;
      AssertVisits(visits, image, Range(0, 7));
    }
  }
}

TEST(Scanner, GarbageTailIsCut) {
  BlobImage image = SampleImage();
  const uint64_t end = image.bytes().size();
  std::vector<std::string> tails = {
      std::string(1, 'x'),
      std::string(5000, '\0'),
      test::ValueFor("garbage", 1, 3000),
      "OYRC" + std::string(100, '\0'),            // a magic alone is not a record
      std::string("OYRC") + test::ValueFor("g", 2, 60),
  };
  // A complete copy of an earlier record: its self-offset names the place it
  // was written, not this one.
  const BlobImage::Record& first = image.records()[0];
  tails.push_back(image.bytes().substr(first.entry.offset, first.end - first.entry.offset));
  for (size_t t = 0; t < tails.size(); t++) {
    const std::string bytes = image.bytes() + tails[t];
    std::vector<Visit> visits;
    ScanResult r;
    ASSERT_OK(Scan(bytes, bytes.size(), 16, &visits, &r));
    ASSERT_EQ(r.valid_end, end) << "tail " << t;
    ASSERT_EQ(r.records, 8u) << "tail " << t;
    AssertVisits(visits, image, Range(0, 8));
  }
}

TEST(Scanner, DamagedValueIsReportedNotSkipped) {
  BlobImage image = SampleImage();
  const BlobImage::Record& rec = image.records()[3];
  ASSERT_GT(rec.entry.value_size, 10u);
  for (uint64_t at : {rec.entry.offset + image.header_size(), rec.end - 1}) {
    std::string bytes = image.bytes();
    bytes[at] ^= 0x40;
    std::vector<Visit> visits;
    ScanResult r;
    ASSERT_OK(Scan(bytes, bytes.size(), 16, &visits, &r));
    AssertVisits(visits, image, Range(0, 8));
    for (size_t i = 0; i < visits.size(); i++) ASSERT_EQ(visits[i].value_ok, i != 3) << "record " << i;
    ASSERT_EQ(r.corrupt_records, 1u);
    ASSERT_EQ(r.records, 8u);
    ASSERT_EQ(r.skipped_regions, 0u);
    ASSERT_EQ(r.valid_end, bytes.size());
  }
}

// Any damaged byte in the header of a record in the middle makes the scan
// step over that record and resume at the next one.
TEST(Scanner, DamagedHeaderInTheMiddleIsSteppedOver) {
  for (uint32_t format : {kBlobFormatVersion, kBlobFormatV1}) {
    BlobImage image = SampleImage(16, format);
    const BlobImage::Record& rec = image.records()[5];
    for (uint64_t at = rec.entry.offset; at < rec.entry.offset + image.header_size(); at++) {
      std::string bytes = image.bytes();
      bytes[at] ^= 0x08;
      std::vector<Visit> visits;
      ScanResult r;
      ASSERT_OK(Scan(bytes, bytes.size(), 16, &visits, &r, format));
      AssertVisits(visits, image, {0, 1, 2, 3, 4, 6, 7});
      ASSERT_EQ(r.skipped_regions, 1u) << "byte " << at;
      ASSERT_EQ(r.skipped_bytes, rec.end - rec.entry.offset) << "byte " << at;
      ASSERT_EQ(r.records, 7u);
      ASSERT_EQ(r.valid_end, bytes.size());
    }
  }
}

// Damage in the header of the last record looks like a torn write.
TEST(Scanner, DamagedLastHeaderIsATail) {
  BlobImage image = SampleImage();
  const BlobImage::Record& last = image.records().back();
  std::string bytes = image.bytes();
  bytes[last.entry.offset + 9] ^= 0x01;  // its self-offset
  std::vector<Visit> visits;
  ScanResult r;
  ASSERT_OK(Scan(bytes, bytes.size(), 16, &visits, &r));
  AssertVisits(visits, image, Range(0, 7));
  ASSERT_EQ(r.valid_end, last.entry.offset);
  ASSERT_EQ(r.skipped_regions, 0u);
}

// Damage spanning several records is one region.
TEST(Scanner, SeveralDamagedRecordsAreOneRegion) {
  BlobImage image = SampleImage();
  std::string bytes = image.bytes();
  for (size_t i : {2, 3, 4}) bytes[image.records()[i].entry.offset] = 'X';
  std::vector<Visit> visits;
  ScanResult r;
  ASSERT_OK(Scan(bytes, bytes.size(), 16, &visits, &r));
  AssertVisits(visits, image, {0, 1, 5, 6, 7});
  ASSERT_EQ(r.skipped_regions, 1u);
  ASSERT_EQ(r.skipped_bytes, image.records()[4].end - image.records()[2].entry.offset);
}

// A value may hold a complete, checksummed record (here: a copy of record
// 0). When the scan resynchronises through it, the copy's self-offset does
// not match its position and it is not taken for a record.
TEST(Scanner, RecordEmbeddedInAValueIsIgnored) {
  BlobImage donor;
  const std::string inner_key = test::Key(999);
  donor.Put(inner_key, 5, "inner value");
  const std::string embedded = donor.bytes().substr(kBlobHeaderSize);

  BlobImage image;
  image.Put(test::Key(1), 10, "first");
  image.Put(test::Key(2), 11, "xx" + embedded + "yy");
  image.Put(test::Key(3), 12, "third");
  std::string bytes = image.bytes();
  bytes[image.records()[1].entry.offset + 20] ^= 0x01;  // record 1's timestamp
  std::vector<Visit> visits;
  ScanResult r;
  ASSERT_OK(Scan(bytes, bytes.size(), 16, &visits, &r));
  AssertVisits(visits, image, {0, 2});
  ASSERT_EQ(r.skipped_regions, 1u);
}

// Values larger than the scanner's 4 MiB read window, and a record whose
// magic straddles two windows while resynchronising.
TEST(Scanner, RecordsLargerThanTheReadWindow) {
  const uint64_t kWindow = 4 << 20;  // blob_scanner.cc
  const size_t hsize = RecordHeaderSize(kBlobFormatVersion, 16);
  BlobImage image;
  image.Put(test::Key(1), 1, test::ValueFor(test::Key(1), 1, 1000));
  image.Put(test::Key(2), 2, test::ValueFor(test::Key(2), 2, 5 << 20));
  // When record 2's header is damaged, resynchronisation starts reading at
  // its offset + 1, and that first window ends 2 bytes into record 3's magic.
  image.Put(test::Key(3), 3, test::ValueFor(test::Key(3), 3, kWindow - 1 - hsize));
  image.Put(test::Key(4), 4, test::ValueFor(test::Key(4), 4, 100));
  image.Put(test::Key(5), 5, "");
  std::vector<Visit> visits;
  ScanResult r;
  ASSERT_OK(Scan(image.bytes(), image.bytes().size(), 16, &visits, &r));
  AssertVisits(visits, image, Range(0, 5));
  for (const Visit& v : visits) ASSERT_TRUE(v.value_ok);

  // A damaged byte deep inside the large value.
  std::string bytes = image.bytes();
  bytes[image.records()[1].entry.offset + hsize + (4 << 20) + 7] ^= 0x01;
  ASSERT_OK(Scan(bytes, bytes.size(), 16, &visits, &r));
  AssertVisits(visits, image, Range(0, 5));
  ASSERT_FALSE(visits[1].value_ok);
  ASSERT_EQ(r.corrupt_records, 1u);

  // Damaged headers: the scan must search through megabytes of value.
  for (size_t damaged : {1, 2}) {
    bytes = image.bytes();
    bytes[image.records()[damaged].entry.offset + 1] ^= 0x01;
    ASSERT_OK(Scan(bytes, bytes.size(), 16, &visits, &r));
    std::vector<size_t> want;
    for (size_t i = 0; i < 5; i++) {
      if (i != damaged) want.push_back(i);
    }
    AssertVisits(visits, image, want);
    ASSERT_EQ(r.skipped_regions, 1u) << "record " << damaged;
    ASSERT_EQ(r.valid_end, bytes.size());
  }

  // Torn inside the large value: cut at its start.
  ASSERT_OK(Scan(image.bytes(), image.records()[1].entry.offset + hsize + (4 << 20) + 5, 16, &visits, &r));
  AssertVisits(visits, image, {0});
  ASSERT_EQ(r.valid_end, image.records()[1].entry.offset);
}

}  // namespace oyster
