#include "tools/partition_listing.h"

#include <algorithm>
#include <map>
#include <utility>

#include "engine/engine.h"
#include "engine/format.h"

namespace oyster {
namespace {

// The engine's kind of `name` with the prefix taken from the name itself
// (prefixes contain no '.').
FileKind Classify(const std::string& name, std::string* prefix, uint64_t* id) {
  size_t dot = name.find('.');
  if (dot == std::string::npos || dot == 0) return FileKind::kOther;
  *prefix = name.substr(0, dot);
  return ParseFileName(name, *prefix, id);
}

}  // namespace

bool ParseBlobFileName(const std::string& name, std::string* prefix, uint64_t* id) {
  if (Classify(name, prefix, id) == FileKind::kBlob) return true;
  size_t at = name.find(".blob.");
  return at != std::string::npos && Classify(name.substr(0, at + 5), prefix, id) == FileKind::kBlob;
}

Status ListPartition(FileSystem* fs, const std::string& dir, PartitionListing* listing) {
  *listing = PartitionListing();
  std::vector<std::string> names;
  Status s = fs->ListDir(dir, &names);
  if (!s.ok()) return s;
  std::map<std::pair<std::string, uint64_t>, BlobFiles> files;
  for (const std::string& name : names) {
    std::string prefix;
    uint64_t id = 0;
    FileKind kind = Classify(name, &prefix, &id);
    if (kind == FileKind::kOther) {
      if (name == kCorruptedDir) {
        // Not a directory (or unreadable): nothing quarantined to list.
        if (!fs->ListDir(JoinPath(dir, name), &listing->quarantined).ok()) listing->quarantined.clear();
        std::sort(listing->quarantined.begin(), listing->quarantined.end());
      }
      continue;
    }
    BlobFiles& f = files[{prefix, id}];
    f.prefix = prefix;
    f.id = id;
    if (kind == FileKind::kBlob) f.has_blob = true;
    if (kind == FileKind::kIndex) f.has_index = true;
    if (kind == FileKind::kTempIndex) f.has_temp_index = true;
  }
  for (auto& [key, f] : files) listing->blobs.push_back(std::move(f));
  // Ordered by (prefix, id): walking backwards, the first blob of each
  // prefix met is its newest (prefixes are never empty).
  std::string done;
  for (size_t i = listing->blobs.size(); i-- > 0;) {
    BlobFiles& f = listing->blobs[i];
    if (!f.has_blob || f.prefix == done) continue;
    f.active = !f.has_index;
    done = f.prefix;
  }
  return Status::OK();
}

}  // namespace oyster
