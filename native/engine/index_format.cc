#include "engine/index_format.h"

#include <cstring>

#include "util/coding.h"
#include "util/crc32c.h"

namespace oyster {

void EncodeIndexHeader(const IndexHeader& h, char* dst) {
  std::memset(dst, 0, kIndexHeaderSize);
  EncodeFixed64(dst + 0, kIndexMagic);
  EncodeFixed32(dst + 8, h.version);
  EncodeFixed32(dst + 12, h.key_size);
  EncodeFixed64(dst + 16, h.blob_id);
  EncodeFixed64(dst + 24, h.blob_size);
  EncodeFixed64(dst + 32, h.records_total);
  EncodeFixed64(dst + 40, h.entry_count);
  EncodeFixed64(dst + 48, h.min_timestamp);
  EncodeFixed64(dst + 56, h.max_timestamp);
  EncodeFixed32(dst + 64, h.entry_size);
  EncodeFixed32(dst + 68, h.block_size);
  EncodeFixed32(dst + 72, h.entries_per_block);
  EncodeFixed32(dst + 76, h.bloom_probes);
  EncodeFixed64(dst + 80, h.bloom_blocks);
  EncodeFixed64(dst + 88, h.block_count);
  EncodeFixed64(dst + 96, h.fences_offset);
  EncodeFixed64(dst + 104, h.bloom_offset);
  EncodeFixed64(dst + 112, h.blocks_offset);
  EncodeFixed64(dst + 120, h.max_stamp_of_newest);
  EncodeFixed64(dst + 128, h.max_stamp);
  EncodeFixed32(dst + 136, h.sections_crc);
  EncodeFixed32(dst + 140, crc32c::Value(dst, 140));
}

uint32_t IndexHeaderVersion(const char* src) {
  return DecodeFixed64(src) == kIndexMagic ? DecodeFixed32(src + 8) : 0;
}

Status DecodeIndexHeader(const char* src, IndexHeader* h) {
  if (DecodeFixed64(src) != kIndexMagic) return Status::Corruption("bad index magic");
  // Before the checksum, whose place depends on the version: an index of an
  // older format is named as such rather than called damaged.
  h->version = DecodeFixed32(src + 8);
  if (h->version == 1) return Status::Corruption("index format version 1 is no longer read");
  if (DecodeFixed32(src + 140) != crc32c::Value(src, 140)) {
    return Status::Corruption("index header checksum mismatch");
  }
  if (h->version != kIndexFormatVersion) {
    return Status::Corruption("unknown index format version " + std::to_string(h->version));
  }
  h->key_size = DecodeFixed32(src + 12);
  h->blob_id = DecodeFixed64(src + 16);
  h->blob_size = DecodeFixed64(src + 24);
  h->records_total = DecodeFixed64(src + 32);
  h->entry_count = DecodeFixed64(src + 40);
  h->min_timestamp = DecodeFixed64(src + 48);
  h->max_timestamp = DecodeFixed64(src + 56);
  h->entry_size = DecodeFixed32(src + 64);
  h->block_size = DecodeFixed32(src + 68);
  h->entries_per_block = DecodeFixed32(src + 72);
  h->bloom_probes = DecodeFixed32(src + 76);
  h->bloom_blocks = DecodeFixed64(src + 80);
  h->block_count = DecodeFixed64(src + 88);
  h->fences_offset = DecodeFixed64(src + 96);
  h->bloom_offset = DecodeFixed64(src + 104);
  h->blocks_offset = DecodeFixed64(src + 112);
  h->max_stamp_of_newest = DecodeFixed64(src + 120);
  h->max_stamp = DecodeFixed64(src + 128);
  h->sections_crc = DecodeFixed32(src + 136);

  // The checksum makes these failures unlikely, but a reader must never trust
  // sizes it has not checked: they drive allocations and reads. The bounds
  // also keep every product below in 64 bits.
  if (h->key_size < 1 || h->key_size > kMaxIndexKeySize || h->entry_count > kMaxIndexEntries ||
      h->records_total > kMaxIndexEntries * 4096) {
    return Status::Corruption("index header values out of range");
  }
  if (h->entry_size != IndexEntrySize(h->key_size) || h->block_size < 512 ||
      h->block_size > (1u << 20) ||
      h->entries_per_block != (h->block_size - kIndexBlockTrailer) / h->entry_size ||
      h->entries_per_block == 0) {
    return Status::Corruption("inconsistent index geometry");
  }
  if (h->block_count != (h->entry_count + h->entries_per_block - 1) / h->entries_per_block ||
      h->entry_count > h->records_total || h->bloom_probes > 30 ||
      h->fences_offset != kIndexHeaderSize ||
      h->bloom_offset != h->fences_offset + h->fences_size() ||
      h->blocks_offset < h->bloom_offset + h->bloom_blocks * 64 ||
      h->blocks_offset % h->block_size != 0 || h->bloom_blocks > (1ull << 32)) {
    return Status::Corruption("inconsistent index section offsets");
  }
  return Status::OK();
}

// Entry layout: K key | u64 timestamp | u64 stamp | u64 offset | u32 value_size | u32 flags.
void EncodeIndexEntry(const char* key, size_t key_size, const IndexEntry& e, char* dst) {
  std::memcpy(dst, key, key_size);
  EncodeFixed64(dst + key_size, e.version.timestamp);
  EncodeFixed64(dst + key_size + 8, e.version.stamp);
  EncodeFixed64(dst + key_size + 16, e.offset);
  EncodeFixed32(dst + key_size + 24, e.value_size);
  EncodeFixed32(dst + key_size + 28, e.flags);
}

void DecodeIndexEntry(const char* src, size_t key_size, IndexEntry* e) {
  e->version.timestamp = DecodeFixed64(src + key_size);
  e->version.stamp = DecodeFixed64(src + key_size + 8);
  e->offset = DecodeFixed64(src + key_size + 16);
  e->value_size = DecodeFixed32(src + key_size + 24);
  e->flags = DecodeFixed32(src + key_size + 28);
}

}  // namespace oyster
