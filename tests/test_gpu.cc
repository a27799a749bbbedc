// Every device path against the CPU running the same algorithm: QP batches in
// float and double, cold and warm; per-problem faults on the device; PGS LCPs
// with and without the friction-cone block; the ContactNets device loss, its
// gradient and a few Adam steps; the Deep model's loss QPs solved on the device;
// the CCN device loss with its θ and residual gradients.
//
// Each test asserts status, iterations and values problem by problem, so a
// device that stops early, skips iterations or computes wrong numbers fails.
// They run on a GPU or under the GPU simulator (GPGPU-Sim, see .ci/gpu-sim and
// the README), with batches sized for the simulator there, and skip with a
// message when neither is present. Every suite's name starts with "Gpu".
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "host/batch/generate.h"
#include "host/batch/lcp_batch.h"
#include "host/batch/qp_batch.h"
#include "host/impact/impact_models.h"
#include "io/impact_data.h"
#include "host/learning/contactnets_loss.h"
#include "host/learning/contactnets_model.h"
#include "host/learning/trainer.h"
#include "host/dynamics/synthetic.h"
#include "io/npz.h"
#include "io/toss_data.h"
#include "io/system_tosses.h"
#include "host/dynamics/multibody_sim.h"
#include "host/optim/adam.h"
#include "host/learning/ccn.h"
#include "kernels/ccn_device.h"
#include "kernels/contactnets_device.h"
#include "tests/contact_util.h"
#include "tests/test_util.h"

namespace impulse {
namespace {

using testing::mixed;
using testing::random_spd_batch;
using testing::random_transitions;
using testing::tight;

// the simulator runs a kernel ~10⁴ times slower than a GPU: small batches there
bool simulated() { return cuda::device_info().name.find("GPGPU-Sim") != std::string::npos; }
int batch_size(int on_gpu, int on_simulator) { return simulated() ? on_simulator : on_gpu; }

void skip_without_device() {
  const cuda::DeviceInfo d = cuda::device_info();
  if (!d.built) GTEST_SKIP() << "CUDA kernels not built: " << d.reason;
  if (d.count == 0) GTEST_SKIP() << "no CUDA device (nor the GPU simulator): " << d.reason;
}

class GpuQp : public ::testing::Test {
 protected:
  void SetUp() override { skip_without_device(); }
};
class GpuLcp : public GpuQp {};
class GpuContactNets : public GpuQp {};


// the device's algorithm on the CPU: one problem at a time, the sparse x-step
// (the device's batch-strided storage has no dense one) and checks every
// check_every iterations as the thread kernel makes them (the warp kernel, warp =
// true, predicts them as the CPU does)
template <class T>
QpSettings<T> as_on_device(QpSettings<T> st, bool warp = false) {
  if (!warp) st.predict_checks = false;  // the warp kernel predicts its checks (device_settings)
  st.dense_iteration = false;
  st.ipm_switch = 0;  // (the device has no interior point: ADMM to the end)
  return st;
}
BatchOptions cpu_reference() { return testing::cpu_path(false); }

template <class T>
double xnorm_of(const T* x, int n) {
  double v = 0;
  for (int j = 0; j < n; ++j) v = std::max(v, std::abs(double(x[j])));
  return v;
}
template <class T>
double norm_of_b(const QpBatch<T>& bt, int k) {
  double v = 0;
  for (int r = 0; r < bt.m(); ++r) v = std::max(v, std::abs(double(bt.b[size_t(k) * bt.m() + r])));
  return v;
}

// The device's answer checked against the data alone (independent of the
// solver code both sides share): for each problem it reports solved, the KKT
// residuals recomputed in double from P, q, A, b meet the solver's own
// stopping rule (absolute + relative to the size of the terms) up to a factor
// `slack` for rounding in the recomputation; and, where the optimum is known,
// the objective matches it.
template <class T>
void expect_kkt_from_data(const QpBatch<T>& bt, const QpSolutions<T>& s, const QpSettings<T>& st,
                          double slack, const std::vector<double>* known_opt = nullptr) {
  const int n = bt.n, m = bt.m();
  int checked = 0;
  for (int k = 0; k < bt.size; ++k) {
    if (s.status[k] != SolveStatus::kSolved) continue;
    // a row without a bound (b = +inf) has an infinite slack: sᵀy is not defined there
    bool unbounded = false;
    for (int r2 = 0; r2 < m; ++r2) unbounded = unbounded || std::isinf(double(bt.b[size_t(k) * m + r2]));
    if (unbounded) continue;
    ++checked;
    SCOPED_TRACE("problem " + std::to_string(k));
    const T* x = &s.x[size_t(k) * n];
    const T* y = &s.y[size_t(k) * m];
    const testing::Kkt r = testing::kkt_residuals(bt, k, x, y);
    // the sizes the relative tolerances refer to, from the data and the answer
    double px = 0, aty = 0, qn = 0, ax = 0, yn = 0, sn = 0;
    const std::vector<T> Ad = bt.A_dense(k);
    for (int i = 0; i < n; ++i) {
      double pxi = 0, atyi = 0;
      for (int j = 0; j < n; ++j) pxi += double(bt.P[size_t(k) * n * n + i * n + j]) * double(x[j]);
      for (int r2 = 0; r2 < m; ++r2) atyi += double(Ad[size_t(r2) * n + i]) * double(y[r2]);
      px = std::max(px, std::abs(pxi));
      aty = std::max(aty, std::abs(atyi));
      qn = std::max(qn, std::abs(double(bt.q[size_t(k) * n + i])));
    }
    for (int r2 = 0; r2 < m; ++r2) {
      double axr = 0;
      for (int j = 0; j < n; ++j) axr += double(Ad[size_t(r2) * n + j]) * double(x[j]);
      ax = std::max(ax, std::abs(axr));
      sn = std::max(sn, std::abs(double(bt.b[size_t(k) * m + r2]) - axr));
      yn = std::max(yn, std::abs(double(y[r2])));
    }
    const double ea = double(st.eps_abs), er = double(st.eps_rel);
    EXPECT_LE(r.stationarity, slack * (ea + er * std::max({px, aty, qn})));
    EXPECT_LE(r.primal, slack * (ea + er * std::max(ax, double(norm_of_b(bt, k)))));
    EXPECT_LE(r.dual, slack * (ea + er * yn));
    // |sᵀy| ≤ m ‖y‖∞ ‖s − Π(s)‖∞-sized terms: the primal tolerance times ‖y‖∞ per row
    EXPECT_LE(r.complementarity, slack * m * std::max(yn, 1.0) * (ea + er * std::max({ax, sn, norm_of_b(bt, k)})));
    // the reported objective is the data's at the reported x
    EXPECT_NEAR(double(s.objective[k]), r.objective,
                (sizeof(T) == 4 ? 1e-5 : 1e-12) * (1 + std::abs(r.objective) + px * xnorm_of(x, n)));
    if (known_opt) {
      EXPECT_NEAR(r.objective, (*known_opt)[k], slack * (ea + er * std::abs((*known_opt)[k])) * (1 + px + qn));
    }
  }
  EXPECT_GE(checked, (bt.size + 1) / 2) << "problems reported solved";
}

// solves `bt` on the CPU and on the device from the same start (cold, or the
// warm start in `warm`) and compares them problem by problem. The two compile
// the same source with different compilers (FMA contraction, the order of a
// few sums), so the iterates agree to rounding, not bitwise: a stop may move
// by one check interval. Values are compared relative to each problem's size
// (‖x‖∞, ‖y‖∞, |objective|). The device's answers are also checked against the
// data alone (expect_kkt_from_data). Returns the device's solutions.
template <class T>
QpSolutions<T> expect_device_matches_cpu(const QpBatch<T>& bt, const QpSettings<T>& st, double rtol,
                                         const QpSolutions<T>* warm = nullptr,
                                         const std::vector<double>* known_opt = nullptr,
                                         cuda::DeviceLayout layout = cuda::DeviceLayout::kThread,
                                         bool warm_rho = false) {
  QpSolutions<T> cpu, gpu;
  BatchOptions c = cpu_reference(), g;
  g.backend = Backend::kCuda;
  g.device_layout = layout;
  std::printf("  a %s per problem\n", cuda::to_string(device_layout_for(bt, g)));
  const QpSettings<T> ref = as_on_device(st, device_layout_for(bt, g) == cuda::DeviceLayout::kWarp);
  if (warm) {
    cpu = gpu = *warm;
    c.warm_start = g.warm_start = true;
    c.warm_rho = g.warm_rho = warm_rho;  // each problem from the ρ in `warm`
  }
  solve_batch(bt, ref, c, cpu);
  solve_batch(bt, st, g, gpu);
  const int n = bt.n, m = bt.m();
  int same_iterations = 0;
  double worst_x = 0, worst_y = 0, worst_obj = 0;
  for (int k = 0; k < bt.size; ++k) {
    SCOPED_TRACE("problem " + std::to_string(k));
    EXPECT_EQ(cpu.status[k], gpu.status[k]);
    EXPECT_EQ(cpu.fault[k], gpu.fault[k]);
    EXPECT_NEAR(cpu.iterations[k], gpu.iterations[k], st.check_every);
    same_iterations += cpu.iterations[k] == gpu.iterations[k];
    // the final ρ (what BatchOptions::warm_rho carries): the CPU's, when both adapted as often.
    // ρ is set from the ratio of the residuals, whose relative rounding error is the
    // iterates' (~1e-12) over the residuals' size against the iterate's (~1e-8 near the
    // tolerance): 1e-3 (seen: 1.9e-4 on the warp's random double QPs)
    if (cpu.rho_updates[k] == gpu.rho_updates[k]) {
      EXPECT_NEAR(double(gpu.rho[k]), double(cpu.rho[k]), 1e-3 * double(cpu.rho[k])) << "final rho";
    }
    if (cpu.status[k] == SolveStatus::kInvalidInput) {
      EXPECT_EQ(gpu.iterations[k], 0);
      continue;
    }
    double xs = 1e-30, ys = 1e-30, dx = 0, dy = 0;
    for (int j = 0; j < n; ++j) {
      xs = std::max(xs, std::abs(double(cpu.x[size_t(k) * n + j])));
      dx = std::max(dx, std::abs(double(cpu.x[size_t(k) * n + j]) - double(gpu.x[size_t(k) * n + j])));
    }
    for (int r = 0; r < m; ++r) {
      ys = std::max(ys, std::abs(double(cpu.y[size_t(k) * m + r])));
      dy = std::max(dy, std::abs(double(cpu.y[size_t(k) * m + r]) - double(gpu.y[size_t(k) * m + r])));
    }
    // the objective's scale: its size, or its terms' (½xᵀPx and qᵀx can cancel)
    double qx = 0, xpx = 0;
    for (int i = 0; i < n; ++i) {
      double pxi = 0;
      for (int j = 0; j < n; ++j)
        pxi += double(bt.P[size_t(k) * n * n + i * n + j]) * double(cpu.x[size_t(k) * n + j]);
      xpx += double(cpu.x[size_t(k) * n + i]) * pxi;
      qx += std::abs(double(bt.q[size_t(k) * n + i]) * double(cpu.x[size_t(k) * n + i]));
    }
    const double oscale = std::max({std::abs(double(cpu.objective[k])), std::abs(xpx), qx, 1e-30});
    const double dobj = std::abs(double(cpu.objective[k]) - double(gpu.objective[k])) / oscale;
    EXPECT_LE(dx / xs, rtol) << "x differs, relative to ‖x‖∞";
    EXPECT_LE(dy / ys, rtol) << "y differs, relative to ‖y‖∞";
    EXPECT_LE(dobj, rtol) << "objective differs, relative";
    EXPECT_LE(std::abs(double(cpu.value[k]) - double(gpu.value[k])),
              rtol * std::max(std::abs(double(cpu.value[k])), oscale)) << "value differs, relative";
    worst_x = std::max(worst_x, dx / xs);
    worst_y = std::max(worst_y, dy / ys);
    worst_obj = std::max(worst_obj, dobj);
  }
  // rounding may move a few stops, not most of them
  EXPECT_GE(same_iterations, bt.size * 3 / 4) << "iteration counts equal to the CPU's";
  std::printf("  %d of %d problems stopped at the CPU's iteration; largest relative differences: "
              "x %.1e, y %.1e, objective %.1e\n", same_iterations, bt.size, worst_x, worst_y, worst_obj);
  expect_kkt_from_data(bt, gpu, st, 10.0, known_opt);
  return gpu;
}

TEST_F(GpuQp, DoubleColdMatchesCpu) {
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-8;
  st.max_iter = 20000;
  const GeneratedQps q = random_qp_batch(batch_size(257, 64), 8, mixed(), 3);
  const QpSolutions<double> g = expect_device_matches_cpu<double>(q.batch, st, 1e-6, nullptr, &q.obj_opt);
  for (size_t k = 0; k < g.status.size(); ++k) EXPECT_EQ(g.status[k], SolveStatus::kSolved);
}

TEST_F(GpuQp, FloatColdMatchesCpu) {
  QpSettings<float> st;
  st.eps_abs = st.eps_rel = 1e-5f;
  const QpSolutions<float> g = expect_device_matches_cpu(
      cube_loss_batch(batch_size(1000, 64), FrictionModel::kCone, 4).batch.cast<float>(), st, 1e-3);
  for (size_t k = 0; k < g.status.size(); ++k) EXPECT_GT(g.iterations[k], 2);
}

TEST_F(GpuQp, OctagonDoubleColdMatchesCpu) {
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-6;
  expect_device_matches_cpu(cube_loss_batch(batch_size(500, 32), FrictionModel::kOctagon, 6).batch, st,
                            1e-5);
}

// warm start: from the CPU's answer to the batch at a tighter tolerance, both
// stop at the first check (iteration 1); from it, both solve a perturbed copy
// in the same number of iterations, fewer than a cold solve takes (a device
// that ignored the warm start would take the cold count)
template <class T>
void warm_matches_cpu(const QpBatch<T>& bt, double eps, double tol,
                      cuda::DeviceLayout layout = cuda::DeviceLayout::kThread) {
  QpSettings<T> st;
  st.eps_abs = st.eps_rel = T(eps);
  st.max_iter = 50000;
  QpSettings<T> tighter = as_on_device(st);
  tighter.eps_abs = tighter.eps_rel = T(eps / 100);
  QpSolutions<T> start, cold;
  solve_batch(bt, tighter, cpu_reference(), start);
  const QpSolutions<T> same = expect_device_matches_cpu<T>(bt, st, tol, &start, nullptr, layout);
  for (int k = 0; k < bt.size; ++k) {
    EXPECT_EQ(same.status[k], SolveStatus::kSolved) << "problem " << k;
    EXPECT_EQ(same.iterations[k], 1) << "problem " << k;
  }
  QpBatch<T> moved = bt;
  for (size_t i = 0; i < moved.q.size(); ++i) moved.q[i] *= T(1.001);
  solve_batch(moved, as_on_device(st), cpu_reference(), cold);
  const QpSolutions<T> g = expect_device_matches_cpu<T>(moved, st, tol, &start, nullptr, layout);
  long warm_iters = 0, cold_iters = 0;
  for (int k = 0; k < bt.size; ++k) {
    EXPECT_EQ(g.status[k], SolveStatus::kSolved) << "problem " << k;
    warm_iters += g.iterations[k];
    cold_iters += cold.iterations[k];
  }
  EXPECT_LT(warm_iters, cold_iters);
}

// BatchOptions::warm_rho on the device: each problem starts at its own ρ (0: the
// settings'). Without adaptation a solve ends at the ρ it started at, so the final ρ
// shows which one it used; with adaptation the device matches the CPU from those ρ.
void warm_rho_matches_cpu(const QpBatch<double>& bt, cuda::DeviceLayout layout) {
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-6;
  st.max_iter = 20000;
  QpSolutions<double> start;
  solve_batch(bt, as_on_device(st), cpu_reference(), start);
  for (int k = 0; k < bt.size; ++k) start.rho[k] = k % 4 == 0 ? 0.0 : 0.02 * (1 + k % 7);
  QpBatch<double> moved = bt;
  for (double& v : moved.q) v *= 1.01;
  QpSettings<double> fixed = st;
  fixed.adaptive_rho = false;
  const QpSolutions<double> f = expect_device_matches_cpu<double>(moved, fixed, 1e-5, &start, nullptr, layout, true);
  for (int k = 0; k < bt.size; ++k) {
    EXPECT_EQ(f.status[k], SolveStatus::kSolved) << "problem " << k;
    EXPECT_EQ(f.rho[k], start.rho[k] > 0 ? start.rho[k] : fixed.rho) << "problem " << k;
  }
  const QpSolutions<double> a = expect_device_matches_cpu<double>(moved, st, 1e-5, &start, nullptr, layout, true);
  for (int k = 0; k < bt.size; ++k) EXPECT_EQ(a.status[k], SolveStatus::kSolved) << "problem " << k;
}

TEST_F(GpuQp, WarmRhoMatchesCpu) {
  warm_rho_matches_cpu(random_qp_batch(batch_size(64, 16), 10, mixed(), 12).batch, cuda::DeviceLayout::kThread);
}

TEST_F(GpuQp, DoubleWarmMatchesCpu) {
  warm_matches_cpu(random_qp_batch(batch_size(64, 32), 10, mixed(), 8).batch, 1e-8, 1e-6);
}

TEST_F(GpuQp, FloatWarmMatchesCpu) {
  warm_matches_cpu(cube_loss_batch(batch_size(500, 32), FrictionModel::kCone, 9).batch.cast<float>(),
                   1e-5, 1e-3);
}

// each bad problem is reported with its own fault; its neighbours solve
void faults_stay_with_their_problem(cuda::DeviceLayout layout) {
  GeneratedQps g = random_qp_batch(8, 6, mixed(), 5);
  QpBatch<double>& bt = g.batch;
  const int n = bt.n, m = bt.m();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  bt.P[size_t(2) * n * n + 7] = nan;
  bt.b[size_t(4) * m + 1] = nan;
  bt.P[size_t(5) * n * n + 1] += 1.0;  // P(0, 1) != P(1, 0)
  for (int i = 0; i < n; ++i) bt.P[size_t(6) * n * n + i * n + i] -= 50.0;  // indefinite
  QpSettings<double> st;
  const QpSolutions<double> s = expect_device_matches_cpu<double>(bt, st, 1e-5, nullptr, nullptr, layout);
  // the untouched problems still have their known optimum
  for (int k : {0, 1, 3, 7})
    EXPECT_NEAR(s.objective[k], g.obj_opt[k], 1e-3 * (1 + std::abs(g.obj_opt[k]))) << "problem " << k;
  const InputFault want[8] = {InputFault::kNone,        InputFault::kNone, InputFault::kNonFiniteP,
                              InputFault::kNone,        InputFault::kNonFiniteB,
                              InputFault::kAsymmetricP, InputFault::kNotPsdP, InputFault::kNone};
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(s.fault[k], want[k]) << "problem " << k;
    EXPECT_EQ(s.status[k], want[k] == InputFault::kNone ? SolveStatus::kSolved : SolveStatus::kInvalidInput)
        << "problem " << k;
  }
  // without the PSD test (QpSettings::check_psd, as ContactNets training runs): the
  // indefinite problem is not reported as not PSD, the other faults are, and the rest
  // run as with it, on the same budget (which bounds the indefinite one's simulated time)
  QpSettings<double> with_psd = st;
  with_psd.max_iter = 400;
  QpSettings<double> no_psd = with_psd;
  no_psd.check_psd = false;
  BatchOptions dev;
  dev.backend = Backend::kCuda;
  dev.device_layout = layout;
  QpSolutions<double> t, u;
  solve_batch(bt, with_psd, dev, t);
  solve_batch(bt, no_psd, dev, u);
  EXPECT_EQ(t.fault[6], InputFault::kNotPsdP);
  EXPECT_NE(u.fault[6], InputFault::kNotPsdP);
  EXPECT_NE(u.status[6], SolveStatus::kSolved);
  for (int k : {2, 4, 5}) EXPECT_EQ(u.fault[k], want[k]) << "problem " << k << ", without the PSD test";
  for (int k : {0, 1, 3, 7}) {
    SCOPED_TRACE("problem " + std::to_string(k) + ", without the PSD test");
    EXPECT_EQ(u.status[k], t.status[k]);
    EXPECT_EQ(u.iterations[k], t.iterations[k]);
    EXPECT_EQ(u.objective[k], t.objective[k]);
    for (int j = 0; j < n; ++j) EXPECT_EQ(u.x[size_t(k) * n + j], t.x[size_t(k) * n + j]);
  }
}

TEST_F(GpuQp, FaultsStayWithTheirProblem) { faults_stay_with_their_problem(cuda::DeviceLayout::kThread); }

// The warp-per-problem kernel (kernels/qp_warp_kernels.cu): the same comparisons.
// Its shuffles, shared-memory rows and in-register K⁻¹ are all on the path of
// every problem, so a fault in any of them shows as a status, iteration or value
// apart from the CPU's.
class GpuQpWarp : public GpuQp {};

TEST_F(GpuQpWarp, FloatColdMatchesCpu) {  // the cube loss QP, n = 32 (auto picks the warp)
  QpSettings<float> st;
  st.eps_abs = st.eps_rel = 1e-5f;
  const QpBatch<float> bt = cube_loss_batch(batch_size(1000, 64), FrictionModel::kCone, 4).batch.cast<float>();
  BatchOptions on_device;
  on_device.backend = Backend::kCuda;
  ASSERT_EQ(device_layout_for(bt, on_device), cuda::DeviceLayout::kWarp);
  const QpSolutions<float> g = expect_device_matches_cpu<float>(bt, st, 1e-3, nullptr, nullptr, cuda::DeviceLayout::kAuto);
  for (size_t k = 0; k < g.status.size(); ++k) EXPECT_GT(g.iterations[k], 2);
}

TEST_F(GpuQpWarp, DoubleColdMatchesCpu) {  // every cone kind, known optima, n = 8 of the 32 lanes
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-8;
  st.max_iter = 20000;
  const GeneratedQps q = random_qp_batch(batch_size(257, 24), 8, mixed(), 3);
  const QpSolutions<double> g =
      expect_device_matches_cpu<double>(q.batch, st, 1e-6, nullptr, &q.obj_opt, cuda::DeviceLayout::kWarp);
  for (size_t k = 0; k < g.status.size(); ++k) EXPECT_EQ(g.status[k], SolveStatus::kSolved);
}

TEST_F(GpuQpWarp, FloatWarmMatchesCpu) {
  warm_matches_cpu(cube_loss_batch(batch_size(500, 32), FrictionModel::kCone, 9).batch.cast<float>(), 1e-5,
                   1e-3, cuda::DeviceLayout::kWarp);
}

TEST_F(GpuQpWarp, WarmRhoMatchesCpu) {  // the fallback (stagnation-restart) variant, A dense in shared memory
  warm_rho_matches_cpu(random_qp_batch(batch_size(64, 16), 8, mixed(), 3).batch, cuda::DeviceLayout::kWarp);
}

TEST_F(GpuQpWarp, FaultsStayWithTheirProblem) { faults_stay_with_their_problem(cuda::DeviceLayout::kWarp); }

// qp_admm_solve itself, one problem at a time: what both kernels run, the stagnation
// restart included (solve_batch's CPU path finishes a stall by the interior point
// first); from `warm`'s (x, y) when given
QpSolutions<double> admm_each(const QpBatch<double>& bt, const QpSettings<double>& st,
                              const QpSolutions<double>* warm = nullptr) {
  QpSolutions<double> s;
  s.resize(bt.size, bt.n, bt.m());
  if (warm) s.x = warm->x, s.y = warm->y;
  testing::KeptSolver(bt).solve_all(bt, st, s, warm != nullptr, false);
  return s;
}

// Rows with b = +inf and the stagnation restart (QpSettings::fallback), in both
// layouts, against qp_admm_solve, cold and warm. min ½xᵀPx + qᵀx s.t. l ≤ x₀ ≤ u as
// two nonnegative rows (x₀ ≤ u, −x₀ ≤ −l), P = I and q = (1, 1) unless said:
//   (0) −1 ≤ x₀ ≤ 1;  (1) no upper bound;  (2) no bounds;
//   (3) 1 ≤ x₀ ≤ −1, infeasible, its infeasibility test made blind (eps_pinf huge): its
//       residual stops improving, it stalls at a quarter of the budget and restarts cold;
//   (4) P = diag(0, 1), q = (−1, 1), x₀ ≥ −1 without an upper bound: unbounded below, found
//       dual infeasible only because the row without a bound is exempt from the test.
TEST_F(GpuQpWarp, UnboundedRowsAndStallRestartAsOnTheCpu) {
  const double inf = std::numeric_limits<double>::infinity();
  ConeSpec cones;
  cones.n_nonneg = 2;
  const int B = 5;
  std::vector<double> P, q, A, b;
  const double bs[B][2] = {{1, 1}, {inf, 1}, {inf, inf}, {-1, -1}, {inf, 1}};
  for (int k = 0; k < B; ++k) {
    P.insert(P.end(), {k == 4 ? 0.0 : 1.0, 0, 0, 1});
    q.insert(q.end(), {k == 4 ? -1.0 : 1.0, 1});
    A.insert(A.end(), {1, 0, -1, 0});
    b.insert(b.end(), {bs[k][0], bs[k][1]});
  }
  const QpBatch<double> bt = QpBatch<double>::from_dense(B, 2, cones, P, q, A, b);
  QpSettings<double> st = as_on_device(QpSettings<double>{});
  st.eps_abs = st.eps_rel = 1e-8;
  st.max_iter = 400;
  st.eps_pinf = 1e30;
  ASSERT_TRUE(st.fallback);
  const QpSolutions<double> cpu = admm_each(bt, st);
  // the reference itself: x₀ = −1 at its bound in (0) and (1), x = −q in (2); y of a
  // row without a bound exactly 0; (3) restarted and ran the budget; (4) unbounded
  for (int k : {0, 1, 2}) {
    SCOPED_TRACE("problem " + std::to_string(k));
    EXPECT_EQ(cpu.status[k], SolveStatus::kSolved);
    EXPECT_NEAR(cpu.x[size_t(k) * 2], -1, 1e-6);
    EXPECT_NEAR(cpu.x[size_t(k) * 2 + 1], -1, 1e-6);
  }
  const auto unbounded = [&](int k, int r) { return std::isinf(bs[k][r]); };
  for (int k = 0; k < B; ++k)
    for (int r = 0; r < 2; ++r) {
      if (unbounded(k, r)) {
        EXPECT_EQ(cpu.y[size_t(k) * 2 + r], 0.0) << "problem " << k << ", row " << r;
      }
    }
  EXPECT_EQ(cpu.status[3], SolveStatus::kMaxIterations);
  EXPECT_EQ(cpu.iterations[3], st.max_iter);
  EXPECT_EQ(cpu.status[4], SolveStatus::kDualInfeasible);
  QpSettings<double> plain = st;
  plain.fallback = false;
  const QpSolutions<double> no_restart = admm_each(bt, plain);
  EXPECT_NE(no_restart.rho_updates[3], cpu.rho_updates[3]) << "the restart changed nothing";
  // warm: the cold answers with y ≠ 0 on the rows without a bound (qp_setup zeroes it)
  QpSolutions<double> start = cpu;
  for (int k = 0; k < B; ++k)
    for (int r = 0; r < 2; ++r)
      if (unbounded(k, r)) start.y[size_t(k) * 2 + r] = 5.0;
  const QpSolutions<double> cpu_warm = admm_each(bt, st, &start);
  for (const cuda::DeviceLayout layout : {cuda::DeviceLayout::kWarp, cuda::DeviceLayout::kThread}) {
    for (const bool warm : {false, true}) {
      SCOPED_TRACE(std::string(cuda::to_string(layout)) + (warm ? ", warm" : ", cold"));
      BatchOptions g;
      g.backend = Backend::kCuda;
      g.device_layout = layout;
      g.warm_start = warm;
      QpSolutions<double> gpu;
      if (warm) gpu = start;
      solve_batch(bt, st, g, gpu);
      const QpSolutions<double>& ref = warm ? cpu_warm : cpu;
      for (int k = 0; k < B; ++k) {
        SCOPED_TRACE("problem " + std::to_string(k));
        EXPECT_EQ(gpu.fault[k], InputFault::kNone);
        EXPECT_EQ(gpu.status[k], ref.status[k]);
        EXPECT_EQ(gpu.iterations[k], ref.iterations[k]);
        EXPECT_EQ(gpu.rho_updates[k], ref.rho_updates[k]);
        // relative 1e-6, as the other double comparisons (expect_device_matches_cpu): on (3)
        // y diverges (3e8 after the budget) and the thread kernel's FMA contraction leaves
        // it 1.2e-7 apart, relative, at the same iterations and ρ updates
        for (int j = 0; j < 2; ++j) {
          const double xs = std::max(1.0, std::abs(ref.x[size_t(k) * 2 + j]));
          const double ys = std::max(1.0, std::abs(ref.y[size_t(k) * 2 + j]));
          EXPECT_NEAR(gpu.x[size_t(k) * 2 + j], ref.x[size_t(k) * 2 + j], 1e-6 * xs) << "x" << j;
          EXPECT_NEAR(gpu.y[size_t(k) * 2 + j], ref.y[size_t(k) * 2 + j], 1e-6 * ys) << "y" << j;
          if (unbounded(k, j)) {
            EXPECT_EQ(gpu.y[size_t(k) * 2 + j], 0.0) << "y of a row without a bound";
          }
        }
      }
    }
  }
}

// Re-solves that keep the factorization (DeviceQpBatch::keep_factors, upload_vectors,
// solve(..., reuse)), in both layouts, against qp_admm_solve's `reuse` with a workspace
// per problem: a cold solve (problem 1 with a NaN in q: a fault, no factorization
// kept), then q scaled and b moved, re-solved warm from the kept factorizations
// (problem 1 sets up in full), then q scaled again from what that re-solve kept
// (where ρ moved, its new factorization was stored and is used here); then a full
// upload with P doubled, which forgets them all: the re-solve sets up in full, as a
// plain warm solve of the new P. On the cube QPs (n = 32, whose re-solves keep ρ) and
// random QPs with every cone kind (n = 8, ρ moves on some re-solves).
struct DeviceRun {
  cuda::DeviceQpBatch<double> dev;
  QpSolutions<double> sol;
  std::vector<int> codes;
  explicit DeviceRun(cuda::DeviceLayout layout) : dev(layout) {}
  void get(const QpBatch<double>& bt) {
    sol.resize(bt.size, bt.n, bt.m());
    cuda::HostQpResults<double> r = sol.device_results(codes);
    dev.download(r);
    sol.take_codes(codes);
  }
  void put_warm_start() { dev.upload_warm_start(sol.device_results(codes)); }
};

// (returns how many re-solves moved ρ before the third solve)
int kept_resolves_as_on_the_cpu(const QpBatch<double>& bt, double qs2, double qs3) {
  QpBatch<double> first = bt, next = bt, third = bt;
  first.q[size_t(bt.n) + 2] = std::nan("");  // problem 1
  for (double& v : next.q) v *= qs2;
  for (size_t i = 0; i < next.b.size(); ++i) next.b[i] += 1e-3 * (i % 2 ? 1.0 : -1.0);
  third.b = next.b;
  for (size_t i = 0; i < third.q.size(); ++i) third.q[i] = next.q[i] * qs3;
  QpBatch<double> doubled = third;
  for (double& v : doubled.P) v *= 2.0;
  QpSettings<double> st = as_on_device(QpSettings<double>{});
  st.eps_abs = st.eps_rel = 1e-6;
  const int B = bt.size, n = bt.n, m = bt.m();
  testing::KeptSolver cpu(bt);  // each problem in its own workspace
  QpSolutions<double> cpu1, cpu2, cpu3;
  cpu1.resize(B, n, m);
  cpu.solve_all(first, st, cpu1, false, false);
  cpu2 = cpu1;
  cpu.solve_all(next, st, cpu2, true, true);
  cpu3 = cpu2;
  cpu.solve_all(third, st, cpu3, true, true);
  const QpSolutions<double> cpu4 = admm_each(doubled, st, &cpu3);  // a plain warm solve of the new P
  // the reference itself: problem 1's fault, every re-solve solved
  EXPECT_EQ(cpu1.fault[1], InputFault::kNonFiniteQ);
  int moved = 0;
  for (int k = 0; k < B; ++k) {
    EXPECT_EQ(cpu2.status[k], SolveStatus::kSolved) << "problem " << k;
    EXPECT_EQ(cpu3.status[k], SolveStatus::kSolved) << "problem " << k;
    moved += cpu2.rho_updates[k] > 0;
  }
  auto expect_same = [&](const QpSolutions<double>& ref, const QpSolutions<double>& gpu) {
    for (int k = 0; k < B; ++k) {
      SCOPED_TRACE("problem " + std::to_string(k));
      EXPECT_EQ(gpu.status[k], ref.status[k]);
      EXPECT_EQ(gpu.fault[k], ref.fault[k]);
      EXPECT_EQ(gpu.iterations[k], ref.iterations[k]);
      EXPECT_EQ(gpu.rho_updates[k], ref.rho_updates[k]);
      const double xs = 1.0 + xnorm_of(&ref.x[size_t(k) * n], n), ys = 1.0 + xnorm_of(&ref.y[size_t(k) * m], m);
      for (int j = 0; j < n; ++j) EXPECT_NEAR(gpu.x[size_t(k) * n + j], ref.x[size_t(k) * n + j], 1e-6 * xs);
      for (int j = 0; j < m; ++j) EXPECT_NEAR(gpu.y[size_t(k) * m + j], ref.y[size_t(k) * m + j], 1e-6 * ys);
    }
  };
  for (const cuda::DeviceLayout layout : {cuda::DeviceLayout::kWarp, cuda::DeviceLayout::kThread}) {
    SCOPED_TRACE(cuda::to_string(layout));
    DeviceRun g(layout);
    EXPECT_THROW(g.dev.solve(st, false, true), Error);  // reuse without keep_factors
    g.dev.keep_factors(true);
    g.dev.upload(first.device_arrays());
    g.dev.solve(st, false);
    g.get(bt);
    expect_same(cpu1, g.sol);
    for (const QpBatch<double>* data : {&next, &third}) {
      g.dev.upload_vectors(data->q.data(), data->b.data());
      g.put_warm_start();
      g.dev.solve(st, true, true);
      g.get(bt);
      expect_same(data == &next ? cpu2 : cpu3, g.sol);
    }
    // a full upload forgets the kept factorizations
    g.dev.upload(doubled.device_arrays());
    g.put_warm_start();
    g.dev.solve(st, true, true);
    g.get(bt);
    expect_same(cpu4, g.sol);
  }
  return moved;
}

TEST_F(GpuQpWarp, KeptFactorizationReSolvesAsOnTheCpu) {
  int moved = 0;
  {
    SCOPED_TRACE("cube QPs");
    moved += kept_resolves_as_on_the_cpu(cube_loss_batch(batch_size(64, 4), FrictionModel::kCone, 61).batch, 1.01, 1.5);
  }
  {
    SCOPED_TRACE("random QPs, every cone kind");
    moved += kept_resolves_as_on_the_cpu(random_qp_batch(batch_size(64, 4), 8, mixed(), 61).batch, 1.5, 1.5);
  }
  EXPECT_GT(moved, 0) << "no re-solve moved ρ: storing a new factorization went unchecked";
}

// The device-pointer entry (HostQpArrays/HostQpResults::on_device: a caller's own device
// memory, as PyTorch's CUDA tensors through DLPack): the same answers, bit for bit, as
// the host path, in both layouts, a warm start from device memory included.
template <class T>
void device_pointers_as_host(const QpBatch<T>& bt, cuda::DeviceLayout layout) {
  QpSettings<T> st;
  st.eps_abs = st.eps_rel = T(1e-6);
  const int B = bt.size, n = bt.n, m = bt.m();
  auto solve = [&](bool device, const std::vector<T>* wx, const std::vector<T>* wy, std::vector<T>& x,
                   std::vector<T>& y, std::vector<int>& status, std::vector<T>& rho) {
    cuda::DeviceQpBatch<T> dev(layout);
    cuda::HostQpArrays<T> h = bt.device_arrays();
    x.assign(size_t(B) * n, T(0));
    y.assign(size_t(B) * m, T(0));
    status.assign(B, -1);
    rho.assign(B, T(0));
    std::vector<T> obj(B);
    if (!device) {
      dev.upload(h);
      if (wx) x = *wx, y = *wy;
      cuda::HostQpResults<T> r;
      r.x = x.data(), r.y = y.data(), r.objective = obj.data(), r.status = status.data(), r.rho = rho.data();
      if (wx) dev.upload_warm_start(r);
      dev.solve(st, wx != nullptr);
      dev.download(r);
      return;
    }
    cuda::DeviceArray<T> P(bt.P.size()), q(bt.q.size()), A(bt.A.size()), b(bt.b.size());
    P.upload(bt.P.data()), q.upload(bt.q.data()), A.upload(bt.A.data()), b.upload(bt.b.data());
    h.on_device = true;
    h.P = P.data(), h.q = q.data(), h.A = A.data(), h.b = b.data();
    dev.upload(h);
    cuda::DeviceArray<T> dx(x.size()), dy(y.size()), dobj(B), drho(B);
    cuda::DeviceArray<int> dstatus(B);
    cuda::HostQpResults<T> r;
    r.on_device = true;
    r.x = dx.data(), r.y = dy.data(), r.objective = dobj.data(), r.status = dstatus.data(), r.rho = drho.data();
    if (wx) {
      dx.upload(wx->data()), dy.upload(wy->data());
      dev.upload_warm_start(cuda::HostQpResults<T>{true, dx.data(), dy.data()});
    }
    dev.solve(st, wx != nullptr);
    dev.download(r);
    dx.download(x.data()), dy.download(y.data()), dstatus.download(status.data()), drho.download(rho.data());
  };
  std::vector<T> hx, hy, dx, dy, hr, dr;
  std::vector<int> hs, ds;
  solve(false, nullptr, nullptr, hx, hy, hs, hr);
  solve(true, nullptr, nullptr, dx, dy, ds, dr);
  EXPECT_EQ(hx, dx);
  EXPECT_EQ(hy, dy);
  EXPECT_EQ(hs, ds);
  EXPECT_EQ(hr, dr);
  for (int k = 0; k < B; ++k) EXPECT_EQ(hs[k], int(SolveStatus::kSolved)) << "problem " << k;
  // a warm start from the answer, perturbed
  std::vector<T> wx = hx, wy = hy;
  for (T& v : wx) v *= T(1.01);
  solve(false, &wx, &wy, hx, hy, hs, hr);
  solve(true, &wx, &wy, dx, dy, ds, dr);
  EXPECT_EQ(hx, dx);
  EXPECT_EQ(hy, dy);
  EXPECT_EQ(hs, ds);
}

TEST_F(GpuQp, DevicePointersInAndOutEqualTheHostPath) {
  SCOPED_TRACE("thread layout, double, every cone kind");
  device_pointers_as_host(random_qp_batch(batch_size(64, 6), 8, mixed(), 17).batch, cuda::DeviceLayout::kThread);
}

TEST_F(GpuQpWarp, DevicePointersInAndOutEqualTheHostPath) {
  SCOPED_TRACE("warp layout, float, the cube loss QP");
  device_pointers_as_host(cube_loss_batch(batch_size(64, 3), FrictionModel::kCone, 19).batch.cast<float>(),
                          cuda::DeviceLayout::kWarp);
}

// PGS, plain and with the friction-cone block: the same sweeps on both sides
void expect_lcp_device_matches_cpu(const LcpBatch<double>& bt) {
  LcpSettings<double> st;
  st.tol = 1e-9;
  st.max_iter = 5000;
  LcpSolutions<double> cpu, gpu;
  BatchOptions g;
  g.backend = Backend::kCuda;
  solve_lcp_batch(bt, st, cpu_reference(), cpu);
  solve_lcp_batch(bt, st, g, gpu);
  for (int k = 0; k < bt.size; ++k) {
    SCOPED_TRACE("problem " + std::to_string(k));
    ASSERT_EQ(cpu.status[k], gpu.status[k]);
    EXPECT_EQ(cpu.status[k], SolveStatus::kSolved);
    EXPECT_NEAR(cpu.iterations[k], gpu.iterations[k], 1);
    EXPECT_GT(gpu.iterations[k], 1);
    EXPECT_LE(gpu.residual[k], st.tol);
    for (int i = 0; i < bt.n; ++i) {
      EXPECT_NEAR(cpu.z[size_t(k) * bt.n + i], gpu.z[size_t(k) * bt.n + i], 1e-7);
      EXPECT_NEAR(cpu.w[size_t(k) * bt.n + i], gpu.w[size_t(k) * bt.n + i], 1e-7);
    }
    if (!bt.contact()) {
      // independently of the solver code: z >= 0, w = Mz + q >= 0 and z ⟂ w, from the data
      for (int i = 0; i < bt.n; ++i) {
        double wi = bt.q[size_t(k) * bt.n + i];
        for (int j = 0; j < bt.n; ++j)
          wi += bt.M[size_t(k) * bt.n * bt.n + i * bt.n + j] * gpu.z[size_t(k) * bt.n + j];
        const double zi = gpu.z[size_t(k) * bt.n + i];
        EXPECT_GE(zi, -1e-12) << "z[" << i << "]";
        EXPECT_GE(wi, -1e-8) << "w[" << i << "]";
        EXPECT_LE(std::min(zi, std::abs(wi)), 1e-8) << "z[" << i << "] w[" << i << "]";
        EXPECT_NEAR(wi, gpu.w[size_t(k) * bt.n + i], 1e-9 * (1 + std::abs(wi))) << "w[" << i << "] as reported";
      }
    }
  }
}

TEST_F(GpuLcp, PgsMatchesCpu) { expect_lcp_device_matches_cpu(random_spd_batch(batch_size(300, 64), 12, 4)); }

TEST_F(GpuLcp, FrictionConeBlockMatchesCpu) {
  LcpBatch<double> bt = random_spd_batch(batch_size(300, 64), 12, 5);
  bt.mu.resize(size_t(bt.size) * 4);
  for (size_t i = 0; i < bt.mu.size(); ++i) bt.mu[i] = 0.1 + 0.1 * double(i % 5);
  expect_lcp_device_matches_cpu(bt);
}

// ---- ContactNets ------------------------------------------------------------------------

std::vector<double> flat_states(const std::vector<TransitionFrame>& frames, bool next) {
  std::vector<double> out;
  for (const auto& t : frames) {
    const State& s = next ? t.x_next : t.x;
    out.insert(out.end(), s.data(), s.data() + 13);
  }
  return out;
}

// the CPU loss of `frames` at the model's parameters: per-transition losses and
// the summed gradient
double cpu_loss(ContactNetsLoss& loss, LearnableContactModel& model,
                std::vector<TransitionFrame>& frames, std::vector<double>* per,
                std::vector<double>& grad) {
  model.frames(frames, 1);
  LossBatchResult r;
  loss.evaluate(frames, true, r);
  EXPECT_EQ(r.not_solved, 0);
  grad.assign(model.parameter_count(), 0.0);
  model.backprop_batch(frames, r.grad, grad.data());
  double sum = 0;
  if (per) per->resize(frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    sum += r.qp_loss[i] + r.reg_loss[i];
    if (per) (*per)[i] = r.qp_loss[i] + r.reg_loss[i];
  }
  return sum;
}

// transitions resident on the device, assembly, solve and gradient there, in
// the layout asked for; losses and the summed gradient against the CPU's
void device_loss_matches_cpu(cuda::DeviceLayout layout, int count, bool check_psd) {
  ContactNetsLossConfig cfg;
  BatchOptions opt;
  opt.threads = 1;
  QpSettings<double> qs = tight();
  qs.check_psd = check_psd;  // training runs without it (its P is PSD by construction)
  ContactNetsLoss loss(cfg, qs, opt);
  PolytopeContactModel model(perturb_polytope(PolytopeParams::cube(0.0524, 0.18), 0.4, 7));
  auto frames = random_transitions(model, count, 19);
  cuda::DeviceContactNets<double> dev(loss_consts(cfg), qs, layout);
  EXPECT_EQ(dev.layout(), layout == cuda::DeviceLayout::kAuto ? cuda::DeviceLayout::kWarp : layout);
  dev.upload_transitions(0, flat_states(frames, false).data(), flat_states(frames, true).data(),
                         static_cast<int>(frames.size()));
  std::vector<int> idx(frames.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int>(i);
  std::vector<double> dl(frames.size()), dg(57);
  const std::vector<double> theta = model.parameters();
  const cuda::DeviceLossStats st =
      dev.evaluate(0, theta.data(), idx.data(), static_cast<int>(idx.size()), dl.data(), dg.data());
  EXPECT_EQ(st.not_solved, 0);
  EXPECT_GT(st.iterations, long(5 * frames.size()));
  // the slowest QP's figures (what a step waits for): at least the mean, less than the sum
  EXPECT_GE(long(st.max_iterations) * long(frames.size()), st.iterations);
  EXPECT_LT(long(st.max_iterations), st.iterations);
  EXPECT_GE(st.max_rho_updates, 0);
  EXPECT_GE(st.rho_updates, long(st.max_rho_updates));
  // for bench/gpu_model.py, which reads it from the simulator's log of this test's first launches
  std::fprintf(stderr, "device loss: %zu transitions, %ld iterations (slowest %d), %ld rho updates (most %d)\n",
               frames.size(), st.iterations, st.max_iterations, st.rho_updates, st.max_rho_updates);
  std::vector<double> per, hg;
  cpu_loss(loss, model, frames, &per, hg);
  for (size_t i = 0; i < frames.size(); ++i)
    EXPECT_NEAR(dl[i], per[i], 1e-6 * (1 + per[i])) << "transition " << i;
  for (int j = 0; j < 57; ++j) EXPECT_NEAR(dg[j], hg[j], 1e-5 * (1 + std::abs(hg[j]))) << "parameter " << j;
  // a second evaluation starts from the first's answers (warm, per transition): fewer iterations, same losses
  std::vector<double> dl2(frames.size()), dg2(57);
  const cuda::DeviceLossStats st2 =
      dev.evaluate(0, theta.data(), idx.data(), static_cast<int>(idx.size()), dl2.data(), dg2.data());
  EXPECT_LT(st2.iterations, st.iterations);
  for (size_t i = 0; i < frames.size(); ++i)
    EXPECT_NEAR(dl2[i], per[i], 1e-6 * (1 + per[i])) << "transition " << i << ", warm";
  // a batch's k-th problem is transition idx[k]: the same three evaluations with the
  // batch in reverse order (each transition's QP, warm start and answer stay its own)
  // give every transition the same loss and the batch the same iterations, bit for bit
  cuda::DeviceContactNets<double> rev(loss_consts(cfg), qs, layout);
  rev.upload_transitions(0, flat_states(frames, false).data(), flat_states(frames, true).data(),
                         static_cast<int>(frames.size()));
  std::vector<int> ridx(idx.rbegin(), idx.rend());
  const int B = static_cast<int>(idx.size());
  std::vector<double> rl(frames.size()), rg(57), dl3(frames.size()), rl3(frames.size());
  const cuda::DeviceLossStats r1 = rev.evaluate(0, theta.data(), ridx.data(), B, rl.data(), rg.data());
  for (int k = 0; k < B; ++k) EXPECT_EQ(rl[k], dl[ridx[k]]) << "reversed, cold, transition " << ridx[k];
  EXPECT_EQ(r1.iterations, st.iterations);
  EXPECT_EQ(r1.max_iterations, st.max_iterations);
  EXPECT_EQ(r1.max_rho_updates, st.max_rho_updates);
  const cuda::DeviceLossStats r2 = rev.evaluate(0, theta.data(), ridx.data(), B, rl.data(), rg.data());
  for (int k = 0; k < B; ++k) EXPECT_EQ(rl[k], dl2[ridx[k]]) << "reversed, warm, transition " << ridx[k];
  EXPECT_EQ(r2.iterations, st2.iterations);
  const cuda::DeviceLossStats d3 = dev.evaluate(0, theta.data(), idx.data(), B, dl3.data(), dg2.data());
  const cuda::DeviceLossStats r3 = rev.evaluate(0, theta.data(), idx.data(), B, rl3.data(), rg.data());
  EXPECT_EQ(rl3, dl3);
  EXPECT_EQ(r3.iterations, d3.iterations);

  // the warm starts kept on the device: per transition x, y and the final ρ. Put into a
  // fresh device object, they give the next evaluation bit for bit
  const std::vector<std::vector<double>> kept = dev.download_warm_starts(0);
  ASSERT_EQ(kept.size(), frames.size());
  int moved = 0;
  for (const auto& w : kept) {
    ASSERT_EQ(w.size(), size_t(cn::kN + cn::rows(false) + 1));
    EXPECT_GE(w.back(), qs.rho_min);
    moved += w.back() != qs.rho;
  }
  EXPECT_GT(moved, 0) << "no transition's rho moved: the checks below would not see it carried";
  cuda::DeviceContactNets<double> copy(loss_consts(cfg), qs, layout);
  copy.upload_transitions(0, flat_states(frames, false).data(), flat_states(frames, true).data(), B);
  copy.upload_warm_starts(0, kept);
  std::vector<double> c4(frames.size()), d4(frames.size());
  const cuda::DeviceLossStats s4c = copy.evaluate(0, theta.data(), idx.data(), B, c4.data(), rg.data());
  const cuda::DeviceLossStats s4d = dev.evaluate(0, theta.data(), idx.data(), B, d4.data(), dg2.data());
  EXPECT_EQ(c4, d4);
  EXPECT_EQ(s4c.iterations, s4d.iterations);
  // ρ in and out on the device: without adaptation a solve ends at the ρ it started at, its
  // own (odd transitions, 0.37) or the settings' (even ones, given x and y only)
  QpSettings<double> fixed = qs;
  fixed.adaptive_rho = false;
  fixed.fallback = false;  // (a restart's ρ is the fallback settings': reported 0)
  fixed.max_iter = 300;    // (stopped by the budget or not, ρ is where it started)
  cuda::DeviceContactNets<double> f(loss_consts(cfg), fixed, layout);
  f.upload_transitions(0, flat_states(frames, false).data(), flat_states(frames, true).data(), B);
  std::vector<std::vector<double>> start = kept;
  for (int t = 0; t < B; ++t) {
    if (t % 2) start[t].back() = 0.37;
    else start[t].pop_back();
  }
  f.upload_warm_starts(0, start);
  f.evaluate(0, theta.data(), idx.data(), B, c4.data(), nullptr);
  const std::vector<std::vector<double>> after = f.download_warm_starts(0);
  for (int t = 0; t < B; ++t) EXPECT_EQ(after[t].back(), t % 2 ? 0.37 : fixed.rho) << "transition " << t;
  // a list of the wrong length or width is refused
  testing::expect_error([&] { f.upload_warm_starts(0, std::vector<std::vector<double>>(B + 1)); },
                        {"device warm starts", "entries for a set of"});
  start[1].resize(5);
  testing::expect_error([&] { f.upload_warm_starts(0, start); }, {"transition 1", "numbers"});
}

TEST_F(GpuContactNets, DeviceLossAndGradientMatchCpu) {  // auto: a warp per transition's QP
  device_loss_matches_cpu(cuda::DeviceLayout::kAuto, batch_size(300, 32), false);  // as training runs
}

TEST_F(GpuContactNets, DeviceLossThreadLayoutMatchesCpu) {  // a thread per transition's QP
  device_loss_matches_cpu(cuda::DeviceLayout::kThread, batch_size(300, 16), true);  // with the PSD test
}

// the device training step end to end: Adam steps on mini-batches with the
// device's gradient follow the CPU's, parameter by parameter
TEST_F(GpuContactNets, AdamStepsMatchCpu) {
  ContactNetsLossConfig cfg;
  BatchOptions opt;
  opt.threads = 1;
  ContactNetsLoss loss(cfg, tight(), opt);
  const PolytopeParams start = perturb_polytope(PolytopeParams::cube(0.0524, 0.18), 0.3, 8);
  PolytopeContactModel cpu_model(start), gpu_model(start);
  const int count = batch_size(256, 32), batch = count / 2, steps = 3;  // steps 0, 1 cold, 2 warm
  auto frames = random_transitions(cpu_model, count, 23);
  cuda::DeviceContactNets<double> dev(loss_consts(cfg), tight());
  dev.upload_transitions(0, flat_states(frames, false).data(), flat_states(frames, true).data(), count);
  AdamWSettings as;
  as.lr = 1e-3;
  as.weight_decay = 0;
  AdamW cpu_adam(57, as), gpu_adam(57, as);
  for (int s = 0; s < steps; ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    std::vector<int> idx(batch);
    for (int i = 0; i < batch; ++i) idx[i] = (s * batch + i) % count;
    std::vector<TransitionFrame> mb(batch);
    for (int i = 0; i < batch; ++i) mb[i] = frames[idx[i]];
    std::vector<double> cg;
    const double cl = cpu_loss(loss, cpu_model, mb, nullptr, cg);
    std::vector<double> dl(batch), dg(57);
    const std::vector<double> gtheta = gpu_model.parameters();
    const cuda::DeviceLossStats st = dev.evaluate(0, gtheta.data(), idx.data(), batch, dl.data(), dg.data());
    EXPECT_EQ(st.not_solved, 0);
    double gl = 0;
    for (double v : dl) gl += v;
    EXPECT_NEAR(gl, cl, 1e-6 * (1 + std::abs(cl)));
    std::vector<double> ct = cpu_model.parameters(), gt = gtheta;
    Eigen::Map<Eigen::VectorXd> ctv(ct.data(), 57), gtv(gt.data(), 57);
    cpu_adam.step(ctv, Eigen::Map<const Eigen::VectorXd>(cg.data(), 57));
    gpu_adam.step(gtv, Eigen::Map<const Eigen::VectorXd>(dg.data(), 57));
    cpu_model.set_parameters(ct);
    gpu_model.set_parameters(gt);
    for (int j = 0; j < 57; ++j) {
      EXPECT_NEAR(gt[j], ct[j], 1e-7 * (1 + std::abs(ct[j]))) << "parameter " << j;
      EXPECT_NE(ct[j], start.pack()[j]) << "parameter " << j << " did not move";
    }
  }
}

// a GPU training run of `c` (backend cuda, two epochs) against the same run stopped after
// its first epoch and resumed: the histories agree bit for bit (losses and mean QP
// iterations). Returns the warm starts the first epoch's checkpoint kept.
NpzArchive expect_gpu_resume_bit_for_bit(TrainConfig c, const std::string& prefix) {
  c.backend = "cuda";
  c.progress = false;
  std::ostringstream log;
  c.out = testing::fresh_dir(prefix, "straight");
  c.max_epochs = 2;
  const TrainResult a = train(c, log);
  c.out = testing::fresh_dir(prefix, "resumed");
  c.max_epochs = 1;
  EXPECT_FALSE(train(c, log).resumed);
  const nlohmann::json ck = nlohmann::json::parse(testing::read_text_file(c.out + "/checkpoint.json"));
  NpzArchive wa;
  EXPECT_TRUE(ck.contains("warm_file")) << "a GPU run's checkpoint keeps the device's warm starts\n" << log.str();
  if (ck.contains("warm_file")) wa = read_npz(c.out + "/" + ck["warm_file"].get<std::string>());
  c.max_epochs = 2;
  const TrainResult b = train(c, log);
  EXPECT_TRUE(b.resumed);
  EXPECT_EQ(a.history.size(), b.history.size());
  for (size_t i = 0; i < std::min(a.history.size(), b.history.size()); ++i) {
    EXPECT_EQ(a.history[i].train_loss, b.history[i].train_loss) << "epoch " << i;
    EXPECT_EQ(a.history[i].valid_loss, b.history[i].valid_loss) << "epoch " << i;
    EXPECT_EQ(a.history[i].mean_qp_iterations, b.history[i].mean_qp_iterations) << "epoch " << i;
  }
  return wa;
}

// a GPU training run killed after an epoch and resumed from its checkpoint ends where
// the uninterrupted run ends, bit for bit: the checkpoint holds the device's warm starts
// (x, y and ρ per transition), which the resumed run puts back on the device
TEST_F(GpuContactNets, TrainerResumesBitForBit) {
  const std::string dir = testing::fresh_dir("impulse_gpu_trainer_", "data");
  SyntheticConfig sc;
  sc.n_tosses = 6;
  sc.seed = 3;
  sc.min_states = sc.max_states = simulated() ? 8 : 40;
  sc.stop_at_rest = false;
  write_tosses(dir + "/syn.npz", generate_synthetic_tosses(sc));
  TrainConfig c;
  c.data = dir + "/syn.npz";
  c.seed = 4;
  c.batch_size = 16;
  const NpzArchive wa = expect_gpu_resume_bit_for_bit(c, "impulse_gpu_trainer_");
  // the checkpoint's warm starts are the device's: a row per transition, x, y and ρ
  ASSERT_TRUE(wa.count("train"));
  const NpyArray& wt = wa.at("train");
  ASSERT_EQ(wt.shape.size(), 2u);
  EXPECT_EQ(wt.shape[1], int64_t(cn::kN + cn::rows(false) + 1));
  const std::vector<double> flat = wt.as<double>();
  int solved = 0;
  for (int64_t r = 0; r < wt.shape[0]; ++r) solved += std::isfinite(flat[size_t(r * wt.shape[1])]);
  EXPECT_EQ(solved, wt.shape[0]) << "every training transition was solved in epoch 1";
}

// the Deep model assembles its loss QPs on the host and solves them on the device
TEST_F(GpuContactNets, DeepModelSolvesOnDevice) {
  ContactNetsLossConfig cfg;
  BatchOptions cpu_opt = cpu_reference(), gpu_opt;
  gpu_opt.backend = Backend::kCuda;
  ContactNetsLoss cpu_loss_fn(cfg, tight(), cpu_opt), gpu_loss_fn(cfg, tight(), gpu_opt);
  cpu_loss_fn.settings() = as_on_device(tight(), true);  // the device's: a warp per QP (n = 32)
  DeepContactModel model(perturb_polytope(PolytopeParams::cube(0.0524, 0.18), 0.3, 4), 0.0524, 11,
                         {16, 16});
  auto frames = random_transitions(model, batch_size(64, 32), 29);
  std::vector<double> cper, gper, cg, gg;
  const double cl = cpu_loss(cpu_loss_fn, model, frames, &cper, cg);
  const double gl = cpu_loss(gpu_loss_fn, model, frames, &gper, gg);
  EXPECT_NEAR(gl, cl, 1e-7 * (1 + std::abs(cl)));
  for (size_t i = 0; i < frames.size(); ++i)
    EXPECT_NEAR(gper[i], cper[i], 1e-7 * (1 + cper[i])) << "transition " << i;
  double gnorm = 0;
  for (size_t j = 0; j < cg.size(); ++j) {
    EXPECT_NEAR(gg[j], cg[j], 1e-5 * (1 + std::abs(cg[j]))) << "parameter " << j;
    gnorm += std::abs(cg[j]);
  }
  EXPECT_GT(gnorm, 0);
}

// CCN on the device: the loss, θ gradient and residual gradient per transition
// against the CPU loss (the same host-device code and solver), for the elbow (two
// links, a joint) and the cube (the one-link case), and AdamW steps driven by the
// device's gradient against the same steps driven by the CPU's.
class GpuCcn : public GpuQp {};

// `count` random states of `sys` dropped onto the ground with an upward jump, each
// transition lifted so that no vertex sits at |φ'|'s kink (φ' = 0)
std::vector<CcnTransition> ccn_drops(const MultibodySystem& sys, const CcnModel& model, const CcnLossConfig& cfg,
                                     int count, std::vector<double>& xs, std::vector<double>& xns) {
  std::mt19937_64 rng(17);
  std::normal_distribution<double> nd(0, 1);
  std::vector<CcnTransition> batch;
  for (int i = 0; i < count; ++i) {
    CcnTransition t;
    t.x.resize(sys.width());
    t.x.head<4>() = Eigen::Vector4d(nd(rng), nd(rng), nd(rng), nd(rng)).normalized();
    t.x.segment<3>(4) = Eigen::Vector3d(0, 0, 0);
    t.x(7) = 0.5 * nd(rng);  // the elbow's joint angle (the cube: overwritten by its first velocity below)
    for (int j = 0; j < sys.nv(); ++j) t.x(sys.nq() + j) = nd(rng);
    t.x_next = t.x;
    t.x_next(sys.nq() + 5) += 0.6;
    Eigen::VectorXd qn(sys.nq());
    integrate_configuration(sys, t.x.head(sys.nq()), t.x_next.tail(sys.nv()), cfg.dt, qn);
    t.x_next.head(sys.nq()) = qn;
    Kinematics k;
    kinematics(sys, t.x_next.head(sys.nq()), k);
    MultibodyContacts c;
    contact_frame(sys, k, model.vertices(), c);
    const double lift = 0.0005 - 0.002 * (i % 3) - c.phi.minCoeff();
    t.x(6) += lift;
    t.x_next(6) += lift;
    batch.push_back(t);
    xs.insert(xs.end(), t.x.data(), t.x.data() + t.x.size());
    xns.insert(xns.end(), t.x_next.data(), t.x_next.data() + t.x_next.size());
  }
  return batch;
}

void ccn_device_matches_cpu(const MultibodySystem& sys, int count) {
  CcnModel model(sys, true, 3);
  model.randomize(6);
  CcnLossConfig cfg;
  std::vector<double> xs, xns;
  const std::vector<CcnTransition> batch = ccn_drops(sys, model, cfg, count, xs, xns);
  BatchOptions opt = cpu_reference();
  CcnLoss cpu(cfg, as_on_device(tight()), opt);
  Eigen::VectorXd cg;
  const CcnLossResult cr = cpu.evaluate(model, batch, &cg);
  EXPECT_EQ(cr.not_solved, 0);
  // the residuals and their gradient as the trainer would pass them
  Eigen::MatrixXd delta(sys.nv(), count);
  for (int i = 0; i < count; ++i) {
    Eigen::VectorXd f(model.network().input_size());
    model.residual_features(batch[static_cast<size_t>(i)].x, f);
    delta.col(i) = model.network()(f);
  }
  cuda::DeviceCcn<double> dev(ccn_device_system(model, cfg), tight());
  dev.upload_transitions(0, xs.data(), xns.data(), count);
  std::vector<int> idx(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) idx[static_cast<size_t>(i)] = i;
  const Eigen::VectorXd theta = model.parameters();
  std::vector<double> dl(static_cast<size_t>(count)), dg(static_cast<size_t>(model.net_offset()));
  Eigen::MatrixXd gdelta(sys.nv(), count);
  const cuda::DeviceLossStats st =
      dev.evaluate(0, theta.data(), delta.data(), idx.data(), count, dl.data(), dg.data(), gdelta.data());
  EXPECT_EQ(st.not_solved, 0);
  EXPECT_GT(st.iterations, long(5 * count));
  for (int i = 0; i < count; ++i)
    EXPECT_NEAR(dl[static_cast<size_t>(i)], cr.per_transition[static_cast<size_t>(i)],
                1e-6 * (1 + std::abs(cr.per_transition[static_cast<size_t>(i)])))
        << "transition " << i;
  // θ: the device sums, the CPU averages
  for (int j = 0; j < model.net_offset(); ++j)
    EXPECT_NEAR(dg[static_cast<size_t>(j)] / count, cg(j), 1e-5 * (1 + std::abs(cg(j)))) << "parameter " << j;
  // the network's gradient from the device's ∂loss/∂δ equals the CPU's
  MlpWorkspace ws;
  Eigen::MatrixXd F(model.network().input_size(), count), Y(sys.nv(), count);
  for (int i = 0; i < count; ++i) model.residual_features(batch[static_cast<size_t>(i)].x, F.col(i));
  model.network().forward(F, Y, ws);
  Eigen::VectorXd gnet = Eigen::VectorXd::Zero(model.network().num_params());
  model.network().backward(ws, gdelta / count, gnet);
  for (int L = 0; L < model.network().num_layers(); ++L)  // the weight penalty (host side in both)
    Eigen::Map<Eigen::MatrixXd>(gnet.data() + model.network().weight_offset(L), model.network().weight(L).rows(),
                                model.network().weight(L).cols()) +=
        2 * cfg.weights.applied(cfg.dt).res_w * model.network().weight(L);
  const Eigen::VectorXd cnet = cg.tail(model.network().num_params());
  EXPECT_LT((gnet - cnet).cwiseAbs().maxCoeff(), 1e-5 * (1 + cnet.cwiseAbs().maxCoeff()));
  EXPECT_GT(cnet.cwiseAbs().maxCoeff(), 0);
}



TEST_F(GpuCcn, DeviceLossAndGradientsMatchCpu) { ccn_device_matches_cpu(elbow_system(), batch_size(64, 4)); }

TEST_F(GpuCcn, CubeDeviceLossAndGradientsMatchCpu) {  // one link, no joint
  ccn_device_matches_cpu(cube_system(), batch_size(64, 4));
}

// a training step end to end: AdamW over mini-batches, the device's summed θ gradient
// (divided by the batch) against the CPU loss's mean gradient; the parameters after
// each step agree, and move. Steps 0 and 1 are cold, step 2 revisits step 0's
// transitions warm-started on the device.
TEST_F(GpuCcn, AdamStepsMatchCpu) {
  const MultibodySystem sys = cube_system();
  CcnModel start(sys, false, 3);
  start.randomize(8);
  CcnLossConfig cfg;
  const int count = batch_size(128, 4), batch = count / 2, steps = 3;
  std::vector<double> xs, xns;
  const std::vector<CcnTransition> frames = ccn_drops(sys, start, cfg, count, xs, xns);
  CcnLoss cpu(cfg, as_on_device(tight()), cpu_reference());
  cuda::DeviceCcn<double> dev(ccn_device_system(start, cfg), tight());
  dev.upload_transitions(0, xs.data(), xns.data(), count);
  CcnModel cpu_model = start, gpu_model = start;
  const int np = start.parameter_count();
  ASSERT_EQ(np, start.net_offset());  // no network
  AdamWSettings as;
  as.lr = 1e-3;
  as.weight_decay = 0;
  AdamW cpu_adam(np, as), gpu_adam(np, as);
  const Eigen::VectorXd theta0 = start.parameters();
  for (int s = 0; s < steps; ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    std::vector<int> idx(static_cast<size_t>(batch));
    std::vector<CcnTransition> mb;
    for (int i = 0; i < batch; ++i) {
      idx[static_cast<size_t>(i)] = (s * batch + i) % count;
      mb.push_back(frames[static_cast<size_t>(idx[static_cast<size_t>(i)])]);
    }
    Eigen::VectorXd cg;
    const CcnLossResult cr = cpu.evaluate(cpu_model, mb, &cg);
    EXPECT_EQ(cr.not_solved, 0);
    const Eigen::VectorXd gtheta = gpu_model.parameters();
    std::vector<double> dl(static_cast<size_t>(batch)), dg(static_cast<size_t>(np));
    const cuda::DeviceLossStats st =
        dev.evaluate(0, gtheta.data(), nullptr, idx.data(), batch, dl.data(), dg.data(), nullptr);
    EXPECT_EQ(st.not_solved, 0);
    for (int i = 0; i < batch; ++i)
      EXPECT_NEAR(dl[static_cast<size_t>(i)], cr.per_transition[static_cast<size_t>(i)],
                  1e-6 * (1 + std::abs(cr.per_transition[static_cast<size_t>(i)])))
          << "transition " << idx[static_cast<size_t>(i)];
    Eigen::VectorXd ct = cpu_model.parameters(), gt = gtheta;
    const Eigen::VectorXd gg = Eigen::Map<const Eigen::VectorXd>(dg.data(), np) / batch;
    cpu_adam.step(ct, cg);
    gpu_adam.step(gt, gg);
    cpu_model.set_parameters(ct);
    gpu_model.set_parameters(gt);
    int moved = 0;
    for (int j = 0; j < np; ++j) {
      EXPECT_NEAR(gt(j), ct(j), 1e-7 * (1 + std::abs(ct(j)))) << "parameter " << j;
      moved += ct(j) != theta0(j);
    }
    EXPECT_GT(moved, np / 4) << "the steps moved too few parameters to test anything";
  }
}

// a CCN GPU training run (its QPs warm-started on the device from their last answers)
// killed after an epoch and resumed from its checkpoint ends where the uninterrupted
// run ends, bit for bit: the checkpoint keeps the device's warm starts
TEST_F(GpuCcn, TrainerResumesBitForBit) {
  const std::string dir = testing::fresh_dir("impulse_gpu_ccn_trainer_", "data");
  SyntheticSystemOptions o;
  o.system = "cube";
  o.tosses = 6;
  o.states = simulated() ? 12 : 40;
  o.landing_fraction = 0.9;  // (short tosses: they start low and land)
  o.clearance_min = 0.005, o.clearance_max = 0.02;
  o.seed = 5;
  write_system_tosses(dir + "/tosses.npz", generate_system_tosses(o));
  TrainConfig c;
  c.method = "ccn";
  c.system = "cube";
  c.data = dir + "/tosses.npz";
  c.seed = 2;
  c.batch_size = 16;
  const NpzArchive wa = expect_gpu_resume_bit_for_bit(c, "impulse_gpu_ccn_trainer_");
  ASSERT_TRUE(wa.count("train"));
  EXPECT_EQ(wa.at("train").shape.at(1), int64_t(2 * 3 * 8)) << "x and y of the cube's 8 vertex contacts";
}


// ---- planar impact: the Drumwright-Shell and IRB QP batches on the device ------------

class GpuImpact : public GpuQp {};

TEST_F(GpuImpact, DrumwrightShellAndIrbBatchesMatchCpu) {
  const std::string path = testing::shared_data("planar_impact/ellipse_impacts.npz");
  if (!std::ifstream(path).good())
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("planar impact data", path, "impacts"));
  ImpactSet set = load_impacts(path);
  set.impacts.resize(static_cast<size_t>(batch_size(1200, 32)));
  const std::vector<ImpactGeometry> g = impact_geometry(set);
  int solved_cpu = 0, solved_gpu = 0;
  const auto irb_cpu = irb_impulses(g, 0, &solved_cpu, Backend::kCpu);
  const auto irb_gpu = irb_impulses(g, 0, &solved_gpu, Backend::kCuda);
  EXPECT_EQ(solved_gpu, static_cast<int>(g.size()));
  EXPECT_EQ(solved_cpu, solved_gpu);
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_LE((irb_cpu[i] - irb_gpu[i]).norm(), 1e-6 * irb_cpu[i].norm()) << "IRB, impact " << i;
  const ImpactParams p{0.105, 0.504};
  const auto ds_cpu = predict_impacts(impact_model_index("drumwright-shell"), g, {p}, 0, Backend::kCpu);
  const auto ds_gpu = predict_impacts(impact_model_index("drumwright-shell"), g, {p}, 0, Backend::kCuda);
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(ds_gpu[i].status, kImpactOk) << i;
    EXPECT_LE((ds_cpu[i].P - ds_gpu[i].P).norm(), 1e-6 * ds_cpu[i].P.norm()) << "Drumwright-Shell, impact " << i;
  }
}

TEST_F(GpuImpact, ApLcpBatchesMatchCpuLanes) {
  const std::string path = testing::shared_data("planar_impact/ellipse_impacts.npz");
  if (!std::ifstream(path).good())
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("planar impact data", path, "impacts"));
  ImpactSet set = load_impacts(path);
  set.impacts.resize(static_cast<size_t>(batch_size(1200, 64)));
  const std::vector<ImpactGeometry> g = impact_geometry(set);
  for (const ImpactParams p : {ImpactParams{0.101, 0.526}, ImpactParams{1.0, 0.9}})
    for (const char* name : {"ap-poisson", "ap-newton"}) {
      int fallbacks_cpu = -1, fallbacks_gpu = -1;
      const auto cpu = predict_impacts(impact_model_index(name), g, {p}, 0, Backend::kCpu, &fallbacks_cpu);
      const auto gpu = predict_impacts(impact_model_index(name), g, {p}, 0, Backend::kCuda, &fallbacks_gpu);
      // every impact solved by its pieces on both: the comparison is of the pieces, not of Lemke
      EXPECT_EQ(fallbacks_cpu, 0) << name;
      EXPECT_EQ(fallbacks_gpu, 0) << name;
      for (size_t i = 0; i < g.size(); ++i) {
        EXPECT_EQ(gpu[i].status, cpu[i].status) << name << ", impact " << i;
        // the same arithmetic; the device may contract a multiply-add differently
        EXPECT_LE((cpu[i].P - gpu[i].P).norm(), 1e-12 * (1 + cpu[i].P.norm())) << name << ", impact " << i;
      }
    }
}

}  // namespace
}  // namespace impulse
