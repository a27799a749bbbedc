// The interior-point finish of the host batch path: a dense primal-dual
// interior-point method (Mehrotra's predictor-corrector) for the problems ADMM
// stalls on.
//
//   minimize ½ xᵀPx + qᵀx   subject to  Ax + s = b,  s ∈ K
//
// with K made of zero and nonnegative cones (no second-order cones: a problem
// with one is not eligible, qp_ipm_eligible). A nonnegative row with b = +inf
// has no bound and is left out (its y is 0).
//
// Where it is used: solve_batch's CPU paths in double. ADMM runs first; when
// it stagnates (QpSettings::fallback's rule, from a quarter of the budget on),
// or when its residuals extrapolate to more further iterations than one solve
// here costs (QpSettings::ipm_switch), it returns (QpSettings::stall_return)
// and the problem is solved again from scratch here. On the Maros-Meszaros problems ADMM does not finish (QISRAEL,
// QSCAGR7, QSHARE2B: also OSQP's failures) this converges in a few dozen
// iterations. If it does not, the caller restarts ADMM as before.
//
// Method (Nocedal & Wright, Numerical Optimization, 2nd ed., §16.6, with
// equality rows kept apart): the data are first equilibrated (Ruiz passes on
// [P Aᵀ; A 0] and a cost factor, as OSQP scales); each iteration solves the
// Newton system reduced to
//   [P + A_inᵀ W A_in   A_eqᵀ] [dx]   [g₁]
//   [A_eq                0   ] [dy] = [g₂],   W = diag(z ∘ s⁻¹),
// regularized (δ on the diagonal: P may be singular and equality rows
// dependent) and corrected by iterative refinement on the unregularized
// system, through a Cholesky factor of the (1,1) block and one of its Schur
// complement A_eq (…)⁻¹ A_eqᵀ + δI. The step length keeps s, z > 0 (0.99 of
// the way to the boundary).
//
// Stopping: the ADMM solver's rule in the original units (QpSettings: eps_abs,
// eps_rel, check_gap), with z = Π_C(Ax) the nearest point of C = b − K:
//   ‖Ax − z‖∞ ≤ eps_abs + eps_rel·max(‖Ax‖∞, ‖z‖∞)
//   ‖Px + q + Aᵀy‖∞ ≤ eps_abs + eps_rel·max(‖Px‖∞, ‖Aᵀy‖∞, ‖q‖∞)
//   |xᵀPx + qᵀx + bᵀy| ≤ eps_abs + eps_rel·max(|xᵀPx|, |qᵀx|, |bᵀy|)
// with y ∈ K* by construction (y ≥ 0 on the nonnegative rows). The gap test
// applies whatever check_gap says: unlike ADMM's, the interior point's y is
// complementary to its slack only in the limit.
//
// Iterations count the Newton systems solved, the starting point's included
// (a problem solved at the start reports 1).
//
// Each iteration forms P + A_inᵀ W A_in as a symmetric rank update (Eigen's
// blocked kernels) and factors it by Cholesky. The method is compiled once per
// instruction set with the CPU lanes (host/batch/qp_ipm.cc, lane_kernels.h) and
// runs with the set in use: like the lanes' results, its answers may differ in
// the last bits from one set to another (and so, rarely, an iteration count),
// never otherwise.
//
// Host only; it allocates (dense matrices of (n + m)² at most): it is not on
// the real-time path, whose solver keeps ADMM's restart.
#pragma once

#include "solvers/qp_admm.h"

namespace impulse {

// true when the interior point applies: only zero and nonnegative cones.
bool qp_ipm_eligible(const QpShape& sh);

// QpSettings::ipm_switch's automatic value (kQpIpmSwitchAuto) for problems of
// this shape: one interior-point solve's cost in ADMM iterations, by their
// operation counts (an ADMM iteration: n² + 2 nnz(A) + 4(m + n); an interior-
// point one: m_in n²/2 + n³/6 + the equality rows' Schur complement + 10(n² +
// mn) + a fixed 15,000, 15 of them), at least 1. Dense random QPs (m = 2n):
// 632 at n = 8, 280 at 16, 229 at 32, 313 at 64, 531 at 128; the recorded
// ContactNets QPs (n 32, m 80, A 15% dense): 647.
int qp_ipm_switch_auto(const QpShape& sh);

// Solves one problem (P row-major n × n, A in sh's pattern, b of sh.m()
// rows) cold, in double whatever T, in at most `max_iter` (≥ 1) iterations with
// st's tolerances. On return x (n) and y (m) hold the last iterate; the info's
// status is kSolved when the rule above holds, else kMaxIterations (or
// kNumericalError when the Newton system could not be solved or the iterate
// stopped being finite, or data the input check refuses: P not positive
// semidefinite, NaN or −inf in b, NaN in q or A; a caller that turned the
// input check off may pass them). info.objective and value as QpInfo defines them.
template <class T>
QpInfo<T> qp_ipm_solve(const QpShape& sh, const T* P, const T* q, const T* A, const T* b, T* x,
                       T* y, const QpSettings<T>& st, int max_iter);

}  // namespace impulse
