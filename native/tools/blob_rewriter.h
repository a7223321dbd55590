// RewriteBlob copies the intact records of a damaged blob into a new blob
// file, as bob's brt recovery does: records whose value fails its checksum,
// damaged stretches and a torn tail stay behind, every record kept gets its
// new offset, and the result is indexed exactly so that an index file can be
// written for it. The new blob is always of the current format (a format-1
// record keeps its version, stamp 0). The source is only read.

#ifndef OYSTER_TOOLS_BLOB_REWRITER_H_
#define OYSTER_TOOLS_BLOB_REWRITER_H_

#include <cstdint>
#include <string>

#include "engine/active_index.h"
#include "tools/tool_progress.h"
#include "util/file_system.h"
#include "util/status.h"

namespace oyster {

struct RewriteResult {
  uint64_t size = 0;             // of the new blob
  uint64_t records = 0;          // records copied
  uint64_t corrupt_dropped = 0;  // records left out because their value fails its checksum
  uint64_t corrupt_newest = 0;   // ... that were the newest version of their key in the blob
  uint64_t corrupt_bytes = 0;    // ... and their size
  uint64_t bytes_dropped = 0;    // bytes of the source not copied (damage, tail, corrupt records)
  uint64_t max_stamp = 0;        // the largest stamp of the records copied
};

// Reads the records of `src` (src_size bytes, key_size-byte keys, records
// of blob format src_format from offset 32 on, whatever its header says) and
// writes them as blob `id` to `dst_path`, which must not exist, then syncs
// it. On success *index holds the newest entry of every key copied; on
// failure the new file is removed.
Status RewriteBlob(FileSystem* fs, const File& src, uint32_t src_format, uint64_t src_size, uint32_t key_size,
                   const std::string& dst_path, uint64_t id, ToolProgress* progress, ActiveIndex* index,
                   RewriteResult* result);

}  // namespace oyster

#endif  // OYSTER_TOOLS_BLOB_REWRITER_H_
