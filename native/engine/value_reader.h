// ValueReader reads the value of one record in parts, for values too large
// to be read whole: a range of a value, or a value sent on as it is read.
// It holds the record's blob, so it keeps reading the record it was opened
// on whatever happens meanwhile: newer records of the key, the blob sealed,
// the engine closed, the partition dropped and its files removed (the file
// it opened is read). What a read verifies depends on the record
// (docs/FORMAT.md §6.4):
//
//  - With block checksums (flag 0x04: every value over one block the engine
//    writes), a read reads and checks the blocks that hold its range: every
//    byte it returns is verified.
//  - Without (values of one block or less; larger ones written before block
//    checksums existed), only the whole value can be checked, by the record
//    CRC. The reader keeps that CRC running over the bytes it returns in
//    order from the value's start, and the read that reaches the value's end
//    checks it. Bytes returned before were unverified when returned: a
//    caller must not take any of them as good until that read succeeded.
//
// Calls of one reader must not overlap (the caller serializes them);
// different readers may read at once.

#ifndef OYSTER_ENGINE_VALUE_READER_H_
#define OYSTER_ENGINE_VALUE_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/blob.h"
#include "engine/index_entry.h"
#include "engine/version.h"
#include "util/status.h"

namespace oyster {

class Engine;

class ValueReader {
 public:
  ValueReader(const ValueReader&) = delete;
  ValueReader& operator=(const ValueReader&) = delete;

  // The value's length in bytes.
  uint64_t size() const { return size_; }
  const Version& version() const { return version_; }
  // The value's first min(size(), kHeadSize) bytes as the file held them
  // when the reader was opened, not checked: for guesses about the value
  // (its content type), never to be passed on as the value's bytes.
  const std::string& head() const { return head_; }

  // Reads value bytes [pos, pos + n) into dst. OK: dst holds them, verified
  // as described above (without block checksums, only once a read reached
  // the end). InvalidArgument when pos + n > size(), dst untouched.
  // Corruption when a check fails (a block of the range, or the record CRC
  // as the value's end is reached) or the file ends before the value (cut
  // under the reader); IOError when the file cannot be read. After a
  // failure dst holds nothing to rely on and the reader stays usable: a
  // later read reads again. The engine's corrupt_reads counts a reader's
  // corruption once however often its reads meet it.
  //
  // Cost: with block checksums, the blocks that hold the range (up to a
  // block more than asked at either end, read into scratch; the rest
  // straight into dst), with one vectored read. Without, the bytes asked
  // for, and first those between the last byte returned and pos, read and
  // taken into the CRC; a read before the bytes returned so far starts
  // again from the value's start. No read-ahead hint is given: the
  // kernel's own read-ahead follows a value read in order, in large folios,
  // where pages a hint (POSIX_FADV_WILLNEED) brings in come in 4 KiB ones,
  // which cost every later GET of them a fifth more CPU or so
  // (docs/BENCHMARKS.md).
  Status Read(uint64_t pos, size_t n, char* dst);

  // Sends `prefix` and then value bytes [pos, pos + n) to out_fd, a socket
  // in non-blocking mode. The value's bytes go as Read would return them:
  // the bytes of each window of up to kSendWindow are read and checked as
  // Read checks them, and then sent from the blob's file by File::SendTo
  // (sendfile), so they cross no user memory on their way out. What is
  // checked is what the page cache holds just before the kernel sends from
  // it. The prefix (the caller's own bytes, such as a protocol's header)
  // goes out once the first window passed its check, marked as having more
  // to follow so that it shares a segment with that window: when the first
  // window is damaged nothing at all is sent. *sent: the prefix's bytes and
  // then the value's, in that order, that were sent; no value byte is sent
  // before the whole prefix. OK with *sent == prefix.size() + n, or with
  // less when out_fd took no more (its buffer is full; the caller sends the
  // rest when it drains, with SendTo or Read: a reader without block
  // checksums keeps its record CRC running over exactly the value bytes
  // sent) or when a failure was met after some bytes went out: that
  // failure comes again to the call that continues from there, so a call
  // that fails sent nothing at all. InvalidArgument as Read; Corruption
  // when a window fails its check, before any byte of it is sent, or the
  // file ends under the reader; IOError when the file cannot be read or
  // out_fd fails (a peer that left); NotSupported where the file cannot
  // send.
  Status SendTo(uint64_t pos, size_t n, int out_fd, std::string_view prefix, size_t* sent);

  // Without block checksums, bytes returned or sent short of the value's end
  // are never checked by the reads that return them. This reads the rest of
  // the value (the bytes after the last one returned) into the record CRC
  // and checks it, leaving the reader where it was: a caller that stops
  // short of the end calls it before it lets the last of its bytes go. OK at
  // once with block checksums (each read checked its own) or once the whole
  // value passed; Corruption and IOError as Read. Cost: the rest of the
  // value read once per reader (from the value's start if nothing was
  // returned yet).
  Status CheckRest();

  static constexpr size_t kSendWindow = 256 << 10;
  static constexpr size_t kHeadSize = 512;

 private:
  friend class Engine;

  ValueReader(std::weak_ptr<Engine> engine, std::shared_ptr<Blob> blob, const IndexEntry& entry, size_t header_size,
              const RecordHeader& h, uint32_t crc_prefix);

  // Opens the value of `key` in the record `entry` points at in `blob` (a
  // value, not a tombstone): reads its header and checks it as
  // Blob::ReadRecord does, and reads its block checksums if it has them.
  // Corruption when the header fails its checks or the record is cut
  // short; with no_wait, WouldBlock where the disk would be read. `engine`
  // counts the corruption the reader meets later.
  static Status Open(std::weak_ptr<Engine> engine, std::shared_ptr<Blob> blob, const IndexEntry& entry,
                     const char* key, size_t key_size, bool no_wait, std::unique_ptr<ValueReader>* reader);

  // SendTo's windows, the prefix with the first; WouldBlock when out_fd
  // took no more, any failure as it is met (*sent counts what went before).
  Status SendWindows(uint64_t pos, size_t n, int out_fd, std::string_view prefix, size_t* sent);
  // InvalidArgument unless [pos, pos + n) lies inside the value.
  Status CheckRange(uint64_t pos, size_t n) const;
  // s, having counted it in the engine's corrupt_reads if it is the
  // reader's first Corruption.
  Status Counted(Status s);
  Status ReadBlocks(uint64_t pos, size_t n, char* dst);
  Status ReadInOrder(uint64_t pos, size_t n, char* dst);
  // Without blocks_: takes the bytes between the last byte returned and
  // pos into the CRC (from the value's start if pos comes before it).
  Status CatchUp(uint64_t pos);
  // Without blocks_, with the whole value taken into crc_: Corruption unless
  // it is the record's CRC; else the value is known good from now on.
  Status CheckWholeCrc();
  // Reads value bytes [pos, pos + n) as they are; Corruption if the file ends first.
  Status ReadRaw(uint64_t pos, size_t n, char* dst);
  // Forgets the bytes returned: the next read starts from the value's start.
  void Restart();

  const std::weak_ptr<Engine> engine_;  // counts corruption; the reader outlives it
  const std::shared_ptr<Blob> blob_;
  const uint64_t record_at_;  // file offsets of the record
  const uint64_t value_at_;   // and of the value's first byte
  const uint64_t size_;
  const Version version_;
  const bool blocks_;            // the value carries block checksums
  const uint32_t record_crc_;    // as the header holds it
  const uint32_t crc_prefix_;    // the record CRC over the header's part
  std::string block_crcs_;       // blocks_: u32 LE each, as in the file
  std::string head_;

  uint64_t returned_ = 0;  // without blocks_: value bytes [0, returned_) went into crc_
  uint32_t crc_;
  bool whole_checked_ = false;  // without blocks_: the record CRC held over the whole value
  bool counted_ = false;   // corruption was counted
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_VALUE_READER_H_
