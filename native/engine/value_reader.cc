#include "engine/value_reader.h"

#include <errno.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "engine/engine.h"
#include "engine/format.h"
#include "util/coding.h"
#include "util/crc32c.h"

namespace oyster {
namespace {

constexpr uint64_t kBlock = kValueBlockSize;

// A reader needs its work buffers only within one call, and a thread makes
// one call at a time: each thread keeps its own, allocated once. (Per
// reader, every large GET paid the page faults of fresh memory.)
char* ThreadBuffer(std::unique_ptr<char[]>* buffer, size_t size) {
  if (*buffer == nullptr) buffer->reset(new char[size]);
  return buffer->get();
}

// Two blocks: the partial blocks at either end of a read, or bytes skipped into the CRC.
char* Scratch() {
  thread_local std::unique_ptr<char[]> scratch;
  return ThreadBuffer(&scratch, 2 * kBlock);
}

// SendTo's window, read and checked before it is sent.
char* Window() {
  thread_local std::unique_ptr<char[]> window;
  return ThreadBuffer(&window, ValueReader::kSendWindow);
}

// Sends what out_fd takes now of `bytes` (*sent: how many). With `more`,
// the kernel is told that more follows, so that a few bytes leave in one
// segment with what comes next rather than in one of their own. WouldBlock
// when the socket's buffer is full before the end.
Status SendBytes(int out_fd, std::string_view bytes, bool more, size_t* sent) {
  const int flags = MSG_NOSIGNAL | MSG_DONTWAIT | (more ? MSG_MORE : 0);
  while (*sent < bytes.size()) {
    ssize_t r = ::send(out_fd, bytes.data() + *sent, bytes.size() - *sent, flags);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::WouldBlock("the socket takes no more");
      return Status::IOError("send to socket " + std::to_string(out_fd), errno);
    }
    *sent += static_cast<size_t>(r);
  }
  return Status::OK();
}

}  // namespace

ValueReader::ValueReader(std::weak_ptr<Engine> engine, std::shared_ptr<Blob> blob, const IndexEntry& entry,
                         size_t header_size, const RecordHeader& h, uint32_t crc_prefix)
    : engine_(std::move(engine)),
      blob_(std::move(blob)),
      record_at_(entry.offset),
      value_at_(entry.offset + header_size),
      size_(h.value_size),
      version_(h.version),
      blocks_((h.flags & kFlagBlocks) != 0),
      record_crc_(h.record_crc),
      crc_prefix_(crc_prefix),
      crc_(crc_prefix) {}

Status ValueReader::Open(std::weak_ptr<Engine> engine, std::shared_ptr<Blob> blob, const IndexEntry& entry,
                         const char* key, size_t key_size, bool no_wait, std::unique_ptr<ValueReader>* reader) {
  const File* file = blob->file();
  auto read = [&](uint64_t offset, size_t n, char* buf) {
    size_t got = 0;
    Status s = no_wait ? file->ReadNoWait(offset, n, buf, &got) : file->Read(offset, n, buf, &got);
    if (s.ok() && got != n) s = blob->Damaged("record truncated", entry.offset);
    return s;
  };
  const size_t hsize = RecordHeaderSize(blob->format(), key_size);
  // The value's first bytes come with the header, in the same read.
  const size_t head = static_cast<size_t>(std::min<uint64_t>(kHeadSize, entry.value_size));
  std::string header(hsize + head, '\0');
  Status s = read(entry.offset, header.size(), header.data());
  RecordHeader h;
  if (s.ok()) s = blob->CheckRecordHeader(key, key_size, entry, header.data(), &h);
  if (!s.ok()) return s;
  const uint32_t prefix = RecordCrcPrefix(blob->format(), header.data(), key_size);
  std::unique_ptr<ValueReader> r(new ValueReader(std::move(engine), blob, entry, hsize, h, prefix));
  r->head_ = header.substr(hsize);
  if (r->blocks_) {
    // All of them at once: 4 bytes per block, 256 KiB for the largest value.
    r->block_crcs_.resize(4 * ValueBlockCount(r->size_));
    s = read(r->value_at_ + r->size_, r->block_crcs_.size(), r->block_crcs_.data());
    if (!s.ok()) return s;
  }
  *reader = std::move(r);
  return Status::OK();
}

Status ValueReader::Read(uint64_t pos, size_t n, char* dst) {
  Status s = CheckRange(pos, n);
  if (!s.ok() || n == 0) return s;
  return Counted(blocks_ ? ReadBlocks(pos, n, dst) : ReadInOrder(pos, n, dst));
}

Status ValueReader::ReadBlocks(uint64_t pos, size_t n, char* dst) {
  const uint64_t end = pos + n;
  // The blocks that hold [pos, end): [from, to) in the value.
  const uint64_t from = pos / kBlock * kBlock;
  const uint64_t to = std::min((end + kBlock - 1) / kBlock * kBlock, size_);
  const uint64_t head_end = std::min(from + kBlock, to);
  const uint64_t tail_begin = (to - 1) / kBlock * kBlock;
  // The first and the last block may hold bytes outside the range: those two
  // go to scratch, every other block straight to dst.
  const bool head_partial = pos > from || end < head_end;
  const bool tail_partial = tail_begin >= head_end && end < to;
  IoBuffer parts[3];
  int count = 0;
  uint64_t inner_begin = from;
  uint64_t inner_end = to;
  if (head_partial) {
    parts[count++] = IoBuffer{Scratch(), static_cast<size_t>(head_end - from)};
    inner_begin = head_end;
  }
  if (tail_partial) inner_end = tail_begin;
  if (inner_end > inner_begin) {
    parts[count++] = IoBuffer{dst + (inner_begin - pos), static_cast<size_t>(inner_end - inner_begin)};
  }
  if (tail_partial) parts[count++] = IoBuffer{Scratch() + kBlock, static_cast<size_t>(to - tail_begin)};
  size_t got = 0;
  Status s = blob_->file()->ReadV(value_at_ + from, parts, count, &got);
  if (!s.ok()) return s;
  if (got != to - from) return blob_->Damaged("record truncated", record_at_);
  for (uint64_t at = from; at < to; at += kBlock) {
    const char* block = head_partial && at == from        ? Scratch()
                        : tail_partial && at == tail_begin ? Scratch() + kBlock
                                                           : dst + (at - pos);
    const size_t len = static_cast<size_t>(std::min(kBlock, to - at));
    if (crc32c::Value(block, len) != DecodeFixed32(block_crcs_.data() + 4 * (at / kBlock))) {
      return blob_->Damaged("block " + std::to_string(at / kBlock) + " checksum mismatch", record_at_);
    }
  }
  if (head_partial) std::memcpy(dst, Scratch() + (pos - from), static_cast<size_t>(std::min(end, head_end) - pos));
  if (tail_partial) std::memcpy(dst + (tail_begin - pos), Scratch() + kBlock, static_cast<size_t>(end - tail_begin));
  return Status::OK();
}

Status ValueReader::SendTo(uint64_t pos, size_t n, int out_fd, std::string_view prefix, size_t* sent) {
  *sent = 0;
  Status s = CheckRange(pos, n);
  if (!s.ok()) return s;
  if (n == 0) {
    s = SendBytes(out_fd, prefix, false, sent);
  } else {
    s = SendWindows(pos, n, out_fd, prefix, sent);
  }
  // A failure met after bytes went out comes again to the call that goes
  // on from there: a call that fails sent nothing.
  return *sent > 0 || s.IsWouldBlock() ? Status::OK() : s;
}

Status ValueReader::SendWindows(uint64_t pos, size_t n, int out_fd, std::string_view prefix, size_t* sent) {
  char* const window = Window();
  size_t done = 0;  // value bytes sent
  while (done < n) {
    const uint64_t at = pos + done;
    // Windows end on block boundaries, so that the next one starts on one.
    const uint64_t end = std::min(pos + n, at / kBlock * kBlock + kSendWindow);
    const size_t len = static_cast<size_t>(end - at);
    uint32_t crc_at = 0;
    Status s;
    if (!blocks_) {
      s = CatchUp(at);
      if (!s.ok()) {
        Restart();
        return Counted(s);
      }
      crc_at = crc_;
    }
    s = Read(at, len, window);
    if (!s.ok()) {
      // A failed read starts over from the value's start; the bytes before
      // this window were sent and their CRC holds, so the call that goes on
      // from here reads this window again, not the whole value.
      if (!blocks_) {
        crc_ = crc_at;
        returned_ = at;
      }
      return s;
    }
    // The prefix only now, with the first window checked.
    if (*sent < prefix.size()) s = SendBytes(out_fd, prefix, true, sent);
    size_t out = 0;
    if (s.ok()) {
      s = blob_->file()->SendTo(value_at_ + at, len, out_fd, &out);
      done += out;
      *sent += out;
    }
    if (!blocks_ && out < len) {
      // The CRC runs over the bytes sent: the rest are read again, in order.
      crc_ = crc32c::Extend(crc_at, window, out);
      returned_ = at + out;
    }
    if (!s.ok()) return s;
    if (out < len) return Counted(blob_->Damaged("record truncated", record_at_));
  }
  return Status::OK();
}

Status ValueReader::CheckRest() {
  if (blocks_ || whole_checked_) return Status::OK();
  const uint64_t returned = returned_;
  const uint32_t crc = crc_;
  Status s = CatchUp(size_);
  if (s.ok()) s = CheckWholeCrc();
  // Back to where the caller's reads left off (a failed catch-up started again from the start).
  returned_ = returned;
  crc_ = crc;
  return Counted(s);
}

Status ValueReader::CheckWholeCrc() {
  if (crc_ != record_crc_) return blob_->Damaged("record checksum mismatch", record_at_);
  whole_checked_ = true;
  return Status::OK();
}

Status ValueReader::CheckRange(uint64_t pos, size_t n) const {
  if (pos <= size_ && n <= size_ - pos) return Status::OK();
  return Status::InvalidArgument("bytes [" + std::to_string(pos) + ", " + std::to_string(pos + n) +
                                 ") are not all inside the " + std::to_string(size_) + "-byte value");
}

Status ValueReader::Counted(Status s) {
  if (s.IsCorruption() && !counted_) {
    counted_ = true;
    std::shared_ptr<Engine> engine = engine_.lock();
    if (engine != nullptr) engine->corrupt_reads_.fetch_add(1, std::memory_order_relaxed);
  }
  return s;
}

Status ValueReader::CatchUp(uint64_t pos) {
  if (pos < returned_) Restart();
  Status s;
  // The bytes between: the CRC needs them, the caller does not.
  while (s.ok() && returned_ < pos) {
    const size_t chunk = static_cast<size_t>(std::min(pos - returned_, 2 * kBlock));
    s = ReadRaw(returned_, chunk, Scratch());
    if (s.ok()) {
      crc_ = crc32c::Extend(crc_, Scratch(), chunk);
      returned_ += chunk;
    }
  }
  return s;
}

Status ValueReader::ReadInOrder(uint64_t pos, size_t n, char* dst) {
  Status s = CatchUp(pos);
  if (s.ok()) s = ReadRaw(pos, n, dst);
  if (s.ok()) {
    crc_ = crc32c::Extend(crc_, dst, n);
    returned_ += n;
    if (returned_ == size_) s = CheckWholeCrc();
  }
  // A failed read leaves nothing to continue from.
  if (!s.ok()) Restart();
  return s;
}

Status ValueReader::ReadRaw(uint64_t pos, size_t n, char* dst) {
  size_t got = 0;
  Status s = blob_->file()->Read(value_at_ + pos, n, dst, &got);
  if (s.ok() && got != n) s = blob_->Damaged("record truncated", record_at_);
  return s;
}

void ValueReader::Restart() {
  returned_ = 0;
  crc_ = crc_prefix_;
}

}  // namespace oyster
