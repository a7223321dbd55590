// Byte layouts of blob files and their records (docs/FORMAT.md is the
// normative description; keep the two in step).

#ifndef OYSTER_ENGINE_FORMAT_H_
#define OYSTER_ENGINE_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/version.h"
#include "util/status.h"

namespace oyster {

// ---- Blob file header: 32 bytes at offset 0 of every blob file.
constexpr uint64_t kBlobMagic = 0x424F4C425453594Full;  // bytes "OYSTBLOB"
// The engine writes format 2 only. Format-1 blobs (records without a stamp)
// stay readable but are never appended to.
constexpr uint32_t kBlobFormatVersion = 2;
constexpr uint32_t kBlobFormatV1 = 1;
constexpr size_t kBlobHeaderSize = 32;

struct BlobHeader {
  uint32_t version = kBlobFormatVersion;
  uint32_t key_size = 0;
  uint64_t blob_id = 0;
};

// bob's storage engine (pearl) starts its blob files with this u64: its files
// share our directory layout, not our format, and are recognised to be refused.
constexpr uint64_t kPearlBlobMagic = 0x00000000DEAFABCDull;

void EncodeBlobHeader(const BlobHeader& h, char* dst /* kBlobHeaderSize bytes */);
// Corruption when magic or CRC do not match, NotSupported for a version
// other than 1 and 2.
Status DecodeBlobHeader(const char* src, BlobHeader* h);

// ---- Record: a header immediately followed by the value. The header is
// 44 + K bytes in format 2 and 36 + K in format 1, which has no stamp. Every
// function that reads records takes the format of the blob they are in.
constexpr uint32_t kRecordMagic = 0x4352594Fu;  // "OYRC"
constexpr uint8_t kFlagTombstone = 0x01;
constexpr uint8_t kKnownRecordFlags = kFlagTombstone;
constexpr size_t kRecordFixedSize = 44;  // format 2's header size without the key
constexpr uint64_t kMaxValueSize = 0xFFFFFFFFull;

// Requires format to be 1 or 2 (a blob header that DecodeBlobHeader accepted).
inline size_t RecordFixedSize(uint32_t format) { return format == kBlobFormatV1 ? 36 : kRecordFixedSize; }
inline size_t RecordHeaderSize(uint32_t format, size_t key_size) { return RecordFixedSize(format) + key_size; }

struct RecordHeader {
  uint8_t flags = 0;
  uint64_t offset = 0;  // absolute offset of this header in its blob
  Version version;      // stamp 0 in format 1
  uint32_t value_size = 0;
  const char* key = nullptr;  // key_size bytes, points into the decoded buffer
  uint32_t record_crc = 0;    // CRC32C of the header up to the key's end, then the value

  bool tombstone() const { return (flags & kFlagTombstone) != 0; }
};

// Fills dst (RecordHeaderSize(kBlobFormatVersion, key_size) bytes) with the
// format-2 header of a record whose value is `value`; computes both CRCs.
void EncodeRecordHeader(uint8_t flags, uint64_t offset, const Version& version, const char* key,
                        size_t key_size, const char* value, uint32_t value_size, char* dst);

// Parses and checks a header of blob format `format` found at file offset
// `at`: magic, header CRC, known flags, self-offset == at, tombstones without
// value. The value (and so record_crc) is not checked here; see
// RecordValueCrcMatches.
bool DecodeRecordHeader(uint32_t format, const char* src, size_t key_size, uint64_t at, RecordHeader* h);

// CRC over the header prefix then the value; compare with h.record_crc.
uint32_t RecordCrcPrefix(uint32_t format, const char* header, size_t key_size);
bool RecordValueCrcMatches(uint32_t format, const char* header, size_t key_size, const char* value, size_t n,
                           uint32_t expected);

// ---- File names inside a partition directory: "<prefix>.<id>.blob",
// "<prefix>.<id>.index", and "<prefix>.<id>.index.tmp" while an index is written.
std::string BlobFileName(const std::string& prefix, uint64_t id);
std::string IndexFileName(const std::string& prefix, uint64_t id);
std::string TempIndexFileName(const std::string& prefix, uint64_t id);

enum class FileKind { kBlob, kIndex, kTempIndex, kOther };
// Recognizes our own files for `prefix`; *id receives the blob id.
FileKind ParseFileName(const std::string& name, const std::string& prefix, uint64_t* id);

}  // namespace oyster

#endif  // OYSTER_ENGINE_FORMAT_H_
