#include "tools/blob_inspection.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/active_index.h"
#include "engine/blob_scanner.h"
#include "engine/format.h"
#include "engine/index_reader.h"
#include "util/coding.h"
#include "util/file_system.h"
#include "util/hash.h"

namespace oyster {
namespace {

std::string Hex(const char* key, size_t n) {
  static const char kDigits[] = "0123456789ABCDEF";
  std::string s;
  for (size_t i = 0; i < n; i++) {
    s += kDigits[static_cast<unsigned char>(key[i]) >> 4];
    s += kDigits[static_cast<unsigned char>(key[i]) & 15];
  }
  return s;
}

bool SameEntry(const IndexEntry& a, const IndexEntry& b) {
  return CompareVersions(a.version, b.version) == 0 && a.offset == b.offset && a.value_size == b.value_size &&
         a.flags == b.flags;
}

// The format in which more records of a blob with a lost header read
// (format 2 on a tie): the records themselves tell, as their sizes differ.
Status GuessFormat(const File& file, uint64_t size, size_t key_size, uint32_t* format) {
  uint64_t records[2] = {0, 0};
  const uint32_t formats[2] = {kBlobFormatVersion, kBlobFormatV1};
  for (int i = 0; i < 2; i++) {
    ScanResult scan;
    Status s = ScanBlob(file, formats[i], kBlobHeaderSize, size, key_size,
                        [](const char*, const IndexEntry&, bool) {}, &scan);
    if (!s.ok()) return s;
    records[i] = scan.records;
  }
  *format = records[1] > records[0] ? formats[1] : formats[0];
  return Status::OK();
}

void ClassifyHeader(const File& file, uint64_t id, const InspectOptions& options, BlobReport* r, Status* s) {
  r->key_size = options.key_size;
  if (r->size < kBlobHeaderSize) {
    r->header = HeaderState::kShort;
    r->header_problem = "shorter than a blob header (" + std::to_string(r->size) + " bytes): it never held a record";
    return;
  }
  char buf[kBlobHeaderSize];
  size_t n = 0;
  *s = file.Read(0, kBlobHeaderSize, buf, &n);
  if (!s->ok()) return;
  if (DecodeFixed64(buf) == kPearlBlobMagic) {
    r->header = HeaderState::kPearl;
    r->header_problem = "a pearl (bob) blob file, not Oyster's format";
    return;
  }
  BlobHeader h;
  Status hs = DecodeBlobHeader(buf, &h);
  if (hs.code() == Status::kNotSupported) {
    r->header = HeaderState::kUnsupportedVersion;
    r->version = h.version;
    r->header_problem = hs.message() + " is not supported by this build";
    return;
  }
  if (!hs.ok()) {
    r->header = HeaderState::kCorrupt;
    r->header_problem = hs.message();
    return;
  }
  r->version = h.version;
  r->key_size = h.key_size;
  if (h.blob_id != id) {
    r->header = HeaderState::kWrongId;
    r->header_problem = "the header names blob " + std::to_string(h.blob_id);
  } else if (options.key_size != 0 && h.key_size != options.key_size) {
    r->header = HeaderState::kWrongKeySize;
    r->header_problem = "holds " + std::to_string(h.key_size) + "-byte keys, the partition " +
                        std::to_string(options.key_size) + "-byte keys";
  }
}

// Every entry of the index must be the newest record of its key found by
// the scan, and every key of the scan must be found through the fences and
// the bloom filter as the engine would look it up.
// A block that fails its checksum makes the engine rebuild the index
// (kInvalid); a well-formed index with wrong entries would be served as it is
// (kMismatch).
Status VerifyIndex(const IndexReader& reader, const ActiveIndex& scanned, BlobReport* r) {
  const size_t k = scanned.key_size();
  std::string prev;
  uint64_t seen = 0, wrong = 0;
  std::string first;
  Status s = reader.ForEach([&](const char* key, const IndexEntry& e) {
    seen++;
    IndexEntry want;
    std::string why;
    if (!prev.empty() && std::memcmp(prev.data(), key, k) >= 0) {
      why = "keys out of order at key " + Hex(key, k);
    } else if (!scanned.Find(key, KeyHash64(key, k), &want)) {
      why = "entry for key " + Hex(key, k) + ", which the blob does not hold";
    } else if (!SameEntry(e, want)) {
      why = "entry for key " + Hex(key, k) + " points at offset " + std::to_string(e.offset) +
            ", the newest record is at " + std::to_string(want.offset);
    }
    prev.assign(key, k);
    if (why.empty()) return;
    if (wrong++ == 0) first = why;
  });
  for (uint32_t i = 0; s.ok() && i < scanned.size() && wrong == 0; i++) {
    IndexEntry e;
    bool found = false;
    s = reader.Find(scanned.key_at(i), scanned.hash_at(i), &e, &found);
    if (s.ok() && !(found && SameEntry(e, scanned.entry_at(i)))) {
      wrong++;
      first = "key " + Hex(scanned.key_at(i), k) + " is not found through the index";
    }
  }
  if (!s.ok()) {
    if (!s.IsCorruption()) return s;
    r->index = IndexState::kInvalid;
    r->index_problem = s.message();
    return Status::OK();
  }
  const IndexHeader& h = reader.header();
  std::string problem;
  if (wrong > 0) {
    problem = std::to_string(wrong) + " wrong entr" + (wrong == 1 ? "y" : "ies") + ", first: " + first;
  } else if (seen != scanned.size()) {
    problem = "the index has " + std::to_string(seen) + " entries, the blob " + std::to_string(scanned.size()) + " keys";
  } else if (h.records_total != r->records) {
    problem = "the index counts " + std::to_string(h.records_total) + " records, the blob holds " +
              std::to_string(r->records);
  } else if (r->records > 0 && CompareVersions(h.max_version(), r->max_version) != 0) {
    problem = "the index's largest version is " + h.max_version().ToString() + ", the blob's " +
              r->max_version.ToString();
  } else if (h.max_stamp != r->max_stamp) {
    problem = "the index's largest stamp is " + std::to_string(h.max_stamp) + ", the blob's " +
              std::to_string(r->max_stamp);
  }
  if (!problem.empty()) {
    r->index = IndexState::kMismatch;
    r->index_problem = problem;
  }
  return Status::OK();
}

Status InspectIndex(const std::string& index_path, uint64_t id, const ActiveIndex* scanned, BlobReport* r) {
  std::unique_ptr<File> file;
  Status s = OpenReadOnlyFile(index_path, &file);
  if (s.ok()) s = file->Size(&r->index_size);
  if (!s.ok()) return s;
  char hbuf[kIndexHeaderSize];
  size_t n = 0;
  s = file->Read(0, kIndexHeaderSize, hbuf, &n);
  if (!s.ok()) return s;
  r->index_header_valid = n == kIndexHeaderSize && DecodeIndexHeader(hbuf, &r->index_header).ok();
  if (n >= 12 && IndexHeaderVersion(hbuf) != 0 && IndexHeaderVersion(hbuf) < kIndexFormatVersion) {
    r->index = IndexState::kOutdated;
    r->index_problem = "index format " + std::to_string(IndexHeaderVersion(hbuf)) + ", which this build no longer reads";
    return Status::OK();
  }
  uint32_t k = r->key_size != 0 ? r->key_size : (r->index_header_valid ? r->index_header.key_size : 0);
  if (k == 0) {
    r->index = IndexState::kInvalid;
    r->index_problem = "unreadable, and the key size is unknown";
    return Status::OK();
  }
  std::unique_ptr<IndexReader> reader;
  s = IndexReader::Open(std::move(file), k, id, r->size, &reader);
  if (!s.ok()) {
    if (!s.IsCorruption()) return s;
    r->index = IndexState::kInvalid;
    r->index_problem = s.message();
    return Status::OK();
  }
  r->index = IndexState::kOk;
  if (scanned == nullptr) return Status::OK();
  s = VerifyIndex(*reader, *scanned, r);
  r->index_entries_verified = s.ok() && r->index != IndexState::kInvalid;
  return s;
}

}  // namespace

Status InspectBlob(const std::string& blob_path, const std::string& index_path, uint64_t id,
                   const InspectOptions& options, ToolProgress* progress, BlobReport* r,
                   std::unique_ptr<ActiveIndex>* scanned_out) {
  std::unique_ptr<File> file;
  Status s = OpenReadOnlyFile(blob_path, &file);
  if (s.ok()) s = file->Size(&r->size);
  if (!s.ok()) return s;
  ClassifyHeader(*file, id, options, r, &s);
  if (!s.ok()) return s;
  r->has_index = !index_path.empty();

  // Without a readable header, the index may still tell the key size.
  if (r->key_size == 0 && r->has_index) {
    s = InspectIndex(index_path, id, nullptr, r);
    if (!s.ok()) return s;
    if (r->index_header_valid) r->key_size = r->index_header.key_size;
  }

  const bool readable = r->header != HeaderState::kShort && r->header != HeaderState::kPearl &&
                        r->header != HeaderState::kUnsupportedVersion;
  if (readable && r->header == HeaderState::kCorrupt && r->key_size != 0) {
    s = GuessFormat(*file, r->size, r->key_size, &r->version);
    if (!s.ok()) return s;
  }
  std::unique_ptr<ActiveIndex> scanned;
  uint64_t reported = 0;
  if (options.scan && readable && r->key_size != 0) {
    const size_t k = r->key_size;
    const uint32_t format = r->version;
    scanned.reset(new ActiveIndex(k));
    std::vector<uint64_t> corrupt;  // offsets, ascending: the scan moves forward
    uint64_t min_ts = UINT64_MAX;
    ScanResult scan;
    s = ScanBlob(*file, format, kBlobHeaderSize, r->size, k,
                 [&](const char* key, const IndexEntry& e, bool value_ok) {
                   scanned->Insert(key, KeyHash64(key, k), e);
                   if (e.tombstone()) r->tombstones++;
                   if (!value_ok) corrupt.push_back(e.offset);
                   min_ts = std::min(min_ts, e.version.timestamp);
                   if (CompareVersions(e.version, r->max_version) > 0) r->max_version = e.version;
                   r->max_stamp = std::max(r->max_stamp, e.version.stamp);
                   uint64_t end = e.offset + RecordHeaderSize(format, k) + RecordBodySize(static_cast<uint8_t>(e.flags), e.value_size);
                   if (progress) progress->AddDone(end - reported);
                   reported = end;
                 },
                 &scan);
    if (!s.ok()) return s;
    r->scanned = true;
    r->records = scan.records;
    r->keys = scanned->size();
    r->corrupt_records = scan.corrupt_records;
    r->skipped_regions = scan.skipped_regions;
    r->skipped_bytes = scan.skipped_bytes;
    r->valid_end = scan.valid_end;
    r->tail_bytes = r->size - scan.valid_end;
    r->min_timestamp = scan.records ? min_ts : 0;
    for (uint32_t i = 0; i < scanned->size(); i++) {
      if (std::binary_search(corrupt.begin(), corrupt.end(), scanned->entry_at(i).offset)) r->corrupt_newest++;
    }
  }
  if (progress) progress->AddDone(r->size - reported);

  if (r->has_index) {
    r->index = IndexState::kAbsent;
    r->index_problem.clear();
    s = InspectIndex(index_path, id, scanned.get(), r);
    if (!s.ok()) return s;
  }
  if (scanned_out) *scanned_out = std::move(scanned);
  return Status::OK();
}

const char* HeaderStateName(HeaderState s) {
  switch (s) {
    case HeaderState::kOk: return "ok";
    case HeaderState::kShort: return "short";
    case HeaderState::kPearl: return "pearl";
    case HeaderState::kCorrupt: return "corrupt";
    case HeaderState::kUnsupportedVersion: return "unsupported-version";
    case HeaderState::kWrongId: return "wrong-id";
    case HeaderState::kWrongKeySize: return "wrong-key-size";
  }
  return "unknown";
}

const char* IndexStateName(IndexState s) {
  switch (s) {
    case IndexState::kAbsent: return "absent";
    case IndexState::kOk: return "ok";
    case IndexState::kOutdated: return "outdated";
    case IndexState::kInvalid: return "invalid";
    case IndexState::kMismatch: return "mismatch";
  }
  return "unknown";
}

}  // namespace oyster
