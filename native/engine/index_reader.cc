#include "engine/index_reader.h"

#include <cstring>
#include <string>

#include "util/coding.h"
#include "util/crc32c.h"

namespace oyster {

IndexReader::IndexReader(std::unique_ptr<File> file, const IndexHeader& header,
                         std::vector<char> fences, BloomFilter bloom, std::shared_ptr<Cache> cache)
    : file_(std::move(file)),
      header_(header),
      fences_(std::move(fences)),
      bloom_(std::move(bloom)),
      cache_(std::move(cache)) {}

Status IndexReader::Open(std::unique_ptr<File> file, size_t key_size, uint64_t blob_id,
                         uint64_t blob_size, std::unique_ptr<IndexReader>* reader,
                         std::shared_ptr<Cache> cache) {
  char hbuf[kIndexHeaderSize];
  size_t n = 0;
  Status s = file->Read(0, kIndexHeaderSize, hbuf, &n);
  if (!s.ok()) return s;
  if (n != kIndexHeaderSize) return Status::Corruption("index file shorter than its header");
  IndexHeader h;
  s = DecodeIndexHeader(hbuf, &h);
  if (!s.ok()) return s;
  if (h.key_size != key_size) return Status::Corruption("index key size differs from the engine's");
  if (h.blob_id != blob_id) return Status::Corruption("index belongs to another blob");
  if (h.blob_size != blob_size) return Status::Corruption("index does not match the blob's size");
  uint64_t actual = 0;
  s = file->Size(&actual);
  if (!s.ok()) return s;
  if (actual != h.file_size()) return Status::Corruption("index file has the wrong size");

  // Fences and filter are adjacent: one read, one checksum.
  std::vector<char> fences(h.fences_size());
  BloomFilter bloom(h.bloom_blocks, h.bloom_probes);
  uint32_t crc = 0;
  if (!fences.empty()) {
    s = file->Read(h.fences_offset, fences.size(), fences.data(), &n);
    if (!s.ok()) return s;
    if (n != fences.size()) return Status::Corruption("index fences truncated");
    crc = crc32c::Extend(crc, fences.data(), fences.size());
  }
  if (bloom.bytes() > 0) {
    s = file->Read(h.bloom_offset, bloom.bytes(), bloom.mutable_data(), &n);
    if (!s.ok()) return s;
    if (n != bloom.bytes()) return Status::Corruption("index bloom filter truncated");
    crc = crc32c::Extend(crc, bloom.data(), bloom.bytes());
  }
  if (crc != h.sections_crc) return Status::Corruption("index fences or filter checksum mismatch");
  reader->reset(new IndexReader(std::move(file), h, std::move(fences), std::move(bloom), std::move(cache)));
  return Status::OK();
}

Status IndexReader::ReadBlock(uint64_t block, char* buf, bool no_wait, bool cached) const {
  const uint64_t offset = header_.blocks_offset + block * header_.block_size;
  const bool hit = cached && cache_.Lookup(offset, header_.block_size, buf, no_wait);
  if (!hit) {
    size_t n = 0;
    Status s = no_wait ? file_->ReadNoWait(offset, header_.block_size, buf, &n)
                       : file_->Read(offset, header_.block_size, buf, &n);
    if (!s.ok()) return s;
    if (n != header_.block_size) return Status::Corruption("index block truncated in " + file_->path());
  }
  // Cached blocks are checked as read ones are: memory can fail too.
  size_t body = header_.block_size - kIndexBlockTrailer;
  if (DecodeFixed32(buf + body) != crc32c::Value(buf, body)) {
    return Status::Corruption("index block " + std::to_string(block) + " checksum mismatch in " +
                              file_->path());
  }
  if (cached && !hit) cache_.Insert(offset, buf, header_.block_size, no_wait);
  return Status::OK();
}

Status IndexReader::Find(const char* key, uint64_t key_hash, IndexEntry* e, bool* found, bool no_wait) const {
  *found = false;
  const size_t k = header_.key_size;
  if (!MayContain(key_hash)) return Status::OK();
  if (std::memcmp(key, fence(0), k) < 0 || std::memcmp(key, fence(header_.block_count), k) > 0) {
    return Status::OK();
  }
  // Last block whose first key is <= key.
  uint64_t lo = 0, hi = header_.block_count;  // invariant: fence(lo) <= key, answer in [lo, hi)
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (std::memcmp(fence(mid), key, k) <= 0) lo = mid; else hi = mid;
  }
  // Lookups are frequent and blocks small: reuse one buffer per thread.
  thread_local std::vector<char> buf;
  buf.resize(header_.block_size);
  Status s = ReadBlock(lo, buf.data(), no_wait, /*cached=*/true);
  if (!s.ok()) return s;
  uint64_t in_block = header_.entries_per_block;
  if (lo == header_.block_count - 1) in_block = header_.entry_count - lo * header_.entries_per_block;
  uint64_t l = 0, r = in_block;
  while (l < r) {
    uint64_t mid = l + (r - l) / 2;
    const char* p = buf.data() + mid * header_.entry_size;
    int c = std::memcmp(p, key, k);
    if (c == 0) {
      DecodeIndexEntry(p, k, e);
      *found = true;
      return Status::OK();
    }
    if (c < 0) l = mid + 1; else r = mid;
  }
  return Status::OK();
}

Status IndexReader::ForEach(const std::function<void(const char*, const IndexEntry&)>& fn) const {
  std::unique_ptr<char[]> buf(new char[header_.block_size]);
  uint64_t left = header_.entry_count;
  for (uint64_t b = 0; b < header_.block_count; b++) {
    Status s = ReadBlock(b, buf.get(), /*no_wait=*/false, /*cached=*/false);
    if (!s.ok()) return s;
    uint64_t n = left < header_.entries_per_block ? left : header_.entries_per_block;
    for (uint64_t i = 0; i < n; i++) {
      const char* p = buf.get() + i * header_.entry_size;
      IndexEntry e;
      DecodeIndexEntry(p, header_.key_size, &e);
      fn(p, e);
    }
    left -= n;
  }
  return Status::OK();
}

}  // namespace oyster
