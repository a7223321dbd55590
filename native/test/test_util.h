// Helpers shared by the engine tests: deterministic keys and values, whole
// file manipulation (to damage files the way disks and crashes do), an
// in-memory File, and synchronous wrappers around the engine's asynchronous
// write API.

#ifndef OYSTER_TEST_TEST_UTIL_H_
#define OYSTER_TEST_TEST_UTIL_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_set.h"
#include "util/file_system.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace oyster {
namespace test {

// ---------------------------------------------------------------- data

// Key number i, key_size bytes: 'k' padding then i in big-endian binary (so
// keys contain zero bytes and memcmp order is numeric order). For key sizes
// below 8 only the low bytes of i are kept.
std::string Key(uint64_t i, size_t key_size = 16);

// `size` bytes determined by (key, timestamp): a reader can check that a
// value belongs to the key and version it was returned for.
std::string ValueFor(const std::string& key, uint64_t timestamp, size_t size);

// A version known by its timestamp only (stamp 0), as bob peers write.
inline Version Ts(uint64_t timestamp) { return Version{timestamp, 0}; }


// ---------------------------------------------------------------- formats

// The header of a record as blob format `format` lays it out (the engine
// writes format 2 only; tests build format-1 blobs with this). The value
// follows the header in the file.
std::string RecordHeaderBytes(uint32_t format, uint8_t flags, uint64_t offset, const Version& version,
                              const std::string& key, const std::string& value);
// A blob header of `format`.
std::string BlobHeaderBytes(uint32_t format, size_t key_size, uint64_t blob_id);

// ---------------------------------------------------------------- files

std::string ReadFileOrThrow(const std::string& path);
void WriteFileOrThrow(const std::string& path, const std::string& data);
void AppendToFile(const std::string& path, const std::string& data);
// XORs the byte at offset with mask, in place.
void FlipByte(const std::string& path, uint64_t offset, uint8_t mask = 0x01);
void TruncateFile(const std::string& path, uint64_t size);
uint64_t FileSize(const std::string& path);
bool FileExists(const std::string& path);
void RemoveFile(const std::string& path);
// Sorted names in dir (files and directories).
std::vector<std::string> ListDir(const std::string& dir);

// A path below the repository (test/fixtures/...): tests share fixtures
// with the TypeScript tests.
std::string SourcePath(const std::string& relative);
// Copies directory `from` with everything in it into `to` (created if needed).
void CopyDir(const std::string& from, const std::string& to);

// Paths of the engine's files for blob `id` under the default prefix.
std::string BlobPath(const std::string& dir, uint64_t id);
std::string IndexPath(const std::string& dir, uint64_t id);

// A File over a string, for tests of the scanner and the index reader.
class StringFile final : public File {
 public:
  explicit StringFile(std::string data) : data_(std::move(data)) {}
  Status Read(uint64_t offset, size_t n, char* buf, size_t* bytes_read) const override;
  Status ReadV(uint64_t offset, const IoBuffer* buffers, int count, size_t* bytes_read) const override;
  Status Write(uint64_t offset, const IoSlice* slices, int count) override;
  Status Sync() override { return Status::OK(); }
  Status Truncate(uint64_t size) override;
  Status Size(uint64_t* size) const override;
  Status Removed(bool* removed) const override {
    *removed = false;
    return Status::OK();
  }
  const std::string& path() const override { return path_; }
  std::string* data() { return &data_; }

 private:
  std::string data_;
  const std::string path_ = "<memory>";
};

// ---------------------------------------------------------------- threads

// Polls until pred() holds; false if it still does not after `seconds`.
bool Eventually(const std::function<bool()>& pred, int seconds = 10);

// Counts down to zero once; Wait blocks until then.
class Latch {
 public:
  explicit Latch(size_t count) : count_(count) {}
  void CountDown();
  void Wait();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  size_t count_;
};

// Passes tasks on to `target` and counts those that have not returned yet.
// An engine whose last reference a task held is destroyed (its directory
// unlocked) only as that task returns, after the engine's weak pointers have
// expired: waiting for the count to reach zero waits for that too.
class CountingExecutor final : public Executor {
 public:
  explicit CountingExecutor(Executor* target) : target_(target) {}
  void Schedule(std::function<void()> task) override;
  // Returns once no task passed on is queued or running; false if some
  // still is at `deadline`.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);

 private:
  Executor* const target_;
  std::mutex mu_;
  std::condition_variable idle_cv_;
  uint64_t unfinished_ = 0;  // guarded by mu_
};

// Holds every task scheduled while closed; Open() hands them (and all later
// ones) to `target`. Lets a test queue writes before the writer may run, so
// that batches are deterministic.
class GatedExecutor final : public Executor {
 public:
  explicit GatedExecutor(CountingExecutor* target) : target_(target) {}
  void Schedule(std::function<void()> task) override;
  // Holds tasks from now on. Returns once the tasks passed on before have
  // returned (a writer still running would take the next writes at once),
  // or after 30 s.
  void Close();
  // Passes the held tasks on, and later ones at once.
  void Open();

 private:
  CountingExecutor* const target_;
  std::mutex mu_;
  bool open_ = true;
  std::vector<std::function<void()>> held_;
};

// ---------------------------------------------------------------- engine

struct WriteOp {
  std::string key;
  Version version;
  std::string value;
  bool tombstone = false;

  static WriteOp Put(std::string key, const Version& v, std::string value) {
    return WriteOp{std::move(key), v, std::move(value), false};
  }
  static WriteOp Delete(std::string key, const Version& v) { return WriteOp{std::move(key), v, "", true}; }
  // At a version without a stamp.
  static WriteOp Put(std::string key, uint64_t ts, std::string value) { return Put(std::move(key), Ts(ts), std::move(value)); }
  static WriteOp Delete(std::string key, uint64_t ts) { return Delete(std::move(key), Ts(ts)); }
};

// The engine's request for `op`, whose copy it keeps: the engine points
// into it until Done.
class OpRequest : public WriteRequest {
 public:
  explicit OpRequest(const WriteOp& op);

 private:
  const WriteOp op_;
};

// Writes submitted together, so that the engine can batch them; the
// destructor waits for the outstanding ones (the engine holds pointers into
// them until it calls Done).
class PendingWrites {
 public:
  PendingWrites(Engine* engine, const std::vector<WriteOp>& ops);
  ~PendingWrites();
  PendingWrites(const PendingWrites&) = delete;
  PendingWrites& operator=(const PendingWrites&) = delete;

  // The outcome of every write, in submission order.
  const std::vector<Status>& Wait();

 private:
  class Request;
  Latch latch_;
  std::vector<std::unique_ptr<Request>> requests_;
  std::vector<Status> results_;
  bool waited_ = false;
};

std::vector<Status> WriteAll(Engine* engine, const std::vector<WriteOp>& ops);
Status Put(Engine* engine, const std::string& key, const Version& v, const std::string& value);
Status Delete(Engine* engine, const std::string& key, const Version& v);
inline Status Put(Engine* engine, const std::string& key, uint64_t ts, const std::string& value) {
  return Put(engine, key, Ts(ts), value);
}
inline Status Delete(Engine* engine, const std::string& key, uint64_t ts) { return Delete(engine, key, Ts(ts)); }

// Starts a streamed put of value_size bytes of key at v: *stream takes them.
Status BeginStream(Engine* engine, const std::string& key, const Version& v, uint64_t value_size,
                   std::unique_ptr<PutStream>* stream);
// A streamed put of value in pieces of about `piece` bytes (the sizes vary).
Status StreamPut(Engine* engine, const std::string& key, const Version& v, const std::string& value, size_t piece);

// Puts of keys [from, to) at timestamp ts with values of `size` bytes.
std::vector<WriteOp> Puts(uint64_t from, uint64_t to, uint64_t ts = 1, size_t size = 60);

// Get as a string: the value if found, else "NOT_FOUND", "DELETED", or
// "ERROR: <status>" (values in tests never look like these).
std::string Read(Engine* engine, const std::string& key);

// A reader of the value of key's newest record in e (a value), and where
// that record is.
std::unique_ptr<ValueReader> OpenReader(Engine* e, const std::string& key, RecordLocation* at = nullptr);

// Writes a blob of `format` holding one record of key at version v with
// `value` and no block checksums, whatever its size, as engines before
// block checksums wrote them; the engine finds it by a scan.
void WriteLegacyBlob(const std::string& dir, uint32_t format, const std::string& key, const Version& v,
                     const std::string& value);

// The expected state of the store under the engine's rules (the newest
// record by CompareRecords wins; a full tie goes to the later write).
class Model {
 public:
  void Apply(const WriteOp& op);
  void Put(const std::string& key, uint64_t ts, const std::string& value) { Apply(WriteOp::Put(key, ts, value)); }
  void Delete(const std::string& key, uint64_t ts) { Apply(WriteOp::Delete(key, ts)); }
  // Fails the test unless Get and Lookup agree with the model for every key.
  void Verify(Engine* engine) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Version version;
    bool tombstone;
    std::string value;
  };
  std::map<std::string, Entry> entries_;
};

// Writes ops one by one (each its own batch), failing the test on the
// first error, and applies each acknowledged one to the model.
void WriteEach(Engine* engine, const std::vector<WriteOp>& ops, Model* model);

class TestEngine;

// Writes keys [0, 500) at timestamp 1 (10-byte values) into one blob,
// closes it and damages its index block 2 (keys 170..254 with 16-byte keys),
// then reopens it; `model` gets the writes.
void WriteBlobWithDamagedIndexBlock(TestEngine* db, Model* model);

// Options used by the engine tests unless a test changes them.
EngineOptions TestOptions();

// Owns a thread pool and one engine over `dir`, and reopens it the orderly
// way or as after a crash.
class TestEngine {
 public:
  explicit TestEngine(std::string dir, int threads = 4);
  ~TestEngine();

  // Edit before Open(); executor defaults to the own pool.
  EngineOptions options;

  Status Open();
  // Close(), then drops the engine.
  Status Close();
  // Drops the engine without Close (files are left as a crash leaves them)
  // and waits until queued background work has released it.
  void Crash();
  Status Reopen() {
    Status s = Close();
    return s.ok() ? Open() : s;
  }

  // A gate in front of the pool, made the engine's executor from the next
  // Open() on. Owned here, so that it outlives the engine's tasks.
  GatedExecutor* gate();

  Engine* get() const { return engine_.get(); }
  Engine* operator->() const { return engine_.get(); }
  const RecoveryReport& report() const { return report_; }
  const std::string& dir() const { return dir_; }

 private:
  // Drops the engine and waits until it is destroyed and none of its tasks
  // runs any more; false if that takes unreasonably long.
  bool Drop();

  const std::string dir_;
  std::unique_ptr<ThreadPool> pool_;  // outlives the engine
  CountingExecutor tasks_;  // in front of the pool
  std::unique_ptr<GatedExecutor> gate_;  // in front of tasks_
  std::shared_ptr<Engine> engine_;
  RecoveryReport report_;
};

// `n` open engines over directories of their own below the test's
// directory (<name>0, <name>1, ...), and EngineSets over them.
class Engines {
 public:
  explicit Engines(int n, const std::string& name = "p");

  Engine* operator[](size_t i) const { return dbs_[i]->get(); }
  TestEngine* db(size_t i) const { return dbs_[i].get(); }

  // A set over the engines in the order `which` (the TestEngines own them).
  EngineSet Set(const std::vector<size_t>& which) const;

 private:
  std::vector<std::unique_ptr<TestEngine>> dbs_;
};

}  // namespace test
}  // namespace oyster

#endif  // OYSTER_TEST_TEST_UTIL_H_
