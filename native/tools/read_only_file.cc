#include "tools/read_only_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace oyster {
namespace {

class ReadOnlyFile final : public File {
 public:
  ReadOnlyFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~ReadOnlyFile() override { ::close(fd_); }

  Status Read(uint64_t offset, size_t n, char* buf, size_t* bytes_read) const override {
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, buf + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return Status::IOError("read " + path_, errno);
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    *bytes_read = done;
    return Status::OK();
  }

  Status Write(uint64_t, const IoSlice*, int) override { return ReadOnly(); }
  Status Sync() override { return ReadOnly(); }
  Status Truncate(uint64_t) override { return ReadOnly(); }

  Status Size(uint64_t* size) const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return Status::IOError("stat " + path_, errno);
    *size = static_cast<uint64_t>(st.st_size);
    return Status::OK();
  }

  Status Removed(bool* removed) const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return Status::IOError("stat " + path_, errno);
    *removed = st.st_nlink == 0;
    return Status::OK();
  }

  const std::string& path() const override { return path_; }

 private:
  Status ReadOnly() const { return Status::NotSupported(path_ + " is open for reading only"); }

  const std::string path_;
  const int fd_;
};

}  // namespace

Status OpenReadOnlyFile(const std::string& path, std::unique_ptr<File>* file) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError("open " + path, errno);
  file->reset(new ReadOnlyFile(path, fd));
  return Status::OK();
}

}  // namespace oyster
