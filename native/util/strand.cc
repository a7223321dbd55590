#include "util/strand.h"

namespace oyster {

void Strand::Schedule(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> l(mu_);
    tasks_.push_back(std::move(task));
    if (running_) return;
    running_ = true;
  }
  std::shared_ptr<Strand> self = shared_from_this();
  target_->Schedule([self] { self->RunNext(); });
}

void Strand::RunNext() {
  std::function<void()> task;
  {
    std::lock_guard<std::mutex> l(mu_);
    task = std::move(tasks_.front());
    tasks_.pop_front();
  }
  task();
  {
    std::lock_guard<std::mutex> l(mu_);
    if (tasks_.empty()) {
      running_ = false;
      return;
    }
  }
  std::shared_ptr<Strand> self = shared_from_this();
  target_->Schedule([self] { self->RunNext(); });
}

}  // namespace oyster
