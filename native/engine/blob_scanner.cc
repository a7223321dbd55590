#include "engine/blob_scanner.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "engine/format.h"
#include "util/crc32c.h"

namespace oyster {
namespace {

constexpr size_t kWindow = 4 << 20;

// A read-ahead window over the file.
class Reader {
 public:
  Reader(const File& file, uint64_t file_size) : file_(file), file_size_(file_size) {}

  // Makes [pos, pos + n) available; false if the file ends before.
  Status Fetch(uint64_t pos, size_t n, const char** data, bool* ok) {
    *ok = false;
    if (pos + n > file_size_) return Status::OK();
    if (pos < start_ || pos + n > start_ + buf_.size()) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(std::max(n, kWindow), file_size_ - pos));
      buf_.resize(want);
      size_t got = 0;
      Status s = file_.Read(pos, want, buf_.data(), &got);
      if (!s.ok()) return s;
      buf_.resize(got);
      start_ = pos;
      if (got < n) return Status::OK();  // the file shrank under us
    }
    *data = buf_.data() + (pos - start_);
    *ok = true;
    return Status::OK();
  }

  // Extends crc over [pos, pos + n) without keeping more than one window.
  Status Crc(uint64_t pos, uint64_t n, uint32_t* crc, bool* ok) {
    while (n > 0) {
      size_t step = static_cast<size_t>(std::min<uint64_t>(n, kWindow));
      const char* p;
      Status s = Fetch(pos, step, &p, ok);
      if (!s.ok() || !*ok) return s;
      *crc = crc32c::Extend(*crc, p, step);
      pos += step;
      n -= step;
    }
    *ok = true;
    return Status::OK();
  }

  uint64_t file_size() const { return file_size_; }

 private:
  const File& file_;
  const uint64_t file_size_;
  std::vector<char> buf_;
  uint64_t start_ = 0;
};

// A record header that is valid at `pos` and whose body lies inside the file.
bool RecordAt(Reader* r, uint32_t format, uint64_t pos, size_t key_size, RecordHeader* h, const char** hdr,
              Status* s) {
  bool ok = false;
  const size_t hsize = RecordHeaderSize(format, key_size);
  *s = r->Fetch(pos, hsize, hdr, &ok);
  if (!s->ok() || !ok) return false;
  if (!DecodeRecordHeader(format, *hdr, key_size, pos, h)) return false;
  return pos + hsize + h->body_size() <= r->file_size();
}

// Next position after `from` holding a complete, valid record; file_size if none.
Status Resync(Reader* r, uint32_t format, uint64_t from, size_t key_size, uint64_t* next) {
  char magic[4];
  for (int i = 0; i < 4; i++) magic[i] = static_cast<char>(kRecordMagic >> (8 * i));
  uint64_t pos = from;
  while (pos + RecordHeaderSize(format, key_size) <= r->file_size()) {
    size_t span = static_cast<size_t>(std::min<uint64_t>(kWindow, r->file_size() - pos));
    const char* p;
    bool ok = false;
    Status s = r->Fetch(pos, span, &p, &ok);
    if (!s.ok()) return s;
    if (!ok) break;
    const char* hit = static_cast<const char*>(memmem(p, span, magic, sizeof(magic)));
    if (hit == nullptr) {
      pos += span > 3 ? span - 3 : span;  // a magic may straddle two windows
      continue;
    }
    uint64_t cand = pos + static_cast<uint64_t>(hit - p);
    RecordHeader h;
    const char* hdr;
    if (RecordAt(r, format, cand, key_size, &h, &hdr, &s)) {
      *next = cand;
      return Status::OK();
    }
    if (!s.ok()) return s;
    pos = cand + 1;
  }
  *next = r->file_size();
  return Status::OK();
}

}  // namespace

Status ScanBlob(const File& file, uint32_t format, uint64_t data_start, uint64_t file_size, size_t key_size,
                const ScanVisitor& visit, ScanResult* result) {
  *result = ScanResult();
  Reader r(file, file_size);
  const size_t hsize = RecordHeaderSize(format, key_size);
  uint64_t pos = data_start;
  result->valid_end = data_start;
  while (pos < file_size) {
    RecordHeader h;
    const char* hdr;
    Status s;
    if (!RecordAt(&r, format, pos, key_size, &h, &hdr, &s)) {
      if (!s.ok()) return s;
      // Not a record: damage in the middle of the blob if a valid record
      // follows, otherwise the torn tail of an interrupted write.
      uint64_t next = 0;
      s = Resync(&r, format, pos + 1, key_size, &next);
      if (!s.ok()) return s;
      if (next >= file_size) break;
      result->skipped_regions++;
      result->skipped_bytes += next - pos;
      pos = next;
      continue;
    }
    if (h.is_void()) {
      result->void_records++;
      result->void_bytes += hsize + h.body_size();
      pos += hsize + h.body_size();
      result->valid_end = pos;
      continue;
    }
    // Copy what the visitor needs before the window moves for the value.
    std::string key(h.key, key_size);
    uint32_t crc = RecordCrcPrefix(format, hdr, key_size);
    IndexEntry e;
    e.version = h.version;
    e.offset = pos;
    e.value_size = h.value_size;
    e.flags = h.flags;
    uint32_t expected = h.record_crc;
    bool ok = false;
    s = r.Crc(pos + hsize, h.value_size, &crc, &ok);
    if (!s.ok()) return s;
    if (!ok) break;  // cannot happen: RecordAt checked the value lies inside the file
    bool value_ok = crc == expected;
    if (!value_ok) result->corrupt_records++;
    result->records++;
    visit(key.data(), e, value_ok);
    pos += hsize + h.body_size();
    result->valid_end = pos;
  }
  return Status::OK();
}

}  // namespace oyster
