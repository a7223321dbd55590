// The read cache: what it keeps, what it gives back, what it evicts, and
// that engines looking up through it answer exactly as without it — also
// for lookups that must not wait, which it lets answer without the page
// cache.

#include "util/cache.h"

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "test/fault_file_system.h"
#include "test/test_util.h"
#include "test/testharness.h"

namespace oyster {
namespace {

using test::FaultInjectingFileSystem;
using test::Key;
using test::Puts;
using test::TestEngine;
using test::ValueFor;
using test::WriteEach;

// `n` bytes that name (id, offset): a read of another entry cannot pass for it.
std::string Piece(uint64_t id, uint64_t offset, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i++) s[i] = static_cast<char>((id * 131 + offset * 7 + i) & 0xff);
  return s;
}

bool Get(Cache* c, uint64_t id, uint64_t offset, size_t n, std::string* out, bool no_wait = false) {
  out->assign(n, '\0');
  return c->Lookup(id, offset, n, out->data(), no_wait);
}

void Put(Cache* c, uint64_t id, uint64_t offset, size_t n) {
  const std::string p = Piece(id, offset, n);
  c->Insert(id, offset, p.data(), n, /*no_wait=*/false);
}

ReadOptions NoWait() {
  ReadOptions o;
  o.no_wait = true;
  return o;
}

}  // namespace

TEST(Cache, KeepsAndReturnsPieces) {
  Cache c(1 << 20);
  std::string got;
  ASSERT_FALSE(Get(&c, 1, 0, 100, &got));
  Put(&c, 1, 0, 100);
  Put(&c, 1, 4096, 100);
  Put(&c, 2, 0, 100);
  ASSERT_TRUE(Get(&c, 1, 0, 100, &got));
  ASSERT_EQ(got, Piece(1, 0, 100));
  ASSERT_TRUE(Get(&c, 1, 4096, 100, &got, /*no_wait=*/true));
  ASSERT_EQ(got, Piece(1, 4096, 100));
  ASSERT_TRUE(Get(&c, 2, 0, 100, &got));
  ASSERT_EQ(got, Piece(2, 0, 100));
  // Only a lookup of exactly the bytes kept is answered.
  ASSERT_FALSE(Get(&c, 1, 0, 99, &got));
  ASSERT_FALSE(Get(&c, 1, 0, 101, &got));
  ASSERT_FALSE(Get(&c, 3, 0, 100, &got));
  ASSERT_FALSE(Get(&c, 1, 1, 100, &got));
  const Cache::Stats s = c.GetStats();
  ASSERT_EQ(s.entries, 3u);
  ASSERT_EQ(s.usage, 3 * (100 + Cache::kEntryOverhead));
  ASSERT_EQ(s.hits, 3u);
  ASSERT_EQ(s.misses, 5u);
}

TEST(Cache, ReplacesAnEntry) {
  Cache c(1 << 20);
  Put(&c, 1, 0, 100);
  const std::string other(50, 'x');
  c.Insert(1, 0, other.data(), other.size(), false);
  std::string got;
  ASSERT_FALSE(Get(&c, 1, 0, 100, &got));
  ASSERT_TRUE(Get(&c, 1, 0, 50, &got));
  ASSERT_EQ(got, other);
  ASSERT_EQ(c.GetStats().entries, 1u);
  ASSERT_EQ(c.GetStats().usage, 50 + Cache::kEntryOverhead);
}

TEST(Cache, KeepsNothingWithoutCapacityOrForLargePieces) {
  Cache none(0);
  Put(&none, 1, 0, 100);
  std::string got;
  ASSERT_FALSE(Get(&none, 1, 0, 100, &got));
  ASSERT_EQ(none.GetStats().usage, 0u);
  Cache c(64 << 20);
  Put(&c, 1, 0, Cache::kMaxPiece + 1);
  ASSERT_FALSE(Get(&c, 1, 0, Cache::kMaxPiece + 1, &got));
  Put(&c, 1, 0, Cache::kMaxPiece);
  ASSERT_TRUE(Get(&c, 1, 0, Cache::kMaxPiece, &got));
  ASSERT_EQ(got, Piece(1, 0, Cache::kMaxPiece));
  // Larger than a shard's share of a small cache: not kept either.
  Cache tiny(16 * 1024);
  Put(&tiny, 1, 0, 2048);
  ASSERT_FALSE(Get(&tiny, 1, 0, 2048, &got));
}

TEST(Cache, StaysWithinItsCapacityAndEvictsTheLeastRecentlyUsed) {
  const size_t capacity = 1 << 20;
  Cache c(capacity);
  const size_t n = 1000;
  // The first 100 pieces are used again and again while many more come.
  for (uint64_t i = 0; i < 100; i++) Put(&c, 7, i * n, n);
  std::string got;
  for (uint64_t i = 100; i < 20000; i++) {
    Put(&c, 7, i * n, n);
    ASSERT_TRUE(Get(&c, 7, (i % 100) * n, n, &got)) << "hot piece " << i % 100 << " evicted at " << i;
    ASSERT_TRUE(c.GetStats().usage <= capacity);
  }
  uint64_t kept = 0;
  for (uint64_t i = 100; i < 20000; i++) {
    if (Get(&c, 7, i * n, n, &got)) {
      ASSERT_EQ(got, Piece(7, i * n, n));
      kept++;
    }
  }
  // Nearly all the capacity holds the newest of the cold pieces.
  const uint64_t fits = capacity / (n + Cache::kEntryOverhead) - 100;
  ASSERT_TRUE(kept > fits * 8 / 10) << kept << " cold pieces kept of about " << fits;
  for (uint64_t i = 19700; i < 20000; i++) ASSERT_TRUE(Get(&c, 7, i * n, n, &got)) << "recent piece " << i;
}

TEST(Cache, ConcurrentReadersSeeOnlyWhatWasInserted) {
  Cache c(256 * 1024);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> wrong{0}, hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      std::string got;
      for (uint64_t i = 0; !stop.load(); i++) {
        const uint64_t id = (i * 7 + t) % 13, offset = (i * 31) % 500, n = 100 + offset % 200;
        if (t % 2 == 0) Put(&c, id, offset, n);
        if (Get(&c, id, offset, n, &got, /*no_wait=*/t == 3)) {
          hits++;
          if (got != Piece(id, offset, n)) wrong++;
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop = true;
  for (auto& th : threads) th.join();
  ASSERT_EQ(wrong.load(), 0u);
  ASSERT_TRUE(hits.load() > 0u);
  ASSERT_TRUE(c.GetStats().usage <= 256 * 1024);
}

// Lookups through the cache answer exactly what the files hold; once the
// index block that finds a key was read, a lookup that must not wait gets it
// from the cache even where the page cache has nothing.
TEST(Cache, EngineLooksUpThroughTheCache) {
  FaultInjectingFileSystem fs;
  TestEngine db(test::TmpDir() + "/partition");
  db.options.fs = &fs;
  db.options.max_data_in_blob = 50;
  db.options.cache = std::make_shared<Cache>(1 << 20);
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 70, 1, 100), &model);
  ASSERT_OK(db.Reopen());
  ASSERT_EQ(db.report().indexes_loaded, 2u);
  WriteEach(db.get(), Puts(100, 110, 1, 100), &model);  // into a new active blob
  model.Verify(db.get());                                // every index block read once
  model.Verify(db.get());                                // and again, from the cache
  const Cache::Stats s = db.options.cache->GetStats();
  ASSERT_TRUE(s.hits >= 70u) << s.hits;
  fs.UncacheReads(true);
  fs.ResetCounters();
  LookupResult l;
  ASSERT_OK(db->Lookup(NoWait(), Key(10).data(), &l));  // closed blob: its index block is cached
  ASSERT_EQ(l.kind, GetResult::kFound);
  ASSERT_EQ(fs.no_wait_reads(), 0u);
  GetResult g;
  ASSERT_STATUS(kWouldBlock, db->Get(NoWait(), Key(10).data(), &g));  // the record is not
  // An overwrite is a new record elsewhere: the cached block of the old one is never taken for it.
  WriteEach(db.get(), Puts(10, 11, 2, 100), &model);
  ASSERT_OK(db->Get(Key(10).data(), &g));
  ASSERT_EQ(g.version.timestamp, 2u);
  ASSERT_EQ(std::string(g.record.value(), g.record.value_size), ValueFor(Key(10), 2, 100));
  fs.UncacheReads(false);
  model.Verify(db.get());
}

// A partition opened again reads its files anew: what the cache kept for the
// files of the engine before is never taken for theirs, even where the new
// files hold other records at the same offsets.
TEST(Cache, ReopenedFilesNeverServeOldEntries) {
  auto cache = std::make_shared<Cache>(1 << 20);
  const std::string dir = test::TmpDir() + "/partition";
  GetResult g;
  for (uint64_t ts : {1, 5}) {
    std::filesystem::remove_all(dir);
    TestEngine db(dir);
    db.options.cache = cache;
    ASSERT_OK(db.Open());
    test::Model model;
    // The same keys in the same places each time, other versions and values.
    WriteEach(db.get(), Puts(0, 10, ts, 100), &model);
    ASSERT_OK(db.Reopen());
    ASSERT_EQ(db.report().indexes_loaded, 1u);
    model.Verify(db.get());
    ASSERT_OK(db->Get(Key(3).data(), &g));
    ASSERT_EQ(g.version.timestamp, ts);
    ASSERT_OK(db.Close());
  }
  ASSERT_TRUE(cache->GetStats().hits > 0u);
}

}  // namespace oyster
