#include "util/thread_pool.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

#include "test/test_util.h"
#include "test/testharness.h"

namespace oyster {

TEST(ThreadPool, RunsEveryTask) {
  std::atomic<int> done{0};
  {
    ThreadPool pool(4);
    ASSERT_EQ(pool.size(), 4);
    std::vector<std::thread> producers;
    for (int p = 0; p < 4; p++) {
      producers.emplace_back([&] {
        for (int i = 0; i < 5000; i++) pool.Schedule([&] { done.fetch_add(1); });
      });
    }
    for (auto& t : producers) t.join();
    ASSERT_TRUE(test::Eventually([&] { return done.load() == 20000; })) << done.load();
  }
  ASSERT_EQ(done.load(), 20000);
}

TEST(ThreadPool, DestructorRunsQueuedTasks) {
  std::atomic<int> done{0};
  {
    ThreadPool pool(2);
    for (int i = 0; i < 1000; i++) pool.Schedule([&] { done.fetch_add(1); });
  }
  ASSERT_EQ(done.load(), 1000);
  ThreadPool zero(0);  // at least one thread
  ASSERT_EQ(zero.size(), 1);
}

TEST(ThreadPool, TasksScheduleTasks) {
  ThreadPool pool(3);
  test::Latch latch(1);
  std::atomic<int> hops{0};
  std::function<void()> hop = [&] {
    if (hops.fetch_add(1) + 1 == 500) {
      latch.CountDown();
    } else {
      pool.Schedule(hop);
    }
  };
  pool.Schedule(hop);
  latch.Wait();
  ASSERT_EQ(hops.load(), 500);
}

// What a task holds may schedule work as it goes (the last owner of a
// streamed put aborts it, which may schedule an index build).
TEST(ThreadPool, TaskCapturesMayScheduleAsTheyGo) {
  class SchedulesOnDestruction {
   public:
    SchedulesOnDestruction(ThreadPool* pool, test::Latch* latch) : pool_(pool), latch_(latch) {}
    ~SchedulesOnDestruction() {
      test::Latch* latch = latch_;
      pool_->Schedule([latch] { latch->CountDown(); });
    }

   private:
    ThreadPool* const pool_;
    test::Latch* const latch_;
  };
  ThreadPool pool(2);
  test::Latch latch(1);
  auto held = std::make_shared<SchedulesOnDestruction>(&pool, &latch);
  pool.Schedule([held] {});
  held.reset();
  latch.Wait();
}

// A task blocked on the disk must not hold up a growing backlog: other
// threads are woken to serve it.
TEST(ThreadPool, BacklogWakesMoreThreads) {
  std::atomic<bool> release{false};
  std::atomic<bool> blocked{false};
  std::atomic<int> done{0};
  ThreadPool pool(4);  // joined before the flags go
  pool.Schedule([&] {
    blocked = true;
    while (!release.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
  });
  ASSERT_TRUE(test::Eventually([&] { return blocked.load(); }));
  for (int i = 0; i < 200; i++) pool.Schedule([&] { done.fetch_add(1); });
  const bool served = test::Eventually([&] { return done.load() == 200; });
  release = true;
  ASSERT_TRUE(served) << "only " << done.load() << " of 200 tasks ran while one thread was blocked";
}

// A single task queued while the awake thread is blocked must not wait for
// it: no later task arrives to trigger a wake-up, so the pool has to notice
// on its own that the task waited too long.
TEST(ThreadPool, LoneTaskBehindABlockedThread) {
  ThreadPool pool(4);
  for (int round = 0; round < 20; round++) {
    std::atomic<bool> release{false};
    std::atomic<bool> blocked{false};
    std::atomic<bool> done{false};
    std::atomic<bool> unblocked{false};
    pool.Schedule([&] {
      blocked = true;
      while (!release.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
      unblocked = true;
    });
    ASSERT_TRUE(test::Eventually([&] { return blocked.load(); }));
    if (round % 2 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(15));  // the pool settles
    pool.Schedule([&] { done = true; });
    const bool ran = test::Eventually([&] { return done.load(); }, 5);
    release = true;
    // The blocked task refers to this round's variables.
    ASSERT_TRUE(test::Eventually([&] { return unblocked.load() && done.load(); }));
    ASSERT_TRUE(ran) << "round " << round;
  }
}

TEST(ThreadPool, SlowTasksSpreadOverThreads) {
  ThreadPool pool(4);
  std::mutex mu;
  std::set<std::thread::id> ids;
  test::Latch latch(200);
  for (int i = 0; i < 200; i++) {
    pool.Schedule([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      {
        std::lock_guard<std::mutex> l(mu);
        ids.insert(std::this_thread::get_id());
      }
      latch.CountDown();
    });
  }
  latch.Wait();
  ASSERT_GE(ids.size(), 2u);
}

// Tasks that come one at a time, each well after the last: a spin after a
// task never finds the next one, and the pool soon stops spinning instead of
// burning kSpin of a core per task. Once tasks come close together again,
// spinning finds them and resumes.
TEST(ThreadPool, SpinsOnlyWhileSpinningFindsTasks) {
  ThreadPool pool(2);
  std::atomic<int> done{0};
  constexpr int kSparse = 1000;
  for (int i = 0; i < kSparse; i++) {
    pool.Schedule([&] { done.fetch_add(1); });
    std::this_thread::sleep_for(std::chrono::microseconds(300));
  }
  ASSERT_TRUE(test::Eventually([&] { return done.load() == kSparse; }));
  const uint64_t sparse = pool.spins();
  // A few misses turn it off; one chance in 16 still spins.
  ASSERT_LT(sparse, kSparse / 8u) << sparse << " spins for " << kSparse << " sparse tasks";

  // Tasks every few microseconds, each found by the spin after the last,
  // until 100 spins did (at least 100 ms; on a host busy with other work
  // the spinning thread may get a core only now and then, so up to 10 s).
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + std::chrono::milliseconds(100);
  const auto give_up = start + std::chrono::seconds(10);
  int dense = 0;
  for (auto now = start; now < until || (pool.spins() - sparse <= 100u && now < give_up);
       now = std::chrono::steady_clock::now()) {
    pool.Schedule([&] { done.fetch_add(1); });
    dense++;
    const auto next = std::chrono::steady_clock::now() + std::chrono::microseconds(5);
    while (std::chrono::steady_clock::now() < next) {
    }
  }
  ASSERT_TRUE(test::Eventually([&] { return done.load() == kSparse + dense; }));
  ASSERT_GT(pool.spins() - sparse, 100u) << "spins among " << dense << " dense tasks";
}

#if defined(__linux__)
// Engine threads must not preempt the event loop that wakes them (see the
// class comment): each runs under SCHED_BATCH.
TEST(ThreadPool, ThreadsYieldToTheEventLoop) {
  ThreadPool pool(3);
  std::mutex mu;
  std::set<int> policies;
  std::atomic<int> done{0};
  for (int i = 0; i < 64; i++) {
    pool.Schedule([&] {
      {
        std::lock_guard<std::mutex> l(mu);
        policies.insert(sched_getscheduler(0));
      }
      done.fetch_add(1);
    });
  }
  ASSERT_TRUE(test::Eventually([&] { return done.load() == 64; }));
  std::lock_guard<std::mutex> l(mu);
  ASSERT_EQ(policies.size(), 1u);
  ASSERT_EQ(*policies.begin(), SCHED_BATCH);
}
#endif

}  // namespace oyster
