#include "util/uncached_io.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace oyster {
namespace {

// Bytes moved by one system call; also the size of a thread's bounce buffer.
constexpr size_t kPiece = 1 << 20;
// So a piece rounded up to the alignment still fits the bounce buffer.
static_assert(kPiece % kUncachedAlignment == 0, "pieces are whole aligned blocks");

struct FreeAligned {
  void operator()(char* p) const { std::free(p); }
};

// O_DIRECT needs aligned memory and the callers' Buffers are not: each
// engine thread copies through one aligned buffer of its own.
char* BounceBuffer() {
  thread_local std::unique_ptr<char, FreeAligned> buffer;
  if (!buffer) {
    void* p = nullptr;
    if (posix_memalign(&p, kUncachedAlignment, kPiece) != 0) return nullptr;
    buffer.reset(static_cast<char*>(p));
  }
  return buffer.get();
}

// An open descriptor that may switch between going around the cache and
// through it, as each range allows.
class UncachedFile {
 public:
  ~UncachedFile() {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Open(const std::string& path, int flags, bool direct) {
    if (direct) {
      fd_ = ::open(path.c_str(), flags | O_CLOEXEC | O_DIRECT);
      if (fd_ >= 0) {
        direct_ = true;
        return Status::OK();
      }
      // EINVAL: the file system refuses O_DIRECT.
      if (errno != EINVAL) return Status::IOError("open " + path, errno);
    }
    fd_ = ::open(path.c_str(), flags | O_CLOEXEC);
    if (fd_ < 0) return Status::IOError("open " + path, errno);
    direct_ = false;
    return Status::OK();
  }

  // Whether a range at `offset` of `n` bytes can go around the cache; turns
  // O_DIRECT on or off to match.
  bool Direct(uint64_t offset, size_t n) {
    return SetDirect(offset % kUncachedAlignment == 0 && n % kUncachedAlignment == 0 && direct_allowed_);
  }

  // Turns O_DIRECT off for what follows.
  void Cached() { SetDirect(false); }

  // After a read or write that failed (errno set): whether to try it again
  // — EINTR, or EINVAL of a direct call (an alignment the device wants
  // larger), after which the rest goes through the cache.
  bool Retry(bool direct) {
    if (errno == EINTR) return true;
    if (!direct || errno != EINVAL) return false;
    direct_allowed_ = false;
    SetDirect(false);
    return true;
  }

  int fd() const { return fd_; }

 private:
  bool SetDirect(bool want) {
    if (want == direct_) return direct_;
    int flags = ::fcntl(fd_, F_GETFL);
    if (flags >= 0 && ::fcntl(fd_, F_SETFL, want ? flags | O_DIRECT : flags & ~O_DIRECT) == 0) {
      direct_ = want;
    } else if (want) {
      direct_allowed_ = false;  // the file system refuses it
    }
    return direct_;
  }

  int fd_ = -1;
  bool direct_ = false;
  bool direct_allowed_ = true;
};

// Whether every page of the range is in the page cache, by cachestat(2)
// (Linux 6.5+), which unlike a RWF_NOWAIT read starts no readahead; false
// where the kernel cannot tell (older kernels, or a seccomp filter that
// refuses the call, as the packaged unit's does with EPERM): then the range
// is read around the cache, which costs disk bandwidth, never correctness.
bool InPageCache(int fd, uint64_t offset, size_t n) {
#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
  constexpr long kCachestat = 451;  // the same number in both system call tables
  struct {
    uint64_t off, len;
  } range = {offset, n};
  struct {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
  } stat = {};
  if (n == 0 || ::syscall(kCachestat, fd, &range, &stat, 0) != 0) return false;
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return stat.nr_cache >= (offset + n - 1) / page - offset / page + 1;
#else
  return false;
#endif
}

}  // namespace

Status ReadUncached(const std::string& path, uint64_t offset, size_t n, char* buf, size_t* bytes_read) {
  *bytes_read = 0;
  UncachedFile file;
  Status s = file.Open(path, O_RDONLY, false);
  if (!s.ok()) return s;
  char* bounce = BounceBuffer();
  if (bounce == nullptr) return Status::IOError("read " + path + ": no memory for an aligned buffer", ENOMEM);
  size_t done = 0;
  while (done < n) {
    size_t want = std::min(n - done, kPiece);
    uint64_t at = offset + done;
    // What the cache holds is taken from it.
    bool cached = InPageCache(file.fd(), at, want);
    // A direct read may ask for more than wanted, up to the alignment: the
    // file's end cuts it short anyway.
    size_t aligned = (want + kUncachedAlignment - 1) / kUncachedAlignment * kUncachedAlignment;
    bool direct = !cached && file.Direct(at, aligned);
    if (!direct) file.Cached();
    ssize_t r = direct ? ::pread(file.fd(), bounce, aligned, static_cast<off_t>(at))
                       : ::pread(file.fd(), buf + done, want, static_cast<off_t>(at));
    if (r < 0) {
      if (file.Retry(direct)) continue;
      return Status::IOError("read " + path, errno);
    }
    if (r == 0) break;
    size_t got = std::min(static_cast<size_t>(r), want);
    if (direct) std::memcpy(buf + done, bounce, got);
    done += got;
  }
  *bytes_read = done;
  return Status::OK();
}

Status WriteUncached(const std::string& path, uint64_t offset, const char* data, size_t n) {
  UncachedFile file;
  Status s = file.Open(path, O_WRONLY, offset % kUncachedAlignment == 0 && n >= kUncachedAlignment);
  if (!s.ok()) return s;
  char* bounce = BounceBuffer();
  if (bounce == nullptr) return Status::IOError("write " + path + ": no memory for an aligned buffer", ENOMEM);
  size_t done = 0;
  while (done < n) {
    size_t left = n - done;
    // Whole aligned pieces around the cache; a last partial block through it.
    size_t want = left >= kUncachedAlignment ? std::min(kPiece, left - left % kUncachedAlignment) : left;
    uint64_t at = offset + done;
    bool direct = file.Direct(at, want);
    if (direct) std::memcpy(bounce, data + done, want);
    ssize_t w = ::pwrite(file.fd(), direct ? bounce : data + done, want, static_cast<off_t>(at));
    if (w < 0) {
      if (file.Retry(direct)) continue;
      return Status::IOError("write " + path, errno);
    }
    if (w == 0) return Status::IOError("write " + path + " made no progress", EIO);
    done += static_cast<size_t>(w);
  }
  return Status::OK();
}

}  // namespace oyster
