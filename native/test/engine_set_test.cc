// EngineSet: the partitions of a vdisk read as one. The newest record by
// CompareRecords wins across engines, a full tie goes to the engine earlier
// in the list, and only the winner's value is read.

#include "engine/engine_set.h"

#include <string>
#include <vector>

#include "engine/format.h"
#include "test/test_util.h"
#include "test/testharness.h"

namespace oyster {
namespace {

using test::Engines;
using test::Key;

// Get as a string, with the version: "value@ts.tick@node", "DELETED@...", "NOT_FOUND".
std::string Get(const EngineSet& set, const std::string& key, const ReadOptions& options = ReadOptions()) {
  GetResult g;
  Status s = set.Get(options, key.data(), &g);
  if (!s.ok()) return "ERROR: " + s.ToString();
  // Lookup must agree with Get.
  LookupResult l;
  Status ls = set.Lookup(options, key.data(), &l);
  if (!ls.ok() || l.kind != g.kind || CompareVersions(l.version, g.version) != 0) return "LOOKUP DISAGREES";
  if (g.kind == GetResult::kAbsent) return "NOT_FOUND";
  const std::string at = "@" + g.version.ToString();
  if (g.kind == GetResult::kDeleted) return "DELETED" + at;
  return std::string(g.record.value(), g.record.value_size) + at;
}

}  // namespace

TEST(EngineSet, NewestVersionWinsWhereverItIs) {
  Engines e(3);
  const std::string k = Key(1);
  ASSERT_OK(test::Put(e[0], k, 100, "a100"));
  ASSERT_OK(test::Put(e[1], k, 200, "b200"));
  ASSERT_OK(test::Delete(e[2], k, 150));
  for (const std::vector<size_t>& order : {std::vector<size_t>{0, 1, 2}, {2, 1, 0}, {1, 0, 2}}) {
    ASSERT_EQ(Get(e.Set(order), k), "b200@200.0@0");
  }
  // A newer tombstone in any engine hides the value.
  ASSERT_OK(test::Delete(e[0], k, 300));
  ASSERT_EQ(Get(e.Set({0, 1, 2}), k), "DELETED@300.0@0");
  ASSERT_EQ(Get(e.Set({1, 2, 0}), k), "DELETED@300.0@0");
  ASSERT_EQ(Get(e.Set({0, 1, 2}), Key(2)), "NOT_FOUND");
}

// Within one second the stamp decides: tick, then node.
TEST(EngineSet, StampDecidesWithinASecond) {
  Engines e(2);
  const std::string k = Key(1);
  ASSERT_OK(test::Put(e[0], k, Version::Of(50, 1700000000000002, 1), "tick 2"));
  ASSERT_OK(test::Put(e[1], k, Version::Of(50, 1700000000000001, 9), "tick 1"));
  ASSERT_EQ(Get(e.Set({0, 1}), k), "tick 2@50.1700000000000002@1");
  ASSERT_EQ(Get(e.Set({1, 0}), k), "tick 2@50.1700000000000002@1");
  ASSERT_OK(test::Put(e[1], k, Version::Of(50, 1700000000000002, 2), "node 2"));
  ASSERT_EQ(Get(e.Set({0, 1}), k), "node 2@50.1700000000000002@2");
  // Without a stamp a write loses to every stamped one of its second.
  ASSERT_OK(test::Delete(e[0], Key(2), 60));
  ASSERT_OK(test::Put(e[1], Key(2), Version::Of(60, 1, 0), "stamped"));
  ASSERT_EQ(Get(e.Set({0, 1}), Key(2)), "stamped@60.1@0");
}

// Equal versions: the tombstone wins in whichever engine it is; two records
// of one kind are the same write, and the earlier engine's is taken.
TEST(EngineSet, FullTies) {
  Engines e(3);
  const Version v = Version::Of(70, 5, 5);
  ASSERT_OK(test::Put(e[0], Key(1), v, "first engine"));
  ASSERT_OK(test::Put(e[1], Key(1), v, "second engine"));
  ASSERT_EQ(Get(e.Set({0, 1}), Key(1)), "first engine@70.5@5");
  ASSERT_EQ(Get(e.Set({1, 0}), Key(1)), "second engine@70.5@5");
  ASSERT_OK(test::Delete(e[2], Key(1), v));
  for (const std::vector<size_t>& order : {std::vector<size_t>{0, 1, 2}, {2, 0, 1}, {0, 2, 1}}) {
    ASSERT_EQ(Get(e.Set(order), Key(1)), "DELETED@70.5@5");
  }
  // Two tombstones: either answers the same.
  ASSERT_OK(test::Delete(e[0], Key(2), v));
  ASSERT_OK(test::Delete(e[1], Key(2), v));
  ASSERT_EQ(Get(e.Set({1, 0}), Key(2)), "DELETED@70.5@5");
}

// The newest version may sit in an engine's older, closed blob while a
// newer blob of another engine holds an older one; reopened engines answer
// from their index files the same way.
TEST(EngineSet, NewerVersionInAnOlderBlob) {
  Engines e(2);
  ASSERT_OK(test::Put(e[0], Key(1), Version::Of(90, 9, 1), "old blob, newest"));
  ASSERT_OK(e[0]->CloseActiveBlob());
  ASSERT_OK(test::Put(e[0], Key(2), 1, "filler"));
  ASSERT_OK(test::Put(e[1], Key(1), Version::Of(90, 8, 1), "new blob, older"));
  ASSERT_EQ(Get(e.Set({1, 0}), Key(1)), "old blob, newest@90.9@1");
  ASSERT_OK(e.db(0)->Reopen());
  ASSERT_OK(e.db(1)->Reopen());
  ASSERT_EQ(Get(e.Set({1, 0}), Key(1)), "old blob, newest@90.9@1");
}

// Locate and Read: only the winner's record is read, from its own engine.
TEST(EngineSet, LocateThenRead) {
  Engines e(2);
  ASSERT_OK(test::Put(e[0], Key(1), 10, "loser"));
  ASSERT_OK(test::Put(e[1], Key(1), 11, "winner"));
  const EngineSet set = e.Set({0, 1});
  LookupResult r;
  EngineSet::Location where;
  ASSERT_OK(set.Locate(ReadOptions(), Key(1).data(), &r, &where));
  ASSERT_EQ(r.kind, GetResult::kFound);
  ASSERT_EQ(r.version.timestamp, 11u);
  ASSERT_EQ(r.value_size, 6u);
  ASSERT_TRUE(where.engine == e[1]);
  GetResult g;
  ASSERT_OK(set.Read(ReadOptions(), Key(1).data(), where, &g));
  ASSERT_EQ(std::string(g.record.value(), g.record.value_size), "winner");
  ASSERT_OK(set.Locate(ReadOptions(), Key(9).data(), &r, &where));
  ASSERT_EQ(r.kind, GetResult::kAbsent);
  ASSERT_TRUE(where.engine == nullptr);
}

// A damaged winner is reported, with its version, not replaced by a loser.
TEST(EngineSet, DamagedWinnerIsReported) {
  Engines e(2);
  ASSERT_OK(test::Put(e[0], Key(1), 10, "older, intact"));
  ASSERT_OK(test::Put(e[1], Key(1), Version::Of(11, 3, 3), std::string(100, 'w')));
  ASSERT_OK(e.db(1)->Close());
  test::FlipByte(test::BlobPath(e.db(1)->dir(), 1), kBlobHeaderSize + RecordHeaderSize(kBlobFormatVersion, 16) + 50);
  ASSERT_OK(e.db(1)->Open());
  const EngineSet set = e.Set({0, 1});
  GetResult g;
  ASSERT_STATUS(kCorruption, set.Get(ReadOptions(), Key(1).data(), &g));
  ASSERT_EQ(g.version.timestamp, 11u);
  ASSERT_EQ(g.version.tick(), 3u);
  ReadOptions no_wait;
  no_wait.no_wait = true;
  ASSERT_STATUS(kWouldBlock, set.Get(no_wait, Key(1).data(), &g)) << "a no-wait read leaves damage to a blocking one";
  LookupResult l;
  ASSERT_OK(set.Lookup(ReadOptions(), Key(1).data(), &l));
  ASSERT_EQ(l.version.timestamp, 11u);
}

// No-wait reads answer as blocking ones, or WouldBlock.
TEST(EngineSet, NoWaitAnswersAsBlocking) {
  Engines e(2);
  for (uint64_t i = 0; i < 50; i++) {
    ASSERT_OK(test::Put(e[i % 2], Key(i), Version::Of(i, i % 3, 1), "v" + std::to_string(i)));
    if (i % 5 == 0) {
      ASSERT_OK(test::Delete(e[(i + 1) % 2], Key(i), Version::Of(i, i % 3, 1)));
    }
  }
  const EngineSet set = e.Set({0, 1});
  ReadOptions no_wait;
  no_wait.no_wait = true;
  for (uint64_t i = 0; i < 60; i++) {
    const std::string blocking = Get(set, Key(i));
    const std::string now = Get(set, Key(i), no_wait);
    if (now.rfind("ERROR: WouldBlock", 0) == 0) continue;
    ASSERT_EQ(now, blocking) << "key " << i;
    ASSERT_EQ(blocking.rfind("DELETED", 0) == 0, i < 50 && i % 5 == 0) << "key " << i;
  }
}

}  // namespace oyster
