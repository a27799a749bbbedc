// The conic QP by ADMM on W problems at once, one per lane (host only).
//
// The iteration is qp_admm.h's: the same generic templates (equilibration,
// K = P + diag(σ) + Aᵀdiag(ρ)A, the row updates and cone projections)
// instantiated with T = Lanes<T>, and the x-step with two triangular solves
// (Aᵀv by columns, the solves in registers: qp_lanes_step), so
// every lane follows qp_admm_solve's arithmetic for its own problem. What
// this file adds is the control flow per lane: each lane stops on its own
// (solved, infeasible, numerical error) and its answer is written out at
// that iteration; its own ρ adaptation (all lanes are refactored together,
// which leaves an unchanged lane's factor bitwise as it was); its own input
// faults. The group runs until its last lane stops.
//
// Differences from qp_admm_solve, by design:
// - K is factored by Cholesky (two triangular solves per iteration) rather
//   than inverted: in lanes the solves have no dependent scalar chains, and
//   the factorization costs a third of an inverse.
// - Checks are scheduled for the group: at the latest iteration any running
//   lane's prediction (QpSettings::predict_checks) names, since the group
//   runs until its slowest lane stops. A lane's stop iteration (and with it
//   its answer, never its tolerance) therefore depends on the other problems
//   of its group; the same batch gives bitwise the same results every time.
// - The equilibration's 1/√ is approximate (rsqrt_approx).
#pragma once

#include <limits>
#include <vector>

#include "solvers/lanes.h"
#include "solvers/qp_admm.h"

IMPULSE_NAMESPACE_BEGIN

// A's pattern by columns (built once per batch): column j holds the entries
// entry[col_ptr[j] .. col_ptr[j + 1]) of A's values, in rows row[...]. The
// lanes form Aᵀv as one sum per column, in a register, where the row-wise
// scatter stores every entry it touches.
//
// Also AᵀA's pattern for K: entry (i, j ≤ i) of the lower triangle, at
// e = i(i + 1)/2 + j, sums A_ri·A_rj over the pairs pair_a/pair_b[pair_ptr[e]
// .. pair_ptr[e + 1]) of A's entries (in columns i and j) that share a row.
struct QpColumns {
  using Ints = std::vector<int, LaneAllocator<int>>;  // (solvers/lanes.h: this instruction set's own)
  Ints col_ptr, row, entry;
  Ints pair_ptr, pair_a, pair_b;
  QpColumns() = default;
  explicit QpColumns(const CsrPattern& a) : col_ptr(a.cols + 1, 0), row(a.nnz), entry(a.nnz) {
    const int tri = a.cols * (a.cols + 1) / 2;
    pair_ptr.assign(tri + 1, 0);
    for (int r = 0; r < a.rows; ++r)  // columns increase along a row
      for (int kb = a.row_ptr[r]; kb < a.row_ptr[r + 1]; ++kb)
        for (int ka = kb; ka < a.row_ptr[r + 1]; ++ka)
          ++pair_ptr[a.col[ka] * (a.col[ka] + 1) / 2 + a.col[kb] + 1];
    for (int e = 0; e < tri; ++e) pair_ptr[e + 1] += pair_ptr[e];
    pair_a.resize(pair_ptr[tri]);
    pair_b.resize(pair_ptr[tri]);
    Ints fill(pair_ptr.begin(), pair_ptr.end() - 1);
    for (int r = 0; r < a.rows; ++r)
      for (int kb = a.row_ptr[r]; kb < a.row_ptr[r + 1]; ++kb)
        for (int ka = kb; ka < a.row_ptr[r + 1]; ++ka) {
          const int p = fill[a.col[ka] * (a.col[ka] + 1) / 2 + a.col[kb]]++;
          pair_a[p] = ka;
          pair_b[p] = kb;
        }
    for (int k = 0; k < a.nnz; ++k) ++col_ptr[a.col[k] + 1];
    for (int j = 0; j < a.cols; ++j) col_ptr[j + 1] += col_ptr[j];
    Ints next(col_ptr.begin(), col_ptr.end() - 1);
    for (int r = 0; r < a.rows; ++r)
      for (int k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
        const int slot = next[a.col[k]]++;
        row[slot] = r;
        entry[slot] = k;
      }
  }
};

// Where the lanes' answers go, and what happened to each.
template <class T>
struct QpLaneOut {
  static constexpr int W = Lanes<T>::W;
  T* x[W] = {};  // lane l's x (n entries) is written here when it stops
  T* y[W] = {};  // and its y (m entries)
  QpInfo<T> info[W];
  bool stalled[W] = {};  // handed over (kNotRun) because it stalled: restart with the fallback
  // a lane handed over (kNotRun): the stall rule's record, which the solve that
  // goes on with it resumes (QpResume)
  detail::QpStagnation<T> stagnation[W];
};

// the lane overload of detail::qp_rescale (one Ruiz update of a scaling
// vector), with an approximate 1/√: the factors only need to be
// consistent, not exact
template <class T>
void qp_rescale(int len, View<Lanes<T>, LaneStride> dst, View<const Lanes<T>, LaneStride> a,
                View<const Lanes<T>, LaneStride> b) {
  for (int i = 0; i < len; ++i)
    dst[i] *= rsqrt_approx(detail::qp_limit_scaling(max_of(a[i], b[i])));
}

namespace detail {

// lane l stops: its x and y are written out, with its objective and value
// in double (the Px of the check that stopped it when `px` is set) and the
// last check's residuals and tolerances (c)
template <class T>
void qp_lane_stop(const QpShape& sh, const QpData<Lanes<T>, LaneStride>& d,
                  const QpWork<Lanes<T>, LaneStride>& w, View<Lanes<T>, LaneStride> x,
                  View<Lanes<T>, LaneStride> y, int l, SolveStatus status, int it, bool px,
                  const QpCheck<Lanes<T>>& c, Lanes<T> rho, QpLaneOut<T>& out) {
  const int n = sh.n, m = sh.m();
  T* xo = out.x[l];
  T* yo = out.y[l];
  for (int i = 0; i < n; ++i) xo[i] = x[i][l];
  for (int r = 0; r < m; ++r) yo[r] = y[r][l];
  double obj = 0.0;
  if (sizeof(T) == 8 && px) {
    for (int i = 0; i < n; ++i) obj += double(xo[i]) * (0.5 * double(w.tmp_n[i][l]) + double(d.q[i][l]));
  } else {
    for (int i = 0; i < n; ++i) {
      double pxi = 0.0;
      for (int j = 0; j < n; ++j) pxi += double(d.P[i * n + j][l]) * double(xo[j]);
      obj += double(xo[i]) * (0.5 * pxi + double(d.q[i][l]));
    }
  }
  double lag = 0.0;
  for (int r = 0; r < m; ++r) {
    if (yo[r] == T(0)) continue;  // b_r may be +inf there
    double ax = -double(d.b[r][l]);
    for (int k = sh.a.row_ptr[r]; k < sh.a.row_ptr[r + 1]; ++k)
      ax += double(d.A[k][l]) * double(xo[sh.a.col[k]]);
    lag += double(yo[r]) * ax;
  }
  QpInfo<T>& info = out.info[l];
  info.status = status;
  info.iterations = it;
  info.objective = T(obj);
  info.value = T(obj + lag);
  info.prim_res = c.prim_res[l];
  info.dual_res = c.dual_res[l];
  info.eps_prim = c.eps_prim[l];
  info.eps_dual = c.eps_dual[l];
  info.gap = c.gap[l];
  info.eps_gap = c.eps_gap[l];
  info.rho = rho[l];
}

// out_j = base_j + Σ_r A_rj v_r by columns (base may be null: zero)
template <class T>
void qp_lanes_Aty(const QpColumns& at, int n, View<const Lanes<T>, LaneStride> A,
                  const Lanes<T>* __restrict__ v, const Lanes<T>* __restrict__ base,
                  Lanes<T>* __restrict__ out) {
  const int* __restrict__ cp = at.col_ptr.data();
  const int* __restrict__ row = at.row.data();
  const int* __restrict__ entry = at.entry.data();
  const Lanes<T>* __restrict__ a = A.p;
  for (int j = 0; j < n; ++j) {
    Lanes<T> acc = base ? base[j] : Lanes<T>(T(0));
    for (int k = cp[j]; k < cp[j + 1]; ++k) acc += a[entry[k]] * v[row[k]];
    out[j] = acc;
  }
}

// w.L ← K = P + diag(σ) + Aᵀdiag(ρ)A, lower triangle, one sum per entry
// in a register over AᵀA's pattern (detail::qp_form_K adds each product into
// memory: a load and a store per term). ρ∘A goes to w.L_scratch, which the
// lanes do not otherwise use; where it does not fit there (nnz > n²), the
// generic form.
template <class T>
void qp_lanes_form_K(const QpShape& sh, const QpColumns& at, const QpData<Lanes<T>, LaneStride>& d,
                     QpWork<Lanes<T>, LaneStride>& w) {
  using L = Lanes<T>;
  const int n = sh.n;
  const CsrPattern& a = sh.a;
  if (a.nnz > n * n) {
    qp_form_K(sh, d, w);
    return;
  }
  L* __restrict__ ra = w.L_scratch.p;
  const L* __restrict__ av = d.A.p;
  for (int r = 0; r < a.rows; ++r) {
    const L rr = w.rho[r];
    for (int k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) ra[k] = rr * av[k];
  }
  const int* __restrict__ pp = at.pair_ptr.data();
  const int* __restrict__ pa = at.pair_a.data();
  const int* __restrict__ pb = at.pair_b.data();
  const L* __restrict__ P = d.P.p;
  L* __restrict__ K = w.L.p;
  for (int i = 0; i < n; ++i) {
    const int e0 = i * (i + 1) / 2;
    for (int j = 0; j <= i; ++j) {
      L acc = P[i * n + j];
      if (i == j) acc += w.sig[i];
      for (int p = pp[e0 + j]; p < pp[e0 + j + 1]; ++p) acc += ra[pa[p]] * av[pb[p]];
      K[i * n + j] = acc;
    }
  }
}

// One ADMM iteration in lanes: qp_admm_step's with Aᵀ(ρ∘z − y) by columns
// and the x-step's two triangular solves in registers (the lane overload
// of cholesky_solve_in_place).
template <class T>
void qp_lanes_step(const QpShape& sh, const QpColumns& at, const QpData<Lanes<T>, LaneStride>& d,
                   QpWork<Lanes<T>, LaneStride>& w, View<Lanes<T>, LaneStride> x,
                   View<Lanes<T>, LaneStride> y, Lanes<T> alpha) {
  using L = Lanes<T>;
  const int n = sh.n, m = sh.m();
  const CsrPattern& a = sh.a;
  const L beta = L(T(1)) - alpha;
  L* __restrict__ t = w.tmp_m.p;
  for (int r = 0; r < m; ++r) t[r] = w.rho[r] * w.z[r] - y[r];
  L* __restrict__ base = w.tmp_n.p;
  for (int j = 0; j < n; ++j) base[j] = w.sig[j] * x[j] - d.q[j];
  qp_lanes_Aty(at, n, d.A, t, base, w.xt.p);
  cholesky_solve_in_place(n, w.L.as_const(), w.xt);
  for (int j = 0; j < n; ++j) x[j] = alpha * w.xt[j] + beta * x[j];
  const L* __restrict__ xt = w.xt.p;
  const L* __restrict__ av = d.A.p;
  qp_update_rows(sh, d, w, y, [&](int r) {
    L acc(T(0));
    for (int k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) acc += av[k] * xt[a.col[k]];
    return alpha * acc + beta * w.z[r];
  });
}

// per lane: x·0 summed is 0 exactly when every entry is finite
template <class T>
LaneMask<T> qp_lanes_nonfinite(int len, View<const Lanes<T>, LaneStride> v) {
  Lanes<T> acc(T(0));
  for (int i = 0; i < len; ++i) acc += v[i] * Lanes<T>(T(0));
  return !(acc == Lanes<T>(T(0)));
}

// P's input scan in one pass, two of each accumulator (their dependency
// chains, not the loads, bound a scan with one): per lane whether an entry
// is not finite (x·0 summed), max |P_ij| and max_{j<i} |P_ij − P_ji|
template <class T>
void qp_lanes_scan_P(int n, View<const Lanes<T>, LaneStride> Pv, LaneMask<T>& nonfinite,
                     Lanes<T>& absmax, Lanes<T>& asym) {
  using L = Lanes<T>;
  const L* __restrict__ P = Pv.p;
  const L zero(T(0));
  L f0 = zero, f1 = zero, m0 = zero, m1 = zero, s0 = zero, s1 = zero;
  for (int i = 0; i < n; ++i) {
    const L* __restrict__ row = P + i * n;
    int j = 0;
    for (; j + 2 <= n; j += 2) {
      const L v0 = row[j], v1 = row[j + 1];
      f0 += v0 * zero;
      f1 += v1 * zero;
      m0 = max_of(m0, abs_of(v0));
      m1 = max_of(m1, abs_of(v1));
    }
    if (j < n) {
      f0 += row[j] * zero;
      m0 = max_of(m0, abs_of(row[j]));
    }
    int k = 0;
    for (; k + 2 <= i; k += 2) {
      s0 = max_of(s0, abs_of(row[k] - P[k * n + i]));
      s1 = max_of(s1, abs_of(row[k + 1] - P[(k + 1) * n + i]));
    }
    if (k < i) s0 = max_of(s0, abs_of(row[k] - P[k * n + i]));
  }
  nonfinite = !((f0 + f1) == zero);
  absmax = max_of(m0, m1);
  asym = max_of(s0, s1);
}

// ---- the phases of qp_admm_solve_lanes -------------------------------------

// Set-up, part one: per lane, the first input fault in qp_check_input's order.
// A lane with one stops here (kInvalidInput, a zero answer) and leaves `active`.
template <class T>
IMPULSE_HD_PHASE void qp_lanes_check_input(const QpShape& sh, const QpData<Lanes<T>, LaneStride>& d,
                          QpWork<Lanes<T>, LaneStride>& w, const QpSettings<T>& st, int live,
                          LaneMask<T>& active, QpLaneOut<T>& out, bool kept = false) {
  using L = Lanes<T>;
  using Mask = LaneMask<T>;
  const int n = sh.n, m = sh.m();
  const L one(T(1));
  // kept (a re-solve on a kept factorization): P and A are the last solve's,
  // checked then; only q and b are new (and w.L holds the factor, not scratch)
  Mask bad_p = Mask::none();
  L scale = one, asym(T(0));
  if (!kept) qp_lanes_scan_P(n, d.P, bad_p, scale, asym);
  const Mask bad_q = qp_lanes_nonfinite(n, d.q);
  const Mask bad_a = kept ? Mask::none() : qp_lanes_nonfinite(sh.a.nnz, d.A);
  Mask bad_b = qp_lanes_nonfinite(m, d.b);
  if (bad_b.any()) {  // +inf is allowed on nonnegative rows (qp_b_usable)
    bad_b = Mask::none();
    const L lowest(-std::numeric_limits<T>::max());
    for (int r = 0; r < m; ++r) {
      const L v = d.b[r];
      const bool nonneg = r >= sh.cones.n_zero && r < sh.cones.soc_begin();
      bad_b |= nonneg ? !(v >= lowest) : !is_finite(v);  // NaN and -inf fail v >= lowest
    }
  }
  const L sym_tol = L(T(1e3)) * max_of(scale, one) * L(sizeof(T) == 4 ? T(1.2e-7) : T(2.3e-16));
  const Mask bad_sym = asym > sym_tol;
  L diag = one;
  for (int i = 0; i < n; ++i) diag = max_of(diag, abs_of(d.P[i * n + i]));
  const L shift = L(st.psd_tol) * diag;
  Mask bad_psd = Mask::none();
  if (st.check_psd && !kept) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j <= i; ++j) w.L[i * n + j] = d.P[i * n + j];
      w.L[i * n + i] += shift;
    }
    bad_psd = cholesky_lanes(n, w.L);
  }
  for (int l = 0; l < live; ++l) {
    InputFault f = InputFault::kNone;
    if (bad_p[l]) f = InputFault::kNonFiniteP;
    else if (bad_q[l]) f = InputFault::kNonFiniteQ;
    else if (bad_a[l]) f = InputFault::kNonFiniteA;
    else if (bad_b[l]) f = InputFault::kNonFiniteB;
    else if (bad_sym[l]) f = InputFault::kAsymmetricP;
    else if (bad_psd[l]) f = InputFault::kNotPsdP;
    if (f == InputFault::kNone) continue;
    out.info[l].status = SolveStatus::kInvalidInput;
    out.info[l].fault = f;
    for (int i = 0; i < n; ++i) out.x[l][i] = T(0);
    for (int r = 0; r < m; ++r) out.y[l][r] = T(0);
    active.set(l, false);
  }
}

// K = P + σI + AᵀρA for every lane, factored; the lanes whose factorization failed
template <class T>
IMPULSE_HD_PHASE LaneMask<T> qp_lanes_factor(const QpShape& sh, const QpColumns& at,
                            const QpData<Lanes<T>, LaneStride>& d, QpWork<Lanes<T>, LaneStride>& w) {
  qp_lanes_form_K(sh, at, d, w);
  return cholesky_lanes(sh.n, w.L);
}

// Set-up, part two: the initial iterate (z = Ax for a warm start, zero
// otherwise), equilibration and ρ (the caller factors). kept: the equilibration,
// the per-row ρ and the factorization are the last solve's (they stay).
template <class T>
IMPULSE_HD_PHASE void qp_lanes_start(const QpShape& sh, const QpData<Lanes<T>, LaneStride>& d,
                    QpWork<Lanes<T>, LaneStride>& w, View<Lanes<T>, LaneStride> x,
                    View<Lanes<T>, LaneStride> y, const QpSettings<T>& st, bool warm, Lanes<T> rho,
                    bool kept = false) {
  using L = Lanes<T>;
  const int n = sh.n, m = sh.m();
  const L zero(T(0));
  if (warm) {
    csr_matvec(sh.a, d.A, x.as_const(), w.z);
    for (int r = sh.cones.n_zero; r < sh.cones.soc_begin(); ++r)  // no bound: y_r = 0 (qp_setup)
      y[r] = select_of(is_finite(d.b[r]), y[r], zero);
  } else {
    for (int i = 0; i < n; ++i) x[i] = zero;
    for (int i = 0; i < m; ++i) y[i] = zero, w.z[i] = zero;
  }
  if (kept) return;
  qp_equilibrate(sh, d, w, st.scaling_iters, L(st.sigma));
  qp_set_rho(sh, w, rho, L(st.rho_eq_scale));
}

// The group's kept factorization (qp_admm_solve_lanes' `reuse`), in its cscale
// slice as qp_admm_solve keeps one (kQpKeptRho, kQpKeptValid, kQpKeptSettings),
// per lane; the form entry is kQpKeptFormLanes (the lanes' Cholesky factor, never
// one of qp_kept_form's 0-3). Usable when every live lane's is: the group is
// factored as one.
constexpr int kQpKeptFormLanes = 4;
template <class T>
IMPULSE_HD_PHASE bool qp_lanes_factor_kept(const QpWork<Lanes<T>, LaneStride>& w, const QpSettings<T>& st,
                                           int live) {
  for (int l = 0; l < live; ++l)
    if (!(w.cscale[kQpKeptValid][l] == T(1) && w.cscale[kQpKeptSettings][l] == st.sigma &&
          w.cscale[kQpKeptSettings + 1][l] == st.rho_eq_scale &&
          w.cscale[kQpKeptSettings + 2][l] == T(st.scaling_iters) && w.cscale[kQpKeptSettings + 3][l] == T(kQpKeptFormLanes)))
      return false;
  return true;
}
// after a factorization: each lane's ρ, and `valid` where it succeeded
template <class T>
IMPULSE_HD_PHASE void qp_lanes_keep_factor(QpWork<Lanes<T>, LaneStride>& w, LaneMask<T> valid, Lanes<T> rho,
                                           const QpSettings<T>& st) {
  using L = Lanes<T>;
  w.cscale[kQpKeptRho] = rho;
  w.cscale[kQpKeptValid] = select_of(valid, L(T(1)), L(T(0)));
  w.cscale[kQpKeptSettings] = L(st.sigma);
  w.cscale[kQpKeptSettings + 1] = L(st.rho_eq_scale);
  w.cscale[kQpKeptSettings + 2] = L(T(st.scaling_iters));
  w.cscale[kQpKeptSettings + 3] = L(T(kQpKeptFormLanes));
}

// The check, per lane: the residuals and their tolerances into c (as
// qp_check_residuals). Returns the lanes whose residuals or iterate are not
// finite (a NaN term can vanish from a maximum).
template <class T>
IMPULSE_HD_PHASE LaneMask<T> qp_lanes_check_residuals(const QpShape& sh, const QpColumns& at,
                                     const QpData<Lanes<T>, LaneStride>& d,
                                     QpWork<Lanes<T>, LaneStride>& w,
                                     View<Lanes<T>, LaneStride> x, View<Lanes<T>, LaneStride> y,
                                     const QpSettings<T>& st, QpCheck<Lanes<T>>& c) {
  using L = Lanes<T>;
  const int n = sh.n, m = sh.m();
  const L zero(T(0));
  csr_matvec(sh.a, d.A, x.as_const(), w.tmp_m);
  L prim_res = zero, ax_norm = zero, z_norm = zero, sp_res = zero, sax_norm = zero, sz_norm = zero;
  for (int i = 0; i < m; ++i) {
    const L e = w.escale[i];
    const L r = abs_of(w.tmp_m[i] - w.z[i]), ax = abs_of(w.tmp_m[i]), zz = abs_of(w.z[i]);
    prim_res = max_of(prim_res, r);
    ax_norm = max_of(ax_norm, ax);
    z_norm = max_of(z_norm, zz);
    sp_res = max_of(sp_res, e * r);
    sax_norm = max_of(sax_norm, e * ax);
    sz_norm = max_of(sz_norm, e * zz);
  }
  dense_symv(n, d.P, x.as_const(), w.tmp_n);
  qp_lanes_Aty(at, n, d.A, y.p, static_cast<const L*>(nullptr), w.xt.p);
  L dual_res = zero, px_norm = zero, aty_norm = zero, q_norm = zero;
  L sd_res = zero, spx_norm = zero, saty_norm = zero, sq_norm = zero;
  for (int i = 0; i < n; ++i) {
    const L dd = w.dscale[i];
    const L r = abs_of(w.tmp_n[i] + d.q[i] + w.xt[i]), px = abs_of(w.tmp_n[i]),
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
  c.eps_prim = L(st.eps_abs) + L(st.eps_rel) * max_of(ax_norm, z_norm);
  c.eps_dual = L(st.eps_abs) + L(st.eps_rel) * max_of(max_of(px_norm, aty_norm), q_norm);
  if (st.check_gap) qp_gap(sh, d, w, x.as_const(), y.as_const(), st, c);
  const LaneMask<T> bad_res = !(is_finite(prim_res) & is_finite(dual_res));
  return bad_res | qp_lanes_nonfinite(n, x.as_const()) | qp_lanes_nonfinite(m, y.as_const());
}

// When to check next, per lane as in qp_schedule_next; the group checks when
// its slowest running lane asks (it runs until its last lane stops, so
// checking sooner for a faster lane would save nothing).
template <class T>
struct QpLaneSchedule {
  int next_check = 0;
  int last_check[Lanes<T>::W] = {};
  T last_ratio[Lanes<T>::W] = {};
  T remaining[Lanes<T>::W] = {};
  QpStagnation<T> stagnation[Lanes<T>::W];  // the stall rule, per lane
  bool stalled[Lanes<T>::W] = {};            // as of the last check
  T sooner[Lanes<T>::W] = {};  // stalled for QpSettings::ipm_switch: the extrapolated iterations (else 0)
};

template <class T>
IMPULSE_HD_PHASE void qp_lanes_schedule_next(const QpSettings<T>& st, int it, const QpCheck<Lanes<T>>& c,
                            LaneMask<T> active, QpLaneSchedule<T>& sc) {
  using L = Lanes<T>;
  const L tiny(T(1e-30));
  const L ratio = max_of(max_of(c.prim_res / (c.eps_prim + tiny), c.dual_res / (c.eps_dual + tiny)),
                         c.gap / (c.eps_gap + tiny));
  int next = it + 1;
  for (int l = 0; l < L::W; ++l) {
    if (!active[l]) continue;
    const T r = ratio[l];
    int gap = st.check_every;
    sc.remaining[l] = T(st.max_iter);
    if (sc.last_check[l] > 0 && r < sc.last_ratio[l] && r > T(1)) {
      sc.remaining[l] = T(it - sc.last_check[l]) * log_of(r) / log_of(sc.last_ratio[l] / r);
      if (st.predict_checks)
        gap = sc.remaining[l] < T(2 * st.check_every) ? int(sc.remaining[l]) + 1 : 2 * st.check_every;
    }
    sc.last_check[l] = it;
    sc.last_ratio[l] = r;
    // a stall, or (QpSettings::ipm_switch) the interior point would finish sooner
    sc.stalled[l] = sc.stagnation[l].stalled(r, it, st.max_iter);
    sc.sooner[l] = T(0);
    if (!sc.stalled[l] && st.fallback && qp_ipm_sooner(st, it, sc.remaining[l]))
      sc.stalled[l] = true, sc.sooner[l] = sc.remaining[l];
    next = next > it + gap ? next : it + gap;
  }
  sc.next_check = next;
}

// Primal infeasibility certificates among the `active` lanes: δy ∈ K*, Aᵀδy ≈ 0, bᵀδy < 0
template <class T>
IMPULSE_HD_PHASE LaneMask<T> qp_lanes_primal_infeasible(const QpShape& sh, const QpColumns& at,
                                       const QpData<Lanes<T>, LaneStride>& d,
                                       QpWork<Lanes<T>, LaneStride>& w,
                                       View<Lanes<T>, LaneStride> y, const QpSettings<T>& st,
                                       LaneMask<T> active) {
  using L = Lanes<T>;
  const int n = sh.n, m = sh.m();
  const L zero(T(0));
  L dy_norm = zero, bdy = zero;
  for (int i = 0; i < m; ++i) {
    const L dy = y[i] - w.y_prev[i];
    w.tmp_m[i] = dy;
    dy_norm = max_of(dy_norm, abs_of(dy));
    bdy += qp_by(d.b[i], dy);
  }
  const L tol = L(st.eps_pinf) * dy_norm;
  LaneMask<T> cand = active & (dy_norm > zero) & (bdy < -tol);
  if (!cand.any()) return cand;
  for (int i = sh.cones.n_zero; i < sh.cones.soc_begin(); ++i) cand &= !(w.tmp_m[i] < -tol);
  for (int k = 0; k < sh.cones.n_soc; ++k) {
    const int r = sh.cones.soc_begin() + 3 * k;
    cand &= !(soc3_violation(w.tmp_m[r], w.tmp_m[r + 1], w.tmp_m[r + 2]) > tol);
  }
  if (!cand.any()) return cand;
  qp_lanes_Aty(at, n, d.A, w.tmp_m.p, static_cast<const L*>(nullptr), w.tmp_n.p);
  return cand & (norm_inf(n, w.tmp_n.as_const()) <= tol);
}

// Dual infeasibility certificates among the `active` lanes: Pδx ≈ 0, qᵀδx < 0, Aδx ∈ −K
template <class T>
IMPULSE_HD_PHASE LaneMask<T> qp_lanes_dual_infeasible(const QpShape& sh, const QpData<Lanes<T>, LaneStride>& d,
                                     QpWork<Lanes<T>, LaneStride>& w,
                                     View<Lanes<T>, LaneStride> x, const QpSettings<T>& st,
                                     LaneMask<T> active) {
  using L = Lanes<T>;
  const int n = sh.n;
  const L zero(T(0));
  L dx_norm = zero, qdx = zero;
  for (int i = 0; i < n; ++i) {
    const L dx = x[i] - w.x_prev[i];
    w.xt[i] = dx;
    dx_norm = max_of(dx_norm, abs_of(dx));
    qdx += d.q[i] * dx;
  }
  const L tol = L(st.eps_dinf) * dx_norm;
  LaneMask<T> cand = active & (dx_norm > zero) & (qdx < -tol);
  if (!cand.any()) return cand;
  csr_matvec(sh.a, d.A, w.xt.as_const(), w.tmp_m);
  for (int i = 0; i < sh.cones.n_zero; ++i) cand &= !(abs_of(w.tmp_m[i]) > tol);
  for (int i = sh.cones.n_zero; i < sh.cones.soc_begin(); ++i)  // (b_i = +inf: no bound)
    cand &= !((w.tmp_m[i] > tol) & is_finite(d.b[i]));
  for (int k = 0; k < sh.cones.n_soc; ++k) {
    const int r = sh.cones.soc_begin() + 3 * k;
    cand &= !(soc3_violation(-w.tmp_m[r], -w.tmp_m[r + 1], -w.tmp_m[r + 2]) > tol);
  }
  if (!cand.any()) return cand;
  dense_symv(n, d.P, w.xt.as_const(), w.tmp_n);
  return cand & (norm_inf(n, w.tmp_n.as_const()) <= tol);
}

// Adaptive ρ, per lane (as qp_adapt_rho): updates rho and the schedule and
// counts the update for the lanes whose ρ changes, and returns them; the
// caller refactors the group once.
template <class T>
IMPULSE_HD_PHASE LaneMask<T> qp_lanes_adapt_rho(const QpSettings<T>& st, int it, const QpCheck<Lanes<T>>& c,
                               LaneMask<T> active, QpLaneSchedule<T>& sc, Lanes<T>& rho,
                               QpLaneOut<T>& out) {
  using L = Lanes<T>;
  LaneMask<T> upd = LaneMask<T>::none();
  if (!(st.adaptive_rho && it % st.adaptive_rho_interval == 0)) return upd;
  const L tiny(T(1e-30));
  const L pn = c.sp_res / (max_of(c.sax_norm, c.sz_norm) + tiny);
  const L dn = c.sd_res / (max_of(max_of(c.spx_norm, c.saty_norm), c.sq_norm) + tiny);
  L rho_new = rho * sqrt_of(pn / (dn + tiny));
  rho_new = min_of(max_of(rho_new, L(st.rho_min)), L(st.rho_max));
  const L tol(st.adaptive_rho_tolerance);
  upd = active & ((rho_new > rho * tol) | (rho_new * tol < rho));
  for (int l = 0; l < L::W; ++l)
    if (upd[l] && !(out.info[l].rho_updates < st.max_rho_updates &&
                    sc.remaining[l] > T(st.adaptive_rho_interval)))
      upd.set(l, false);
  if (!upd.any()) return upd;
  rho = select_of(upd, rho_new, rho);
  for (int l = 0; l < L::W; ++l)
    if (upd[l]) sc.last_check[l] = 0, ++out.info[l].rho_updates;
  return upd;
}

}  // namespace detail

// Solves the problems in lanes [0, live) of the group (the other lanes are
// ignored). x and y hold the warm start when `warm` (zeroed otherwise) and
// are the running iterates; each lane's answer, whatever its status, goes to
// out.x[l] / out.y[l] and out.info[l]. The workspace is carved by
// QpWork<Lanes<T>, LaneStride>::carve(base, n, m) (qp_work_size(n, m) lanes),
// or carve(base, n, m, false, true) with qp_anderson_size(n, m,
// kQpAndersonMax) lanes more for Anderson acceleration (QpSettings::anderson;
// each lane's history is its own, cleared when its ρ changes).
//
// Hand-off (handoff > 0): when at most `handoff` lanes are still running
// and one of them is predicted to need more than kQpLaneHandoffIterations
// more iterations (or has no prediction yet), those lanes stop with status
// kNotRun, their iterate, iteration count, ρ and stall record in out, and
// the caller finishes them one at a time (qp_admm_solve, warm-started from
// that iterate with that ρ, resuming the stall rule and acceleration's
// budget where the lane left them: QpResume): on problems whose iteration counts have a long tail
// (the recorded ContactNets QPs at tight tolerances) a group otherwise runs
// at the cost of W lanes for one slow problem.
constexpr int kQpLaneHandoffIterations = 30;
// Anderson acceleration steps every iteration and stops at max_iter/8, as in
// qp_admm_solve, so that a lane follows the one-problem iteration. (Every second iteration, with
// its map two ADMM steps, did about half the acceleration work per lane for
// 10-15% more iterations on the recorded ContactNets QPs at eps 1e-6; on
// DUAL3 of Maros-Meszaros it drove ρ back and forth through its ten updates
// and never converged, 512 iterations and the interior point where one at a
// time takes 70.)
// Also, whatever the number still running, a lane that stagnates
// (detail::QpStagnation, the one-problem solver's stall rule) stops with
// kNotRun and out.stalled set: the group's iteration is not the one-problem
// solver's (Cholesky and its rounding, the group's check schedule), and the
// caller finishes it as one-problem solves are after a stall (QpSettings::fallback), or
// continues it alone. (A rule from iteration 200 handed over lanes that were
// converging: QPCBLEND in a group of copies took 2,050 iterations, not 770.)

template <class T>
void qp_admm_solve_lanes(const QpShape& sh, const QpColumns& at,
                         const QpData<Lanes<T>, LaneStride>& d, int live,
                         View<Lanes<T>, LaneStride> x, View<Lanes<T>, LaneStride> y,
                         QpWork<Lanes<T>, LaneStride> w, const QpSettings<T>& st, bool warm,
                         QpLaneOut<T>& out, int handoff = 0, const T* rho0 = nullptr,
                         bool reuse = false) {
  using L = Lanes<T>;
  using Mask = LaneMask<T>;
  constexpr int W = L::W;
  const int n = sh.n, m = sh.m();
  Mask active = Mask::first(live);
  for (int l = 0; l < W; ++l) out.info[l] = QpInfo<T>{}, out.stalled[l] = false;

  // set-up; reuse: on the factorization the group's last solve left in w
  // (qp_admm_solve's `reuse`: P and A are that solve's, the caller promises)
  const bool kept = reuse && detail::qp_lanes_factor_kept(w, st, live);
  if (!kept) w.cscale[kQpKeptValid] = L(T(0));  // none until this set-up factors
  if (st.check_input) detail::qp_lanes_check_input(sh, d, w, st, live, active, out, kept);
  if (!active.any()) return;
  // each lane's first ρ: the kept factorization's, rho0's (a warm start's,
  // BatchOptions::warm_rho) or the settings'
  L rho(st.rho);
  if (kept)
    rho = w.cscale[kQpKeptRho];
  else if (rho0)
    for (int l = 0; l < W; ++l) rho.v[l] = rho0[l];
  detail::qp_lanes_start(sh, d, w, x, y, st, warm, rho, kept);
  detail::QpCheck<L> c;
  int it = 0;
  auto stop = [&](Mask which, SolveStatus status, bool px) {
    for (int l = 0; l < W; ++l)
      if (which[l])
        detail::qp_lane_stop(sh, d, w, x, y, l, status, it, px, c, rho, out);
    active &= !which;
  };
  // (every factorization is recorded for a re-solve: each lane's ρ, and which
  // lanes factored; a lane whose input was refused has none)
  Mask factored = kept ? Mask::first(live) : active;
  if (!kept) {
    const Mask failed = detail::qp_lanes_factor(sh, at, d, w);
    factored &= !failed;
    detail::qp_lanes_keep_factor(w, factored, rho, st);
    stop(active & failed, SolveStatus::kNumericalError, false);
  }

  // iterate, checking at the scheduled iterations; Anderson acceleration
  // (QpSettings::anderson) per lane when the workspace holds its history,
  // for the first max_iter/8 iterations, as in qp_admm_solve
  const L alpha(st.alpha);
  detail::QpLaneSchedule<T> sc;
  sc.next_check = warm ? 1 : st.check_every;
  const bool accel = w.has_aa && st.anderson > 0 && sh.cones.n_soc == 0;
  const int aa_end = st.max_iter / 8;
  QpAnderson<L, LaneStride> aa;
  if (accel) {
    aa = QpAnderson<L, LaneStride>::carve(w.aa, n, m, st.anderson);
    aa.start(x, w.z, y);
  }
  // lanes handed to the caller (kNotRun) take their stall rule's record with
  // them (QpResume); `stalled`: at a stall, as qp_admm_solve's QpInfo records it
  auto hand_over = [&](Mask which, bool stalled) {
    for (int l = 0; l < W; ++l) {
      if (!which[l]) continue;
      out.stagnation[l] = sc.stagnation[l];
      out.stalled[l] = stalled;
      if (stalled) {
        out.info[l].stall_iteration = it;
        out.info[l].stall_best_iteration = sc.stagnation[l].best_it;
        out.info[l].stall_best_ratio = sc.stagnation[l].best_ratio;
        out.info[l].switch_remaining = sc.sooner[l];
      }
    }
    stop(which, SolveStatus::kNotRun, false);
  };
  // acceleration's budget spent at iteration it: the lanes still running count
  // as stalled (as in qp_admm_solve, at the same iteration) and go to the caller
  const bool aa_budget = accel && handoff > 0 && st.fallback;
  for (it = 1; it <= st.max_iter && active.any(); ++it) {
    const bool check = it == sc.next_check || it == st.max_iter ||
                       (st.adaptive_rho && it % st.adaptive_rho_interval == 0);
    if (check) {
      for (int i = 0; i < n; ++i) w.x_prev[i] = x[i];
      for (int i = 0; i < m; ++i) w.y_prev[i] = y[i];
    }
    detail::qp_lanes_step(sh, at, d, w, x, y, alpha);
    if (!check) {
      if (aa_budget && it == aa_end) {
        for (int l = 0; l < W; ++l) sc.sooner[l] = T(0);  // (acceleration's budget: a stall)
        hand_over(active, true);
        return;
      }
      // the next step starts from the accelerated point (the checks see the
      // steps' own outputs)
      if (accel && it < aa_end) aa.step(x, w.z, y);
      continue;
    }

    stop(active & detail::qp_lanes_check_residuals(sh, at, d, w, x, y, st, c),
         SolveStatus::kNumericalError, false);
    stop(active & (c.prim_res <= c.eps_prim) & (c.dual_res <= c.eps_dual) & (c.gap <= c.eps_gap),
         SolveStatus::kSolved, true);
    if (!active.any()) break;
    detail::qp_lanes_schedule_next(st, it, c, active, sc);
    stop(detail::qp_lanes_primal_infeasible(sh, at, d, w, y, st, active),
         SolveStatus::kPrimalInfeasible, false);
    stop(detail::qp_lanes_dual_infeasible(sh, d, w, x, st, active), SolveStatus::kDualInfeasible,
         false);
    if (!active.any()) break;

    // hand the last few running lanes over when one of them is still far
    // from its tolerance: a group runs at the cost of all its lanes
    if (handoff > 0 && it < st.max_iter) {
      int running = 0;
      bool far = false;
      for (int l = 0; l < W; ++l)
        if (active[l]) ++running, far = far || sc.remaining[l] > T(kQpLaneHandoffIterations);
      if (running <= handoff && far) {
        hand_over(active, false);
        return;
      }
      // a lane that stagnates goes too, in time to finish alone
      Mask stalled = Mask::none();
      for (int l = 0; l < W; ++l)
        if (active[l] && sc.stalled[l]) stalled.set(l, true);
      if (stalled.any()) {
        hand_over(stalled, true);
        if (!active.any()) return;
      }
    }

    // adaptive ρ, per lane; one refactorization for the group
    const Mask changed = detail::qp_lanes_adapt_rho(st, it, c, active, sc, rho, out);
    if (changed.any()) {
      detail::qp_set_rho(sh, w, rho, L(st.rho_eq_scale));
      const Mask failed = detail::qp_lanes_factor(sh, at, d, w);
      factored &= !failed;
      detail::qp_lanes_keep_factor(w, factored, rho, st);
      stop(active & failed, SolveStatus::kNumericalError, false);
    }
    if (aa_budget && it == aa_end) {
      for (int l = 0; l < W; ++l) sc.sooner[l] = T(0);  // (acceleration's budget: a stall)
      hand_over(active, true);
      return;
    }
    if (changed.any() && accel) aa.reset(select_of(changed, L(T(1)), L(T(0))));  // a new ρ changes the map
    if (accel && it < aa_end) aa.step(x, w.z, y);
  }

  // finish: lanes the budget stopped
  if (!active.any()) return;
  if (it > st.max_iter) it = st.max_iter;
  const Mask close = (c.prim_res <= L(T(10)) * c.eps_prim) & (c.dual_res <= L(T(10)) * c.eps_dual) &
                     (c.gap <= L(T(10)) * c.eps_gap);
  stop(active & close, SolveStatus::kSolvedInaccurate, false);
  stop(active, SolveStatus::kMaxIterations, false);
}

IMPULSE_NAMESPACE_END  // namespace impulse
