// Lemke's complementary pivoting method: the exact (host-only, double precision)
// reference LCP solver, and the solver for Stewart-Trinkle steps, whose matrices are
// not symmetric.
//
//   find z >= 0 with w = M z + q >= 0 and z'w = 0,  M dense n x n row-major.
//
// Method. The system w - M z - e z0 = q (covering vector e = 1, artificial z0) starts
// from the basis {w}; z0 enters at level -min q, then the complement of each leaving
// variable enters next, until z0 leaves (a solution), an entering column has no
// blocking row (a secondary ray: kRayTermination, detected at once, never looped) or the
// pivot cap is hit (kMaxIterations).
//
// Implementation. Revised form: the workspace holds the basis inverse B^-1 (n x n) and
// the basic values B^-1 q; the entering column B^-1 A_e is formed on demand (O(n^2))
// and each pivot is a rank-one update (O(n^2)). Because the starting basis is the
// identity, the rows of [B^-1 q, B^-1] are lexicographically positive throughout, and
// the ratio test breaks ties lexicographically on them (after preferring z0 to leave
// whenever it is among the tied rows), which rules out cycling. On success the basic
// system is re-solved once from the original data (its z part M_SS z_S = −q_S, LU
// with partial pivoting), and whichever of the two answers (pivoted tableau / re-solved) has the
// smaller residual is returned, so rounding accumulated over many pivots does not
// reach the answer.
//
// Workspace. lemke_solve(..., ws) reuses a LemkeWorkspace across calls: after the
// first call of a given n (or ws.reserve(n)) it allocates nothing. The overload without
// a workspace makes a temporary one (a few vectors of n^2 doubles) per call.
//
// Numerical outcomes are statuses, never exceptions.
#pragma once

#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "solvers/status.h"

IMPULSE_NAMESPACE_BEGIN

struct LemkeSettings {
  int max_pivots = 0;       // 0 => 50 * (n + 1)
  double pivot_tol = 1e-12; // a row blocks when its column entry > pivot_tol * max |column|
  double zero_tol = 1e-10;  // ratios within zero_tol * (1 + |ratio|) count as tied

  // nullptr when usable, else a message (thread-local buffer, overwritten by the
  // next call on the same thread).
  const char* validate() const {
    static thread_local char msg[128];
    if (max_pivots < 0) {
      std::snprintf(msg, sizeof msg, "max_pivots must be >= 0 (0 = automatic), got %d",
                    max_pivots);
      return msg;
    }
    if (!(std::isfinite(pivot_tol) && pivot_tol > 0.0 && pivot_tol < 1.0)) {
      std::snprintf(msg, sizeof msg, "pivot_tol must be in (0, 1), got %g", pivot_tol);
      return msg;
    }
    if (!(std::isfinite(zero_tol) && zero_tol >= 0.0 && zero_tol < 1.0)) {
      std::snprintf(msg, sizeof msg, "zero_tol must be in [0, 1), got %g", zero_tol);
      return msg;
    }
    return nullptr;
  }
};

// status: kSolved; kRayTermination (secondary ray: for copositive-plus M, e.g. PSD M,
// this proves the LCP infeasible); kMaxIterations (pivot cap); kInvalidInput (n < 0,
// non-finite M or q, or settings that fail validate()); kNumericalError (non-finite
// result). On every status but kInvalidInput, z and w hold the last iterate's z part
// (clamped at 0) and w = M z + q.
// pivots: pivots performed (the entry of z0 counts as one; 0 when q >= 0).
// residual: max_i max(|min(z_i, w_i)|, |z_i w_i|), recomputed from the data.
struct LemkeInfo {
  SolveStatus status = SolveStatus::kNotRun;
  int pivots = 0;
  double residual = 0.0;
};

// Reusable scratch for lemke_solve.
struct LemkeWorkspace {
  std::vector<double> binv;  // n x n row-major, B^-1
  std::vector<double> xb;    // n, B^-1 q (values of the basic variables)
  std::vector<double> col;   // n, entering column B^-1 A_e
  std::vector<double> lu;    // n x n, for the final re-solve
  std::vector<double> x2;    // n, re-solved basic values
  std::vector<double> z2;    // n, candidate z from the re-solve
  std::vector<double> w2;    // n
  std::vector<int> basis;    // n, basic variable per row: w_i = i, z_i = n + i, z0 = 2n
  std::vector<int> cand;     // n, ratio-test candidates
  std::vector<int> perm;     // n, LU row permutation

  void reserve(int n) {
    const size_t m = n > 0 ? static_cast<size_t>(n) : 0;
    binv.resize(m * m);
    lu.resize(m * m);
    xb.resize(m);
    col.resize(m);
    x2.resize(m);
    z2.resize(m);
    w2.resize(m);
    basis.resize(m);
    cand.resize(m);
    perm.resize(m);
  }
};

namespace lemke_detail {

// w = M z + q and max_i max(|min(z_i, w_i)|, |z_i w_i|); NaN when non-finite.
inline double residual(int n, const double* M, const double* q, const double* z, double* w) {
  double r = 0.0;
  bool finite = true;
  for (int i = 0; i < n; ++i) {
    double acc = q[i];
    for (int j = 0; j < n; ++j) acc += M[static_cast<size_t>(i) * n + j] * z[j];
    w[i] = acc;
  }
  for (int i = 0; i < n; ++i) {
    finite = finite && std::isfinite(z[i]) && std::isfinite(w[i]);
    r = std::fmax(r, std::fabs(std::fmin(z[i], w[i])));
    r = std::fmax(r, std::fabs(z[i] * w[i]));
  }
  return finite ? r : std::nan("");
}

// Entering column d = B^-1 A_v, A = [I, -M, -e].
inline void entering_column(int n, const double* M, const double* binv, int v, double* d) {
  if (v < n) {
    for (int i = 0; i < n; ++i) d[i] = binv[static_cast<size_t>(i) * n + v];
  } else if (v < 2 * n) {
    const int j = v - n;
    for (int i = 0; i < n; ++i) {
      const double* row = binv + static_cast<size_t>(i) * n;
      double acc = 0.0;
      for (int k = 0; k < n; ++k) acc += row[k] * M[static_cast<size_t>(k) * n + j];
      d[i] = -acc;
    }
  } else {
    for (int i = 0; i < n; ++i) {
      const double* row = binv + static_cast<size_t>(i) * n;
      double acc = 0.0;
      for (int k = 0; k < n; ++k) acc += row[k];
      d[i] = -acc;
    }
  }
}

// Pivot on row r with entering column d (d[r] != 0).
inline void pivot(int n, double* binv, double* xb, const double* d, int r) {
  double* rr = binv + static_cast<size_t>(r) * n;
  const double inv = 1.0 / d[r];
  for (int k = 0; k < n; ++k) rr[k] *= inv;
  xb[r] *= inv;
  for (int i = 0; i < n; ++i) {
    if (i == r) continue;
    const double f = d[i];
    if (f == 0.0) continue;
    double* ri = binv + static_cast<size_t>(i) * n;
    for (int k = 0; k < n; ++k) ri[k] -= f * rr[k];
    xb[i] -= f * xb[r];
  }
}

// At a complementary basis (z0 out) every pair has w_i or z_i basic, so with S
// the indices whose z is basic, w_S = 0 and z_{not S} = 0 leave M_SS z_S = −q_S:
// an |S| x |S| system (|S| is the number of active constraints, usually far
// below n), solved by LU with partial pivoting. z gets z_S clamped at 0 and
// zeros elsewhere. False when singular or the basis is not complementary.
inline bool resolve_complementary(int n, const double* M, const double* q, const int* basis,
                                  double* lu, int* perm, int* idx, double* x, double* z) {
  int k = 0;
  for (int i = 0; i < n; ++i) {
    const int v = basis[i];
    if (v >= 2 * n) return false;  // z0 still basic
    if (v >= n) idx[k++] = v - n;
  }
  for (int r = 0; r < k; ++r)
    for (int c = 0; c < k; ++c)
      lu[static_cast<size_t>(r) * k + c] = M[static_cast<size_t>(idx[r]) * n + idx[c]];
  for (int i = 0; i < k; ++i) perm[i] = i;
  for (int j = 0; j < k; ++j) {
    int p = j;
    double best = std::fabs(lu[static_cast<size_t>(j) * k + j]);
    for (int i = j + 1; i < k; ++i) {
      const double a = std::fabs(lu[static_cast<size_t>(i) * k + j]);
      if (a > best) { best = a; p = i; }
    }
    if (!(best > 0.0)) return false;
    if (p != j) {
      for (int c = 0; c < k; ++c)
        std::swap(lu[static_cast<size_t>(j) * k + c], lu[static_cast<size_t>(p) * k + c]);
      std::swap(perm[j], perm[p]);
    }
    const double piv = lu[static_cast<size_t>(j) * k + j];
    for (int i = j + 1; i < k; ++i) {
      double* ri = lu + static_cast<size_t>(i) * k;
      const double f = ri[j] / piv;
      ri[j] = f;
      if (f == 0.0) continue;
      const double* rj = lu + static_cast<size_t>(j) * k;
      for (int c = j + 1; c < k; ++c) ri[c] -= f * rj[c];
    }
  }
  for (int i = 0; i < k; ++i) {
    double acc = -q[idx[perm[i]]];
    for (int c = 0; c < i; ++c) acc -= lu[static_cast<size_t>(i) * k + c] * x[c];
    x[i] = acc;
  }
  for (int i = k - 1; i >= 0; --i) {
    double acc = x[i];
    for (int c = i + 1; c < k; ++c) acc -= lu[static_cast<size_t>(i) * k + c] * x[c];
    x[i] = acc / lu[static_cast<size_t>(i) * k + i];
  }
  for (int j = 0; j < n; ++j) z[j] = 0.0;
  for (int i = 0; i < k; ++i) z[idx[i]] = std::fmax(x[i], 0.0);
  return true;
}

// z from basic values (z part only, clamped at 0).
inline void extract_z(int n, const int* basis, const double* xb, double* z) {
  for (int j = 0; j < n; ++j) z[j] = 0.0;
  for (int i = 0; i < n; ++i) {
    const int v = basis[i];
    if (v >= n && v < 2 * n) z[v - n] = std::fmax(xb[i], 0.0);
  }
}

}  // namespace lemke_detail

inline LemkeInfo lemke_solve(int n, const double* M, const double* q, double* z, double* w,
                             const LemkeSettings& s, LemkeWorkspace& ws) {
  LemkeInfo info;
  if (n < 0 || s.validate() != nullptr) {
    info.status = SolveStatus::kInvalidInput;
    return info;
  }
  for (size_t k = 0; k < static_cast<size_t>(n) * n; ++k)
    if (!std::isfinite(M[k])) { info.status = SolveStatus::kInvalidInput; return info; }
  for (int i = 0; i < n; ++i)
    if (!std::isfinite(q[i])) { info.status = SolveStatus::kInvalidInput; return info; }

  // Trivial solution.
  bool q_nonneg = true;
  for (int i = 0; i < n; ++i) q_nonneg = q_nonneg && q[i] >= 0.0;
  if (q_nonneg) {
    for (int i = 0; i < n; ++i) z[i] = 0.0;
    info.residual = lemke_detail::residual(n, M, q, z, w);
    info.status = SolveStatus::kSolved;
    return info;
  }

  ws.reserve(n);
  double* binv = ws.binv.data();
  double* xb = ws.xb.data();
  double* d = ws.col.data();
  int* basis = ws.basis.data();
  int* cand = ws.cand.data();
  const int z0 = 2 * n;
  const int max_pivots = s.max_pivots > 0 ? s.max_pivots : 50 * (n + 1);

  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < n; ++k) binv[static_cast<size_t>(i) * n + k] = (i == k) ? 1.0 : 0.0;
    xb[i] = q[i];
    basis[i] = i;
  }

  // z0 enters at level -min q. Among rows tied at the minimum the largest index leaves:
  // that keeps every row of [B^-1 q, B^-1] lexicographically positive after the pivot.
  int r = 0;
  for (int i = 1; i < n; ++i)
    if (q[i] <= q[r]) r = i;
  lemke_detail::entering_column(n, M, binv, z0, d);
  lemke_detail::pivot(n, binv, xb, d, r);
  int leaving = basis[r];
  basis[r] = z0;
  info.pivots = 1;
  const int z0_row = r;  // z0 stays in this row until it leaves
  int enter = leaving + n;  // complement of w_r is z_r

  SolveStatus status = SolveStatus::kMaxIterations;
  while (info.pivots < max_pivots) {
    lemke_detail::entering_column(n, M, binv, enter, d);
    double dmax = 0.0;
    for (int i = 0; i < n; ++i) dmax = std::fmax(dmax, std::fabs(d[i]));
    if (!std::isfinite(dmax)) { status = SolveStatus::kNumericalError; break; }
    const double ptol = s.pivot_tol * dmax;
    // Minimum ratio over blocking rows.
    double theta = INFINITY;
    int nc = 0;
    for (int i = 0; i < n; ++i) {
      if (d[i] > ptol) {
        const double ratio = std::fmax(xb[i], 0.0) / d[i];
        if (ratio < theta) theta = ratio;
        cand[nc++] = i;
      }
    }
    if (nc == 0) { status = SolveStatus::kRayTermination; break; }
    // Rows tied at the minimum.
    const double tie = theta + s.zero_tol * (1.0 + std::fabs(theta));
    int kept = 0;
    for (int c = 0; c < nc; ++c) {
      const int i = cand[c];
      if (std::fmax(xb[i], 0.0) / d[i] <= tie) cand[kept++] = i;
    }
    nc = kept;
    r = cand[0];
    bool z0_tied = false;
    for (int c = 0; c < nc; ++c)
      if (cand[c] == z0_row) z0_tied = true;
    if (z0_tied) {
      r = z0_row;
    } else {
      // Lexicographic tie break on the columns of B^-1 scaled by 1/d_i.
      for (int k = 0; k < n && nc > 1; ++k) {
        double best = INFINITY;
        for (int c = 0; c < nc; ++c) {
          const int i = cand[c];
          best = std::fmin(best, binv[static_cast<size_t>(i) * n + k] / d[i]);
        }
        const double lim = best + s.zero_tol * (1.0 + std::fabs(best));
        kept = 0;
        for (int c = 0; c < nc; ++c) {
          const int i = cand[c];
          if (binv[static_cast<size_t>(i) * n + k] / d[i] <= lim) cand[kept++] = i;
        }
        nc = kept;
      }
      r = cand[0];
    }
    lemke_detail::pivot(n, binv, xb, d, r);
    leaving = basis[r];
    basis[r] = enter;
    ++info.pivots;
    if (leaving == z0) { status = SolveStatus::kSolved; break; }
    enter = leaving < n ? leaving + n : leaving - n;
  }

  lemke_detail::extract_z(n, basis, xb, z);
  info.residual = lemke_detail::residual(n, M, q, z, w);
  if (status == SolveStatus::kSolved) {
    // Re-solve the final basic system from the data (its z part: M_SS z_S =
    // −q_S, O(|S|³) rather than O(n³)); keep the better answer.
    if (lemke_detail::resolve_complementary(n, M, q, basis, ws.lu.data(), ws.perm.data(),
                                            ws.cand.data(), ws.x2.data(), ws.z2.data())) {
      const double r2 = lemke_detail::residual(n, M, q, ws.z2.data(), ws.w2.data());
      if (r2 < info.residual) {
        for (int i = 0; i < n; ++i) {
          z[i] = ws.z2[i];
          w[i] = ws.w2[i];
        }
        info.residual = r2;
      }
    }
  }
  if (!std::isfinite(info.residual)) status = SolveStatus::kNumericalError;
  info.status = status;
  return info;
}

inline LemkeInfo lemke_solve(int n, const double* M, const double* q, double* z, double* w,
                             const LemkeSettings& s = {}) {
  LemkeWorkspace ws;
  return lemke_solve(n, M, q, z, w, s, ws);
}

IMPULSE_NAMESPACE_END  // namespace impulse
