#include "engine/bloom_filter.h"

#include <cstring>

namespace oyster {

uint32_t BloomProbes(uint32_t bits_per_key) {
  uint32_t k = static_cast<uint32_t>(bits_per_key * 69 / 100);
  if (k < 1) k = 1;
  if (k > 30) k = 30;
  return k;
}

uint64_t BloomBlocks(uint64_t n, uint32_t bits_per_key) {
  if (bits_per_key == 0 || n == 0) return 0;
  uint64_t bits = n * bits_per_key;
  return (bits + kBloomBlockBytes * 8 - 1) / (kBloomBlockBytes * 8);
}

BloomFilter::BloomFilter(uint64_t blocks, uint32_t probes)
    : blocks_(blocks), probes_(probes), bits_(blocks ? new Block[blocks] : nullptr) {
  if (blocks_) std::memset(bits_.get(), 0, bytes());
}

// Bit positions (docs/FORMAT.md, "Bloom filter"): the block is
// (hash >> 32) * blocks >> 32; inside it, probe i sets bit (h + i * delta) mod 512
// where h is the low 32 bits of the hash and delta = rotr32(h, 17) | 1 (odd,
// so that up to 512 probes never repeat a bit).
void BloomFilter::Add(uint64_t key_hash) {
  if (blocks_ == 0) return;
  Block& b = bits_[((key_hash >> 32) * blocks_) >> 32];
  uint32_t h = static_cast<uint32_t>(key_hash);
  const uint32_t delta = ((h >> 17) | (h << 15)) | 1;
  for (uint32_t i = 0; i < probes_; i++) {
    uint32_t bit = h & 511;
    b.words[bit >> 6] |= 1ull << (bit & 63);
    h += delta;
  }
}

bool BloomFilter::MayContain(uint64_t key_hash) const {
  if (blocks_ == 0) return true;
  const Block& b = bits_[((key_hash >> 32) * blocks_) >> 32];
  uint32_t h = static_cast<uint32_t>(key_hash);
  const uint32_t delta = ((h >> 17) | (h << 15)) | 1;
  for (uint32_t i = 0; i < probes_; i++) {
    uint32_t bit = h & 511;
    if ((b.words[bit >> 6] & (1ull << (bit & 63))) == 0) return false;
    h += delta;
  }
  return true;
}

}  // namespace oyster
