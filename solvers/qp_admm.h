// Conic QP by ADMM (OSQP/SCS family), one problem, host or device.
//
//   minimize ½ xᵀPx + qᵀx   subject to  Ax + s = b,  s ∈ K
//
// K is a ConeSpec (zero, nonnegative, 3-D second-order cones, in that row
// order). With z = Ax = b − s the iteration is OSQP's over the set C = b − K:
//   (P + diag(σ) + Aᵀ diag(ρ) A) x̃ = σ∘x − q + Aᵀ(ρ∘z − y),   z̃ = A x̃
//   x ← αx̃ + (1−α)x,  v = αz̃ + (1−α)z
//   z ← Π_C(v + y/ρ),  y ← y + ρ∘(v − z)
// Π_C(w) = b − Π_K(b − w) in closed form per cone. Per-row ρ and per-variable
// σ come from a Ruiz equilibration (QpSettings::scaling_iters), which makes
// this the OSQP iteration on the scaled problem expressed in original units. The duals satisfy, at a
// solution, Px + q + Aᵀy = 0, y ∈ K* (y free on zero rows), sᵀy = 0, so that
// the optimal value's gradient with respect to b is −y.
//
// The factorization is dense (n ≤ ~64); A is sparse with a pattern shared by
// the whole batch. Allocation: none; the caller provides a workspace of
// qp_work_size(n, m) elements (the GPU kernels), or on the host
// qp_work_host_size(n, m) carved with dense = true, which adds the slices of
// the dense x-step (QpSettings::dense_iteration). Determinism: the same inputs
// give bitwise the same outputs on one backend.
#pragma once

#include "solvers/cones.h"
#include "solvers/dense.h"
#include "solvers/qp_anderson.h"
#include "solvers/status.h"

IMPULSE_NAMESPACE_BEGIN

// QpSettings::ipm_switch's default: the host batch path chooses it per shape
constexpr int kQpIpmSwitchAuto = -1;

// Solver settings; plain struct with documented defaults.
template <class T>
struct QpSettings {
  T rho = T(1);               // ADMM step size for inequality / cone rows (of the scaled problem)
  // equality rows use rho * rho_eq_scale. Double: 100 (on the 13 small
  // Maros-Meszaros QPs at eps 1e-6 the median iterations fall from 415 at
  // 10 to 245, CVXQP3_S from 1,741 to 400; OSQP's 1e3 gives 164 there but
  // leaves random equality-constrained QPs (n = 32) at eps 1e-9 unsolved in
  // 50,000 iterations; the cube and ContactNets QPs have no equality rows).
  // Float: 10, since at 1e3 the float iteration stalls near 1e-3 residual
  // (K too ill-conditioned for float Cholesky).
  T rho_eq_scale = T(sizeof(T) == 4 ? 10 : 100);
  T sigma = T(1e-6);          // proximal term on x (keeps the system definite)
  T alpha = T(1.6);           // over-relaxation, in (0, 2)
  T eps_abs = T(1e-5);        // absolute residual tolerance
  T eps_rel = T(1e-5);        // relative residual tolerance
  T eps_pinf = T(1e-6);       // primal infeasibility certificate tolerance
  T eps_dinf = T(1e-6);       // dual infeasibility certificate tolerance
  int max_iter = 4000;        // iteration budget
  // residuals (and the stopping test) every k-th iteration, and at iteration 1
  // of a warm start, which may already be optimal; a check costs about two
  // iterations (P·x, A·x, Aᵀy, the infeasibility tests). (Checking when a
  // running Ax says the primal residual is met was tried: the dual residual
  // is the one that lags on the cube QPs, so it saved nothing.)
  int check_every = 5;
  // schedule each check from the last two: with the residuals' ratio to
  // their tolerances r₁ > r₂ > 1 at checks Δ iterations apart, the next is
  // where a steady rate would bring r to 1 (at most 2·check_every ahead).
  // The cube QP then stops at its iteration, not at the next multiple of
  // check_every, after fewer checks. The thread kernel runs with it off
  // (cuda::detail::device_settings): threads of a warp that check at
  // different iterations all wait for each check. The warp kernel (a problem
  // a warp) runs it as given.
  bool predict_checks = true;
  bool adaptive_rho = true;   // rescale rho from the residual ratio
  // iterations between rho updates (a multiple of check_every), and the
  // factor by which rho must change for an update (a refactorization). An
  // update is skipped when the residuals, extrapolated from the last two
  // checks, reach the tolerance within one more interval: a refactorization
  // costs about ten iterations at n = 32. Double: 10 and 2 (were 25 and 5):
  // iterations on the real ContactNets QPs at 1e-5 −20% (train) and −40%
  // (ground truth), octagon at 1e-5 −20%, unchanged at 1e-3. Float keeps 25
  // and 5: adapting that often drives rho where float rounding floors the
  // dual residual near 1e-4 (6 of the 1,000 ground-truth QPs then never
  // reach 1e-5).
  int adaptive_rho_interval = sizeof(T) == 4 ? 25 : 10;
  T adaptive_rho_tolerance = T(sizeof(T) == 4 ? 5 : 2);
  int max_rho_updates = 10;   // bound on refactorizations per solve
  T rho_min = T(1e-6);
  T rho_max = T(1e6);
  bool check_input = true;    // reject non-finite data, asymmetric or non-PSD P
  // with check_input: also test that P is positive semidefinite (up to psd_tol), a
  // factorization of P + δI every solve. A caller whose P is PSD by construction may
  // skip it (the ContactNets loss QP: a Gram matrix plus PSD contact blocks and
  // nonnegative diagonals, solvers/contactnets_qp.h; its training runs without it).
  // Without the test a P that is not PSD is not reported as kNotPsdP: the solve may
  // fail to factor (numerical_error), not converge, or stop at a point that is no
  // minimum.
  bool check_psd = true;
  // apply K⁻¹ as a dense matrix-vector product (K⁻¹ formed once per
  // factorization: Gauss-Jordan on contiguous storage, Cholesky + inverse on
  // the GPU's strided views) instead of two triangular solves, whose
  // dependent store-load chains dominate an iteration at n ≈ 32. On in both
  // precisions: float lost too many digits with it only while equality rows
  // used ρ_eq = 1e3·ρ (see rho_eq_scale); on the real QPs in float the optimal
  // value is as accurate with it (worst 2.5e-5 against 2.1e-5 at eps 1e-5).
  bool explicit_inverse = true;
  // host, with explicit_inverse and a workspace carved with its dense slices
  // (qp_work_host_size; the GPU's batch-strided workspaces have none): the
  // x-step is one dense column-major product instead of a sparse scatter
  // (Aᵀ(ρ∘z − y)) and a K⁻¹ product,
  //   x̃ = H·[x; ρ∘z − y; 1],  H = [K⁻¹diag(σ) | K⁻¹Aᵀ | −K⁻¹q],
  // H formed per factorization (n·nnz multiply-adds), the product's
  // accumulators in vector registers. The same arithmetic in another order:
  // results differ from the sparse path in the last bits, iteration counts
  // agree. Octagon cube QP −5%, real ContactNets QPs −10 to −20% (1 core,
  // eps 1e-3 and 1e-5). (A dense A for z̃ = Ax̃ too was slower: with it the
  // two matrices no longer fit the first-level cache.)
  bool dense_iteration = true;
  // P + psd_tol·max(1, max|P_ii|)·I must factor (float rounding needs more room)
  T psd_tol = sizeof(T) == 4 ? T(1e-5) : T(1e-9);
  // Ruiz equilibration passes (0 = off): the iteration runs as if on the
  // problem scaled by D (columns), E (rows, one factor per cone) and c (cost),
  // which amounts to per-row ρ_i = ρ·E_i²/c and per-variable σ_j = σ/(c·D_j²);
  // x, y, residuals and stopping stay in the original units.
  int scaling_iters = 5;
  // fallback (on by default in double): a solve that stagnates
  // (detail::QpStagnation: from a quarter of the budget on, its residuals'
  // ratio to their tolerances not 1% below its best for an eighth of the
  // budget) restarts cold for the rest of the budget with OSQP's
  // general-purpose parameters (qp_fallback_settings: ρ 0.1, 10 Ruiz passes,
  // ρ_eq 1e3, ρ adapted every 50 iterations at tolerance 5, bounded only by
  // the budget). The defaults above are tuned for the contact QPs, which
  // converge long before; on the Maros-Meszaros QADLITTL they stagnate where
  // OSQP's converge (3,281 iterations in all at eps 1e-6). Float: off (its
  // stagnation near the tolerance is rounding, which a restart does not cure).
  bool fallback = sizeof(T) == 8;
  // host batch path (solve_batch): a stall returns at once, with
  // QpInfo::stalled set, instead of restarting; the caller finishes the
  // problem (host/batch/qp_ipm.h's interior point, then the restart above if
  // that fails). The device and the real-time path keep the restart.
  bool stall_return = false;
  // host batch path, with fallback, where the interior point applies (no
  // second-order cones): a solve whose residuals, extrapolated from its last
  // two checks, need more than ipm_switch further iterations to meet the
  // tolerance, checked from iteration ipm_switch/4 on, returns as at a stall,
  // and the interior point solves it. 0 = off; kQpIpmSwitchAuto (the default)
  // = the host batch path sets it per batch to what one interior-point solve
  // costs in ADMM iterations of that shape, by their operation counts
  // (host/batch/qp_ipm.h: qp_ipm_switch_auto); elsewhere (the device, the
  // real-time path, a solve outside the batch path) it means off. On dense
  // random QPs with half their rows active ADMM needs 180-510 iterations at
  // eps 1e-6 and the interior point 8-13: there the switch pays from n = 16
  // on; on the recorded ContactNets QPs (sparse rows: an ADMM iteration is
  // cheap, a dense interior-point one is not) ADMM finishes in 50-70 and the
  // automatic threshold (647 iterations there) leaves them to it.
  int ipm_switch = kQpIpmSwitchAuto;
  // duality gap (on by default): `solved` also needs
  //   |xᵀPx + qᵀx + bᵀy| <= eps_abs + eps_rel·max(|xᵀPx|, |qᵀx|, |bᵀy|)
  // (the primal objective minus the dual one, −½xᵀPx − bᵀy, in the original
  // units; rows with y_r = 0 add nothing to bᵀy, so b_r = +inf there is fine).
  // Without it, problems whose ‖Aᵀy‖ is large pass the relative residual
  // test with an objective off by 1e-2 (the DUALC problems of Maros-Meszaros).
  bool check_gap = true;
  // Anderson acceleration (solvers/qp_anderson.h): the number of past
  // differences it uses, 0 = off, at most kQpAndersonMax. Host only (the
  // dense iteration's workspace and the lane groups' hold its history; the
  // device kernels and the GPU tests' CPU reference run without it), only on
  // problems without second-order cones, and only for the first max_iter/8
  // iterations: a problem it has not solved by then counts as stalled (with
  // fallback: the host batch path finishes it by the interior point, the
  // others restart plainly) or, without fallback, goes on plainly. (QSCAGR7
  // and QSHARE2B of Maros-Meszaros neither converge nor stagnate under it,
  // and after it the plain iteration crawls on QSCAGR7 without stagnating.) Mean iterations on
  // the recorded ContactNets QPs at eps 1e-6, one at a time: 270 → 66 (gt),
  // 88 → 47 (train); memories 3, 4 and 5 do alike, 2 worse, 10 worse (lane
  // groups alike: every iteration, as here). Float: off (in
  // float on the train QPs it ended one in a numerical error).
  int anderson = sizeof(T) == 8 ? 3 : 0;

  // host-only: nullptr when valid, else what is wrong.
  const char* validate() const {
    if (!(rho > T(0))) return "rho must be > 0";
    if (!(rho_eq_scale >= T(1))) return "rho_eq_scale must be >= 1";
    if (!(sigma > T(0))) return "sigma must be > 0";
    if (!(alpha > T(0) && alpha < T(2))) return "alpha must be in (0, 2)";
    if (!(eps_abs >= T(0)) || !(eps_rel >= T(0))) return "eps_abs and eps_rel must be >= 0";
    if (!(eps_abs > T(0) || eps_rel > T(0))) return "eps_abs and eps_rel cannot both be 0";
    if (!(eps_pinf > T(0)) || !(eps_dinf > T(0))) return "eps_pinf and eps_dinf must be > 0";
    if (max_iter < 1) return "max_iter must be >= 1";
    if (check_every < 1) return "check_every must be >= 1";
    if (adaptive_rho && (adaptive_rho_interval < 1 || adaptive_rho_interval % check_every != 0))
      return "adaptive_rho_interval must be a positive multiple of check_every";
    if (!(adaptive_rho_tolerance >= T(1))) return "adaptive_rho_tolerance must be >= 1";
    if (anderson < 0 || anderson > kQpAndersonMax) return "anderson must be in 0 .. 8";
    if (max_rho_updates < 0) return "max_rho_updates must be >= 0";
    if (!(rho_min > T(0) && rho_max >= rho_min)) return "need 0 < rho_min <= rho_max";
    if (!(psd_tol >= T(0))) return "psd_tol must be >= 0";
    if (scaling_iters < 0) return "scaling_iters must be >= 0";
    if (ipm_switch < -1) return "ipm_switch must be -1 (automatic), 0 (off) or a number of iterations";
    return nullptr;
  }
};

template <class T>
struct QpInfo {
  SolveStatus status = SolveStatus::kNotRun;
  InputFault fault = InputFault::kNone;
  int iterations = 0;
  int rho_updates = 0;
  T objective = T(0);  // ½xᵀPx + qᵀx at the returned x
  // estimate of the optimal value: the Lagrangian ½xᵀPx + qᵀx + yᵀ(Ax − b).
  // Its error is second order in the residuals where the objective's is first
  // order (a slightly infeasible x can undercut the optimum): on the real
  // ContactNets QPs at eps 1e-6 it is ~1e-7 relative where the objective's is
  // ~1e-4. The envelope theorem's gradient is the gradient of this quantity.
  T value = T(0);
  T prim_res = T(0);  // ||Ax - z||_inf
  T dual_res = T(0);  // ||Px + q + A^T y||_inf
  // the final ρ of a solve that ended in its first phase (the settings given), where a
  // warm start resumes (BatchOptions::warm_rho); 0 after a restart with the fallback
  // settings or an interior-point finish, whose ρ belongs to another scaling
  T rho = T(0);
  bool stalled = false;  // returned at a stall (QpSettings::stall_return)
  // Why a solve ended unsolved (the batch API's fault text, QpSolutions::fault_text):
  // the last check's tolerances of prim_res and dual_res, its duality gap and the
  // gap's tolerance (QpSettings::check_gap; gap 0 when not tested);
  T eps_prim = T(0), eps_dual = T(0), gap = T(0), eps_gap = T(0);
  // a stall (QpSettings::fallback): the iteration it was found at (0: none), the
  // best residual ratio before it (QpStagnation) and that ratio's iteration; and
  // the iteration the restart with the fallback settings began at (0: none).
  // Iterations count from the start of the problem's solve.
  int stall_iteration = 0, stall_best_iteration = 0, restart_iteration = 0;
  T stall_best_ratio = T(0);
  // a hand-over at stall_iteration that was no stall but QpSettings::ipm_switch:
  // the further iterations ADMM's residuals extrapolated to (0: a stall)
  T switch_remaining = T(0);
};

// Shape of every problem in a batch.
struct QpShape {
  int n = 0;        // variables
  ConeSpec cones;   // m = cones.rows()
  CsrPattern a;     // pattern of A (a.rows == m, a.cols == n)
  IMPULSE_HD int m() const { return cones.rows(); }
};

// One problem's data (P dense n x n row-major, symmetric; A values per pattern).
template <class T, class S>
struct QpData {
  View<const T, S> P, q, A, b;
};

// Elements of workspace one problem needs. Every slice is rounded up to a
// multiple of 16 elements, so that on a 64-byte aligned base (qp_work_align)
// every slice starts on a cache line: vector loads that straddle lines made
// the octagon QP ~20% slower, at random from one allocation to the next.
IMPULSE_HD constexpr int qp_work_round(int k) { return (k + 15) & ~15; }
IMPULSE_HD int qp_work_size(int n, int m) {
  return 2 * qp_work_round(n * n) + 5 * qp_work_round(n) + 7 * qp_work_round(m) + qp_work_round(1);
}

// Rows of A with at least kQpLongRow entries (at most kQpLongRowsMax of
// them, the first in order) are also kept dense, column-major with leading
// dimension 16, in the dense-iteration workspace: their products with a
// vector are one small dense product instead of scalar gathers (the cube
// QPs' eight penetration rows hold half of A's entries).
constexpr int kQpLongRow = 8;
constexpr int kQpLongRowsMax = 16;

// whether row r is one of the long rows kept dense, `taken` long rows before it
IMPULSE_HD bool qp_long_row(const CsrPattern& a, int r, int taken) {
  return a.row_ptr[r + 1] - a.row_ptr[r] >= kQpLongRow && taken < kQpLongRowsMax;
}

// Elements of the dense-iteration slices (QpSettings::dense_iteration):
// H column-major n x (n + m + 1) with leading dimension round(n),
// u (n + m + 1), and the long rows of A (16 x n).
IMPULSE_HD int qp_work_dense_size(int n, int m) {
  return qp_work_round(n) * (n + m + 1) + qp_work_round(n + m + 1) + qp_work_round(16 * n) +
         qp_anderson_size(n, m, kQpAndersonMax);
}

// Host storage from std::vector is only 16-byte aligned: allocate
// qp_work_host_size(n, m) elements and carve from qp_work_align(data), the
// first 64-byte aligned element, with dense = true.
inline int qp_work_host_size(int n, int m) {
  return qp_work_size(n, m) + qp_work_dense_size(n, m) + 16;
}
template <class T>
T* qp_work_align(T* p) {
  const auto a = reinterpret_cast<unsigned long long>(p);
  return reinterpret_cast<T*>((a + 63ull) & ~63ull);
}

// Workspace slices.
template <class T, class S>
struct QpWork {
  View<T, S> L, L_scratch, xt, x_prev, tmp_n, z, zt, y_prev, rho, rho_inv, tmp_m;
  View<T, S> dscale, sig, escale, cscale;  // equilibration D (n), σ_j (n), E (m), c (1)
  View<T, S> H, u, Alr;  // dense iteration (when `dense`): see QpSettings::dense_iteration
  View<T, S> aa;         // Anderson acceleration's history (when has_aa): qp_anderson.h
  bool dense = false, has_aa = false;
  // dense: also carve the dense-iteration slices (the base then holds
  // qp_work_size + qp_work_dense_size elements); anderson (lane groups, not
  // dense): also Anderson acceleration's history (qp_work_size +
  // qp_anderson_size(n, m, kQpAndersonMax) elements)
  IMPULSE_HD static QpWork carve(View<T, S> base, int n, int m, bool dense = false, bool anderson = false) {
    QpWork w;
    int o = 0;
    auto next = [&](int len) {
      const View<T, S> v = base.slice(o);
      o += qp_work_round(len);
      return v;
    };
    w.L = next(n * n);
    w.L_scratch = next(n * n);
    w.xt = next(n);
    w.x_prev = next(n);
    w.tmp_n = next(n);
    w.z = next(m);
    w.zt = next(m);
    w.y_prev = next(m);
    w.rho = next(m);
    w.rho_inv = next(m);
    w.tmp_m = next(m);
    w.dscale = next(n);
    w.sig = next(n);
    w.escale = next(m);
    w.cscale = next(1);
    if (dense) {
      w.H = next(qp_work_round(n) * (n + m + 1));
      w.u = next(n + m + 1);
      w.Alr = next(16 * n);
      w.dense = true;
    }
    if (dense || anderson) {
      w.aa = next(qp_anderson_size(n, m, kQpAndersonMax));
      w.has_aa = true;
    }
    return w;
  }
};

// The factorization a solve leaves in its workspace, for a re-solve that keeps
// it (qp_admm_solve's `reuse`): w.L (K⁻¹ or its Cholesky factor; with the
// dense iteration also H and the long rows), D, E, c, σ_j and the per-row ρ
// are those of the last solve, and scalars in the cscale slice (which holds
// 16) say which: cscale[kQpKeptRho] the scalar ρ the factorization was made
// with, cscale[kQpKeptValid] 1 when it is usable (the last solve factored in
// its first phase and ended neither in a numerical error nor in the fallback
// restart), else 0, and from kQpKeptSettings on the settings it depends on
// (σ, ρ_eq scale, Ruiz passes, and whether w.L is K⁻¹ and H is formed): a
// re-solve with other settings sets up in full.
constexpr int kQpKeptRho = 1;
constexpr int kQpKeptValid = 2;
constexpr int kQpKeptSettings = 3;  // 4 entries

// b is usable: finite on zero and cone rows; on nonnegative rows finite or
// +inf (the row has no bound: its z is never clipped and its y stays 0, as
// OSQP's u = +inf). NaN and −inf are errors everywhere.
template <class T, class S>
IMPULSE_HD bool qp_b_usable(const ConeSpec& c, View<const T, S> b) {
  if (all_finite(c.rows(), b)) return true;
  for (int i = 0; i < c.rows(); ++i) {
    const T v = b[i];
    if (is_finite(v)) continue;
    if (i < c.n_zero || i >= c.soc_begin() || !(v > T(0))) return false;  // NaN fails v > 0
  }
  return true;
}

// b_r·y_r, 0 where y_r = 0 (b_r may be +inf there: a row without a bound)
template <class T>
IMPULSE_HD T qp_by(T b, T y) {
  return select_of(y == T(0), T(0), b * y);
}

// Checks one problem's data; kNone when usable. Uses work.L as scratch for
// the PSD test (a Cholesky of P + δI).
template <class T, class S, class SW>
IMPULSE_HD InputFault qp_check_input(const QpShape& sh, const QpData<T, S>& d, QpWork<T, SW>& w,
                                     const QpSettings<T>& st) {
  const int n = sh.n;
  if (!all_finite(n * n, d.P)) return InputFault::kNonFiniteP;
  if (!all_finite(n, d.q)) return InputFault::kNonFiniteQ;
  if (!all_finite(sh.a.nnz, d.A)) return InputFault::kNonFiniteA;
  if (!qp_b_usable(sh.cones, d.b)) return InputFault::kNonFiniteB;
  // symmetry, relative to the largest entry
  T scale = T(0), asym = T(0);
  absmax_and_asymmetry(n, d.P, scale, asym);
  const T sym_tol = T(1e3) * max_of(scale, T(1)) * (sizeof(T) == 4 ? T(1.2e-7) : T(2.3e-16));
  if (asym > sym_tol) return InputFault::kAsymmetricP;
  // positive semidefinite up to psd_tol
  T diag = T(1);
  for (int i = 0; i < n; ++i) diag = max_of(diag, abs_of(d.P[i * n + i]));
  if (st.check_psd && !psd_up_to(n, d.P, st.psd_tol * diag, w.L)) return InputFault::kNotPsdP;
  return InputFault::kNone;
}

namespace detail {

// Dense-iteration operators (QpSettings::dense_iteration), contiguous
// storage only (qp_dense_capable): the generic overloads are never called.
template <class S, class SW, class SX>
struct QpDenseCapable {
  static constexpr bool value = false;
};
template <>
struct QpDenseCapable<UnitStride, UnitStride, UnitStride> {
  static constexpr bool value = true;
};
template <class T, class S, class SW>
IMPULSE_HD void qp_dense_H(const QpShape&, const QpData<T, S>&, QpWork<T, SW>&) {}
template <class T, class S, class SW>
IMPULSE_HD void qp_long_rows_build(const QpShape&, const QpData<T, S>&, QpWork<T, SW>&) {}
template <class T, class S, class SW>
IMPULSE_HD void qp_dense_H_q(const QpShape&, const QpData<T, S>&, QpWork<T, SW>&) {}

// H's last column, −K⁻¹q: the only part of H that q enters (a re-solve that
// keeps the factorization, qp_admm_solve's `reuse`, forms only it)
template <class T>
IMPULSE_HD void qp_dense_H_q(const QpShape& sh, const QpData<T, UnitStride>& d,
                             QpWork<T, UnitStride>& w) {
  const int n = sh.n, m = sh.m(), ldn = qp_work_round(n);
  T* __restrict__ col = w.H.p + (n + m) * ldn;
  combine_rows(n, static_cast<const int*>(nullptr), d.q.p, n, w.L.p, col);
  IMPULSE_SIMD
  for (int i = 0; i < n; ++i) col[i] = -col[i];
}

// H = [K⁻¹diag(σ) | K⁻¹Aᵀ | −K⁻¹q] from K⁻¹ in w.L (symmetric: its column j
// is its contiguous row j). Column n + r is the combination of K⁻¹'s columns
// that row r of A names.
template <class T>
IMPULSE_HD void qp_dense_H(const QpShape& sh, const QpData<T, UnitStride>& d,
                           QpWork<T, UnitStride>& w) {
  const int n = sh.n, m = sh.m(), ldn = qp_work_round(n);
  const T* __restrict__ Ki = w.L.p;
  T* __restrict__ H = w.H.p;
  if (ldn > n)  // padding rows (the columns themselves are written whole below)
    for (int j = 0; j < n + m + 1; ++j)
      for (int i = n; i < ldn; ++i) H[j * ldn + i] = T(0);
  for (int j = 0; j < n; ++j) {
    T* __restrict__ col = H + j * ldn;
    const T* __restrict__ kj = Ki + j * n;
    const T sj = w.sig.p[j];
    IMPULSE_SIMD
    for (int i = 0; i < n; ++i) col[i] = kj[i] * sj;
  }
  for (int r = 0; r < m; ++r) {
    const int k0 = sh.a.row_ptr[r];
    combine_rows(n, sh.a.col + k0, d.A.p + k0, sh.a.row_ptr[r + 1] - k0, Ki, H + (n + r) * ldn);
  }
  qp_dense_H_q(sh, d, w);
}

// the long rows of A (kQpLongRow) into w.Alr, column-major, padding zero
template <class T>
IMPULSE_HD void qp_long_rows_build(const QpShape& sh, const QpData<T, UnitStride>& d,
                                   QpWork<T, UnitStride>& w) {
  T* __restrict__ blk = w.Alr.p;
  for (int i = 0; i < 16 * sh.n; ++i) blk[i] = T(0);
  int i = 0;
  for (int r = 0; r < sh.a.rows; ++r) {
    if (!qp_long_row(sh.a, r, i)) continue;
    for (int k = sh.a.row_ptr[r]; k < sh.a.row_ptr[r + 1]; ++k) blk[sh.a.col[k] * 16 + i] = d.A.p[k];
    ++i;
  }
}

// out = A v: the long rows as one dense product (into scratch, 16
// elements), the others by scalar gathers
template <class T>
IMPULSE_HD void qp_long_rows_Ax(const QpShape& sh, const QpData<T, UnitStride>& d,
                                const QpWork<T, UnitStride>& w, const T* __restrict__ v,
                                T* __restrict__ out, T* __restrict__ scratch) {
  const int* __restrict__ rp = sh.a.row_ptr;
  const int* __restrict__ col = sh.a.col;
  const T* __restrict__ A = d.A.p;
  int nl = 0;
  for (int r = 0; r < sh.a.rows; ++r) {
    if (qp_long_row(sh.a, r, nl)) {
      ++nl;
      continue;
    }
    T acc = T(0);
    for (int k = rp[r]; k < rp[r + 1]; ++k) acc += A[k] * v[col[k]];
    out[r] = acc;
  }
  if (nl == 0) return;
  gemv_colmajor(nl, 16, sh.n, w.Alr.p, v, scratch);
  int i = 0;
  for (int r = 0; r < sh.a.rows && i < nl; ++r)
    if (qp_long_row(sh.a, r, i)) out[r] = scratch[i++];
}

// out = A v on any storage; with the dense workspace, qp_long_rows_Ax
template <class T, class S, class SW, class SV, class SO>
IMPULSE_HD void qp_Ax(const QpShape& sh, const QpData<T, S>& d, const QpWork<T, SW>&, bool,
                      View<const T, SV> v, View<T, SO> out) {
  csr_matvec(sh.a, d.A, v, out);
}
template <class T>
IMPULSE_HD void qp_Ax(const QpShape& sh, const QpData<T, UnitStride>& d,
                      const QpWork<T, UnitStride>& w, bool dense, View<const T, UnitStride> v,
                      View<T, UnitStride> out) {
  if (dense)
    qp_long_rows_Ax(sh, d, w, v.p, out.p, w.u.p);
  else
    csr_matvec(sh.a, d.A, v, out);
}

// out = Aᵀ v on any storage; with the dense workspace, the long
// rows' part as n dot products of length 16 with their entries of v
template <class T, class S, class SW, class SV, class SO>
IMPULSE_HD void qp_Aty(const QpShape& sh, const QpData<T, S>& d, const QpWork<T, SW>&, bool,
                       View<const T, SV> v, View<T, SO> out) {
  csr_matvec_t(sh.a, d.A, v, out);
}
template <class T>
IMPULSE_HD void qp_Aty(const QpShape& sh, const QpData<T, UnitStride>& d,
                       const QpWork<T, UnitStride>& w, bool dense, View<const T, UnitStride> v,
                       View<T, UnitStride> out) {
  if (!dense) {
    csr_matvec_t(sh.a, d.A, v, out);
    return;
  }
  const int n = sh.n;
  const int* __restrict__ rp = sh.a.row_ptr;
  const int* __restrict__ col = sh.a.col;
  const T* __restrict__ A = d.A.p;
  T* __restrict__ o = out.p;
  T* __restrict__ v16 = w.u.p;  // v on the long rows, zero padded
  for (int j = 0; j < n; ++j) o[j] = T(0);
  int nl = 0;
  for (int r = 0; r < sh.a.rows; ++r) {
    if (qp_long_row(sh.a, r, nl)) {
      v16[nl++] = v.p[r];
      continue;
    }
    const T vr = v.p[r];
    for (int k = rp[r]; k < rp[r + 1]; ++k) o[col[k]] += A[k] * vr;
  }
  if (nl == 0) return;
  for (int i = nl; i < 16; ++i) v16[i] = T(0);
  for (int j = 0; j < n; ++j) {
    const T* __restrict__ c = w.Alr.p + j * 16;
    T acc = T(0);
    IMPULSE_SIMD_REDUCE(acc)
    for (int i = 0; i < 16; ++i) acc += c[i] * v16[i];
    o[j] += acc;
  }
}

// w.L ← K = P + diag(σ) + Aᵀ diag(ρ) A, lower triangle (the upper one is
// left as scratch).
template <class T, class S, class SW>
IMPULSE_HD void qp_form_K(const QpShape& sh, const QpData<T, S>& d, QpWork<T, SW>& w) {
  const int n = sh.n;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) w.L[i * n + j] = d.P[i * n + j] + (i == j ? w.sig[i] : T(0));
  for (int r = 0; r < sh.a.rows; ++r) {
    const T rr = w.rho[r];
    const int k0 = sh.a.row_ptr[r], k1 = sh.a.row_ptr[r + 1];
    for (int k = k0; k < k1; ++k) {  // columns increase along a row: l <= k is col <= col_k
      const int row = sh.a.col[k] * n;
      const T ak = rr * d.A[k];
      for (int l = k0; l <= k; ++l) w.L[row + sh.a.col[l]] += ak * d.A[l];
    }
  }
}

// contiguous: the same sum, with the long rows of A added as whole-row
// vector updates (row c_k of K += ρ_r·a_k·a_r for each entry a_k of row r,
// full rows, so the upper triangle takes scratch sums). On the octagon QP
// eight rows of 25 entries hold 2,600 of the 3,000 scalar updates.
template <class T>
IMPULSE_HD void qp_form_K(const QpShape& sh, const QpData<T, UnitStride>& d,
                          QpWork<T, UnitStride>& w) {
  const int n = sh.n;
  T* __restrict__ L = w.L.p;
  const T* __restrict__ P = d.P.p;
  const T* __restrict__ A = d.A.p;
  T* __restrict__ ar = w.tmp_n.p;  // one dense row of A, times ρ_r
  IMPULSE_SIMD
  for (int i = 0; i < n * n; ++i) L[i] = P[i];
  for (int i = 0; i < n; ++i) L[i * n + i] += w.sig.p[i];
  for (int r = 0; r < sh.a.rows; ++r) {
    const T rr = w.rho.p[r];
    const int k0 = sh.a.row_ptr[r], k1 = sh.a.row_ptr[r + 1];
    if (k1 - k0 >= kQpLongRow) {
      for (int j = 0; j < n; ++j) ar[j] = T(0);
      for (int k = k0; k < k1; ++k) ar[sh.a.col[k]] = rr * A[k];
      for (int k = k0; k < k1; ++k) {
        T* __restrict__ Lc = L + sh.a.col[k] * n;
        const T ak = A[k];
        IMPULSE_SIMD
        for (int j = 0; j < n; ++j) Lc[j] += ak * ar[j];
      }
    } else {
      for (int k = k0; k < k1; ++k) {
        const int row = sh.a.col[k] * n;
        const T ak = rr * A[k];
        for (int l = k0; l <= k; ++l) L[row + sh.a.col[l]] += ak * A[l];
      }
    }
  }
}

// K = P + σI + Aᵀ diag(ρ) A (lower triangle) factored into w.L; with
// explicit_inverse, w.L then holds K⁻¹ (full, symmetric).
template <class T, class S, class SW>
IMPULSE_HD bool qp_factor(const QpShape& sh, const QpData<T, S>& d, QpWork<T, SW>& w,
                          bool explicit_inverse, bool dense) {
  const int n = sh.n;
  qp_form_K(sh, d, w);
  if (!explicit_inverse) return cholesky_in_place(n, w.L);
  if (!spd_inverse_in_place(n, w.L, w.L_scratch)) return false;
  if (dense) qp_dense_H(sh, d, w);
  return true;
}

// set per-row rho from the scalar rho.
template <class T, class SW>
IMPULSE_HD void qp_set_rho(const QpShape& sh, QpWork<T, SW>& w, T rho, T eq_scale) {
  const int m = sh.m();
  const T c_inv = T(1) / w.cscale[0];
  for (int i = 0; i < m; ++i) {
    const T e = w.escale[i];
    w.rho[i] = (i < sh.cones.n_zero ? rho * eq_scale : rho) * (e * e * c_inv);
    w.rho_inv[i] = T(1) / w.rho[i];
  }
}

// OSQP's limits on one scaling factor's norm
template <class T>
IMPULSE_HD T qp_limit_scaling(T v) {
  const T lo = select_of(v < T(1e-4), T(1), v);  // selects, not branches: the loops vectorize
  return select_of(lo > T(1e4), T(1e4), lo);
}

// dst_i ← dst_i / √limit(max(a_i, b_i)): one Ruiz update of a scaling vector.
template <class T, class S1, class S2, class S3>
IMPULSE_HD void qp_rescale(int len, View<T, S1> dst, View<const T, S2> a, View<const T, S3> b) {
  for (int i = 0; i < len; ++i) dst[i] *= T(1) / sqrt_of(qp_limit_scaling(max_of(a[i], b[i])));
}

// contiguous: the same on pointers that do not alias, so that the square
// roots and divisions vectorize (scalar, they were a third of the scaling)
template <class T>
IMPULSE_HD void qp_rescale(int len, View<T, UnitStride> dst, View<const T, UnitStride> a,
                           View<const T, UnitStride> b) {
  T* __restrict__ d = dst.p;
  const T* __restrict__ pa = a.p;
  const T* __restrict__ pb = b.p;
  IMPULSE_SIMD
  for (int i = 0; i < len; ++i) d[i] *= T(1) / sqrt_of(qp_limit_scaling(max_of(pa[i], pb[i])));
}

// w.xt_j = max_r E_r·|A_rj|·D_j (column norms of E A D) and w.tmp_m_r =
// E_r·max_j |A_rj|·D_j (row norms)
template <class T, class S, class SW>
IMPULSE_HD void qp_A_norms(const QpShape& sh, const QpData<T, S>& d, QpWork<T, SW>& w) {
  const CsrPattern& a = sh.a;
  for (int j = 0; j < sh.n; ++j) w.xt[j] = T(0);
  for (int r = 0; r < a.rows; ++r) {
    const T er = w.escale[r];
    T rn = T(0);
    for (int k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      const int j = a.col[k];
      const T v = abs_of(d.A[k]) * w.dscale[j];
      rn = max_of(rn, v);
      w.xt[j] = max_of(w.xt[j], v * er);
    }
    w.tmp_m[r] = rn * er;
  }
}

// Ruiz equilibration of [P Aᵀ; A 0] (infinity norms) and cost scaling, as
// OSQP does, without forming the scaled data: D (w.dscale), E (w.escale,
// one factor per second-order cone), c (w.cscale[0]) and σ_j = σ/(c·D_j²)
// (w.sig). With iters = 0 everything is 1 and σ_j = σ.
template <class T, class S, class SW>
IMPULSE_HD void qp_equilibrate(const QpShape& sh, const QpData<T, S>& d, QpWork<T, SW>& w,
                               int iters, T sigma) {
  const int n = sh.n, m = sh.m();
  for (int j = 0; j < n; ++j) w.dscale[j] = T(1);
  for (int i = 0; i < m; ++i) w.escale[i] = T(1);
  T c = T(1);
  for (int it = 0; it <= iters; ++it) {
    // column norms of c·D P D
    dense_col_absmax_scaled(n, d.P, w.dscale.as_const(), c, w.tmp_n);
    // cost scaling: 1 / max(mean column norm of the scaled P, ‖c·D q‖∞)
    if (it > 0 || iters == 0) {
      T mean = T(0), qn = T(0);
      for (int j = 0; j < n; ++j) {
        mean += w.tmp_n[j];
        qn = max_of(qn, abs_of(d.q[j]) * w.dscale[j]);
      }
      mean /= T(n);
      qn *= c;
      const T gamma = T(1) / qp_limit_scaling(max_of(mean, qn));
      if (iters > 0) {
        c *= gamma;
        for (int j = 0; j < n; ++j) w.tmp_n[j] *= gamma;
      }
    }
    if (it == iters) break;
    // column and row norms of E A D
    qp_A_norms(sh, d, w);
    for (int k = 0; k < sh.cones.n_soc; ++k) {  // one factor per cone
      const int r = sh.cones.soc_begin() + 3 * k;
      const T v = max_of(w.tmp_m[r], max_of(w.tmp_m[r + 1], w.tmp_m[r + 2]));
      w.tmp_m[r] = w.tmp_m[r + 1] = w.tmp_m[r + 2] = v;
    }
    qp_rescale(n, w.dscale, w.tmp_n.as_const(), w.xt.as_const());
    qp_rescale(m, w.escale, w.tmp_m.as_const(), w.tmp_m.as_const());
  }
  if (iters == 0) c = T(1);
  w.cscale[0] = c;
  for (int j = 0; j < n; ++j) w.sig[j] = sigma / (c * w.dscale[j] * w.dscale[j]);
}

// the second-order cone rows of qp_update_rows: z = b − Π_K(b − v − y/ρ),
// y ← y + ρ∘(v − z), with v_r = relaxed(r)
template <class T, class S, class SW, class SX, class F>
IMPULSE_HD void qp_update_soc_rows(const QpShape& sh, const QpData<T, S>& d, QpWork<T, SW>& w,
                                   View<T, SX> y, F relaxed) {
  for (int k = 0; k < sh.cones.n_soc; ++k) {
    const int r = sh.cones.soc_begin() + 3 * k;
    const T v0 = relaxed(r), v1 = relaxed(r + 1), v2 = relaxed(r + 2);
    T t = d.b[r] - (v0 + y[r] * w.rho_inv[r]);
    T u1 = d.b[r + 1] - (v1 + y[r + 1] * w.rho_inv[r + 1]);
    T u2 = d.b[r + 2] - (v2 + y[r + 2] * w.rho_inv[r + 2]);
    project_soc3(t, u1, u2);
    const T z0 = d.b[r] - t, z1 = d.b[r + 1] - u1, z2 = d.b[r + 2] - u2;
    y[r] += w.rho[r] * (v0 - z0);
    y[r + 1] += w.rho[r + 1] * (v1 - z1);
    y[r + 2] += w.rho[r + 2] * (v2 - z2);
    w.z[r] = z0, w.z[r + 1] = z1, w.z[r + 2] = z2;
  }
}

// z ← Π_C(v + y/ρ), y ← y + ρ∘(v − z), with v_r = relaxed(r)
template <class T, class S, class SW, class SX, class F>
IMPULSE_HD void qp_update_rows(const QpShape& sh, const QpData<T, S>& d, QpWork<T, SW>& w,
                               View<T, SX> y, F relaxed) {
  const ConeSpec& c = sh.cones;
  int r = 0;
  for (; r < c.n_zero; ++r) {  // z = b
    const T v = relaxed(r), zn = d.b[r];
    y[r] += w.rho[r] * (v - zn);
    w.z[r] = zn;
  }
  for (; r < c.n_zero + c.n_nonneg; ++r) {  // z = min(v + y/ρ, b)
    const T v = relaxed(r), zn = min_of(v + y[r] * w.rho_inv[r], d.b[r]);
    y[r] += w.rho[r] * (v - zn);
    w.z[r] = zn;
  }
  qp_update_soc_rows(sh, d, w, y, relaxed);
}

// One ADMM iteration, fused into two passes (x-step; then per constraint row
// z̃, relaxation, projection onto C and the y update):
//   x̃ = K⁻¹(σ∘x − q + Aᵀ(ρ∘z − y)),  x ← αx̃ + (1−α)x,  v = αAx̃ + (1−α)z,
//   z ← Π_C(v + y/ρ),  y ← y + ρ∘(v − z).
template <class T, class S, class SW, class SX>
IMPULSE_HD void qp_admm_step(const QpShape& sh, const QpData<T, S>& d, QpWork<T, SW>& w,
                             View<T, SX> x, View<T, SX> y, T alpha, bool explicit_inverse) {
  const int n = sh.n;
  const CsrPattern& a = sh.a;
  const T beta = T(1) - alpha;
  // right-hand side σ∘x − q + Aᵀ(ρ∘z − y) into tmp_n
  for (int j = 0; j < n; ++j) w.tmp_n[j] = w.sig[j] * x[j] - d.q[j];
  for (int r = 0; r < a.rows; ++r) {
    const T t = w.rho[r] * w.z[r] - y[r];
    for (int k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) w.tmp_n[a.col[k]] += d.A[k] * t;
  }
  if (explicit_inverse) {
    dense_symv(n, w.L.as_const(), w.tmp_n.as_const(), w.xt);
  } else {
    for (int j = 0; j < n; ++j) w.xt[j] = w.tmp_n[j];
    cholesky_solve_in_place(n, w.L.as_const(), w.xt);
  }
  for (int j = 0; j < n; ++j) x[j] = alpha * w.xt[j] + beta * x[j];
  // rows: v = αAx̃ + (1−α)z, then project and update y
  qp_update_rows(sh, d, w, y, [&](int r) {
    T acc = T(0);
    for (int k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) acc += d.A[k] * w.xt[a.col[k]];
    return alpha * acc + beta * w.z[r];
  });
}

// The dense iteration (QpSettings::dense_iteration): the same step as
// qp_admm_step with x̃ = H·[x; ρ∘z − y; 1].
template <class T, class S, class SW, class SX>
IMPULSE_HD void qp_admm_step_dense(const QpShape&, const QpData<T, S>&, QpWork<T, SW>&,
                                   View<T, SX>, View<T, SX>, T) {}
template <class T>
IMPULSE_HD void qp_admm_step_dense(const QpShape& sh, const QpData<T, UnitStride>& d,
                                   QpWork<T, UnitStride>& w, View<T, UnitStride> x,
                                   View<T, UnitStride> y, T alpha) {
  const int n = sh.n, m = sh.m();
  const T beta = T(1) - alpha;
  T* __restrict__ u = w.u.p;
  const T* __restrict__ rho = w.rho.p;
  {
    const T* __restrict__ z = w.z.p;
    const T* __restrict__ yp = y.p;
    for (int j = 0; j < n; ++j) u[j] = x.p[j];
    IMPULSE_SIMD
    for (int r = 0; r < m; ++r) u[n + r] = rho[r] * z[r] - yp[r];
  }
  u[n + m] = T(1);
  gemv_colmajor(n, qp_work_round(n), n + m + 1, w.H.p, u, w.xt.p);
  for (int j = 0; j < n; ++j) x.p[j] = alpha * w.xt.p[j] + beta * x.p[j];
  qp_long_rows_Ax(sh, d, w, w.xt.p, w.zt.p, u);  // u is free again
  // the rows, as qp_update_rows, with the zero and nonnegative rows in
  // vector loops: stored one by one, z and y would stall the next
  // iteration's vector loads of them (a narrow store cannot be forwarded to a
  // wide load)
  const ConeSpec& c = sh.cones;
  const T* __restrict__ zt = w.zt.p;
  const T* __restrict__ b = d.b.p;
  const T* __restrict__ rho_inv = w.rho_inv.p;
  T* __restrict__ zw = w.z.p;
  T* __restrict__ yw = y.p;
  IMPULSE_SIMD
  for (int r = 0; r < c.n_zero; ++r) {
    const T v = alpha * zt[r] + beta * zw[r];
    yw[r] += rho[r] * (v - b[r]);
    zw[r] = b[r];
  }
  IMPULSE_SIMD
  for (int r = c.n_zero; r < c.n_zero + c.n_nonneg; ++r) {
    const T v = alpha * zt[r] + beta * zw[r];
    const T t = v + yw[r] * rho_inv[r];
    const T zn = t < b[r] ? t : b[r];
    yw[r] += rho[r] * (v - zn);
    zw[r] = zn;
  }
  qp_update_soc_rows(sh, d, w, y, [&](int r) { return alpha * zt[r] + beta * zw[r]; });
}

// ---- the phases of qp_admm_solve ---------------------------------------------

// What a check measured: the unscaled residuals r_prim = Ax − z and
// r_dual = Px + q + Aᵀy with their tolerances, and the E- and D-scaled norms
// that adapt ρ. (Also the lanes' record, with T = Lanes<T>.)
template <class T>
struct QpCheck {
  T prim_res = T(0), dual_res = T(0), eps_prim = T(0), eps_dual = T(0);
  T sp_res = T(0), sax_norm = T(0), sz_norm = T(0);                    // scaled by E
  T sd_res = T(0), spx_norm = T(0), saty_norm = T(0), sq_norm = T(0);  // scaled by D
  T gap = T(0), eps_gap = T(1);  // |xᵀPx + qᵀx + bᵀy| and its tolerance (QpSettings::check_gap)
};

// When to check next: the last check with a usable ratio (0: none), its
// max(prim_res / eps_prim, dual_res / eps_dual), and the iterations still
// needed, extrapolated from the last two checks.
template <class T>
struct QpSchedule {
  int next_check = 0;
  int last_check = 0;
  T last_ratio = T(0);
  T remaining = T(0);
};

// Stagnation, the one stall rule (QpSettings::fallback here, the lanes'
// hand-off in qp_admm_solve_lanes): from a quarter of the budget on, the
// residuals' ratio to their tolerances (QpSchedule::last_ratio, the largest
// of primal, dual and gap) has not come 1% below its best for an eighth of
// the budget. (Three checks predicting past the budget was tried first: it
// fired on the float ContactNets QPs near their rounding floor and on a
// random QP at eps 1e-9 that converges.)
template <class T>
struct QpStagnation {
  T best_ratio = T(1e30);
  int best_it = 0;
  // record the check at iteration `it`; true when the solve stagnates
  IMPULSE_HD bool stalled(T ratio, int it, int max_iter) {
    if (ratio < T(0.99) * best_ratio) best_ratio = ratio, best_it = it;
    return it >= max_iter / 4 && it - best_it >= max_iter / 8 && it < max_iter;
  }
};

}  // namespace detail

// Where a solve resumes another one's iteration of the same problem (the host
// batch path's hand-off of a lane, solvers/qp_admm_lanes.h, continued by
// qp_admm_solve): the iterations already done, so that the stall rule and
// Anderson acceleration's budget (max_iter/8) count from the start of the
// problem's solve, out of a budget of `iterations` + max_iter, as they do
// when it runs alone from the start; and the stall rule's record so far (in
// those iterations). A resumed solve's QpInfo counts its own iterations; its
// stall and restart iterations count from the start.
template <class T>
struct QpResume {
  int iterations = 0;
  detail::QpStagnation<T> stagnation;
};

namespace detail {

// QpSettings::ipm_switch: at a check at iteration `it` (from the problem's
// start), with `remaining` the extrapolated iterations still to go
// (qp_schedule_next; the budget itself when the residuals did not fall, which
// says nothing: the stall rule judges that), the interior point would finish
// sooner. What is done is spent: only what remains counts.
template <class T>
IMPULSE_HD bool qp_ipm_sooner(const QpSettings<T>& st, int it, T remaining) {
  return st.ipm_switch > 0 && it >= st.ipm_switch / 4 && remaining < T(st.max_iter) &&
         remaining > T(st.ipm_switch);
}

// The settings of a stalled solve's restart (QpSettings::fallback), with `budget` iterations.
template <class T>
IMPULSE_HD QpSettings<T> qp_fallback_settings(const QpSettings<T>& st, int budget) {
  QpSettings<T> f = st;
  f.rho = T(0.1);
  f.scaling_iters = 10;
  f.rho_eq_scale = T(sizeof(T) == 4 ? 10 : 1000);
  f.adaptive_rho_interval = st.check_every * ((50 + st.check_every - 1) / st.check_every);
  f.adaptive_rho_tolerance = T(5);
  f.max_rho_updates = budget / f.adaptive_rho_interval + 1;
  f.max_iter = budget > 0 ? budget : 1;
  f.check_input = false;
  f.fallback = false;
  f.anderson = 0;  // the safety net is the plain iteration
  return f;
}

// The initial iterate: z = Ax for a warm start (OSQP's choice), zero otherwise.
template <class T, class S, class SW, class SX>
IMPULSE_HD_PHASE void qp_start(const QpShape& sh, const QpData<T, S>& d, View<T, SX> x, View<T, SX> y,
                               QpWork<T, SW>& w, bool warm, bool dense) {
  const int n = sh.n, m = sh.m();
  if (warm) {
    qp_Ax(sh, d, w, dense, x.as_const(), w.z);
    // a row without a bound (b_r = +inf) has y_r = 0: from 0 the iteration
    // keeps it exactly 0, from a warm start's y_r it would leave a residue
    for (int r = sh.cones.n_zero; r < sh.cones.soc_begin(); ++r)
      if (!is_finite(d.b[r])) y[r] = T(0);
  } else {
    for (int i = 0; i < n; ++i) x[i] = T(0);
    for (int i = 0; i < m; ++i) y[i] = T(0), w.z[i] = T(0);
  }
}

// whether w holds a factorization usable with settings st (kQpKeptValid,
// kQpKeptSettings), and recording it
template <class T>
IMPULSE_HD T qp_kept_form(const QpSettings<T>& st, bool dense) {
  return T((st.explicit_inverse ? 1 : 0) + (dense ? 2 : 0));
}
template <class T, class SW>
IMPULSE_HD bool qp_factor_kept(const QpWork<T, SW>& w, const QpSettings<T>& st, bool dense) {
  return w.cscale[kQpKeptValid] == T(1) && w.cscale[kQpKeptSettings] == st.sigma &&
         w.cscale[kQpKeptSettings + 1] == st.rho_eq_scale && w.cscale[kQpKeptSettings + 2] == T(st.scaling_iters) &&
         w.cscale[kQpKeptSettings + 3] == qp_kept_form(st, dense);
}
template <class T, class SW>
IMPULSE_HD void qp_keep_factor(QpWork<T, SW>& w, bool valid, T rho, const QpSettings<T>& st, bool dense) {
  w.cscale[kQpKeptRho] = rho;
  w.cscale[kQpKeptValid] = valid ? T(1) : T(0);
  w.cscale[kQpKeptSettings] = st.sigma;
  w.cscale[kQpKeptSettings + 1] = st.rho_eq_scale;
  w.cscale[kQpKeptSettings + 2] = T(st.scaling_iters);
  w.cscale[kQpKeptSettings + 3] = qp_kept_form(st, dense);
}

// Set-up: the input check, the initial iterate (z = Ax for a warm start,
// OSQP's choice; zero otherwise), equilibration, ρ and the factorization.
// With `kept` (qp_admm_solve's `reuse`, qp_factor_kept) the factorization
// the last solve left in w stays, with its D, E, c, σ and ρ: only q and b are
// checked (P and A are that solve's) and, with the dense iteration, H's q
// column formed (qp_dense_H_q). Returns kNotRun when the iteration may start,
// otherwise the problem's final status (invalid input, numerical error) with
// `info` filled.
template <class T, class S, class SW, class SX>
IMPULSE_HD_PHASE SolveStatus qp_setup(const QpShape& sh, const QpData<T, S>& d, View<T, SX> x,
                                View<T, SX> y, QpWork<T, SW>& w, const QpSettings<T>& st,
                                bool warm, bool dense, bool kept, QpInfo<T>& info) {
  const int n = sh.n, m = sh.m();
  // input faults stop here; the other problems of a batch are unaffected
  if (st.check_input) {
    if (!kept)
      info.fault = qp_check_input(sh, d, w, st);
    else if (!all_finite(n, d.q))
      info.fault = InputFault::kNonFiniteQ;
    else if (!qp_b_usable(sh.cones, d.b))
      info.fault = InputFault::kNonFiniteB;
    if (info.fault != InputFault::kNone) {
      for (int i = 0; i < n; ++i) x[i] = T(0);
      for (int i = 0; i < m; ++i) y[i] = T(0);
      return info.status = SolveStatus::kInvalidInput;
    }
  }
  if (dense && !kept) qp_long_rows_build(sh, d, w);
  qp_start(sh, d, x, y, w, warm, dense);
  if (kept) {
    if (dense) qp_dense_H_q(sh, d, w);
    return SolveStatus::kNotRun;
  }
  qp_equilibrate(sh, d, w, st.scaling_iters, st.sigma);
  qp_set_rho(sh, w, st.rho, st.rho_eq_scale);
  if (!qp_factor(sh, d, w, st.explicit_inverse, dense))
    return info.status = SolveStatus::kNumericalError;
  return SolveStatus::kNotRun;
}

// The duality gap |xᵀPx + qᵀx + bᵀy| and its tolerance into c
// (QpSettings::check_gap), with Px in w.tmp_n. A NaN gap fails the test.
// (Also the lanes', with T = Lanes<U> and settings of U.)
template <class T, class S, class SW, class SX, class ST>
IMPULSE_HD_PHASE void qp_gap(const QpShape& sh, const QpData<T, S>& d, const QpWork<T, SW>& w,
                             View<const T, SX> x, View<const T, SX> y, const ST& st,
                             QpCheck<T>& c) {
  T xpx = T(0), qx = T(0), by = T(0);
  for (int i = 0; i < sh.n; ++i) {
    xpx += x[i] * w.tmp_n[i];
    qx += d.q[i] * x[i];
  }
  for (int r = 0; r < sh.m(); ++r) by += qp_by(d.b[r], y[r]);
  const T gap = abs_of(xpx + qx + by);
  c.eps_gap = T(st.eps_abs) + T(st.eps_rel) * max_of(max_of(abs_of(xpx), abs_of(qx)), abs_of(by));
  // NaN or ±inf (b_r = +inf with y_r ≠ 0): fails the test (inf <= inf would not)
  c.gap = select_of(is_finite(gap) & is_finite(c.eps_gap), gap, T(1e30));
}

// The check: the residuals and their tolerances into c. Returns kSolved,
// kNumericalError (a residual or the iterate is not finite) or kNotRun (go
// on). Leaves Px in tmp_n (qp_finish uses it) and Aᵀy in xt.
template <class T, class S, class SW, class SX>
IMPULSE_HD_PHASE SolveStatus qp_check_residuals(const QpShape& sh, const QpData<T, S>& d,
                                          QpWork<T, SW>& w, bool dense, View<T, SX> x,
                                          View<T, SX> y, const QpSettings<T>& st, QpCheck<T>& c) {
  const int n = sh.n, m = sh.m();
  qp_Ax(sh, d, w, dense, x.as_const(), w.tmp_m);
  T prim_res = T(0), ax_norm = T(0), z_norm = T(0);
  T sp_res = T(0), sax_norm = T(0), sz_norm = T(0);
  IMPULSE_SIMD_MAX(prim_res, ax_norm, z_norm, sp_res, sax_norm, sz_norm)
  for (int i = 0; i < m; ++i) {
    const T e = w.escale[i];
    const T r = abs_of(w.tmp_m[i] - w.z[i]), ax = abs_of(w.tmp_m[i]), zz = abs_of(w.z[i]);
    prim_res = max_of(prim_res, r);
    ax_norm = max_of(ax_norm, ax);
    z_norm = max_of(z_norm, zz);
    sp_res = max_of(sp_res, e * r);
    sax_norm = max_of(sax_norm, e * ax);
    sz_norm = max_of(sz_norm, e * zz);
  }
  dense_symv(n, d.P, x.as_const(), w.tmp_n);  // P is symmetric
  qp_Aty(sh, d, w, dense, y.as_const(), w.xt);  // x̃ is free again
  T dual_res = T(0), px_norm = T(0), aty_norm = T(0), q_norm = T(0);
  T sd_res = T(0), spx_norm = T(0), saty_norm = T(0), sq_norm = T(0);
  IMPULSE_SIMD_MAX(dual_res, px_norm, aty_norm, q_norm, sd_res, spx_norm, saty_norm, sq_norm)
  for (int i = 0; i < n; ++i) {
    const T dd = w.dscale[i];
    const T r = abs_of(w.tmp_n[i] + d.q[i] + w.xt[i]), px = abs_of(w.tmp_n[i]),
            aty = abs_of(w.xt[i]), qq = abs_of(d.q[i]);
    dual_res = max_of(dual_res, r);
    px_norm = max_of(px_norm, px);
    aty_norm = max_of(aty_norm, aty);
    q_norm = max_of(q_norm, qq);
    sd_res = max_of(sd_res, dd * r);
    spx_norm = max_of(spx_norm, dd * px);
    saty_norm = max_of(saty_norm, dd * aty);
    sq_norm = max_of(sq_norm, dd * qq);
  }
  c.prim_res = prim_res, c.sp_res = sp_res, c.sax_norm = sax_norm, c.sz_norm = sz_norm;
  c.dual_res = dual_res, c.sd_res = sd_res, c.spx_norm = spx_norm, c.saty_norm = saty_norm;
  c.sq_norm = sq_norm;
  // a NaN among the residuals' terms can vanish from their maximum (a
  // comparison with NaN is false), so the iterate itself is tested too
  if (!is_finite(prim_res) || !is_finite(dual_res) || !all_finite(n, x.as_const()) ||
      !all_finite(m, y.as_const()))
    return SolveStatus::kNumericalError;
  c.eps_prim = st.eps_abs + st.eps_rel * max_of(ax_norm, z_norm);
  c.eps_dual = st.eps_abs + st.eps_rel * max_of(max_of(px_norm, aty_norm), q_norm);
  if (st.check_gap) qp_gap(sh, d, w, x.as_const(), y.as_const(), st, c);
  if (prim_res <= c.eps_prim && dual_res <= c.eps_dual && c.gap <= c.eps_gap)
    return SolveStatus::kSolved;
  return SolveStatus::kNotRun;
}

// A solve's first ρ: a carried one (the last solve's QpInfo::rho; BatchOptions::warm_rho)
// where it is > 0, kept within [rho_min, rho_max], else the settings'. (The CPU batch
// path and both kernels.)
template <class T>
IMPULSE_HD T qp_first_rho(const QpSettings<T>& st, T carried) {
  return carried > T(0) ? min_of(max_of(carried, st.rho_min), st.rho_max) : st.rho;
}

// The next check after the one at iteration `it`: check_every on, or (with
// predict_checks) where the rate of the last two checks says the tolerance
// will be met.
template <class T>
IMPULSE_HD_PHASE void qp_schedule_next(const QpSettings<T>& st, int it, const QpCheck<T>& c,
                                 QpSchedule<T>& sc) {
  const T ratio = max_of(max_of(c.prim_res / (c.eps_prim + T(1e-30)), c.dual_res / (c.eps_dual + T(1e-30))),
                         c.gap / (c.eps_gap + T(1e-30)));
  int gap = st.check_every;
  sc.remaining = T(st.max_iter);
  if (sc.last_check > 0 && ratio < sc.last_ratio && ratio > T(1)) {
    sc.remaining = T(it - sc.last_check) * log_of(ratio) / log_of(sc.last_ratio / ratio);
    if (st.predict_checks)
      gap = sc.remaining < T(2 * st.check_every) ? int(sc.remaining) + 1 : 2 * st.check_every;
  }
  sc.last_check = it;
  sc.last_ratio = ratio;
  sc.next_check = it + gap;
}

// The infeasibility certificates, from the change of the iterate since the
// previous iteration (x_prev, y_prev). Returns kPrimalInfeasible,
// kDualInfeasible or kNotRun (neither).
template <class T, class S, class SW, class SX>
IMPULSE_HD_PHASE SolveStatus qp_check_infeasible(const QpShape& sh, const QpData<T, S>& d,
                                           QpWork<T, SW>& w, bool dense, View<T, SX> x,
                                           View<T, SX> y, const QpSettings<T>& st) {
  const int n = sh.n, m = sh.m();
  // primal infeasibility: δy ∈ K*, Aᵀδy ≈ 0, bᵀδy < 0
  {
    T dy_norm = T(0), bdy = T(0);
    IMPULSE_SIMD_MAX_SUM(dy_norm, bdy)
    for (int i = 0; i < m; ++i) {
      const T dy = y[i] - w.y_prev[i];
      w.tmp_m[i] = dy;
      dy_norm = max_of(dy_norm, abs_of(dy));
      bdy += qp_by(d.b[i], dy);
    }
    const T tol = st.eps_pinf * dy_norm;
    if (dy_norm > T(0) && bdy < -tol) {
      bool in_dual_cone = true;
      for (int i = sh.cones.n_zero; i < sh.cones.soc_begin(); ++i)
        if (w.tmp_m[i] < -tol) in_dual_cone = false;
      for (int k = 0; k < sh.cones.n_soc; ++k) {
        const int r = sh.cones.soc_begin() + 3 * k;
        if (soc3_violation(w.tmp_m[r], w.tmp_m[r + 1], w.tmp_m[r + 2]) > tol) in_dual_cone = false;
      }
      if (in_dual_cone) {
        qp_Aty(sh, d, w, dense, w.tmp_m.as_const(), w.tmp_n);
        if (norm_inf(n, w.tmp_n.as_const()) <= tol) return SolveStatus::kPrimalInfeasible;
      }
    }
  }
  // dual infeasibility: Pδx ≈ 0, qᵀδx < 0, Aδx ∈ −K
  {
    T dx_norm = T(0), qdx = T(0);
    IMPULSE_SIMD_MAX_SUM(dx_norm, qdx)
    for (int i = 0; i < n; ++i) {
      const T dx = x[i] - w.x_prev[i];
      w.xt[i] = dx;
      dx_norm = max_of(dx_norm, abs_of(dx));
      qdx += d.q[i] * dx;
    }
    const T tol = st.eps_dinf * dx_norm;
    if (dx_norm > T(0) && qdx < -tol) {
      qp_Ax(sh, d, w, dense, w.xt.as_const(), w.tmp_m);
      bool in_recession = true;
      for (int i = 0; i < sh.cones.n_zero; ++i)
        if (abs_of(w.tmp_m[i]) > tol) in_recession = false;
      for (int i = sh.cones.n_zero; i < sh.cones.soc_begin(); ++i)  // (b_i = +inf: no bound)
        if (w.tmp_m[i] > tol && is_finite(d.b[i])) in_recession = false;
      for (int k = 0; k < sh.cones.n_soc; ++k) {
        const int r = sh.cones.soc_begin() + 3 * k;
        if (soc3_violation(-w.tmp_m[r], -w.tmp_m[r + 1], -w.tmp_m[r + 2]) > tol)
          in_recession = false;
      }
      if (in_recession) {
        dense_symv(n, d.P, w.xt.as_const(), w.tmp_n);
        if (norm_inf(n, w.tmp_n.as_const()) <= tol) return SolveStatus::kDualInfeasible;
      }
    }
  }
  return SolveStatus::kNotRun;
}

// Adaptive ρ: every adaptive_rho_interval iterations, balance the normalized
// residuals and refactor, a bounded number of times and only while more than
// an interval is left. Returns false when the new factorization fails.
template <class T, class S, class SW>
IMPULSE_HD_PHASE bool qp_adapt_rho(const QpShape& sh, const QpData<T, S>& d, QpWork<T, SW>& w,
                             bool dense, const QpSettings<T>& st, int it, const QpCheck<T>& c,
                             QpSchedule<T>& sc, T& rho, QpInfo<T>& info) {
  if (!(st.adaptive_rho && it % st.adaptive_rho_interval == 0 &&
        info.rho_updates < st.max_rho_updates && sc.remaining > T(st.adaptive_rho_interval)))
    return true;
  const T pn = c.sp_res / (max_of(c.sax_norm, c.sz_norm) + T(1e-30));
  const T dn = c.sd_res / (max_of(max_of(c.spx_norm, c.saty_norm), c.sq_norm) + T(1e-30));
  T rho_new = rho * sqrt_of(pn / (dn + T(1e-30)));
  rho_new = min_of(max_of(rho_new, st.rho_min), st.rho_max);
  if (!(rho_new > rho * st.adaptive_rho_tolerance || rho_new * st.adaptive_rho_tolerance < rho))
    return true;
  rho = rho_new;
  sc.last_check = 0;  // a new ρ: the rate so far says nothing of the next iterations
  qp_set_rho(sh, w, rho, st.rho_eq_scale);
  if (!qp_factor(sh, d, w, st.explicit_inverse, dense)) return false;
  ++info.rho_updates;
  return true;
}

// The status a solve ends with: a budget spent within 10x the tolerances is
// kSolvedInaccurate (qp_finish, and the warp kernel's finish).
template <class T>
IMPULSE_HD SolveStatus qp_final_status(SolveStatus status, const QpCheck<T>& c) {
  if (status == SolveStatus::kMaxIterations && c.prim_res <= T(10) * c.eps_prim &&
      c.dual_res <= T(10) * c.eps_dual && c.gap <= T(10) * c.eps_gap)
    return SolveStatus::kSolvedInaccurate;
  return status;
}

// info of a finished solve from its status, iterations, objective and yᵀ(Ax − b)
// (summed in double) and the last check's residuals (qp_finish, the warp kernel)
template <class T>
IMPULSE_HD void qp_finish_info(SolveStatus status, int it, double obj, double lag, const QpCheck<T>& c,
                               QpInfo<T>& info) {
  info.status = status;
  info.iterations = it;
  info.objective = T(obj);
  info.value = T(obj + lag);
  info.prim_res = c.prim_res;
  info.dual_res = c.dual_res;
  info.eps_prim = c.eps_prim;
  info.eps_dual = c.eps_dual;
  info.gap = c.gap;
  info.eps_gap = c.eps_gap;
}

// the objective ½xᵀPx + qᵀx and value = objective + yᵀ(Ax − b), accumulated in
// double (their terms cancel, and the learning losses are these values). In
// double, a solve that stopped at a check still holds Px for the returned x in
// tmp_n.
template <class T, class S, class SW, class SX>
IMPULSE_HD_PHASE void qp_finish(const QpShape& sh, const QpData<T, S>& d, View<T, SX> x,
                          View<T, SX> y, QpWork<T, SW>& w, const QpSettings<T>& st,
                          SolveStatus status, int it, const QpCheck<T>& c, T rho,
                          QpInfo<T>& info) {
  const int n = sh.n, m = sh.m();
  const CsrPattern& a = sh.a;
  if (it > st.max_iter) it = st.max_iter;
  status = qp_final_status(status, c);
  double obj = 0.0;
  if (sizeof(T) == 8 && status == SolveStatus::kSolved) {
    for (int i = 0; i < n; ++i) obj += double(x[i]) * (0.5 * double(w.tmp_n[i]) + double(d.q[i]));
  } else {
    for (int i = 0; i < n; ++i) {
      double pxi = 0.0;
      for (int j = 0; j < n; ++j) pxi += double(d.P[i * n + j]) * double(x[j]);
      obj += double(x[i]) * (0.5 * pxi + double(d.q[i]));
    }
  }
  double lag = 0.0;
  for (int r = 0; r < m; ++r) {
    if (y[r] == T(0)) continue;  // b_r may be +inf there
    double ax = -double(d.b[r]);
    for (int k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) ax += double(d.A[k]) * double(x[a.col[k]]);
    lag += double(y[r]) * ax;
  }
  qp_finish_info(status, it, obj, lag, c, info);
  info.rho = rho;
}

}  // namespace detail

// Solves one problem. x (n) and y (m) hold the warm start on entry when
// `warm` is true (they are zeroed otherwise) and the answer on exit, whatever
// the status (the best iterate is always returned). The phases: set-up,
// iterate (an ADMM step each iteration), check (residuals, the next check,
// infeasibility, ρ) at scheduled iterations, finish.
//
// reuse: a re-solve that keeps the factorization the last solve left in w
// (kQpKeptValid), as OSQP's update of q and bounds does: the caller promises
// that P and A are those of that solve and only q and b changed (settings
// that the factorization depends on are checked: kQpKeptSettings). The input check then covers q and b only, and the set-up skips the
// equilibration and the factorization (D, E, c and ρ stay: the iterates
// differ from a fresh solve's in rounding and in the path, not in what
// `solved` means). Without a usable factorization in w (none yet, the last
// solve ended in a numerical error or the fallback restart, or other σ,
// ρ_eq scale, Ruiz passes, explicit_inverse or dense iteration) the set-up is
// the full one. Every solve leaves its factorization in w for the next. (The
// host batch paths never reuse: a workspace there serves many problems.)
//
// resume: this solve goes on with another one's iteration of the problem
// (QpResume; the host batch path's hand-off of a lane): the stall rule and
// acceleration's budget count from that solve's start.
template <class T, class S, class SW, class SX>
IMPULSE_HD_NOINLINE QpInfo<T> qp_admm_solve(const QpShape& sh, const QpData<T, S>& d,
                                            View<T, SX> x, View<T, SX> y, QpWork<T, SW> w,
                                            const QpSettings<T>& st, bool warm, bool reuse = false,
                                            const QpResume<T>* resume = nullptr) {
  QpInfo<T> info;
  const int n = sh.n, m = sh.m();
  const bool dense = detail::QpDenseCapable<S, SW, SX>::value && w.dense && st.dense_iteration &&
                     st.explicit_inverse;
  // the iterations before this solve (resume) and the budget from the problem's start
  const int before = resume ? resume->iterations : 0;
  const int budget = before + st.max_iter;
  // phase 0 with st; phase 1, after a stall (QpSettings::fallback), cold with
  // qp_fallback_settings for the rest of the budget
  QpSettings<T> cur = st;
  int used = 0, updates = 0;
  QpInfo<T> stall;  // phase 0's stall (its stall_* fields)
  for (int phase = 0;; ++phase) {
    if (phase == 1) cur = detail::qp_fallback_settings(st, st.max_iter - used);
    info = QpInfo<T>{};
    if (phase == 1) {
      info.stall_iteration = stall.stall_iteration;
      info.stall_best_iteration = stall.stall_best_iteration;
      info.stall_best_ratio = stall.stall_best_ratio;
      info.restart_iteration = before + used;
    }
    const bool kept = phase == 0 && reuse && detail::qp_factor_kept(w, cur, dense);
    if (detail::qp_setup(sh, d, x, y, w, cur, phase == 0 && warm, dense, kept, info) != SolveStatus::kNotRun) {
      // a kept factorization is untouched by a fault in q or b; a full set-up
      // that failed left none
      if (!kept) detail::qp_keep_factor(w, false, cur.rho, cur, dense);
      info.iterations += used;
      info.rho_updates += updates;
      return info;
    }
    T rho = kept ? w.cscale[kQpKeptRho] : cur.rho;
    SolveStatus status = SolveStatus::kMaxIterations;
    detail::QpCheck<T> c;
    detail::QpSchedule<T> sc;
    sc.next_check = phase == 0 && warm ? 1 : cur.check_every;
    bool stalled = false;
    // the stall rule, in iterations from the problem's start (phase 0 of a
    // resumed solve goes on with its record)
    detail::QpStagnation<T> stagnation;
    const int start = phase == 0 ? before : 0, total = phase == 0 ? budget : cur.max_iter;
    if (phase == 0 && resume) stagnation = resume->stagnation;
    // Anderson acceleration (QpSettings::anderson): host dense path only, for
    // the first total/8 iterations
    const int aa_end = total / 8;
    const bool accel = dense && w.has_aa && cur.anderson > 0 && sh.cones.n_soc == 0 && start < aa_end;
    QpAnderson<T, SW> aa;
    if constexpr (detail::QpDenseCapable<S, SW, SX>::value) {
      if (accel) {
        aa = QpAnderson<T, SW>::carve(w.aa, n, m, cur.anderson);
        aa.start(x, w.z, y);
      }
    }
    int it = 0;
    for (it = 1; it <= cur.max_iter; ++it) {
      // keep the previous iterate for the infeasibility certificates, which
      // are only tested at check iterations (1 when warm, the scheduled ones,
      // every adaptive_rho_interval-th, the last)
      const bool check = it == sc.next_check || it == cur.max_iter ||
                         (cur.adaptive_rho && it % cur.adaptive_rho_interval == 0);
      if (check) {
        for (int i = 0; i < n; ++i) w.x_prev[i] = x[i];
        for (int i = 0; i < m; ++i) w.y_prev[i] = y[i];
      }
      if (dense)
        detail::qp_admm_step_dense(sh, d, w, x, y, cur.alpha);
      else
        detail::qp_admm_step(sh, d, w, x, y, cur.alpha, cur.explicit_inverse);
      bool new_rho = false;
      if (check) {
        SolveStatus verdict = detail::qp_check_residuals(sh, d, w, dense, x, y, cur, c);
        if (verdict == SolveStatus::kNotRun) {
          detail::qp_schedule_next(cur, it, c, sc);
          verdict = detail::qp_check_infeasible(sh, d, w, dense, x, y, cur);
        }
        const T rho_was = rho;
        if (verdict == SolveStatus::kNotRun &&
            !detail::qp_adapt_rho(sh, d, w, dense, cur, it, c, sc, rho, info))
          verdict = SolveStatus::kNumericalError;
        if (verdict != SolveStatus::kNotRun) {
          status = verdict;
          break;
        }
        if (phase == 0 && cur.fallback && stagnation.stalled(sc.last_ratio, start + it, total)) {
          stalled = true;
          break;
        }
        if (phase == 0 && cur.fallback && cur.stall_return && detail::qp_ipm_sooner(cur, start + it, sc.remaining)) {
          stalled = true;
          info.switch_remaining = sc.remaining;
          break;
        }
        new_rho = rho != rho_was;
      }
      // acceleration's budget spent unsolved: a stall (the plain iteration
      // from there could neither converge nor stagnate: QSCAGR7)
      if (accel && phase == 0 && cur.fallback && start + it == aa_end) {
        stalled = true;
        break;
      }
      // the next step starts from the accelerated point; the checks above saw
      // the step's own output (a new ρ changes the map: the history restarts)
      if constexpr (detail::QpDenseCapable<S, SW, SX>::value) {
        if (accel && start + it < aa_end) {
          if (new_rho) aa.reset(T(1));
          aa.step(x, w.z, y);
        }
      }
    }
    if (stalled) {
      info.stall_iteration = start + it;
      info.stall_best_iteration = stagnation.best_it;
      info.stall_best_ratio = stagnation.best_ratio;
    }
    if (stalled && cur.stall_return) {
      detail::qp_finish(sh, d, x, y, w, cur, SolveStatus::kMaxIterations, it, c, rho, info);
      detail::qp_keep_factor(w, true, rho, cur, dense);
      info.stalled = true;
      return info;
    }
    if (stalled) {
      used = it;
      updates = info.rho_updates;
      stall = info;
      continue;
    }
    detail::qp_finish(sh, d, x, y, w, cur, status, it, c, rho, info);
    if (phase == 1) info.rho = T(0);  // the fallback settings' ρ (QpInfo::rho)
    detail::qp_keep_factor(w, phase == 0 && status != SolveStatus::kNumericalError, rho, cur, dense);
    info.iterations += used;
    info.rho_updates += updates;
    return info;
  }
}

IMPULSE_NAMESPACE_END  // namespace impulse
