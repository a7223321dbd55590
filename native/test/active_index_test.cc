#include "engine/active_index.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test/test_util.h"
#include "test/testharness.h"
#include "util/hash.h"

namespace oyster {
namespace {

uint64_t Hash(const std::string& k) { return KeyHash64(k.data(), k.size()); }

IndexEntry Entry(uint64_t ts, uint64_t offset, uint32_t value_size = 10, uint32_t flags = 0, uint64_t stamp = 0) {
  IndexEntry e;
  e.version = Version{ts, stamp};
  e.offset = offset;
  e.value_size = value_size;
  e.flags = flags;
  return e;
}

void AssertSameEntry(const IndexEntry& got, const IndexEntry& want) {
  ASSERT_EQ(got.version.timestamp, want.version.timestamp);
  ASSERT_EQ(got.version.stamp, want.version.stamp);
  ASSERT_EQ(got.offset, want.offset);
  ASSERT_EQ(got.value_size, want.value_size);
  ASSERT_EQ(got.flags, want.flags);
}

}  // namespace

TEST(ActiveIndex, InsertAndFind) {
  ActiveIndex index(16);
  const std::string a = test::Key(1), b = test::Key(2);
  IndexEntry e;
  ASSERT_FALSE(index.Find(a.data(), Hash(a), &e));
  index.Insert(a.data(), Hash(a), Entry(5, 32, 7, 0));
  index.Insert(b.data(), Hash(b), Entry(6, 100, 0, 1));
  ASSERT_EQ(index.size(), 2u);
  ASSERT_TRUE(index.Find(a.data(), Hash(a), &e));
  AssertSameEntry(e, Entry(5, 32, 7, 0));
  ASSERT_TRUE(index.Find(b.data(), Hash(b), &e));
  AssertSameEntry(e, Entry(6, 100, 0, 1));
  const std::string c = test::Key(3);
  ASSERT_FALSE(index.Find(c.data(), Hash(c), &e));
}

TEST(ActiveIndex, NewestTimestampWins) {
  ActiveIndex index(16);
  const std::string k = test::Key(9);
  index.Insert(k.data(), Hash(k), Entry(5, 32));
  index.Insert(k.data(), Hash(k), Entry(3, 200));  // older, though written later
  IndexEntry e;
  ASSERT_TRUE(index.Find(k.data(), Hash(k), &e));
  AssertSameEntry(e, Entry(5, 32));
  index.Insert(k.data(), Hash(k), Entry(7, 300, 0, 1));
  ASSERT_TRUE(index.Find(k.data(), Hash(k), &e));
  AssertSameEntry(e, Entry(7, 300, 0, 1));
  ASSERT_EQ(index.size(), 1u);
}

// Same second: the stamp decides, whatever the offsets say.
TEST(ActiveIndex, StampDecidesWithinASecond) {
  ActiveIndex index(16);
  const std::string k = test::Key(9);
  const uint64_t later = Version::MakeStamp(1700000000000002, 1), earlier = Version::MakeStamp(1700000000000001, 7);
  index.Insert(k.data(), Hash(k), Entry(5, 100, 10, 0, later));
  index.Insert(k.data(), Hash(k), Entry(5, 200, 10, 0, earlier));
  index.Insert(k.data(), Hash(k), Entry(5, 300, 0, kFlagTombstone, 0));  // no stamp: older than both
  IndexEntry e;
  ASSERT_TRUE(index.Find(k.data(), Hash(k), &e));
  AssertSameEntry(e, Entry(5, 100, 10, 0, later));
  index.Insert(k.data(), Hash(k), Entry(5, 50, 10, 0, Version::MakeStamp(1700000000000002, 2)));  // a higher node
  ASSERT_TRUE(index.Find(k.data(), Hash(k), &e));
  ASSERT_EQ(e.offset, 50u);
}

// The same version: a tombstone beats a value at any offset; of two records
// of one kind (the same write stored twice) the higher offset wins.
TEST(ActiveIndex, FullTiesGoToTheTombstoneThenTheHigherOffset) {
  ActiveIndex index(16);
  const std::string k = test::Key(9);
  index.Insert(k.data(), Hash(k), Entry(5, 100));
  index.Insert(k.data(), Hash(k), Entry(5, 50));  // as a scan could meet them
  IndexEntry e;
  ASSERT_TRUE(index.Find(k.data(), Hash(k), &e));
  ASSERT_EQ(e.offset, 100u);
  index.Insert(k.data(), Hash(k), Entry(5, 20, 0, kFlagTombstone));
  ASSERT_TRUE(index.Find(k.data(), Hash(k), &e));
  AssertSameEntry(e, Entry(5, 20, 0, kFlagTombstone));
  index.Insert(k.data(), Hash(k), Entry(5, 200));  // a later value of the same version stays hidden
  ASSERT_TRUE(index.Find(k.data(), Hash(k), &e));
  ASSERT_EQ(e.offset, 20u);
  index.Insert(k.data(), Hash(k), Entry(5, 300, 0, kFlagTombstone));
  ASSERT_TRUE(index.Find(k.data(), Hash(k), &e));
  AssertSameEntry(e, Entry(5, 300, 0, kFlagTombstone));
}

// Keys whose hashes collide (here: all of them) are still told apart by
// their bytes.
TEST(ActiveIndex, CollidingHashes) {
  ActiveIndex index(16);
  for (uint64_t i = 0; i < 200; i++) {
    const std::string k = test::Key(i);
    index.Insert(k.data(), 42, Entry(i, 32 + i));
  }
  ASSERT_EQ(index.size(), 200u);
  for (uint64_t i = 0; i < 200; i++) {
    const std::string k = test::Key(i);
    IndexEntry e;
    ASSERT_TRUE(index.Find(k.data(), 42, &e)) << "key " << i;
    ASSERT_EQ(e.offset, 32 + i);
  }
  const std::string absent = test::Key(1000);
  IndexEntry e;
  ASSERT_FALSE(index.Find(absent.data(), 42, &e));
}

TEST(ActiveIndex, GrowsTo100kKeys) {
  const uint64_t n = 100000;
  ActiveIndex index(16);
  for (uint64_t i = 0; i < n; i++) {
    const std::string k = test::Key(i);
    index.Insert(k.data(), Hash(k), Entry(i, i * 100, static_cast<uint32_t>(i % 1000)));
  }
  ASSERT_EQ(index.size(), n);
  // Newer versions of every third key replace the entries in place.
  for (uint64_t i = 0; i < n; i += 3) {
    const std::string k = test::Key(i);
    index.Insert(k.data(), Hash(k), Entry(i + 1, n * 100 + i, 0, 1));
  }
  ASSERT_EQ(index.size(), n);
  for (uint64_t i = 0; i < n; i++) {
    const std::string k = test::Key(i);
    IndexEntry e;
    ASSERT_TRUE(index.Find(k.data(), Hash(k), &e)) << "key " << i;
    if (i % 3 == 0) {
      AssertSameEntry(e, Entry(i + 1, n * 100 + i, 0, 1));
    } else {
      AssertSameEntry(e, Entry(i, i * 100, static_cast<uint32_t>(i % 1000)));
    }
  }
  for (uint64_t i = n; i < n + 1000; i++) {
    const std::string k = test::Key(i);
    IndexEntry e;
    ASSERT_FALSE(index.Find(k.data(), Hash(k), &e)) << "key " << i;
  }
  // Rough bound from the class comment (K + 38 bytes per key, plus slack for
  // vector growth and the power-of-two table).
  ASSERT_LT(index.MemoryUsage(), n * (16 + 38) * 3);
}

TEST(ActiveIndex, SortedOrderIsMemcmpOrder) {
  std::mt19937_64 rng(test::RandomSeed());
  for (size_t k : {1, 3, 16, 33}) {
    ActiveIndex index(k);
    std::vector<std::string> keys;
    for (int i = 0; i < 2000; i++) {
      std::string key(k, '\0');
      // Bytes >= 0x80 catch signed char comparisons.
      for (char& c : key) c = static_cast<char>(rng());
      index.Insert(key.data(), Hash(key), Entry(1, 32));
      keys.push_back(key);
    }
    std::vector<uint32_t> order = index.SortedOrder();
    ASSERT_EQ(order.size(), index.size());
    for (size_t i = 1; i < order.size(); i++) {
      ASSERT_LT(std::memcmp(index.key_at(order[i - 1]), index.key_at(order[i]), k), 0)
          << "key size " << k << ", position " << i;
    }
    // A permutation of all entries.
    std::vector<uint32_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (uint32_t i = 0; i < sorted.size(); i++) ASSERT_EQ(sorted[i], i);
    // Accessors agree with what was inserted.
    for (uint32_t i = 0; i < index.size(); i++) {
      std::string key(index.key_at(i), k);
      ASSERT_EQ(index.hash_at(i), Hash(key));
    }
  }
}

TEST(ActiveIndex, EmptySortedOrder) {
  ActiveIndex index(8);
  ASSERT_EQ(index.SortedOrder().size(), 0u);
  ASSERT_EQ(index.size(), 0u);
}

}  // namespace oyster
