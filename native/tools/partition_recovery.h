// RecoverPartition repairs the blobs of one partition directory offline,
// either into a new directory (the source is only read) or in place, where a
// damaged blob is replaced by its intact records and the original is kept
// under corrupted/, the engine's quarantine (docs/FORMAT.md §2), so that its
// id is never reused. Index files are rebuilt wherever the engine would
// otherwise have to: missing, damaged, stale, wrong or of an older format.
// Rewritten blobs are of the current format, whatever the original's.

#ifndef OYSTER_TOOLS_PARTITION_RECOVERY_H_
#define OYSTER_TOOLS_PARTITION_RECOVERY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tools/blob_rewriter.h"
#include "tools/tool_progress.h"
#include "util/file_system.h"
#include "util/status.h"

namespace oyster {

struct RecoverOptions {
  uint32_t key_size = 0;  // 0: take it from the files
  // Write the recovered partition into this existing directory (no blob of
  // the same name may be there yet). Empty: repair in place.
  std::string out_dir;
  std::string only;  // a file name in the directory: recover only that blob
};

enum class RecoveryAction {
  kCopied,        // out_dir: copied whole, nothing was damaged
  kRewritten,     // intact records copied, damage left behind
  kIndexRebuilt,  // in place: the blob was fine, its index file was not
  kUnchanged,     // in place: nothing to repair
  kRemoved,       // no intact record: nothing written (in place: the original kept)
  kSkipped,       // cannot be recovered by this tool (reason says why)
};

struct BlobRecovery {
  std::string name;
  RecoveryAction action = RecoveryAction::kUnchanged;
  std::string reason;        // what was wrong, or why it was skipped
  RewriteResult rewrite;     // for kCopied, kRewritten, kRemoved
  bool index_written = false;
  std::string kept_as;       // in place: the original's path relative to the directory
};

struct PartitionRecovery {
  std::string dir;
  std::string out_dir;
  uint32_t key_size = 0;
  std::vector<BlobRecovery> blobs;
};

Status RecoverPartition(FileSystem* fs, const std::string& dir, const RecoverOptions& options,
                        ToolProgress* progress, PartitionRecovery* result);

const char* RecoveryActionName(RecoveryAction a);

}  // namespace oyster

#endif  // OYSTER_TOOLS_PARTITION_RECOVERY_H_
