// FaultInjectingFileSystem is the FileSystem the fault tests hand to the
// engine: it passes every call on to FileSystem::Default() unless told to
// fail it, and counts calls. A fault stays armed until it is cleared. It can
// also keep track of what is durable on the disk and simulate a power loss
// that forgets everything else.
// Thread-safe: the engine calls it from its pool threads.

#ifndef OYSTER_TEST_FAULT_FILE_SYSTEM_H_
#define OYSTER_TEST_FAULT_FILE_SYSTEM_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
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
  void FailSyncs(bool fail);      // File::Sync and File::WriteBack -> EIO
  void FailReads(bool fail);      // File::Read, ReadV and SendTo -> EIO
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
  uint64_t read_bytes() const;     // bytes asked of File::Read and ReadV
  // The page-cache hints files were given (File::DropCache,
  // File::StartWriteback) and their File::WriteBack calls, failed ones
  // included, each passed on to the real file; those of one kind, in order.
  // Neither makes anything durable here either.
  struct CacheHint {
    enum Kind { kDrop, kWriteback, kWrittenBack } kind;
    std::string path;
    uint64_t offset;
    uint64_t n;
  };
  std::vector<CacheHint> cache_hints(CacheHint::Kind kind) const;
  void ResetCounters();

  // ---- Power loss.
  //
  // While tracking, the file system knows what a power loss would leave on
  // the disk: of every file, its contents at its last successful File::Sync
  // (through any handle of it); of every directory, its entries at its last
  // SyncDir. A file or directory entry first met while tracking (opened,
  // renamed or removed) counts as durable as it is then; a file created
  // while tracking starts out empty and durable only once its directory is
  // synced. Contents follow a file across renames and re-opens of its path.
  // Of directories only the creation is tracked: renaming or removing one
  // while tracking is not modelled (the engine does neither). Syncs of
  // tracked files and directories are recorded, not passed on: durability
  // is what this file system says, and tests need not wait for the disk.

  // Starts tracking (everything on disk now counts as durable), or stops it
  // and forgets what was tracked. Busy while a file opened through this file
  // system is still open: such handles would escape the tracking.
  Status TrackUnsyncedData(bool track);
  // The power fails now: from here on every call that would change the disk
  // (File::Write, Sync and Truncate; creating, renaming and removing files
  // and directories; SyncDir) fails with EIO, so nothing more becomes
  // durable; reads go on. A sync that returned OK counts as durable; one that
  // was still running at the cut fails. Lets a test stop a running engine at
  // an exact point, as a power loss would. The power stays off until
  // DropUnsyncedData (ClearFaults leaves it off).
  void CutPower();
  // Leaves the disk as a power loss now would, then turns the power back on
  // (tracking goes on with everything on disk durable):
  //  - every file is cut back to its size at its last sync; bytes below that
  //    size overwritten or truncated away since then get their synced
  //    contents back;
  //  - every directory entry created, renamed or removed since its
  //    directory's last SyncDir is undone: a created file or directory
  //    disappears (a directory with everything in it), a removed file comes
  //    back, a renamed file goes back to its old name (and a file it
  //    replaced comes back), each with its synced contents. A file renamed
  //    to another directory, where that directory was synced but not the one
  //    it came from, is found under both names.
  // Requires tracking (InvalidArgument otherwise) and that no file opened
  // through this file system is still open, as after the engine was dropped
  // (Busy otherwise).
  Status DropUnsyncedData();
  // The power fails (as CutPower) right after the n-th change from now on
  // (1 = the next) has succeeded: a File::Write, Sync or Truncate, or the
  // creation, renaming or removal of a file or directory, or a SyncDir.
  // Lets a test stop the engine after each step it takes, in turn. 0 disarms.
  void CutPowerAfter(uint64_t n);
  // Turns the power back on keeping everything the files hold, as a process
  // that was killed leaves them (the page cache survives): what is on disk
  // now counts as durable. Requires tracking and no open file, as
  // DropUnsyncedData does.
  Status RestorePower();
  // Changes that succeeded since construction or ResetCounters().
  uint64_t changes() const;

  Status OpenFile(const std::string& path, bool create_new, std::unique_ptr<File>* file) override;
  Status ListDir(const std::string& dir, std::vector<std::string>* names) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Remove(const std::string& path) override;
  Status SyncDir(const std::string& dir) override;
  Status CreateDir(const std::string& dir) override;
  Status LockDir(const std::string& dir, std::unique_ptr<DirLock>* lock) override;

 private:
  class FaultFile;
  Status OpenFileNow(const std::string& path, bool create_new, std::unique_ptr<File>* file);
  Status RenameNow(const std::string& from, const std::string& to);
  Status RemoveNow(const std::string& path);
  Status SyncDirNow(const std::string& dir);
  Status CreateDirNow(const std::string& dir);
  struct FileState;
  // What a name in a directory refers to on the disk: nothing, a file or a
  // directory.
  struct Entry {
    std::shared_ptr<FileState> file;
    bool dir = false;
  };

  // Counts a write; true if it must fail, with *partial the bytes to write first.
  bool ShouldFailWrite(size_t* partial);
  bool ShouldFailSync(std::chrono::microseconds* delay);
  bool ShouldFailWriteBack();
  bool ShouldFailRead();
  // Counts a File::Read or ReadV of n bytes; whether it fails.
  bool ShouldFailReadOf(uint64_t n);
  bool ShouldFailTruncate();
  // Counts a ReadNoWait; true if it must answer WouldBlock.
  bool NoWaitReadBlocks();
  void NoteCacheHint(CacheHint hint);

  // ---- Power loss; the *Locked functions need track_mu_.
  Status PowerCutError(const std::string& what) const;
  bool PowerIsCut() const;
  // Before bytes [begin, end) of the file `file` is open on are overwritten
  // or truncated away: EIO once the power is cut; otherwise saves those of
  // them that are synced (state may be null: not tracked).
  Status BeforeChange(FileState* state, const File& file, uint64_t begin, uint64_t end, const char* what);
  // After a successful sync of `state`'s file through `file`.
  Status AfterSync(FileState* state, const File& file);
  // The tracked state of the file at `path`, made up (as durable as it is)
  // for a file met for the first time; null if there is no such file.
  std::shared_ptr<FileState> StateOfLocked(const std::string& path);
  // Before the entry of `path` in its directory changes: remembers what it
  // was at the directory's last sync, unless already remembered.
  void NoteEntryChangeLocked(const std::string& path);
  // `state`'s file lost its name (it was removed, or replaced by a rename);
  // `contents` are its bytes just before, for a power loss that brings the
  // name back.
  void DetachLocked(FileState* state, std::string contents);
  // What a power loss would leave of `state`'s file.
  Status DurableContentsLocked(const FileState& state, std::string* contents);
  void FileClosed();

  FileSystem* const base_;
  mutable std::mutex mu_;
  uint64_t writes_ = 0;
  uint64_t syncs_ = 0;
  uint64_t dir_syncs_ = 0;
  uint64_t no_wait_reads_ = 0;
  uint64_t read_bytes_ = 0;
  std::vector<CacheHint> cache_hints_;
  bool uncached_ = false;
  uint64_t fail_writes_at_ = 0;  // 0: writes do not fail
  size_t partial_bytes_ = 0;
  bool fail_syncs_ = false;
  bool fail_reads_ = false;
  bool fail_truncates_ = false;
  bool fail_renames_ = false;
  bool fail_creates_ = false;
  std::chrono::microseconds sync_delay_{0};

  // Power loss; separate from mu_ because it is held across file system calls.
  mutable std::mutex track_mu_;
  bool tracking_ = false;
  bool power_cut_ = false;
  uint64_t cut_after_ = 0;  // changes left before the power fails; 0: none armed
  uint64_t changes_ = 0;
  // Passes s on; counts it as a change if it succeeded.
  Status Counted(Status s);
  std::atomic<int> open_files_{0};
  // Every tracked file that has a name, by normalized path.
  std::map<std::string, std::shared_ptr<FileState>> files_;
  // Per directory (normalized path), the names changed since its last
  // SyncDir, with what each referred to at that sync.
  std::map<std::string, std::map<std::string, Entry>> synced_entries_;
};

}  // namespace test
}  // namespace oyster

#endif  // OYSTER_TEST_FAULT_FILE_SYSTEM_H_
