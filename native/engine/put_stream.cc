#include "engine/put_stream.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>

#include "engine/blob.h"
#include "engine/engine.h"
#include "engine/format.h"
#include "engine/garbage_ledger.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/hash.h"

namespace oyster {

// The work a stream handed over, run by the executor's threads or, when
// the stream must wait for a piece of work no thread has taken yet, by the
// stream's own: a wait never depends on a free thread, so streams waiting
// on every thread of the executor cannot hold up the work they wait for.
struct PutStream::Flushes {
  std::mutex mu;
  std::condition_variable done;
  std::deque<std::function<void()>> queued;  // handed over, not yet taken
  int unfinished = 0;                         // queued or running
  bool writing_back = false;                  // one of them waits for the device
  Status failure;                             // the first one met

  // Runs queued work until `finished` holds, waiting only for work that
  // another thread is running. Called with `l` held.
  template <typename Pred>
  void Await(std::unique_lock<std::mutex>& l, Pred finished) {
    while (!finished()) {
      if (queued.empty()) {
        done.wait(l);
        continue;
      }
      RunOne(l);
    }
  }

  // Runs the oldest queued piece of work, if any, without the lock.
  void RunOne(std::unique_lock<std::mutex>& l) {
    if (queued.empty()) return;
    std::function<void()> work = std::move(queued.front());
    queued.pop_front();
    l.unlock();
    work();
    l.lock();
  }
};

bool OpenStreams::Add(PutStream* stream) {
  std::lock_guard<std::mutex> l(mu_);
  if (closed_) return false;
  streams_.push_back(stream);
  return true;
}

void OpenStreams::Remove(PutStream* stream) {
  std::lock_guard<std::mutex> l(mu_);
  streams_.erase(std::remove(streams_.begin(), streams_.end(), stream), streams_.end());
}

void OpenStreams::AbortAll() {
  // Under the lock: a stream leaves only as it is destroyed, which waits.
  std::lock_guard<std::mutex> l(mu_);
  closed_ = true;
  for (PutStream* stream : streams_) stream->Abort();
}

void OpenStreams::AbandonAll() {
  std::lock_guard<std::mutex> l(mu_);
  closed_ = true;
  for (PutStream* stream : streams_) stream->Abandon();
}

PutStream::PutStream(std::weak_ptr<Engine> engine, std::shared_ptr<OpenStreams> registry, bool sync_writes,
                     std::shared_ptr<Blob> blob, uint64_t offset, std::string key, const Version& version,
                     uint64_t value_size, uint8_t flags)
    : engine_(std::move(engine)),
      registry_(std::move(registry)),
      sync_writes_(sync_writes),
      blob_(std::move(blob)),
      offset_(offset),
      key_(std::move(key)),
      version_(version),
      value_size_(value_size),
      flags_(flags),
      header_size_(RecordHeaderSize(kBlobFormatVersion, key_.size())),
      written_back_to_(offset_ + header_size_),
      flushes_(std::make_shared<Flushes>()) {
  std::string header(header_size_, '\0');
  EncodeRecordHeaderWithCrc(flags_, offset_, version_, key_.data(), key_.size(), static_cast<uint32_t>(value_size_),
                            0, header.data());
  record_crc_ = RecordCrcPrefix(kBlobFormatVersion, header.data(), key_.size());
  if (flags_ & kFlagBlocks) blocks_.reserve(4 * ValueBlockCount(value_size_));
}

PutStream::~PutStream() {
  registry_->Remove(this);
  Abort();
}

Status PutStream::Append(const IoSlice* pieces, int count) {
  std::lock_guard<std::mutex> l(mu_);
  if (state_ != State::kOpen) return Status::Closed("the streamed put was aborted");
  uint64_t n = 0;
  for (int i = 0; i < count; i++) n += pieces[i].size;
  if (n > value_size_ - written_) {
    return Status::InvalidArgument("more bytes than the " + std::to_string(value_size_) + " announced");
  }
  if (n == 0) return Status::OK();
  const uint64_t at = offset_ + header_size_ + written_;
  Status s = blob_->file()->Write(at, pieces, count);
  if (s.ok()) s = WrittenLocked(at, n);
  if (s.ok()) {
    for (int i = 0; i < count; i++) ChecksumLocked(pieces[i].data, pieces[i].size);
  }
  if (!s.ok()) AbortLocked();
  return s;
}

Status PutStream::WrittenLocked(uint64_t at, uint64_t n) {
  if (!DropBehind::Applies(value_size_)) {
    std::lock_guard<std::mutex> l(flushes_->mu);
    return flushes_->failure;
  }
  // A large value's pieces go to the device as they are written, and every
  // max_dirty_bytes_before_sync bytes the stream waits for the device to
  // have them: the pages it wrote are let go of as it goes, and the sync
  // at its end (Finish) waits for little.
  std::shared_ptr<Engine> engine = engine_.lock();
  if (engine != nullptr) engine->drop_behind_.Written(blob_->id(), at, n);
  const bool write_back =
      engine != nullptr && at + n - written_back_to_ >= engine->options_.max_dirty_bytes_before_sync;
  const uint64_t from = written_back_to_;
  if (write_back) written_back_to_ = at + n;
  std::shared_ptr<Flushes> flushes = flushes_;
  std::unique_lock<std::mutex> l(flushes->mu);
  // One write-back at a time: the stream's bytes not yet on the device stay
  // within about twice the bound.
  if (write_back) flushes->Await(l, [&flushes] { return !flushes->writing_back; });
  if (!flushes->failure.ok()) return flushes->failure;
  flushes->unfinished++;
  if (write_back) flushes->writing_back = true;
  // Both take a system call each, the write-back a wait for the device: the
  // next piece is written meanwhile rather than after them. The work runs
  // under RunOne, whose caller keeps `f` alive.
  flushes->queued.push_back([f = flushes.get(), blob = blob_, weak = engine_, at, n, from, write_back] {
    blob->file()->StartWriteback(at, n);
    Status s;
    if (write_back) s = WriteBackBlob(weak, blob.get(), from, at + n - from);
    std::lock_guard<std::mutex> done(f->mu);
    if (f->failure.ok()) f->failure = s;
    f->unfinished--;
    if (write_back) f->writing_back = false;
    f->done.notify_all();
  });
  l.unlock();
  if (engine != nullptr) {
    engine->options_.executor->Schedule([flushes] {
      std::unique_lock<std::mutex> run(flushes->mu);
      flushes->RunOne(run);
    });
  } else {
    std::unique_lock<std::mutex> run(flushes->mu);
    flushes->RunOne(run);
  }
  return Status::OK();
}

Status PutStream::WaitFlushesLocked() {
  Flushes& f = *flushes_;
  std::unique_lock<std::mutex> l(f.mu);
  f.Await(l, [&f] { return f.unfinished == 0; });
  return f.failure;
}

Status PutStream::WriteBackBlob(const std::weak_ptr<Engine>& weak, Blob* blob, uint64_t from, uint64_t n) {
  std::shared_ptr<Engine> engine = weak.lock();
  return engine == nullptr ? blob->file()->WriteBack(from, n) : engine->WriteBackStreamed(blob, from, n);
}

Status PutStream::SyncLocked() {
  std::shared_ptr<Engine> engine = engine_.lock();
  return engine == nullptr ? blob_->file()->Sync() : engine->SyncStreamed(blob_.get());
}

void PutStream::ChecksumLocked(const char* data, size_t n) {
  if (!(flags_ & kFlagBlocks)) {
    record_crc_ = crc32c::Extend(record_crc_, data, n);
    written_ += n;
    return;
  }
  // Block checksums: each block's own CRC, the last block possibly short;
  // the record CRC takes each finished block's in (one pass over the bytes).
  while (n > 0) {
    const uint64_t in_block = written_ % kValueBlockSize;
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n, kValueBlockSize - in_block));
    block_crc_ = crc32c::Extend(block_crc_, data, take);
    written_ += take;
    data += take;
    n -= take;
    if (written_ % kValueBlockSize == 0 || written_ == value_size_) {
      char crc[4];
      EncodeFixed32(crc, block_crc_);
      blocks_.insert(blocks_.end(), crc, crc + 4);
      record_crc_ = crc32c::Combine(record_crc_, block_crc_, in_block + take);
      block_crc_ = 0;
    }
  }
}

Status PutStream::Finish() {
  std::lock_guard<std::mutex> l(mu_);
  if (state_ != State::kOpen) return Status::Closed("the streamed put was aborted");
  if (written_ != value_size_) {
    return Status::InvalidArgument(std::to_string(written_) + " of " + std::to_string(value_size_) +
                                   " bytes written");
  }
  File* f = blob_->file();
  const bool sync_writes = sync_writes_;
  // The value's write-backs so far, done: one that failed fails the stream
  // before its header is written.
  Status s = WaitFlushesLocked();
  if (s.ok() && !blocks_.empty()) {
    IoSlice slice{blocks_.data(), blocks_.size()};
    s = f->Write(offset_ + header_size_ + value_size_, &slice, 1);
  }
  // With sync_writes the value is on the device before the header that
  // makes it a record: a crash never leaves a record whose value is lost.
  if (s.ok() && sync_writes) s = SyncLocked();
  if (s.ok()) s = WriteHeaderLocked();
  // A blob deleted under us still takes writes that could never be read back.
  bool removed = false;
  if (s.ok()) s = f->Removed(&removed);
  if (s.ok() && removed) s = Status::IOError("blob " + f->path() + " was removed while in use", ENOENT);
  std::shared_ptr<Engine> engine = engine_.lock();
  // The record counts whole, now that it is to be acknowledged: a power
  // failure takes all of it unless all of it is synced. A sync it makes due
  // is made here, before the record is published.
  if (s.ok()) {
    if (engine != nullptr) {
      s = engine->FinishStream(blob_.get(), header_size_ + RecordBodySize(flags_, value_size_), sync_writes);
    } else if (sync_writes) {
      s = SyncLocked();
    }
  }
  if (!s.ok()) {
    // Void again, so that the record does not appear after a restart either
    // (best effort: the device may refuse this as well).
    std::string header(header_size_, '\0');
    EncodeVoidHeader(offset_, key_.size(), static_cast<uint32_t>(RecordBodySize(flags_, value_size_)), header.data());
    IoSlice slice{header.data(), header.size()};
    f->Write(offset_, &slice, 1);
    AbortLocked();
    return s;
  }
  IndexEntry e;
  e.version = version_;
  e.offset = offset_;
  e.value_size = static_cast<uint32_t>(value_size_);
  e.flags = flags_;
  const Blob::NewRecord record{key_.data(), KeyHash64(key_.data(), key_.size()), e};
  ActiveIndex::Displaced displaced;
  std::shared_ptr<GarbageLedger> ledger = engine != nullptr ? engine->ledger() : nullptr;
  GarbageLedger::Batch batch;
  batch.engine = engine.get();
  batch.blob = blob_.get();
  batch.records = &record;
  batch.displaced = &displaced;
  batch.n = 1;
  if (ledger != nullptr) ledger->Announce(batch);
  blob_->PublishStreamed(record, &displaced);
  // Accounted before the stream ends, while the blob is certain to be in
  // memory and in service (no index build, so no compaction, can start).
  if (ledger != nullptr) ledger->Account(batch);
  EndLocked(State::kFinished);
  return Status::OK();
}

Status PutStream::WriteHeaderLocked() {
  std::string header(header_size_, '\0');
  EncodeRecordHeaderWithCrc(flags_, offset_, version_, key_.data(), key_.size(), static_cast<uint32_t>(value_size_),
                            record_crc_, header.data());
  IoSlice slice{header.data(), header.size()};
  return blob_->file()->Write(offset_, &slice, 1);
}

void PutStream::Abort() {
  std::lock_guard<std::mutex> l(mu_);
  AbortLocked();
}

void PutStream::AbortLocked() {
  if (state_ != State::kOpen) return;
  // The void record's body must lie inside the file, so that a scan steps
  // over it rather than take it for a torn tail and cut what follows: its
  // last byte is written (the rest may stay a hole). A write, not a
  // truncation: the writer may be appending behind the body meanwhile.
  const uint64_t body = RecordBodySize(flags_, value_size_);
  if (body > 0) {
    const char zero = 0;
    IoSlice slice{&zero, 1};
    blob_->file()->Write(offset_ + header_size_ + body - 1, &slice, 1);
  }
  EndLocked(State::kAborted);
}

void PutStream::Abandon() {
  std::lock_guard<std::mutex> l(mu_);
  if (state_ == State::kOpen) EndLocked(State::kAborted);
}

void PutStream::EndLocked(State state) {
  state_ = state;
  if (!blob_->EndStream()) return;
  std::shared_ptr<Engine> engine = engine_.lock();
  if (engine != nullptr) engine->IndexAfterStreams(blob_);
}

}  // namespace oyster
