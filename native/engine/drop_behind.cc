#include "engine/drop_behind.h"

#include <algorithm>
#include <iterator>

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
    std::vector<Range> clean;
    for (auto it = pending_.begin(); it != end; ++it) {
      if (it->blob_id == blob_id) clean.push_back(*it);
    }
    pending_.erase(pending_.begin(), end);
    CleanLocked(blob_id, clean, &drop);
  }
  // Outside the lock: each is a system call.
  for (const Range& r : drop) file->DropCache(r.offset, r.n);
  return s;
}

Status DropBehind::WriteBack(uint64_t blob_id, File* file, uint64_t offset, uint64_t n) {
  Status s = file->WriteBack(offset, n);
  if (!s.ok()) return s;
  std::vector<Range> drop;
  {
    std::lock_guard<std::mutex> l(mu_);
    const auto inside = [&](const Range& r) {
      return r.blob_id == blob_id && r.offset >= offset && r.offset + r.n <= offset + n;
    };
    std::vector<Range> clean;
    std::copy_if(pending_.begin(), pending_.end(), std::back_inserter(clean), inside);
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(), inside), pending_.end());
    CleanLocked(blob_id, clean, &drop);
  }
  for (const Range& r : drop) file->DropCache(r.offset, r.n);
  return s;
}

void DropBehind::CleanLocked(uint64_t blob_id, const std::vector<Range>& clean, std::vector<Range>* drop) {
  if (!clean_.empty() && clean_.front().blob_id != blob_id) {
    clean_.clear();
    clean_bytes_ = 0;
  }
  for (const Range& r : clean) {
    clean_.push_back(r);
    clean_bytes_ += r.n;
  }
  while (clean_bytes_ > keep_bytes_) {
    drop->push_back(clean_.front());
    clean_bytes_ -= clean_.front().n;
    clean_.pop_front();
  }
}

}  // namespace oyster
