#include "test/test_util.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "engine/format.h"
#include "test/testharness.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/hash.h"

namespace oyster {
namespace test {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- data

std::string Key(uint64_t i, size_t key_size) {
  std::string k(key_size, 'k');
  for (size_t j = 0; j < std::min<size_t>(8, key_size); j++) {
    k[key_size - 1 - j] = static_cast<char>(i >> (8 * j));
  }
  return k;
}

std::string ValueFor(const std::string& key, uint64_t timestamp, size_t size) {
  // splitmix64 seeded by key and version.
  uint64_t x = KeyHash64(key.data(), key.size()) ^ (timestamp * 0x9E3779B97F4A7C15ull);
  std::string v(size, '\0');
  for (size_t i = 0; i < size; i += 8) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    std::memcpy(&v[i], &z, std::min<size_t>(8, size - i));
  }
  return v;
}

// ---------------------------------------------------------------- formats

std::string RecordHeaderBytes(uint32_t format, uint8_t flags, uint64_t offset, const Version& version,
                              const std::string& key, const std::string& value) {
  const size_t k = key.size();
  std::string h(RecordHeaderSize(format, k), '\0');
  if (format == kBlobFormatVersion) {
    std::string blocks(4 * ValueBlockCount(value.size()), '\0');
    EncodeRecordHeader(flags, offset, version, key.data(), k, value.data(), static_cast<uint32_t>(value.size()), &h[0],
                       &blocks[0]);
    return h;
  }
  // Format 1: 0 magic | 4 flags | 5 reserved | 8 offset | 16 timestamp |
  // 24 value_size | 28 key | 28+K record CRC | 32+K header CRC.
  EncodeFixed32(&h[0], kRecordMagic);
  h[4] = static_cast<char>(flags);
  EncodeFixed64(&h[8], offset);
  EncodeFixed64(&h[16], version.timestamp);
  EncodeFixed32(&h[24], static_cast<uint32_t>(value.size()));
  std::memcpy(&h[28], key.data(), k);
  EncodeFixed32(&h[28 + k], crc32c::Extend(crc32c::Value(h.data(), 28 + k), value.data(), value.size()));
  EncodeFixed32(&h[32 + k], crc32c::Value(h.data(), 32 + k));
  return h;
}

std::string BlobHeaderBytes(uint32_t format, size_t key_size, uint64_t blob_id) {
  BlobHeader h;
  h.version = format;
  h.key_size = static_cast<uint32_t>(key_size);
  h.blob_id = blob_id;
  std::string out(kBlobHeaderSize, '\0');
  oyster::EncodeBlobHeader(h, &out[0]);
  return out;
}

// ---------------------------------------------------------------- files

std::string ReadFileOrThrow(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) FAIL() << "cannot read " << path;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteFileOrThrow(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) FAIL() << "cannot write " << path;
}

void AppendToFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) FAIL() << "cannot append to " << path;
}

void FlipByte(const std::string& path, uint64_t offset, uint8_t mask) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  char c = 0;
  f.seekg(static_cast<std::streamoff>(offset));
  f.read(&c, 1);
  c = static_cast<char>(c ^ static_cast<char>(mask));
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
  if (!f) FAIL() << "cannot flip byte " << offset << " of " << path;
}

void TruncateFile(const std::string& path, uint64_t size) {
  std::error_code ec;
  fs::resize_file(path, size, ec);
  if (ec) FAIL() << "cannot truncate " << path << ": " << ec.message();
}

uint64_t FileSize(const std::string& path) {
  std::error_code ec;
  uint64_t n = fs::file_size(path, ec);
  if (ec) FAIL() << "cannot stat " << path << ": " << ec.message();
  return n;
}

bool FileExists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

void RemoveFile(const std::string& path) {
  std::error_code ec;
  if (!fs::remove(path, ec)) FAIL() << "cannot remove " << path << ": " << ec.message();
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string SourcePath(const std::string& relative) { return std::string(OYSTER_SOURCE_DIR) + "/" + relative; }

void CopyDir(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::create_directories(to, ec);
  if (!ec) fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
  if (ec) FAIL() << "cannot copy " << from << " to " << to << ": " << ec.message();
}

std::string BlobPath(const std::string& dir, uint64_t id) { return JoinPath(dir, BlobFileName("oyster", id)); }

std::string IndexPath(const std::string& dir, uint64_t id) {
  return JoinPath(dir, IndexFileName("oyster", id));
}

Status StringFile::Read(uint64_t offset, size_t n, char* buf, size_t* bytes_read) const {
  *bytes_read = 0;
  if (offset >= data_.size()) return Status::OK();
  *bytes_read = std::min<size_t>(n, data_.size() - offset);
  std::memcpy(buf, data_.data() + offset, *bytes_read);
  return Status::OK();
}

Status StringFile::ReadV(uint64_t offset, const IoBuffer* buffers, int count, size_t* bytes_read) const {
  *bytes_read = 0;
  for (int i = 0; i < count; i++) {
    size_t n = 0;
    Read(offset + *bytes_read, buffers[i].size, buffers[i].data, &n);
    *bytes_read += n;
    if (n < buffers[i].size) break;
  }
  return Status::OK();
}

Status StringFile::Write(uint64_t offset, const IoSlice* slices, int count) {
  for (int i = 0; i < count; i++) {
    if (data_.size() < offset + slices[i].size) data_.resize(offset + slices[i].size);
    std::memcpy(&data_[offset], slices[i].data, slices[i].size);
    offset += slices[i].size;
  }
  return Status::OK();
}

Status StringFile::Truncate(uint64_t size) {
  data_.resize(size);
  return Status::OK();
}

Status StringFile::Size(uint64_t* size) const {
  *size = data_.size();
  return Status::OK();
}

// ---------------------------------------------------------------- threads

bool Eventually(const std::function<bool()>& pred, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void Latch::CountDown() {
  std::lock_guard<std::mutex> l(mu_);
  if (--count_ == 0) cv_.notify_all();
}

void Latch::Wait() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [this] { return count_ == 0; });
}

void CountingExecutor::Schedule(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> l(mu_);
    unfinished_++;
  }
  target_->Schedule([this, task = std::move(task)]() mutable {
    task();
    // Whatever the task captured goes before it counts as returned.
    task = nullptr;
    std::lock_guard<std::mutex> l(mu_);
    if (--unfinished_ == 0) idle_cv_.notify_all();
  });
}

bool CountingExecutor::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> l(mu_);
  return idle_cv_.wait_until(l, deadline, [this] { return unfinished_ == 0; });
}

void GatedExecutor::Schedule(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!open_) {
      held_.push_back(std::move(task));
      return;
    }
  }
  target_->Schedule(std::move(task));
}

void GatedExecutor::Close() {
  {
    std::lock_guard<std::mutex> l(mu_);
    open_ = false;
  }
  target_->WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(30));
}

void GatedExecutor::Open() {
  std::vector<std::function<void()>> held;
  {
    std::lock_guard<std::mutex> l(mu_);
    open_ = true;
    held.swap(held_);
  }
  for (auto& t : held) target_->Schedule(std::move(t));
}

// ---------------------------------------------------------------- engine

OpRequest::OpRequest(const WriteOp& op) : op_(op) {
  key = op_.key.data();
  version = op_.version;
  value = op_.value.data();
  value_size = op_.value.size();
  tombstone = op_.tombstone;
}

class PendingWrites::Request final : public OpRequest {
 public:
  Request(const WriteOp& op, Latch* latch, Status* result) : OpRequest(op), latch_(latch), result_(result) {}
  void Done(const Status& s) override {
    *result_ = s;
    latch_->CountDown();
  }

 private:
  Latch* const latch_;
  Status* const result_;
};

PendingWrites::PendingWrites(Engine* engine, const std::vector<WriteOp>& ops)
    : latch_(ops.size()), results_(ops.size()) {
  for (const WriteOp& op : ops) {
    if (op.key.size() != engine->options().key_size) {
      FAIL() << "key of " << op.key.size() << " bytes for an engine with " << engine->options().key_size;
    }
  }
  for (size_t i = 0; i < ops.size(); i++) {
    requests_.push_back(std::make_unique<Request>(ops[i], &latch_, &results_[i]));
  }
  for (auto& r : requests_) engine->Write(r.get());
}

PendingWrites::~PendingWrites() { Wait(); }

const std::vector<Status>& PendingWrites::Wait() {
  if (!waited_) {
    latch_.Wait();
    waited_ = true;
  }
  return results_;
}

std::vector<Status> WriteAll(Engine* engine, const std::vector<WriteOp>& ops) {
  PendingWrites w(engine, ops);
  return w.Wait();
}

Status Put(Engine* engine, const std::string& key, const Version& v, const std::string& value) {
  return WriteAll(engine, {WriteOp::Put(key, v, value)})[0];
}

Status Delete(Engine* engine, const std::string& key, const Version& v) {
  return WriteAll(engine, {WriteOp::Delete(key, v)})[0];
}

namespace {

class StreamRequest final : public WriteRequest {
 public:
  void Done(const Status& s) override {
    result = s;
    latch.CountDown();
  }
  Status result;
  Latch latch{1};
};

}  // namespace

Status BeginStream(Engine* engine, const std::string& key, const Version& v, uint64_t value_size,
                   std::unique_ptr<PutStream>* stream) {
  StreamRequest r;
  r.key = key.data();
  r.version = v;
  r.value_size = value_size;
  r.streamed = true;
  engine->Write(&r);
  r.latch.Wait();
  *stream = std::move(r.stream);
  return r.result;
}

Status StreamPut(Engine* engine, const std::string& key, const Version& v, const std::string& value, size_t piece) {
  std::unique_ptr<PutStream> stream;
  Status s = BeginStream(engine, key, v, value.size(), &stream);
  for (size_t at = 0, i = 0; s.ok() && at < value.size(); i++) {
    const size_t n = std::min(value.size() - at, piece / 2 + (i * 7919) % (piece + 1));
    s = stream->Append(value.data() + at, n);
    at += n;
  }
  return s.ok() ? stream->Finish() : s;
}

std::vector<WriteOp> Puts(uint64_t from, uint64_t to, uint64_t ts, size_t size) {
  std::vector<WriteOp> ops;
  for (uint64_t i = from; i < to; i++) ops.push_back(WriteOp::Put(Key(i), ts, ValueFor(Key(i), ts, size)));
  return ops;
}

void WriteEach(Engine* engine, const std::vector<WriteOp>& ops, Model* model) {
  for (const WriteOp& op : ops) {
    ASSERT_OK(WriteAll(engine, {op})[0]) << "writing key " << internal::PrintString(op.key);
    model->Apply(op);
  }
}

std::string Read(Engine* engine, const std::string& key) {
  GetResult r;
  Status s = engine->Get(key.data(), &r);
  if (!s.ok()) return "ERROR: " + s.ToString();
  switch (r.kind) {
    case GetResult::kAbsent: return "NOT_FOUND";
    case GetResult::kDeleted: return "DELETED";
    case GetResult::kFound: break;
  }
  return std::string(r.record.storage.get() + r.record.value_offset, r.record.value_size);
}

std::unique_ptr<ValueReader> OpenReader(Engine* e, const std::string& key, RecordLocation* at) {
  LookupResult l;
  RecordLocation where;
  ASSERT_OK(e->Locate(ReadOptions(), key.data(), &l, &where));
  ASSERT_EQ(l.kind, GetResult::kFound);
  std::unique_ptr<ValueReader> r;
  ASSERT_OK(e->OpenValue(ReadOptions(), key.data(), where, &r));
  if (at != nullptr) *at = where;
  return r;
}

void WriteLegacyBlob(const std::string& dir, uint32_t format, const std::string& key, const Version& v,
                     const std::string& value) {
  WriteFileOrThrow(BlobPath(dir, 1),
                   BlobHeaderBytes(format, key.size(), 1) + RecordHeaderBytes(format, 0, kBlobHeaderSize, v, key, value) + value);
}

void Model::Apply(const WriteOp& op) {
  auto it = entries_.find(op.key);
  if (it != entries_.end() && CompareRecords(it->second.version, it->second.tombstone, op.version, op.tombstone) > 0) {
    return;
  }
  entries_[op.key] = Entry{op.version, op.tombstone, op.value};
}

void Model::Verify(Engine* engine) const {
  for (const auto& [key, e] : entries_) {
    GetResult g;
    Status s = engine->Get(key.data(), &g);
    ASSERT_OK(s) << "for key " << internal::PrintString(key);
    ASSERT_EQ(g.kind, e.tombstone ? GetResult::kDeleted : GetResult::kFound)
        << "for key " << internal::PrintString(key);
    ASSERT_TRUE(CompareVersions(g.version, e.version) == 0)
        << "for key " << internal::PrintString(key) << ": " << g.version.ToString() << ", expected "
        << e.version.ToString();
    if (!e.tombstone) {
      std::string v(g.record.storage.get() + g.record.value_offset, g.record.value_size);
      ASSERT_TRUE(v == e.value) << "value of key " << internal::PrintString(key) << " is "
                                << internal::PrintString(v) << ", expected " << internal::PrintString(e.value);
    }
    LookupResult l;
    ASSERT_OK(engine->Lookup(key.data(), &l));
    ASSERT_EQ(l.kind, g.kind);
    ASSERT_TRUE(CompareVersions(l.version, g.version) == 0);
  }
}

void WriteBlobWithDamagedIndexBlock(TestEngine* db, Model* model) {
  ASSERT_OK(db->Open());
  std::vector<WriteOp> ops = Puts(0, 500, 1, 10);
  for (const Status& s : WriteAll(db->get(), ops)) ASSERT_OK(s);
  for (const WriteOp& op : ops) model->Apply(op);
  ASSERT_OK(db->Close());
  // 85 entries per 4 KiB block for 16-byte keys; keys sort by number.
  FlipByte(IndexPath(db->dir(), 1), 4096 + 2 * 4096 + 100);
  ASSERT_OK(db->Open());
}

EngineOptions TestOptions() {
  EngineOptions o;
  o.key_size = 16;
  return o;
}

TestEngine::TestEngine(std::string dir, int threads)
    : options(TestOptions()), dir_(std::move(dir)), pool_(new ThreadPool(threads)), tasks_(pool_.get()) {}

TestEngine::~TestEngine() {
  // A test that failed half-way may leave the engine open: drop it as a
  // crash would, before the gate and the pool go.
  Drop();
}

GatedExecutor* TestEngine::gate() {
  if (!gate_) gate_.reset(new GatedExecutor(&tasks_));
  options.executor = gate_.get();
  return gate_.get();
}

bool TestEngine::Drop() {
  std::weak_ptr<Engine> weak = engine_;
  engine_.reset();
  // Writer and index tasks still queued on the pool hold references (and
  // may schedule more work through the gate).
  if (gate_) gate_->Open();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!weak.expired()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // The task that let the last reference go may still be in the engine's
  // destructor, holding the directory's lock.
  return tasks_.WaitIdle(deadline);
}

Status TestEngine::Open() {
  if (options.executor == nullptr) options.executor = &tasks_;
  if (!Drop()) return Status::Busy("the previous engine is still referenced");
  return Engine::Open(options, dir_, &engine_, &report_);
}

Status TestEngine::Close() {
  if (!engine_) return Status::OK();
  Status s = engine_->Close();
  if (!Drop()) return Status::Busy("the closed engine is still referenced");
  return s;
}

void TestEngine::Crash() {
  if (!Drop()) FAIL() << "the dropped engine is still referenced after 30 s";
}

Engines::Engines(int n, const std::string& name) {
  for (int i = 0; i < n; i++) {
    dbs_.push_back(std::make_unique<TestEngine>(TmpDir() + "/" + name + std::to_string(i)));
    Status s = dbs_.back()->Open();
    if (!s.ok()) FAIL() << s.ToString();
  }
}

EngineSet Engines::Set(const std::vector<size_t>& which) const {
  std::vector<std::shared_ptr<Engine>> engines;
  // Aliasing pointers that own nothing: the TestEngines do.
  for (size_t i : which) engines.push_back(std::shared_ptr<Engine>(std::shared_ptr<Engine>(), dbs_[i]->get()));
  return EngineSet(std::move(engines));
}

}  // namespace test
}  // namespace oyster
