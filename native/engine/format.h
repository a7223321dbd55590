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

// ---- Record: a header immediately followed by its body: the value, then,
// for values over one block, the CRC32C of each block of the value. The
// header is 44 + K bytes in format 2 and 36 + K in format 1, which has no
// stamp. Every function that reads records takes the format of the blob
// they are in.
constexpr uint32_t kRecordMagic = 0x4352594Fu;  // "OYRC"
constexpr uint8_t kFlagTombstone = 0x01;
// Space a streamed write reserved and has not filled (yet, or ever): the
// body is value_size bytes of no meaning, the record holds no key.
constexpr uint8_t kFlagVoid = 0x02;
// The value is followed by the CRC32C (u32 LE) of each kValueBlockSize
// block of it, so that a part of the value is checked by reading that part.
constexpr uint8_t kFlagBlocks = 0x04;
constexpr uint8_t kKnownRecordFlags = kFlagTombstone | kFlagVoid | kFlagBlocks;
constexpr size_t kRecordFixedSize = 44;  // format 2's header size without the key
constexpr uint64_t kMaxValueSize = 0xFFFFFFFFull;
constexpr uint64_t kValueBlockSize = 64 * 1024;

inline uint64_t ValueBlockCount(uint64_t value_size) { return (value_size + kValueBlockSize - 1) / kValueBlockSize; }
// Whether the engine writes a value of this size with block checksums.
inline bool ValueHasBlocks(uint64_t value_size) { return value_size > kValueBlockSize; }
// The bytes after a record's header (a void record's value_size is all of them).
inline uint64_t RecordBodySize(uint8_t flags, uint64_t value_size) {
  return (flags & kFlagBlocks) ? value_size + 4 * ValueBlockCount(value_size) : value_size;
}
// The largest value a streamed write takes: its reservation, block
// checksums included, must fit a void record's u32 value_size.
constexpr uint64_t kMaxStreamedValueSize = kMaxValueSize - 4 * ((kMaxValueSize + kValueBlockSize - 1) / kValueBlockSize);

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
  bool is_void() const { return (flags & kFlagVoid) != 0; }
  uint64_t body_size() const { return RecordBodySize(flags, value_size); }
};

// Fills dst (RecordHeaderSize(kBlobFormatVersion, key_size) bytes) with the
// format-2 header of a record whose value is `value`; computes both CRCs.
// When flags has kFlagBlocks, also fills block_crcs with the value's block
// checksums (EncodeBlockCrcs), from the same pass over the value.
void EncodeRecordHeader(uint8_t flags, uint64_t offset, const Version& version, const char* key,
                        size_t key_size, const char* value, uint32_t value_size, char* dst,
                        char* block_crcs = nullptr);
// The same with the record CRC given: RecordCrcPrefix of this header
// extended over the value, as a streamed write computes it piece by piece.
void EncodeRecordHeaderWithCrc(uint8_t flags, uint64_t offset, const Version& version, const char* key,
                               size_t key_size, uint32_t value_size, uint32_t record_crc, char* dst);
// The header of a void record at `offset` whose body is body_size bytes.
void EncodeVoidHeader(uint64_t offset, size_t key_size, uint32_t body_size, char* dst);
// The block checksums of value[0, n): 4 * ValueBlockCount(n) bytes at dst.
// Returns crc extended over value[0, n) (crc32c::Extend), computed from the
// block checksums instead of a second pass over the bytes.
uint32_t EncodeBlockCrcs(uint32_t crc, const char* value, uint64_t n, char* dst);

// Parses and checks a header of blob format `format` found at file offset
// `at`: magic, header CRC, known flags and their combinations, self-offset
// == at, tombstones without value. The value (and so record_crc) is not
// checked here; see RecordValueCrcMatches.
bool DecodeRecordHeader(uint32_t format, const char* src, size_t key_size, uint64_t at, RecordHeader* h);

// CRC over the header prefix then the value; compare with h.record_crc.
// The prefix depends only on the header's fields before the CRCs.
uint32_t RecordCrcPrefix(uint32_t format, const char* header, size_t key_size);
bool RecordValueCrcMatches(uint32_t format, const char* header, size_t key_size, const char* value, size_t n,
                           uint32_t expected);

// The bytes a record of blob format `format` takes in its blob, header included.
inline uint64_t RecordSize(uint32_t format, size_t key_size, uint8_t flags, uint64_t value_size) {
  return RecordHeaderSize(format, key_size) + RecordBodySize(flags, value_size);
}

// ---- File names inside a partition directory: "<prefix>.<id>.blob",
// "<prefix>.<id>.index", "<prefix>.<id>.index.tmp" while an index is written,
// and "<prefix>.<id>.blob.new" and "<prefix>.<id>.index.new" while a
// compaction writes the blob's replacement (docs/FORMAT.md §12).
std::string BlobFileName(const std::string& prefix, uint64_t id);
std::string IndexFileName(const std::string& prefix, uint64_t id);
std::string TempIndexFileName(const std::string& prefix, uint64_t id);
std::string CompactedBlobFileName(const std::string& prefix, uint64_t id);
std::string CompactedIndexFileName(const std::string& prefix, uint64_t id);

enum class FileKind { kBlob, kIndex, kTempIndex, kCompactedBlob, kCompactedIndex, kOther };
// Recognizes our own files for `prefix`; *id receives the blob id.
FileKind ParseFileName(const std::string& name, const std::string& prefix, uint64_t* id);

}  // namespace oyster

#endif  // OYSTER_ENGINE_FORMAT_H_
