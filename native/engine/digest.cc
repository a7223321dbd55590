#include "engine/digest.h"

#include <algorithm>
#include <cmath>

namespace oyster {

DigestSlices::DigestSlices(uint32_t bits, const std::vector<uint32_t>& buckets, uint64_t records,
                           uint64_t slice_keys)
    : bits_(bits), rank_(size_t{1} << bits, kNone) {
  for (uint32_t b : buckets) rank_[b] = 0;
  uint32_t asked = 0;
  for (uint32_t& r : rank_) {
    if (r != kNone) r = asked++;
  }
  if (asked == 0) return;
  span_ = static_cast<uint64_t>(asked) << 32;
  // Hashes spread keys evenly over the buckets: the buckets asked for expect
  // their share of the records.
  const double expected = static_cast<double>(records) * asked / static_cast<double>(rank_.size());
  const double slices = std::ceil(expected / static_cast<double>(slice_keys));
  count_ = static_cast<uint32_t>(std::clamp(slices, 1.0, static_cast<double>(kMaxSlices)));
}

}  // namespace oyster
