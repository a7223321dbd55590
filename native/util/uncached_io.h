// Reads and writes of whole-file copies that go around the page cache
// (O_DIRECT): a refill moves a disk's worth of closed blob and index files
// between replicas, which through the cache would push out the records the
// node serves and, on Linux, costs more CPU in page allocation than the copy
// itself.
//
// A range goes around the cache only where the file system accepts O_DIRECT
// (tmpfs before Linux 6.6 does not) and its offset is a multiple of
// kUncachedAlignment; a write's length must be one too (a file's last,
// partial chunk). Other ranges use ordinary I/O, and so do reads of ranges
// the cache holds whole (a copy of files just written, say). Either way the result is
// the same bytes: the kernel keeps the two kinds coherent, so what was
// written around the cache is durable only after a Sync of the file, like
// any write.

#ifndef OYSTER_UTIL_UNCACHED_IO_H_
#define OYSTER_UTIL_UNCACHED_IO_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "util/status.h"

namespace oyster {

constexpr size_t kUncachedAlignment = 4096;

// Reads up to n bytes of the file at offset into buf; *bytes_read < n only
// at end of file. buf needs no alignment.
Status ReadUncached(const std::string& path, uint64_t offset, size_t n, char* buf, size_t* bytes_read);

// Writes the n bytes of data at offset of the existing file (an IOError
// with ENOENT otherwise); all or an error, which may leave part of them
// written. data needs no alignment.
Status WriteUncached(const std::string& path, uint64_t offset, const char* data, size_t n);

}  // namespace oyster

#endif  // OYSTER_UTIL_UNCACHED_IO_H_
