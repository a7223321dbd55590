// CacheWrap is the JavaScript face of a read cache (util/cache.h): created
// once by the node with the configured capacity and passed to every engine it
// opens (open(dir, { cache })), so that all partitions share one budget.

#ifndef OYSTER_ADDON_CACHE_WRAP_H_
#define OYSTER_ADDON_CACHE_WRAP_H_

#include <napi.h>

#include <memory>

#include "util/cache.h"

namespace oyster {

class CacheWrap : public Napi::ObjectWrap<CacheWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  // new Cache(capacity: bytes, a safe integer >= 0)
  explicit CacheWrap(const Napi::CallbackInfo& info);

  const std::shared_ptr<Cache>& cache() const { return cache_; }

  // The cache of an `open` option: nullptr with *ok for undefined; throws
  // and sets *ok to false for anything but a Cache.
  static std::shared_ptr<Cache> FromOption(Napi::Value v, bool* ok);

 private:
  // stats() -> { capacity, usage, entries, hits, misses } (Cache::Stats)
  Napi::Value Stats(const Napi::CallbackInfo& info);

  std::shared_ptr<Cache> cache_;
};

}  // namespace oyster

#endif  // OYSTER_ADDON_CACHE_WRAP_H_
