// Strand runs the tasks scheduled on it one at a time, in the order they
// were scheduled, on the threads of another executor (as asio's strand): the
// calls of one object that must not overlap — the appends of a streamed put,
// the reads of a value reader — while their caller (JavaScript) issues them
// without waiting for each other.

#ifndef OYSTER_UTIL_STRAND_H_
#define OYSTER_UTIL_STRAND_H_

#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "util/thread_pool.h"

namespace oyster {

// Owned by shared_ptr (Schedule takes shared_from_this): a strand lives
// until its last task has run.
class Strand final : public Executor, public std::enable_shared_from_this<Strand> {
 public:
  // `target` must outlive every task scheduled here.
  explicit Strand(Executor* target) : target_(target) {}

  Strand(const Strand&) = delete;
  Strand& operator=(const Strand&) = delete;

  // Runs `task` on the target once every task scheduled before it has run.
  void Schedule(std::function<void()> task) override;

 private:
  // Runs the oldest task, then hands the next one to the target as a task of
  // its own, so that other work gets its turn in between.
  void RunNext();

  Executor* const target_;
  std::mutex mu_;
  std::deque<std::function<void()>> tasks_;
  bool running_ = false;  // a RunNext is scheduled or running
};

}  // namespace oyster

#endif  // OYSTER_UTIL_STRAND_H_
