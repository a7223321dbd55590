// The order of versions against the table shared with the TypeScript side
// (test/fixtures/version-order.txt): CompareRecords, and the index entries
// and in-memory index that apply it inside a blob.

#include "engine/version.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/active_index.h"
#include "engine/index_entry.h"
#include "test/test_util.h"
#include "test/testharness.h"
#include "util/hash.h"

namespace oyster {
namespace {

struct Side {
  Version version;
  bool tombstone = false;
};

struct Case {
  int line = 0;
  Side a, b;
  int expected = 0;  // sign of CompareRecords(a, b)
};

// Reads "timestamp tick node kind" at the stream's position.
bool ReadSide(std::istringstream* in, Side* side) {
  uint64_t timestamp, tick;
  uint32_t node;
  std::string kind;
  if (!(*in >> timestamp >> tick >> node >> kind)) return false;
  if (tick > kMaxTick || node > kMaxNodeId || (kind != "value" && kind != "tombstone")) return false;
  side->version = Version::Of(timestamp, tick, node);
  side->tombstone = kind == "tombstone";
  return true;
}

std::vector<Case> LoadTable() {
  const std::string path = test::SourcePath("test/fixtures/version-order.txt");
  std::ifstream file(path);
  if (!file) FAIL() << "cannot read " << path;
  std::vector<Case> cases;
  std::string line;
  for (int n = 1; std::getline(file, line); n++) {
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream in(line);
    std::string first;
    if (!(in >> first)) continue;  // blank or comment only
    in.seekg(0);
    Case c;
    c.line = n;
    std::string op, rest;
    if (!ReadSide(&in, &c.a) || !ReadSide(&in, &c.b) || !(in >> op) || (in >> rest)) {
      FAIL() << path << ":" << n << ": malformed line";
    }
    if (op == "<") {
      c.expected = -1;
    } else if (op == "=") {
      c.expected = 0;
    } else if (op == ">") {
      c.expected = 1;
    } else {
      FAIL() << path << ":" << n << ": expected <, = or >, got " << op;
    }
    cases.push_back(c);
  }
  return cases;
}

IndexEntry EntryOf(const Side& s, uint64_t offset) {
  IndexEntry e;
  e.version = s.version;
  e.offset = offset;
  e.flags = s.tombstone ? kFlagTombstone : 0;
  return e;
}

}  // namespace

TEST(Version, StampPacksTickAndNode) {
  const Version v = Version::Of(1700000000, 1700000000123456, 3);
  ASSERT_EQ(v.stamp, (1700000000123456ull << 12) | 3);
  ASSERT_EQ(v.tick(), 1700000000123456u);
  ASSERT_EQ(v.node(), 3u);
  const Version top = Version::Of(0, kMaxTick, kMaxNodeId);
  ASSERT_EQ(top.stamp, ~0ull);
  ASSERT_EQ(top.tick(), (1ull << 52) - 1);
  ASSERT_EQ(top.node(), 4095u);
  ASSERT_EQ(Version().stamp, 0u);
  ASSERT_EQ(v.ToString(), "1700000000.1700000000123456@3");
}

// Every line of the shared table, both ways round.
TEST(Version, SharedTable) {
  const std::vector<Case> cases = LoadTable();
  ASSERT_GE(cases.size(), 20u);
  for (const Case& c : cases) {
    ASSERT_EQ(CompareRecords(c.a.version, c.a.tombstone, c.b.version, c.b.tombstone), c.expected)
        << "line " << c.line;
    ASSERT_EQ(CompareRecords(c.b.version, c.b.tombstone, c.a.version, c.a.tombstone), -c.expected)
        << "line " << c.line << " reversed";
    // Versions alone: equal exactly when the table's records differ only in kind (or not at all).
    const int v = CompareVersions(c.a.version, c.b.version);
    if (c.expected == 0) {
      ASSERT_EQ(v, 0) << "line " << c.line;
    }
    if (v != 0) {
      ASSERT_EQ(v, c.expected) << "line " << c.line;
    }
  }
}

// Inside a blob the same rule decides, and a full tie goes to the later
// record (higher offset), in whichever order the records are met.
TEST(Version, SharedTableInsideABlob) {
  const std::vector<Case> cases = LoadTable();
  const std::string key = test::Key(1);
  const uint64_t hash = KeyHash64(key.data(), key.size());
  for (const Case& c : cases) {
    for (bool a_first : {true, false}) {
      // The one written first sits at the lower offset.
      const IndexEntry a = EntryOf(c.a, a_first ? 100 : 200);
      const IndexEntry b = EntryOf(c.b, a_first ? 200 : 100);
      const uint64_t want = c.expected > 0 ? a.offset : c.expected < 0 ? b.offset : 200;
      ASSERT_EQ(a.SupersededBy(b), want == b.offset) << "line " << c.line;
      ASSERT_EQ(b.SupersededBy(a), want == a.offset) << "line " << c.line;
      for (bool insert_a_first : {true, false}) {
        ActiveIndex index(16);
        index.Insert(key.data(), hash, insert_a_first ? a : b);
        index.Insert(key.data(), hash, insert_a_first ? b : a);
        IndexEntry got;
        ASSERT_TRUE(index.Find(key.data(), hash, &got));
        ASSERT_EQ(got.offset, want) << "line " << c.line << (a_first ? ", a written first" : ", b written first")
                                    << (insert_a_first ? ", a met first" : ", b met first");
      }
    }
  }
}

}  // namespace oyster
