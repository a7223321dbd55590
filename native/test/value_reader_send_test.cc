// ValueReader::SendTo: the bytes a socket receives are exactly the value's,
// across full socket buffers (partial sends) and ranges; a damaged window
// sends none of its bytes; the record CRC of a value without block
// checksums runs over exactly the bytes sent, whatever mix of sends and
// reads carried them; failures of the file are I/O errors, a cut file is
// damage, and a peer that left is an error of the send.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "engine/engine.h"
#include "engine/format.h"
#include "engine/value_reader.h"
#include "test/fault_file_system.h"
#include "test/test_util.h"
#include "test/testharness.h"

namespace oyster {
namespace {

using test::Key;
using test::OpenReader;
using test::TestEngine;
using test::ValueFor;

constexpr uint64_t B = kValueBlockSize;
constexpr size_t W = ValueReader::kSendWindow;
const size_t kHeader = RecordHeaderSize(kBlobFormatVersion, 16);

// A connected pair of stream sockets, both non-blocking: the reader sends
// into `out`, the test takes from `in`; `out` holds the default buffer
// (about 200 KiB), or a roomy one when windows must go out whole. A send
// into a peer that closed fails with EPIPE instead of killing the test with
// SIGPIPE (Node.js ignores SIGPIPE too).
class SocketPair {
 public:
  explicit SocketPair(bool roomy = false) {
    ::signal(SIGPIPE, SIG_IGN);
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    out = fds[0];
    in = fds[1];
    for (int fd : fds) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (roomy) {
      int size = 4 << 20;
      ::setsockopt(out, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    }
  }
  ~SocketPair() {
    if (out >= 0) ::close(out);
    if (in >= 0) ::close(in);
  }
  // Everything `in` holds now.
  std::string Take() {
    std::string got;
    char buf[65536];
    for (;;) {
      ssize_t r = ::read(in, buf, sizeof buf);
      if (r <= 0) return got;
      got.append(buf, static_cast<size_t>(r));
    }
  }
  void CloseIn() {
    ::close(in);
    in = -1;
  }

  int out = -1;
  int in = -1;
};

// Sends value bytes [pos, pos + n) as a server would: SendTo, and while the
// socket's buffer is full, take what arrived and send on. Returns the bytes
// received and the first error (*sends: the calls made).
// A prefix goes with the first call (and with the next ones until all of it went).
std::string SendAll(ValueReader* r, SocketPair* p, uint64_t pos, uint64_t n, Status* status, int* sends = nullptr,
                    std::string_view prefix = {}) {
  std::string got;
  uint64_t done = 0;
  int calls = 0;
  *status = Status::OK();
  while (done < n || !prefix.empty()) {
    size_t sent = 0;
    *status = r->SendTo(pos + done, n - done, p->out, prefix, &sent);
    calls++;
    const size_t of_prefix = std::min(sent, prefix.size());
    prefix.remove_prefix(of_prefix);
    done += sent - of_prefix;
    got += p->Take();
    if (!status->ok()) break;
  }
  got += p->Take();
  if (sends != nullptr) *sends = calls;
  return got;
}

uint64_t CorruptReads(Engine* e) { return e->Stats().corrupt_reads; }

}  // namespace

TEST(ValueReaderSend, ExactBytesThroughAFullSocketAndRanges) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  const std::string value = ValueFor(Key(1), 1, 4 * W + 3 * B + 1234);
  ASSERT_OK(test::Put(db.get(), Key(1), 1, value));
  std::unique_ptr<ValueReader> r = OpenReader(db.get(), Key(1));
  SocketPair p;
  Status s;
  int sends = 0;
  ASSERT_TRUE(SendAll(r.get(), &p, 0, value.size(), &s, &sends) == value);
  ASSERT_OK(s);
  ASSERT_TRUE(sends > 1) << "the socket's buffer filled: " << sends;
  for (uint64_t pos : {uint64_t{0}, uint64_t{1}, B - 1, B, W - 1, W + 1, 3 * W + 7}) {
    for (uint64_t n : {uint64_t{1}, B, W, W + B + 1, value.size() - pos}) {
      if (n > value.size() - pos) continue;
      ASSERT_TRUE(SendAll(r.get(), &p, pos, n, &s) == value.substr(pos, n)) << "[" << pos << ", +" << n << ")";
      ASSERT_OK(s);
    }
  }
  size_t sent = 7;
  ASSERT_STATUS(kInvalidArgument, r->SendTo(value.size() - 5, 6, p.out, {}, &sent));
  ASSERT_EQ(sent, 0u);
  ASSERT_OK(r->SendTo(value.size(), 0, p.out, {}, &sent));
  ASSERT_EQ(p.Take(), "");
  ASSERT_EQ(CorruptReads(db.get()), 0u);
}

// Windows before the damaged block go out whole; the damaged block's window
// not at all; the reader counts the damage once.
TEST(ValueReaderSend, DamagedBlockSendsNothingOfItsWindow) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  const std::string value = ValueFor(Key(1), 1, 3 * W);
  ASSERT_OK(test::Put(db.get(), Key(1), 1, value));
  RecordLocation at;
  std::unique_ptr<ValueReader> r = OpenReader(db.get(), Key(1), &at);
  test::FlipByte(test::BlobPath(db.dir(), 1), at.entry.offset + kHeader + W + 2 * B + 9);
  SocketPair p(true);
  Status s;
  std::string got = SendAll(r.get(), &p, 0, value.size(), &s);
  ASSERT_STATUS(kCorruption, s);
  ASSERT_TRUE(got == value.substr(0, W)) << got.size();
  got = SendAll(r.get(), &p, W + 3 * B, value.size() - W - 3 * B, &s);  // after the damage
  ASSERT_OK(s);
  ASSERT_TRUE(got == value.substr(W + 3 * B));
  ASSERT_EQ(SendAll(r.get(), &p, W + 2 * B + 9, 1, &s), "");
  ASSERT_STATUS(kCorruption, s);
  ASSERT_EQ(CorruptReads(db.get()), 1u);
}

// Without block checksums the value is checked as a whole: the CRC runs
// over the bytes sent, the rest of a partial send may be read instead,
// and the call that reaches the end sends its window only if the CRC holds.
TEST(ValueReaderSend, ValueWithoutBlockChecksumsCheckedOverTheBytesSent) {
  const std::string dir = test::TmpDir() + "/partition";
  const std::string key = Key(9);
  const std::string value = ValueFor(key, 3, 3 * W + 77);
  ASSERT_OK(FileSystem::Default()->CreateDir(dir));
  test::WriteLegacyBlob(dir, kBlobFormatVersion, key, test::Ts(3), value);
  TestEngine db(dir);
  ASSERT_OK(db.Open());
  RecordLocation at;
  std::unique_ptr<ValueReader> r = OpenReader(db.get(), key, &at);
  SocketPair p;
  Status s;
  int sends = 0;
  ASSERT_TRUE(SendAll(r.get(), &p, 0, value.size(), &s, &sends) == value);
  ASSERT_OK(s);
  ASSERT_TRUE(sends > 1);
  // A send stopped by the full socket, the rest read.
  size_t sent = 0;
  ASSERT_OK(r->SendTo(0, value.size(), p.out, {}, &sent));
  ASSERT_TRUE(sent > 0 && sent < value.size()) << sent;
  std::string got = p.Take();
  std::string rest(value.size() - sent, '\0');
  ASSERT_OK(r->Read(sent, rest.size(), rest.data()));
  ASSERT_TRUE(got + rest == value);
  // Damage in the last window: everything before it goes, nothing of it.
  test::FlipByte(test::BlobPath(dir, 1), at.entry.offset + RecordHeaderSize(kBlobFormatVersion, 16) + 3 * W + 5);
  SocketPair roomy(true);
  got = SendAll(r.get(), &roomy, 0, value.size(), &s);
  ASSERT_STATUS(kCorruption, s);
  ASSERT_TRUE(got == value.substr(0, 3 * W)) << got.size();
  ASSERT_EQ(CorruptReads(db.get()), 1u);
}

// A prefix (an HTTP header block) leaves before the value's bytes and only
// once the first window passed its check: a damaged first window sends
// nothing at all. A failure after bytes went out is left to the next call,
// which sends nothing.
TEST(ValueReaderSend, PrefixGoesWithTheFirstCheckedWindow) {
  TestEngine db(test::TmpDir() + "/partition");
  ASSERT_OK(db.Open());
  const std::string value = ValueFor(Key(1), 1, 3 * W);
  ASSERT_OK(test::Put(db.get(), Key(1), 1, value));
  RecordLocation at;
  std::unique_ptr<ValueReader> r = OpenReader(db.get(), Key(1), &at);
  const std::string header = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(value.size()) + "\r\n\r\n";
  SocketPair p(true);
  Status s;
  ASSERT_TRUE(SendAll(r.get(), &p, 0, value.size(), &s, nullptr, header) == header + value);
  ASSERT_OK(s);
  ASSERT_TRUE(SendAll(r.get(), &p, B + 3, 10, &s, nullptr, header) == header + value.substr(B + 3, 10));
  ASSERT_OK(s);
  // Nothing of the value: the prefix alone.
  size_t sent = 0;
  ASSERT_OK(r->SendTo(value.size(), 0, p.out, header, &sent));
  ASSERT_EQ(sent, header.size());
  ASSERT_EQ(p.Take(), header);
  // A prefix larger than the socket takes: part of it, none of the value.
  {
    SocketPair small;
    const std::string large(1 << 20, 'h');
    ASSERT_OK(r->SendTo(0, value.size(), small.out, large, &sent));
    ASSERT_TRUE(sent > 0 && sent < large.size()) << sent;
    // (What the first call sent is still in the socket.)
    ASSERT_TRUE(SendAll(r.get(), &small, 0, value.size(), &s, nullptr, std::string_view(large).substr(sent)) ==
                large + value);
    ASSERT_OK(s);
  }
  // Damage in the second window: the first call sends the prefix and the
  // first window and returns without the failure; the next call meets it.
  test::FlipByte(test::BlobPath(db.dir(), 1), at.entry.offset + kHeader + W + 9);
  ASSERT_OK(r->SendTo(0, value.size(), p.out, header, &sent));
  ASSERT_EQ(sent, header.size() + W);
  ASSERT_TRUE(p.Take() == header + value.substr(0, W));
  ASSERT_STATUS(kCorruption, r->SendTo(W, value.size() - W, p.out, {}, &sent));
  ASSERT_EQ(sent, 0u);
  ASSERT_EQ(p.Take(), "");
  // Damage in the first window: not even the prefix goes.
  ASSERT_STATUS(kCorruption, r->SendTo(W + 5, 10, p.out, header, &sent));
  ASSERT_EQ(sent, 0u);
  ASSERT_EQ(p.Take(), "");
  ASSERT_EQ(CorruptReads(db.get()), 1u);
}

// Without block checksums the damage is met by the window that reaches the
// value's end, after the windows before it were sent: the call that goes on
// from there reads that window again, not the whole value from its start.
TEST(ValueReaderSend, DamageAtTheEndOfAValueWithoutBlockChecksumsIsMetAgainFromThere) {
  test::FaultInjectingFileSystem fs;
  const std::string dir = test::TmpDir() + "/partition";
  const std::string key = Key(9);
  const std::string value = ValueFor(key, 3, 3 * W + 77);
  ASSERT_OK(FileSystem::Default()->CreateDir(dir));
  test::WriteLegacyBlob(dir, kBlobFormatVersion, key, test::Ts(3), value);
  TestEngine db(dir);
  db.options.fs = &fs;
  ASSERT_OK(db.Open());
  RecordLocation at;
  std::unique_ptr<ValueReader> r = OpenReader(db.get(), key, &at);
  test::FlipByte(test::BlobPath(dir, 1), at.entry.offset + RecordHeaderSize(kBlobFormatVersion, 16) + 3 * W + 5);
  SocketPair p(true);
  size_t sent = 0;
  ASSERT_OK(r->SendTo(0, value.size(), p.out, {}, &sent));
  ASSERT_EQ(sent, 3 * W);
  ASSERT_TRUE(p.Take() == value.substr(0, 3 * W));
  fs.ResetCounters();
  ASSERT_STATUS(kCorruption, r->SendTo(3 * W, 77, p.out, {}, &sent));
  ASSERT_EQ(sent, 0u);
  ASSERT_EQ(p.Take(), "");
  ASSERT_EQ(fs.read_bytes(), 77u);
  fs.ResetCounters();
  std::string rest(77, '\0');
  ASSERT_STATUS(kCorruption, r->Read(3 * W, rest.size(), rest.data()));
  ASSERT_EQ(fs.read_bytes(), 77u);
  ASSERT_EQ(CorruptReads(db.get()), 1u);
}

TEST(ValueReaderSend, FailuresOfTheFileAndOfThePeer) {
  test::FaultInjectingFileSystem fs;
  TestEngine db(test::TmpDir() + "/partition");
  db.options.fs = &fs;
  ASSERT_OK(db.Open());
  const std::string value = ValueFor(Key(1), 1, 2 * W);
  ASSERT_OK(test::Put(db.get(), Key(1), 1, value));
  ASSERT_OK(db->CloseActiveBlob());
  RecordLocation at;
  std::unique_ptr<ValueReader> r = OpenReader(db.get(), Key(1), &at);
  SocketPair p(true);
  Status s;
  fs.FailReads(true);
  ASSERT_TRUE(SendAll(r.get(), &p, 0, value.size(), &s).empty());
  ASSERT_STATUS(kIOError, s);
  fs.ClearFaults();
  ASSERT_TRUE(SendAll(r.get(), &p, 0, B, &s) == value.substr(0, B));
  ASSERT_OK(s);
  // The file cut under the reader: what is gone is damage, not a short answer.
  test::TruncateFile(test::BlobPath(db.dir(), 1), at.entry.offset + kHeader + W + 10);
  std::string got = SendAll(r.get(), &p, 0, value.size(), &s);
  ASSERT_STATUS(kCorruption, s);
  ASSERT_TRUE(got == value.substr(0, W));
  // A peer that left: the send fails, the process lives on.
  p.CloseIn();
  size_t sent = 0;
  ASSERT_STATUS(kIOError, r->SendTo(0, B, p.out, {}, &sent));
  ASSERT_EQ(CorruptReads(db.get()), 1u);
}

}  // namespace oyster
