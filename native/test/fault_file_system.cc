#include "test/fault_file_system.h"

#include <errno.h>

#include <algorithm>
#include <thread>

namespace oyster {
namespace test {

// Forwards to the real file; consults the file system before writes, syncs
// and truncations.
class FaultInjectingFileSystem::FaultFile final : public File {
 public:
  FaultFile(FaultInjectingFileSystem* fs, std::unique_ptr<File> base) : fs_(fs), base_(std::move(base)) {}

  Status Read(uint64_t offset, size_t n, char* buf, size_t* bytes_read) const override {
    return base_->Read(offset, n, buf, bytes_read);
  }

  Status ReadNoWait(uint64_t offset, size_t n, char* buf, size_t* bytes_read) const override {
    if (fs_->NoWaitReadBlocks()) return Status::WouldBlock("injected: " + path() + " is not cached");
    return base_->ReadNoWait(offset, n, buf, bytes_read);
  }

  Status Write(uint64_t offset, const IoSlice* slices, int count) override {
    size_t partial = 0;
    if (!fs_->ShouldFailWrite(&partial)) return base_->Write(offset, slices, count);
    // A torn write: the leading bytes reach the file, then the device fails.
    std::vector<IoSlice> head;
    for (int i = 0; i < count && partial > 0; i++) {
      size_t n = std::min(partial, slices[i].size);
      head.push_back(IoSlice{slices[i].data, n});
      partial -= n;
    }
    if (!head.empty()) {
      Status s = base_->Write(offset, head.data(), static_cast<int>(head.size()));
      if (!s.ok()) return s;
    }
    return Status::IOError("injected write fault in " + path(), EIO);
  }

  Status Sync() override {
    std::chrono::microseconds delay{0};
    bool fail = fs_->ShouldFailSync(&delay);
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    if (fail) return Status::IOError("injected fdatasync fault in " + path(), EIO);
    return base_->Sync();
  }

  Status Truncate(uint64_t size) override {
    if (fs_->ShouldFailTruncate()) return Status::IOError("injected truncate fault in " + path(), EIO);
    return base_->Truncate(size);
  }

  Status Size(uint64_t* size) const override { return base_->Size(size); }
  Status Removed(bool* removed) const override { return base_->Removed(removed); }
  const std::string& path() const override { return base_->path(); }

 private:
  FaultInjectingFileSystem* const fs_;
  const std::unique_ptr<File> base_;
};

FaultInjectingFileSystem::FaultInjectingFileSystem() : base_(FileSystem::Default()) {}

void FaultInjectingFileSystem::FailWritesFrom(uint64_t n, size_t partial_bytes) {
  std::lock_guard<std::mutex> l(mu_);
  fail_writes_at_ = writes_ + std::max<uint64_t>(n, 1);
  partial_bytes_ = partial_bytes;
}

void FaultInjectingFileSystem::FailSyncs(bool fail) {
  std::lock_guard<std::mutex> l(mu_);
  fail_syncs_ = fail;
}

void FaultInjectingFileSystem::FailTruncates(bool fail) {
  std::lock_guard<std::mutex> l(mu_);
  fail_truncates_ = fail;
}

void FaultInjectingFileSystem::FailRenames(bool fail) {
  std::lock_guard<std::mutex> l(mu_);
  fail_renames_ = fail;
}

void FaultInjectingFileSystem::FailCreates(bool fail) {
  std::lock_guard<std::mutex> l(mu_);
  fail_creates_ = fail;
}

void FaultInjectingFileSystem::UncacheReads(bool uncached) {
  std::lock_guard<std::mutex> l(mu_);
  uncached_ = uncached;
}

void FaultInjectingFileSystem::SetSyncDelay(std::chrono::microseconds delay) {
  std::lock_guard<std::mutex> l(mu_);
  sync_delay_ = delay;
}

void FaultInjectingFileSystem::ClearFaults() {
  std::lock_guard<std::mutex> l(mu_);
  fail_writes_at_ = 0;
  partial_bytes_ = 0;
  fail_syncs_ = fail_truncates_ = fail_renames_ = fail_creates_ = uncached_ = false;
  sync_delay_ = std::chrono::microseconds(0);
}

uint64_t FaultInjectingFileSystem::writes() const {
  std::lock_guard<std::mutex> l(mu_);
  return writes_;
}

uint64_t FaultInjectingFileSystem::syncs() const {
  std::lock_guard<std::mutex> l(mu_);
  return syncs_;
}

uint64_t FaultInjectingFileSystem::dir_syncs() const {
  std::lock_guard<std::mutex> l(mu_);
  return dir_syncs_;
}

uint64_t FaultInjectingFileSystem::no_wait_reads() const {
  std::lock_guard<std::mutex> l(mu_);
  return no_wait_reads_;
}

void FaultInjectingFileSystem::ResetCounters() {
  std::lock_guard<std::mutex> l(mu_);
  // An armed write fault keeps pointing at the same future write.
  if (fail_writes_at_ != 0) fail_writes_at_ = fail_writes_at_ > writes_ ? fail_writes_at_ - writes_ : 1;
  writes_ = syncs_ = dir_syncs_ = no_wait_reads_ = 0;
}

bool FaultInjectingFileSystem::ShouldFailWrite(size_t* partial) {
  std::lock_guard<std::mutex> l(mu_);
  const uint64_t call = ++writes_;
  if (fail_writes_at_ == 0 || call < fail_writes_at_) return false;
  *partial = partial_bytes_;
  return true;
}

bool FaultInjectingFileSystem::ShouldFailSync(std::chrono::microseconds* delay) {
  std::lock_guard<std::mutex> l(mu_);
  syncs_++;
  *delay = sync_delay_;
  return fail_syncs_;
}

bool FaultInjectingFileSystem::NoWaitReadBlocks() {
  std::lock_guard<std::mutex> l(mu_);
  no_wait_reads_++;
  return uncached_;
}

bool FaultInjectingFileSystem::ShouldFailTruncate() {
  std::lock_guard<std::mutex> l(mu_);
  return fail_truncates_;
}

Status FaultInjectingFileSystem::OpenFile(const std::string& path, bool create_new,
                                          std::unique_ptr<File>* file) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (create_new && fail_creates_) return Status::IOError("injected fault creating " + path, ENOSPC);
  }
  std::unique_ptr<File> base;
  Status s = base_->OpenFile(path, create_new, &base);
  if (!s.ok()) return s;
  file->reset(new FaultFile(this, std::move(base)));
  return Status::OK();
}

Status FaultInjectingFileSystem::ListDir(const std::string& dir, std::vector<std::string>* names) {
  return base_->ListDir(dir, names);
}

Status FaultInjectingFileSystem::Rename(const std::string& from, const std::string& to) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (fail_renames_) return Status::IOError("injected fault renaming " + from, EIO);
  }
  return base_->Rename(from, to);
}

Status FaultInjectingFileSystem::Remove(const std::string& path) { return base_->Remove(path); }

Status FaultInjectingFileSystem::SyncDir(const std::string& dir) {
  {
    std::lock_guard<std::mutex> l(mu_);
    dir_syncs_++;
  }
  return base_->SyncDir(dir);
}

Status FaultInjectingFileSystem::CreateDir(const std::string& dir) { return base_->CreateDir(dir); }

Status FaultInjectingFileSystem::LockDir(const std::string& dir, std::unique_ptr<DirLock>* lock) {
  return base_->LockDir(dir, lock);
}

}  // namespace test
}  // namespace oyster
