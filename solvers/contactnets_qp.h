// The ContactNets Polytope loss QP of one transition and its envelope gradient,
// as host-device code: the device assembles and differentiates the loss from
// transitions kept resident there (kernels/contactnets_kernels.cu), and the
// tests check these functions against the host implementation
// (host/contactnets_loss.h, host/contactnets_model.h), which defines the math.
//
// Fixed shape: 8 contacts, 32 variables [λ_n (8); λ_t (16); s (8)]; rows: 8
// penetration rows, then the exact cones (8 × 3 rows) or the octagon (8 rows
// λ_n ≥ 0 and 64 rows d_jᵀλ_t,i ≤ λ_n,i), with A in the CSR pattern of
// make_loss_batch. Parameters θ (57, SI): normal z (3), tangent T (2 x 3
// row-major), normal vertices a (8 x 3), tangent vertices b (8 x 3).
// States: 13 numbers [p; quaternion w,x,y,z; v world; ω body], SI. The body's
// inertia is diagonal (principal axes), as in the data sets.
#pragma once

#include "solvers/config.h"
#include "solvers/view.h"

namespace impulse {
namespace cn {

constexpr int kK = 8;        // contacts
constexpr int kN = 4 * kK;   // QP variables
constexpr int kTheta = 57;   // polytope parameters
constexpr int kOctagon = 8;  // sides of the reference implementation's friction polygon

template <class T>
struct LossConsts {
  T w_match, w_comp_n, w_comp_t, w_cone, w_slack, w_perp, w_unit;
  T dt, L;                 // time step, length unit of the loss
  T mass, inertia[3], gravity;
  int octagon;             // 0: exact cones, 1: octagon
};

IMPULSE_HD int rows(int octagon) { return octagon ? kK + kK + kOctagon * kK : kK + 3 * kK; }
IMPULSE_HD int nnz(int octagon) {
  return kK * (3 * kK + 1) + (octagon ? kK + 3 * kOctagon * kK : 3 * kK);
}

template <class T>
IMPULSE_HD void rotation(const T* x, T R[9]) {
  T w = x[3], a = x[4], b = x[5], c = x[6];
  const T nrm = sqrt_of(w * w + a * a + b * b + c * c);
  w /= nrm, a /= nrm, b /= nrm, c /= nrm;
  R[0] = 1 - 2 * (b * b + c * c), R[1] = 2 * (a * b - w * c), R[2] = 2 * (a * c + w * b);
  R[3] = 2 * (a * b + w * c), R[4] = 1 - 2 * (a * a + c * c), R[5] = 2 * (b * c - w * a);
  R[6] = 2 * (a * c - w * b), R[7] = 2 * (b * c + w * a), R[8] = 1 - 2 * (a * a + b * b);
}

template <class T>
IMPULSE_HD void cross(const T* a, const T* b, T* out) {
  out[0] = a[1] * b[2] - a[2] * b[1];
  out[1] = a[2] * b[0] - a[0] * b[2];
  out[2] = a[0] * b[1] - a[1] * b[0];
}

// Rᵀ v
template <class T>
IMPULSE_HD void rt_mul(const T R[9], const T* v, T* out) {
  for (int c = 0; c < 3; ++c) out[c] = R[c] * v[0] + R[3 + c] * v[1] + R[6 + c] * v[2];
}
// R v
template <class T>
IMPULSE_HD void r_mul(const T R[9], const T* v, T* out) {
  for (int r = 0; r < 3; ++r) out[r] = R[3 * r] * v[0] + R[3 * r + 1] * v[1] + R[3 * r + 2] * v[2];
}

// φ_n (8), J_n (8 x 6), J_t (16 x 6) at the configuration of x (SI).
template <class T>
IMPULSE_HD void frame(const T* th, const T* x, T phi[kK], T Jn[kK][6], T Jt[2 * kK][6]) {
  T R[9];
  rotation(x, R);
  const T* z = th;
  const T* Tm = th + 3;
  T uz[3], ut[2][3];
  rt_mul(R, z, uz);
  rt_mul(R, Tm, ut[0]);
  rt_mul(R, Tm + 3, ut[1]);
  for (int i = 0; i < kK; ++i) {
    const T* a = th + 9 + 3 * i;
    const T* b = th + 33 + 3 * i;
    T Ra[3];
    r_mul(R, a, Ra);
    phi[i] = z[0] * (x[0] + Ra[0]) + z[1] * (x[1] + Ra[1]) + z[2] * (x[2] + Ra[2]);
    T c[3];
    cross(a, uz, c);
    for (int e = 0; e < 3; ++e) Jn[i][e] = z[e], Jn[i][3 + e] = c[e];
    for (int r = 0; r < 2; ++r) {
      cross(b, ut[r], c);
      for (int e = 0; e < 3; ++e) Jt[2 * i + r][e] = Tm[3 * r + e], Jt[2 * i + r][3 + e] = c[e];
    }
  }
}

// What assembly and gradient share: the frame in the loss's scaled units.
template <class T>
struct Scaled {
  T phi[kK], phin[kK];
  T Jn[kK][6], Jt[2 * kK][6];
  T nu[6], nun[6], nuf[6], dv[6], Mi[6];
};

template <class T>
IMPULSE_HD void scaled(const LossConsts<T>& c, const T* th, const T* x, const T* xn, Scaled<T>& s) {
  frame(th, x, s.phi, s.Jn, s.Jt);
  T Jn2[kK][6], Jt2[2 * kK][6];
  frame(th, xn, s.phin, Jn2, Jt2);
  const T L = c.L;
  for (int i = 0; i < kK; ++i) {
    s.phi[i] /= L, s.phin[i] /= L;
    for (int e = 3; e < 6; ++e) s.Jn[i][e] /= L;
  }
  for (int r = 0; r < 2 * kK; ++r)
    for (int e = 3; e < 6; ++e) s.Jt[r][e] /= L;
  for (int e = 0; e < 3; ++e) {
    s.nu[e] = x[7 + e] / L, s.nu[3 + e] = x[10 + e];
    s.nun[e] = xn[7 + e] / L, s.nun[3 + e] = xn[10 + e];
    s.Mi[e] = T(1) / c.mass;
    s.Mi[3 + e] = L * L / c.inertia[e];
  }
  // smooth impulse: gravity, and −ω × Iω (scaled: linear / L, angular / L²)
  const T* w = x + 10;
  const T Iw[3] = {c.inertia[0] * w[0], c.inertia[1] * w[1], c.inertia[2] * w[2]};
  T gyro[3];
  cross(w, Iw, gyro);
  T Fs[6] = {T(0), T(0), -c.gravity * c.mass * c.dt / L,
             -gyro[0] * c.dt / (L * L), -gyro[1] * c.dt / (L * L), -gyro[2] * c.dt / (L * L)};
  for (int e = 0; e < 6; ++e) {
    s.nuf[e] = s.nu[e] + s.Mi[e] * Fs[e];
    s.dv[e] = s.nun[e] - s.nuf[e];
  }
}

// column j of B = [J_nᵀ, J_tᵀ] (6), j < 3k
template <class T>
IMPULSE_HD const T* bcol(const Scaled<T>& s, int j) {
  return j < kK ? s.Jn[j] : s.Jt[j - kK];
}

// Writes P (32 x 32 row-major), q (32), A (values in the pattern), b; returns
// the constant term (loss = ½λᵀPλ + qᵀλ + constant at the optimum).
template <class T, class S>
IMPULSE_HD T assemble(const LossConsts<T>& c, const T* th, const T* x, const T* xn, View<T, S> P,
                      View<T, S> q, View<T, S> A, View<T, S> b) {
  Scaled<T> s;
  scaled(c, th, x, xn, s);
  const int k = kK, n = kN;
  for (int i = 0; i < n * n; ++i) P[i] = T(0);
  for (int i = 0; i < n; ++i) q[i] = T(0);
  T constant = T(0);
  for (int e = 0; e < 6; ++e) constant += s.dv[e] * s.dv[e];
  constant *= c.w_match;
  // prediction: 2 w MiBᵀMiB and −2 w MiBᵀ dv
  for (int i = 0; i < 3 * k; ++i) {
    const T* bi = bcol(s, i);
    T qi = T(0);
    for (int e = 0; e < 6; ++e) qi += s.Mi[e] * bi[e] * s.dv[e];
    q[i] = T(-2) * c.w_match * qi;
    for (int j = 0; j <= i; ++j) {
      const T* bj = bcol(s, j);
      T acc = T(0);
      for (int e = 0; e < 6; ++e) acc += s.Mi[e] * s.Mi[e] * bi[e] * bj[e];
      P[i * n + j] = T(2) * c.w_match * acc;
      P[j * n + i] = T(2) * c.w_match * acc;
    }
  }
  for (int i = 0; i < k; ++i) {
    const T p2 = s.phin[i] * s.phin[i];
    P[i * n + i] += T(2) * c.w_comp_n * p2;
    for (int r = 0; r < 2; ++r) P[(k + 2 * i + r) * n + k + 2 * i + r] += T(2) * c.w_comp_t * p2;
    T cv[2];
    for (int r = 0; r < 2; ++r) {
      cv[r] = T(0);
      for (int e = 0; e < 6; ++e) cv[r] += s.Jt[2 * i + r][e] * s.nun[e];
    }
    const T cn2 = cv[0] * cv[0] + cv[1] * cv[1], cn = sqrt_of(cn2);
    P[i * n + i] += T(2) * c.w_cone * cn2;
    for (int r = 0; r < 2; ++r) {
      const int t = k + 2 * i + r;
      P[i * n + t] += T(2) * c.w_cone * cv[r] * cn;
      P[t * n + i] += T(2) * c.w_cone * cv[r] * cn;
      P[t * n + t] += T(2) * c.w_cone * cn2;
    }
    P[(3 * k + i) * n + 3 * k + i] += T(2) * c.w_slack;
  }
  // penetration rows (pattern: columns 0 .. 3k−1, then 3k + i)
  int p = 0;
  for (int i = 0; i < k; ++i) {
    for (int j = 0; j < 3 * k; ++j) {
      const T* bj = bcol(s, j);
      T acc = T(0);
      for (int e = 0; e < 6; ++e) acc += s.Jn[i][e] * s.Mi[e] * bj[e];
      A[p++] = -c.dt * acc;
    }
    A[p++] = T(-1);
    T jf = T(0);
    for (int e = 0; e < 6; ++e) jf += s.Jn[i][e] * s.nuf[e];
    b[i] = s.phi[i] + c.dt * jf;
  }
  const int m = rows(c.octagon);
  for (int r = k; r < m; ++r) b[r] = T(0);
  if (!c.octagon) {
    for (int r = 0; r < 3 * k; ++r) A[p++] = T(-1);
  } else {
    for (int i = 0; i < k; ++i) A[p++] = T(-1);
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < kOctagon; ++j) {
        const T ang = T(2) * T(3.14159265358979323846) * T(j) / T(kOctagon);
        A[p++] = T(-1);
        A[p++] = cos(ang);
        A[p++] = sin(ang);
      }
  }
  return constant;
}

// grad (57, SI) += dL/dθ of one transition: the QP part by the envelope theorem
// at (λ, y) (the penetration rows' duals are y[0..7]) plus the two regularizers;
// returns the regularizers' value.
template <class T, class S>
IMPULSE_HD T gradient(const LossConsts<T>& c, const T* th, const T* x, const T* xn,
                      View<const T, S> lam, View<const T, S> y, T* grad) {
  Scaled<T> s;
  scaled(c, th, x, xn, s);
  const int k = kK;
  const T L = c.L, dt = c.dt;
  // Jλ and the frame gradient (scaled)
  T Jl[6];
  for (int e = 0; e < 6; ++e) {
    T acc = T(0);
    for (int j = 0; j < 3 * k; ++j) acc += bcol(s, j)[e] * lam[j];
    Jl[e] = acc;
  }
  T gJ[6], pen_dir[6];
  for (int e = 0; e < 6; ++e) {
    T jny = T(0);
    for (int i = 0; i < k; ++i) jny += s.Jn[i][e] * y[i];
    const T MiJl = s.Mi[e] * Jl[e];
    gJ[e] = T(2) * c.w_match * s.Mi[e] * (MiJl - s.dv[e]) - dt * s.Mi[e] * jny;
    pen_dir[e] = MiJl + s.nuf[e];
  }
  T gJn[kK][6], gJt[2 * kK][6], gphi[kK], gphin[kK];
  for (int i = 0; i < k; ++i) {
    for (int e = 0; e < 6; ++e) gJn[i][e] = lam[i] * gJ[e] - dt * y[i] * pen_dir[e];
    gphi[i] = -y[i];
    const T l0 = lam[k + 2 * i], l1 = lam[k + 2 * i + 1];
    gphin[i] = T(2) * s.phin[i] * (c.w_comp_n * lam[i] * lam[i] + c.w_comp_t * (l0 * l0 + l1 * l1));
    T cv[2];
    for (int r = 0; r < 2; ++r) {
      cv[r] = T(0);
      for (int e = 0; e < 6; ++e) cv[r] += s.Jt[2 * i + r][e] * s.nun[e];
    }
    const T cn = sqrt_of(cv[0] * cv[0] + cv[1] * cv[1]);
    const T u[2] = {lam[i] * cv[0] + cn * l0, lam[i] * cv[1] + cn * l1};
    T dc[2] = {T(2) * c.w_cone * lam[i] * u[0], T(2) * c.w_cone * lam[i] * u[1]};
    if (cn > T(0)) {
      const T lu = l0 * u[0] + l1 * u[1];
      dc[0] += T(2) * c.w_cone * lu * cv[0] / cn;
      dc[1] += T(2) * c.w_cone * lu * cv[1] / cn;
    }
    for (int r = 0; r < 2; ++r)
      for (int e = 0; e < 6; ++e) gJt[2 * i + r][e] = lam[k + 2 * i + r] * gJ[e] + dc[r] * s.nun[e];
  }
  // to SI
  for (int i = 0; i < k; ++i) {
    gphi[i] /= L, gphin[i] /= L;
    for (int e = 3; e < 6; ++e) gJn[i][e] /= L;
  }
  for (int r = 0; r < 2 * k; ++r)
    for (int e = 3; e < 6; ++e) gJt[r][e] /= L;
  // regularizers on the SI frame (position columns)
  T phi0[kK], Jn0[kK][6], Jt0[2 * kK][6];
  frame(th, x, phi0, Jn0, Jt0);
  T reg = T(0);
  for (int i = 0; i < k; ++i) {
    const T* nv = Jn0[i];
    const T nn = sqrt_of(nv[0] * nv[0] + nv[1] * nv[1] + nv[2] * nv[2]);
    if (c.w_unit != T(0)) {
      reg += c.w_unit * (nn - T(1)) * (nn - T(1));
      if (nn > T(0))
        for (int e = 0; e < 3; ++e) gJn[i][e] += T(2) * c.w_unit * (nn - T(1)) / nn * nv[e];
    }
    if (c.w_perp != T(0) && nn > T(0)) {
      for (int r = 0; r < 2; ++r) {
        const T* tv = Jt0[2 * i + r];
        const T tn = sqrt_of(tv[0] * tv[0] + tv[1] * tv[1] + tv[2] * tv[2]);
        if (tn == T(0)) continue;
        T cc = T(0);
        for (int e = 0; e < 3; ++e) cc += nv[e] / nn * tv[e] / tn;
        reg += c.w_perp * cc * cc;
        for (int e = 0; e < 3; ++e) {
          gJn[i][e] += T(2) * c.w_perp * cc / nn * (tv[e] / tn - cc * nv[e] / nn);
          gJt[2 * i + r][e] += T(2) * c.w_perp * cc / tn * (nv[e] / nn - cc * tv[e] / tn);
        }
      }
    }
  }
  // chain into θ (host/contactnets_model.cc, PolytopeContactModel::backprop)
  T R[9], Rn[9];
  rotation(x, R);
  rotation(xn, Rn);
  const T* z = th;
  const T* Tm = th + 3;
  T u0[3], un[3], ut[2][3];
  rt_mul(R, z, u0);
  rt_mul(Rn, z, un);
  rt_mul(R, Tm, ut[0]);
  rt_mul(R, Tm + 3, ut[1]);
  T* dz = grad;
  T* dT = grad + 3;
  for (int i = 0; i < k; ++i) {
    const T* a = th + 9 + 3 * i;
    const T* bv = th + 33 + 3 * i;
    T* da = grad + 9 + 3 * i;
    T* db = grad + 33 + 3 * i;
    T Ra[3], Rna[3];
    r_mul(R, a, Ra);
    r_mul(Rn, a, Rna);
    for (int e = 0; e < 3; ++e) {
      dz[e] += gphi[i] * (x[e] + Ra[e]) + gphin[i] * (xn[e] + Rna[e]);
      da[e] += gphi[i] * u0[e] + gphin[i] * un[e];
    }
    const T* gl = gJn[i];
    const T* gr = gJn[i] + 3;
    T t1[3], t2[3];
    cross(gr, a, t1);
    r_mul(R, t1, t2);
    cross(u0, gr, t1);
    for (int e = 0; e < 3; ++e) dz[e] += gl[e] + t2[e], da[e] += t1[e];
    for (int r = 0; r < 2; ++r) {
      const T* tl = gJt[2 * i + r];
      const T* tr = gJt[2 * i + r] + 3;
      cross(tr, bv, t1);
      r_mul(R, t1, t2);
      for (int e = 0; e < 3; ++e) dT[3 * r + e] += tl[e] + t2[e];
      cross(ut[r], tr, t1);
      for (int e = 0; e < 3; ++e) db[e] += t1[e];
    }
  }
  return reg;
}

}  // namespace cn
}  // namespace impulse
