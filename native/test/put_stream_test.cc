// Streamed puts: a value written in pieces into space reserved for it reads
// back exactly once finished and not before; puts go on meanwhile; a stream
// aborted, abandoned, cut by a crash or by a power loss leaves nothing
// readable and nothing in the way of the records around it; sealing and
// closing wait for nobody. Also the block checksums of large values.

#include "engine/put_stream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/format.h"
#include "test/fault_file_system.h"
#include "test/test_util.h"
#include "test/testharness.h"
#include "util/coding.h"
#include "util/crc32c.h"

namespace oyster {
namespace {

using test::BeginStream;
using test::FaultInjectingFileSystem;
using test::GatedExecutor;
using test::Key;
using test::Puts;
using test::Read;
using test::StreamPut;
using test::TestEngine;
using test::ValueFor;
using test::WriteEach;
using test::WriteOp;

// A value of n bytes that differs at every position and from key to key.
std::string BigValue(const std::string& key, uint64_t ts, size_t n) { return ValueFor(key, ts, n); }

LookupResult Lookup(Engine* e, const std::string& key) {
  LookupResult l;
  Status s = e->Lookup(key.data(), &l);
  if (!s.ok()) FAIL() << s.ToString();
  return l;
}

// Appends value[from, to) in pieces of 10 000 bytes.
Status AppendRange(PutStream* stream, const std::string& value, size_t from, size_t to) {
  for (size_t at = from; at < to; at += 10000) {
    Status s = stream->Append(value.data() + at, std::min<size_t>(10000, to - at));
    if (!s.ok()) return s;
  }
  return Status::OK();
}

// A write acknowledged in a power-loss test, and the bytes its record takes.
struct Acked {
  std::string key, value;
  uint64_t bytes;  // the record's, header and block checksums included
};

Acked AckedPut(const EngineOptions& options, const std::string& key, const std::string& value) {
  const uint8_t flags = ValueHasBlocks(value.size()) ? kFlagBlocks : 0;
  return Acked{key, value, RecordSize(kBlobFormatVersion, options.key_size, flags, value.size())};
}

// An engine on `fs` writing into one blob (the bound is per blob), tracking
// what a power loss would leave.
void OpenForPowerLoss(TestEngine* db, FaultInjectingFileSystem* fs, uint64_t bound) {
  db->options.fs = fs;
  db->options.max_dirty_bytes_before_sync = bound;
  db->options.max_blob_size = 1ull << 34;
  db->options.max_data_in_blob = 1u << 30;
  ASSERT_OK(fs->TrackUnsyncedData(true));
  ASSERT_OK(db->Open());
}

// Whether `a` survived the power loss: its value, whole, or nothing at all.
bool Survived(Engine* db, const Acked& a) {
  const std::string got = Read(db, a.key);
  if (got == a.value) return true;
  ASSERT_EQ(got, "NOT_FOUND") << "a record came back other than written";
  return false;
}

}  // namespace

TEST(PutStream, ReadsBackOnceFinished) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 10, 1, 100), &model);
  for (size_t n : {size_t{1}, size_t{65536}, size_t{65537}, size_t{1 << 20}, size_t{3 * 65536 + 17}}) {
    const std::string key = Key(1000 + n);
    const std::string value = BigValue(key, 2, n);
    ASSERT_OK(StreamPut(db.get(), key, test::Ts(2), value, 7000));
    model.Put(key, 2, value);
    ASSERT_EQ(Read(db.get(), key), value) << n << " bytes";
  }
  model.Verify(db.get());
  ASSERT_OK(db.Reopen());  // from the index file
  model.Verify(db.get());
  db.Crash();
  test::RemoveFile(test::IndexPath(db.dir(), 1));
  ASSERT_OK(db.Open());  // from a scan
  ASSERT_EQ(db.report().blobs_scanned, 1u);
  ASSERT_EQ(db.report().corrupt_records, 0u);
  model.Verify(db.get());
}

TEST(PutStream, InvisibleUntilFinishedWhileOtherPutsGoOn) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  test::Model model;
  const std::string key = Key(7);
  WriteEach(db.get(), {test::WriteOp::Put(key, 1, "old")}, &model);
  const std::string value = BigValue(key, 2, 300000);
  std::unique_ptr<PutStream> stream;
  ASSERT_OK(BeginStream(db.get(), key, test::Ts(2), value.size(), &stream));
  ASSERT_OK(AppendRange(stream.get(), value, 0, 150000));
  // Puts after the stream's space, while it is open.
  WriteEach(db.get(), Puts(100, 200, 3, 100), &model);
  ASSERT_EQ(Read(db.get(), key), "old");
  ASSERT_OK(AppendRange(stream.get(), value, 150000, value.size()));
  ASSERT_EQ(Read(db.get(), key), "old");
  ASSERT_EQ(Lookup(db.get(), key).version.timestamp, 1u);
  ASSERT_OK(stream->Finish());
  model.Put(key, 2, value);
  ASSERT_EQ(Read(db.get(), key), value);
  model.Verify(db.get());
  ASSERT_OK(db.Reopen());
  model.Verify(db.get());
}

TEST(PutStream, RefusesWrongLengthsAndStaysUsable) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  const std::string key = Key(3);
  const std::string value = BigValue(key, 2, 100000);
  std::unique_ptr<PutStream> stream;
  ASSERT_OK(BeginStream(db.get(), key, test::Ts(2), value.size(), &stream));
  ASSERT_OK(stream->Append(value.data(), 60000));
  ASSERT_STATUS(kInvalidArgument, stream->Finish());  // 40 000 bytes missing
  ASSERT_STATUS(kInvalidArgument, stream->Append(value.data(), 40001));
  ASSERT_OK(stream->Append(value.data() + 60000, 40000));
  ASSERT_OK(stream->Finish());
  ASSERT_STATUS(kClosed, stream->Append(value.data(), 1));
  ASSERT_STATUS(kClosed, stream->Finish());
  ASSERT_EQ(Read(db.get(), key), value);
  // A tombstone has no value to stream; a value must fit a record.
  std::unique_ptr<PutStream> none;
  ASSERT_STATUS(kInvalidArgument, BeginStream(db.get(), key, test::Ts(3), kMaxStreamedValueSize + 1, &none));
  ASSERT_TRUE(none == nullptr);
}

// Aborted, abandoned (destroyed unfinished) or cut by a crash: the older
// value stays, the records around the space are intact, and a scan steps
// over the space without counting damage.
TEST(PutStream, UnfinishedStreamsLeaveNothing) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 20, 1, 100), &model);
  std::vector<std::unique_ptr<PutStream>> streams(3);
  for (int i = 0; i < 3; i++) {
    const std::string key = Key(i);
    const std::string value = BigValue(key, 5, 200000);
    ASSERT_OK(BeginStream(db.get(), key, test::Ts(5), value.size(), &streams[i]));
    ASSERT_OK(AppendRange(streams[i].get(), value, 0, i == 2 ? value.size() : 123456));
    WriteEach(db.get(), Puts(100 + 10 * i, 110 + 10 * i, 2, 100), &model);
  }
  streams[0]->Abort();
  ASSERT_STATUS(kClosed, streams[0]->Finish());
  streams[1].reset();  // abandoned
  model.Verify(db.get());
  // The third, fully written but never finished, is cut by a crash.
  db.Crash();
  streams[2].reset();
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().corrupt_records, 0u);
  ASSERT_EQ(db.report().skipped_bytes, 0u);
  model.Verify(db.get());
  WriteEach(db.get(), Puts(200, 210, 3, 100), &model);  // appended behind the void space
  ASSERT_OK(db.Reopen());
  model.Verify(db.get());
}

// A stream left void at the very end of a blob and then a crash: the tail
// is cut, nothing else.
TEST(PutStream, VoidTailIsCutAtRecovery) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 5, 1, 100), &model);
  const uint64_t before = test::FileSize(test::BlobPath(db.dir(), 1));
  std::unique_ptr<PutStream> stream;
  const std::string value = BigValue(Key(1), 2, 500000);
  ASSERT_OK(BeginStream(db.get(), Key(1), test::Ts(2), value.size(), &stream));
  ASSERT_OK(AppendRange(stream.get(), value, 0, 1000));
  db.Crash();
  stream.reset();
  ASSERT_OK(db.Open());
  ASSERT_EQ(test::FileSize(test::BlobPath(db.dir(), 1)), before);
  model.Verify(db.get());
}

// Sealing a blob with a stream open defers its index until the stream ends;
// the stream's record is in it.
TEST(PutStream, IndexWaitsForOpenStreams) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 5, 1, 100), &model);
  const std::string key = Key(2);
  const std::string value = BigValue(key, 2, 200000);
  std::unique_ptr<PutStream> stream;
  ASSERT_OK(BeginStream(db.get(), key, test::Ts(2), value.size(), &stream));
  ASSERT_OK(db->CloseActiveBlob());
  ASSERT_FALSE(test::FileExists(test::IndexPath(db.dir(), 1)));
  WriteEach(db.get(), Puts(10, 15, 3, 100), &model);  // into blob 2
  ASSERT_OK(AppendRange(stream.get(), value, 0, value.size()));
  ASSERT_OK(stream->Finish());
  model.Put(key, 2, value);
  ASSERT_TRUE(test::Eventually([&] { return test::FileExists(test::IndexPath(db.dir(), 1)); }));
  model.Verify(db.get());
  ASSERT_OK(db.Reopen());
  ASSERT_EQ(db.report().indexes_loaded, 2u);
  model.Verify(db.get());
  // Aborted instead: the index still gets written, without the record.
  std::unique_ptr<PutStream> other;
  ASSERT_OK(BeginStream(db.get(), Key(3), test::Ts(4), value.size(), &other));
  ASSERT_OK(db->CloseActiveBlob());
  other->Abort();
  ASSERT_TRUE(test::Eventually([&] { return db->Stats().blobs_in_memory == 0; }));
  ASSERT_OK(db.Reopen());
  model.Verify(db.get());
}

// Close aborts open streams: what they wrote never appears.
TEST(PutStream, CloseAbortsOpenStreams) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 5, 1, 100), &model);
  const std::string value = BigValue(Key(1), 2, 200000);
  std::unique_ptr<PutStream> stream;
  ASSERT_OK(BeginStream(db.get(), Key(1), test::Ts(2), value.size(), &stream));
  ASSERT_OK(AppendRange(stream.get(), value, 0, value.size()));
  std::shared_ptr<Engine> engine;
  ASSERT_OK(db->Close());
  ASSERT_STATUS(kClosed, stream->Finish());
  stream.reset();
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().indexes_loaded, 1u);
  model.Verify(db.get());
}

// With sync_writes, a finished stream survives a power loss; an unfinished
// one leaves nothing, even where its header reached the disk.
TEST(PutStream, PowerLossKeepsWhatWasFinished) {
  FaultInjectingFileSystem fs;
  TestEngine db(test::TmpDir() + "/partition");
  db.options.fs = &fs;
  db.options.sync_writes = true;
  ASSERT_OK(db.Open());
  test::Model model;
  WriteEach(db.get(), Puts(0, 5, 1, 100), &model);
  db.Crash();
  ASSERT_OK(fs.TrackUnsyncedData(true));
  ASSERT_OK(db.Open());
  const std::string done = BigValue(Key(1), 2, 300000);
  ASSERT_OK(StreamPut(db.get(), Key(1), test::Ts(2), done, 50000));
  model.Put(Key(1), 2, done);
  std::unique_ptr<PutStream> open;
  const std::string partial = BigValue(Key(2), 2, 300000);
  ASSERT_OK(BeginStream(db.get(), Key(2), test::Ts(2), partial.size(), &open));
  ASSERT_OK(AppendRange(open.get(), partial, 0, partial.size()));
  WriteEach(db.get(), Puts(10, 12, 3, 100), &model);  // synced: the void header is on disk
  fs.CutPower();
  db.Crash();
  open.reset();
  ASSERT_OK(fs.DropUnsyncedData());
  ASSERT_OK(db.Open());
  ASSERT_EQ(db.report().corrupt_records, 0u);
  model.Verify(db.get());
  ASSERT_OK(db.Close());
  ASSERT_OK(fs.TrackUnsyncedData(false));
}

// Without sync_writes a power loss takes at most max_dirty_bytes_before_sync
// bytes of acknowledged records, counting a streamed record whole: what a
// sync or a write-back covered while it streamed is lost with its unsynced
// tail, so a stream larger than the bound is synced before it finishes.
// Seeded rounds of batches and streams (up to two open at once, their
// pieces between the batches), the power cut as a random write is
// acknowledged.
TEST(PutStream, PowerLossTakesAtMostTheBoundCountingStreamsWhole) {
  constexpr uint64_t kBound = 200000;
  struct Open {
    std::unique_ptr<PutStream> stream;
    std::string key, value;
    size_t at = 0;
  };
  uint64_t power_losses = 0, lost_records = 0, lost_streams_over_bound = 0, streams_over_bound = 0;
  for (uint64_t seed = 0; seed < 12; seed++) {
    std::mt19937_64 rng(test::RandomSeed() + seed);
    FaultInjectingFileSystem fs;
    TestEngine db(test::TmpDir() + "/bound" + std::to_string(seed));
    OpenForPowerLoss(&db, &fs, kBound);
    std::vector<Acked> acked;  // survived every power loss so far
    uint64_t next_key = seed << 32;
    for (int round = 0; round < 4; round++) {
      const uint64_t cut_after = 5 + rng() % 40;  // acknowledgements
      std::vector<Acked> this_round;
      std::vector<Open> open;
      while (this_round.size() < cut_after) {
        const uint64_t what = rng() % 10;
        if (what < 4 || (what >= 7 && open.empty())) {
          // A batch of small puts.
          std::vector<WriteOp> ops;
          const uint64_t n = 1 + rng() % 5;
          for (uint64_t i = 0; i < n; i++) {
            const std::string key = Key(next_key++, db.options.key_size);
            ops.push_back(WriteOp::Put(key, test::Ts(2), ValueFor(key, 2, rng() % 20000)));
          }
          for (const Status& st : test::WriteAll(db.get(), ops)) ASSERT_OK(st);
          for (const WriteOp& op : ops) this_round.push_back(AckedPut(db.options, op.key, op.value));
        } else if (what < 7 && open.size() < 2) {
          Open o;
          o.key = Key(next_key++, db.options.key_size);
          const uint64_t n = rng() % 3 == 0 ? kBound + rng() % (2 * kBound) : 1 + rng() % kBound;
          o.value = ValueFor(o.key, 2, n);
          ASSERT_OK(BeginStream(db.get(), o.key, test::Ts(2), n, &o.stream));
          open.push_back(std::move(o));
        } else if (!open.empty()) {
          // The next piece of an open stream; its finish once it is whole.
          Open& o = open[rng() % open.size()];
          const size_t n = std::min<size_t>(1 + rng() % (o.value.size() / 2 + 1), o.value.size() - o.at);
          ASSERT_OK(o.stream->Append(o.value.data() + o.at, n));
          o.at += n;
          if (o.at == o.value.size()) {
            ASSERT_OK(o.stream->Finish());
            this_round.push_back(AckedPut(db.options, o.key, o.value));
            if (o.value.size() > kBound) streams_over_bound++;
            open.erase(std::find_if(open.begin(), open.end(), [&o](const Open& x) { return &x == &o; }));
          }
        }
      }
      fs.CutPower();
      power_losses++;
      for (Open& o : open) o.stream.reset();  // aborted: nothing of them may appear
      db.Crash();
      ASSERT_OK(fs.DropUnsyncedData());
      ASSERT_OK(db.Open());
      ASSERT_EQ(db.report().corrupt_records, 0u);
      for (const Acked& a : acked) ASSERT_EQ(Read(db.get(), a.key), a.value) << "lost though a sync covered it";
      uint64_t lost = 0;
      for (const Acked& a : this_round) {
        if (Survived(db.get(), a)) {
          acked.push_back(a);
          continue;
        }
        lost += a.bytes;
        lost_records++;
        if (a.value.size() > kBound) lost_streams_over_bound++;
      }
      ASSERT_LE(lost, kBound) << "bytes of acknowledged records lost, seed " << seed << " round " << round;
    }
    ASSERT_OK(db.Close());
    ASSERT_OK(fs.TrackUnsyncedData(false));
  }
  test::Note(std::to_string(power_losses) + " power losses, " + std::to_string(lost_records) +
             " acknowledged records lost; " + std::to_string(streams_over_bound) + " streams over the bound, " +
             std::to_string(lost_streams_over_bound) + " of them lost");
  ASSERT_GT(lost_records, 0u);  // the runs do lose what the bound lets go
  ASSERT_GT(streams_over_bound, 0u);
  ASSERT_EQ(lost_streams_over_bound, 0u);
}

// The same promise with streams and batches on two threads and syncs that
// take a while: a write acknowledged while another writer's sync is under
// way counts on top of what that sync is to cover, until it completes. The
// power is cut as the n-th write is acknowledged, whichever thread's.
TEST(PutStream, PowerLossTakesAtMostTheBoundWhileSyncsAreUnderWay) {
  constexpr uint64_t kBound = 200000;
  uint64_t power_losses = 0, lost_records = 0, max_lost = 0;
  for (uint64_t seed = 0; seed < 8; seed++) {
    FaultInjectingFileSystem fs;
    fs.SetSyncDelay(std::chrono::microseconds(2000));
    TestEngine db(test::TmpDir() + "/threads" + std::to_string(seed));
    OpenForPowerLoss(&db, &fs, kBound);
    std::mt19937_64 pick(test::RandomSeed() + seed);
    const uint64_t cut_at = 10 + pick() % 60;
    std::mutex mu;
    std::vector<Acked> acked;
    std::atomic<bool> cut{false};
    const auto ack = [&](std::vector<Acked> done) {
      std::lock_guard<std::mutex> l(mu);
      for (Acked& a : done) acked.push_back(std::move(a));
      if (acked.size() >= cut_at && !cut.exchange(true)) fs.CutPower();
    };
    std::thread streams([&, thread_seed = pick()] {
      std::mt19937_64 rng(thread_seed);
      for (uint64_t k = 0; !cut.load(); k++) {
        const std::string key = Key((seed << 40) | (1ull << 32) | k, db.options.key_size);
        const std::string value = ValueFor(key, 2, 20000 + rng() % 300000);
        std::unique_ptr<PutStream> stream;
        if (!BeginStream(db.get(), key, test::Ts(2), value.size(), &stream).ok()) return;
        Status st;
        for (size_t at = 0; st.ok() && at < value.size(); at += 60000) {
          st = stream->Append(value.data() + at, std::min<size_t>(60000, value.size() - at));
        }
        if (st.ok()) st = stream->Finish();
        if (!st.ok()) return;
        ack({AckedPut(db.options, key, value)});
      }
    });
    std::thread batches([&, thread_seed = pick()] {
      std::mt19937_64 rng(thread_seed);
      for (uint64_t k = 0; !cut.load();) {
        std::vector<WriteOp> ops;
        for (uint64_t i = 0, n = 1 + rng() % 4; i < n; i++, k++) {
          const std::string key = Key((seed << 40) | (2ull << 32) | k, db.options.key_size);
          ops.push_back(WriteOp::Put(key, test::Ts(2), ValueFor(key, 2, 1000 + rng() % 30000)));
        }
        std::vector<Acked> done;
        for (size_t i = 0; i < ops.size(); i++) {
          const std::vector<Status> st = test::WriteAll(db.get(), {ops[i]});
          if (!st[0].ok()) break;
          done.push_back(AckedPut(db.options, ops[i].key, ops[i].value));
        }
        const bool failed = done.size() < ops.size();
        ack(std::move(done));
        if (failed) return;
      }
    });
    streams.join();
    batches.join();
    power_losses++;
    db.Crash();
    ASSERT_OK(fs.DropUnsyncedData());
    ASSERT_OK(db.Open());
    ASSERT_EQ(db.report().corrupt_records, 0u);
    uint64_t lost = 0;
    for (const Acked& a : acked) {
      if (Survived(db.get(), a)) continue;
      lost += a.bytes;
      lost_records++;
    }
    max_lost = std::max(max_lost, lost);
    ASSERT_LE(lost, kBound) << "bytes of acknowledged records lost, seed " << seed;
    ASSERT_OK(db.Close());
    ASSERT_OK(fs.TrackUnsyncedData(false));
  }
  test::Note(std::to_string(power_losses) + " power losses, " + std::to_string(lost_records) +
             " acknowledged records lost, at most " + std::to_string(max_lost) + " bytes at once");
  ASSERT_GT(lost_records, 0u);
}

// A stream that finishes on a blob sealed while it streamed is synced before
// it is acknowledged: that blob's sync otherwise waits for its index build,
// which only starts once the last stream on it has ended.
TEST(PutStream, FinishedOnASealedBlobSurvivesPowerLoss) {
  FaultInjectingFileSystem fs;
  TestEngine db(test::TmpDir() + "/partition");
  db.options.fs = &fs;
  db.options.max_dirty_bytes_before_sync = 1 << 30;
  GatedExecutor* gate = db.gate();
  ASSERT_OK(fs.TrackUnsyncedData(true));
  ASSERT_OK(db.Open());
  const std::string value = BigValue(Key(1), 2, 100000);
  std::unique_ptr<PutStream> stream;
  ASSERT_OK(BeginStream(db.get(), Key(1), test::Ts(2), value.size(), &stream));
  ASSERT_OK(AppendRange(stream.get(), value, 0, 50000));
  ASSERT_OK(db->CloseActiveBlob());
  gate->Close();  // no index build runs before the power goes
  ASSERT_OK(AppendRange(stream.get(), value, 50000, value.size()));
  ASSERT_OK(stream->Finish());
  stream.reset();
  fs.CutPower();
  gate->Open();  // the index build fails now, as the power is gone
  db.Crash();
  ASSERT_OK(fs.DropUnsyncedData());
  ASSERT_OK(db.Open());
  ASSERT_EQ(Read(db.get(), Key(1)), value);
  ASSERT_OK(db.Close());
  ASSERT_OK(fs.TrackUnsyncedData(false));
}

// An append of several pieces writes their bytes in order: the record is
// byte for byte the one a put, or appends of one piece each, write.
TEST(PutStream, AppendOfSeveralPiecesWritesTheSameRecord) {
  const std::string key = Key(4);
  const std::string value = BigValue(key, 2, 3 * 65536 + 999);
  std::vector<std::string> blobs;
  for (int way = 0; way < 3; way++) {
    TestEngine db(test::TmpDir() + "/partition" + std::to_string(way));
    ASSERT_OK(db.Open());
    if (way == 0) {
      ASSERT_OK(test::Put(db.get(), key, test::Ts(2), value));
    } else if (way == 1) {
      ASSERT_OK(StreamPut(db.get(), key, test::Ts(2), value, 30000));
    } else {
      std::unique_ptr<PutStream> stream;
      ASSERT_OK(BeginStream(db.get(), key, test::Ts(2), value.size(), &stream));
      // Up to five pieces of uneven sizes per call, an empty one among them.
      size_t at = 0;
      for (int call = 0; at < value.size(); call++) {
        std::vector<IoSlice> pieces;
        for (int i = 0; i <= call % 5 && at < value.size(); i++) {
          const size_t n = std::min<size_t>(value.size() - at, 1 + (call * 7919 + i * 104729) % 40000);
          pieces.push_back(IoSlice{value.data() + at, n});
          if (i == 1) pieces.push_back(IoSlice{value.data() + at, 0});
          at += n;
        }
        ASSERT_OK(stream->Append(pieces.data(), static_cast<int>(pieces.size())));
      }
      // More than announced: refused whole, nothing written.
      const IoSlice extra[2] = {{value.data(), 0}, {value.data(), 1}};
      ASSERT_STATUS(kInvalidArgument, stream->Append(extra, 2));
      ASSERT_EQ(stream->written(), value.size());
      ASSERT_OK(stream->Finish());
    }
    ASSERT_EQ(Read(db.get(), key), value);
    ASSERT_OK(db.Close());
    blobs.push_back(test::ReadFileOrThrow(test::BlobPath(db.dir(), 1)));
  }
  ASSERT_TRUE(blobs[1] == blobs[0]);
  ASSERT_TRUE(blobs[2] == blobs[0]);
}

// Values over one block carry block checksums, streamed or not; they read
// back, survive scans, and a damaged block shows as a damaged record.
TEST(PutStream, LargeValuesCarryBlockChecksums) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  test::Model model;
  const std::string big = BigValue(Key(1), 1, 200000);
  WriteEach(db.get(), {test::WriteOp::Put(Key(1), 1, big)}, &model);
  WriteEach(db.get(), Puts(2, 4, 1, 100), &model);
  RecordLocation where;
  LookupResult l;
  ASSERT_OK(db->Locate(ReadOptions(), Key(1).data(), &l, &where));
  ASSERT_EQ(where.entry.flags, kFlagBlocks);
  const size_t hsize = RecordHeaderSize(kBlobFormatVersion, 16);
  const std::string file = test::ReadFileOrThrow(test::BlobPath(db.dir(), 1));
  // The checksums follow the value: block 3 (the short last one) among them.
  const uint64_t trailer = where.entry.offset + hsize + big.size();
  ASSERT_EQ(DecodeFixed32(file.data() + trailer + 12), crc32c::Value(big.data() + 3 * 65536, big.size() - 3 * 65536));
  ASSERT_EQ(test::FileSize(test::BlobPath(db.dir(), 1)), trailer + 16 + 2 * (hsize + 100));
  db.Crash();
  ASSERT_OK(db.Open());  // scanned: the records after the checksums are found
  ASSERT_EQ(db.report().corrupt_records, 0u);
  model.Verify(db.get());
}

// A large value's pieces are handed to the device as they are written
// (File::StartWriteback, exactly the bytes of each piece, in order), so the
// syncs that make it durable find little left to write; small values are
// left to the page cache.
TEST(PutStream, LargeValuesStartWritebackPieceByPiece) {
  FaultInjectingFileSystem fs;
  TestEngine db(test::TmpDir() + "/partition");
  db.options.fs = &fs;
  ASSERT_OK(db.Open());
  const std::string small = BigValue(Key(1), 1, 200000);
  ASSERT_OK(StreamPut(db.get(), Key(1), test::Ts(1), small, 50000));
  ASSERT_TRUE(fs.cache_hints(FaultInjectingFileSystem::CacheHint::kWriteback).empty());

  const std::string large = BigValue(Key(2), 2, 1000000);
  ASSERT_OK(StreamPut(db.get(), Key(2), test::Ts(2), large, 300000));
  const auto hints = fs.cache_hints(FaultInjectingFileSystem::CacheHint::kWriteback);
  ASSERT_TRUE(hints.size() >= 2);
  // One hint per Append, back to back over the value's bytes.
  uint64_t total = 0;
  for (size_t i = 0; i < hints.size(); i++) {
    ASSERT_EQ(hints[i].offset, hints[0].offset + total);
    total += hints[i].n;
  }
  ASSERT_EQ(total, large.size());
  ASSERT_EQ(Read(db.get(), Key(2)), large);
  ASSERT_OK(db.Close());
}

// A stream never waits for a free thread of the executor: the work it
// handed over and must see done (the write-back before its next one, all of
// it at Finish) is run by the stream's own thread when no executor thread
// took it. Otherwise streams appending on every executor thread at once
// would wait for write-backs queued behind themselves. Here the executor
// runs nothing at all while the stream goes on.
TEST(PutStream, WaitsForNoExecutorThread) {
  FaultInjectingFileSystem fs;
  TestEngine db(test::TmpDir() + "/partition");
  db.options.fs = &fs;
  db.options.max_dirty_bytes_before_sync = 300000;
  GatedExecutor* gate = db.gate();
  ASSERT_OK(db.Open());
  const std::string value = BigValue(Key(2), 2, 2000000);
  std::unique_ptr<PutStream> stream;
  ASSERT_OK(BeginStream(db.get(), Key(2), test::Ts(2), value.size(), &stream));
  fs.ResetCounters();
  gate->Close();
  std::promise<Status> result;
  std::future<Status> done = result.get_future();
  std::thread appender([&] {
    Status s;
    for (size_t at = 0; s.ok() && at < value.size(); at += 100000) {
      s = stream->Append(value.data() + at, std::min<size_t>(100000, value.size() - at));
    }
    if (s.ok()) s = stream->Finish();
    result.set_value(s);
  });
  if (done.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::fprintf(stderr, "PutStream.WaitsForNoExecutorThread: the stream waits for the executor\n");
    std::abort();  // the appender cannot be joined
  }
  appender.join();
  ASSERT_OK(done.get());
  // Written back as it went (2 MB past a bound of 300 kB), each piece handed
  // to the device, and synced at its finish.
  ASSERT_GE(fs.cache_hints(FaultInjectingFileSystem::CacheHint::kWrittenBack).size(), 5u);
  ASSERT_GE(fs.syncs(), 1u);
  ASSERT_EQ(fs.cache_hints(FaultInjectingFileSystem::CacheHint::kWriteback).size(), 20u);
  ASSERT_EQ(Read(db.get(), Key(2)), value);
  gate->Open();
  ASSERT_OK(db.Reopen());
  ASSERT_EQ(Read(db.get(), Key(2)), value);
}

}  // namespace oyster
