#include "util/crc32c.h"

#include <cstring>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <nmmintrin.h>
#define OYSTER_CRC32C_X86 1
#endif

namespace oyster {
namespace crc32c {
namespace {

// Reflected polynomial of CRC-32C.
constexpr uint32_t kPoly = 0x82F63B78u;

struct Tables {
  uint32_t t[8][256];
  Tables() {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
      for (int s = 1; s < 8; s++) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
    }
  }
};

const Tables& GetTables() {
  static const Tables tables;
  return tables;
}

uint32_t ExtendPortable(uint32_t crc, const char* data, size_t n) {
  const Tables& tb = GetTables();
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  while (n >= 8) {
    uint32_t lo;
    uint32_t hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    lo = __builtin_bswap32(lo);
    hi = __builtin_bswap32(hi);
#endif
    lo ^= c;
    c = tb.t[7][lo & 0xFF] ^ tb.t[6][(lo >> 8) & 0xFF] ^ tb.t[5][(lo >> 16) & 0xFF] ^
        tb.t[4][lo >> 24] ^ tb.t[3][hi & 0xFF] ^ tb.t[2][(hi >> 8) & 0xFF] ^
        tb.t[1][(hi >> 16) & 0xFF] ^ tb.t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = tb.t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
  return ~c;
}

// Appending n zero bytes to a message is a linear map of its CRC register:
// Shifter holds that map for one n, byte-sliced into four tables, so that
// the CRCs of consecutive blocks computed independently can be joined:
// crc(A || B) = Shift_len(B)(crc(A)) ^ crc_from_zero(B).
class Shifter {
 public:
  explicit Shifter(size_t zero_bytes) {
    uint32_t op[32];
    ZerosOperator(zero_bytes, op);
    for (uint32_t i = 0; i < 256; i++) {
      for (int k = 0; k < 4; k++) t_[k][i] = Times(op, i << (8 * k));
    }
  }

  uint32_t Shift(uint32_t crc) const {
    return t_[0][crc & 0xFF] ^ t_[1][(crc >> 8) & 0xFF] ^ t_[2][(crc >> 16) & 0xFF] ^ t_[3][crc >> 24];
  }

 private:
  // A 32x32 matrix over GF(2) (one column per bit) times a vector.
  static uint32_t Times(const uint32_t* mat, uint32_t vec) {
    uint32_t sum = 0;
    for (; vec != 0; vec >>= 1, mat++) {
      if (vec & 1) sum ^= *mat;
    }
    return sum;
  }

  static void Square(const uint32_t* mat, uint32_t* out) {
    for (int n = 0; n < 32; n++) out[n] = Times(mat, mat[n]);
  }

  // The map of appending `bytes` zero bytes (a power of two) to a message.
  static void ZerosOperator(size_t bytes, uint32_t* out) {
    uint32_t a[32], b[32];
    a[0] = kPoly;  // one zero bit
    for (int n = 1; n < 32; n++) a[n] = 1u << (n - 1);
    Square(a, b);  // two bits
    Square(b, a);  // four bits
    Square(a, b);  // one byte
    uint32_t* cur = b;
    uint32_t* other = a;
    for (; bytes > 1; bytes >>= 1) {
      Square(cur, other);
      std::swap(cur, other);
    }
    std::memcpy(out, cur, sizeof(a));
  }

  uint32_t t_[4][256];
};

#ifdef OYSTER_CRC32C_X86
// The crc32 instruction has a latency of three cycles and a throughput of
// one per cycle: three independent streams over adjacent blocks keep it
// busy, and their CRCs are joined by Shifter. Blocks of kLong bytes for
// long inputs, kShort for the rest, single words and bytes at the end.
constexpr size_t kLong = 8192;
constexpr size_t kShort = 256;

const Shifter& LongShifter() {
  static const Shifter s(kLong);
  return s;
}

const Shifter& ShortShifter() {
  static const Shifter s(kShort);
  return s;
}

__attribute__((target("sse4.2"))) inline uint64_t Word(uint64_t crc, const unsigned char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return _mm_crc32_u64(crc, w);
}

__attribute__((target("sse4.2"))) uint32_t ExtendSse42(uint32_t crc, const char* data, size_t n) {
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  uint64_t c0 = ~crc & 0xFFFFFFFFu;
  // Words from an 8-byte boundary on.
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c0 = _mm_crc32_u8(static_cast<uint32_t>(c0), *p++);
    n--;
  }
  for (const auto& [block, shifter] : {std::pair<size_t, const Shifter*>{kLong, &LongShifter()}, {kShort, &ShortShifter()}}) {
    while (n >= 3 * block) {
      uint64_t c1 = 0, c2 = 0;
      for (const unsigned char* end = p + block; p < end; p += 8) {
        c0 = Word(c0, p);
        c1 = Word(c1, p + block);
        c2 = Word(c2, p + 2 * block);
      }
      c0 = shifter->Shift(static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c1);
      c0 = shifter->Shift(static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c2);
      p += 2 * block;
      n -= 3 * block;
    }
  }
  for (; n >= 8; n -= 8, p += 8) c0 = Word(c0, p);
  uint32_t c = static_cast<uint32_t>(c0);
  while (n-- > 0) c = _mm_crc32_u8(c, *p++);
  return ~c;
}

bool DetectSse42() {
  unsigned int a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return (c & bit_SSE4_2) != 0;
}
#endif

using ExtendFn = uint32_t (*)(uint32_t, const char*, size_t);

ExtendFn Choose() {
#ifdef OYSTER_CRC32C_X86
  if (DetectSse42()) return ExtendSse42;
#endif
  return ExtendPortable;
}

const ExtendFn kExtend = Choose();

}  // namespace

uint32_t Extend(uint32_t init_crc, const char* data, size_t n) { return kExtend(init_crc, data, n); }

bool HardwareAccelerated() { return kExtend != ExtendPortable; }

namespace {

// a * b modulo the polynomial, both reflected (bit 31 is x^0).
uint32_t MultModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
  }
  return product;
}

// x^(2^k) modulo the polynomial, k = 0..63.
struct PowersOfX {
  uint32_t p[64];
  PowersOfX() {
    p[0] = 1u << 30;  // x^1
    for (int k = 1; k < 64; k++) p[k] = MultModP(p[k - 1], p[k - 1]);
  }
};

}  // namespace

uint32_t Combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  // Appending len_b bytes multiplies A's register by x^(8 * len_b); the
  // conditioning of the two CRCs cancels out (the same identity as zlib's
  // crc32_combine).
  static const PowersOfX powers;
  uint32_t shift = 1u << 31;  // x^0
  for (int k = 3; len_b != 0; len_b >>= 1, k++) {
    if (len_b & 1) shift = MultModP(powers.p[k], shift);
  }
  return MultModP(shift, crc_a) ^ crc_b;
}

}  // namespace crc32c
}  // namespace oyster
