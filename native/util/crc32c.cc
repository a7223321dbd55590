#include "util/crc32c.h"

#include <cstring>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
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

// Long inputs use the carry-less multiplier and the crc32 instruction side
// by side. Folding alone does not beat the three crc32 streams above on the
// machine this was tuned on (an AMD EPYC): the multiplier issues once every
// two cycles and folding a register takes two multiplications, so 16-byte
// registers fold 4 bytes a cycle and 32-byte ones 8, where the streams take
// 8. The two are separate units, though: each superblock of a long input is
// split into a part that is folded and three blocks after it for three crc32
// streams, run in one loop, and the results are joined at its end.
//
// Folding. A 16-byte load puts message bit i in register bit i. Read as a
// polynomial, with a 64-bit lane w standing for the sum of w_i x^(63-i) (its
// first bit the highest power), the register is lo x^64 + hi. In the message
// it weighs what the register d bits later would weigh times x^d, and
// modulo P
//   register x^d = lo (x^(d+64) mod P) + hi (x^d mod P):
// two products of a lane and a polynomial of degree below 32, under 128 bits
// together, which XORed into the later register leave the message's
// remainder modulo P, and so its CRC, as it was. The multiplier takes lanes
// in this bit order and returns the product one bit further on (times x), so
// the lane that multiplies by x^e holds x^(e-1) mod P, its coefficient of x^j
// in bit 63 - j. The CRC register to continue from is XORed into the first
// 32 bits, as the crc32 instruction does; the last register left is itself a
// message with the input's remainder, and the crc32 instruction over it from
// zero gives the input's CRC register.

// x^k modulo P, reflected as in MultModP (bit 31 is x^0): every folding
// constant is a power of x, worked out from P once at start.
uint32_t XPowModP(uint64_t k) {
  static const PowersOfX powers;
  uint32_t r = 1u << 31;  // x^0
  for (int i = 0; k != 0; k >>= 1, i++) {
    if (k & 1) r = MultModP(powers.p[i], r);
  }
  return r;
}

// The multiplier's lane for "times x^e", as derived above.
uint64_t TimesXPow(uint64_t e) { return uint64_t{XPowModP(e - 1)} << 32; }

// The lanes that move a 16-byte register d bits on, in register order.
struct FoldFactors {
  uint64_t lo, hi;
};

FoldFactors FoldBy(uint64_t d) { return {TimesXPow(d + 64), TimesXPow(d)}; }

// Superblocks. Each step folds two registers (so that one's multiplications
// overlap the other's latency) and takes three words from each stream, the
// proportions that kept both units busiest on the machine above. Long
// superblocks while the input lasts (on inputs beyond the L2 cache they read
// faster than short ones), then short ones, as in ExtendSse42.
constexpr size_t kStreamStep = 24;
constexpr size_t kLongSteps = 128;
constexpr size_t kShortSteps = 16;

// From this many bytes, folding 32-byte registers alone beats the crc32
// instruction (a single stream below 768 bytes), setup and final reduction
// included.
constexpr size_t kWideFoldMin = 128;
static_assert(kWideFoldMin >= 64, "FoldVclmul starts with two 32-byte registers");

struct FoldConstants {
  // Move a 16-byte register (or each half of a 32-byte one) 16, 32, 64 bytes on.
  FoldFactors by16 = FoldBy(128), by32 = FoldBy(256), by64 = FoldBy(512);
  // Move a CRC register over the stream blocks after it: three for the
  // folded part, two and one for the first two streams.
  uint64_t long_join[3] = {Join(kLongSteps, 3), Join(kLongSteps, 2), Join(kLongSteps, 1)};
  uint64_t short_join[3] = {Join(kShortSteps, 3), Join(kShortSteps, 2), Join(kShortSteps, 1)};

  static uint64_t Join(size_t steps, size_t blocks) { return TimesXPow(8 * kStreamStep * steps * blocks - 32); }
};

const FoldConstants& GetFoldConstants() {
  static const FoldConstants k;
  return k;
}

// The helpers below carry the target attribute so that the file still builds
// for baseline x86-64; only the paths chosen by CPUID run them.
__attribute__((target("pclmul,sse4.2"))) inline __m128i Load128(const unsigned char* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

__attribute__((target("pclmul,sse4.2"))) inline __m128i Factors128(const FoldFactors& f) {
  return _mm_set_epi64x(static_cast<long long>(f.hi), static_cast<long long>(f.lo));
}

// x moved on by the distance `factors` were made for (see above).
__attribute__((target("pclmul,sse4.2"))) inline __m128i Fold128(__m128i x, __m128i factors) {
  return _mm_xor_si128(_mm_clmulepi64_si128(x, factors, 0x00), _mm_clmulepi64_si128(x, factors, 0x11));
}

// The last register's CRC register from zero is the input's (see above).
__attribute__((target("pclmul,sse4.2"))) inline uint64_t Reduce128(__m128i a) {
  const uint64_t c = _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(a)));
  return _mm_crc32_u64(c, static_cast<uint64_t>(_mm_extract_epi64(a, 1)));
}

// Appending `bits` zero bits to a message multiplies its CRC register c by
// x^bits modulo P. c in the high half of a lane stands for c itself; its
// product with TimesXPow(bits - 32) is under 64 bits, in the high lane, and
// the crc32 instruction from zero multiplies that by x^32 modulo P.
__attribute__((target("pclmul,sse4.2"))) inline uint64_t ShiftRegister(uint64_t c, uint64_t times) {
  const __m128i product = _mm_clmulepi64_si128(_mm_cvtsi64_si128(static_cast<long long>(c << 32)),
                                               _mm_cvtsi64_si128(static_cast<long long>(times)), 0x00);
  return _mm_crc32_u64(0, static_cast<uint64_t>(_mm_extract_epi64(product, 1)));
}

// One step of the three streams, kStreamStep bytes of each: they run over
// adjacent blocks so that their chains are independent (the instruction's
// latency is three cycles). Written out, not looped, so that the step is one
// straight run of instructions whatever the optimizer decides.
__attribute__((target("sse4.2"))) inline void StreamStep(uint64_t& s0, uint64_t& s1, uint64_t& s2,
                                                         const unsigned char* p, size_t block) {
  s0 = Word(s0, p);
  s1 = Word(s1, p + block);
  s2 = Word(s2, p + 2 * block);
  s0 = Word(s0, p + 8);
  s1 = Word(s1, p + block + 8);
  s2 = Word(s2, p + 2 * block + 8);
  s0 = Word(s0, p + 16);
  s1 = Word(s1, p + block + 16);
  s2 = Word(s2, p + 2 * block + 16);
}

// The streams start from zero, so each register is moved over the blocks
// after its own and the four are added (as Shifter does for ExtendSse42).
__attribute__((target("pclmul,sse4.2"))) inline uint64_t JoinSuperblock(uint64_t folded, uint64_t s0, uint64_t s1,
                                                                        uint64_t s2, const uint64_t* join) {
  return ShiftRegister(folded, join[0]) ^ ShiftRegister(s0, join[1]) ^ ShiftRegister(s1, join[2]) ^ s2;
}

// Bytes in a superblock of Steps steps: the folded part, then three stream
// blocks.
template <size_t Steps>
constexpr size_t kNarrowSuperblock = 32 * Steps + 3 * kStreamStep * Steps;

// One superblock with 16-byte registers, continuing from CRC register c;
// returns the register after it. The step count is a template argument so
// that every offset in the loop is a constant (with offsets held in registers
// the loop ran about a tenth slower).
template <size_t Steps>
__attribute__((target("pclmul,sse4.2"))) inline uint64_t NarrowSuperblock(uint64_t c, const unsigned char* p,
                                                                          const FoldConstants& k, const uint64_t* join) {
  constexpr size_t kStream = kStreamStep * Steps;
  const unsigned char* streams = p + 32 * Steps;
  const __m128i step = Factors128(k.by32);
  __m128i x0 = _mm_xor_si128(Load128(p), _mm_cvtsi64_si128(static_cast<long long>(c)));
  __m128i x1 = Load128(p + 16);
  uint64_t s0 = 0, s1 = 0, s2 = 0;
  StreamStep(s0, s1, s2, streams, kStream);
  for (size_t i = 1; i < Steps; i++) {
    x0 = _mm_xor_si128(Fold128(x0, step), Load128(p + 32 * i));
    x1 = _mm_xor_si128(Fold128(x1, step), Load128(p + 32 * i + 16));
    StreamStep(s0, s1, s2, streams + kStreamStep * i, kStream);
  }
  const __m128i a = _mm_xor_si128(x1, Fold128(x0, Factors128(k.by16)));
  return JoinSuperblock(Reduce128(a), s0, s1, s2, join);
}

// Apart from ExtendClmul so that short inputs skip its setup.
__attribute__((target("pclmul,sse4.2"))) uint32_t ExtendClmulLong(uint32_t crc, const unsigned char* p, size_t n) {
  const FoldConstants& k = GetFoldConstants();
  uint64_t c = ~crc;
  for (; n >= kNarrowSuperblock<kLongSteps>; p += kNarrowSuperblock<kLongSteps>, n -= kNarrowSuperblock<kLongSteps>) {
    c = NarrowSuperblock<kLongSteps>(c, p, k, k.long_join);
  }
  for (; n >= kNarrowSuperblock<kShortSteps>; p += kNarrowSuperblock<kShortSteps>, n -= kNarrowSuperblock<kShortSteps>) {
    c = NarrowSuperblock<kShortSteps>(c, p, k, k.short_join);
  }
  return ExtendSse42(~static_cast<uint32_t>(c), reinterpret_cast<const char*>(p), n);
}

// For CPUs with the multiplier on 16-byte registers only. Below a superblock
// this is ExtendSse42 (folding 16-byte registers alone is slower than it),
// reached without the long path's setup: short inputs (record headers) are
// the most frequent.
uint32_t ExtendClmul(uint32_t crc, const char* data, size_t n) {
  if (n < kNarrowSuperblock<kShortSteps>) return ExtendSse42(crc, data, n);
  return ExtendClmulLong(crc, reinterpret_cast<const unsigned char*>(data), n);
}

__attribute__((target("avx2,vpclmulqdq,pclmul,sse4.2"))) inline __m256i Load256(const unsigned char* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Both 16-byte halves of a 32-byte register move as far, each onto the same
// half of the register loaded that many bytes later.
__attribute__((target("avx2,vpclmulqdq,pclmul,sse4.2"))) inline __m256i Factors256(const FoldFactors& f) {
  return _mm256_broadcastsi128_si256(Factors128(f));
}

__attribute__((target("avx2,vpclmulqdq,pclmul,sse4.2"))) inline __m256i Fold256(__m256i y, __m256i factors) {
  return _mm256_xor_si256(_mm256_clmulepi64_epi128(y, factors, 0x00), _mm256_clmulepi64_epi128(y, factors, 0x11));
}

// Two 32-byte registers, y1 right after y0, as one 16-byte register: y0 moves
// 32 bytes on, then y1's first half 16.
__attribute__((target("avx2,vpclmulqdq,pclmul,sse4.2"))) inline __m128i Merge256(__m256i y0, __m256i y1,
                                                                                 const FoldConstants& k) {
  const __m256i y = _mm256_xor_si256(y1, Fold256(y0, Factors256(k.by32)));
  return _mm_xor_si128(_mm256_extracti128_si256(y, 1), Fold128(_mm256_castsi256_si128(y), Factors128(k.by16)));
}

// Folding alone, for inputs shorter than a superblock and what the last one
// leaves, from kWideFoldMin bytes: there it beats ExtendSse42, whose three
// streams need 768 bytes and whose joins cost more. c is the CRC register.
__attribute__((target("avx2,vpclmulqdq,pclmul,sse4.2"))) uint32_t FoldVclmul(uint64_t c, const unsigned char* p, size_t n) {
  const FoldConstants& k = GetFoldConstants();
  const __m256i step = Factors256(k.by64);
  __m256i y0 = _mm256_xor_si256(Load256(p), _mm256_set_epi64x(0, 0, 0, static_cast<long long>(c)));
  __m256i y1 = Load256(p + 32);
  for (p += 64, n -= 64; n >= 64; p += 64, n -= 64) {
    y0 = _mm256_xor_si256(Fold256(y0, step), Load256(p));
    y1 = _mm256_xor_si256(Fold256(y1, step), Load256(p + 32));
  }
  return ExtendSse42(~static_cast<uint32_t>(Reduce128(Merge256(y0, y1, k))), reinterpret_cast<const char*>(p), n);
}

template <size_t Steps>
constexpr size_t kWideSuperblock = 64 * Steps + 3 * kStreamStep * Steps;

// NarrowSuperblock with 32-byte registers, two 16-byte lanes each.
template <size_t Steps>
__attribute__((target("avx2,vpclmulqdq,pclmul,sse4.2"))) inline uint64_t WideSuperblock(uint64_t c, const unsigned char* p,
                                                                                       const FoldConstants& k,
                                                                                       const uint64_t* join) {
  constexpr size_t kStream = kStreamStep * Steps;
  const unsigned char* streams = p + 64 * Steps;
  const __m256i step = Factors256(k.by64);
  __m256i y0 = _mm256_xor_si256(Load256(p), _mm256_set_epi64x(0, 0, 0, static_cast<long long>(c)));
  __m256i y1 = Load256(p + 32);
  uint64_t s0 = 0, s1 = 0, s2 = 0;
  StreamStep(s0, s1, s2, streams, kStream);
  for (size_t i = 1; i < Steps; i++) {
    y0 = _mm256_xor_si256(Fold256(y0, step), Load256(p + 64 * i));
    y1 = _mm256_xor_si256(Fold256(y1, step), Load256(p + 64 * i + 32));
    StreamStep(s0, s1, s2, streams + kStreamStep * i, kStream);
  }
  return JoinSuperblock(Reduce128(Merge256(y0, y1, k)), s0, s1, s2, join);
}

// Apart from ExtendVclmul so that short inputs skip its setup (saving the
// callee-saved registers and aligning the stack for 32-byte registers).
__attribute__((target("avx2,vpclmulqdq,pclmul,sse4.2"))) uint32_t ExtendVclmulLong(uint32_t crc, const unsigned char* p,
                                                                                  size_t n) {
  const FoldConstants& k = GetFoldConstants();
  uint64_t c = ~crc;
  for (; n >= kWideSuperblock<kLongSteps>; p += kWideSuperblock<kLongSteps>, n -= kWideSuperblock<kLongSteps>) {
    c = WideSuperblock<kLongSteps>(c, p, k, k.long_join);
  }
  for (; n >= kWideSuperblock<kShortSteps>; p += kWideSuperblock<kShortSteps>, n -= kWideSuperblock<kShortSteps>) {
    c = WideSuperblock<kShortSteps>(c, p, k, k.short_join);
  }
  if (n >= kWideFoldMin) return FoldVclmul(c, p, n);
  return ExtendSse42(~static_cast<uint32_t>(c), reinterpret_cast<const char*>(p), n);
}

// The fastest path where the multiplier works on 32-byte registers. Short
// inputs (record headers, the most frequent) go to ExtendSse42 without the
// long path's setup.
uint32_t ExtendVclmul(uint32_t crc, const char* data, size_t n) {
  if (n < kWideFoldMin) return ExtendSse42(crc, data, n);
  return ExtendVclmulLong(crc, reinterpret_cast<const unsigned char*>(data), n);
}

// Both folding paths also use the crc32 instruction.
bool DetectClmul() {
  unsigned int a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return (c & bit_SSE4_2) != 0 && (c & bit_PCLMUL) != 0;
}

// 32-byte registers also need the OS to save their upper halves on a context
// switch (XCR0 bits 1 and 2, readable once OSXSAVE is set).
bool DetectVclmul() {
  unsigned int a, b, c, d;
  if (!DetectClmul() || !__get_cpuid(1, &a, &b, &c, &d)) return false;
  if ((c & bit_OSXSAVE) == 0 || (c & bit_AVX) == 0) return false;
  unsigned int xcr0, xcr0_high;
  __asm__("xgetbv" : "=a"(xcr0), "=d"(xcr0_high) : "c"(0));
  if ((xcr0 & 6) != 6) return false;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (b & bit_AVX2) != 0 && (c & bit_VPCLMULQDQ) != 0;
}
#endif

using ExtendFn = uint32_t (*)(uint32_t, const char*, size_t);

ExtendFn Choose() {
#ifdef OYSTER_CRC32C_X86
  if (DetectVclmul()) return ExtendVclmul;
  if (DetectClmul()) return ExtendClmul;
  if (DetectSse42()) return ExtendSse42;
#endif
  return ExtendPortable;
}

const ExtendFn kExtend = Choose();

}  // namespace

uint32_t Extend(uint32_t init_crc, const char* data, size_t n) { return kExtend(init_crc, data, n); }

bool HardwareAccelerated() { return kExtend != ExtendPortable; }

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
