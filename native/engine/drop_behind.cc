#include "engine/drop_behind.h"

#include <algorithm>

namespace oyster {

void DropBehind::Written(uint64_t blob_id, uint64_t offset, uint64_t n) {
  std::lock_guard<std::mutex> l(mu_);
  if (pending_.size() >= kMaxPending) pending_.erase(pending_.begin(), pending_.begin() + kMaxPending / 2);
  pending_.push_back(Range{next_seq_++, blob_id, offset, n});
}

Status DropBehind::Sync(uint64_t blob_id, File* file) {
  uint64_t mark;
  {
    std::lock_guard<std::mutex> l(mu_);
    mark = next_seq_;
  }
  Status s = file->Sync();
  if (!s.ok()) return s;
  std::vector<Range> drop;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto end = std::find_if(pending_.begin(), pending_.end(), [mark](const Range& r) { return r.seq >= mark; });
    if (!synced_.empty() && synced_.front().blob_id != blob_id) {
      synced_.clear();
      synced_bytes_ = 0;
    }
    for (auto it = pending_.begin(); it != end; ++it) {
      if (it->blob_id != blob_id) continue;
      synced_.push_back(*it);
      synced_bytes_ += it->n;
    }
    pending_.erase(pending_.begin(), end);
    while (synced_bytes_ > keep_bytes_) {
      drop.push_back(synced_.front());
      synced_bytes_ -= synced_.front().n;
      synced_.pop_front();
    }
  }
  // Outside the lock: each is a system call.
  for (const Range& r : drop) file->DropCache(r.offset, r.n);
  return s;
}

}  // namespace oyster
