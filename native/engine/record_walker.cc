#include "engine/record_walker.h"

#include <algorithm>
#include <cstring>

#include "util/coding.h"
#include "util/crc32c.h"

namespace oyster {

RecordWalker::RecordWalker(std::shared_ptr<Blob> blob, size_t key_size)
    : blob_(std::move(blob)), key_size_(key_size) {}

Status RecordWalker::Open(std::shared_ptr<Blob> blob, size_t key_size, std::unique_ptr<RecordWalker>* walker) {
  if (blob->in_memory()) {
    return Status::InvalidArgument("blob " + std::to_string(blob->id()) + " is not closed (it has no index file yet)");
  }
  std::unique_ptr<RecordWalker> w(new RecordWalker(blob, key_size));
  Status s = blob->ForEachEntry([&](const char* key, const IndexEntry& e) {
    w->keys_.insert(w->keys_.end(), key, key + key_size);
    w->entries_.push_back(e);
  });
  if (!s.ok()) return s;
  w->order_.resize(w->entries_.size());
  for (uint32_t i = 0; i < w->order_.size(); i++) w->order_[i] = i;
  const std::vector<IndexEntry>& entries = w->entries_;
  std::sort(w->order_.begin(), w->order_.end(),
            [&](uint32_t a, uint32_t b) { return entries[a].offset < entries[b].offset; });
  *walker = std::move(w);
  return Status::OK();
}

Status RecordWalker::Bytes(uint64_t offset, size_t n, const char** data) {
  if (offset >= window_start_ && offset + n <= window_start_ + window_len_) {
    *data = window_.data() + (offset - window_start_);
    return Status::OK();
  }
  const uint64_t size = blob_->size();
  if (offset + n > size) return blob_->Damaged("record runs past the end of the blob", offset);
  const size_t len = static_cast<size_t>(std::min<uint64_t>(std::max(n, kPieceSize), size - offset));
  // What of the request the window holds already (it starts inside it, as a
  // value's first piece starts inside the window its header was read with)
  // moves to the front instead of being read again.
  size_t kept = 0;
  if (offset >= window_start_ && offset < window_start_ + window_len_) {
    kept = static_cast<size_t>(window_start_ + window_len_ - offset);
    std::memmove(window_.data(), window_.data() + (offset - window_start_), kept);
  }
  window_.resize(std::max(window_.size(), len));
  size_t got = 0;
  Status s = blob_->file()->Read(offset + kept, len - kept, window_.data() + kept, &got);
  if (!s.ok()) return s;
  bytes_read_ += got;
  got += kept;
  window_start_ = offset;
  window_len_ = got;
  if (got < n) return blob_->Damaged("record truncated", offset);
  *data = window_.data();
  return Status::OK();
}

Status RecordWalker::Read(const PieceFn& piece, Check* check) { return ReadRecord(piece, check, false); }

Status RecordWalker::ReadAsIndexed(const PieceFn& piece, Check* check) { return ReadRecord(piece, check, true); }

Status RecordWalker::ReadRecord(const PieceFn& piece, Check* check, bool as_indexed) {
  const IndexEntry e = entry();
  const char* key = this->key();
  next_++;
  const uint32_t format = blob_->format();
  const size_t hsize = RecordHeaderSize(format, key_size_);
  const char* header = nullptr;
  Status s = Bytes(e.offset, hsize, &header);
  if (!s.ok()) return s;
  s = blob_->CheckRecordHeader(key, key_size_, e, header, &check->header);
  if (!s.ok() && !(as_indexed && s.IsCorruption())) return s;
  check->header_ok = s.ok();
  if (!check->header_ok) {
    check->header = RecordHeader();
    check->header.flags = static_cast<uint8_t>(e.flags);
    check->header.offset = e.offset;
    check->header.version = e.version;
    check->header.value_size = e.value_size;
  }
  check->header.key = key;
  // The CRC's start depends on the header only: taken before the window moves.
  uint32_t crc = check->header_ok ? RecordCrcPrefix(format, header, key_size_) : 0;
  const RecordHeader& h = check->header;
  const bool blocks = (h.flags & kFlagBlocks) != 0;
  std::vector<char> block_crcs(blocks ? 4 * ValueBlockCount(h.value_size) : 0);
  bool blocks_ok = true;
  uint64_t pos = e.offset + hsize;
  // The value, in pieces that start on block boundaries (kPieceSize is a
  // multiple of kValueBlockSize), so that each piece's blocks are whole.
  for (uint64_t done = 0; done < h.value_size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kPieceSize, h.value_size - done));
    const char* data = nullptr;
    s = Bytes(pos, n, &data);
    if (!s.ok()) return s;
    crc = blocks ? EncodeBlockCrcs(crc, data, n, block_crcs.data() + 4 * (done / kValueBlockSize))
                 : crc32c::Extend(crc, data, n);
    if (piece) {
      s = piece(data, n, true);
      if (!s.ok()) return s;
    }
    done += n;
    pos += n;
  }
  for (size_t done = 0; done < block_crcs.size();) {
    const size_t n = std::min(kPieceSize, block_crcs.size() - done);
    const char* data = nullptr;
    s = Bytes(pos, n, &data);
    if (!s.ok()) return s;
    if (std::memcmp(data, block_crcs.data() + done, n) != 0) blocks_ok = false;
    if (piece) {
      s = piece(data, n, false);
      if (!s.ok()) return s;
    }
    done += n;
    pos += n;
  }
  check->value_crc = crc;
  check->value_ok = blocks_ok && (check->header_ok ? crc == h.record_crc : blocks || h.value_size == 0);
  return Status::OK();
}

}  // namespace oyster
