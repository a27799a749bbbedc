// The warp-per-problem QP kernel (kernels/qp_warp_kernels.cu, issue 14) checked
// against the CPU problem by problem, for bench/gpu_counts.sh's simulated counts.
// Built only with -DIMPULSE_GPU_WARP_VARIANT=ON (target impulse_gpu_warp_variant)
// or by bench/gpu_counts.sh.
//
//   gpu_warp_variant --in BATCH.npz [--eps 1e-5] [--max-iter N] [--thread]
//                    [--no-check-input] [--scaling-iters K] [--kept-from FIRST.npz]
// solves the batch (float32) with the warp kernel, solves it on the CPU (one problem
// at a time, the kernel's check schedule: predicted, as the CPU's; the thread kernel's
// reference checks on the fixed schedule) and compares them problem by problem
// (status, input fault, iterations within one check interval, x, y, objective and
// value to 1e-3 relative, as tests/test_gpu.cc's float test); --thread also runs the
// thread-per-problem kernel on the batch (for counts side by side). A warm start is
// taken from the file's x0, y0 when it has them. --no-check-input and
// --scaling-iters measure the set-up's parts (the CPU reference runs the same
// settings). --kept-from: a re-solve that keeps the factorization (DeviceQpBatch::
// keep_factors; qp_admm_solve's `reuse`): FIRST (the same P and A) is solved cold
// first, then BATCH's q and b replace its own and the batch is re-solved from the kept
// factorizations (the CPU reference the same, a workspace per problem); the second
// launch is the one measured. Exit status 1 on any disagreement.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "host/batch/qp_batch.h"
#include "host/batch/qp_file.h"
#include "solvers/qp_admm.h"

namespace impulse {
namespace warpvar {

// solves the batch on the device with a warp per problem (the library's kernel)
template <class T>
void solve_warp(const QpBatch<T>& bt, const QpSettings<T>& st, bool warm, QpSolutions<T>& out) {
  BatchOptions g;
  g.backend = Backend::kCuda;
  g.device_layout = cuda::DeviceLayout::kWarp;
  g.warm_start = warm;
  std::printf("warp kernel: %d blocks of one warp (a problem each), shared memory per block: %zu bytes "
              "(n=%d, m=%d, nnz=%d)\n", bt.size, cuda::warp_shared_bytes(bt.m(), bt.nnz(), sizeof(T)), bt.n, bt.m(),
              bt.nnz());
  solve_batch(bt, st, g, out);
}

// what a comparison found: problems that disagree, those whose status, fault or
// iterations disagree, and the largest relative differences of x, y, objective, value
struct Verdict {
  int bad = 0, hard = 0;
  double worst[4] = {0, 0, 0, 0};
};

// tests/test_gpu.cc's comparison of a device's answers with the CPU's
template <class T>
Verdict compare(const char* what, const QpBatch<T>& bt, const QpSolutions<T>& cpu, const QpSolutions<T>& gpu,
                int check_every, double rtol) {
  const int n = bt.n, m = bt.m();
  int bad = 0, same = 0, hard = 0;
  double wx = 0, wy = 0, wo = 0, wv = 0;
  for (int k = 0; k < bt.size; ++k) {
    std::string why;
    if (cpu.status[k] != gpu.status[k]) why += " status";
    if (cpu.fault[k] != gpu.fault[k]) why += " fault";
    if (std::abs(cpu.iterations[k] - gpu.iterations[k]) > check_every) why += " iterations";
    hard += !why.empty();
    same += cpu.iterations[k] == gpu.iterations[k];
    if (cpu.status[k] != SolveStatus::kInvalidInput) {
      double xs = 1e-30, ys = 1e-30, dx = 0, dy = 0, qx = 0, xpx = 0;
      for (int j = 0; j < n; ++j) {
        xs = std::max(xs, std::abs(double(cpu.x[size_t(k) * n + j])));
        dx = std::max(dx, std::abs(double(cpu.x[size_t(k) * n + j]) - double(gpu.x[size_t(k) * n + j])));
      }
      for (int r = 0; r < m; ++r) {
        ys = std::max(ys, std::abs(double(cpu.y[size_t(k) * m + r])));
        dy = std::max(dy, std::abs(double(cpu.y[size_t(k) * m + r]) - double(gpu.y[size_t(k) * m + r])));
      }
      for (int i = 0; i < n; ++i) {
        double pxi = 0;
        for (int j = 0; j < n; ++j)
          pxi += double(bt.P[size_t(k) * n * n + i * n + j]) * double(cpu.x[size_t(k) * n + j]);
        xpx += double(cpu.x[size_t(k) * n + i]) * pxi;
        qx += std::abs(double(bt.q[size_t(k) * n + i]) * double(cpu.x[size_t(k) * n + i]));
      }
      const double os = std::max({std::abs(double(cpu.objective[k])), std::abs(xpx), qx, 1e-30});
      const double dob = std::abs(double(cpu.objective[k]) - double(gpu.objective[k])) / os;
      const double dv = std::abs(double(cpu.value[k]) - double(gpu.value[k])) /
                        std::max(std::abs(double(cpu.value[k])), os);
      if (dx / xs > rtol) why += " x";
      if (dy / ys > rtol) why += " y";
      if (dob > rtol) why += " objective";
      if (dv > rtol) why += " value";
      wx = std::max(wx, dx / xs), wy = std::max(wy, dy / ys), wo = std::max(wo, dob), wv = std::max(wv, dv);
    }
    if (!why.empty()) {
      ++bad;
      std::printf("  %s problem %d differs:%s (status %d/%d, fault %d/%d, iterations %d/%d, objective %.7g/%.7g)\n",
                  what, k, why.c_str(), int(cpu.status[k]), int(gpu.status[k]), int(cpu.fault[k]),
                  int(gpu.fault[k]), cpu.iterations[k], gpu.iterations[k], double(cpu.objective[k]),
                  double(gpu.objective[k]));
    }
  }
  if (same < bt.size * 3 / 4) {
    ++bad, ++hard;
    std::printf("  %s: only %d of %d problems stopped at the reference's iteration\n", what, same, bt.size);
  }
  std::printf("%s: %d of %d problems disagree; %d stopped at the reference's iteration; largest relative "
              "differences: x %.1e, y %.1e, objective %.1e, value %.1e\n",
              what, bad, bt.size, same, wx, wy, wo, wv);
  Verdict v;
  v.bad = bad, v.hard = hard;
  v.worst[0] = wx, v.worst[1] = wy, v.worst[2] = wo, v.worst[3] = wv;
  return v;
}

// --kept-from: `first` solved cold keeping its factorizations, then bt (its q and b)
// re-solved from them, on the device (warp layout) and on the CPU (qp_admm_solve with
// `reuse`, a workspace per problem, the reference's settings)
template <class T>
void solve_kept(const QpBatch<T>& first, const QpBatch<T>& bt, const QpSettings<T>& st, const QpSettings<T>& ref,
                bool warm, QpSolutions<T>& cpu, QpSolutions<T>& gpu) {
  if (first.n != bt.n || first.m() != bt.m() || first.P != bt.P || first.A != bt.A ||
      first.a_row_ptr != bt.a_row_ptr || first.a_col != bt.a_col)
    throw Error("--kept-from: the first batch's P and A must be the re-solved batch's");
  const int B = bt.size, n = bt.n, m = bt.m(), nnz = bt.nnz();
  std::vector<std::vector<T>> work(size_t(B), std::vector<T>(qp_work_host_size(n, m), T(0)));
  QpSolutions<T> c1;
  c1.resize(B, n, m);
  cpu.resize(B, n, m);  // (keeps a warm start the caller put there)
  gpu.resize(B, n, m);
  for (int pass = 0; pass < 2; ++pass) {
    const QpBatch<T>& data = pass == 0 ? first : bt;
    QpSolutions<T>& s = pass == 0 ? c1 : cpu;
    for (int k = 0; k < B; ++k) {
      const QpInfo<T> info = qp_admm_solve(
          bt.shape(), data.problem(k), unit_view(s.x.data() + size_t(k) * n), unit_view(s.y.data() + size_t(k) * m),
          QpWork<T, UnitStride>::carve(unit_view(qp_work_align(work[size_t(k)].data())), n, m, true), ref,
          pass == 1 && warm, pass == 1);
      s.status[k] = info.status, s.fault[k] = info.fault, s.iterations[k] = info.iterations;
      s.rho_updates[k] = info.rho_updates, s.objective[k] = info.objective, s.value[k] = info.value;
    }
  }
  std::printf("warp kernel: %d blocks of one warp (a problem each), shared memory per block: %zu bytes "
              "(n=%d, m=%d, nnz=%d)\n", B, cuda::warp_shared_bytes(m, nnz, sizeof(T)), n, m, nnz);
  cuda::DeviceQpBatch<T> dev(cuda::DeviceLayout::kWarp);
  dev.keep_factors(true);
  dev.upload(first.device_arrays());
  std::vector<int> codes;
  QpSolutions<T> g1;
  g1.resize(B, n, m);
  dev.solve(st, false);
  cuda::HostQpResults<T> r1 = g1.device_results(codes);
  dev.download(r1);
  std::printf("warp kernel, first solve (cold, keeping the factorizations): %.2f iterations a problem\n",
              [&] { double t = 0; for (int v : g1.iterations) t += v; return t / B; }());
  dev.upload_vectors(bt.q.data(), bt.b.data());
  if (warm) dev.upload_warm_start(gpu.device_results(codes));
  dev.solve(st, warm, true);
  cuda::HostQpResults<T> r2 = gpu.device_results(codes);
  dev.download(r2);
  gpu.take_codes(codes);
}

template <class T>
double mean_iterations(const QpSolutions<T>& s) {
  double t = 0;
  for (int v : s.iterations) t += v;
  return t / std::max(1, s.size);
}

int run(int argc, char** argv) {
  std::string in, kept_from;
  double eps = 1e-5;
  int max_iter = 4000, scaling_iters = -1;
  bool thread = false, check_input = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gpu_warp_variant: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--in") in = next();
    else if (a == "--eps") eps = std::atof(next());
    else if (a == "--max-iter") max_iter = std::atoi(next());
    else if (a == "--thread") thread = true;
    else if (a == "--no-check-input") check_input = false;
    else if (a == "--scaling-iters") scaling_iters = std::atoi(next());
    else if (a == "--kept-from") kept_from = next();
    else {
      std::fprintf(stderr, "usage: gpu_warp_variant --in BATCH.npz [--eps E] [--max-iter N] "
                           "[--thread] [--no-check-input] [--scaling-iters K] [--kept-from FIRST.npz]\n");
      return 2;
    }
  }
  if (in.empty()) {
    std::fprintf(stderr, "gpu_warp_variant: --in is required\n");
    return 2;
  }
  using T = float;
  const QpFile f = read_qp_file(in);
  const QpBatch<T> bt = f.batch.cast<T>();
  if (bt.n > 32) {
    std::fprintf(stderr, "gpu_warp_variant: n = %d; the warp variant holds n <= 32\n", bt.n);
    return 2;
  }
  QpSettings<T> st;
  st.eps_abs = st.eps_rel = T(eps);
  st.max_iter = max_iter;
  st.check_input = check_input;  // (the set-up's parts, measured one at a time)
  if (scaling_iters >= 0) st.scaling_iters = scaling_iters;
  QpSettings<T> ref = st;  // the CPU reference as tests/test_gpu.cc runs it (the warp
  ref.dense_iteration = false;  // kernel predicts its checks, as the CPU does)
  BatchOptions cpu_opt;
  cpu_opt.lanes = false;
  cpu_opt.threads = 1;
  QpSolutions<T> cpu, warp, thr, cpu_fixed;
  const bool warm = f.has_warm_start;
  if (warm) {
    for (QpSolutions<T>* s : {&cpu, &warp, &thr, &cpu_fixed}) {
      s->resize(bt.size, bt.n, bt.m());
      s->x.assign(f.x0.begin(), f.x0.end());
      s->y.assign(f.y0.begin(), f.y0.end());
    }
    cpu_opt.warm_start = true;
  }
  if (!kept_from.empty()) {
    if (thread) throw Error("--kept-from measures the warp kernel only (no --thread)");
    const QpBatch<T> first = read_qp_file(kept_from).batch.cast<T>();
    std::printf("warp kernel: re-solve of %s's q and b keeping the factorizations of %s\n", in.c_str(),
                kept_from.c_str());
    solve_kept(first, bt, st, ref, warm, cpu, warp);
  } else {
    solve_batch(bt, ref, cpu_opt, cpu);
    solve_warp(bt, st, warm, warp);
  }
  std::printf("warp kernel: solved %d problems (n=%d, m=%d, %s), mean %.2f iterations (CPU: %.2f)\n", bt.size,
              bt.n, bt.m(), warm ? "warm" : "cold", mean_iterations(warp), mean_iterations(cpu));
  const Verdict vw = compare("warp kernel vs CPU", bt, cpu, warp, st.check_every, 1e-3);
  bool ok = vw.bad == 0;
  if (thread) {
    BatchOptions g;
    g.backend = Backend::kCuda;
    g.device_layout = cuda::DeviceLayout::kThread;
    g.warm_start = warm;
    solve_batch(bt, st, g, thr);
    std::printf("thread kernel: mean %.2f iterations\n", mean_iterations(thr));
    QpSettings<T> ref_fixed = ref;  // the thread kernel checks on the fixed schedule
    ref_fixed.predict_checks = false;
    solve_batch(bt, ref_fixed, cpu_opt, cpu_fixed);
    const Verdict vt = compare("thread kernel vs CPU", bt, cpu_fixed, thr, st.check_every, 1e-3);
    // where the thread kernel itself differs from the CPU beyond these limits (float
    // rounding on problems whose x is poorly determined, stops that move by more than
    // one check interval), the warp kernel passes if it does no worse: no more problems
    // whose status, fault or iterations disagree, and differences above 1e-3 no larger
    // than the thread kernel's
    if (!ok && vw.hard <= vt.hard) {
      bool within = true;
      for (int i = 0; i < 4; ++i) within = within && vw.worst[i] <= std::max(1e-3, vt.worst[i]);
      if (within) {
        ok = true;
        std::printf("warp kernel: no worse than the thread kernel against the CPU (%d / %d problems "
                    "with status, fault or iterations apart; every difference above 1e-3 within the "
                    "thread kernel's)\n", vw.hard, vt.hard);
      }
    }
  }
  std::printf("gpu_warp_variant: %s\n", ok ? "the answers agree with the CPU" : "DISAGREEMENT");
  return ok ? 0 : 1;
}

}  // namespace warpvar
}  // namespace impulse

int main(int argc, char** argv) {
  try {
    return impulse::warpvar::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_warp_variant: %s\n", e.what());
    return 2;
  }
}
