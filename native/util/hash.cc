#include "util/hash.h"

#include <cstring>

#include "util/coding.h"

namespace oyster {
namespace {

// MurmurHash3's 64-bit finalizer.
inline uint64_t Fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xFF51AFD7ED558CCDull;
  k ^= k >> 33;
  k *= 0xC4CEB9FE1A85EC53ull;
  k ^= k >> 33;
  return k;
}

}  // namespace

uint64_t KeyHash64(const char* key, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) h = Fmix64(h ^ DecodeFixed64(key + i));
  if (i < n) {
    char last[8] = {0};
    std::memcpy(last, key + i, n - i);
    h = Fmix64(h ^ DecodeFixed64(last));
  }
  return Fmix64(h ^ static_cast<uint64_t>(n));
}

}  // namespace oyster
