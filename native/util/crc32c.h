// CRC-32C (Castagnoli), the checksum of every on-disk structure. Uses the
// SSE4.2 crc32 instruction when the CPU has it, a table otherwise; both give
// the same values (check value of "123456789" is 0xE3069283).

#ifndef OYSTER_UTIL_CRC32C_H_
#define OYSTER_UTIL_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace oyster {
namespace crc32c {

// Returns the CRC of concat(A, data[0,n)) where init_crc is the CRC of A.
uint32_t Extend(uint32_t init_crc, const char* data, size_t n);

inline uint32_t Value(const char* data, size_t n) { return Extend(0, data, n); }

// True when the hardware path is in use (reported in engine stats).
bool HardwareAccelerated();

}  // namespace crc32c
}  // namespace oyster

#endif  // OYSTER_UTIL_CRC32C_H_
