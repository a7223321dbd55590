#include "engine/bloom_filter.h"

#include <string>

#include "test/test_util.h"
#include "test/testharness.h"
#include "util/hash.h"

namespace oyster {
namespace {

uint64_t HashOf(uint64_t i) {
  const std::string k = test::Key(i, 16);
  return KeyHash64(k.data(), k.size());
}

bool BitSet(const BloomFilter& f, uint64_t block, uint32_t bit) {
  const unsigned char byte = static_cast<unsigned char>(f.data()[block * kBloomBlockBytes + bit / 8]);
  return (byte >> (bit % 8)) & 1;
}

}  // namespace

TEST(Bloom, EmptyFilterMayContainEverything) {
  BloomFilter none;
  BloomFilter zero(0, 6);
  for (uint64_t i = 0; i < 1000; i++) {
    ASSERT_TRUE(none.MayContain(HashOf(i)));
    ASSERT_TRUE(zero.MayContain(HashOf(i)));
  }
  ASSERT_EQ(none.bytes(), 0u);
  ASSERT_EQ(BloomBlocks(0, 10), 0u);  // no keys
  ASSERT_EQ(BloomBlocks(1000, 0), 0u);  // filter disabled
}

TEST(Bloom, Geometry) {
  ASSERT_EQ(BloomProbes(10), 6u);
  ASSERT_EQ(BloomProbes(1), 1u);   // at least one probe
  ASSERT_EQ(BloomProbes(0), 1u);
  ASSERT_EQ(BloomProbes(64), 30u);  // at most 30
  ASSERT_EQ(BloomBlocks(1, 10), 1u);
  ASSERT_EQ(BloomBlocks(51, 10), 1u);  // 510 bits
  ASSERT_EQ(BloomBlocks(52, 10), 2u);  // 520 bits
  ASSERT_EQ(BloomBlocks(100000, 10), 1954u);
  BloomFilter f(3, 6);
  ASSERT_EQ(f.bytes(), 3 * kBloomBlockBytes);
  for (size_t i = 0; i < f.bytes(); i++) ASSERT_EQ(f.data()[i], 0) << "byte " << i;
}

TEST(Bloom, NoFalseNegatives) {
  const uint64_t n = 100000;
  BloomFilter f(BloomBlocks(n, 10), BloomProbes(10));
  for (uint64_t i = 0; i < n; i++) f.Add(HashOf(i));
  for (uint64_t i = 0; i < n; i++) ASSERT_TRUE(f.MayContain(HashOf(i))) << "key " << i;
}

TEST(Bloom, FalsePositiveRate) {
  const uint64_t n = 100000;
  double rate[2];
  const uint32_t bits[2] = {10, 20};
  for (int j = 0; j < 2; j++) {
    BloomFilter f(BloomBlocks(n, bits[j]), BloomProbes(bits[j]));
    for (uint64_t i = 0; i < n; i++) f.Add(HashOf(i));
    uint64_t fp = 0;
    for (uint64_t i = n; i < 2 * n; i++) fp += f.MayContain(HashOf(i)) ? 1 : 0;
    rate[j] = static_cast<double>(fp) / n;
  }
  // A blocked filter at 10 bits/key is a little worse than the ideal 0.8 %.
  ASSERT_LT(rate[0], 0.02);
  ASSERT_LT(rate[1], rate[0] / 2);
}

// docs/FORMAT.md, section 5.3: "key-0001" in a one-block filter with 6
// probes sets exactly bits 392, 373, 354, 335, 316 and 297.
TEST(Bloom, FormatExample) {
  const std::string key = "key-0001";
  BloomFilter f(1, 6);
  f.Add(KeyHash64(key.data(), key.size()));
  for (uint32_t bit = 0; bit < 512; bit++) {
    const bool want = bit >= 297 && bit <= 392 && (bit - 297) % 19 == 0;
    ASSERT_EQ(BitSet(f, 0, bit), want) << "bit " << bit;
  }
  ASSERT_TRUE(f.MayContain(KeyHash64(key.data(), key.size())));
}

// The block is chosen by the high half of the hash, the bits by the low half.
TEST(Bloom, KeySetsBitsInOneBlockOnly) {
  const uint64_t blocks = 16;
  for (uint64_t i = 0; i < 100; i++) {
    BloomFilter f(blocks, 7);
    const uint64_t h = HashOf(i);
    f.Add(h);
    const uint64_t want = ((h >> 32) * blocks) >> 32;
    for (uint64_t b = 0; b < blocks; b++) {
      int set = 0;
      for (uint32_t bit = 0; bit < 512; bit++) set += BitSet(f, b, bit);
      if (b == want) {
        ASSERT_GE(set, 1);
        ASSERT_LE(set, 7);
      } else {
        ASSERT_EQ(set, 0) << "block " << b << " of key " << i;
      }
    }
  }
}

}  // namespace oyster
