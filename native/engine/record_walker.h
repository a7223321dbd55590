// RecordWalker visits the records a closed blob's index points at (the
// newest record of every key in the blob), in the order they lie in the
// file, reading it in large sequential pieces and skipping what lies between
// records it is not asked to read. Compaction copies records this way and
// Scrub checks them. Not thread-safe: one caller at a time.

#ifndef OYSTER_ENGINE_RECORD_WALKER_H_
#define OYSTER_ENGINE_RECORD_WALKER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/blob.h"
#include "engine/format.h"
#include "engine/index_entry.h"
#include "util/status.h"

namespace oyster {

class RecordWalker {
 public:
  // Pieces of a record's body are at most this long.
  static constexpr size_t kPieceSize = 1 << 20;
  // What a record skipped costs of a walk's budget in bytes (Compaction::Step,
  // Scrub::Step): it is not read, but deciding on it looks the key up across
  // the vdisk, so that a blob of garbage is walked in steps too. The service
  // paces its I/O budget the same way (src/store/token-bucket.ts).
  static constexpr uint64_t kSkippedCost = 512;

  // Reads the index of `blob`, which must be closed (served by its index
  // file): InvalidArgument otherwise, Corruption if an index block is damaged.
  static Status Open(std::shared_ptr<Blob> blob, size_t key_size, std::unique_ptr<RecordWalker>* walker);

  // Records the index points at, and how many were visited (read or skipped).
  size_t entries() const { return order_.size(); }
  size_t visited() const { return next_; }
  bool done() const { return next_ >= order_.size(); }
  // The current record's key and index entry; requires !done().
  const char* key() const { return keys_.data() + static_cast<size_t>(order_[next_]) * key_size_; }
  const IndexEntry& entry() const { return entries_[order_[next_]]; }

  // Moves on without reading the current record.
  void Skip() { next_++; }

  // What Read found.
  struct Check {
    RecordHeader header;       // decoded; header.key points at the walker's copy of the key
    bool header_ok = true;     // false: ReadAsIndexed met a damaged header (header holds the entry's fields)
    uint32_t value_crc = 0;    // the record CRC computed over what was read (with a damaged header: of the value alone)
    // The value matches the record CRC, and each block its checksum. With a
    // damaged header, whose record CRC is lost: each block its checksum, and
    // an empty body is ok; a value without blocks has no check left and is not.
    bool value_ok = false;
  };
  // Called with the pieces of a record's body in order: the value's bytes,
  // then (kFlagBlocks) its block checksums as stored. A piece is valid only
  // during the call; a non-OK status stops the read and is returned.
  using PieceFn = std::function<Status(const char* data, size_t n, bool value)>;

  // Reads the current record and moves on to the next. Its header must be a
  // valid header of the entry's key, version and size at the entry's offset:
  // Corruption otherwise (the body is not read). The body is handed to
  // `piece` (may be null) and checked against the record CRC and the block
  // checksums; a mismatch is reported in check->value_ok, not as an error.
  Status Read(const PieceFn& piece, Check* check);

  // Read for a record that must be kept whatever its header holds: a header
  // that fails its checks is reported in check->header_ok (and check->header
  // holds the entry's flags, version and size) instead of as Corruption, and
  // the body the index entry describes — the index has checksums of its own
  // — is read and handed to `piece` all the same.
  Status ReadAsIndexed(const PieceFn& piece, Check* check);

  // Bytes read from the blob file so far.
  uint64_t bytes_read() const { return bytes_read_; }
  const std::shared_ptr<Blob>& blob() const { return blob_; }

 private:
  RecordWalker(std::shared_ptr<Blob> blob, size_t key_size);
  Status ReadRecord(const PieceFn& piece, Check* check, bool as_indexed);
  // Points *data at bytes [offset, offset + n) of the file, n <= kPieceSize,
  // reading a new window when they are not in the current one.
  Status Bytes(uint64_t offset, size_t n, const char** data);

  const std::shared_ptr<Blob> blob_;
  const size_t key_size_;
  std::vector<char> keys_;
  std::vector<IndexEntry> entries_;
  std::vector<uint32_t> order_;  // entry numbers by offset
  size_t next_ = 0;
  std::vector<char> window_;
  uint64_t window_start_ = 0;
  size_t window_len_ = 0;
  uint64_t bytes_read_ = 0;
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_RECORD_WALKER_H_
