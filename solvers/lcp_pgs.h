// Projected Gauss-Seidel for linear complementarity problems, one problem at a
// time, host and device.
//
//   LCP:  find z >= 0 with w = M z + q >= 0 and z'w = 0          (lcp_pgs_solve)
//   CCP:  find lambda in K = prod_b K_mu_b with w = M lambda + q in the dual
//         cone K* and lambda_b'w_b = 0 for every contact b        (ccp_block_pgs_solve)
//         K_mu = {(n, t1, t2) : ||(t1, t2)|| <= mu n}, K_mu* = {(n, t) : mu ||t|| <= n}
//
// M is a dense n x n row-major matrix (element (i, j) at M[i * n + j] of the view),
// q, z, w, lambda, mu are vectors of the view. Nothing here allocates, throws or
// includes CUDA headers; every solver entry point is IMPULSE_HD.
//
// Both solvers keep w = M z + q up to date incrementally: when a sweep changes z_i
// (or block b) by d, w += M(:, i) d. So a sweep costs at most one mat-vec (rows whose
// z stays put -- inactive contacts -- cost nothing) and the natural-map residual is
// O(n) at every check. Before a solve is declared converged, and at the end of every
// solve, w is recomputed from the data (q + M z, fixed summation order), so the w and
// the residual returned are exact for the z returned, not a drifted running sum.
//
// Determinism: the operation sequence depends only on the data and the settings, not
// on the stride, so a UnitStride (CPU, contiguous) and a RunStride (GPU, batch
// fastest) view of the same problem give bitwise equal results when the two builds
// evaluate floating point the same way.
#pragma once

#include "solvers/cones.h"
#include "solvers/config.h"
#include "solvers/status.h"
#include "solvers/view.h"

#if !IMPULSE_DEVICE_PASS
#include <cstdio>
#endif

IMPULSE_NAMESPACE_BEGIN

// ---- settings and result -------------------------------------------------------------

template <class T>
struct LcpSettings {
  int max_iter = 1000;   // sweeps
  T omega = T(1);        // over-relaxation, in (0, 2)
  T tol = T(1e-8);       // stop when residual <= tol (absolute, infinity norm)
  int check_every = 1;   // residual check interval (sweeps)

  // Host only. nullptr when the settings are usable, else a message such as
  // "omega must be in (0, 2), got 2.5". The message lives in a thread-local buffer
  // that the next call on the same thread overwrites.
  const char* validate() const;
};

// status:
//   kSolved           residual <= tol
//   kSolvedInaccurate budget spent, residual <= 10 tol (status.h vocabulary)
//   kMaxIterations    budget spent, residual larger; the iterate is returned anyway
//   kNumericalError   the iterate became non-finite
//   kInvalidInput     the data were rejected; fault says why (z, w left untouched)
// iterations: sweeps performed (0 when the start already satisfies tol).
// residual: natural-map residual of the returned iterate, recomputed from the data.
template <class T>
struct LcpInfo {
  SolveStatus status = SolveStatus::kNotRun;
  InputFault fault = InputFault::kNone;
  int iterations = 0;
  T residual = T(0);
};

#if !IMPULSE_DEVICE_PASS
template <class T>
const char* LcpSettings<T>::validate() const {
  static thread_local char msg[128];
  if (max_iter < 0) {
    std::snprintf(msg, sizeof msg, "max_iter must be >= 0, got %d", max_iter);
    return msg;
  }
  if (!(is_finite(omega) && omega > T(0) && omega < T(2))) {
    std::snprintf(msg, sizeof msg, "omega must be in (0, 2), got %g", static_cast<double>(omega));
    return msg;
  }
  if (!(is_finite(tol) && tol >= T(0))) {
    std::snprintf(msg, sizeof msg, "tol must be finite and >= 0, got %g", static_cast<double>(tol));
    return msg;
  }
  if (check_every < 1) {
    std::snprintf(msg, sizeof msg, "check_every must be >= 1, got %d", check_every);
    return msg;
  }
  return nullptr;
}
#endif

// ---- friction-cone projection ---------------------------------------------------------
// project_friction_cone(mu, n, t1, t2) comes from solvers/cones.h: the exact Euclidean
// projection onto K_mu in place; mu = 0 gives (max(n, 0), 0, 0), points of the polar
// cone (mu ||t|| <= -n) go to 0, others onto the boundary ray through t.

// ---- input checks ----------------------------------------------------------------------

// Plain LCP: non-finite M or q -> kNonFiniteM; M_ii <= 0 -> kNonPositiveDiagonal.
template <class T, class S>
IMPULSE_HD InputFault lcp_check_input(int n, View<const T, S> M, View<const T, S> q) {
  for (int i = 0; i < n * n; ++i)
    if (!is_finite(M[i])) return InputFault::kNonFiniteM;
  for (int i = 0; i < n; ++i)
    if (!is_finite(q[i])) return InputFault::kNonFiniteM;
  for (int i = 0; i < n; ++i)
    if (!(M[i * n + i] > T(0))) return InputFault::kNonPositiveDiagonal;
  return InputFault::kNone;
}

// Contact CCP (n = 3 n_contacts): as lcp_check_input, plus mu non-finite ->
// kNonFiniteMu, mu < 0 -> kNegativeMu. The normal diagonal entry must be > 0 for every
// contact; the two tangential ones only where mu_b > 0 (with mu_b = 0 the tangential
// rows play no part and may be zero).
template <class T, class S>
IMPULSE_HD InputFault ccp_check_input(int n_contacts, View<const T, S> M, View<const T, S> q,
                                      View<const T, S> mu) {
  const int n = 3 * n_contacts;
  for (int i = 0; i < n * n; ++i)
    if (!is_finite(M[i])) return InputFault::kNonFiniteM;
  for (int i = 0; i < n; ++i)
    if (!is_finite(q[i])) return InputFault::kNonFiniteM;
  for (int b = 0; b < n_contacts; ++b)
    if (!is_finite(mu[b])) return InputFault::kNonFiniteMu;
  for (int b = 0; b < n_contacts; ++b)
    if (mu[b] < T(0)) return InputFault::kNegativeMu;
  for (int b = 0; b < n_contacts; ++b) {
    const int i = 3 * b;
    if (!(M[i * n + i] > T(0))) return InputFault::kNonPositiveDiagonal;
    if (mu[b] > T(0)) {
      if (!(M[(i + 1) * n + i + 1] > T(0))) return InputFault::kNonPositiveDiagonal;
      if (!(M[(i + 2) * n + i + 2] > T(0))) return InputFault::kNonPositiveDiagonal;
    }
  }
  return InputFault::kNone;
}

namespace lcp_detail {

// w = M x + q from the data, row by row, fixed summation order.
template <class T, class S>
IMPULSE_HD void recompute_w(int n, View<const T, S> M, View<const T, S> q, View<T, S> x,
                            View<T, S> w) {
  for (int i = 0; i < n; ++i) {
    T acc = q[i];
    for (int j = 0; j < n; ++j) acc += M[i * n + j] * x[j];
    w[i] = acc;
  }
}

// max_i |min(z_i, w_i)|; a negative value flags a non-finite z or w.
template <class T, class S>
IMPULSE_HD T lcp_residual(int n, View<T, S> z, View<T, S> w) {
  T r = T(0);
  bool finite = true;
  for (int i = 0; i < n; ++i) {
    const T zi = z[i], wi = w[i];
    finite = finite && is_finite(zi) && is_finite(wi);
    r = max_of(r, abs_of(min_of(zi, wi)));
  }
  return finite ? r : T(-1);
}

// max_b ||lambda_b - Proj_K(lambda_b - w_b)||_inf; negative flags non-finite values.
template <class T, class S>
IMPULSE_HD T ccp_residual(int n_contacts, View<const T, S> mu, View<T, S> l, View<T, S> w) {
  T r = T(0);
  bool finite = true;
  for (int b = 0; b < n_contacts; ++b) {
    const int i = 3 * b;
    const T l0 = l[i], l1 = l[i + 1], l2 = l[i + 2];
    const T w0 = w[i], w1 = w[i + 1], w2 = w[i + 2];
    finite = finite && is_finite(l0) && is_finite(l1) && is_finite(l2) && is_finite(w0) &&
             is_finite(w1) && is_finite(w2);
    T p0 = l0 - w0, p1 = l1 - w1, p2 = l2 - w2;
    project_friction_cone(mu[b], p0, p1, p2);
    r = max_of(r, abs_of(l0 - p0));
    r = max_of(r, abs_of(l1 - p1));
    r = max_of(r, abs_of(l2 - p2));
  }
  return finite ? r : T(-1);
}

// Block step size eta_b for contact b (the block step is lambda_b - omega/eta_b w_b).
// mu_b = 0: eta = M_nn (the tangential part is projected to zero anyway, so this is
// plain PGS on the normal). mu_b > 0: the smaller of two cheap upper bounds on the
// largest eigenvalue of the symmetrized 3x3 diagonal block B = (M_bb + M_bb')/2:
// trace(B) (valid for PSD blocks) and Gershgorin max_r (B_rr + sum_{c!=r} |B_rc|).
// With eta >= lambda_max(B) each block step is a projected-gradient step of length
// <= omega / lambda_max on the block of 1/2 x'Mx + q'x, which decreases that objective
// for symmetric PSD M and any omega in (0, 2): the sweep is monotone and converges.
// (max diag of M_bb, the cheaper choice, underestimates lambda_max when the three
// rows are strongly coupled -- e.g. M = J W J' with few body DOFs -- and can diverge
// for omega near 2.)
template <class T, class S>
IMPULSE_HD T ccp_block_eta(int n, int i, T mu_b, View<const T, S> M) {
  const T d0 = M[i * n + i];
  if (!(mu_b > T(0))) return d0;
  const T d1 = M[(i + 1) * n + i + 1];
  const T d2 = M[(i + 2) * n + i + 2];
  const T b01 = abs_of(M[i * n + i + 1] + M[(i + 1) * n + i]) * T(0.5);
  const T b02 = abs_of(M[i * n + i + 2] + M[(i + 2) * n + i]) * T(0.5);
  const T b12 = abs_of(M[(i + 1) * n + i + 2] + M[(i + 2) * n + i + 1]) * T(0.5);
  const T gersh = max_of(max_of(d0 + b01 + b02, d1 + b01 + b12), d2 + b02 + b12);
  return min_of(d0 + d1 + d2, gersh);
}

template <class T>
IMPULSE_HD SolveStatus final_status(T res, T tol) {
  if (res < T(0)) return SolveStatus::kNumericalError;
  if (res <= tol) return SolveStatus::kSolved;
  if (res <= T(10) * tol) return SolveStatus::kSolvedInaccurate;
  return SolveStatus::kMaxIterations;
}

}  // namespace lcp_detail

// ---- plain LCP -------------------------------------------------------------------------

// Projected Gauss-Seidel with over-relaxation:
//   for i = 0..n-1:  z_i <- max(0, z_i - omega w_i / M_ii),  w = M z + q kept current.
// z holds the warm start on entry (zeros for a cold start; negative or non-finite
// entries are reset to 0), the answer on exit; w gets M z + q. Converges for symmetric
// positive semidefinite M with positive diagonal (and omega in (0, 2)), also for
// e.g. diagonally dominant M; other M may stall (kMaxIterations) or blow up
// (kNumericalError). Settings are not validated here (the host layer calls
// validate()); check_every < 1 is treated as 1.
template <class T, class S>
IMPULSE_HD LcpInfo<T> lcp_pgs_solve(int n, View<const T, S> M, View<const T, S> q, View<T, S> z,
                                    View<T, S> w, const LcpSettings<T>& s) {
  LcpInfo<T> info;
  const InputFault fault = lcp_check_input(n, M, q);
  if (fault != InputFault::kNone) {
    info.status = SolveStatus::kInvalidInput;
    info.fault = fault;
    return info;
  }
  for (int i = 0; i < n; ++i) {
    const T zi = z[i];
    z[i] = (is_finite(zi) && zi > T(0)) ? zi : T(0);
  }
  lcp_detail::recompute_w(n, M, q, z, w);
  T res = lcp_detail::lcp_residual(n, z, w);
  if (res >= T(0) && res <= s.tol) {
    info.status = SolveStatus::kSolved;
    info.residual = res;
    return info;
  }
  const int check_every = s.check_every > 0 ? s.check_every : 1;
  const T omega = s.omega;
  int it = 0;
  while (it < s.max_iter) {
    for (int i = 0; i < n; ++i) {
      const T zi = z[i];
      const T zn = max_of(T(0), zi - omega * w[i] / M[i * n + i]);
      const T d = zn - zi;
      if (d != T(0)) {
        z[i] = zn;
        for (int j = 0; j < n; ++j) w[j] += M[j * n + i] * d;
      }
    }
    ++it;
    if (it % check_every == 0 || it == s.max_iter) {
      res = lcp_detail::lcp_residual(n, z, w);
      if (res < T(0)) break;  // non-finite: reported below
      if (res <= s.tol) {
        lcp_detail::recompute_w(n, M, q, z, w);  // drop the drift of the running w
        res = lcp_detail::lcp_residual(n, z, w);
        if (res >= T(0) && res <= s.tol) break;
      }
    }
  }
  lcp_detail::recompute_w(n, M, q, z, w);
  res = lcp_detail::lcp_residual(n, z, w);
  info.iterations = it;
  info.status = lcp_detail::final_status(res, s.tol);
  info.residual = res;
  return info;
}

// ---- contact cone complementarity (block PGS) ------------------------------------------

// Block projected Gauss-Seidel (Anitescu-Tasora style) for the contact CCP above.
// n = 3 n_contacts; block b is [lambda_n, lambda_t1, lambda_t2] at 3b..3b+2; mu has
// n_contacts entries. For b = 0..n_contacts-1:
//   lambda_b <- Proj_{K_mu_b}(lambda_b - omega / eta_b w_b),  w = M lambda + q kept current,
// with eta_b from lcp_detail::ccp_block_eta (M_nn when mu_b = 0, else
// min(trace, Gershgorin) of the symmetrized diagonal block >= its largest eigenvalue).
// This is the first-order optimality of min 1/2 lambda'M lambda + q'lambda over K for
// symmetric PSD M, where it converges for omega in (0, 2).
// residual = max_b ||lambda_b - Proj_K(lambda_b - w_b)||_inf. lambda: warm start in
// (projected onto K first; non-finite entries reset to 0), answer out; w = M lambda + q.
// Statuses as lcp_pgs_solve.
template <class T, class S>
IMPULSE_HD LcpInfo<T> ccp_block_pgs_solve(int n_contacts, View<const T, S> M,
                                          View<const T, S> q, View<const T, S> mu,
                                          View<T, S> lambda, View<T, S> w,
                                          const LcpSettings<T>& s) {
  LcpInfo<T> info;
  const InputFault fault = ccp_check_input(n_contacts, M, q, mu);
  if (fault != InputFault::kNone) {
    info.status = SolveStatus::kInvalidInput;
    info.fault = fault;
    return info;
  }
  const int n = 3 * n_contacts;
  for (int b = 0; b < n_contacts; ++b) {
    const int i = 3 * b;
    T l0 = lambda[i], l1 = lambda[i + 1], l2 = lambda[i + 2];
    if (!(is_finite(l0) && is_finite(l1) && is_finite(l2))) l0 = l1 = l2 = T(0);
    project_friction_cone(mu[b], l0, l1, l2);
    lambda[i] = l0;
    lambda[i + 1] = l1;
    lambda[i + 2] = l2;
  }
  lcp_detail::recompute_w(n, M, q, lambda, w);
  T res = lcp_detail::ccp_residual(n_contacts, mu, lambda, w);
  if (res >= T(0) && res <= s.tol) {
    info.status = SolveStatus::kSolved;
    info.residual = res;
    return info;
  }
  const int check_every = s.check_every > 0 ? s.check_every : 1;
  const T omega = s.omega;
  int it = 0;
  while (it < s.max_iter) {
    for (int b = 0; b < n_contacts; ++b) {
      const int i = 3 * b;
      const T mu_b = mu[b];
      const T g = omega / lcp_detail::ccp_block_eta(n, i, mu_b, M);
      const T o0 = lambda[i], o1 = lambda[i + 1], o2 = lambda[i + 2];
      T l0 = o0 - g * w[i], l1 = o1 - g * w[i + 1], l2 = o2 - g * w[i + 2];
      project_friction_cone(mu_b, l0, l1, l2);
      const T d0 = l0 - o0, d1 = l1 - o1, d2 = l2 - o2;
      if (d0 != T(0) || d1 != T(0) || d2 != T(0)) {
        lambda[i] = l0;
        lambda[i + 1] = l1;
        lambda[i + 2] = l2;
        for (int j = 0; j < n; ++j)
          w[j] += M[j * n + i] * d0 + M[j * n + i + 1] * d1 + M[j * n + i + 2] * d2;
      }
    }
    ++it;
    if (it % check_every == 0 || it == s.max_iter) {
      res = lcp_detail::ccp_residual(n_contacts, mu, lambda, w);
      if (res < T(0)) break;
      if (res <= s.tol) {
        lcp_detail::recompute_w(n, M, q, lambda, w);
        res = lcp_detail::ccp_residual(n_contacts, mu, lambda, w);
        if (res >= T(0) && res <= s.tol) break;
      }
    }
  }
  lcp_detail::recompute_w(n, M, q, lambda, w);
  res = lcp_detail::ccp_residual(n_contacts, mu, lambda, w);
  info.iterations = it;
  info.status = lcp_detail::final_status(res, s.tol);
  info.residual = res;
  return info;
}

IMPULSE_NAMESPACE_END  // namespace impulse
