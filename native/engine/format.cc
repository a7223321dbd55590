#include "engine/format.h"

#include <algorithm>
#include <cstring>

#include "util/coding.h"
#include "util/crc32c.h"

namespace oyster {

// Blob header layout:
//   0 u64 magic | 8 u32 version | 12 u32 key_size | 16 u64 blob_id
//   24 u32 reserved (0) | 28 u32 CRC32C of bytes [0, 28)
void EncodeBlobHeader(const BlobHeader& h, char* dst) {
  std::memset(dst, 0, kBlobHeaderSize);
  EncodeFixed64(dst, kBlobMagic);
  EncodeFixed32(dst + 8, h.version);
  EncodeFixed32(dst + 12, h.key_size);
  EncodeFixed64(dst + 16, h.blob_id);
  EncodeFixed32(dst + 28, crc32c::Value(dst, 28));
}

Status DecodeBlobHeader(const char* src, BlobHeader* h) {
  if (DecodeFixed64(src) != kBlobMagic) return Status::Corruption("bad blob magic");
  if (DecodeFixed32(src + 28) != crc32c::Value(src, 28)) {
    return Status::Corruption("blob header checksum mismatch");
  }
  h->version = DecodeFixed32(src + 8);
  h->key_size = DecodeFixed32(src + 12);
  h->blob_id = DecodeFixed64(src + 16);
  if (h->version != kBlobFormatVersion && h->version != kBlobFormatV1) {
    return Status::NotSupported("blob format version " + std::to_string(h->version));
  }
  return Status::OK();
}

namespace {

// Where the key starts: the fields before it differ by the stamp.
size_t KeyOffset(uint32_t format) { return RecordFixedSize(format) - 8; }

}  // namespace

// Record header layout (K = key size), format 2:
//   0 u32 magic | 4 u8 flags | 5 3 bytes reserved (0) | 8 u64 offset
//   16 u64 timestamp | 24 u64 stamp | 32 u32 value_size | 36 K key
//   36+K u32 record CRC (header [0, 36+K) ++ value) | 40+K u32 header CRC ([0, 40+K))
// Format 1 has no stamp: value_size at 24, the key at 28, the CRCs at 28+K and 32+K.
namespace {

// Every field before the CRCs.
void EncodeHeaderPrefix(uint8_t flags, uint64_t offset, const Version& version, const char* key, size_t key_size,
                        uint32_t value_size, char* dst) {
  EncodeFixed32(dst, kRecordMagic);
  dst[4] = static_cast<char>(flags);
  dst[5] = dst[6] = dst[7] = 0;
  EncodeFixed64(dst + 8, offset);
  EncodeFixed64(dst + 16, version.timestamp);
  EncodeFixed64(dst + 24, version.stamp);
  EncodeFixed32(dst + 32, value_size);
  if (key != nullptr) {
    std::memcpy(dst + 36, key, key_size);
  } else {
    std::memset(dst + 36, 0, key_size);
  }
}

void EncodeHeaderCrcs(size_t key_size, uint32_t record_crc, char* dst) {
  EncodeFixed32(dst + 36 + key_size, record_crc);
  EncodeFixed32(dst + 40 + key_size, crc32c::Value(dst, 40 + key_size));
}

}  // namespace

void EncodeRecordHeader(uint8_t flags, uint64_t offset, const Version& version, const char* key,
                        size_t key_size, const char* value, uint32_t value_size, char* dst, char* block_crcs) {
  EncodeHeaderPrefix(flags, offset, version, key, key_size, value_size, dst);
  const uint32_t prefix = crc32c::Value(dst, 36 + key_size);
  EncodeHeaderCrcs(key_size,
                   (flags & kFlagBlocks) ? EncodeBlockCrcs(prefix, value, value_size, block_crcs)
                                         : crc32c::Extend(prefix, value, value_size),
                   dst);
}

void EncodeRecordHeaderWithCrc(uint8_t flags, uint64_t offset, const Version& version, const char* key,
                               size_t key_size, uint32_t value_size, uint32_t record_crc, char* dst) {
  EncodeHeaderPrefix(flags, offset, version, key, key_size, value_size, dst);
  EncodeHeaderCrcs(key_size, record_crc, dst);
}

// A void record: no key (zeros), no version, no record CRC (0, never checked).
void EncodeVoidHeader(uint64_t offset, size_t key_size, uint32_t body_size, char* dst) {
  EncodeHeaderPrefix(kFlagVoid, offset, Version(), nullptr, key_size, body_size, dst);
  EncodeHeaderCrcs(key_size, 0, dst);
}

uint32_t EncodeBlockCrcs(uint32_t crc, const char* value, uint64_t n, char* dst) {
  for (uint64_t at = 0; at < n; at += kValueBlockSize, dst += 4) {
    const size_t len = static_cast<size_t>(std::min(kValueBlockSize, n - at));
    const uint32_t block = crc32c::Value(value + at, len);
    EncodeFixed32(dst, block);
    crc = crc32c::Combine(crc, block, len);
  }
  return crc;
}

uint32_t RecordCrcPrefix(uint32_t format, const char* header, size_t key_size) {
  return crc32c::Value(header, KeyOffset(format) + key_size);
}

bool RecordValueCrcMatches(uint32_t format, const char* header, size_t key_size, const char* value, size_t n,
                           uint32_t expected) {
  return crc32c::Extend(RecordCrcPrefix(format, header, key_size), value, n) == expected;
}

bool DecodeRecordHeader(uint32_t format, const char* src, size_t key_size, uint64_t at, RecordHeader* h) {
  const size_t key_at = KeyOffset(format);
  const size_t crcs_at = key_at + key_size;
  if (DecodeFixed32(src) != kRecordMagic) return false;
  if (DecodeFixed32(src + crcs_at + 4) != crc32c::Value(src, crcs_at + 4)) return false;
  h->flags = static_cast<uint8_t>(src[4]);
  h->offset = DecodeFixed64(src + 8);
  h->version.timestamp = DecodeFixed64(src + 16);
  h->version.stamp = format == kBlobFormatV1 ? 0 : DecodeFixed64(src + 24);
  h->value_size = DecodeFixed32(src + key_at - 4);
  h->key = src + key_at;
  h->record_crc = DecodeFixed32(src + crcs_at);
  // Format 1 knows tombstones only; a void record is nothing else; block
  // checksums belong to a value.
  const uint8_t known = format == kBlobFormatV1 ? kFlagTombstone : kKnownRecordFlags;
  if ((h->flags & ~known) != 0) return false;
  if ((h->flags & kFlagVoid) && h->flags != kFlagVoid) return false;
  if ((h->flags & kFlagBlocks) && (h->flags & kFlagTombstone)) return false;
  if (src[5] != 0 || src[6] != 0 || src[7] != 0) return false;
  if (h->offset != at) return false;
  if ((h->flags & kFlagTombstone) && h->value_size != 0) return false;
  return true;
}

std::string BlobFileName(const std::string& prefix, uint64_t id) {
  return prefix + "." + std::to_string(id) + ".blob";
}

std::string IndexFileName(const std::string& prefix, uint64_t id) {
  return prefix + "." + std::to_string(id) + ".index";
}

std::string TempIndexFileName(const std::string& prefix, uint64_t id) {
  return IndexFileName(prefix, id) + ".tmp";
}

std::string CompactedBlobFileName(const std::string& prefix, uint64_t id) { return BlobFileName(prefix, id) + ".new"; }

std::string CompactedIndexFileName(const std::string& prefix, uint64_t id) {
  return IndexFileName(prefix, id) + ".new";
}

FileKind ParseFileName(const std::string& name, const std::string& prefix, uint64_t* id) {
  if (name.size() <= prefix.size() + 1 || name.compare(0, prefix.size(), prefix) != 0 ||
      name[prefix.size()] != '.') {
    return FileKind::kOther;
  }
  size_t pos = prefix.size() + 1;
  size_t digits_end = pos;
  while (digits_end < name.size() && name[digits_end] >= '0' && name[digits_end] <= '9') digits_end++;
  size_t digits = digits_end - pos;
  if (digits == 0 || digits > 19) return FileKind::kOther;
  if (digits > 1 && name[pos] == '0') return FileKind::kOther;  // one spelling per id
  uint64_t v = 0;
  for (size_t i = pos; i < digits_end; i++) v = v * 10 + static_cast<uint64_t>(name[i] - '0');
  std::string rest = name.substr(digits_end);
  *id = v;
  if (rest == ".blob") return FileKind::kBlob;
  if (rest == ".index") return FileKind::kIndex;
  if (rest == ".index.tmp") return FileKind::kTempIndex;
  if (rest == ".blob.new") return FileKind::kCompactedBlob;
  if (rest == ".index.new") return FileKind::kCompactedIndex;
  return FileKind::kOther;
}

}  // namespace oyster
