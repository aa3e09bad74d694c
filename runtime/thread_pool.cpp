// A small fixed pool: one job at a time, chunks handed out by an atomic
// counter, the caller working alongside the workers. Results never depend on
// the number of threads because chunks are disjoint ranges of independent work.
#include "runtime/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/env_number.h"

namespace kiln {

namespace {

thread_local bool t_in_parallel = false;
thread_local int t_pool_index = 0;                 // 0: not a pool worker
thread_local ChunkObserver* t_observer = nullptr;  // for loops this thread starts

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class ThreadPool {
 public:
  explicit ThreadPool(int n)
      // Polling only pays while every pool thread has a core of its own.
      : spin_ns_(n <= int(std::max(1u, std::thread::hardware_concurrency())) ? kSpinNs : 0) {
    for (int i = 1; i < n; ++i) {
      workers_.emplace_back([this, i] {
        t_pool_index = i;
        work();
      });
    }
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      stop_flag_.store(true);
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  int size() const { return int(workers_.size()) + 1; }

  void run(int64_t n, int64_t chunk, const std::function<void(int64_t, int64_t)>& fn) {
    std::lock_guard<std::mutex> one_job(job_mu_);  // concurrent callers take turns
    int64_t chunks = (n + chunk - 1) / chunk;
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      n_ = n;
      chunk_ = chunk;
      next_.store(0);
      remaining_.store(chunks);
      ++generation_;
    }
    cv_.notify_all();
    drain();
    spin_until([&] { return remaining_.load() == 0 && active_.load() == 0; });
    // Every chunk done is not enough: a worker may still be in drain(),
    // reading n_, chunk_ and next_ after its last chunk. Were the next job
    // set up under it, it could take an index of the old counter as one of
    // the new job's chunks (run twice, `remaining_` short: the caller returns
    // while a chunk still runs). So wait until no worker is in this job.
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return remaining_.load() == 0 && active_ == 0; });
    fn_ = nullptr;
  }

 private:
  void drain() {
    t_in_parallel = true;
    while (true) {
      int64_t c = next_.fetch_add(1);
      int64_t begin = c * chunk_;
      if (begin >= n_) break;
      (*fn_)(begin, std::min(n_, begin + chunk_));
      if (remaining_.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mu_);
        done_cv_.notify_all();
      }
    }
    t_in_parallel = false;
  }

  void work() {
    uint64_t seen = 0;
    while (true) {
      spin_until([&] { return generation_.load() != seen || stop_flag_.load(); });
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || generation_.load() != seen; });
        if (stop_) return;
        seen = generation_.load();
        // A job short enough for its caller to finish alone is over before
        // this worker got here: note its generation and wait for the next.
        if (fn_ == nullptr) continue;
        ++active_;
      }
      drain();
      std::lock_guard<std::mutex> lock(mu_);
      if (--active_ == 0) done_cv_.notify_all();
    }
  }

  // Parallel loops come in quick succession (a kernel's packing, then its
  // product; kernel after kernel). A thread asleep on a condition variable
  // takes a wake-up to join the next loop (~0.1 ms in this KVM guest, more
  // under load), time its caller spends working alone; a caller asleep until
  // the last chunk is done takes one to return. So both poll for up to
  // spin_ns_ before they sleep, as OpenMP runtimes do.
  template <typename Ready>
  void spin_until(const Ready& ready) const {
    if (spin_ns_ == 0) return;
    const int64_t until = steady_ns() + spin_ns_;
    for (int i = 0; !ready(); ++i) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      if ((i & 63) == 63) {
        if (steady_ns() > until) return;
        // Under load the other thread of this job may share this core: let it run.
        std::this_thread::yield();
      }
    }
  }
  static constexpr int64_t kSpinNs = 200'000;

  const int64_t spin_ns_;
  std::vector<std::thread> workers_;
  std::mutex job_mu_, mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
  std::atomic<int64_t> next_{0}, remaining_{0};
  // generation_, active_ and stop_ are written under mu_; generation_ and
  // active_ are atomic (and stop_flag_ mirrors stop_) so that spin_until may
  // poll them without it.
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> active_{0};  // workers inside drain() for the current job
  std::atomic<bool> stop_flag_{false};
  bool stop_ = false;
};

int configured_threads() {
  // KILN_NUM_THREADS: 1 to 2^20 accepted (anything else is warned about once
  // and ignored), at most 256 used; else every hardware thread.
  uint64_t hardware = std::max(1u, std::thread::hardware_concurrency());
  uint64_t n = runtime::env_uint("KILN_NUM_THREADS", hardware, 1, uint64_t(1) << 20);
  return int(n == hardware ? n : std::min<uint64_t>(n, 256));
}

ThreadPool& pool() {
  static ThreadPool* p = new ThreadPool(configured_threads());  // lives until exit
  return *p;
}

}  // namespace

int num_threads() {
  return pool().size();
}

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
  int64_t n = end - begin;
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int threads = num_threads();
  if (t_in_parallel || threads == 1 || n <= grain) {
    fn(begin, end);
    return;
  }
  // A few chunks per thread balance uneven work without much overhead.
  int64_t chunk = std::max(grain, (n + 4 * threads - 1) / (4 * threads));
  if (ChunkObserver* observer = t_observer) {
    pool().run(n, chunk, [&](int64_t b, int64_t e) {
      int64_t t0 = steady_ns();
      fn(begin + b, begin + e);
      observer->chunk(t_pool_index, t0, steady_ns(), begin + b, begin + e);
    });
    return;
  }
  pool().run(n, chunk, [&](int64_t b, int64_t e) { fn(begin + b, begin + e); });
}

ChunkObserver* set_chunk_observer(ChunkObserver* observer) {
  ChunkObserver* old = t_observer;
  t_observer = observer;
  return old;
}

int pool_thread_index() {
  return t_pool_index;
}

}  // namespace kiln

extern "C" void kiln_parallel_for(void (*body)(int64_t, int64_t, void*), void* closure, int64_t n,
                                  int64_t grain) {
  kiln::parallel_for(0, n, grain, [&](int64_t b, int64_t e) { body(b, e, closure); });
}
