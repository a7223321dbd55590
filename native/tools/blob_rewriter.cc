#include "tools/blob_rewriter.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "engine/blob_scanner.h"
#include "engine/format.h"
#include "util/hash.h"

namespace oyster {
namespace {

constexpr size_t kWriteChunk = 4 << 20;

// Collects small records into large writes at the end of the new file.
class Appender {
 public:
  Appender(File* file, uint64_t offset) : file_(file), offset_(offset) {}

  Status Append(const char* data, size_t n) {
    if (buf_.size() + n > kWriteChunk) {
      Status s = Flush();
      if (!s.ok()) return s;
    }
    if (n >= kWriteChunk) {
      IoSlice slice{data, n};
      Status s = file_->Write(offset_, &slice, 1);
      if (s.ok()) offset_ += n;
      return s;
    }
    buf_.insert(buf_.end(), data, data + n);
    return Status::OK();
  }

  Status Flush() {
    if (buf_.empty()) return Status::OK();
    IoSlice slice{buf_.data(), buf_.size()};
    Status s = file_->Write(offset_, &slice, 1);
    if (s.ok()) offset_ += buf_.size();
    buf_.clear();
    return s;
  }

 private:
  File* const file_;
  uint64_t offset_;
  std::vector<char> buf_;
};

Status Copy(const File& src, uint32_t src_format, uint64_t src_size, uint32_t k, File* dst, uint64_t id,
            ToolProgress* progress, ActiveIndex* index, RewriteResult* result) {
  char header[kBlobHeaderSize];
  BlobHeader bh;
  bh.key_size = k;
  bh.blob_id = id;
  EncodeBlobHeader(bh, header);
  Appender out(dst, 0);
  Status s = out.Append(header, kBlobHeaderSize);
  if (!s.ok()) return s;

  const size_t src_hsize = RecordHeaderSize(src_format, k);
  const size_t hsize = RecordHeaderSize(kBlobFormatVersion, k);
  uint64_t pos = kBlobHeaderSize;  // where the next record goes in the new blob
  uint64_t copied = kBlobHeaderSize;  // bytes of the source copied (records grow from format 1)
  uint64_t reported = 0;
  ActiveIndex all(k);              // newest record of every key, corrupt ones included
  std::vector<uint64_t> corrupt;   // source offsets, ascending
  std::vector<char> record, new_header(hsize), blocks;
  ScanResult scan;
  Status visit = Status::OK();
  s = ScanBlob(src, src_format, kBlobHeaderSize, src_size, k,
               [&](const char* key, const IndexEntry& e, bool value_ok) {
                 // Header and value: block checksums are computed anew.
                 const uint64_t size = src_hsize + e.value_size;
                 const uint64_t body = RecordBodySize(static_cast<uint8_t>(e.flags), e.value_size);
                 if (progress) progress->AddDone(e.offset + src_hsize + body - reported);
                 reported = e.offset + src_hsize + body;
                 const uint64_t hash = KeyHash64(key, k);
                 all.Insert(key, hash, e);
                 if (!visit.ok()) return;
                 if (!value_ok) {
                   corrupt.push_back(e.offset);
                   result->corrupt_bytes += size;
                   return;
                 }
                 // Read the record again and check it once more: what is
                 // written must be exactly what was verified.
                 record.resize(size);
                 size_t n = 0;
                 visit = src.Read(e.offset, size, record.data(), &n);
                 if (!visit.ok()) return;
                 RecordHeader h;
                 const char* value = record.data() + src_hsize;
                 if (n != size || !DecodeRecordHeader(src_format, record.data(), k, e.offset, &h) ||
                     !RecordValueCrcMatches(src_format, record.data(), k, value, e.value_size, h.record_crc)) {
                   visit = Status::Corruption(src.path() + " changed while it was read");
                   return;
                 }
                 blocks.resize((h.flags & kFlagBlocks) ? 4 * ValueBlockCount(e.value_size) : 0);
                 EncodeRecordHeader(h.flags, pos, h.version, key, k, value, h.value_size, new_header.data(),
                                    blocks.data());
                 visit = out.Append(new_header.data(), hsize);
                 if (visit.ok()) visit = out.Append(value, e.value_size);
                 if (visit.ok() && (h.flags & kFlagBlocks)) {
                   visit = out.Append(blocks.data(), blocks.size());
                 }
                 if (!visit.ok()) return;
                 IndexEntry moved = e;
                 moved.offset = pos;
                 index->Insert(key, hash, moved);
                 pos += hsize + body;
                 copied += src_hsize + body;
                 result->max_stamp = std::max(result->max_stamp, h.version.stamp);
                 result->records++;
               },
               &scan);
  if (s.ok()) s = visit;
  if (s.ok()) s = out.Flush();
  if (s.ok()) s = dst->Sync();
  if (!s.ok()) return s;
  if (progress) progress->AddDone(src_size - reported);
  result->size = pos;
  result->corrupt_dropped = scan.corrupt_records;
  result->bytes_dropped = src_size - copied;
  for (uint32_t i = 0; i < all.size(); i++) {
    if (std::binary_search(corrupt.begin(), corrupt.end(), all.entry_at(i).offset)) result->corrupt_newest++;
  }
  return Status::OK();
}

}  // namespace

Status RewriteBlob(FileSystem* fs, const File& src, uint32_t src_format, uint64_t src_size, uint32_t key_size,
                   const std::string& dst_path, uint64_t id, ToolProgress* progress, ActiveIndex* index,
                   RewriteResult* result) {
  *result = RewriteResult();
  std::unique_ptr<File> dst;
  Status s = fs->OpenFile(dst_path, true, &dst);
  if (!s.ok()) return s;
  s = Copy(src, src_format, src_size, key_size, dst.get(), id, progress, index, result);
  if (!s.ok()) {
    dst.reset();
    fs->Remove(dst_path);  // best effort: a partial copy is of no use
  }
  return s;
}

}  // namespace oyster
