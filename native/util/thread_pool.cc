#include "util/thread_pool.h"

#include <algorithm>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace oyster {

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) threads = 1;
  {
    std::lock_guard<std::mutex> l(mu_);
    awake_ = threads;
  }
  for (int i = 0; i < threads; i++) threads_.emplace_back([this] { Run(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

uint64_t ThreadPool::spins() {
  std::lock_guard<std::mutex> l(mu_);
  return spins_;
}

bool ThreadPool::SpinForTask() {
  const Clock::time_point until = Clock::now() + kSpin;
  do {
    for (int i = 0; i < 16; i++) {
      if (queued_.load(std::memory_order_relaxed) > 0) return true;
#if defined(__x86_64__) || defined(__i386__)
      _mm_pause();
#elif defined(__aarch64__)
      asm volatile("yield");
#endif
    }
  } while (Clock::now() < until);
  return false;
}

bool ThreadPool::ShouldWakeLocked(Clock::time_point now) {
  if (sleeping_ == 0 || tasks_.empty()) return false;
  if (awake_ > 0 && tasks_.size() <= kBacklogPerThread * static_cast<size_t>(awake_) &&
      now - tasks_.front().queued < kMaxWait) {
    return false;
  }
  sleeping_--;
  awake_++;
  wakeups_++;
  return true;
}

void ThreadPool::Schedule(std::function<void()> task) {
  bool wake;
  {
    std::lock_guard<std::mutex> l(mu_);
    const Clock::time_point now = Clock::now();
    tasks_.push_back(Task{std::move(task), now});
    queued_.store(tasks_.size(), std::memory_order_relaxed);
    wake = ShouldWakeLocked(now);
  }
  if (wake) cv_.notify_one();
}

void ThreadPool::Run() {
#if defined(__linux__)
  // Best effort (see the class comment): where a seccomp filter refuses it,
  // the thread keeps the default policy and the pool works as before.
  sched_param batch{};
  (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch);
#endif
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    if (!tasks_.empty()) {
      std::function<void()> task = std::move(tasks_.front().fn);
      tasks_.pop_front();
      queued_.store(tasks_.size(), std::memory_order_relaxed);
      bool wake = ShouldWakeLocked(Clock::now());
      l.unlock();
      if (wake) cv_.notify_one();
      task();
      // What the task holds is let go of before the lock is taken again: a
      // destructor may schedule work (a stream aborted as its last owner goes).
      task = nullptr;
      l.lock();
      continue;
    }
    if (stopping_) return;  // drained
    if (!spinning_ && (spin_score_ >= 0 || ++spin_chances_ % kSpinProbe == 0)) {
      spinning_ = true;
      spins_++;
      l.unlock();
      const bool found = SpinForTask();
      l.lock();
      spinning_ = false;
      spin_score_ = found ? std::min(spin_score_ + 1, kSpinScoreBound) : std::max(spin_score_ - kSpinMiss, -kSpinScoreBound);
      if (found || !tasks_.empty()) continue;
    }
    awake_--;
    sleeping_++;
    bool watcher = false;
    while (wakeups_ == 0 && !stopping_) {
      if (!watching_) watching_ = watcher = true;
      if (!watcher) {
        cv_.wait(l);
        continue;
      }
      cv_.wait_for(l, awake_ > 0 ? kMaxWait : std::chrono::microseconds(kIdleWatch));
      // A wake-up granted here is taken by this thread (the loop ends).
      if (wakeups_ == 0) ShouldWakeLocked(Clock::now());
    }
    if (watcher) {
      watching_ = false;
      if (sleeping_ > 0 && !stopping_) cv_.notify_one();  // another sleeper takes over the watch
    }
    if (wakeups_ > 0) {
      wakeups_--;  // the waker already counted this thread awake
    } else {
      sleeping_--;  // stopping: count ourselves awake again to drain
      awake_++;
    }
  }
}

}  // namespace oyster
