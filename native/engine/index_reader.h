// IndexReader answers "where is the newest record of this key?" for a closed
// blob. It keeps only the bloom filter and one fence key per 4 KiB block in
// memory; a lookup costs at most one block read.

#ifndef OYSTER_ENGINE_INDEX_READER_H_
#define OYSTER_ENGINE_INDEX_READER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/bloom_filter.h"
#include "engine/index_format.h"
#include "util/cache.h"
#include "util/file_system.h"
#include "util/status.h"

namespace oyster {

class IndexReader {
 public:
  // Opens the index file of blob `blob_id`; Corruption if the file is damaged
  // or does not describe a blob of exactly `blob_size` bytes with `key_size` keys.
  // Blocks read by Find go through `cache` (none: every lookup reads its block).
  static Status Open(std::unique_ptr<File> file, size_t key_size, uint64_t blob_id,
                     uint64_t blob_size, std::unique_ptr<IndexReader>* reader,
                     std::shared_ptr<Cache> cache = nullptr);

  // For a file just written by the builder, without reading it back.
  IndexReader(std::unique_ptr<File> file, const IndexHeader& header, std::vector<char> fences,
              BloomFilter bloom, std::shared_ptr<Cache> cache);

  // *found is false when the key has no record in the blob. Corruption when
  // the block holding the key fails its checksum. With no_wait, WouldBlock
  // when that block is not in the page cache.
  Status Find(const char* key, uint64_t key_hash, IndexEntry* e, bool* found, bool no_wait = false) const;
  // False when Find would certainly not find the key (the bloom filter
  // says so): no block is read, nothing locked.
  bool MayContain(uint64_t key_hash) const { return header_.entry_count != 0 && bloom_.MayContain(key_hash); }

  // Calls fn for every entry in key order (tools and verification).
  Status ForEach(const std::function<void(const char* key, const IndexEntry& e)>& fn) const;

  const IndexHeader& header() const { return header_; }
  // Bytes of RAM held: fences plus bloom filter.
  size_t MemoryUsage() const { return fences_.capacity() + bloom_.bytes(); }
  size_t FilterMemoryUsage() const { return bloom_.bytes(); }
  uint64_t file_size() const { return header_.file_size(); }

 private:
  // Reads and verifies a block; through the cache for lookups, around it for scans.
  Status ReadBlock(uint64_t block, char* buf, bool no_wait, bool cached) const;
  const char* fence(uint64_t i) const { return fences_.data() + i * header_.key_size; }

  std::unique_ptr<File> file_;
  IndexHeader header_;
  std::vector<char> fences_;  // first key of each block, then the largest key
  BloomFilter bloom_;
  FileCache cache_;
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_INDEX_READER_H_
