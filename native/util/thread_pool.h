// ThreadPool runs the engine's blocking work (file I/O, index builds) on a
// fixed set of threads so that the caller's thread (the JavaScript event loop)
// never waits for a disk.
//
// Threads are woken sparingly: short tasks (reads served from the page cache)
// are best run by one awake thread, since every extra runnable thread takes
// CPU from the event loop and costs futex round trips; tasks that block on
// the disk make the backlog grow, and that wakes more threads. A thread that
// runs out of work spins briefly before it sleeps: under load the next task
// arrives within microseconds, and waking a sleeper would cost the
// scheduling thread (the event loop) a futex call and the sleeper a context
// switch for every task.
//
// On Linux the threads run under SCHED_BATCH: a woken engine thread then
// waits for a free core or for the event loop to yield instead of preempting
// it. On a host with fewer cores than busy processes (several nodes, or a
// node beside other services), the preemption cost the event loop a context
// switch per task in the middle of its turn; with an idle core the woken
// thread runs at once as before.

#ifndef OYSTER_UTIL_THREAD_POOL_H_
#define OYSTER_UTIL_THREAD_POOL_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace oyster {

// Where the engine schedules its background work.
class Executor {
 public:
  virtual ~Executor() = default;
  virtual void Schedule(std::function<void()> task) = 0;
};

class ThreadPool final : public Executor {
 public:
  explicit ThreadPool(int threads);
  // Runs every task already scheduled, then joins the threads.
  ~ThreadPool() override;

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Schedule(std::function<void()> task) override;
  int size() const { return static_cast<int>(threads_.size()); }
  // Spins for a new task begun so far (see kSpinMiss).
  uint64_t spins();

 private:
  using Clock = std::chrono::steady_clock;
  struct Task {
    std::function<void()> fn;
    Clock::time_point queued;
  };

  // Another thread is woken when the backlog per awake thread exceeds this,
  // or when the oldest task has waited longer than kMaxWait (the awake
  // threads are probably blocked on the disk).
  static constexpr size_t kBacklogPerThread = 32;
  static constexpr std::chrono::microseconds kMaxWait{1000};
  // Schedule applies the kMaxWait rule only when a task arrives, so one
  // sleeping thread, the watcher, also applies it on a timer; otherwise a task
  // queued behind blocked threads waits for them if no other task follows.
  // It looks every kMaxWait while some thread is awake, and every kIdleWatch
  // while none is (only to notice a thread that another wake-up woke).
  static constexpr std::chrono::milliseconds kIdleWatch{10};

  // How long one thread at a time spins for a new task before it sleeps.
  static constexpr std::chrono::microseconds kSpin{50};
  // Whether spinning pays is judged by its outcomes: a spin that finds a
  // task adds 1 to spin_score_, one that does not takes kSpinMiss off
  // (bounded by ±kSpinScoreBound); the threads spin while the score is not
  // negative, i.e. while at least kSpinMiss of kSpinMiss + 1 spins found a
  // task. Below, one chance in kSpinProbe still spins, so the score follows
  // the load back up. A spin that finds nothing burns kSpin of a core that
  // the event loop, or other processes on a busy host, could have used.
  static constexpr int kSpinMiss = 2;
  static constexpr int kSpinScoreBound = 16;
  static constexpr unsigned kSpinProbe = 16;

  void Run();
  // Spins (mu_ not held) until a task is queued or kSpin has passed; true if one was.
  bool SpinForTask();
  // Decides (with mu_ held) whether to wake a sleeper; if so, counts it awake.
  bool ShouldWakeLocked(Clock::time_point now);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> tasks_;
  int awake_ = 0;     // threads running or looking for a task, woken ones included
  int sleeping_ = 0;  // threads waiting for a wake-up
  int wakeups_ = 0;   // wake-ups granted and not yet consumed
  int spin_score_ = 0;       // see kSpinMiss
  unsigned spin_chances_ = 0;  // chances to spin passed up while the score is negative
  uint64_t spins_ = 0;
  bool watching_ = false;  // a sleeping thread is the watcher
  bool stopping_ = false;
  bool spinning_ = false;            // a thread is in SpinForTask
  std::atomic<size_t> queued_{0};    // tasks_.size(), readable without mu_
  std::vector<std::thread> threads_;
};

}  // namespace oyster

#endif  // OYSTER_UTIL_THREAD_POOL_H_
