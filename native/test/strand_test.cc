// Strand: the tasks of one strand run one at a time and in the order they
// were scheduled, while several strands share the pool's threads; a strand
// lives as long as tasks are queued on it.

#include "util/strand.h"

#include <atomic>
#include <memory>
#include <vector>

#include "test/test_util.h"
#include "test/testharness.h"
#include "util/thread_pool.h"

namespace oyster {

TEST(Strand, OneAtATimeInOrder) {
  constexpr int kStrands = 8;
  constexpr int kTasks = 2000;
  struct Seen {
    std::vector<int> order;
    std::atomic<int> running{0};
    std::atomic<bool> overlapped{false};
  };
  std::vector<Seen> seen(kStrands);
  std::atomic<int> done{0};
  {
    ThreadPool pool(4);
    std::vector<std::shared_ptr<Strand>> strands;
    for (int s = 0; s < kStrands; s++) strands.push_back(std::make_shared<Strand>(&pool));
    for (int i = 0; i < kTasks; i++) {
      for (int s = 0; s < kStrands; s++) {
        Seen* at = &seen[s];
        strands[s]->Schedule([at, i, &done] {
          if (at->running.fetch_add(1) != 0) at->overlapped = true;
          at->order.push_back(i);
          at->running.fetch_sub(1);
          done.fetch_add(1);
        });
      }
    }
    strands.clear();  // the queued tasks keep them
    ASSERT_TRUE(test::Eventually([&] { return done.load() == kStrands * kTasks; })) << done.load();
  }
  for (const Seen& s : seen) {
    ASSERT_FALSE(s.overlapped.load());
    ASSERT_EQ(s.order.size(), static_cast<size_t>(kTasks));
    for (int i = 0; i < kTasks; i++) ASSERT_EQ(s.order[i], i);
  }
}

}  // namespace oyster
