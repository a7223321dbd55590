// ToolProgress lets the JavaScript thread watch long tool work: the thread
// doing the work adds the bytes it has read, the progress bar polls.

#ifndef OYSTER_TOOLS_TOOL_PROGRESS_H_
#define OYSTER_TOOLS_TOOL_PROGRESS_H_

#include <atomic>
#include <cstdint>

namespace oyster {

class ToolProgress {
 public:
  // More work became known (the tools learn the total as they go).
  void AddTotal(uint64_t bytes) { total_.fetch_add(bytes, std::memory_order_relaxed); }
  void AddDone(uint64_t bytes) { done_.fetch_add(bytes, std::memory_order_relaxed); }

  uint64_t done() const { return done_.load(std::memory_order_relaxed); }
  uint64_t total() const { return total_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> done_{0};
  std::atomic<uint64_t> total_{0};
};

}  // namespace oyster

#endif  // OYSTER_TOOLS_TOOL_PROGRESS_H_
