// The CPU threads every batch uses: parallel_for over [0, count) in chunks, on a
// pool of worker threads that block between loops (they never spin waiting for
// work). On a machine shared with other jobs a spinning worker takes the time
// slice the thread it waits for needs (OpenMP's default wait policy: a training
// epoch 10x slower with --threads 2 than with 1 beside one other process,
// bench/results/threads_busy_2026-11-28.md); a blocked one costs nothing.
//
// The calling thread is worker 0 and takes chunks too; pool threads 1..t-1 are
// started on first use and kept. Chunks are handed out in order from a shared
// counter, so which worker runs a chunk varies from call to call: a body must
// give the same result for an element whichever worker runs it (per-worker
// scratch only). A loop started from inside another loop's body, or from a
// second thread while the pool is busy, runs on its calling thread alone (worker
// 0), with the same results.
#pragma once

#include <functional>

namespace impulse {

// The threads a request stands for: 0 = all cores; otherwise 1 .. max_threads().
// Throws Error naming the value outside that range.
int resolve_threads(int threads);
// The most threads a loop may ask for: four times the cores, at least 64.
int max_threads();

// Runs body(worker, begin, end) over [0, count) in chunks on `threads` threads
// (0 = all cores). The first exception a body throws is rethrown on the calling
// thread once every worker has stopped (the other chunks are skipped).
void parallel_for(int count, int threads, const std::function<void(int worker, int begin, int end)>& body);

}  // namespace impulse
