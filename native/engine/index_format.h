// Byte layout of index files (docs/FORMAT.md, "Index file").

#ifndef OYSTER_ENGINE_INDEX_FORMAT_H_
#define OYSTER_ENGINE_INDEX_FORMAT_H_

#include <cstddef>
#include <cstdint>

#include "engine/index_entry.h"
#include "util/status.h"

namespace oyster {

constexpr uint64_t kIndexMagic = 0x58444E495453594Full;  // bytes "OYSTINDX"
// Version 1 (entries without a stamp) is not read any more: such a file is
// unusable like a damaged one, and rebuilt from its blob.
constexpr uint32_t kIndexFormatVersion = 2;
constexpr size_t kIndexHeaderSize = 144;
constexpr uint32_t kIndexBlockSize = 4096;
constexpr size_t kIndexEntryFixedSize = 32;  // entry size without the key
constexpr size_t kIndexBlockTrailer = 4;     // CRC32C at the end of each block

// Bounds a valid header stays within.
constexpr uint32_t kMaxIndexKeySize = 1024;
constexpr uint64_t kMaxIndexEntries = 1ull << 40;

inline size_t IndexEntrySize(size_t key_size) { return key_size + kIndexEntryFixedSize; }

struct IndexHeader {
  uint32_t version = kIndexFormatVersion;
  uint32_t key_size = 0;
  uint64_t blob_id = 0;
  uint64_t blob_size = 0;      // size of the blob file this index describes
  uint64_t records_total = 0;  // records in the blob, superseded versions and tombstones included
  uint64_t entry_count = 0;    // distinct keys = entries in the blocks
  uint64_t min_timestamp = 0;
  uint64_t max_timestamp = 0;        // timestamp of the blob's largest version
  uint64_t max_stamp_of_newest = 0;  // and its stamp
  uint64_t max_stamp = 0;            // the largest stamp of any record in the blob
  uint32_t entry_size = 0;
  uint32_t block_size = 0;
  uint32_t entries_per_block = 0;
  uint32_t bloom_probes = 0;
  uint64_t bloom_blocks = 0;
  uint64_t block_count = 0;
  uint64_t fences_offset = 0;
  uint64_t bloom_offset = 0;
  uint64_t blocks_offset = 0;
  uint32_t sections_crc = 0;  // CRC32C of the fence section followed by the bloom section

  Version max_version() const { return Version{max_timestamp, max_stamp_of_newest}; }
  uint64_t fences_size() const { return entry_count ? (block_count + 1) * key_size : 0; }
  uint64_t file_size() const { return blocks_offset + block_count * block_size; }
};

void EncodeIndexHeader(const IndexHeader& h, char* dst /* kIndexHeaderSize bytes */);
// Checks magic, version, header CRC and the internal consistency of the fields.
Status DecodeIndexHeader(const char* src, IndexHeader* h);
// The format version a header with the index magic claims, whatever else is
// wrong with it; 0 without the magic. Lets the tools tell a file of an older
// format from a damaged one.
uint32_t IndexHeaderVersion(const char* src /* at least 12 bytes */);

void EncodeIndexEntry(const char* key, size_t key_size, const IndexEntry& e, char* dst);
void DecodeIndexEntry(const char* src, size_t key_size, IndexEntry* e);

}  // namespace oyster

#endif  // OYSTER_ENGINE_INDEX_FORMAT_H_
