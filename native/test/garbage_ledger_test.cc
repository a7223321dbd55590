// GarbageLedger: every write accounted against the older records of its key
// across the vdisk as it arrives. Each case checks the counters written
// down as writes come (garbage and live tombstones) against what they must
// be, and against a recount from scratch (EngineSet::CountGarbage); so do
// random writes, one after the other and from several threads at once; and
// the live keys that follow from them against a model of the writes, also
// after a compaction and a restart.

#include "engine/garbage_ledger.h"

#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/compaction.h"
#include "engine/engine_set.h"
#include "engine/format.h"
#include "test/test_util.h"
#include "test/testharness.h"

namespace oyster {
namespace {

using test::Engines;
using test::Key;
using test::TestEngine;
using test::WriteOp;

struct Garbage {
  uint64_t records = 0;
  uint64_t bytes = 0;
  bool operator==(const Garbage& o) const { return records == o.records && bytes == o.bytes; }
  bool operator!=(const Garbage& o) const { return !(*this == o); }
};

std::ostream& operator<<(std::ostream& os, const Garbage& g) {
  return os << "{" << g.records << " records, " << g.bytes << " bytes}";
}

// Bytes of the record of a put of value_size bytes, of a delete.
uint64_t Bytes(size_t value_size) {
  return RecordSize(kBlobFormatVersion, 16, ValueHasBlocks(value_size) ? kFlagBlocks : 0, value_size);
}
const uint64_t kTombstoneBytes = RecordSize(kBlobFormatVersion, 16, kFlagTombstone, 0);

Garbage Of(uint64_t records, uint64_t bytes) { return Garbage{records, bytes}; }

// Garbage counted in every blob of `engine` (by blob id), once the writes
// acknowledged are accounted.
std::map<uint64_t, Garbage> Counted(Engine* engine) {
  engine->ledger()->WaitAccounted();
  std::map<uint64_t, Garbage> out;
  for (const BlobStats& b : engine->Stats().blob_stats) out[b.id] = Garbage{b.garbage_records, b.garbage_bytes};
  return out;
}

// Garbage counted in blob `id` of `engine`.
Garbage In(Engine* engine, uint64_t id) {
  const std::map<uint64_t, Garbage> all = Counted(engine);
  auto it = all.find(id);
  if (it == all.end()) FAIL() << "no blob " << id;
  return it->second;
}

// Garbage counted in all blobs of `engine`.
Garbage Total(Engine* engine) {
  Garbage t;
  for (const auto& [id, g] : Counted(engine)) {
    t.records += g.records;
    t.bytes += g.bytes;
  }
  return t;
}

// Live tombstones counted in every blob of `engine` (by blob id), once the
// writes acknowledged are accounted.
std::map<uint64_t, uint64_t> LiveTombstones(Engine* engine) {
  engine->ledger()->WaitAccounted();
  std::map<uint64_t, uint64_t> out;
  for (const BlobStats& b : engine->Stats().blob_stats) out[b.id] = b.live_tombstones;
  return out;
}

// Live tombstones counted in all blobs of `engine`.
uint64_t LiveTombstonesIn(Engine* engine) {
  engine->ledger()->WaitAccounted();
  return engine->Stats().live_tombstones;
}

// The keys of the set whose newest record is a value, as its engines count
// them once the writes acknowledged are accounted.
uint64_t LiveKeys(const EngineSet& set) {
  uint64_t n = 0;
  for (const auto& e : set.engines()) {
    e->ledger()->WaitAccounted();
    n += e->Stats().live_keys;
  }
  return n;
}

// Fails unless the counters of every blob of the set's engines are what a
// recount finds. The recount sets them (to the same values).
void ExpectRecountAgrees(const EngineSet& set) {
  std::vector<std::map<uint64_t, Garbage>> before;
  std::vector<std::map<uint64_t, uint64_t>> live_before;
  for (const auto& e : set.engines()) {
    before.push_back(Counted(e.get()));
    live_before.push_back(LiveTombstones(e.get()));
  }
  EngineSet::GarbageSummary summary;
  ASSERT_OK(set.CountGarbage(EngineSet::ScanOptions(), TombstonePolicy(), &summary));
  uint64_t live_tombstones = 0;
  for (size_t i = 0; i < set.engines().size(); i++) {
    const std::map<uint64_t, Garbage> after = Counted(set.engines()[i].get());
    ASSERT_EQ(before[i].size(), after.size());
    for (const auto& [id, g] : after) {
      ASSERT_EQ(before[i][id], g) << "blob " << id << " of engine " << i << ": counted as writes came, recounted";
    }
    for (const auto& [id, n] : LiveTombstones(set.engines()[i].get())) {
      ASSERT_EQ(live_before[i][id], n) << "live tombstones of blob " << id << " of engine " << i
                                       << ": counted as writes came, recounted";
      live_tombstones += n;
    }
  }
  ASSERT_EQ(live_tombstones, summary.tombstones);
  ASSERT_EQ(LiveKeys(set), summary.keys - summary.tombstones);
}

// The newest record of each key written, by CompareRecords: whether a key's
// newest is a value does not depend on the order of the writes.
class LiveModel {
 public:
  void Apply(const WriteOp& op) {
    auto it = newest_.find(op.key);
    if (it == newest_.end() || CompareRecords(op.version, op.tombstone, it->second.first, it->second.second) > 0) {
      newest_[op.key] = {op.version, op.tombstone};
    }
  }
  // Keys whose newest record is a value.
  uint64_t Live() const {
    uint64_t n = 0;
    for (const auto& [key, newest] : newest_) n += newest.second ? 0 : 1;
    return n;
  }
  uint64_t keys() const { return newest_.size(); }

 private:
  std::map<std::string, std::pair<Version, bool>> newest_;
};

// An EngineSet over one engine the TestEngine owns.
EngineSet SetOf(TestEngine* db) { return EngineSet({std::shared_ptr<Engine>(std::shared_ptr<Engine>(), db->get())}); }

}  // namespace

// Records of one key in one blob: the older of each two is garbage, the
// write that comes late as it arrives; of the same write stored twice the
// earlier. An engine in no set accounts on its own.
TEST(GarbageLedger, WithinABlob) {
  TestEngine db(test::TmpDir() + "/p");
  ASSERT_OK(db.Open());
  const std::string k = Key(1);
  ASSERT_OK(test::Put(db.get(), k, 10, "first"));
  ASSERT_OK(test::Put(db.get(), Key(2), 10, "other key"));
  ASSERT_EQ(In(db.get(), 1), Of(0, 0));
  ASSERT_OK(test::Put(db.get(), k, 20, "second!"));
  ASSERT_EQ(In(db.get(), 1), Of(1, Bytes(5)));
  ASSERT_OK(test::Put(db.get(), k, 15, "late"));  // older than what is there
  ASSERT_EQ(In(db.get(), 1), Of(2, Bytes(5) + Bytes(4)));
  ASSERT_OK(test::Put(db.get(), k, 20, "same"));  // a full tie: the later write wins
  ASSERT_EQ(In(db.get(), 1), Of(3, Bytes(5) + Bytes(4) + Bytes(7)));
  ASSERT_EQ(test::Read(db.get(), k), "same");
  ExpectRecountAgrees(SetOf(&db));
}

// A batch holding several writes of one key is accounted write by write.
TEST(GarbageLedger, OneKeyTwiceInABatch) {
  TestEngine db(test::TmpDir() + "/p");
  test::GatedExecutor* gate = db.gate();
  ASSERT_OK(db.Open());
  ASSERT_OK(test::Put(db.get(), Key(1), 5, "a"));
  ASSERT_OK(db->CloseActiveBlob());
  gate->Close();
  {
    test::PendingWrites w(db.get(), {WriteOp::Put(Key(1), 7, "bb"), WriteOp::Put(Key(1), 9, "ccc"),
                                     WriteOp::Put(Key(1), 8, "dddd"), WriteOp::Put(Key(2), 1, "e")});
    gate->Open();
    for (const Status& s : w.Wait()) ASSERT_OK(s);
  }
  ASSERT_EQ(In(db.get(), 1), Of(1, Bytes(1)));
  ASSERT_EQ(In(db.get(), 2), Of(2, Bytes(2) + Bytes(4)));
  ExpectRecountAgrees(SetOf(&db));
}

// Across the blobs of an engine: a full tie goes to the later blob.
TEST(GarbageLedger, AcrossBlobsOfAnEngine) {
  TestEngine db(test::TmpDir() + "/p");
  ASSERT_OK(db.Open());
  const std::string k = Key(1);
  ASSERT_OK(test::Put(db.get(), k, 5, "one"));
  ASSERT_OK(test::Put(db.get(), k, 10, "two"));
  ASSERT_OK(db->CloseActiveBlob());
  ASSERT_OK(test::Put(db.get(), k, 12, "three"));  // blob 2
  ASSERT_EQ(In(db.get(), 1), Of(2, 2 * Bytes(3)));
  ASSERT_EQ(In(db.get(), 2), Of(0, 0));
  ASSERT_OK(test::Put(db.get(), Key(2), 1, "x"));
  ASSERT_OK(db->CloseActiveBlob());
  ASSERT_OK(test::Put(db.get(), k, 3, "old"));  // blob 3, older than all
  ASSERT_EQ(In(db.get(), 3), Of(1, Bytes(3)));
  ASSERT_OK(test::Put(db.get(), k, 12, "3 again"));  // a full tie with blob 2's
  ASSERT_EQ(In(db.get(), 2), Of(1, Bytes(5)));
  ASSERT_EQ(In(db.get(), 3), Of(1, Bytes(3)));
  ASSERT_EQ(In(db.get(), 1), Of(2, 2 * Bytes(3)));
  ASSERT_EQ(test::Read(db.get(), k), "3 again");
  // Reopened (the counters start from nothing), with every blob served by
  // its index file: looked up through filter and index block.
  ASSERT_OK(db.Reopen());
  ASSERT_OK(test::Put(db.get(), k, 20, "new"));  // blob 4
  ASSERT_OK(test::Put(db.get(), Key(3), 1, "only"));
  ASSERT_EQ(Total(db.get()), Of(1, Bytes(7)));
  ASSERT_EQ(In(db.get(), 3), Of(1, Bytes(7)));  // "3 again"
}

// Across engines: a newer partition supersedes an older one; a write with
// an old version landing in an older partition while a newer record is in
// a newer one is garbage itself, and nothing else is counted.
TEST(GarbageLedger, AcrossEngines) {
  Engines e(3);
  EngineSet set = e.Set({0, 1, 2});
  const std::string k = Key(1);
  ASSERT_OK(test::Put(e[2], k, 100, "oldest"));
  ASSERT_OK(test::Put(e[1], k, 200, "newer"));
  ASSERT_EQ(Total(e[2]), Of(1, Bytes(6)));
  ASSERT_EQ(Total(e[1]), Of(0, 0));
  ASSERT_OK(test::Put(e[0], k, 300, "newest"));
  ASSERT_EQ(Total(e[1]), Of(1, Bytes(5)));
  ASSERT_EQ(Total(e[2]), Of(1, Bytes(6)));
  ASSERT_EQ(Total(e[0]), Of(0, 0));
  // An old version into an older partition: the new record itself.
  ASSERT_OK(test::Put(e[2], k, 150, "late"));
  ASSERT_EQ(Total(e[2]), Of(2, Bytes(6) + Bytes(4)));
  ASSERT_EQ(Total(e[1]), Of(1, Bytes(5)));
  ASSERT_EQ(Total(e[0]), Of(0, 0));
  // And into the newest partition, in a blob without the key.
  ASSERT_OK(e[0]->CloseActiveBlob());
  ASSERT_OK(test::Put(e[0], k, 250, "late too"));
  ASSERT_EQ(In(e[0], 2), Of(1, Bytes(8)));
  ASSERT_EQ(In(e[0], 1), Of(0, 0));
  ASSERT_EQ(Total(e[1]), Of(1, Bytes(5)));
  // Keys written once are never garbage, wherever they are.
  for (size_t i = 0; i < 3; i++) ASSERT_OK(test::Put(e[i], Key(10 + i), 100, "once"));
  ASSERT_EQ(Total(e[0]), Of(1, Bytes(8)));
  ASSERT_EQ(Total(e[1]), Of(1, Bytes(5)));
  ASSERT_EQ(Total(e[2]), Of(2, Bytes(6) + Bytes(4)));
  ExpectRecountAgrees(set);
}

// The same write stored in two engines: the one in the engine earlier in
// the set wins, as reads choose; a set built later decides from then on.
TEST(GarbageLedger, FullTiesAcrossEngines) {
  Engines e(2);
  {
    EngineSet set = e.Set({0, 1});
    ASSERT_OK(test::Put(e[1], Key(1), 100, "x"));
    ASSERT_OK(test::Put(e[0], Key(1), 100, "x"));  // supersedes engine 1's
    ASSERT_EQ(Total(e[1]), Of(1, Bytes(1)));
    ASSERT_EQ(Total(e[0]), Of(0, 0));
    ASSERT_OK(test::Put(e[0], Key(2), 100, "yy"));
    ASSERT_OK(test::Put(e[1], Key(2), 100, "yy"));  // superseded as it arrives
    ASSERT_EQ(Total(e[1]), Of(2, Bytes(1) + Bytes(2)));
    ASSERT_EQ(Total(e[0]), Of(0, 0));
    ExpectRecountAgrees(set);
  }
  EngineSet reversed = e.Set({1, 0});  // the set built last has its ledger installed
  ASSERT_OK(test::Put(e[0], Key(3), 100, "zzz"));
  ASSERT_OK(test::Put(e[1], Key(3), 100, "zzz"));
  ASSERT_EQ(Total(e[0]), Of(1, Bytes(3)));
  ASSERT_OK(test::Put(e[1], Key(4), 100, "w"));
  ASSERT_OK(test::Put(e[0], Key(4), 100, "w"));
  ASSERT_EQ(Total(e[0]), Of(2, Bytes(3) + Bytes(1)));
}

// A tombstone supersedes what it deletes and is superseded as a value is;
// of a value and a tombstone of the same version the tombstone wins.
TEST(GarbageLedger, Tombstones) {
  Engines e(2);
  EngineSet set = e.Set({0, 1});
  const std::string k = Key(1);
  ASSERT_OK(test::Put(e[1], k, 100, "value"));
  ASSERT_EQ(LiveKeys(set), 1u);
  ASSERT_OK(test::Delete(e[0], k, 200));
  ASSERT_EQ(Total(e[1]), Of(1, Bytes(5)));
  ASSERT_EQ(Total(e[0]), Of(0, 0));
  ASSERT_EQ(LiveTombstonesIn(e[0]), 1u);
  ASSERT_EQ(LiveKeys(set), 0u);
  ASSERT_OK(test::Put(e[1], k, 200, "undo"));  // the delete stays
  ASSERT_EQ(Total(e[1]), Of(2, Bytes(5) + Bytes(4)));
  ASSERT_EQ(LiveKeys(set), 0u);
  ASSERT_OK(test::Delete(e[1], k, 200));  // a full tie of tombstones
  ASSERT_EQ(Total(e[1]), Of(3, Bytes(5) + Bytes(4) + kTombstoneBytes));
  ASSERT_EQ(Total(e[0]), Of(0, 0));
  ASSERT_EQ(LiveTombstonesIn(e[0]), 1u);  // the earlier engine's wins
  ASSERT_EQ(LiveTombstonesIn(e[1]), 0u);
  ASSERT_OK(test::Put(e[0], k, 300, "back"));
  ASSERT_EQ(Total(e[0]), Of(1, kTombstoneBytes));
  ASSERT_EQ(LiveTombstonesIn(e[0]), 0u);
  ASSERT_EQ(LiveKeys(set), 1u);
  ASSERT_OK(test::Delete(e[1], Key(2), 100));  // deletes nothing
  ASSERT_EQ(Total(e[1]), Of(3, Bytes(5) + Bytes(4) + kTombstoneBytes));
  ASSERT_EQ(LiveTombstonesIn(e[1]), 1u);
  ASSERT_EQ(LiveKeys(set), 1u);
  // Deleted twice in one blob: the later tombstone displaces the earlier,
  // which stops being live there.
  ASSERT_OK(test::Delete(e[1], Key(2), 110));
  ASSERT_EQ(LiveTombstonesIn(e[1]), 1u);
  ASSERT_OK(test::Delete(e[1], Key(2), 105));  // lost in its blob
  ASSERT_EQ(LiveTombstonesIn(e[1]), 1u);
  ASSERT_EQ(LiveKeys(set), 1u);
  ExpectRecountAgrees(set);
}

// Streamed puts are accounted as they are published, also while writes go
// into their blob meanwhile.
TEST(GarbageLedger, StreamedPuts) {
  Engines e(2);
  EngineSet set = e.Set({0, 1});
  const std::string k = Key(1);
  const std::string big(200000, 'b');  // with block checksums
  const std::string mid(100000, 'm');
  ASSERT_OK(test::Put(e[1], k, 100, "small"));
  ASSERT_OK(test::StreamPut(e[0], k, test::Ts(200), big, 7000));
  ASSERT_EQ(Total(e[1]), Of(1, Bytes(5)));
  ASSERT_OK(test::StreamPut(e[1], k, test::Ts(150), mid, 9000));  // too old
  ASSERT_EQ(Total(e[1]), Of(2, Bytes(5) + Bytes(mid.size())));
  ASSERT_OK(test::Put(e[0], k, 300, "x"));  // into the stream's blob
  ASSERT_EQ(Total(e[0]), Of(1, Bytes(big.size())));

  // A stream finishing after a newer put of its key into its blob.
  const std::string k2 = Key(2);
  std::unique_ptr<PutStream> stream;
  ASSERT_OK(test::BeginStream(e[0], k2, test::Ts(10), mid.size(), &stream));
  ASSERT_OK(test::Put(e[0], k2, 20, "newer"));
  ASSERT_OK(stream->Append(mid.data(), mid.size()));
  ASSERT_OK(stream->Finish());
  ASSERT_EQ(Total(e[0]), Of(2, Bytes(big.size()) + Bytes(mid.size())));
  // And one finishing after a newer put of its key into another engine.
  const std::string k3 = Key(3);
  ASSERT_OK(test::BeginStream(e[1], k3, test::Ts(10), mid.size(), &stream));
  ASSERT_OK(test::Put(e[0], k3, 20, "newer"));
  ASSERT_OK(stream->Append(mid.data(), mid.size()));
  ASSERT_OK(stream->Finish());
  ASSERT_EQ(Total(e[1]), Of(3, Bytes(5) + 2 * Bytes(mid.size())));
  stream.reset();
  ExpectRecountAgrees(set);
}

// What cannot be looked up is not counted, and never fails a write: a
// damaged index block, a closed engine of the vdisk. An engine destroyed is
// no longer part of it.
TEST(GarbageLedger, SkipsWhatCannotBeLookedUp) {
  {
    TestEngine db(test::TmpDir() + "/damaged");
    test::Model model;
    test::WriteBlobWithDamagedIndexBlock(&db, &model);  // keys 170..254 of blob 1
    ASSERT_OK(test::Put(db.get(), Key(200), 2, "new"));
    ASSERT_EQ(Total(db.get()), Of(0, 0));
    ASSERT_OK(test::Put(db.get(), Key(10), 2, "new"));
    ASSERT_EQ(In(db.get(), 1), Of(1, Bytes(10)));
  }
  Engines e(2);
  EngineSet set = e.Set({0, 1});
  ASSERT_OK(test::Put(e[1], Key(1), 1, "old"));
  ASSERT_OK(e[1]->Close());
  ASSERT_OK(test::Put(e[0], Key(1), 2, "new"));
  ASSERT_OK(test::Put(e[0], Key(1), 3, "newer"));
  ASSERT_EQ(Total(e[0]), Of(0, 0));
  ASSERT_EQ(Total(e[1]), Of(0, 0));
  ASSERT_OK(e.db(1)->Close());  // the engine goes
  ASSERT_OK(test::Put(e[0], Key(1), 4, "newest"));
  ASSERT_EQ(Total(e[0]), Of(1, Bytes(5)));
}

// Random puts, deletes, streamed puts and full ties over random engines and
// blobs, one after the other (several writes at a time into one engine,
// batched): the counters are exactly what a recount finds.
TEST(GarbageLedger, RandomWritesMatchARecount) {
  Engines e(3);
  EngineSet set = e.Set({0, 1, 2});
  std::mt19937_64 rng(test::RandomSeed());
  auto pick = [&](uint64_t n) { return static_cast<uint64_t>(rng() % n); };
  auto random_op = [&]() {
    const std::string key = Key(pick(60));
    // Few versions, so that full ties and late writes are frequent.
    const Version v{1 + pick(12), pick(3) == 0 ? 0 : pick(3)};
    if (pick(5) == 0) return WriteOp::Delete(key, v);
    return WriteOp::Put(key, v, std::string(pick(4) == 0 ? 0 : pick(300), 'v'));
  };
  for (int step = 0; step < 1500; step++) {
    Engine* engine = e[pick(3)];
    const uint64_t what = pick(100);
    if (what < 3) {
      ASSERT_OK(engine->CloseActiveBlob());
    } else if (what < 8) {
      ASSERT_OK(test::StreamPut(engine, Key(pick(60)), Version{1 + pick(12), pick(3)},
                                std::string(pick(2) == 0 ? 70000 : 500, 's'), 4000));
    } else {
      std::vector<WriteOp> ops;
      const uint64_t n = pick(4) == 0 ? 1 + pick(8) : 1;
      for (uint64_t i = 0; i < n; i++) ops.push_back(random_op());
      for (const Status& s : test::WriteAll(engine, ops)) ASSERT_OK(s);
    }
  }
  uint64_t garbage = 0;
  for (size_t i = 0; i < 3; i++) garbage += Total(e[i]).records;
  ASSERT_GT(garbage, 500u);
  ExpectRecountAgrees(set);
}

// The same from several threads at once, writing the same keys into
// different engines: records announced and not yet accounted are looked
// past, so the order in which writes are published and accounted does not
// matter.
TEST(GarbageLedger, ConcurrentWritesMatchARecount) {
  Engines e(3);
  EngineSet set = e.Set({0, 1, 2});
  constexpr int kThreads = 4;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(test::RandomSeed() + t);
      auto pick = [&](uint64_t n) { return static_cast<uint64_t>(rng() % n); };
      for (int step = 0; step < 600; step++) {
        Engine* engine = e[pick(3)];
        const std::string key = Key(pick(40));
        const Version v{1 + pick(10), pick(2)};
        const uint64_t what = pick(100);
        Status s;
        if (what < 2) {
          s = engine->CloseActiveBlob();
        } else if (what < 6) {
          s = test::StreamPut(engine, key, v, std::string(3000, 's'), 1000);
        } else if (what < 20) {
          s = test::Delete(engine, key, v);
        } else {
          std::vector<WriteOp> ops;
          for (uint64_t i = 0, n = 1 + pick(3); i < n; i++) {
            ops.push_back(WriteOp::Put(Key(pick(40)), Version{1 + pick(10), pick(2)}, std::string(pick(100), 'v')));
          }
          for (const Status& r : test::WriteAll(engine, ops)) {
            if (!r.ok()) s = r;
          }
        }
        if (!s.ok()) failures++;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  ExpectRecountAgrees(set);
}

// Live keys (records - garbage - live tombstones, summed over the engines
// of the set) against a model of the writes: random puts, overwrites and
// deletes of a few hundred keys over three engines and many blobs, first
// one after the other, then from several threads at once. Equal as the
// writes are accounted, after a recount, after every closed blob was
// compacted (tombstones past their grace dropped), and after a restart
// once a recount ran (the counters start from nothing when engines open).
TEST(GarbageLedger, LiveKeysMatchAModel) {
  constexpr uint64_t kKeys = 300;
  Engines e(3);
  LiveModel model;
  {
    EngineSet set = e.Set({0, 1, 2});
    std::mt19937_64 rng(test::RandomSeed());
    auto pick = [&](uint64_t n) { return static_cast<uint64_t>(rng() % n); };
    auto random_op = [&]() {
      const std::string key = Key(pick(kKeys));
      const Version v{1 + pick(20), pick(3) == 0 ? 0 : pick(3)};
      if (pick(3) == 0) return WriteOp::Delete(key, v);
      return WriteOp::Put(key, v, std::string(pick(200), 'v'));
    };
    for (int step = 0; step < 2000; step++) {
      Engine* engine = e[pick(3)];
      const uint64_t what = pick(100);
      if (what < 2) {
        ASSERT_OK(engine->CloseActiveBlob());
      } else if (what < 5) {
        const WriteOp op = WriteOp::Put(Key(pick(kKeys)), Version{1 + pick(20), pick(3)}, std::string(3000, 's'));
        ASSERT_OK(test::StreamPut(engine, op.key, op.version, op.value, 1000));
        model.Apply(op);
      } else {
        std::vector<WriteOp> ops;
        const uint64_t n = pick(4) == 0 ? 1 + pick(8) : 1;
        for (uint64_t i = 0; i < n; i++) ops.push_back(random_op());
        for (const Status& st : test::WriteAll(engine, ops)) ASSERT_OK(st);
        for (const WriteOp& op : ops) model.Apply(op);
      }
    }
    ASSERT_GT(model.Live(), kKeys / 4);
    ASSERT_LT(model.Live(), model.keys());
    ASSERT_EQ(LiveKeys(set), model.Live());
    ExpectRecountAgrees(set);
    ASSERT_EQ(LiveKeys(set), model.Live());

    // Concurrent writers, of the same keys into different engines.
    constexpr int kThreads = 4;
    std::vector<std::vector<WriteOp>> written(kThreads);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
      threads.emplace_back([&, t] {
        std::mt19937_64 trng(test::RandomSeed() + 1 + t);
        auto tpick = [&](uint64_t n) { return static_cast<uint64_t>(trng() % n); };
        for (int step = 0; step < 500; step++) {
          Engine* engine = e[tpick(3)];
          const uint64_t what = tpick(100);
          if (what < 2) {
            if (!engine->CloseActiveBlob().ok()) failures++;
            continue;
          }
          std::vector<WriteOp> ops;
          for (uint64_t i = 0, n = 1 + tpick(3); i < n; i++) {
            const std::string key = Key(tpick(kKeys));
            const Version v{1 + tpick(30), tpick(2)};
            ops.push_back(tpick(3) == 0 ? WriteOp::Delete(key, v) : WriteOp::Put(key, v, std::string(tpick(100), 'c')));
          }
          for (const Status& st : test::WriteAll(engine, ops)) {
            if (!st.ok()) failures++;
          }
          written[t].insert(written[t].end(), ops.begin(), ops.end());
        }
      });
    }
    for (std::thread& t : threads) t.join();
    ASSERT_EQ(failures.load(), 0);
    for (const std::vector<WriteOp>& ops : written) {
      for (const WriteOp& op : ops) model.Apply(op);
    }
    ASSERT_EQ(LiveKeys(set), model.Live());
    ExpectRecountAgrees(set);

    // Every blob closed and compacted, tombstones dropped where nothing is
    // left for them to hide (as those of keys never written are).
    for (uint64_t i = 0; i < 20; i++) {
      const WriteOp op = WriteOp::Delete(Key(10000 + i), Version{1 + i, 0});
      ASSERT_OK(test::Delete(e[i % 3], op.key, op.version));
      model.Apply(op);
    }
    ASSERT_EQ(LiveKeys(set), model.Live());
    CompactionOptions options;
    options.tombstones.grace_seconds = 0;
    uint64_t dropped_tombstones = 0;
    for (size_t i = 0; i < 3; i++) {
      ASSERT_OK(e[i]->CloseActiveBlob());
      ASSERT_TRUE(test::Eventually([&] { return e[i]->Stats().blobs_in_memory == 0; }));
      for (const BlobStats& b : e[i]->Stats().blob_stats) {
        std::unique_ptr<Compaction> c;
        ASSERT_OK(Compaction::Begin(set, set.engines()[i], b.id, options, &c));
        bool done = false;
        while (!done) ASSERT_OK(c->Step(64 << 10, &done));
        ASSERT_OK(c->Install());
        dropped_tombstones += c->stats().dropped_tombstones;
      }
    }
    ASSERT_GT(dropped_tombstones, 0u);
    ASSERT_EQ(LiveKeys(set), model.Live());
    ExpectRecountAgrees(set);
  }

  // Restarted: the counters start from nothing; a recount sets them.
  for (size_t i = 0; i < 3; i++) ASSERT_OK(e.db(i)->Reopen());
  EngineSet set = e.Set({0, 1, 2});
  EngineSet::GarbageSummary summary;
  ASSERT_OK(set.CountGarbage(EngineSet::ScanOptions(), TombstonePolicy(), &summary));
  ASSERT_EQ(LiveKeys(set), model.Live());
  ASSERT_OK(test::Delete(e[0], Key(kKeys), Version{100, 0}));
  ASSERT_OK(test::Put(e[1], Key(kKeys + 1), Version{100, 0}, "new"));
  ASSERT_EQ(LiveKeys(set), model.Live() + 1);
  ExpectRecountAgrees(set);
}

}  // namespace oyster
