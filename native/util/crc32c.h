// CRC-32C (Castagnoli), the checksum of every on-disk structure. Uses the
// SSE4.2 crc32 instruction when the CPU has it, on longer inputs together
// with carry-less multiplication when it has that (VPCLMULQDQ on 32-byte
// registers from 128 bytes, else PCLMULQDQ on 16-byte ones from 1664), and a
// table otherwise. All give the same values (check value of "123456789" is
// 0xE3069283).

#ifndef OYSTER_UTIL_CRC32C_H_
#define OYSTER_UTIL_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace oyster {
namespace crc32c {

// Returns the CRC of concat(A, data[0,n)) where init_crc is the CRC of A.
uint32_t Extend(uint32_t init_crc, const char* data, size_t n);

inline uint32_t Value(const char* data, size_t n) { return Extend(0, data, n); }

// Returns the CRC of concat(A, B) where crc_a is the CRC of A and crc_b the
// CRC of B, which is len_b (< 2^61) bytes long; B's bytes are not needed.
// Costs one multiplication of 32-bit polynomials per bit set in len_b, not
// work per byte: a value's block checksums and its record CRC come from one
// pass over its bytes.
uint32_t Combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

// True when a hardware path is in use (reported in engine stats).
bool HardwareAccelerated();

}  // namespace crc32c
}  // namespace oyster

#endif  // OYSTER_UTIL_CRC32C_H_
