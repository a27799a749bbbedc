// Problems per second of the batched conic-QP solver on the shapes the
// learning and simulation layers solve: the cube's ContactNets loss QP (exact
// friction cones and the octagon) and an Anitescu step; batch sizes 1..1e6
// (args; 1e5 on the CPU, where 1e6 double problems need 12 GB), 1 and 2 threads, cold and warm-started, double and float; the CUDA
// backend when a device is present. Problems are generated once per shape and
// reused (a batch of size B cycles through a pool of generated problems).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "host/batch/generate.h"
#include "host/batch/golden.h"
#include "host/batch/qp_batch.h"
#include "kernels/qp_kernels.h"

namespace impulse {
namespace {

enum Shape { kCubeCone = 0, kCubeOctagon = 1, kAnitescu = 2 };
constexpr int kPool = 4096;

const QpBatch<double>& pool(Shape s) {
  static std::map<int, QpBatch<double>> cache;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(s);
  if (it == cache.end()) {
    GeneratedQps g = s == kCubeCone      ? cube_loss_batch(kPool, FrictionModel::kCone, 1)
                     : s == kCubeOctagon ? cube_loss_batch(kPool, FrictionModel::kOctagon, 1)
                                         : anitescu_step_batch(kPool, 1);
    it = cache.emplace(s, std::move(g.batch)).first;
  }
  return it->second;
}

// a batch of `size` problems drawn cyclically from the pool
template <class T>
QpBatch<T> make_batch(Shape s, int size) {
  const QpBatch<double>& p = pool(s);
  QpBatch<T> b = QpBatch<T>::with_pattern(size, p.n, p.cones, p.a_row_ptr, p.a_col);
  const int n = p.n, m = p.m(), nnz = p.nnz();
  for (int k = 0; k < size; ++k) {
    const int src = k % kPool;
    std::copy_n(p.P.begin() + size_t(src) * n * n, n * n, b.P.begin() + size_t(k) * n * n);
    std::copy_n(p.q.begin() + size_t(src) * n, n, b.q.begin() + size_t(k) * n);
    std::copy_n(p.A.begin() + size_t(src) * nnz, nnz, b.A.begin() + size_t(k) * nnz);
    std::copy_n(p.b.begin() + size_t(src) * m, m, b.b.begin() + size_t(k) * m);
  }
  return b;
}

template <class T>
void BM_Qp(benchmark::State& state, Shape shape, Backend backend, bool warm) {
  const int size = static_cast<int>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const bool lanes = state.range(2) != 0;  // CPU: lane groups (1) or one problem at a time (0)
  if (backend == Backend::kCuda && !cuda::available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const QpBatch<T> batch = make_batch<T>(shape, size);
  QpSettings<T> st;
  BatchOptions opt;
  opt.backend = backend;
  opt.threads = threads;
  opt.lanes = lanes;
  QpSolutions<T> sol;
  solve_batch(batch, st, opt, sol);  // warm-up, and the warm start's source
  const std::vector<T> x0 = sol.x, y0 = sol.y;
  opt.warm_start = warm;
  long iters = 0;
  for (auto _ : state) {
    if (warm) {
      state.PauseTiming();
      sol.x = x0;
      sol.y = y0;
      state.ResumeTiming();
    }
    solve_batch(batch, st, opt, sol);
    for (int k : sol.iterations) iters += k;
  }
  state.SetItemsProcessed(state.iterations() * size);
  state.counters["iters"] = double(iters) / (double(state.iterations()) * size);
  state.counters["us_per_problem_thread"] = benchmark::Counter(
      double(size) * state.iterations() / threads, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// The device alone: the batch is uploaded once and stays resident; each
// timed iteration is one kernel launch over the whole batch, timed by CUDA
// events (no transfers, no host-side transposition). This is the figure to
// set against the device's limits; BM_Qp with the CUDA backend includes the
// transfers a caller with host data pays.
// kept: every solve keeps its factorization and each timed solve re-solves from it
// (DeviceQpBatch::keep_factors, solve(..., reuse)), warm
template <class T>
void BM_GpuKernel(benchmark::State& state, Shape shape, bool warm, bool kept = false) {
  if (!cuda::available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const int size = static_cast<int>(state.range(0));
  const QpBatch<T> batch = make_batch<T>(shape, size);
  cuda::DeviceQpBatch<T> dev;
  dev.keep_factors(kept);
  dev.upload(batch.device_arrays());
  QpSettings<T> st;
  dev.solve(st, false);  // warm-up (and the warm start's source)
  std::vector<int> iters(size_t(size), 0), status(size_t(size), 0);
  for (auto _ : state) state.SetIterationTime(dev.solve(st, warm, kept) * 1e-3);
  cuda::HostQpResults<T> r;
  r.iterations = iters.data();
  r.status = status.data();
  dev.download(r);
  long it = 0, solved = 0;
  for (int k = 0; k < size; ++k) {
    it += iters[size_t(k)];
    solved += status[size_t(k)] == int(SolveStatus::kSolved);
  }
  state.SetItemsProcessed(state.iterations() * size);
  state.counters["iters"] = double(it) / size;
  state.counters["solved_frac"] = double(solved) / size;
}

void gpu_kernel_args(benchmark::internal::Benchmark* b) {
  for (int size : {10000, 100000, 1000000}) b->Arg(size);
  b->Unit(benchmark::kMillisecond)->UseManualTime();
}

void BM_GpuKernelDouble(benchmark::State& st, Shape s, bool warm) { BM_GpuKernel<double>(st, s, warm); }
void BM_GpuKernelFloat(benchmark::State& st, Shape s, bool warm) { BM_GpuKernel<float>(st, s, warm); }
void BM_GpuKernelFloatKept(benchmark::State& st, Shape s) { BM_GpuKernel<float>(st, s, true, true); }

// The CPU, one problem at a time (qp_admm_solve, one thread, a workspace per problem):
// a warm re-solve after q changed by 0.1% (as consecutive Adam steps change it, and
// bench/gpu_counts.sh's warm case), with the factorization kept (reuse: OSQP's update of
// q) or set up afresh. Each timed pass starts from the same iterates and workspaces.
template <class T>
void BM_CpuResolve(benchmark::State& state, Shape shape, bool reuse) {
  const int size = static_cast<int>(state.range(0));
  const QpBatch<T> batch = make_batch<T>(shape, size);
  QpBatch<T> next = batch;
  for (T& v : next.q) v *= T(1.001);
  const int n = batch.n, m = batch.m(), len = qp_work_host_size(n, m);
  const QpSettings<T> st;
  std::vector<T> work(size_t(size) * len, T(0)), x(size_t(size) * n), y(size_t(size) * m);
  auto solve = [&](const QpBatch<T>& b, int k, bool warm, bool re) {
    return qp_admm_solve(batch.shape(), b.problem(k), unit_view(x.data() + size_t(k) * n), unit_view(y.data() + size_t(k) * m),
                         QpWork<T, UnitStride>::carve(unit_view(qp_work_align(work.data() + size_t(k) * len)), n, m, true),
                         st, warm, re);
  };
  for (int k = 0; k < size; ++k) solve(batch, k, false, false);  // the first solve, keeping its factorization
  const std::vector<T> work0 = work, x0 = x, y0 = y;
  long iters = 0;
  for (auto _ : state) {
    state.PauseTiming();
    work = work0, x = x0, y = y0;
    state.ResumeTiming();
    for (int k = 0; k < size; ++k) iters += solve(next, k, true, reuse).iterations;
  }
  state.SetItemsProcessed(state.iterations() * size);
  state.counters["iters"] = double(iters) / (double(state.iterations()) * size);
}
void BM_CpuResolveFloat(benchmark::State& st, Shape s, bool reuse) { BM_CpuResolve<float>(st, s, reuse); }
void BM_CpuResolveDouble(benchmark::State& st, Shape s, bool reuse) { BM_CpuResolve<double>(st, s, reuse); }

// arguments: batch size, threads, lanes (1: lane groups, 0: one at a time)
void cpu_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"batch", "threads", "lanes"});
  for (int lanes : {1, 0})
    for (int threads : {1, 2})
      for (int size : {1, 100, 10000, 100000}) b->Args({size, threads, lanes});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
void gpu_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"batch", "threads", "lanes"});
  for (int size : {1, 10000, 1000000}) b->Args({size, 1, 1});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

void BM_QpDouble(benchmark::State& st, Shape s, Backend b, bool warm) { BM_Qp<double>(st, s, b, warm); }
void BM_QpFloat(benchmark::State& st, Shape s, Backend b, bool warm) { BM_Qp<float>(st, s, b, warm); }

#define IMPULSE_QP_BENCH(name, T, shape, backend, warm, args) \
  BENCHMARK_CAPTURE(BM_Qp##T, name, shape, backend, warm)->Apply(args)

IMPULSE_QP_BENCH(cube_cone_double_cold, Double, kCubeCone, Backend::kCpu, false, cpu_args);
IMPULSE_QP_BENCH(cube_cone_double_warm, Double, kCubeCone, Backend::kCpu, true, cpu_args);
IMPULSE_QP_BENCH(cube_cone_float_cold, Float, kCubeCone, Backend::kCpu, false, cpu_args);
IMPULSE_QP_BENCH(cube_octagon_double_cold, Double, kCubeOctagon, Backend::kCpu, false, cpu_args);
IMPULSE_QP_BENCH(cube_octagon_float_cold, Float, kCubeOctagon, Backend::kCpu, false, cpu_args);
IMPULSE_QP_BENCH(anitescu_double_cold, Double, kAnitescu, Backend::kCpu, false, cpu_args);
IMPULSE_QP_BENCH(anitescu_float_cold, Float, kAnitescu, Backend::kCpu, false, cpu_args);
IMPULSE_QP_BENCH(gpu_cube_cone_float_cold, Float, kCubeCone, Backend::kCuda, false, gpu_args);
IMPULSE_QP_BENCH(gpu_cube_cone_float_warm, Float, kCubeCone, Backend::kCuda, true, gpu_args);
IMPULSE_QP_BENCH(gpu_anitescu_float_cold, Float, kAnitescu, Backend::kCuda, false, gpu_args);
BENCHMARK_CAPTURE(BM_GpuKernelFloat, kernel_cube_cone_float_cold, kCubeCone, false)->Apply(gpu_kernel_args);
BENCHMARK_CAPTURE(BM_GpuKernelFloat, kernel_cube_cone_float_warm, kCubeCone, true)->Apply(gpu_kernel_args);
BENCHMARK_CAPTURE(BM_GpuKernelFloatKept, kernel_cube_cone_float_kept, kCubeCone)->Apply(gpu_kernel_args);
BENCHMARK_CAPTURE(BM_CpuResolveFloat, resolve_cube_cone_float_fresh, kCubeCone, false)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CpuResolveFloat, resolve_cube_cone_float_kept, kCubeCone, true)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CpuResolveDouble, resolve_cube_cone_double_fresh, kCubeCone, false)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CpuResolveDouble, resolve_cube_cone_double_kept, kCubeCone, true)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GpuKernelDouble, kernel_cube_cone_double_cold, kCubeCone, false)->Apply(gpu_kernel_args);
BENCHMARK_CAPTURE(BM_GpuKernelFloat, kernel_cube_octagon_float_cold, kCubeOctagon, false)->Apply(gpu_kernel_args);
BENCHMARK_CAPTURE(BM_GpuKernelFloat, kernel_anitescu_float_cold, kAnitescu, false)->Apply(gpu_kernel_args);


// The 1,000 real ContactNets loss QPs (../shared/data/contactnets_qps, "train"),
// double, CPU lanes, eps 1e-6 as the tests solve them; the data folder from
// IMPULSE_DATA (default: the build's IMPULSE_DATA_DIR, docs/data.md). Skipped
// when absent.
void BM_RealContactNetsQps(benchmark::State& state) {
  const char* env = std::getenv("IMPULSE_DATA");
  const std::string root = env != nullptr && *env != '\0' ? env : IMPULSE_SHARED_DATA_DIR;
  const std::string dir = root + "/contactnets_qps";
  static GoldenQps g;
  static bool loaded = false;
  if (!loaded) {
    try {
      g = load_golden_qps(dir, "train");
    } catch (const std::exception& e) {
      state.SkipWithError((std::string("real QPs not loaded: ") + e.what() +
                          " (bash data/fetch.sh contactnets_qps says where to get them)").c_str());
      return;
    }
    loaded = true;
  }
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-6;
  BatchOptions opt;
  opt.threads = static_cast<int>(state.range(0));
  QpSolutions<double> sol;
  long iters = 0;
  for (auto _ : state) {
    solve_batch(g.batch, st, opt, sol);
    for (int k = 0; k < sol.size; ++k) iters += sol.iterations[k];
  }
  state.SetItemsProcessed(state.iterations() * g.batch.size);
  state.counters["iters"] = double(iters) / (double(state.iterations()) * g.batch.size);
}
BENCHMARK(BM_RealContactNetsQps)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace impulse

BENCHMARK_MAIN();
