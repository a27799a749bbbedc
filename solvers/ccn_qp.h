// The CCN loss QP of one transition and its envelope gradient, as host-device
// code: the implementation the CPU loss (host/learning/ccn.cc, CcnLoss) and the
// device loss (kernels/ccn_kernels.cu) both call. The math, the parameter
// layout and the units are described in host/learning/ccn.h; the multibody
// quantities (kinematics, M, h, contact Jacobians, the wrench regressor, the
// log-Cholesky map) follow host/dynamics/multibody.h and inertia.h, whose Eigen
// versions remain the tests' independent reference (ccn_objective_at).
//
// Fixed capacity, a template parameter C (Capacity below): the device kernels
// use DeviceCapacity (registers / local memory per thread), the CPU loss
// HostCapacity. States are
// [quat w,x,y,z; p; θ; ω body; v world; θ̇] (width 13 + 2 nj). θ: vertices (3
// per vertex, links in order), log-Cholesky (10 per link), θ_μ (μ = |θ_μ|). The residual δ
// (nv accelerations, or none) is an input; its gradient an output.
// QP: variables λ = [λ_n, λ_t,x/μ, λ_t,y/μ] per contact (n = 3k), A = −I
// (diagonal pattern), b = 0, k second-order cones.
#pragma once

#include "solvers/config.h"
#include "solvers/view.h"

IMPULSE_NAMESPACE_BEGIN
namespace ccnqp {

// A capacity: the most links (a floating base and Links − 1 revolute joints)
// and contact vertices the fixed-size arrays below hold.
template <int Links, int Vertices>
struct Capacity {
  static constexpr int kLinks = Links;
  static constexpr int kNv = 6 + Links - 1;
  static constexpr int kK = Vertices;
  static constexpr int kN = 3 * Vertices;
  static constexpr int kTheta = 3 * Vertices + 10 * Links + 1;
};
// The device kernels' (registers / local memory per thread): the cube, the
// asymmetric object and the elbow fit.
using DeviceCapacity = Capacity<2, 16>;
// The CPU loss's (its scratch is on the heap, one per worker): described
// systems of up to 8 links and 64 vertices.
using HostCapacity = Capacity<8, 64>;

template <class T, class C>
struct System {
  int links = 1;                  // 1 .. C::kLinks
  int parent[C::kLinks];          // −1 for link 0
  T origin[C::kLinks][3];         // joint origin in the parent frame
  T axis[C::kLinks][3];           // joint axis (unit)
  int nvert[C::kLinks];           // vertices per link
  T total_mass, gravity, dt;
  T w_comp, w_diss, w_pen, w_res;  // as applied (CcnWeights::applied): comp on λ_n |φ|
  IMPULSE_HD int joints() const { return links - 1; }
  IMPULSE_HD int nq() const { return 7 + joints(); }
  IMPULSE_HD int nv() const { return 6 + joints(); }
  IMPULSE_HD int width() const { return nq() + nv(); }
  IMPULSE_HD int contacts() const {
    int k = 0;
    for (int l = 0; l < links; ++l) k += nvert[l];
    return k;
  }
  IMPULSE_HD int inertia_offset() const { return 3 * contacts(); }
  IMPULSE_HD int mu_offset() const { return inertia_offset() + 10 * links; }
  IMPULSE_HD int theta_size() const { return mu_offset() + 1; }
};

// ---- small vector algebra --------------------------------------------------------------

template <class T>
IMPULSE_HD void cross3(const T* a, const T* b, T* o) {
  o[0] = a[1] * b[2] - a[2] * b[1];
  o[1] = a[2] * b[0] - a[0] * b[2];
  o[2] = a[0] * b[1] - a[1] * b[0];
}
template <class T>
IMPULSE_HD void mat_vec(const T R[9], const T* v, T* o) {
  for (int r = 0; r < 3; ++r) o[r] = R[3 * r] * v[0] + R[3 * r + 1] * v[1] + R[3 * r + 2] * v[2];
}
template <class T>
IMPULSE_HD void mat_t_vec(const T R[9], const T* v, T* o) {
  for (int c = 0; c < 3; ++c) o[c] = R[c] * v[0] + R[3 + c] * v[1] + R[6 + c] * v[2];
}
template <class T>
IMPULSE_HD void mat_mul(const T A[9], const T B[9], T* C) {
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) C[3 * r + c] = A[3 * r] * B[c] + A[3 * r + 1] * B[3 + c] + A[3 * r + 2] * B[6 + c];
}

// ---- kinematics ---------------------------------------------------------------------------

template <class T, class C>
struct Kin {
  T R[C::kLinks][9], p[C::kLinks][3];
  T Jo[C::kLinks][3][C::kNv], Jw[C::kLinks][3][C::kNv];
  T w[C::kLinks][3], ab[C::kLinks][3], alb[C::kLinks][3];
};

// poses and Jacobians at x's configuration; with_velocity: also ω and the
// velocity-product accelerations (host/dynamics/multibody.h's kinematics).
template <class T, class C>
IMPULSE_HD void kinematics(const System<T, C>& s, const T* x, bool with_velocity, Kin<T, C>& k) {
  const int nv = s.nv(), nq = s.nq();
  T qw = x[0], qa = x[1], qb = x[2], qc = x[3];
  const T nrm = sqrt_of(qw * qw + qa * qa + qb * qb + qc * qc);
  qw /= nrm, qa /= nrm, qb /= nrm, qc /= nrm;
  T* R = k.R[0];
  R[0] = 1 - 2 * (qb * qb + qc * qc), R[1] = 2 * (qa * qb - qw * qc), R[2] = 2 * (qa * qc + qw * qb);
  R[3] = 2 * (qa * qb + qw * qc), R[4] = 1 - 2 * (qa * qa + qc * qc), R[5] = 2 * (qb * qc - qw * qa);
  R[6] = 2 * (qa * qc - qw * qb), R[7] = 2 * (qb * qc + qw * qa), R[8] = 1 - 2 * (qa * qa + qb * qb);
  for (int i = 0; i < 3; ++i) {
    k.p[0][i] = x[4 + i];
    for (int c = 0; c < nv; ++c) {
      k.Jw[0][i][c] = c < 3 ? R[3 * i + c] : T(0);
      k.Jo[0][i][c] = c == 3 + i ? T(1) : T(0);
    }
  }
  if (with_velocity) {
    mat_vec(R, x + nq, k.w[0]);
    for (int i = 0; i < 3; ++i) k.ab[0][i] = k.alb[0][i] = T(0);
  }
  for (int l = 1; l < s.links; ++l) {
    const int P = s.parent[l];
    T r[3], a_w[3];
    mat_vec(k.R[P], s.origin[l], r);
    mat_vec(k.R[P], s.axis[l], a_w);
    // Rodrigues: Rot(a, θ) = cos θ I + sin θ [a]× + (1 − cos θ) a aᵀ
    const T th = x[7 + l - 1], ct = cos_of(th), st = sin_of(th);
    const T* a = s.axis[l];
    T Rot[9];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) Rot[3 * i + j] = (T(1) - ct) * a[i] * a[j] + (i == j ? ct : T(0));
    Rot[1] -= st * a[2], Rot[2] += st * a[1], Rot[3] += st * a[2];
    Rot[5] -= st * a[0], Rot[6] -= st * a[1], Rot[7] += st * a[0];
    mat_mul(k.R[P], Rot, k.R[l]);
    for (int i = 0; i < 3; ++i) k.p[l][i] = k.p[P][i] + r[i];
    for (int c = 0; c < nv; ++c) {
      T jw[3] = {k.Jw[P][0][c], k.Jw[P][1][c], k.Jw[P][2][c]}, rx[3];
      cross3(r, jw, rx);
      for (int i = 0; i < 3; ++i) {
        k.Jw[l][i][c] = jw[i] + (c == 6 + l - 1 ? a_w[i] : T(0));
        k.Jo[l][i][c] = k.Jo[P][i][c] - rx[i];
      }
    }
    if (with_velocity) {
      const T rate = x[nq + 6 + l - 1];
      T wj[3] = {a_w[0] * rate, a_w[1] * rate, a_w[2] * rate}, t1[3], t2[3], t3[3];
      for (int i = 0; i < 3; ++i) k.w[l][i] = k.w[P][i] + wj[i];
      cross3(k.w[P], wj, t1);
      for (int i = 0; i < 3; ++i) k.alb[l][i] = k.alb[P][i] + t1[i];
      cross3(k.alb[P], r, t1);
      cross3(k.w[P], r, t2);
      cross3(k.w[P], t2, t3);
      for (int i = 0; i < 3; ++i) k.ab[l][i] = k.ab[P][i] + t1[i] + t3[i];
    }
  }
}

// [Jo; Jw] y of link l (6)
template <class T, class C>
IMPULSE_HD void link_motion(const Kin<T, C>& k, int l, int nv, const T* y, T* o) {
  for (int i = 0; i < 3; ++i) {
    T a = T(0), b = T(0);
    for (int c = 0; c < nv; ++c) a += k.Jo[l][i][c] * y[c], b += k.Jw[l][i][c] * y[c];
    o[i] = a, o[3 + i] = b;
  }
}

// ---- inertia --------------------------------------------------------------------------------

// the 6 x 10 wrench regressor of host/dynamics/multibody.h (link_wrench_regressor)
template <class T>
IMPULSE_HD void regressor(const T R[9], const T* a, const T* alpha, const T* w, const T* g, T A[6][10]) {
  T ag[3] = {a[0] - g[0], a[1] - g[1], a[2] - g[2]};
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 10; ++j) A[i][j] = T(0);
  for (int i = 0; i < 3; ++i) A[i][0] = ag[i];
  for (int kk = 0; kk < 3; ++kk) {
    const T hw[3] = {R[kk], R[3 + kk], R[6 + kk]};
    T t1[3], t2[3], t3[3], t4[3];
    cross3(alpha, hw, t1);
    cross3(w, hw, t2);
    cross3(w, t2, t3);
    cross3(hw, ag, t4);
    for (int i = 0; i < 3; ++i) A[i][1 + kk] = t1[i] + t3[i], A[3 + i][1 + kk] = t4[i];
  }
  T ab[3], wb[3];
  mat_t_vec(R, alpha, ab);
  mat_t_vec(R, w, wb);
  const int rc[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};
  for (int kk = 0; kk < 6; ++kk) {
    const int r0 = rc[kk][0], r1 = rc[kk][1];
    // E = e_r0 e_r1ᵀ + e_r1 e_r0ᵀ (one entry on the diagonal)
    T Ea[3] = {T(0), T(0), T(0)}, Ew[3] = {T(0), T(0), T(0)};
    Ea[r0] += ab[r1], Ew[r0] += wb[r1];
    if (r0 != r1) Ea[r1] += ab[r0], Ew[r1] += wb[r0];
    T c[3], body[3], world[3];
    cross3(wb, Ew, c);
    for (int i = 0; i < 3; ++i) body[i] = Ea[i] + c[i];
    mat_vec(R, body, world);
    for (int i = 0; i < 3; ++i) A[3 + i][4 + kk] = world[i];
  }
}

// π of every link (10 each, total mass the system's) from θ's log-Cholesky
// block; pi_hat (unscaled π), J (∂π̂/∂θ per link) and the scale for the chain rule.
template <class T, class C>
struct Inertia {
  T pi[C::kLinks][10], pi_hat[C::kLinks][10], J[C::kLinks][10][10];
  T scale, sum;
};

template <class T, class C>
IMPULSE_HD void inertia(const System<T, C>& s, const T* theta, bool want_jacobian, Inertia<T, C>& I) {
  I.sum = T(0);
  for (int l = 0; l < s.links; ++l) {
    const T* t = theta + s.inertia_offset() + 10 * l;
    const T m = exp_of(T(2) * t[0]);
    const T u[3] = {exp_of(t[1]), exp_of(t[2]), exp_of(t[3])};
    const T V[9] = {u[0], t[4], t[6], T(0), u[1], t[5], T(0), T(0), u[2]};
    const T* c = t + 7;
    T So[9];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        T acc = c[i] * c[j];
        for (int e = 0; e < 3; ++e) acc += V[3 * i + e] * V[3 * j + e];
        So[3 * i + j] = m * acc;
      }
    const T tr = So[0] + So[4] + So[8];
    T* p = I.pi_hat[l];
    p[0] = m, p[1] = m * c[0], p[2] = m * c[1], p[3] = m * c[2];
    p[4] = tr - So[0], p[5] = tr - So[4], p[6] = tr - So[8];
    p[7] = -So[1], p[8] = -So[2], p[9] = -So[5];
    I.sum += m;
    if (!want_jacobian) continue;
    T(*J)[10] = I.J[l];
    for (int i = 0; i < 10; ++i)
      for (int j = 0; j < 10; ++j) J[i][j] = T(0);
    for (int i = 0; i < 10; ++i) J[i][0] = T(2) * p[i];
    const auto put = [&](int col, const T* dSo) {
      const T dtr = dSo[0] + dSo[4] + dSo[8];
      J[4][col] = dtr - dSo[0], J[5][col] = dtr - dSo[4], J[6][col] = dtr - dSo[8];
      J[7][col] = -dSo[1], J[8][col] = -dSo[2], J[9][col] = -dSo[5];
    };
    const int where[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {1, 2}, {0, 2}};
    const T dval[6] = {u[0], u[1], u[2], T(1), T(1), T(1)};
    for (int kk = 0; kk < 6; ++kk) {
      T dV[9] = {T(0), T(0), T(0), T(0), T(0), T(0), T(0), T(0), T(0)};
      dV[3 * where[kk][0] + where[kk][1]] = dval[kk];
      T dSo[9];
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
          T acc = T(0);
          for (int e = 0; e < 3; ++e) acc += dV[3 * i + e] * V[3 * j + e] + V[3 * i + e] * dV[3 * j + e];
          dSo[3 * i + j] = m * acc;
        }
      put(1 + kk, dSo);
    }
    for (int kk = 0; kk < 3; ++kk) {
      J[1 + kk][7 + kk] = m;
      T dSo[9];
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) dSo[3 * i + j] = m * ((i == kk ? c[j] : T(0)) + (j == kk ? c[i] : T(0)));
      put(7 + kk, dSo);
    }
  }
  I.scale = s.total_mass / I.sum;
  for (int l = 0; l < s.links; ++l)
    for (int i = 0; i < 10; ++i) I.pi[l][i] = I.scale * I.pi_hat[l][i];
}

// g_θ(inertia block) += (∂π/∂θ)ᵀ g_π
template <class T, class C>
IMPULSE_HD void inertia_chain(const System<T, C>& s, const Inertia<T, C>& I, const T gpi[C::kLinks][10], T* g_theta) {
  T dots = T(0);
  for (int l = 0; l < s.links; ++l)
    for (int i = 0; i < 10; ++i) dots += I.pi_hat[l][i] * gpi[l][i];
  for (int l = 0; l < s.links; ++l) {
    T* g = g_theta + s.inertia_offset() + 10 * l;
    for (int j = 0; j < 10; ++j) {
      T acc = T(0);
      for (int i = 0; i < 10; ++i) acc += I.J[l][i][j] * gpi[l][i];
      g[j] += I.scale * acc;
    }
    // ∂s/∂α_l = −2 s e^{2α_l} / Σ
    g[0] += dots * (T(-2) * I.scale * I.pi_hat[l][0] / I.sum);
  }
}

// M (nv x nv, row-major C::kNv stride) and h (nv)
template <class T, class C>
IMPULSE_HD void mass_and_bias(const System<T, C>& s, const Kin<T, C>& k, const Inertia<T, C>& I, T M[C::kNv][C::kNv], T* h) {
  const int nv = s.nv();
  const T zero[3] = {T(0), T(0), T(0)}, g[3] = {T(0), T(0), -s.gravity};
  for (int i = 0; i < nv; ++i) {
    h[i] = T(0);
    for (int j = 0; j < nv; ++j) M[i][j] = T(0);
  }
  T A[6][10], wr[6];
  for (int l = 0; l < s.links; ++l) {
    for (int c = 0; c < nv; ++c) {
      const T a[3] = {k.Jo[l][0][c], k.Jo[l][1][c], k.Jo[l][2][c]};
      const T al[3] = {k.Jw[l][0][c], k.Jw[l][1][c], k.Jw[l][2][c]};
      regressor(k.R[l], a, al, zero, zero, A);
      for (int i = 0; i < 6; ++i) {
        wr[i] = T(0);
        for (int j = 0; j < 10; ++j) wr[i] += A[i][j] * I.pi[l][j];
      }
      for (int r = 0; r < nv; ++r)
        for (int i = 0; i < 3; ++i) M[r][c] += k.Jo[l][i][r] * wr[i] + k.Jw[l][i][r] * wr[3 + i];
    }
    regressor(k.R[l], k.ab[l], k.alb[l], k.w[l], g, A);
    for (int i = 0; i < 6; ++i) {
      wr[i] = T(0);
      for (int j = 0; j < 10; ++j) wr[i] += A[i][j] * I.pi[l][j];
    }
    for (int r = 0; r < nv; ++r)
      for (int i = 0; i < 3; ++i) h[r] += k.Jo[l][i][r] * wr[i] + k.Jw[l][i][r] * wr[3 + i];
  }
  for (int i = 0; i < nv; ++i)
    for (int j = 0; j < i; ++j) M[i][j] = M[j][i] = T(0.5) * (M[i][j] + M[j][i]);
}

// ∂(yᵀ(M w − dt·h) + c·uᵀMu)/∂π per link, added into gpi (regressor transposes)
template <class T, class C>
IMPULSE_HD void add_inertial_gradient(const System<T, C>& s, const Kin<T, C>& k, const T* y, const T* w, T dt,
                                      const T* u, T cu, T gpi[C::kLinks][10]) {
  const int nv = s.nv();
  const T zero[3] = {T(0), T(0), T(0)}, g[3] = {T(0), T(0), -s.gravity};
  T A[6][10], my[6], mw[6], mu[6];
  for (int l = 0; l < s.links; ++l) {
    link_motion(k, l, nv, y, my);
    link_motion(k, l, nv, w, mw);
    regressor(k.R[l], mw, mw + 3, zero, zero, A);
    for (int j = 0; j < 10; ++j)
      for (int i = 0; i < 6; ++i) gpi[l][j] += A[i][j] * my[i];
    regressor(k.R[l], k.ab[l], k.alb[l], k.w[l], g, A);
    for (int j = 0; j < 10; ++j)
      for (int i = 0; i < 6; ++i) gpi[l][j] -= dt * A[i][j] * my[i];
    if (cu != T(0)) {
      link_motion(k, l, nv, u, mu);
      regressor(k.R[l], mu, mu + 3, zero, zero, A);
      for (int j = 0; j < 10; ++j)
        for (int i = 0; i < 6; ++i) gpi[l][j] += cu * A[i][j] * mu[i];
    }
  }
}

// in-place Cholesky (lower) of M and solves with it
template <class T, int S>
IMPULSE_HD bool cholesky(int n, T (*L)[S]) {
  for (int j = 0; j < n; ++j) {
    T d = L[j][j];
    for (int e = 0; e < j; ++e) d -= L[j][e] * L[j][e];
    if (!(d > T(0))) return false;
    d = sqrt_of(d);
    L[j][j] = d;
    for (int i = j + 1; i < n; ++i) {
      T v = L[i][j];
      for (int e = 0; e < j; ++e) v -= L[i][e] * L[j][e];
      L[i][j] = v / d;
    }
  }
  return true;
}
template <class T, int S>
IMPULSE_HD void chol_solve(int n, const T (*L)[S], const T* b, T* x) {
  for (int i = 0; i < n; ++i) {
    T v = b[i];
    for (int e = 0; e < i; ++e) v -= L[i][e] * x[e];
    x[i] = v / L[i][i];
  }
  for (int i = n - 1; i >= 0; --i) {
    T v = x[i];
    for (int e = i + 1; e < n; ++e) v -= L[e][i] * x[e];
    x[i] = v / L[i][i];
  }
}

// ---- the transition's terms ----------------------------------------------------------------

template <class T, class C>
struct Terms {
  Kin<T, C> kin, kin_next;
  Inertia<T, C> I;
  T M[C::kNv][C::kNv], L[C::kNv][C::kNv], h[C::kNv];
  T Jt[C::kN][C::kNv];  // J̃: rows [J_n; μ J_t,x; μ J_t,y] per contact
  T Jx[C::kK][C::kNv], Jy[C::kK][C::kNv];  // J_t rows without μ
  T phin[C::kK], jtv[C::kK][2];
  T w[C::kNv], f0[C::kNv], u0[C::kNv], delta[C::kNv], vn[C::kNv];
  T lin[C::kN];
  T constant;
  bool ok;
};

// Everything but P and q. delta: nv residual accelerations or null.
template <class T, class C>
IMPULSE_HD void terms(const System<T, C>& s, const T* theta, const T* x, const T* xn, const T* delta, bool want_jacobian,
                      Terms<T, C>& t) {
  const int nv = s.nv(), nq = s.nq();
  const T dt = s.dt, mu = abs_of(theta[s.mu_offset()]);
  kinematics(s, x, true, t.kin);
  kinematics(s, xn, false, t.kin_next);
  inertia(s, theta, want_jacobian, t.I);
  mass_and_bias(s, t.kin, t.I, t.M, t.h);
  for (int i = 0; i < nv; ++i)
    for (int j = 0; j < nv; ++j) t.L[i][j] = t.M[i][j];
  t.ok = cholesky(nv, t.L);
  int i = 0;
  T pen = T(0);
  const T* vert = theta;
  for (int l = 0; l < s.links; ++l) {
    for (int v = 0; v < s.nvert[l]; ++v, ++i, vert += 3) {
      T rw[3], rwn[3];
      mat_vec(t.kin.R[l], vert, rw);
      mat_vec(t.kin_next.R[l], vert, rwn);
      t.phin[i] = t.kin_next.p[l][2] + rwn[2];
      for (int c = 0; c < nv; ++c) {
        const T jw[3] = {t.kin.Jw[l][0][c], t.kin.Jw[l][1][c], t.kin.Jw[l][2][c]};
        T rx[3];
        cross3(rw, jw, rx);  // [R r]× Jw column c
        const T jx = t.kin.Jo[l][0][c] - rx[0], jy = t.kin.Jo[l][1][c] - rx[1], jz = t.kin.Jo[l][2][c] - rx[2];
        t.Jx[i][c] = jx, t.Jy[i][c] = jy;
        t.Jt[3 * i][c] = jz, t.Jt[3 * i + 1][c] = mu * jx, t.Jt[3 * i + 2][c] = mu * jy;
      }
      const T neg = t.phin[i] < T(0) ? t.phin[i] : T(0);
      pen += neg * neg;
    }
  }
  const int k = i;
  for (int c = 0; c < nv; ++c) {
    t.vn[c] = xn[nq + c];
    t.delta[c] = delta ? delta[c] : T(0);
    t.w[c] = x[nq + c] - t.vn[c] + dt * t.delta[c];
  }
  T Md[C::kNv];
  for (int r = 0; r < nv; ++r) {
    T a = T(0), b = T(0);
    for (int c = 0; c < nv; ++c) a += t.M[r][c] * t.w[c], b += t.M[r][c] * t.delta[c];
    t.f0[r] = a - dt * t.h[r];
    Md[r] = b;
  }
  chol_solve(nv, t.L, t.f0, t.u0);
  T res = T(0), e0 = T(0);
  for (int c = 0; c < nv; ++c) res += t.delta[c] * Md[c], e0 += t.f0[c] * t.u0[c];
  for (int j = 0; j < k; ++j) {
    T a = T(0), b = T(0);
    for (int c = 0; c < nv; ++c) a += t.Jx[j][c] * t.vn[c], b += t.Jy[j][c] * t.vn[c];
    t.jtv[j][0] = a, t.jtv[j][1] = b;
    const T nrm = sqrt_of(a * a + b * b);
    t.lin[3 * j] = s.w_comp * abs_of(t.phin[j]) + s.w_diss * mu * nrm;
    t.lin[3 * j + 1] = s.w_diss * mu * a;
    t.lin[3 * j + 2] = s.w_diss * mu * b;
  }
  t.constant = e0 + s.w_pen * pen + s.w_res * dt * dt * res;
}

// Writes P (n x n row-major), q (n), A (n diagonal entries, −1), b (0);
// returns the constant (loss = ½λᵀPλ + qᵀλ + constant) and whether M was
// positive definite (false: the QP is left zero).
template <class T, class C, class S>
IMPULSE_HD bool assemble(const System<T, C>& s, const T* theta, const T* x, const T* xn, const T* delta, Terms<T, C>& t,
                         View<T, S> P, View<T, S> q, View<T, S> A, View<T, S> b, T* constant) {
  terms(s, theta, x, xn, delta, false, t);
  const int nv = s.nv(), n = 3 * s.contacts();
  for (int r = 0; r < n; ++r) A[r] = T(-1), b[r] = T(0);
  if (!t.ok) {
    for (int i = 0; i < n * n; ++i) P[i] = T(0);
    for (int i = 0; i < n; ++i) q[i] = T(0);
    *constant = T(0);
    return false;
  }
  // Y = M⁻¹ J̃ᵀ column by column (row r of J̃ → column r of Y)
  for (int r = 0; r < n; ++r) {
    T y[C::kNv];
    chol_solve(nv, t.L, t.Jt[r], y);
    T qr = T(0);
    for (int c = 0; c < nv; ++c) qr += t.Jt[r][c] * t.u0[c];
    q[r] = T(2) * qr + t.lin[r];
    for (int c2 = 0; c2 <= r; ++c2) {
      T acc = T(0);
      for (int e = 0; e < nv; ++e) acc += t.Jt[c2][e] * y[e];
      P[r * n + c2] = T(2) * acc;
      P[c2 * n + r] = T(2) * acc;
    }
  }
  *constant = t.constant;
  return true;
}

// The objective at λ (the loss at the QP's solution) and its gradient in θ
// (theta_size, added into g) and in δ (nv, written to g_delta when given).
template <class T, class C, class S>
IMPULSE_HD T gradient(const System<T, C>& s, const T* theta, const T* x, const T* xn, const T* delta,
                      View<const T, S> lambda, Terms<T, C>& t, T* g, T* g_delta) {
  terms(s, theta, x, xn, delta, true, t);
  const int nv = s.nv(), k = s.contacts();
  const T dt = s.dt, mu = abs_of(theta[s.mu_offset()]);
  if (!t.ok) return T(0);
  T f[C::kNv], u[C::kNv];
  for (int c = 0; c < nv; ++c) {
    T a = t.f0[c];
    for (int r = 0; r < 3 * k; ++r) a += t.Jt[r][c] * lambda[r];
    f[c] = a;
  }
  chol_solve(nv, t.L, f, u);
  T value = t.constant - T(0);
  {
    T fu = T(0), f0u0 = T(0), ll = T(0);
    for (int c = 0; c < nv; ++c) fu += f[c] * u[c], f0u0 += t.f0[c] * t.u0[c];
    for (int r = 0; r < 3 * k; ++r) ll += t.lin[r] * lambda[r];
    value = fu + ll + t.constant - f0u0;
  }
  // inertia: 2uᵀ(dM w − dt dh) − uᵀdMu + w_res dt² δᵀdMδ
  T gpi[C::kLinks][10];
  for (int l = 0; l < C::kLinks; ++l)
    for (int j = 0; j < 10; ++j) gpi[l][j] = T(0);
  T y2[C::kNv];
  for (int c = 0; c < nv; ++c) y2[c] = T(2) * u[c];
  add_inertial_gradient(s, t.kin, y2, t.w, dt, u, T(-1), gpi);
  if (s.w_res != T(0)) {
    const T zero[C::kNv] = {};
    T gd[C::kLinks][10];
    for (int l = 0; l < C::kLinks; ++l)
      for (int j = 0; j < 10; ++j) gd[l][j] = T(0);
    add_inertial_gradient(s, t.kin, zero, zero, T(0), t.delta, T(1), gd);
    for (int l = 0; l < s.links; ++l)
      for (int j = 0; j < 10; ++j) gpi[l][j] += s.w_res * dt * dt * gd[l][j];
  }
  inertia_chain(s, t.I, gpi, g);
  // J_p rows (x, y, z) per contact, then vertices; μ; φ'
  T gmu = T(0);
  const T* vert = theta;
  T* gv = g;
  int i = 0;
  for (int l = 0; l < s.links; ++l) {
    for (int v = 0; v < s.nvert[l]; ++v, ++i, vert += 3, gv += 3) {
      const T ln = lambda[3 * i], lt[2] = {lambda[3 * i + 1], lambda[3 * i + 2]};
      const T jv[2] = {t.jtv[i][0], t.jtv[i][1]};
      const T nj = sqrt_of(jv[0] * jv[0] + jv[1] * jv[1]);
      T dd[2] = {lt[0], lt[1]};
      if (nj > T(0)) dd[0] += ln * jv[0] / nj, dd[1] += ln * jv[1] / nj;
      // G (3 x nv): rows x, y (J_t, with μ) and z (J_n)
      T s3[3] = {T(0), T(0), T(0)};
      T jtu[2] = {T(0), T(0)};
      for (int c = 0; c < nv; ++c) {
        const T G[3] = {T(2) * mu * lt[0] * u[c] + s.w_diss * mu * dd[0] * t.vn[c],
                        T(2) * mu * lt[1] * u[c] + s.w_diss * mu * dd[1] * t.vn[c], T(2) * ln * u[c]};
        const T jw[3] = {t.kin.Jw[l][0][c], t.kin.Jw[l][1][c], t.kin.Jw[l][2][c]};
        T cx[3];
        cross3(jw, G, cx);
        for (int e = 0; e < 3; ++e) s3[e] += cx[e];
        jtu[0] += t.Jx[i][c] * u[c], jtu[1] += t.Jy[i][c] * u[c];
      }
      T rt[3];
      mat_t_vec(t.kin.R[l], s3, rt);
      const T sgn = t.phin[i] > T(0) ? T(1) : (t.phin[i] < T(0) ? T(-1) : T(0));  // d|φ|/dφ
      const T gphi = s.w_comp * ln * sgn + T(2) * s.w_pen * (t.phin[i] < T(0) ? t.phin[i] : T(0));
      for (int e = 0; e < 3; ++e) gv[e] += -rt[e] + gphi * t.kin_next.R[l][6 + e];
      gmu += T(2) * (lt[0] * jtu[0] + lt[1] * jtu[1]) + s.w_diss * (ln * nj + lt[0] * jv[0] + lt[1] * jv[1]);
    }
  }
  g[s.mu_offset()] += theta[s.mu_offset()] < T(0) ? -gmu : gmu;  // μ = |θ_μ|
  if (g_delta) {
    for (int r = 0; r < nv; ++r) {
      T Md = T(0);
      for (int c = 0; c < nv; ++c) Md += t.M[r][c] * t.delta[c];
      g_delta[r] = T(2) * dt * f[r] + T(2) * s.w_res * dt * dt * Md;
    }
  }
  return value;
}

}  // namespace ccnqp
IMPULSE_NAMESPACE_END  // namespace impulse
