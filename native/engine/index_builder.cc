#include "engine/index_builder.h"

#include <errno.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/format.h"
#include "util/coding.h"
#include "util/crc32c.h"

namespace oyster {
namespace {

// Blocks are written in chunks of this many bytes to bound the builder's memory.
constexpr size_t kWriteChunk = 1 << 20;

}  // namespace

Status BuildIndexFile(FileSystem* fs, const IndexBuildParams& p, const ActiveIndex& index,
                      std::unique_ptr<IndexReader>* reader) {
  const size_t k = index.key_size();
  IndexHeader h;
  h.key_size = static_cast<uint32_t>(k);
  h.blob_id = p.blob_id;
  h.blob_size = p.blob_size;
  h.records_total = p.records_total;
  h.entry_count = index.size();
  h.entry_size = static_cast<uint32_t>(IndexEntrySize(k));
  h.block_size = kIndexBlockSize;
  h.entries_per_block = static_cast<uint32_t>((kIndexBlockSize - kIndexBlockTrailer) / h.entry_size);
  h.block_count = (h.entry_count + h.entries_per_block - 1) / h.entries_per_block;
  h.bloom_blocks = BloomBlocks(h.entry_count, p.bloom_bits_per_key);
  h.bloom_probes = h.bloom_blocks ? BloomProbes(p.bloom_bits_per_key) : 0;
  h.fences_offset = kIndexHeaderSize;
  h.bloom_offset = h.fences_offset + h.fences_size();
  uint64_t bloom_end = h.bloom_offset + h.bloom_blocks * kBloomBlockBytes;
  h.blocks_offset = (bloom_end + kIndexBlockSize - 1) / kIndexBlockSize * kIndexBlockSize;

  std::vector<uint32_t> order = index.SortedOrder();
  std::vector<char> fences(h.fences_size());
  BloomFilter bloom(h.bloom_blocks, h.bloom_probes);
  uint64_t min_ts = UINT64_MAX;
  Version max_version;
  uint64_t max_stamp = p.max_stamp;
  for (size_t i = 0; i < order.size(); i++) {
    uint32_t n = order[i];
    if (i % h.entries_per_block == 0) std::memcpy(&fences[i / h.entries_per_block * k], index.key_at(n), k);
    bloom.Add(index.hash_at(n));
    const Version& v = index.entry_at(n).version;
    min_ts = std::min(min_ts, v.timestamp);
    if (CompareVersions(v, max_version) > 0) max_version = v;
    max_stamp = std::max(max_stamp, v.stamp);
  }
  if (!order.empty()) std::memcpy(&fences[h.block_count * k], index.key_at(order.back()), k);
  h.min_timestamp = order.empty() ? 0 : min_ts;
  h.max_timestamp = max_version.timestamp;
  h.max_stamp_of_newest = max_version.stamp;
  h.max_stamp = max_stamp;
  uint32_t crc = crc32c::Value(fences.data(), fences.size());
  h.sections_crc = crc32c::Extend(crc, bloom.data(), bloom.bytes());

  const std::string tmp =
      JoinPath(p.dir, p.temp_name.empty() ? TempIndexFileName(p.prefix, p.blob_id) : p.temp_name);
  const std::string final_name =
      JoinPath(p.dir, p.file_name.empty() ? IndexFileName(p.prefix, p.blob_id) : p.file_name);
  std::unique_ptr<File> file;
  Status s = fs->OpenFile(tmp, true, &file);
  if (s.IsIOError() && s.err() == EEXIST) {
    // Left over by a crash during an earlier attempt; it was never renamed into place.
    s = fs->Remove(tmp);
    if (s.ok()) s = fs->OpenFile(tmp, true, &file);
  }
  if (!s.ok()) return s;

  std::vector<char> head(h.blocks_offset, 0);
  EncodeIndexHeader(h, head.data());
  if (!fences.empty()) std::memcpy(head.data() + h.fences_offset, fences.data(), fences.size());
  if (bloom.bytes()) std::memcpy(head.data() + h.bloom_offset, bloom.data(), bloom.bytes());
  IoSlice slice{head.data(), head.size()};
  s = file->Write(0, &slice, 1);

  std::vector<char> chunk;
  chunk.reserve(kWriteChunk);
  uint64_t offset = h.blocks_offset;
  for (uint64_t b = 0; s.ok() && b < h.block_count; b++) {
    size_t base = chunk.size();
    chunk.resize(base + h.block_size, 0);
    char* block = chunk.data() + base;
    uint64_t first = b * h.entries_per_block;
    uint64_t last = std::min<uint64_t>(first + h.entries_per_block, h.entry_count);
    for (uint64_t i = first; i < last; i++) {
      uint32_t n = order[i];
      EncodeIndexEntry(index.key_at(n), k, index.entry_at(n), block + (i - first) * h.entry_size);
    }
    size_t body = h.block_size - kIndexBlockTrailer;
    EncodeFixed32(block + body, crc32c::Value(block, body));
    if (chunk.size() + h.block_size > kWriteChunk || b + 1 == h.block_count) {
      IoSlice cs{chunk.data(), chunk.size()};
      s = file->Write(offset, &cs, 1);
      offset += chunk.size();
      chunk.clear();
    }
  }
  if (s.ok()) s = file->Sync();
  if (s.ok() && tmp != final_name) s = fs->Rename(tmp, final_name);
  if (s.ok()) s = fs->SyncDir(p.dir);
  if (!s.ok()) {
    file.reset();
    fs->Remove(tmp);  // best effort; a leftover is removed on the next attempt
    return s;
  }
  // Reopen under the final name so that errors name the file an operator sees.
  s = fs->OpenFile(final_name, false, &file);
  if (!s.ok()) return s;
  reader->reset(new IndexReader(std::move(file), h, std::move(fences), std::move(bloom), p.cache));
  return Status::OK();
}

}  // namespace oyster
