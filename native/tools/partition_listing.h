// PartitionListing sorts the names in a partition directory into the
// engine's files, blob by blob. A node names its blob files
// "<blob_file_name_prefix>_<hash>.<id>.blob"; the tools do not know the
// prefix in advance and take it from the names (docs/FORMAT.md §2).

#ifndef OYSTER_TOOLS_PARTITION_LISTING_H_
#define OYSTER_TOOLS_PARTITION_LISTING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "util/file_system.h"
#include "util/status.h"

namespace oyster {

// One blob id of one prefix and the files present for it.
struct BlobFiles {
  std::string prefix;
  uint64_t id = 0;
  bool has_blob = false;
  bool has_index = false;
  bool has_temp_index = false;
  // The blob the engine would keep appending to: the highest id of its
  // prefix, with no index file.
  bool active = false;
};

struct PartitionListing {
  std::vector<BlobFiles> blobs;          // by prefix, then by ascending id
  std::vector<std::string> quarantined;  // names inside corrupted/
};

Status ListPartition(FileSystem* fs, const std::string& dir, PartitionListing* listing);

// The prefix and id of a blob file name: "<prefix>.<id>.blob", or such a name
// with a suffix appended (".<k>" as recovery gives to quarantined copies).
bool ParseBlobFileName(const std::string& name, std::string* prefix, uint64_t* id);

}  // namespace oyster

#endif  // OYSTER_TOOLS_PARTITION_LISTING_H_
