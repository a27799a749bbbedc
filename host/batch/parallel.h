// The CPU threads every batch uses: parallel_for over [0, count) in chunks, on a
// pool of worker threads that block between loops (they never spin waiting for
// work). The caller waits for the chunks to be done, never for a worker the
// system has not yet scheduled: a late worker finds the loop over and leaves. On a machine shared with other jobs a spinning worker takes the time
// slice the thread it waits for needs (OpenMP's default wait policy: a training
// epoch 10x slower with --threads 2 than with 1 beside one other process,
// bench/results/archive/threads_busy_2026-11-28.md); a blocked one costs nothing.
//
// The calling thread is worker 0 and takes chunks too; pool threads 1..t-1 are
// started on first use and kept. Chunks are handed out in order from a shared
// counter, so which worker runs a chunk varies from call to call: a body must
// give the same result for an element whichever worker runs it (per-worker
// scratch only). A loop started from inside another loop's body, or from a
// second thread while the pool is busy, runs on its calling thread alone (worker
// 0), with the same results.
//
// A loop runs on its threads only while they pay: each run measures its gain
// (the caller's own seconds per element, times the elements, over the loop's
// wall time; processor time, so a caller that the system interrupts does not
// count its waits as work). A loop whose mean gain falls below 1.05 (a busy
// machine that keeps the workers from running, a batch too small to share)
// runs on the caller alone and tries its threads again after 8, 16, ... 256
// calls; a try that gains 1.15 or more brings them back. Which threads run an
// element never changes a result, so neither does this choice.
#pragma once

#include <functional>

namespace impulse {

// The threads a request stands for: 0 = all cores; otherwise 1 .. max_threads().
// Throws Error naming the value outside that range.
int resolve_threads(int threads);
// The most threads a loop may ask for: four times the cores, at least 64.
int max_threads();

// The choice of one loop (a place in the program and a batch size) between its
// threads and its caller alone, from the gains its runs on threads measured.
class ThreadChoice {
 public:
  static constexpr double kKeep = 1.05;   // threads are kept while the mean gain is at least this
  static constexpr double kReturn = 1.15; // a probe this good brings them back
  static constexpr int kFirstBackoff = 8, kMaxBackoff = 256;

  // whether the next call runs on the threads (a probe, when it runs alone)
  bool next_parallel();
  // the gain a call on the threads measured
  void record(double gain);
  bool parallel() const { return parallel_; }

 private:
  bool parallel_ = true;
  double gain_ = 1;
  int calls_ = 0;  // 0 before the first gain on threads, then 1
  int wait_ = 0, backoff_ = kFirstBackoff;
};

// Runs body(worker, begin, end) over [0, count) in chunks on `threads` threads
// (0 = all cores). The first exception a body throws is rethrown on the calling
// thread once every worker has stopped (the other chunks are skipped).
void parallel_for(int count, int threads, const std::function<void(int worker, int begin, int end)>& body);

}  // namespace impulse
