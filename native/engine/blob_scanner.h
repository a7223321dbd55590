// ScanBlob reads a blob file record by record to rebuild its index when no
// valid index file exists (after a crash, or when the index was lost). It
// verifies every checksum, steps over damaged regions when a valid record
// follows them and over the void records of streamed writes that did not
// complete, and reports where the valid data ends so that a torn or garbage
// tail can be cut off.

#ifndef OYSTER_ENGINE_BLOB_SCANNER_H_
#define OYSTER_ENGINE_BLOB_SCANNER_H_

#include <cstdint>
#include <functional>

#include "engine/active_index.h"
#include "util/file_system.h"
#include "util/status.h"

namespace oyster {

struct ScanResult {
  uint64_t valid_end = 0;        // offset just past the last valid record
  uint64_t records = 0;          // records with a valid header (tombstones included)
  uint64_t corrupt_records = 0;  // valid header, but the value fails its checksum
  uint64_t skipped_regions = 0;  // damaged stretches followed by a valid record
  uint64_t skipped_bytes = 0;
  uint64_t void_records = 0;     // space of streamed writes that did not complete
  uint64_t void_bytes = 0;       // their headers and bodies
};

// Called for every record with a valid header but void ones; value_ok is
// false when its value fails the checksum.
using ScanVisitor = std::function<void(const char* key, const IndexEntry& e, bool value_ok)>;

// Scans [data_start, file_size) of `file`, a blob of format `format` (1 or 2).
Status ScanBlob(const File& file, uint32_t format, uint64_t data_start, uint64_t file_size, size_t key_size,
                const ScanVisitor& visit, ScanResult* result);

}  // namespace oyster

#endif  // OYSTER_ENGINE_BLOB_SCANNER_H_
