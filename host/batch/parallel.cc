#include "host/batch/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "solvers/error.h"

namespace impulse {
namespace {

// set while this thread runs a loop's body: a loop started there runs on it alone
thread_local bool t_in_loop = false;

struct InLoop {
  bool was = t_in_loop;
  InLoop() { t_in_loop = true; }
  ~InLoop() { t_in_loop = was; }
};

int cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// One loop at a time: a job, the workers that take part, and who has finished.
class Pool {
 public:
  static Pool& instance() {
    static Pool p;
    return p;
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> g(m_);
      stop_ = true;
    }
    work_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // false when the pool is busy (a nested or concurrent loop): the caller runs alone
  bool try_run(int t, int n_chunks, int chunk, int count, const std::function<void(int, int, int)>& body) {
    std::unique_lock<std::mutex> owner(run_, std::try_to_lock);
    if (!owner.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> g(m_);
      while (static_cast<int>(threads_.size()) < t - 1) {
        const int index = static_cast<int>(threads_.size()) + 1;
        threads_.emplace_back([this, index] { worker(index); });
      }
      body_ = &body;
      t_ = t;
      n_chunks_ = n_chunks;
      chunk_ = chunk;
      count_ = count;
      next_.store(0);
      failed_.store(false);
      first_ = nullptr;
      remaining_ = t - 1;
      ++generation_;
    }
    work_.notify_all();
    take_chunks(0);
    std::exception_ptr first;
    {
      std::unique_lock<std::mutex> g(m_);
      done_.wait(g, [this] { return remaining_ == 0; });
      body_ = nullptr;
      first = first_;
    }
    if (first) std::rethrow_exception(first);
    return true;
  }

 private:
  void take_chunks(int worker) {
    const InLoop in_loop;
    for (int c = next_.fetch_add(1); c < n_chunks_; c = next_.fetch_add(1)) {
      if (failed_.load(std::memory_order_relaxed)) continue;
      try {
        (*body_)(worker, c * chunk_, std::min(count_, (c + 1) * chunk_));
      } catch (...) {
        std::lock_guard<std::mutex> g(m_);
        if (!first_) first_ = std::current_exception();
        failed_.store(true);
      }
    }
  }
  void worker(int index) {
    unsigned long seen = 0;
    std::unique_lock<std::mutex> g(m_);
    while (true) {
      work_.wait(g, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (index >= t_) continue;  // this loop asked for fewer threads
      g.unlock();
      take_chunks(index);
      g.lock();
      if (--remaining_ == 0) done_.notify_one();
    }
  }

  std::mutex run_;  // held by the caller of the loop in progress
  std::mutex m_;    // guards the job's fields and the counters below
  std::condition_variable work_, done_;
  std::vector<std::thread> threads_;
  const std::function<void(int, int, int)>* body_ = nullptr;
  int t_ = 1, n_chunks_ = 0, chunk_ = 1, count_ = 0, remaining_ = 0;
  unsigned long generation_ = 0;
  bool stop_ = false;
  std::atomic<int> next_{0};
  std::atomic<bool> failed_{false};
  std::exception_ptr first_;
};

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
  const int n_chunks = (count + chunk - 1) / chunk;
  if (t > 1 && !t_in_loop && Pool::instance().try_run(t, n_chunks, chunk, count, body)) return;
  const InLoop in_loop;
  for (int c = 0; c < n_chunks; ++c) body(0, c * chunk, std::min(count, (c + 1) * chunk));
}

}  // namespace impulse
