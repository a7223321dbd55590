#include "engine/options.h"

#include "engine/format.h"

namespace oyster {

Status EngineOptions::Validate() const {
  if (key_size < 1 || key_size > 1024) return Status::InvalidArgument("key_size must be in 1..1024");
  if (max_blob_size < kBlobHeaderSize + RecordHeaderSize(kBlobFormatVersion, key_size)) {
    return Status::InvalidArgument("max_blob_size is too small to hold a record");
  }
  if (max_data_in_blob < 1 || max_data_in_blob > 0xFFFFFFF0ull) {
    return Status::InvalidArgument("max_data_in_blob must be in 1..4294967280");
  }
  if (bloom_bits_per_key > 64) return Status::InvalidArgument("bloom_bits_per_key must be in 0..64");
  if (blob_file_prefix.empty() || blob_file_prefix.find_first_of("./") != std::string::npos) {
    return Status::InvalidArgument("blob_file_prefix must be non-empty without '.' or '/'");
  }
  if (executor == nullptr) return Status::InvalidArgument("an executor is required");
  return Status::OK();
}

}  // namespace oyster
