// CheckPartition inspects the blobs of one partition directory, or one blob
// file, while holding the engine's directory lock so that no node opens the
// partition meanwhile. Nothing in the directory is changed.

#ifndef OYSTER_TOOLS_PARTITION_CHECK_H_
#define OYSTER_TOOLS_PARTITION_CHECK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tools/blob_inspection.h"
#include "tools/partition_listing.h"
#include "tools/tool_progress.h"
#include "util/file_system.h"
#include "util/status.h"

namespace oyster {

struct PartitionReport {
  std::string dir;
  uint32_t key_size = 0;  // 0 when no header tells it
  std::vector<BlobReport> blobs;
  std::vector<std::string> orphan_indexes;  // index files without their blob
  std::vector<std::string> temp_indexes;    // unfinished index builds
  std::vector<std::string> quarantined;     // names inside corrupted/
};

struct CheckOptions {
  uint32_t key_size = 0;  // 0: take it from the files
  bool scan = true;
  std::string only;       // a file name in the directory: inspect only that blob
};

// The partition's files, locked against the engine: the basis of a check
// and of a recovery.
struct LockedPartition {
  std::string dir;
  std::unique_ptr<DirLock> lock;
  PartitionListing listing;
  uint32_t key_size = 0;
};

// Locks `dir` (Busy if a node has it open), lists it and works out its key
// size: `key_size` if given, else the first valid blob header, else the
// first valid index header.
Status OpenPartition(FileSystem* fs, const std::string& dir, uint32_t key_size, LockedPartition* p);

// A blob to work on and the paths of its files.
struct BlobTarget {
  std::string name;
  std::string prefix;
  uint64_t id = 0;
  bool active = false;
  std::string blob_path;
  std::string index_path;  // empty: no index file
};

// Whether dir is a partition's corrupted/ directory, where the engine
// quarantines blobs: its files belong to no partition.
bool InQuarantine(const std::string& dir);

// Every blob of the partition, or only the file named `only` in it (which
// may also be a kept copy such as corrupted/<prefix>.<id>.blob.1).
Status SelectBlobs(const LockedPartition& p, const std::string& only, std::vector<BlobTarget>* targets);

Status CheckPartition(FileSystem* fs, const std::string& dir, const CheckOptions& options,
                      ToolProgress* progress, PartitionReport* report);

}  // namespace oyster

#endif  // OYSTER_TOOLS_PARTITION_CHECK_H_
