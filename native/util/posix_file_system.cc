// POSIX implementation of FileSystem.

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <vector>

#include "util/file_system.h"

namespace oyster {
namespace {

Status PosixError(const std::string& context, int err) { return Status::IOError(context, err); }

// After a vectored call moved `n` bytes: drops the buffers it finished from
// iov[*first..] and moves the start of the one it stopped in.
void Advance(std::vector<struct iovec>* iov, size_t* first, size_t n) {
  while (n > 0 && *first < iov->size()) {
    struct iovec& v = (*iov)[*first];
    if (n >= v.iov_len) {
      n -= v.iov_len;
      v.iov_len = 0;
      ++*first;
    } else {
      v.iov_base = static_cast<char*>(v.iov_base) + n;
      v.iov_len -= n;
      n = 0;
    }
  }
}

// Moves every buffer of iov through `call(buffers, count, moved)` — preadv
// or pwritev at the file position `moved` bytes past the start — which may
// move fewer bytes than asked: goes on from where it stopped, and again
// after EINTR. Sets *moved to the bytes moved and *stalled when a call moved
// nothing (the end of the file, for a read). Returns the errno of a call
// that failed, or 0.
template <typename Call>
int MoveAll(std::vector<struct iovec>* iov, Call call, size_t* moved, bool* stalled) {
  *moved = 0;
  *stalled = false;
  size_t first = 0;
  while (first < iov->size()) {
    if ((*iov)[first].iov_len == 0) {
      first++;
      continue;
    }
    int n = static_cast<int>(std::min<size_t>(iov->size() - first, IOV_MAX));
    ssize_t r = call(&(*iov)[first], n, *moved);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (r == 0) {
      *stalled = true;
      return 0;
    }
    *moved += static_cast<size_t>(r);
    Advance(iov, &first, static_cast<size_t>(r));
  }
  return 0;
}

class PosixFile final : public File {
 public:
  PosixFile(std::string path, int fd, bool read_only = false)
      : path_(std::move(path)), fd_(fd), read_only_(read_only) {}
  ~PosixFile() override { ::close(fd_); }

  Status Read(uint64_t offset, size_t n, char* buf, size_t* bytes_read) const override {
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, buf + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return PosixError("read " + path_, errno);
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    *bytes_read = done;
    return Status::OK();
  }

  Status ReadV(uint64_t offset, const IoBuffer* buffers, int count, size_t* bytes_read) const override {
    // preadv may read less than asked; continue from where it stopped.
    std::vector<struct iovec> iov(static_cast<size_t>(count));
    for (int i = 0; i < count; i++) iov[i] = {buffers[i].data, buffers[i].size};
    bool at_end;
    int err = MoveAll(
        &iov, [&](const struct iovec* v, int n, size_t at) { return ::preadv(fd_, v, n, static_cast<off_t>(offset + at)); },
        bytes_read, &at_end);
    if (err != 0) return PosixError("read " + path_, err);
    return Status::OK();
  }

  // preadv2 with RWF_NOWAIT (Linux 4.14+): EAGAIN instead of waiting when a
  // page is not cached. A partial read means a later page is missing.
  Status ReadNoWait(uint64_t offset, size_t n, char* buf, size_t* bytes_read) const override {
#ifdef RWF_NOWAIT
    if (!nowait_unsupported_.load(std::memory_order_relaxed)) {
      size_t done = 0;
      while (done < n) {
        struct iovec iov = {buf + done, n - done};
        ssize_t r = ::preadv2(fd_, &iov, 1, static_cast<off_t>(offset + done), RWF_NOWAIT);
        if (r < 0) {
          if (errno == EINTR) continue;
          if (errno == EAGAIN) return Status::WouldBlock("read " + path_ + " needs the disk");
          // Old kernels and some file systems refuse the flag: stop asking.
          if (errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL) {
            nowait_unsupported_.store(true, std::memory_order_relaxed);
            break;
          }
          return PosixError("read " + path_, errno);
        }
        if (r == 0) {
          *bytes_read = done;
          return Status::OK();
        }
        done += static_cast<size_t>(r);
      }
      if (done == n) {
        *bytes_read = done;
        return Status::OK();
      }
    }
#endif
    return Status::WouldBlock("no non-blocking reads for " + path_);
  }

  Status Write(uint64_t offset, const IoSlice* slices, int count) override {
    if (read_only_) return ReadOnly();
    // pwritev may write less than asked; continue from where it stopped.
    std::vector<struct iovec> iov(static_cast<size_t>(count));
    for (int i = 0; i < count; i++) {
      iov[i].iov_base = const_cast<char*>(slices[i].data);
      iov[i].iov_len = slices[i].size;
    }
    size_t written;
    bool stalled;
    int err = MoveAll(
        &iov, [&](const struct iovec* v, int n, size_t at) { return ::pwritev(fd_, v, n, static_cast<off_t>(offset + at)); },
        &written, &stalled);
    if (err != 0) return PosixError("write " + path_, err);
    if (stalled) return PosixError("write " + path_ + " made no progress", EIO);
    return Status::OK();
  }

  Status Sync() override {
    if (read_only_) return ReadOnly();
    if (::fdatasync(fd_) != 0) return PosixError("fdatasync " + path_, errno);
    return Status::OK();
  }

  void DropCache(uint64_t offset, uint64_t n) const override {
    // The kernel keeps the pages of a partial page at either end, and any
    // page still dirty or under writeback.
    ::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(n), POSIX_FADV_DONTNEED);
  }

  void StartWriteback(uint64_t offset, uint64_t n) const override {
    ::sync_file_range(fd_, static_cast<off_t>(offset), static_cast<off_t>(n), SYNC_FILE_RANGE_WRITE);
  }

  Status WriteBack(uint64_t offset, uint64_t n) override {
    if (read_only_) return ReadOnly();
    if (::sync_file_range(fd_, static_cast<off_t>(offset), static_cast<off_t>(n),
                          SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0) {
      return PosixError("sync_file_range " + path_, errno);
    }
    return Status::OK();
  }

  Status SendTo(uint64_t offset, size_t n, int out_fd, size_t* sent) const override {
    *sent = 0;
    while (*sent < n) {
      off_t at = static_cast<off_t>(offset + *sent);
      ssize_t r = ::sendfile(out_fd, fd_, &at, n - *sent);
      if (r < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::WouldBlock("the socket takes no more of " + path_);
        return PosixError("send " + path_, errno);
      }
      if (r == 0) break;
      *sent += static_cast<size_t>(r);
    }
    return Status::OK();
  }

  Status Truncate(uint64_t size) override {
    if (read_only_) return ReadOnly();
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) return PosixError("truncate " + path_, errno);
    return Status::OK();
  }

  Status Size(uint64_t* size) const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return PosixError("stat " + path_, errno);
    *size = static_cast<uint64_t>(st.st_size);
    return Status::OK();
  }

  Status Removed(bool* removed) const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return PosixError("stat " + path_, errno);
    *removed = st.st_nlink == 0;
    return Status::OK();
  }

  const std::string& path() const override { return path_; }

 private:
  Status ReadOnly() const { return Status::NotSupported(path_ + " is open for reading only"); }

  const std::string path_;
  const int fd_;
  const bool read_only_;
  mutable std::atomic<bool> nowait_unsupported_{false};
};

class PosixDirLock final : public DirLock {
 public:
  explicit PosixDirLock(int fd) : fd_(fd) {}
  ~PosixDirLock() override {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }

 private:
  const int fd_;
};

class PosixFileSystem final : public FileSystem {
 public:
  Status OpenFile(const std::string& path, bool create_new, std::unique_ptr<File>* file) override {
    int flags = O_RDWR | O_CLOEXEC | (create_new ? (O_CREAT | O_EXCL) : 0);
    // No access times: a read that updated one could wait for the file
    // system's journal, and reads on the event loop must never wait. Only
    // the file's owner may ask; a file copied in by someone else is opened
    // without it.
    int fd = ::open(path.c_str(), flags | O_NOATIME, 0644);
    if (fd < 0 && errno == EPERM) fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return PosixError("open " + path, errno);
    file->reset(new PosixFile(path, fd));
    return Status::OK();
  }

  Status ListDir(const std::string& dir, std::vector<std::string>* names) override {
    names->clear();
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return PosixError("list " + dir, errno);
    errno = 0;
    while (struct dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names->push_back(std::move(name));
    }
    int err = errno;
    ::closedir(d);
    if (err != 0) return PosixError("list " + dir, err);
    return Status::OK();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return PosixError("rename " + from + " to " + to, errno);
    return Status::OK();
  }

  Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return PosixError("remove " + path, errno);
    return Status::OK();
  }

  Status SyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return PosixError("open directory " + dir, errno);
    Status s;
    if (::fsync(fd) != 0) s = PosixError("fsync directory " + dir, errno);
    ::close(fd);
    return s;
  }

  Status CreateDir(const std::string& dir) override {
    if (::mkdir(dir.c_str(), 0755) == 0) return Status::OK();
    int err = errno;
    struct stat st;
    if (err == EEXIST && ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Status::OK();
    return PosixError("create directory " + dir, err);
  }

  Status LockDir(const std::string& dir, std::unique_ptr<DirLock>* lock) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return PosixError("open directory " + dir, errno);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK) return Status::Busy("directory " + dir + " is in use by another engine");
      return PosixError("lock directory " + dir, err);
    }
    lock->reset(new PosixDirLock(fd));
    return Status::OK();
  }
};

}  // namespace

FileSystem* FileSystem::Default() {
  static PosixFileSystem fs;
  return &fs;
}

Status OpenReadOnlyFile(const std::string& path, std::unique_ptr<File>* file) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return PosixError("open " + path, errno);
  file->reset(new PosixFile(path, fd, /*read_only=*/true));
  return Status::OK();
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

std::string ParentDir(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

}  // namespace oyster
