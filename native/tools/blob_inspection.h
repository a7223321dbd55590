// InspectBlob finds out, without changing anything, what state one blob file
// and its index file are in: whether the engine can open the blob, which
// records are intact, whether the tail is torn, and whether the index file
// describes the blob exactly. `oyster blob check` and `info` report it;
// recovery decides from it what to rewrite.

#ifndef OYSTER_TOOLS_BLOB_INSPECTION_H_
#define OYSTER_TOOLS_BLOB_INSPECTION_H_

#include <cstdint>
#include <memory>
#include <string>

#include "engine/active_index.h"
#include "engine/index_format.h"
#include "tools/tool_progress.h"
#include "util/status.h"

namespace oyster {

enum class HeaderState {
  kOk,
  kShort,               // shorter than a blob header: it never held a record
  kPearl,               // bob's own engine wrote it; not an Oyster blob
  kCorrupt,             // bad magic or checksum: the engine quarantines it
  kUnsupportedVersion,  // a valid header of a format version this build does not know
  kWrongId,             // the header names another blob: the engine quarantines it
  kWrongKeySize,        // the keys are not of the partition's size: the engine refuses the partition
};

enum class IndexState {
  kAbsent,
  kOk,        // opens; with a scan, every entry matched the blob
  kOutdated,  // of an older index format: the engine rebuilds it (nothing is wrong)
  kInvalid,   // the engine would not use it (damaged, stale or of another blob) and rebuilds it
  kMismatch,  // passes its own checks but does not describe the blob's records
};

struct BlobReport {
  std::string name;
  std::string prefix;
  uint64_t id = 0;
  uint64_t size = 0;
  // The engine would keep appending to it (the newest blob of its prefix,
  // without an index file); set by the partition listing.
  bool active = false;

  HeaderState header = HeaderState::kOk;
  std::string header_problem;
  // The blob format (1 or 2) its records are in. For a header that is lost
  // (kCorrupt), the format its records read best in; 0 when not known.
  uint32_t version = 0;
  // The key size the records were read with; 0 when it is unknown (the
  // header is unreadable and the partition's key size is not known).
  uint32_t key_size = 0;

  // Only with a scan:
  bool scanned = false;
  uint64_t records = 0;         // records with a valid header, tombstones included
  uint64_t tombstones = 0;
  uint64_t keys = 0;            // distinct keys
  uint64_t corrupt_records = 0; // valid header, value fails its checksum
  uint64_t corrupt_newest = 0;  // ... and the newest record of its key in this blob
  uint64_t skipped_regions = 0; // damaged stretches followed by a valid record
  uint64_t skipped_bytes = 0;
  uint64_t valid_end = 0;       // just past the last valid record
  uint64_t tail_bytes = 0;      // torn or garbage bytes after valid_end
  uint64_t min_timestamp = 0;
  Version max_version;         // the largest version of any record
  uint64_t max_stamp = 0;      // the largest stamp of any record

  bool has_index = false;
  IndexState index = IndexState::kAbsent;
  std::string index_problem;
  bool index_header_valid = false;  // index_header is filled in
  IndexHeader index_header;
  uint64_t index_size = 0;
  bool index_entries_verified = false;  // every entry was compared with the scan
};

struct InspectOptions {
  // The partition's key size; 0 if unknown. A valid header overrides it for
  // reading (and is reported as kWrongKeySize when it differs).
  uint32_t key_size = 0;
  // Read every record (check, info --full) rather than only the headers.
  bool scan = true;
};

// Inspects the blob at `blob_path` (id `id`, from its name) and the index
// file at `index_path` (empty: none). Damage is described in *report; the
// status is non-OK only when a file cannot be read at all. With a scan,
// *scanned (if given) receives the exact index of the blob as it is.
Status InspectBlob(const std::string& blob_path, const std::string& index_path, uint64_t id,
                   const InspectOptions& options, ToolProgress* progress, BlobReport* report,
                   std::unique_ptr<ActiveIndex>* scanned = nullptr);

const char* HeaderStateName(HeaderState s);
const char* IndexStateName(IndexState s);

}  // namespace oyster

#endif  // OYSTER_TOOLS_BLOB_INSPECTION_H_
