// FaultInjectingFileSystem is the FileSystem the fault tests hand to the
// engine: it passes every call on to FileSystem::Default() unless told to
// fail it, and counts calls. A fault stays armed until it is cleared.
// Thread-safe: the engine calls it from its pool threads.

#ifndef OYSTER_TEST_FAULT_FILE_SYSTEM_H_
#define OYSTER_TEST_FAULT_FILE_SYSTEM_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "util/file_system.h"
#include "util/status.h"

namespace oyster {
namespace test {

class FaultInjectingFileSystem final : public FileSystem {
 public:
  FaultInjectingFileSystem();

  // The n-th File::Write from now on (1 = the next one) and every later one
  // fail with EIO. A failing write first really writes the leading
  // `partial_bytes` of its data (a torn write), or nothing if 0.
  void FailWritesFrom(uint64_t n, size_t partial_bytes = 0);
  void FailSyncs(bool fail);      // File::Sync -> EIO
  void FailTruncates(bool fail);  // File::Truncate -> EIO
  void FailRenames(bool fail);    // Rename -> EIO
  void FailCreates(bool fail);    // OpenFile(create_new = true) -> ENOSPC
  // File::ReadNoWait answers WouldBlock, as when nothing is in the page cache.
  void UncacheReads(bool uncached);
  // Every File::Sync takes at least this long, as on a slow disk.
  void SetSyncDelay(std::chrono::microseconds delay);
  void ClearFaults();

  // Calls since construction or ResetCounters(), failed ones included.
  uint64_t writes() const;
  uint64_t syncs() const;
  uint64_t dir_syncs() const;
  uint64_t no_wait_reads() const;  // File::ReadNoWait calls
  void ResetCounters();

  Status OpenFile(const std::string& path, bool create_new, std::unique_ptr<File>* file) override;
  Status ListDir(const std::string& dir, std::vector<std::string>* names) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Remove(const std::string& path) override;
  Status SyncDir(const std::string& dir) override;
  Status CreateDir(const std::string& dir) override;
  Status LockDir(const std::string& dir, std::unique_ptr<DirLock>* lock) override;

 private:
  class FaultFile;

  // Counts a write; true if it must fail, with *partial the bytes to write first.
  bool ShouldFailWrite(size_t* partial);
  bool ShouldFailSync(std::chrono::microseconds* delay);
  bool ShouldFailTruncate();
  // Counts a ReadNoWait; true if it must answer WouldBlock.
  bool NoWaitReadBlocks();

  FileSystem* const base_;
  mutable std::mutex mu_;
  uint64_t writes_ = 0;
  uint64_t syncs_ = 0;
  uint64_t dir_syncs_ = 0;
  uint64_t no_wait_reads_ = 0;
  bool uncached_ = false;
  uint64_t fail_writes_at_ = 0;  // 0: writes do not fail
  size_t partial_bytes_ = 0;
  bool fail_syncs_ = false;
  bool fail_truncates_ = false;
  bool fail_renames_ = false;
  bool fail_creates_ = false;
  std::chrono::microseconds sync_delay_{0};
};

}  // namespace test
}  // namespace oyster

#endif  // OYSTER_TEST_FAULT_FILE_SYSTEM_H_
