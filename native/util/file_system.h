// FileSystem is the engine's only door to the operating system's files (as
// LevelDB's Env). The engine never calls open/pread/pwrite itself, so tests
// can inject faults by wrapping the POSIX implementation.

#ifndef OYSTER_UTIL_FILE_SYSTEM_H_
#define OYSTER_UTIL_FILE_SYSTEM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/status.h"

namespace oyster {

struct IoSlice {
  const char* data;
  size_t size;
};

// Where a vectored read puts its bytes.
struct IoBuffer {
  char* data;
  size_t size;
};

// An open file for positional I/O. Read, Size and path are safe to call from
// many threads at once; so are Write of disjoint ranges and Sync (a streamed
// put writes its range and syncs beside the engine's writer). Truncate is
// serialized with writes by the caller.
class File {
 public:
  virtual ~File() = default;

  // Reads up to n bytes at offset into buf; *bytes_read < n only at end of file.
  virtual Status Read(uint64_t offset, size_t n, char* buf, size_t* bytes_read) const = 0;
  // Read into the buffers back to back from offset, in one system call
  // where it can (preadv); *bytes_read < their total only at end of file.
  virtual Status ReadV(uint64_t offset, const IoBuffer* buffers, int count, size_t* bytes_read) const = 0;
  // Read, but only from memory (the page cache): WouldBlock where the data
  // would have to come from the device, or where the platform cannot tell.
  // Never waits for the disk, so the event loop may call it.
  virtual Status ReadNoWait(uint64_t offset, size_t n, char* buf, size_t* bytes_read) const {
    return Status::WouldBlock("no non-blocking reads for " + path());
  }
  // Writes the slices back to back starting at offset; all or an error.
  virtual Status Write(uint64_t offset, const IoSlice* slices, int count) = 0;
  // Makes written data durable (fdatasync).
  virtual Status Sync() = 0;
  // A hint that bytes [offset, offset + n), written and synced, will not be
  // read again soon: the page cache may let go of them. They stay readable
  // (from the device); pages not yet synced are kept. No effect by default.
  virtual void DropCache(uint64_t offset, uint64_t n) const {}
  // A hint that bytes [offset, offset + n), just written, will be synced
  // soon: the kernel may start writing them to the device now, without
  // waiting, so that the sync finds less to do. Makes nothing durable. No
  // effect by default.
  virtual void StartWriteback(uint64_t offset, uint64_t n) const {}
  // Writes the dirty pages of bytes [offset, offset + n) to the device and
  // waits for them, and for writes of them already under way: the pages are
  // clean after, and DropCache lets them go. Makes nothing durable (neither
  // the file's size and blocks nor the device's cache: Sync does). An error
  // is a failed write of the file's data, as Sync's would be, and Sync may
  // not report it again. By default Sync's.
  virtual Status WriteBack(uint64_t offset, uint64_t n) { return Sync(); }
  // Sends bytes [offset, offset + n) of the file to out_fd, a socket in
  // non-blocking mode, straight from the page cache (sendfile: no copy
  // through user memory). *sent: the bytes sent, from offset on. OK with
  // *sent == n, or *sent < n when the file ended first; WouldBlock when
  // out_fd took no more (its buffer is full: *sent went before); IOError
  // when either side fails (a socket the peer closed: EPIPE, ECONNRESET).
  // NotSupported by default.
  virtual Status SendTo(uint64_t offset, size_t n, int out_fd, size_t* sent) const {
    *sent = 0;
    return Status::NotSupported("no sendfile for " + path());
  }
  virtual Status Truncate(uint64_t size) = 0;
  virtual Status Size(uint64_t* size) const = 0;
  // Whether the file has been unlinked (its directory deleted, say) while
  // open: writes to it still succeed but can never be read back.
  virtual Status Removed(bool* removed) const = 0;
  virtual const std::string& path() const = 0;
};

// Held while a directory is in use by one engine; released on destruction.
class DirLock {
 public:
  virtual ~DirLock() = default;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // The process-wide POSIX implementation.
  static FileSystem* Default();

  // create_new: create the file, failing if it exists; otherwise open an existing file.
  virtual Status OpenFile(const std::string& path, bool create_new, std::unique_ptr<File>* file) = 0;
  // Names (not paths) of the entries of dir, without "." and "..".
  virtual Status ListDir(const std::string& dir, std::vector<std::string>* names) = 0;
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  virtual Status Remove(const std::string& path) = 0;
  // Makes the directory's entries durable (fsync on the directory).
  virtual Status SyncDir(const std::string& dir) = 0;
  // Creates one directory level; OK if it already exists as a directory.
  virtual Status CreateDir(const std::string& dir) = 0;
  // Exclusive advisory lock on a directory; Busy if another holder has it.
  virtual Status LockDir(const std::string& dir, std::unique_ptr<DirLock>* lock) = 0;
};

// Opens `path` of the POSIX file system with O_RDONLY; Write, Sync and
// Truncate of the result fail with NotSupported. The offline tools inspect
// blob and index files through it, so that a check cannot change what it
// looks at and works on read-only copies, snapshots and media.
Status OpenReadOnlyFile(const std::string& path, std::unique_ptr<File>* file);

// "a/b" joined with "c" -> "a/b/c".
std::string JoinPath(const std::string& dir, const std::string& name);
// "a/b/c" -> "a/b"; "c" -> ".".
std::string ParentDir(const std::string& path);

}  // namespace oyster

#endif  // OYSTER_UTIL_FILE_SYSTEM_H_
