#include "util/hash.h"

#include <string>

#include "test/testharness.h"

namespace oyster {

// KeyHash64 is persisted in bloom filters: these values must never change
// (docs/FORMAT.md, section 5.1).
TEST(KeyHash64, FormatVectors) {
  struct Vector {
    const char* key;
    uint64_t hash;
  };
  const Vector vectors[] = {
      {"", 0x9CA066F1A4AB2EEAull},
      {"a", 0x4DC5EBDAE78C2FA1ull},
      {"key-0001", 0x1F8695614BD85988ull},
      {"abcdefghi", 0xB62C89AD2516F6D9ull},
      {"0123456789abcdef", 0x7F8DDB9FA3A3E67Dull},
  };
  for (const Vector& v : vectors) {
    const std::string key = v.key;
    ASSERT_EQ(KeyHash64(key.data(), key.size()), v.hash) << "key \"" << key << "\"";
  }
}

// The length is part of the hash: zero padding does not collide.
TEST(KeyHash64, LengthMatters) {
  const std::string a("ab", 2), b("ab\0", 3), c("ab\0\0\0\0\0\0", 8);
  ASSERT_NE(KeyHash64(a.data(), a.size()), KeyHash64(b.data(), b.size()));
  ASSERT_NE(KeyHash64(b.data(), b.size()), KeyHash64(c.data(), c.size()));
}

}  // namespace oyster
