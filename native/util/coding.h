// Fixed-width little-endian encoding, the only integer encoding used on disk.

#ifndef OYSTER_UTIL_CODING_H_
#define OYSTER_UTIL_CODING_H_

#include <cstdint>
#include <cstring>

namespace oyster {

inline void EncodeFixed32(char* dst, uint32_t v) {
  for (int i = 0; i < 4; i++) dst[i] = static_cast<char>(v >> (8 * i));
}

inline void EncodeFixed64(char* dst, uint64_t v) {
  for (int i = 0; i < 8; i++) dst[i] = static_cast<char>(v >> (8 * i));
}

inline uint32_t DecodeFixed32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint32_t>(u[0]) | (static_cast<uint32_t>(u[1]) << 8) |
         (static_cast<uint32_t>(u[2]) << 16) | (static_cast<uint32_t>(u[3]) << 24);
}

inline uint64_t DecodeFixed64(const char* p) {
  return static_cast<uint64_t>(DecodeFixed32(p)) |
         (static_cast<uint64_t>(DecodeFixed32(p + 4)) << 32);
}

}  // namespace oyster

#endif  // OYSTER_UTIL_CODING_H_
