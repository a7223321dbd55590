#include "test/fault_file_system.h"

#include <errno.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>
#include <utility>

namespace oyster {
namespace test {

namespace stdfs = std::filesystem;

// A file as the disk knows it (an inode): what of it is durable.
struct FaultInjectingFileSystem::FileState {
  std::string path;          // normalized; empty once the file has no name
  uint64_t synced_size = 0;  // its size at its last sync
  // Synced bytes overwritten or truncated away since the last sync, each
  // range as it was just before: undone newest first, they give back the
  // synced contents.
  std::vector<std::pair<uint64_t, std::string>> undo;
  std::string orphan;  // once it has no name: its bytes (updated by syncs)
};

namespace {

// One spelling per path, so that a directory synced as "d/" is the parent
// of "d/f".
std::string Normalize(const std::string& path) {
  std::string p = stdfs::path(path).lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// A normalized path's directory and name in it.
std::pair<std::string, std::string> SplitPath(const std::string& path) {
  const size_t slash = path.rfind('/');
  return {ParentDir(path), slash == std::string::npos ? path : path.substr(slash + 1)};
}

Status ReadAll(const File& file, std::string* out) {
  uint64_t size = 0;
  Status s = file.Size(&size);
  if (!s.ok()) return s;
  out->assign(size, '\0');
  size_t n = 0;
  s = file.Read(0, out->size(), out->empty() ? nullptr : &(*out)[0], &n);
  out->resize(n);
  return s;
}

Status ReadFileAt(FileSystem* fs, const std::string& path, std::string* out) {
  std::unique_ptr<File> file;
  Status s = fs->OpenFile(path, false, &file);
  return s.ok() ? ReadAll(*file, out) : s;
}

Status WriteNewFile(FileSystem* fs, const std::string& path, const std::string& data) {
  std::unique_ptr<File> file;
  Status s = fs->OpenFile(path, true, &file);
  IoSlice slice{data.data(), data.size()};
  if (s.ok() && !data.empty()) s = file->Write(0, &slice, 1);
  return s;
}

Status FromErrorCode(const std::string& context, const std::error_code& ec) {
  return Status::IOError(context + ": " + ec.message(), ec.value());
}

}  // namespace

// Forwards to the real file; consults the file system before writes, syncs
// and truncations, and tells it about syncs (state_ is null when the file
// system does not track unsynced data).
class FaultInjectingFileSystem::FaultFile final : public File {
 public:
  FaultFile(FaultInjectingFileSystem* fs, std::unique_ptr<File> base, std::shared_ptr<FileState> state)
      : fs_(fs), base_(std::move(base)), state_(std::move(state)) {}
  ~FaultFile() override { fs_->FileClosed(); }

  Status Read(uint64_t offset, size_t n, char* buf, size_t* bytes_read) const override {
    if (fs_->ShouldFailReadOf(n)) return Status::IOError("injected read fault in " + path(), EIO);
    return base_->Read(offset, n, buf, bytes_read);
  }

  Status ReadV(uint64_t offset, const IoBuffer* buffers, int count, size_t* bytes_read) const override {
    uint64_t n = 0;
    for (int i = 0; i < count; i++) n += buffers[i].size;
    if (fs_->ShouldFailReadOf(n)) return Status::IOError("injected read fault in " + path(), EIO);
    return base_->ReadV(offset, buffers, count, bytes_read);
  }

  Status ReadNoWait(uint64_t offset, size_t n, char* buf, size_t* bytes_read) const override {
    if (fs_->NoWaitReadBlocks()) return Status::WouldBlock("injected: " + path() + " is not cached");
    return base_->ReadNoWait(offset, n, buf, bytes_read);
  }

  Status SendTo(uint64_t offset, size_t n, int out_fd, size_t* sent) const override {
    *sent = 0;
    if (fs_->ShouldFailRead()) return Status::IOError("injected read fault in " + path(), EIO);
    return base_->SendTo(offset, n, out_fd, sent);
  }

  Status Write(uint64_t offset, const IoSlice* slices, int count) override {
    return fs_->Counted(WriteNow(offset, slices, count));
  }
  Status Sync() override { return fs_->Counted(SyncNow()); }
  void StartWriteback(uint64_t offset, uint64_t n) const override {
    fs_->NoteCacheHint(CacheHint{CacheHint::kWriteback, path(), offset, n});
    base_->StartWriteback(offset, n);
  }
  Status WriteBack(uint64_t offset, uint64_t n) override {
    fs_->NoteCacheHint(CacheHint{CacheHint::kWrittenBack, path(), offset, n});
    if (fs_->ShouldFailWriteBack()) return Status::IOError("injected writeback fault in " + path(), EIO);
    if (fs_->PowerIsCut()) return fs_->PowerCutError("sync_file_range " + path());
    // Makes nothing durable: what a power loss leaves is unchanged.
    return state_ == nullptr ? base_->WriteBack(offset, n) : Status::OK();
  }
  void DropCache(uint64_t offset, uint64_t n) const override {
    fs_->NoteCacheHint(CacheHint{CacheHint::kDrop, path(), offset, n});
    base_->DropCache(offset, n);
  }
  Status Truncate(uint64_t size) override { return fs_->Counted(TruncateNow(size)); }
  Status Size(uint64_t* size) const override { return base_->Size(size); }
  Status Removed(bool* removed) const override { return base_->Removed(removed); }
  const std::string& path() const override { return base_->path(); }

 private:
  Status WriteNow(uint64_t offset, const IoSlice* slices, int count) {
    size_t partial = 0;
    const bool fail = fs_->ShouldFailWrite(&partial);
    uint64_t total = 0;
    for (int i = 0; i < count; i++) total += slices[i].size;
    // A torn write changes only the bytes it writes.
    const uint64_t end = offset + (fail ? std::min<uint64_t>(partial, total) : total);
    Status s = fs_->BeforeChange(state_.get(), *base_, offset, end, "write");
    if (!s.ok()) return s;
    if (!fail) return base_->Write(offset, slices, count);
    // A torn write: the leading bytes reach the file, then the device fails.
    std::vector<IoSlice> head;
    for (int i = 0; i < count && partial > 0; i++) {
      size_t n = std::min(partial, slices[i].size);
      head.push_back(IoSlice{slices[i].data, n});
      partial -= n;
    }
    if (!head.empty()) {
      s = base_->Write(offset, head.data(), static_cast<int>(head.size()));
      if (!s.ok()) return s;
    }
    return Status::IOError("injected write fault in " + path(), EIO);
  }

  Status SyncNow() {
    std::chrono::microseconds delay{0};
    bool fail = fs_->ShouldFailSync(&delay);
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    if (fail) return Status::IOError("injected fdatasync fault in " + path(), EIO);
    if (fs_->PowerIsCut()) return fs_->PowerCutError("fdatasync " + path());
    if (state_ == nullptr) {
      Status s = base_->Sync();
      if (!s.ok()) return s;
    }
    return fs_->AfterSync(state_.get(), *base_);
  }

  Status TruncateNow(uint64_t size) {
    if (fs_->ShouldFailTruncate()) return Status::IOError("injected truncate fault in " + path(), EIO);
    Status s = fs_->BeforeChange(state_.get(), *base_, size, UINT64_MAX, "truncate");
    if (!s.ok()) return s;
    return base_->Truncate(size);
  }

  FaultInjectingFileSystem* const fs_;
  const std::unique_ptr<File> base_;
  const std::shared_ptr<FileState> state_;
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

void FaultInjectingFileSystem::FailReads(bool fail) {
  std::lock_guard<std::mutex> l(mu_);
  fail_reads_ = fail;
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
  fail_syncs_ = fail_reads_ = fail_truncates_ = fail_renames_ = fail_creates_ = uncached_ = false;
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

uint64_t FaultInjectingFileSystem::read_bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return read_bytes_;
}

uint64_t FaultInjectingFileSystem::no_wait_reads() const {
  std::lock_guard<std::mutex> l(mu_);
  return no_wait_reads_;
}

std::vector<FaultInjectingFileSystem::CacheHint> FaultInjectingFileSystem::cache_hints(CacheHint::Kind kind) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<CacheHint> out;
  for (const CacheHint& h : cache_hints_) {
    if (h.kind == kind) out.push_back(h);
  }
  return out;
}

void FaultInjectingFileSystem::NoteCacheHint(CacheHint hint) {
  std::lock_guard<std::mutex> l(mu_);
  cache_hints_.push_back(std::move(hint));
}

void FaultInjectingFileSystem::ResetCounters() {
  std::lock_guard<std::mutex> l(mu_);
  // An armed write fault keeps pointing at the same future write.
  if (fail_writes_at_ != 0) fail_writes_at_ = fail_writes_at_ > writes_ ? fail_writes_at_ - writes_ : 1;
  writes_ = syncs_ = dir_syncs_ = no_wait_reads_ = read_bytes_ = 0;
  cache_hints_.clear();
  std::lock_guard<std::mutex> t(track_mu_);
  changes_ = 0;
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

bool FaultInjectingFileSystem::ShouldFailWriteBack() {
  std::lock_guard<std::mutex> l(mu_);
  return fail_syncs_;
}

bool FaultInjectingFileSystem::NoWaitReadBlocks() {
  std::lock_guard<std::mutex> l(mu_);
  no_wait_reads_++;
  return uncached_;
}

bool FaultInjectingFileSystem::ShouldFailReadOf(uint64_t n) {
  std::lock_guard<std::mutex> l(mu_);
  read_bytes_ += n;
  return fail_reads_;
}

bool FaultInjectingFileSystem::ShouldFailRead() {
  std::lock_guard<std::mutex> l(mu_);
  return fail_reads_;
}

bool FaultInjectingFileSystem::ShouldFailTruncate() {
  std::lock_guard<std::mutex> l(mu_);
  return fail_truncates_;
}

// ---------------------------------------------------------------- power loss

Status FaultInjectingFileSystem::TrackUnsyncedData(bool track) {
  std::lock_guard<std::mutex> l(track_mu_);
  if (open_files_.load() > 0) return Status::Busy("files opened through the file system are still open");
  tracking_ = track;
  files_.clear();
  synced_entries_.clear();
  return Status::OK();
}

void FaultInjectingFileSystem::CutPowerAfter(uint64_t n) {
  std::lock_guard<std::mutex> l(track_mu_);
  cut_after_ = n;
}

uint64_t FaultInjectingFileSystem::changes() const {
  std::lock_guard<std::mutex> l(track_mu_);
  return changes_;
}

Status FaultInjectingFileSystem::Counted(Status s) {
  if (!s.ok()) return s;
  std::lock_guard<std::mutex> l(track_mu_);
  changes_++;
  if (cut_after_ != 0 && --cut_after_ == 0) power_cut_ = true;
  return s;
}

Status FaultInjectingFileSystem::RestorePower() {
  std::lock_guard<std::mutex> l(track_mu_);
  if (!tracking_) return Status::InvalidArgument("the file system does not track unsynced data");
  if (open_files_.load() > 0) return Status::Busy("files opened through the file system are still open");
  files_.clear();
  synced_entries_.clear();
  power_cut_ = false;
  cut_after_ = 0;
  return Status::OK();
}

void FaultInjectingFileSystem::CutPower() {
  std::lock_guard<std::mutex> l(track_mu_);
  power_cut_ = true;
}

Status FaultInjectingFileSystem::PowerCutError(const std::string& what) const {
  return Status::IOError("power cut: " + what, EIO);
}

bool FaultInjectingFileSystem::PowerIsCut() const {
  std::lock_guard<std::mutex> l(track_mu_);
  return power_cut_;
}

void FaultInjectingFileSystem::FileClosed() { open_files_.fetch_sub(1); }

Status FaultInjectingFileSystem::BeforeChange(FileState* state, const File& file, uint64_t begin, uint64_t end,
                                              const char* what) {
  std::lock_guard<std::mutex> l(track_mu_);
  if (power_cut_) return PowerCutError(std::string(what) + " " + file.path());
  if (state == nullptr || begin >= state->synced_size) return Status::OK();
  end = std::min(end, state->synced_size);
  if (begin >= end) return Status::OK();
  std::string saved(end - begin, '\0');
  size_t n = 0;
  Status s = file.Read(begin, saved.size(), &saved[0], &n);
  if (!s.ok()) return s;
  // Synced bytes already truncated away were saved by that truncation.
  saved.resize(n);
  if (!saved.empty()) state->undo.emplace_back(begin, std::move(saved));
  return Status::OK();
}

Status FaultInjectingFileSystem::AfterSync(FileState* state, const File& file) {
  std::lock_guard<std::mutex> l(track_mu_);
  // The power went while the sync ran: it may not have reached the disk.
  if (power_cut_) return PowerCutError("fdatasync " + file.path());
  if (state == nullptr) return Status::OK();
  uint64_t size = 0;
  Status s = file.Size(&size);
  if (!s.ok()) return s;
  state->synced_size = size;
  state->undo.clear();
  if (state->path.empty()) return ReadAll(file, &state->orphan);
  return Status::OK();
}

std::shared_ptr<FaultInjectingFileSystem::FileState> FaultInjectingFileSystem::StateOfLocked(
    const std::string& path) {
  const std::string p = Normalize(path);
  auto it = files_.find(p);
  if (it != files_.end()) return it->second;
  std::error_code ec;
  if (!stdfs::is_regular_file(p, ec)) return nullptr;
  const uint64_t size = stdfs::file_size(p, ec);
  if (ec) return nullptr;
  auto state = std::make_shared<FileState>();
  state->path = p;
  state->synced_size = size;
  files_[p] = state;
  return state;
}

void FaultInjectingFileSystem::NoteEntryChangeLocked(const std::string& path) {
  const std::string p = Normalize(path);
  auto [dir, name] = SplitPath(p);
  std::map<std::string, Entry>& entries = synced_entries_[dir];
  if (entries.count(name) != 0) return;  // changed before: the synced entry is known
  Entry e;
  std::error_code ec;
  if (stdfs::is_directory(p, ec)) {
    e.dir = true;
  } else {
    e.file = StateOfLocked(p);
  }
  entries.emplace(name, std::move(e));
}

void FaultInjectingFileSystem::DetachLocked(FileState* state, std::string contents) {
  files_.erase(state->path);
  state->path.clear();
  state->orphan = std::move(contents);
}

Status FaultInjectingFileSystem::DurableContentsLocked(const FileState& state, std::string* contents) {
  if (state.path.empty()) {
    *contents = state.orphan;
  } else {
    Status s = ReadFileAt(base_, state.path, contents);
    if (!s.ok()) return s;
  }
  for (auto it = state.undo.rbegin(); it != state.undo.rend(); ++it) {
    const auto& [offset, bytes] = *it;
    if (contents->size() < offset + bytes.size()) contents->resize(offset + bytes.size());
    std::memcpy(&(*contents)[offset], bytes.data(), bytes.size());
  }
  contents->resize(state.synced_size);
  return Status::OK();
}

Status FaultInjectingFileSystem::DropUnsyncedData() {
  std::lock_guard<std::mutex> l(track_mu_);
  if (!tracking_) return Status::InvalidArgument("the file system does not track unsynced data");
  if (open_files_.load() > 0) return Status::Busy("files opened through the file system are still open");

  // The files that names go back to, read before any name changes.
  std::map<const FileState*, std::string> contents;
  for (const auto& [dir, entries] : synced_entries_) {
    for (const auto& [name, e] : entries) {
      if (!e.file || contents.count(e.file.get()) != 0) continue;
      Status s = DurableContentsLocked(*e.file, &contents[e.file.get()]);
      if (!s.ok()) return s;
    }
  }
  // Directories whose creation is undone go first, with everything in them.
  std::error_code ec;
  for (const auto& [dir, entries] : synced_entries_) {
    for (const auto& [name, e] : entries) {
      const std::string p = JoinPath(dir, name);
      if (e.file || e.dir || !stdfs::is_directory(p, ec)) continue;
      stdfs::remove_all(p, ec);
      if (ec) return FromErrorCode("remove " + p, ec);
    }
  }
  // Then every changed name gets back what it had at its directory's last sync.
  std::set<std::string> restored;
  for (const auto& [dir, entries] : synced_entries_) {
    if (!stdfs::is_directory(dir, ec)) continue;  // its creation was undone
    for (const auto& [name, e] : entries) {
      if (e.dir) continue;  // directories are not renamed or removed
      const std::string p = Normalize(JoinPath(dir, name));
      restored.insert(p);
      if (stdfs::is_regular_file(p, ec)) {
        Status s = base_->Remove(p);
        if (!s.ok()) return s;
      }
      if (e.file) {
        Status s = WriteNewFile(base_, p, contents[e.file.get()]);
        if (!s.ok()) return s;
      }
    }
  }
  // Every other file loses what was not synced, in place.
  for (const auto& [path, state] : files_) {
    if (restored.count(path) != 0 || !stdfs::is_regular_file(path, ec)) continue;
    std::unique_ptr<File> file;
    Status s = base_->OpenFile(path, false, &file);
    if (s.ok()) s = file->Truncate(state->synced_size);
    for (auto it = state->undo.rbegin(); s.ok() && it != state->undo.rend(); ++it) {
      IoSlice slice{it->second.data(), it->second.size()};
      s = file->Write(it->first, &slice, 1);
    }
    if (!s.ok()) return s;
  }
  files_.clear();
  synced_entries_.clear();
  power_cut_ = false;
  cut_after_ = 0;
  return Status::OK();
}

// ---------------------------------------------------------------- FileSystem

Status FaultInjectingFileSystem::OpenFile(const std::string& path, bool create_new,
                                          std::unique_ptr<File>* file) {
  Status s = OpenFileNow(path, create_new, file);
  return create_new ? Counted(s) : s;
}

Status FaultInjectingFileSystem::OpenFileNow(const std::string& path, bool create_new,
                                          std::unique_ptr<File>* file) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (create_new && fail_creates_) return Status::IOError("injected fault creating " + path, ENOSPC);
  }
  std::lock_guard<std::mutex> l(track_mu_);
  if (create_new && power_cut_) return PowerCutError("create " + path);
  std::unique_ptr<File> base;
  Status s = base_->OpenFile(path, create_new, &base);
  if (!s.ok()) return s;
  std::shared_ptr<FileState> state;
  if (tracking_ && create_new) {
    // O_EXCL succeeded: at the directory's last sync the name was free, or
    // it changed since then and that was noted.
    const std::string p = Normalize(path);
    auto [dir, name] = SplitPath(p);
    synced_entries_[dir].emplace(name, Entry());
    state = std::make_shared<FileState>();
    state->path = p;
    files_[p] = state;
  } else if (tracking_) {
    state = StateOfLocked(path);
  }
  open_files_.fetch_add(1);
  file->reset(new FaultFile(this, std::move(base), std::move(state)));
  return Status::OK();
}

Status FaultInjectingFileSystem::ListDir(const std::string& dir, std::vector<std::string>* names) {
  return base_->ListDir(dir, names);
}

Status FaultInjectingFileSystem::Rename(const std::string& from, const std::string& to) { return Counted(RenameNow(from, to)); }

Status FaultInjectingFileSystem::RenameNow(const std::string& from, const std::string& to) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (fail_renames_) return Status::IOError("injected fault renaming " + from, EIO);
  }
  std::lock_guard<std::mutex> l(track_mu_);
  if (power_cut_) return PowerCutError("rename " + from);
  if (!tracking_) return base_->Rename(from, to);
  NoteEntryChangeLocked(from);
  NoteEntryChangeLocked(to);
  std::shared_ptr<FileState> moving = StateOfLocked(from);
  std::shared_ptr<FileState> replaced = StateOfLocked(to);
  if (replaced == moving) replaced.reset();
  std::string replaced_contents;
  if (replaced) {
    Status s = ReadFileAt(base_, replaced->path, &replaced_contents);
    if (!s.ok()) return s;
  }
  Status s = base_->Rename(from, to);
  if (!s.ok()) return s;
  if (replaced) DetachLocked(replaced.get(), std::move(replaced_contents));
  if (moving) {
    files_.erase(moving->path);
    moving->path = Normalize(to);
    files_[moving->path] = moving;
  }
  return Status::OK();
}

Status FaultInjectingFileSystem::Remove(const std::string& path) { return Counted(RemoveNow(path)); }

Status FaultInjectingFileSystem::RemoveNow(const std::string& path) {
  std::lock_guard<std::mutex> l(track_mu_);
  if (power_cut_) return PowerCutError("remove " + path);
  if (!tracking_) return base_->Remove(path);
  NoteEntryChangeLocked(path);
  std::shared_ptr<FileState> state = StateOfLocked(path);
  std::string contents;
  if (state) {
    Status s = ReadFileAt(base_, state->path, &contents);
    if (!s.ok()) return s;
  }
  Status s = base_->Remove(path);
  if (!s.ok()) return s;
  if (state) DetachLocked(state.get(), std::move(contents));
  return Status::OK();
}

Status FaultInjectingFileSystem::SyncDir(const std::string& dir) { return Counted(SyncDirNow(dir)); }

Status FaultInjectingFileSystem::SyncDirNow(const std::string& dir) {
  {
    std::lock_guard<std::mutex> l(mu_);
    dir_syncs_++;
  }
  std::lock_guard<std::mutex> l(track_mu_);
  if (power_cut_) return PowerCutError("fsync directory " + dir);
  if (!tracking_) return base_->SyncDir(dir);
  std::error_code ec;
  if (!stdfs::is_directory(dir, ec)) return Status::IOError("open directory " + dir, ENOENT);
  synced_entries_.erase(Normalize(dir));
  return Status::OK();
}

Status FaultInjectingFileSystem::CreateDir(const std::string& dir) { return Counted(CreateDirNow(dir)); }

Status FaultInjectingFileSystem::CreateDirNow(const std::string& dir) {
  std::lock_guard<std::mutex> l(track_mu_);
  if (power_cut_) return PowerCutError("create directory " + dir);
  std::error_code ec;
  if (tracking_ && !stdfs::exists(dir, ec)) NoteEntryChangeLocked(dir);
  return base_->CreateDir(dir);
}

Status FaultInjectingFileSystem::LockDir(const std::string& dir, std::unique_ptr<DirLock>* lock) {
  return base_->LockDir(dir, lock);
}

}  // namespace test
}  // namespace oyster
