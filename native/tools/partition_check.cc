#include "tools/partition_check.h"

#include "engine/engine.h"
#include "engine/format.h"
#include "engine/index_format.h"
#include "util/file_system.h"

namespace oyster {
namespace {

// The key size a file's header states, or 0. Index headers serve when no
// blob header is readable.
uint32_t HeaderKeySize(const std::string& path, bool index) {
  std::unique_ptr<File> file;
  if (!OpenReadOnlyFile(path, &file).ok()) return 0;
  char buf[kIndexHeaderSize];
  size_t want = index ? kIndexHeaderSize : kBlobHeaderSize;
  size_t n = 0;
  if (!file->Read(0, want, buf, &n).ok() || n != want) return 0;
  if (index) {
    IndexHeader h;
    return DecodeIndexHeader(buf, &h).ok() ? h.key_size : 0;
  }
  BlobHeader h;
  return DecodeBlobHeader(buf, &h).ok() ? h.key_size : 0;
}

}  // namespace

Status OpenPartition(FileSystem* fs, const std::string& dir, uint32_t key_size, LockedPartition* p) {
  p->dir = dir;
  Status s = fs->LockDir(dir, &p->lock);
  if (s.code() == Status::kBusy) return Status::Busy("in use by a running node (stop it first)");
  if (s.ok()) s = ListPartition(fs, dir, &p->listing);
  if (!s.ok()) return s;
  p->key_size = key_size;
  for (int pass = 0; pass < 2 && p->key_size == 0; pass++) {
    const bool index = pass == 1;
    for (const BlobFiles& f : p->listing.blobs) {
      if (!(index ? f.has_index : f.has_blob)) continue;
      std::string name = index ? IndexFileName(f.prefix, f.id) : BlobFileName(f.prefix, f.id);
      p->key_size = HeaderKeySize(JoinPath(dir, name), index);
      if (p->key_size != 0) break;
    }
  }
  return Status::OK();
}

bool InQuarantine(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  size_t slash = d.rfind('/');
  return d.substr(slash == std::string::npos ? 0 : slash + 1) == kCorruptedDir;
}

Status SelectBlobs(const LockedPartition& p, const std::string& only, std::vector<BlobTarget>* targets) {
  targets->clear();
  if (only.empty()) {
    for (const BlobFiles& f : p.listing.blobs) {
      if (!f.has_blob) continue;
      BlobTarget t;
      t.name = BlobFileName(f.prefix, f.id);
      t.prefix = f.prefix;
      t.id = f.id;
      t.active = f.active;
      t.blob_path = JoinPath(p.dir, t.name);
      if (f.has_index) t.index_path = JoinPath(p.dir, IndexFileName(f.prefix, f.id));
      targets->push_back(std::move(t));
    }
    return Status::OK();
  }
  BlobTarget t;
  if (!ParseBlobFileName(only, &t.prefix, &t.id)) {
    return Status::InvalidArgument(only + " is not named like a blob file (<prefix>.<id>.blob)");
  }
  t.name = only;
  t.blob_path = JoinPath(p.dir, only);
  // The index and the active role belong to the blob's own name in a
  // partition; a kept copy (renamed, or under corrupted/) has neither.
  if (only == BlobFileName(t.prefix, t.id) && !InQuarantine(p.dir)) {
    for (const BlobFiles& f : p.listing.blobs) {
      if (f.prefix != t.prefix || f.id != t.id) continue;
      if (f.has_index) t.index_path = JoinPath(p.dir, IndexFileName(f.prefix, f.id));
      t.active = f.active;
    }
  }
  targets->push_back(std::move(t));
  return Status::OK();
}

Status CheckPartition(FileSystem* fs, const std::string& dir, const CheckOptions& options,
                      ToolProgress* progress, PartitionReport* report) {
  LockedPartition p;
  Status s = OpenPartition(fs, dir, options.key_size, &p);
  std::vector<BlobTarget> targets;
  if (s.ok()) s = SelectBlobs(p, options.only, &targets);
  if (!s.ok()) return s;
  report->dir = dir;
  report->key_size = p.key_size;
  report->quarantined = p.listing.quarantined;
  if (options.only.empty()) {
    for (const BlobFiles& f : p.listing.blobs) {
      if (f.has_temp_index) report->temp_indexes.push_back(TempIndexFileName(f.prefix, f.id));
      if (f.has_index && !f.has_blob) report->orphan_indexes.push_back(IndexFileName(f.prefix, f.id));
    }
  }
  for (const BlobTarget& t : targets) {
    std::unique_ptr<File> file;
    uint64_t size = 0;
    s = OpenReadOnlyFile(t.blob_path, &file);
    if (s.ok()) s = file->Size(&size);
    if (!s.ok()) return s;
    if (progress) progress->AddTotal(size);
  }
  InspectOptions io;
  io.key_size = p.key_size;
  io.scan = options.scan;
  for (const BlobTarget& t : targets) {
    BlobReport r;
    r.name = t.name;
    r.prefix = t.prefix;
    r.id = t.id;
    r.active = t.active;
    s = InspectBlob(t.blob_path, t.index_path, t.id, io, progress, &r);
    if (!s.ok()) return s;
    report->blobs.push_back(std::move(r));
  }
  return Status::OK();
}

}  // namespace oyster
