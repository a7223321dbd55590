#include "util/crc32c.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test/testharness.h"

// The implementations are internal to crc32c.cc, which picks one for the
// process. To check each one the CPU can run, the file is compiled a second
// time into a private namespace here, where all are reachable by name. The
// system headers it includes are included first so that they stay in the
// global namespace (their include guards keep the nested #include empty).
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#include <nmmintrin.h>
#endif
namespace crc32c_copy {
#include "util/crc32c.cc"
}  // namespace crc32c_copy

namespace oyster {
namespace {

// Straight from docs/FORMAT.md, section 1.1: one bit at a time.
uint32_t BitwiseCrc(uint32_t crc, const char* data, size_t n) {
  uint32_t c = ~crc;
  for (size_t i = 0; i < n; i++) {
    c ^= static_cast<unsigned char>(data[i]);
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
  }
  return ~c;
}

std::string RandomBytes(std::mt19937_64* rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>((*rng)());
  return s;
}

// Every implementation available on this machine, with a name for messages.
struct Impl {
  const char* name;
  uint32_t (*extend)(uint32_t, const char*, size_t);
};

std::vector<Impl> Implementations() {
  std::vector<Impl> impls;
  impls.push_back({"selected", &crc32c::Extend});
  impls.push_back({"portable", &crc32c_copy::oyster::crc32c::ExtendPortable});
#ifdef OYSTER_CRC32C_X86
  if (crc32c_copy::oyster::crc32c::DetectSse42()) {
    impls.push_back({"sse4.2", &crc32c_copy::oyster::crc32c::ExtendSse42});
  }
  if (crc32c_copy::oyster::crc32c::DetectClmul()) {
    impls.push_back({"pclmul", &crc32c_copy::oyster::crc32c::ExtendClmul});
  }
  if (crc32c_copy::oyster::crc32c::DetectVclmul()) {
    impls.push_back({"vpclmulqdq", &crc32c_copy::oyster::crc32c::ExtendVclmul});
  }
#endif
  return impls;
}

}  // namespace

TEST(Crc32c, CheckValue) {
  ASSERT_EQ(crc32c::Value("123456789", 9), 0xE3069283u);
  for (const Impl& impl : Implementations()) {
    ASSERT_EQ(impl.extend(0, "123456789", 9), 0xE3069283u) << impl.name;
  }
}

TEST(Crc32c, EmptyInput) {
  ASSERT_EQ(crc32c::Value("", 0), 0u);
  ASSERT_EQ(crc32c::Value(nullptr, 0), 0u);
  // Extending by nothing changes nothing.
  ASSERT_EQ(crc32c::Extend(0xE3069283u, "", 0), 0xE3069283u);
}

// The iSCSI test vectors of RFC 3720, B.4 (also used by LevelDB).
TEST(Crc32c, Rfc3720Vectors) {
  char buf[32];
  std::memset(buf, 0, sizeof(buf));
  ASSERT_EQ(crc32c::Value(buf, sizeof(buf)), 0x8A9136AAu);
  std::memset(buf, 0xFF, sizeof(buf));
  ASSERT_EQ(crc32c::Value(buf, sizeof(buf)), 0x62A8AB43u);
  for (int i = 0; i < 32; i++) buf[i] = static_cast<char>(i);
  ASSERT_EQ(crc32c::Value(buf, sizeof(buf)), 0x46DD794Eu);
  for (int i = 0; i < 32; i++) buf[i] = static_cast<char>(31 - i);
  ASSERT_EQ(crc32c::Value(buf, sizeof(buf)), 0x113FDB5Cu);
  const unsigned char pdu[48] = {
      0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
      0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  ASSERT_EQ(crc32c::Value(reinterpret_cast<const char*>(pdu), sizeof(pdu)), 0xD9963A56u);
}

TEST(Crc32c, ExtendEqualsOneShot) {
  std::mt19937_64 rng(test::RandomSeed());
  const std::string data = RandomBytes(&rng, 1000);
  for (const Impl& impl : Implementations()) {
    const uint32_t whole = impl.extend(0, data.data(), data.size());
    for (size_t split = 0; split <= data.size(); split++) {
      uint32_t crc = impl.extend(0, data.data(), split);
      crc = impl.extend(crc, data.data() + split, data.size() - split);
      ASSERT_EQ(crc, whole) << impl.name << ", split at " << split;
    }
    // Many small pieces.
    uint32_t crc = 0;
    for (size_t i = 0; i < data.size(); i += 7) {
      crc = impl.extend(crc, data.data() + i, std::min<size_t>(7, data.size() - i));
    }
    ASSERT_EQ(crc, whole) << impl.name;
  }
}

// Combine joins the CRCs of two pieces computed apart into the CRC of their
// concatenation, for pieces of every length class, and with A's CRC itself
// extended from any start (a record's prefix).
TEST(Crc32c, CombineEqualsExtend) {
  std::mt19937_64 rng(test::RandomSeed());
  const std::string data = RandomBytes(&rng, 300000);
  std::vector<size_t> lengths = {0, 1, 2, 3, 7, 8, 9, 255, 256, 4096, 8191, 65535, 65536, 65537, 131072, 299999};
  for (int i = 0; i < 200; i++) lengths.push_back(static_cast<size_t>(rng() % data.size()));
  for (size_t len_b : lengths) {
    const size_t len_a = static_cast<size_t>(rng() % (data.size() - len_b + 1));
    const uint32_t init = (rng() & 1) ? static_cast<uint32_t>(rng()) : 0;
    const uint32_t crc_a = crc32c::Extend(init, data.data(), len_a);
    const uint32_t crc_b = crc32c::Value(data.data() + len_a, len_b);
    ASSERT_EQ(crc32c::Combine(crc_a, crc_b, len_b), BitwiseCrc(init, data.data(), len_a + len_b))
        << "A of " << len_a << " bytes, B of " << len_b;
  }
}

// Hardware and table implementations agree with the bitwise definition for
// every length around the 8-byte strides and every alignment.
TEST(Crc32c, ImplementationsMatchBitwiseReference) {
  std::mt19937_64 rng(test::RandomSeed());
  const std::string data = RandomBytes(&rng, 1 << 20);
  const std::vector<Impl> impls = Implementations();
  ASSERT_GE(impls.size(), 2u);
  for (size_t align = 0; align < 16; align++) {
    for (size_t n = 0; n <= 300; n++) {
      const uint32_t init = static_cast<uint32_t>(rng());
      const uint32_t want = BitwiseCrc(init, data.data() + align, n);
      for (const Impl& impl : impls) {
        ASSERT_EQ(impl.extend(init, data.data() + align, n), want)
            << impl.name << ", length " << n << ", alignment " << align;
      }
    }
  }
  const uint32_t want = BitwiseCrc(0, data.data() + 3, data.size() - 3);
  for (const Impl& impl : impls) ASSERT_EQ(impl.extend(0, data.data() + 3, data.size() - 3), want) << impl.name;
}

// Lengths around the three-stream blocks (3 × 256 and 3 × 8192 bytes) and
// their joins, at every alignment of a word.
TEST(Crc32c, InterleavedBlocksMatchBitwiseReference) {
  std::mt19937_64 rng(test::RandomSeed());
  const std::string data = RandomBytes(&rng, 200000);
  std::vector<size_t> lengths;
  for (size_t base : {size_t{768}, size_t{1536}, size_t{24576}, size_t{49152}, size_t{24576 + 768}, size_t{3 * 24576 + 2 * 768}}) {
    for (size_t d = 0; d < 20; d++) {
      lengths.push_back(base + d);
      lengths.push_back(base - 1 - d);
    }
  }
  lengths.push_back(data.size() - 8);
  for (size_t align = 0; align < 8; align++) {
    for (size_t n : lengths) {
      const uint32_t init = static_cast<uint32_t>(rng());
      const uint32_t want = BitwiseCrc(init, data.data() + align, n);
      for (const Impl& impl : Implementations()) {
        ASSERT_EQ(impl.extend(init, data.data() + align, n), want) << impl.name << ", length " << n << ", alignment " << align;
      }
    }
  }
}

// Every length up to 1100 bytes (the folding paths' thresholds, their last
// partial registers and words), lengths around their superblocks, and lengths
// around 64 KiB, 256 KiB and 1 MiB (the long inputs they are for), each at
// every misalignment of a 16-byte load and from a random CRC. The longest are
// checked against the sse4.2 path, itself checked against the bitwise
// definition on a megabyte above, as the bitwise one is slow there.
TEST(Crc32c, EveryLengthAndAlignment) {
  std::mt19937_64 rng(test::RandomSeed());
  const std::string data = RandomBytes(&rng, (1 << 20) + 256);
  const std::vector<Impl> impls = Implementations();
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 1100; n++) lengths.push_back(n);
#ifdef OYSTER_CRC32C_X86
  {
    using namespace crc32c_copy::oyster::crc32c;
    constexpr size_t kNarrowLong = kNarrowSuperblock<kLongSteps>, kNarrowShort = kNarrowSuperblock<kShortSteps>;
    constexpr size_t kWideLong = kWideSuperblock<kLongSteps>, kWideShort = kWideSuperblock<kShortSteps>;
    for (size_t base : {kNarrowShort, 2 * kNarrowShort, kNarrowLong, kNarrowLong + kNarrowShort, 2 * kNarrowLong,
                        kWideShort, 2 * kWideShort, kWideLong, kWideLong + kWideShort, 2 * kWideLong}) {
      for (size_t d : {0, 1, 8, 63, 64, 127, 128, 129, 255, 256}) {
        lengths.push_back(base + d);
        lengths.push_back(base - 1 - d);
      }
    }
  }
#endif
  for (size_t align = 0; align < 16; align++) {
    for (size_t n : lengths) {
      const uint32_t init = static_cast<uint32_t>(rng());
      const uint32_t want = BitwiseCrc(init, data.data() + align, n);
      for (const Impl& impl : impls) {
        ASSERT_EQ(impl.extend(init, data.data() + align, n), want) << impl.name << ", length " << n << ", alignment " << align;
      }
    }
  }
#ifdef OYSTER_CRC32C_X86
  // The folding paths need the crc32 instruction; without it there is nothing
  // more to check here.
  if (!crc32c_copy::oyster::crc32c::DetectSse42()) return;
  for (size_t base : {size_t{1} << 16, size_t{1} << 18, size_t{1} << 20}) {
    for (size_t n : {base - 129, base - 128, base - 65, base - 64, base - 1, base, base + 1, base + 63, base + 64,
                     base + 127, base + 128, base + 129}) {
      for (size_t align = 0; align < 16; align++) {
        const uint32_t init = static_cast<uint32_t>(rng());
        const uint32_t want = crc32c_copy::oyster::crc32c::ExtendSse42(init, data.data() + align, n);
        for (const Impl& impl : impls) {
          ASSERT_EQ(impl.extend(init, data.data() + align, n), want) << impl.name << ", length " << n << ", alignment " << align;
        }
      }
    }
  }
#endif
}

TEST(Crc32c, HardwareReportedWhenAvailable) {
#ifdef OYSTER_CRC32C_X86
  ASSERT_EQ(crc32c::HardwareAccelerated(), crc32c_copy::oyster::crc32c::DetectSse42());
#else
  ASSERT_FALSE(crc32c::HardwareAccelerated());
#endif
}

}  // namespace oyster
