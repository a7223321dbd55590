// The 64-bit key hash used by the active index and, persisted, by bloom
// filters. Its definition is part of the on-disk format (docs/FORMAT.md) and
// must never change.

#ifndef OYSTER_UTIL_HASH_H_
#define OYSTER_UTIL_HASH_H_

#include <cstddef>
#include <cstdint>

namespace oyster {

uint64_t KeyHash64(const char* key, size_t n);

}  // namespace oyster

#endif  // OYSTER_UTIL_HASH_H_
