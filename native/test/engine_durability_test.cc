// The engine's durability promises (options.h: sync_writes,
// max_dirty_bytes_before_sync) under simulated power losses: seeded random
// puts and deletes, the power cut right after a chosen write is
// acknowledged, the disk reverted to what was synced
// (FaultInjectingFileSystem::DropUnsyncedData), the engine reopened and
// checked against a model of the acknowledged writes the disk still holds.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/format.h"
#include "test/fault_file_system.h"
#include "test/test_util.h"
#include "test/testharness.h"

namespace oyster {
namespace {

using test::FaultInjectingFileSystem;
using test::Key;
using test::TestEngine;
using test::WriteOp;

constexpr uint32_t kKeys = 40;

// Runs the engine's background work (writer tasks, index builds) on the
// test's thread when the test says so: which writes share a batch, and
// whether an index build ran before the power went, then follow from the
// seed rather than from thread timing.
class ManualExecutor final : public Executor {
 public:
  void Schedule(std::function<void()> task) override { tasks_.push_back(std::move(task)); }
  // Runs tasks, and those they schedule, until none is left.
  void RunAll() {
    while (!tasks_.empty()) {
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      task();
    }
  }

 private:
  std::deque<std::function<void()>> tasks_;
};

// An acknowledged write and where its record lies.
struct Record {
  WriteOp op;
  uint64_t blob = 0;
  uint64_t end = 0;  // offset just past the record in its blob
};

// Which blob each record goes to, and where in it: the engine's rule for
// starting a new blob (options.h), applied to records in the order their
// writes are queued. The test checks it against the files.
class BlobLayout {
 public:
  explicit BlobLayout(const EngineOptions& options) : options_(options) {}

  // After a reopen: the blob the engine writes on (0: none yet), and the id
  // of the next new blob.
  void Reset(uint64_t active, uint64_t size, uint64_t records, uint64_t next_id) {
    active_ = active;
    size_ = size;
    records_ = records;
    next_id_ = next_id;
  }

  Record Place(const WriteOp& op) {
    const uint64_t bytes =
        RecordHeaderSize(kBlobFormatVersion, options_.key_size) + (op.tombstone ? 0 : op.value.size());
    if (active_ == 0 || records_ >= options_.max_data_in_blob ||
        (records_ > 0 && size_ + bytes > options_.max_blob_size)) {
      active_ = next_id_++;
      size_ = kBlobHeaderSize;
      records_ = 0;
    }
    size_ += bytes;
    records_++;
    return Record{op, active_, size_};
  }

  // After Engine::CloseActiveBlob: the next record starts a new blob.
  void SealActive() { active_ = 0; }

 private:
  const EngineOptions& options_;
  uint64_t active_ = 0;
  uint64_t size_ = 0;
  uint64_t records_ = 0;
  uint64_t next_id_ = 1;
};

// A write whose outcome the test reads once it is done (counted down on
// `latch`, if any); on_ack runs as it is acknowledged, before the engine's
// writer goes on.
class Request final : public test::OpRequest {
 public:
  explicit Request(const WriteOp& op, test::Latch* latch = nullptr) : OpRequest(op), latch_(latch) {}
  void Done(const Status& s) override {
    status = s;
    done = true;
    if (s.ok() && on_ack) on_ack();
    if (latch_ != nullptr) latch_->CountDown();
  }

  std::function<void()> on_ack;
  Status status;
  bool done = false;

 private:
  test::Latch* const latch_;
};

// The newest of `records` per key, as the engine decides (CompareRecords;
// a full tie goes to the later write).
std::map<std::string, WriteOp> NewestOf(const std::vector<Record>& records) {
  std::map<std::string, WriteOp> newest;
  for (const Record& r : records) {
    auto it = newest.find(r.op.key);
    if (it == newest.end()) {
      newest.emplace(r.op.key, r.op);
    } else if (CompareRecords(r.op.version, r.op.tombstone, it->second.version, it->second.tombstone) >= 0) {
      it->second = r.op;
    }
  }
  return newest;
}

// Every key reads as the newest of `records` (the writes the disk holds)
// or, if none is of that key, as absent: kind, version and value byte for
// byte. And no other record is stored.
void ExpectStored(Engine* db, const std::vector<Record>& records) {
  const std::map<std::string, WriteOp> expected = NewestOf(records);
  for (uint32_t i = 0; i < kKeys; i++) {
    const std::string key = Key(i);
    GetResult g;
    ASSERT_OK(db->Get(key.data(), &g)) << "key " << i;
    LookupResult l;
    ASSERT_OK(db->Lookup(key.data(), &l)) << "key " << i;
    ASSERT_EQ(l.kind, g.kind) << "key " << i;
    auto it = expected.find(key);
    if (it == expected.end()) {
      ASSERT_EQ(g.kind, GetResult::kAbsent) << "key " << i << " was never written, or every write of it was lost";
      continue;
    }
    const WriteOp& want = it->second;
    ASSERT_EQ(g.kind, want.tombstone ? GetResult::kDeleted : GetResult::kFound) << "key " << i;
    ASSERT_EQ(g.version.timestamp, want.version.timestamp) << "key " << i;
    ASSERT_EQ(g.version.stamp, want.version.stamp) << "key " << i;
    ASSERT_EQ(l.version.timestamp, want.version.timestamp) << "key " << i;
    ASSERT_EQ(l.version.stamp, want.version.stamp) << "key " << i;
    if (!want.tombstone) {
      ASSERT_EQ(std::string(g.record.value(), g.record.value_size), want.value) << "key " << i;
    }
  }
  ASSERT_EQ(db->RecordsCount(), records.size());
  ASSERT_EQ(db->Stats().corrupt_reads, 0u);
}

// Totals over the runs of a test, to show it lost what it meant to.
struct LossStats {
  uint64_t power_losses = 0;
  uint64_t acknowledged = 0;  // writes
  uint64_t lost_records = 0;
  uint64_t lost_bytes_last_blob = 0;    // of the newest blob holding acknowledged records
  uint64_t lost_bytes_sealed_blobs = 0;  // of blobs sealed before the power went
};

// Where in a round of writes the power goes.
enum class Cut {
  kAtRandomWrite,   // as a random write is acknowledged
  kAtNewBlob,       // as the first write into a new blob is: its predecessor's index is not built yet
  kAfterLastWrite,  // after the writes, once index builds have run
  kNever,
};

// One engine through rounds of random writes, each ended by a power loss
// and a reopen (some after a crash of the process alone and a reopen), then
// an orderly close followed by one more power loss.
class PowerLossRun {
 public:
  PowerLossRun(bool sync_writes, uint64_t seed, LossStats* stats)
      : seed_(seed),
        stats_(stats),
        db_(test::TmpDir() + (sync_writes ? "/synced" : "/unsynced") + std::to_string(seed), 1),
        rng_(test::RandomSeed() + seed * 0x9E3779B97F4A7C15ull),
        layout_(db_.options) {
    db_.options.fs = &fs_;
    db_.options.executor = &executor_;
    db_.options.sync_writes = sync_writes;
    // Blobs roll over by record count or by size, every few batches. Some
    // seeds sync several times per blob, some (nearly) only when it is sealed.
    db_.options.max_blob_size = 3000;
    db_.options.max_data_in_blob = 12;
    db_.options.max_dirty_bytes_before_sync = std::vector<uint64_t>{400, 2500, 900, 1500}[seed % 4];
  }

  // Lets the engine go even when a failed assertion ended the run early.
  ~PowerLossRun() { executor_.RunAll(); }

  void Run(int rounds) {
    ASSERT_OK(fs_.TrackUnsyncedData(true));
    ASSERT_OK(db_.Open());
    for (int round = 0; round < rounds; round++) {
      const bool process_crash = rng_() % 2 == 0;
      if (process_crash) {
        // A crash of the process alone loses nothing; what it left unsynced
        // must not add to what a power loss soon after may take.
        WriteUntilPowerCut(20 + rng_() % 40, Cut::kNever);
        CrashProcessAndReopen();
        Verify();
      }
      const uint64_t writes = process_crash ? 1 + rng_() % 8 : 40 + rng_() % 60;
      WriteUntilPowerCut(writes, static_cast<Cut>((round + seed_) % 3));
      Verify();  // before the crash the engine serves every acknowledged write
      LosePowerAndReopen();
      Verify();
    }
    // After an orderly close nothing is lost, and every index is in place.
    WriteUntilPowerCut(30, Cut::kNever);
    ASSERT_OK(db_.Close());
    ASSERT_OK(fs_.DropUnsyncedData());
    ASSERT_OK(db_.Open());
    ASSERT_EQ(db_.report().indexes_loaded, db_.report().blobs);
    ASSERT_EQ(db_.report().blobs_scanned, 0u);
    Verify();
    ASSERT_OK(db_.Close());
  }

 private:
  const EngineOptions& options() const { return db_.options; }

  WriteOp RandomOp() {
    const std::string key = Key(rng_() % kKeys);
    const uint64_t seq = ++seq_;  // as the stamp: no two writes share a version by chance
    const uint64_t kind = rng_() % 100;
    Version v{++clock_, seq};
    bool tombstone = false;
    auto latest = latest_.find(key);
    if (kind < 55) {
      // A newer value.
    } else if (kind < 75) {
      tombstone = true;
    } else if (kind < 85 && latest != latest_.end() && !latest->second.tombstone) {
      // A delete at the version of the value it deletes: wins the tie.
      v = latest->second.version;
      tombstone = true;
    } else {
      // An older version: loses to a newer record of the key, unless that
      // one is lost.
      v = Version{1 + rng_() % clock_, seq};
      tombstone = rng_() % 3 == 0;
    }
    if (tombstone) return WriteOp::Delete(key, v);
    const size_t size = rng_() % 6 == 0 ? 0 : rng_() % 300;
    return WriteOp::Put(key, v, test::ValueFor(key, seq, size));
  }

  void Acknowledged(const Record& r) {
    stats_->acknowledged++;
    acked_.push_back(r);
    ends_[r.blob] = r.end;
    auto it = latest_.find(r.op.key);
    if (it == latest_.end() ||
        CompareRecords(r.op.version, r.op.tombstone, it->second.version, it->second.tombstone) >= 0) {
      latest_[r.op.key] = r.op;
    }
  }

  // Writes `count` random ops in batches of 1 to 6 and cuts the power as
  // `cut` says; writes after the cut fail and the round ends.
  void WriteUntilPowerCut(uint64_t count, Cut cut) {
    const uint64_t cut_from = 1 + rng_() % count;
    uint64_t written = 0;
    uint64_t last_blob = 0;
    bool cut_placed = false;
    while (written < count && !power_cut_) {
      const uint64_t batch = std::min<uint64_t>(1 + rng_() % 6, count - written);
      std::vector<Record> records;
      std::vector<std::unique_ptr<Request>> requests;
      for (uint64_t i = 0; i < batch; i++) {
        records.push_back(layout_.Place(RandomOp()));
        requests.push_back(std::make_unique<Request>(records.back().op));
        written++;
        const bool new_blob = records.back().blob != last_blob && last_blob != 0;
        last_blob = records.back().blob;
        if (cut_placed || written < cut_from) continue;
        if (cut == Cut::kAtRandomWrite || (cut == Cut::kAtNewBlob && new_blob)) {
          cut_placed = true;
          requests.back()->on_ack = [this] {
            fs_.CutPower();
            power_cut_ = true;
          };
        }
      }
      // Queued together, written as one batch (or one per blob).
      for (auto& r : requests) db_->Write(r.get());
      executor_.RunAll();
      for (size_t i = 0; i < requests.size(); i++) {
        ASSERT_TRUE(requests[i]->done);
        if (requests[i]->status.ok()) {
          Acknowledged(records[i]);
        } else {
          ASSERT_TRUE(power_cut_) << "write failed with the power on: " << requests[i]->status.ToString();
        }
      }
      if (!power_cut_ && rng_() % 16 == 0) {
        ASSERT_OK(db_->CloseActiveBlob());
        layout_.SealActive();
      }
    }
    executor_.RunAll();
    if (!power_cut_ && cut != Cut::kNever) {
      fs_.CutPower();
      power_cut_ = true;
    }
  }

  // Drops the engine without closing it. Until the disk forgets, the files
  // hold the acknowledged records and nothing after them (which checks the
  // layout too).
  void Crash() {
    executor_.RunAll();  // index builds scheduled before a power cut fail now
    db_.Crash();
    for (const auto& [blob, end] : ends_) {
      ASSERT_EQ(test::FileSize(test::BlobPath(db_.dir(), blob)), end) << "blob " << blob;
    }
  }

  void CrashProcessAndReopen() {
    Crash();
    Reopen();
  }

  void LosePowerAndReopen() {
    Crash();
    const std::string dir = db_.dir();
    ASSERT_OK(fs_.DropUnsyncedData());
    power_cut_ = false;
    stats_->power_losses++;

    // What the disk kept of each blob: acknowledged records past the last
    // sync are lost, at most max_dirty_bytes_before_sync bytes per blob.
    std::map<uint64_t, uint64_t> kept;
    const uint64_t last_blob = ends_.empty() ? 0 : ends_.rbegin()->first;
    for (const auto& [blob, end] : ends_) {
      const std::string path = test::BlobPath(dir, blob);
      ASSERT_TRUE(test::FileExists(path)) << "blob " << blob << " is gone, though its creation was synced";
      const uint64_t size = test::FileSize(path);
      ASSERT_LE(size, end) << "blob " << blob;
      const uint64_t lost = end - size;
      if (options().sync_writes) {
        ASSERT_EQ(lost, 0u) << "acknowledged bytes of blob " << blob << " were lost";
      } else {
        ASSERT_LE(lost, options().max_dirty_bytes_before_sync) << "bytes of blob " << blob << " lost";
      }
      (blob == last_blob ? stats_->lost_bytes_last_blob : stats_->lost_bytes_sealed_blobs) += lost;
      kept[blob] = size;
    }
    // The acknowledged records the disk still holds, and per blob where the
    // last of them ends: the disk forgot whole records, never part of one.
    std::vector<Record> survivors;
    std::map<uint64_t, uint64_t> survivors_end;
    for (const Record& r : acked_) {
      if (r.end <= kept[r.blob]) {
        survivors.push_back(r);
        survivors_end[r.blob] = r.end;
      } else {
        stats_->lost_records++;
      }
    }
    for (const auto& [blob, size] : kept) {
      const uint64_t end = survivors_end.count(blob) ? survivors_end[blob] : kBlobHeaderSize;
      ASSERT_EQ(size, end) << "blob " << blob << " was cut inside a record or its header";
    }
    acked_ = std::move(survivors);
    ends_ = std::move(survivors_end);
    latest_ = NewestOf(acked_);
    Reopen();
  }

  // Opens the engine after a crash and follows where it goes on writing.
  void Reopen() {
    uint64_t max_id = 0;
    for (const std::string& name : test::ListDir(db_.dir())) {
      uint64_t id = 0;
      if (ParseFileName(name, options().blob_file_prefix, &id) != FileKind::kOther) max_id = std::max(max_id, id);
    }

    // Nothing to repair: the disk holds whole records, each as written.
    ASSERT_OK(db_.Open());
    const RecoveryReport& r = db_.report();
    ASSERT_EQ(r.bytes_truncated, 0u);
    ASSERT_EQ(r.corrupt_records, 0u);
    ASSERT_EQ(r.skipped_bytes, 0u);
    ASSERT_EQ(r.blobs_quarantined, 0u);
    const EngineStats st = db_->Stats();
    ASSERT_EQ(st.write_error, "");

    // Later records go where the engine goes on writing.
    uint64_t active = 0, size = 0, records = 0;
    if (st.has_active_blob) {
      std::vector<std::shared_ptr<Blob>> blobs;
      ASSERT_OK(db_->CurrentBlobs(&blobs));
      for (const auto& b : blobs) {
        if (b->id() != st.active_blob_id) continue;
        active = b->id();
        size = b->size();
        records = b->records();
      }
      ASSERT_NE(active, 0u);
    }
    layout_.Reset(active, size, records, max_id + 1);
  }

  void Verify() { ExpectStored(db_.get(), acked_); }

  const uint64_t seed_;
  LossStats* const stats_;
  FaultInjectingFileSystem fs_;
  ManualExecutor executor_;
  TestEngine db_;  // after fs_ and executor_: goes first
  std::mt19937_64 rng_;
  BlobLayout layout_;
  std::vector<Record> acked_;                // acknowledged and not lost, in write order
  std::map<uint64_t, uint64_t> ends_;        // per blob: just past its last record in acked_
  std::map<std::string, WriteOp> latest_;    // per key: the newest record in acked_
  uint64_t clock_ = 0;
  uint64_t seq_ = 0;
  bool power_cut_ = false;
};

std::string Describe(const LossStats& s) {
  return std::to_string(s.acknowledged) + " writes acknowledged, " + std::to_string(s.power_losses) +
         " power losses; " + std::to_string(s.lost_records) + " acknowledged records lost: " +
         std::to_string(s.lost_bytes_last_blob) + " bytes of the newest blob, " +
         std::to_string(s.lost_bytes_sealed_blobs) + " of sealed ones";
}

}  // namespace

// With sync_writes every acknowledged write survives a power loss, whenever
// it comes: values, versions and tombstones, across blobs.
TEST(Durability, SyncedWritesSurvivePowerLoss) {
  LossStats stats;
  for (uint64_t seed = 0; seed < 8; seed++) {
    PowerLossRun run(/*sync_writes=*/true, seed, &stats);
    run.Run(4);
  }
  test::Note(Describe(stats));
  ASSERT_EQ(stats.lost_records, 0u);
  ASSERT_EQ(stats.power_losses, 32u);
}

// Without sync_writes a power loss takes at most max_dirty_bytes_before_sync
// bytes of acknowledged records from the end of each blob. Everything
// before them survives; what the model expects accounts for the lost ones
// (a lost tombstone or newer value brings back the older record).
TEST(Durability, UnsyncedWritesLoseAtMostTheDirtyTail) {
  LossStats stats;
  for (uint64_t seed = 0; seed < 8; seed++) {
    PowerLossRun run(/*sync_writes=*/false, seed, &stats);
    run.Run(4);
  }
  test::Note(Describe(stats));
  // The runs really lose data, also of blobs sealed just before the cut.
  ASSERT_GT(stats.lost_bytes_last_blob, 0u);
  ASSERT_GT(stats.lost_bytes_sealed_blobs, 0u);
}

// Writers on several threads, the engine's writer and index builds on a
// pool: the power goes as the n-th write is acknowledged, while other
// writes are queued or half done. Every acknowledged write survives, and no
// write that failed shows up.
TEST(Durability, SyncedWritesOfConcurrentWritersSurvivePowerLoss) {
  constexpr int kThreads = 3;
  FaultInjectingFileSystem fs;
  TestEngine db(test::TmpDir() + "/partition", 2);
  db.options.fs = &fs;
  db.options.sync_writes = true;
  db.options.max_blob_size = 3000;
  db.options.max_data_in_blob = 12;
  ASSERT_OK(fs.TrackUnsyncedData(true));
  ASSERT_OK(db.Open());
  std::vector<Record> acked;
  std::atomic<uint64_t> seq{0};
  for (uint64_t round = 0; round < 4; round++) {
    std::atomic<uint64_t> acks{0};
    const uint64_t cut_at = 40 + round * 60;
    std::vector<std::vector<Record>> written(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
      const uint64_t thread_seed = test::RandomSeed() + round * kThreads + t;
      threads.emplace_back([&, t, thread_seed] {
        std::mt19937_64 rng(thread_seed);
        // Until a write fails: the power is gone.
        for (bool failed = false; !failed;) {
          const uint64_t n = 1 + rng() % 4;
          test::Latch latch(n);
          std::vector<std::unique_ptr<Request>> requests;
          for (uint64_t i = 0; i < n; i++) {
            // Versions are unique and their order is that of seq: the newest
            // write of a key wins, whichever thread got it in first.
            const uint64_t s = ++seq;
            const std::string key = Key(rng() % kKeys);
            const WriteOp op = rng() % 4 == 0 ? WriteOp::Delete(key, Version{s, s})
                                              : WriteOp::Put(key, Version{s, s}, test::ValueFor(key, s, rng() % 200));
            requests.push_back(std::make_unique<Request>(op, &latch));
            requests.back()->on_ack = [&] {
              if (acks.fetch_add(1) + 1 == cut_at) fs.CutPower();
            };
          }
          for (auto& r : requests) db->Write(r.get());
          latch.Wait();
          for (const auto& r : requests) {
            if (r->status.ok()) {
              written[t].push_back(Record{WriteOp{std::string(r->key, db.options.key_size), r->version,
                                                  std::string(r->value, r->value_size), r->tombstone}});
            } else {
              failed = true;
            }
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    ASSERT_GE(acks.load(), cut_at);
    db.Crash();
    ASSERT_OK(fs.DropUnsyncedData());
    for (const std::vector<Record>& w : written) acked.insert(acked.end(), w.begin(), w.end());
    ASSERT_OK(db.Open());
    ExpectStored(db.get(), acked);
  }
}

}  // namespace oyster
