// Writes the index file of a blob that receives no more records, crash-safely:
// temporary name, fdatasync, rename, directory fsync.

#ifndef OYSTER_ENGINE_INDEX_BUILDER_H_
#define OYSTER_ENGINE_INDEX_BUILDER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "engine/active_index.h"
#include "engine/index_reader.h"
#include "util/file_system.h"
#include "util/status.h"

namespace oyster {

struct IndexBuildParams {
  std::string dir;
  std::string prefix;
  uint64_t blob_id = 0;
  uint64_t blob_size = 0;
  uint64_t records_total = 0;
  // The largest stamp of any record in the blob, superseded ones included
  // (the entries alone may not hold it).
  uint64_t max_stamp = 0;
  uint32_t bloom_bits_per_key = 0;
  // Where the file goes, and its name while it is written (empty: the
  // blob's IndexFileName and TempIndexFileName; the same name: written in
  // place, for a file that counts only once something else is renamed).
  std::string file_name;
  std::string temp_name;
  // The read cache of the reader returned.
  std::shared_ptr<Cache> cache;
};

// On success *reader serves lookups from the new file.
Status BuildIndexFile(FileSystem* fs, const IndexBuildParams& params, const ActiveIndex& index,
                      std::unique_ptr<IndexReader>* reader);

}  // namespace oyster

#endif  // OYSTER_ENGINE_INDEX_BUILDER_H_
