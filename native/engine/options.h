// EngineOptions configures one engine instance (one partition directory).

#ifndef OYSTER_ENGINE_OPTIONS_H_
#define OYSTER_ENGINE_OPTIONS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "util/cache.h"
#include "util/file_system.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace oyster {

struct EngineOptions {
  // Bytes per key; every key passed to the engine has exactly this length.
  uint32_t key_size = 16;
  // A new blob is started before a record would make the active one larger
  // than this (a single larger record still gets a blob of its own).
  uint64_t max_blob_size = 1000000000;
  // A new blob is started once the active one holds this many records.
  uint64_t max_data_in_blob = 1000000;
  // Bytes of acknowledged records of the active blob not yet wholly synced
  // never exceed this; crossing it makes the write wait for fdatasync. A
  // streamed record counts whole, as a power failure takes it whole.
  uint64_t max_dirty_bytes_before_sync = 10 << 20;
  // Acknowledge a write only after fdatasync; concurrent writes share one.
  bool sync_writes = false;
  // Large values (256 KiB and more) leave the page cache once synced, all
  // but the newest this many bytes of them in the active blob (DropBehind):
  // enough that a value of 64 MiB is read back right after its write from
  // memory, whole, as it was written.
  uint64_t cached_large_value_bytes = 64 << 20;
  // Bloom filter size for closed blobs; 0 disables the filter.
  uint32_t bloom_bits_per_key = 10;
  // Blob files are named "<prefix>.<n>.blob"; no '.' or '/' allowed.
  std::string blob_file_prefix = "oyster";

  // Where files are opened; FileSystem::Default() unless a test injects faults.
  FileSystem* fs = nullptr;
  // Where background work (writes, index builds) runs. Required.
  Executor* executor = nullptr;
  // The index blocks of closed blobs read are kept here and read from here
  // again; usually one cache for every engine of the process. None: every
  // lookup in a closed blob reads its block from the file.
  std::shared_ptr<Cache> cache;

  Status Validate() const;
};

}  // namespace oyster

#endif  // OYSTER_ENGINE_OPTIONS_H_
