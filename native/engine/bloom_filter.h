// A blocked bloom filter: every key sets k bits inside one 64-byte block, so
// a lookup touches one cache line. Closed blobs keep only this filter and the
// sparse fences in memory, which is what bounds RAM per stored record.

#ifndef OYSTER_ENGINE_BLOOM_FILTER_H_
#define OYSTER_ENGINE_BLOOM_FILTER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace oyster {

// Filters are written to index files as their in-memory bytes; the format
// defines bit b of a block as bit (b & 7) of byte (b >> 3), i.e. little-endian words.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "bloom filter bytes assume little-endian");

constexpr size_t kBloomBlockBytes = 64;

// Probes for `bits_per_key` (about 0.69 bits per probe is optimal).
uint32_t BloomProbes(uint32_t bits_per_key);
// Blocks for n keys at bits_per_key; 0 disables the filter.
uint64_t BloomBlocks(uint64_t n, uint32_t bits_per_key);

class BloomFilter {
 public:
  // An empty filter (no blocks) answers "may contain" for every key.
  BloomFilter() = default;
  BloomFilter(uint64_t blocks, uint32_t probes);

  BloomFilter(BloomFilter&&) = default;
  BloomFilter& operator=(BloomFilter&&) = default;

  void Add(uint64_t key_hash);
  bool MayContain(uint64_t key_hash) const;

  uint64_t blocks() const { return blocks_; }
  uint32_t probes() const { return probes_; }
  size_t bytes() const { return static_cast<size_t>(blocks_ * kBloomBlockBytes); }
  const char* data() const { return reinterpret_cast<const char*>(bits_.get()); }
  char* mutable_data() { return reinterpret_cast<char*>(bits_.get()); }

 private:
  struct alignas(64) Block {
    uint64_t words[8];
  };
  static_assert(sizeof(Block) == kBloomBlockBytes, "bloom block must be one cache line");

  uint64_t blocks_ = 0;
  uint32_t probes_ = 0;
  std::unique_ptr<Block[]> bits_;
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_BLOOM_FILTER_H_
