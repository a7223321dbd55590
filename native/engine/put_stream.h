// PutStream is a put whose value arrives in pieces, for values too large to
// hold in memory at once. The engine's writer reserved the record's place in
// the active blob and wrote it void (FORMAT.md §3.2), so that nothing
// readable is there until the stream finishes: Append writes the pieces in
// place as they come, computing the record's CRC and its block checksums as
// it goes; Finish writes the checksums and then the record header, and only
// then publishes the record to reads. A stream that is abandoned, aborted
// or cut by a crash leaves its space void, stepped over by scans and never
// read. Other puts go on meanwhile, into the space after it.
//
// One thread at a time calls Append, Finish and Abort; the engine may abort
// the stream from another thread when it closes.

#ifndef OYSTER_ENGINE_PUT_STREAM_H_
#define OYSTER_ENGINE_PUT_STREAM_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/version.h"
#include "util/file_system.h"
#include "util/status.h"

namespace oyster {

class Blob;
class Engine;
class PutStream;

// The streams open on one engine, which its Close (or destruction) aborts.
// Shared by the engine and its streams: a stream may outlive its engine.
class OpenStreams {
 public:
  // False once AbortAll began: no stream starts after it.
  bool Add(PutStream* stream);
  void Remove(PutStream* stream);
  // Aborts every stream registered and refuses new ones.
  void AbortAll();
  // The same without touching any file, as a crash leaves them.
  void AbandonAll();

 private:
  std::mutex mu_;
  std::vector<PutStream*> streams_;
  bool closed_ = false;
};

class PutStream {
 public:
  // Aborts the stream unless it finished.
  ~PutStream();

  PutStream(const PutStream&) = delete;
  PutStream& operator=(const PutStream&) = delete;

  // Writes the next bytes of the value: those of the `count` pieces, in
  // order, with one vectored write (the checksums taken over them in that
  // order). InvalidArgument for more bytes than value_size (nothing is
  // written); Closed once the stream was aborted (by Abort, or by the
  // engine closing); IOError as a write fails (the stream is then aborted).
  // Each piece of a large value (DropBehind::Applies) is handed to the
  // device as it is written, and every max_dirty_bytes_before_sync bytes of
  // it the stream waits until the device has them (File::WriteBack), so
  // that its pages are let go of as it goes (DropBehind) and a long value
  // never piles up in the page cache: this paces the stream to the device.
  // Nothing is durable before Finish. That work runs on the engine's
  // executor beside the next appends; an Append that makes a write-back due
  // while another runs waits for that one, so the stream's bytes not yet on
  // the device stay within about twice the bound. A failure of that work
  // fails the next call (Append or Finish), which aborts the stream, and
  // disables the engine's writes as a failed sync does.
  Status Append(const IoSlice* pieces, int count);
  // Append of one piece of n bytes.
  Status Append(const char* data, size_t n) {
    const IoSlice piece{data, n};
    return Append(&piece, 1);
  }

  // Requires every byte of the value appended (InvalidArgument otherwise).
  // Writes the block checksums and then the header, makes the record
  // durable as a put's would be (sync_writes, max_dirty_bytes_before_sync)
  // and publishes it: reads return it from now on. A power failure takes a
  // record whole unless all of it is synced, so the record counts whole
  // towards the bound here, as a batch's records do when written: one larger
  // than the bound is synced before Finish returns. Then accounts it against
  // the older records of its key (GarbageLedger: a lookup in the vdisk's
  // blobs, little next to streaming a value). Closed once aborted; after a
  // failure the stream is aborted and the record never appears.
  Status Finish();

  // Leaves the reserved space void: the record is never read. Does nothing
  // once the stream finished or was aborted.
  void Abort();

  uint64_t value_size() const { return value_size_; }
  uint64_t written() const { return written_; }

 private:
  friend class Engine;

  enum class State { kOpen, kFinished, kAborted };

  PutStream(std::weak_ptr<Engine> engine, std::shared_ptr<OpenStreams> registry, bool sync_writes,
            std::shared_ptr<Blob> blob, uint64_t offset, std::string key, const Version& version, uint64_t value_size,
            uint8_t flags);

  friend class OpenStreams;

  // Takes the next n bytes of the value, written, into the checksums.
  void ChecksumLocked(const char* data, size_t n);
  // Work handed to the executor by Append, shared with its tasks (which may
  // outlive the stream).
  struct Flushes;
  // Hands the writeback of the value's `n` bytes just written at `at` (a
  // large value's) and the write-back they make due to the executor (done
  // here if the engine is gone). An error is one that work met before: the
  // stream is to stop.
  Status WrittenLocked(uint64_t at, uint64_t n);
  // Waits until the work handed over is done; the first failure it met.
  Status WaitFlushesLocked();
  // Waits until the device has bytes [from, from + n) of `blob`
  // (Engine::WriteBackStreamed, or the file alone once the engine is gone),
  // from any thread.
  static Status WriteBackBlob(const std::weak_ptr<Engine>& engine, Blob* blob, uint64_t from, uint64_t n);
  // Syncs the blob (Engine::SyncStreamed), before the header with
  // sync_writes.
  Status SyncLocked();
  Status WriteHeaderLocked();
  void AbortLocked();
  // Aborts without writing anything (the engine is gone, as in a crash).
  void Abandon();
  // The stream is over (finished or aborted): the blob's index may be built.
  void EndLocked(State state);

  const std::weak_ptr<Engine> engine_;  // gone after a crash; Close aborts its streams first
  const std::shared_ptr<OpenStreams> registry_;
  const bool sync_writes_;
  const std::shared_ptr<Blob> blob_;
  const uint64_t offset_;  // of the record header in the blob
  const std::string key_;
  const Version version_;
  const uint64_t value_size_;
  const uint8_t flags_;
  const size_t header_size_;

  std::mutex mu_;
  State state_ = State::kOpen;
  uint64_t written_ = 0;
  uint64_t written_back_to_;  // offset in the blob up to which a write-back was handed over
  uint32_t record_crc_;      // over the header prefix and the value so far (with blocks: its finished blocks)
  uint32_t block_crc_ = 0;   // of the block being written
  std::vector<char> blocks_;  // block checksums, u32 LE each (kFlagBlocks)
  const std::shared_ptr<Flushes> flushes_;
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_PUT_STREAM_H_
