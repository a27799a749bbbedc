#include "host/batch/parallel.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "solvers/error.h"

namespace impulse {

void ThreadChoice::record(double gain) {
  if (parallel_) {
    gain_ = calls_ == 0 ? gain : 0.75 * gain_ + 0.25 * gain;
    calls_ = 1;
    if (gain_ < kKeep) {  // the other threads cost more than they gave: run alone
      parallel_ = false;
      wait_ = backoff_;
      calls_ = 0;
    }
    return;
  }
  // a probe, run with the threads while this loop runs alone
  if (gain >= kReturn) {
    parallel_ = true;
    gain_ = gain;
    calls_ = 1;
    backoff_ = kFirstBackoff;
  } else {
    backoff_ = std::min(kMaxBackoff, 2 * backoff_);
    wait_ = backoff_;
  }
}

bool ThreadChoice::next_parallel() {
  if (parallel_) return true;
  if (wait_ > 0) {
    --wait_;
    return false;
  }
  return true;  // the probe
}

namespace {

using Clock = std::chrono::steady_clock;

// set while this thread runs a loop's body: a loop started there runs on it alone
thread_local bool t_in_loop = false;

struct InLoop {
  bool was = t_in_loop;
  InLoop() { t_in_loop = true; }
  ~InLoop() { t_in_loop = was; }
};

int cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// One loop of the pool: what a worker copies when it joins.
struct Job {
  const std::function<void(int, int, int)>* body = nullptr;
  int t = 1, n_chunks = 0, chunk = 1, count = 0;
  uint32_t generation = 0;
};

// The caller's processor seconds: the time the system gave it, whatever else ran meanwhile.
double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// One loop at a time. A chunk is claimed from one 64-bit word, the loop's
// generation (high half) and the next chunk (low half): a worker that wakes
// after its loop ended claims nothing and touches none of the loop's data, so
// the caller waits for the chunks to be done, never for a worker the system
// has not yet scheduled.
class Pool {
 public:
  // never destroyed: a loop run from a static's destructor, or a body that calls
  // exit(), finds the pool whole; its threads, blocked, end with the process
  static Pool& instance() {
    static Pool* p = new Pool;
    return *p;
  }

  std::mutex& owner() { return run_; }

  // Runs the loop on t threads (the caller holds owner()); returns the gain:
  // the seconds the loop would have taken on the caller alone (its processor
  // seconds per element, times the elements) over the seconds it took.
  // A run that had to start threads returns no gain (0): their start is not the loop's cost.
  double run(int t, int n_chunks, int chunk, int count, const std::function<void(int, int, int)>& body) {
    bool started = false;
    Job job;
    {
      std::lock_guard<std::mutex> g(m_);
      while (static_cast<int>(threads_.size()) < t - 1) {
        const int index = static_cast<int>(threads_.size()) + 1;
        threads_.emplace_back([this, index] { worker(index); });
        started = true;
      }
      job.body = &body;
      job.t = t;
      job.n_chunks = n_chunks;
      job.chunk = chunk;
      job.count = count;
      job.generation = ++generation_;
      job_ = job;
      done_.store(0);
      failed_.store(false);
      first_ = nullptr;
      claim_.store(uint64_t(job.generation) << 32, std::memory_order_release);
    }
    const Clock::time_point start = Clock::now();
    work_.notify_all();
    const double cpu0 = thread_seconds();
    const int mine = take_chunks(0, job);
    const double cpu = thread_seconds() - cpu0;
    // the last chunks are most often a few microseconds away: look before sleeping
    const Clock::time_point spin_until = Clock::now() + std::chrono::microseconds(20);
    while (done_.load(std::memory_order_acquire) < n_chunks && Clock::now() < spin_until) {
    }
    std::exception_ptr first;
    {
      std::unique_lock<std::mutex> g(m_);
      finished_.wait(g, [&] { return done_.load(std::memory_order_acquire) == n_chunks; });
      first.swap(first_);
    }
    if (first) std::rethrow_exception(first);
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    if (started) return 0;
    if (mine == 0 || wall <= 0) return 1;  // nothing to judge by
    return cpu / mine * count / wall;
  }

 private:
  // runs chunks of the job until none is left; returns the elements it ran
  int take_chunks(int worker, const Job& job) {
    const InLoop in_loop;
    int took = 0;
    uint64_t v = claim_.load(std::memory_order_acquire);
    while (true) {
      if (uint32_t(v >> 32) != job.generation || int(uint32_t(v)) >= job.n_chunks) return took;
      if (!claim_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      const int c = int(uint32_t(v));
      const int begin = c * job.chunk, end = begin + std::min(job.chunk, job.count - begin);
      if (!failed_.load(std::memory_order_relaxed)) {
        try {
          (*job.body)(worker, begin, end);
        } catch (...) {
          std::lock_guard<std::mutex> g(m_);
          if (!first_) first_ = std::current_exception();
          failed_.store(true);
        }
        took += end - begin;
      }
      if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == job.n_chunks) {
        std::lock_guard<std::mutex> g(m_);
        finished_.notify_one();
      }
      v = claim_.load(std::memory_order_acquire);
    }
  }
  void worker(int index) {
    uint32_t seen = 0;
    std::unique_lock<std::mutex> g(m_);
    while (true) {
      work_.wait(g, [&] { return generation_ != seen; });
      seen = generation_;
      const Job job = job_;
      if (index >= job.t) continue;  // this loop asked for fewer threads
      g.unlock();
      take_chunks(index, job);
      g.lock();
    }
  }

  std::mutex run_;  // held by the caller of the loop in progress
  std::mutex m_;    // guards job_, generation_, first_ and the threads
  std::condition_variable work_, finished_;
  std::vector<std::thread> threads_;
  Job job_;
  uint32_t generation_ = 0;
  std::atomic<uint64_t> claim_{0};
  std::atomic<int> done_{0};
  std::atomic<bool> failed_{false};
  std::exception_ptr first_;
};

// What each loop of the program chose, by the place that calls it, the size of
// its batch (a power of two) and its threads; touched only by the pool's owner.
class Choices {
 public:
  ThreadChoice& at(const void* site, int count, int threads) {
    int bucket = 0;
    while (bucket < 31 && (1 << bucket) < count) ++bucket;
    const uint64_t key = (uint64_t(reinterpret_cast<uintptr_t>(site)) << 16) ^ (uint64_t(bucket) << 8) ^
                         uint64_t(threads & 0xff);
    return entries_[key];  // a new loop starts on its threads
  }

 private:
  std::unordered_map<uint64_t, ThreadChoice> entries_;
};

Choices& choices() {
  static Choices* c = new Choices;  // never destroyed, as the pool
  return *c;
}

void run_alone(int n_chunks, int chunk, int count, const std::function<void(int, int, int)>& body) {
  const InLoop in_loop;
  for (int c = 0; c < n_chunks; ++c) body(0, c * chunk, c * chunk + std::min(chunk, count - c * chunk));
}

}  // namespace

int max_threads() { return std::max(64, 4 * cores()); }

int resolve_threads(int threads) {
  if (threads < 0) throw Error("threads must be >= 0 (0 = all cores), got " + std::to_string(threads));
  if (threads > max_threads())
    throw Error("threads: " + std::to_string(threads) + " is more than this machine can use (at most " +
                std::to_string(max_threads()) + ": four times its " + std::to_string(cores()) +
                " cores, or 64)");
  return threads == 0 ? cores() : threads;
}

void parallel_for(int count, int threads, const std::function<void(int worker, int begin, int end)>& body) {
  const int t = std::min(resolve_threads(threads), std::max(count, 1));
  // chunks small enough to balance uneven iteration counts, large enough to
  // keep scheduling overhead negligible
  const int chunk = std::max(1, std::min(64, count / (8 * t)));
  const int n_chunks = count / chunk + (count % chunk != 0);  // no overflow near INT_MAX
  if (t > 1 && !t_in_loop) {
    Pool& pool = Pool::instance();
    std::unique_lock<std::mutex> owner(pool.owner(), std::try_to_lock);
    if (owner.owns_lock()) {  // otherwise a nested or concurrent loop: the caller runs it alone
      ThreadChoice& choice = choices().at(__builtin_return_address(0), count, t);
      if (choice.next_parallel()) {
        const double gain = pool.run(t, n_chunks, chunk, count, body);
        if (gain > 0) choice.record(gain);
        return;
      }
      owner.unlock();
    }
  }
  run_alone(n_chunks, chunk, count, body);
}

}  // namespace impulse
