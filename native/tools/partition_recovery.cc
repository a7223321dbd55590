#include "tools/partition_recovery.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "engine/engine.h"
#include "engine/format.h"
#include "engine/index_builder.h"
#include "engine/options.h"
#include "tools/blob_inspection.h"
#include "tools/partition_check.h"
#include "util/file_system.h"

namespace oyster {
namespace {

std::string Join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : "; ") + p;
  return s;
}

std::string Plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Why the tool cannot recover the blob; empty if it can.
std::string Unrecoverable(const BlobReport& r) {
  switch (r.header) {
    case HeaderState::kShort: return r.header_problem + "; the engine removes it at open";
    case HeaderState::kPearl:
    case HeaderState::kUnsupportedVersion:
    case HeaderState::kWrongKeySize: return r.header_problem;
    default: break;
  }
  if (r.key_size == 0) return "its header is unreadable and the partition's key size unknown: give --key-size";
  return "";
}

bool HeaderLost(const BlobReport& r) {
  return r.header == HeaderState::kCorrupt || r.header == HeaderState::kWrongId;
}

// What a scan found wrong with the records; empty if they are all intact.
std::string DataDamage(const BlobReport& r) {
  std::vector<std::string> parts;
  if (HeaderLost(r)) parts.push_back("header: " + r.header_problem);
  if (r.corrupt_records) parts.push_back(Plural(r.corrupt_records, "record fails its", "records fail their") + " checksum");
  if (r.skipped_regions) {
    parts.push_back(Plural(r.skipped_regions, "damaged region", "damaged regions") + " of " +
                    Plural(r.skipped_bytes, "byte", "bytes"));
  }
  if (r.tail_bytes) parts.push_back("torn tail of " + Plural(r.tail_bytes, "byte", "bytes"));
  return Join(parts);
}

// The same, told by a rewrite (which does not tell damage and tail apart).
std::string RewriteDamage(const BlobReport& r, const RewriteResult& w) {
  std::vector<std::string> parts;
  if (HeaderLost(r)) parts.push_back("header: " + r.header_problem);
  if (w.corrupt_dropped) parts.push_back(Plural(w.corrupt_dropped, "record fails its", "records fail their") + " checksum");
  uint64_t other = w.bytes_dropped - w.corrupt_bytes;
  if (other) parts.push_back(Plural(other, "byte", "bytes") + " of damaged regions or torn tail");
  return Join(parts);
}

Status WriteIndex(FileSystem* fs, const std::string& dir, const std::string& prefix, uint64_t id,
                  uint64_t blob_size, uint64_t records, uint64_t max_stamp, const ActiveIndex& index) {
  IndexBuildParams p;
  p.dir = dir;
  p.prefix = prefix;
  p.blob_id = id;
  p.blob_size = blob_size;
  p.records_total = records;
  p.max_stamp = max_stamp;
  p.bloom_bits_per_key = EngineOptions().bloom_bits_per_key;
  std::unique_ptr<IndexReader> reader;
  return BuildIndexFile(fs, p, index, &reader);
}

// Files made in a partition take the directory's owner: an operator
// recovering as root must not leave files the node's user cannot open.
// Best effort: without the privilege, the files stay the caller's.
void MatchOwner(const std::string& dir, const std::string& path) {
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) (void)::chown(path.c_str(), st.st_uid, st.st_gid);
}

// Keeps the original blob under corrupted/ with the engine's quarantine
// naming, as a hard link: the blob stays in place until its replacement is
// renamed over it, so the partition is whole at every moment.
Status KeepOriginal(FileSystem* fs, const std::string& dir, const std::string& name, std::string* kept) {
  const std::string cdir = JoinPath(dir, kCorruptedDir);
  std::vector<std::string> present;
  Status s = fs->CreateDir(cdir);
  if (s.ok()) s = fs->ListDir(cdir, &present);
  if (!s.ok()) return s;
  MatchOwner(dir, cdir);
  std::string target = name;
  for (int k = 1; std::find(present.begin(), present.end(), target) != present.end(); k++) {
    target = name + "." + std::to_string(k);
  }
  const std::string to = JoinPath(cdir, target);
  if (::link(JoinPath(dir, name).c_str(), to.c_str()) != 0) {
    return Status::IOError("link " + JoinPath(dir, name) + " to " + to, errno);
  }
  *kept = std::string(kCorruptedDir) + "/" + target;
  return fs->SyncDir(cdir);
}

Status RecoverInPlace(FileSystem* fs, const LockedPartition& p, const BlobTarget& t, ToolProgress* progress,
                      BlobRecovery* b) {
  if (t.name != BlobFileName(t.prefix, t.id) || InQuarantine(p.dir)) {
    return Status::InvalidArgument(t.name + " is a kept copy, not a blob of a partition: recover it with --out");
  }
  InspectOptions io;
  io.key_size = p.key_size;
  BlobReport r;
  std::unique_ptr<ActiveIndex> scanned;
  Status s = InspectBlob(t.blob_path, t.index_path, t.id, io, progress, &r, &scanned);
  if (!s.ok()) return s;
  b->reason = Unrecoverable(r);
  if (!b->reason.empty()) {
    b->action = RecoveryAction::kSkipped;
    return Status::OK();
  }
  const std::string damage = DataDamage(r);
  if (!damage.empty()) {
    b->reason = r.version == kBlobFormatV1 ? Join({damage, "format 1, written as format 2"}) : damage;
    if (progress) progress->AddTotal(r.size);
    std::unique_ptr<File> src;
    s = OpenReadOnlyFile(t.blob_path, &src);
    if (!s.ok()) return s;
    const std::string tmp = t.blob_path + ".recovering";
    fs->Remove(tmp);  // left by an interrupted run, if any
    ActiveIndex index(r.key_size);
    s = RewriteBlob(fs, *src, r.version, r.size, r.key_size, tmp, t.id, progress, &index, &b->rewrite);
    if (s.ok()) MatchOwner(p.dir, tmp);
    // The old index must be gone before another blob appears under the name.
    if (s.ok() && !t.index_path.empty()) s = fs->Remove(t.index_path);
    if (s.ok()) s = KeepOriginal(fs, p.dir, t.name, &b->kept_as);
    if (s.ok() && b->rewrite.records == 0) {
      s = fs->Remove(t.blob_path);
      if (s.ok()) s = fs->Remove(tmp);
      b->action = RecoveryAction::kRemoved;
    } else if (s.ok()) {
      s = fs->Rename(tmp, t.blob_path);
      b->action = RecoveryAction::kRewritten;
    }
    if (s.ok()) s = fs->SyncDir(p.dir);
    if (s.ok() && b->rewrite.records > 0 && !t.active) {
      s = WriteIndex(fs, p.dir, t.prefix, t.id, b->rewrite.size, b->rewrite.records, b->rewrite.max_stamp, index);
      if (s.ok()) MatchOwner(p.dir, JoinPath(p.dir, IndexFileName(t.prefix, t.id)));
      b->index_written = s.ok();
    }
    return s;
  }
  if (t.active || r.index == IndexState::kOk) {
    b->action = RecoveryAction::kUnchanged;
    return Status::OK();
  }
  if (r.records == 0) {
    b->action = RecoveryAction::kUnchanged;
    b->reason = "holds no record; the engine removes it at open";
    return Status::OK();
  }
  b->reason = r.index == IndexState::kAbsent ? "no index file" : "index: " + r.index_problem;
  s = WriteIndex(fs, p.dir, t.prefix, t.id, r.size, r.records, r.max_stamp, *scanned);
  if (!s.ok()) return s;
  MatchOwner(p.dir, JoinPath(p.dir, IndexFileName(t.prefix, t.id)));
  b->action = RecoveryAction::kIndexRebuilt;
  b->index_written = true;
  return Status::OK();
}

Status RecoverInto(FileSystem* fs, const LockedPartition& p, const BlobTarget& t, const std::string& out_dir,
                   ToolProgress* progress, BlobRecovery* b) {
  InspectOptions io;
  io.key_size = p.key_size;
  io.scan = false;
  BlobReport r;
  Status s = InspectBlob(t.blob_path, t.index_path, t.id, io, progress, &r);
  if (!s.ok()) return s;
  b->reason = Unrecoverable(r);
  if (!b->reason.empty()) {
    b->action = RecoveryAction::kSkipped;
    return Status::OK();
  }
  if (progress) progress->AddTotal(r.size);
  std::unique_ptr<File> src;
  s = OpenReadOnlyFile(t.blob_path, &src);
  if (!s.ok()) return s;
  // A kept copy ("<name>.1") goes back under the blob's own name.
  const std::string dst = JoinPath(out_dir, BlobFileName(t.prefix, t.id));
  ActiveIndex index(r.key_size);
  s = RewriteBlob(fs, *src, r.version, r.size, r.key_size, dst, t.id, progress, &index, &b->rewrite);
  if (!s.ok()) return s;
  b->reason = RewriteDamage(r, b->rewrite);
  if (b->rewrite.records == 0) {
    if (b->reason.empty()) b->reason = "holds no record";
    b->action = RecoveryAction::kRemoved;
    return fs->Remove(dst);
  }
  b->action = b->reason.empty() ? RecoveryAction::kCopied : RecoveryAction::kRewritten;
  if (r.version == kBlobFormatV1) b->reason = Join({b->reason, "format 1, written as format 2"});
  if (t.active) return Status::OK();  // it stays the blob the engine appends to
  s = WriteIndex(fs, out_dir, t.prefix, t.id, b->rewrite.size, b->rewrite.records, b->rewrite.max_stamp, index);
  b->index_written = s.ok();
  return s;
}

}  // namespace

Status RecoverPartition(FileSystem* fs, const std::string& dir, const RecoverOptions& options,
                        ToolProgress* progress, PartitionRecovery* result) {
  LockedPartition p;
  Status s = OpenPartition(fs, dir, options.key_size, &p);
  std::vector<BlobTarget> targets;
  if (s.ok()) s = SelectBlobs(p, options.only, &targets);
  if (!s.ok()) return s;
  result->dir = dir;
  result->out_dir = options.out_dir;
  result->key_size = p.key_size;
  for (const BlobTarget& t : targets) {
    std::unique_ptr<File> file;
    uint64_t size = 0;
    s = OpenReadOnlyFile(t.blob_path, &file);
    if (s.ok()) s = file->Size(&size);
    if (!s.ok()) return s;
    if (progress) progress->AddTotal(size);
  }
  for (const BlobTarget& t : targets) {
    BlobRecovery b;
    b.name = t.name;
    s = options.out_dir.empty() ? RecoverInPlace(fs, p, t, progress, &b)
                                : RecoverInto(fs, p, t, options.out_dir, progress, &b);
    if (!s.ok()) return s;
    result->blobs.push_back(std::move(b));
  }
  if (!options.out_dir.empty()) return fs->SyncDir(options.out_dir);
  return Status::OK();
}

const char* RecoveryActionName(RecoveryAction a) {
  switch (a) {
    case RecoveryAction::kCopied: return "copied";
    case RecoveryAction::kRewritten: return "rewritten";
    case RecoveryAction::kIndexRebuilt: return "index-rebuilt";
    case RecoveryAction::kUnchanged: return "unchanged";
    case RecoveryAction::kRemoved: return "removed";
    case RecoveryAction::kSkipped: return "skipped";
  }
  return "unknown";
}

}  // namespace oyster
