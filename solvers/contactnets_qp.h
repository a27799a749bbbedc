// The ContactNets loss QP of one transition and its envelope gradient, as
// host-device code: the one implementation of this math. The host
// (host/learning/contactnets_loss.cc, for any contact model's frame) and the device
// (kernels/contactnets_kernels.cu, Polytope, transitions resident there) both
// call it. The math and the units are described in host/learning/contactnets_loss.h.
//
// Layers: a Frame (φ, J_n, J_t at q and φ at q', SI) is what a contact model
// gives; assemble_frame builds the QP from it, qp_frame_gradient and
// regularizers differentiate the loss with respect to it, and for the Polytope
// model polytope_frame / polytope_backprop connect it to θ.
//
// Fixed shape: 8 contacts, 32 variables [λ_n (8); λ_t (16); s (8)]; rows: 8
// penetration rows, then the exact cones (8 × 3 rows) or the octagon (8 rows
// λ_n ≥ 0 and 64 rows d_jᵀλ_t,i ≤ λ_n,i), with A in the CSR pattern of
// make_loss_batch. Parameters θ (57, SI): normal z (3), tangent T (2 x 3
// row-major), normal vertices a (8 x 3), tangent vertices b (8 x 3).
// States: 13 numbers [p; quaternion w,x,y,z; v world; ω body], SI. The body's
// inertia is diagonal (principal axes), as in the data sets.
#pragma once

#include <vector>

#include "solvers/config.h"
#include "solvers/view.h"

IMPULSE_NAMESPACE_BEGIN
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

// Contact i's φ at the configuration of x, whose rotation matrix is R (SI).
template <class T>
IMPULSE_HD T contact_phi(const T* th, const T R[9], const T* x, int i) {
  const T* z = th;
  const T* a = th + 9 + 3 * i;
  T Ra[3];
  r_mul(R, a, Ra);
  return z[0] * (x[0] + Ra[0]) + z[1] * (x[1] + Ra[1]) + z[2] * (x[2] + Ra[2]);
}

// Contact i's φ, J_n (6) and J_t (2 x 6) at the configuration of x, whose rotation
// matrix is R (SI).
template <class T>
IMPULSE_HD void contact_frame(const T* th, const T R[9], const T* x, int i, T& phi, T Jn[6], T Jt[2][6]) {
  const T* z = th;
  const T* Tm = th + 3;
  const T* a = th + 9 + 3 * i;
  const T* b = th + 33 + 3 * i;
  T uz[3], c[3];
  rt_mul(R, z, uz);
  phi = contact_phi(th, R, x, i);
  cross(a, uz, c);
  for (int e = 0; e < 3; ++e) Jn[e] = z[e], Jn[3 + e] = c[e];
  for (int r = 0; r < 2; ++r) {
    T ut[3];
    rt_mul(R, Tm + 3 * r, ut);
    cross(b, ut, c);
    for (int e = 0; e < 3; ++e) Jt[r][e] = Tm[3 * r + e], Jt[r][3 + e] = c[e];
  }
}

// φ_n (8), J_n (8 x 6), J_t (16 x 6) at the configuration of x (SI).
template <class T>
IMPULSE_HD void frame(const T* th, const T* x, T phi[kK], T Jn[kK][6], T Jt[2 * kK][6]) {
  T R[9];
  rotation(x, R);
  for (int i = 0; i < kK; ++i) contact_frame(th, R, x, i, phi[i], Jn[i], Jt + 2 * i);
}

// What a contact model gives the loss (SI): φ_n, J_n, J_t at q and φ_n at q'.
template <class T>
struct Frame {
  T phi[kK], phin[kK];
  T Jn[kK][6], Jt[2 * kK][6];
};
// dLoss/d(each entry of a Frame), same layout.
template <class T>
using FrameGrad = Frame<T>;

template <class T>
IMPULSE_HD void zero(Frame<T>& f) {
  for (int i = 0; i < kK; ++i) {
    f.phi[i] = f.phin[i] = T(0);
    for (int e = 0; e < 6; ++e) f.Jn[i][e] = T(0);
  }
  for (int r = 0; r < 2 * kK; ++r)
    for (int e = 0; e < 6; ++e) f.Jt[r][e] = T(0);
}

// the Polytope model's frame of a transition (x, x').
template <class T>
IMPULSE_HD void polytope_frame(const T* th, const T* x, const T* xn, Frame<T>& f) {
  frame(th, x, f.phi, f.Jn, f.Jt);
  T Jn2[kK][6], Jt2[2 * kK][6];
  frame(th, xn, f.phin, Jn2, Jt2);
}

// The frame and the velocities in the loss's scaled units (length_unit = 1).
template <class T>
struct Scaled {
  T phi[kK], phin[kK];
  T Jn[kK][6], Jt[2 * kK][6];  // rotational columns divided by L
  T nu[6], nun[6], nuf[6], dv[6], Mi[6];
};

// The transition's velocities in scaled units: ν, ν', M⁻¹ (diagonal), the free
// velocity ν_free = ν + M⁻¹ F_smooth and Δv = ν' − ν_free (= M⁻¹ F_data).
template <class T>
IMPULSE_HD void scaled_velocities(const LossConsts<T>& c, const T* x, const T* xn, T nu[6], T nun[6], T Mi[6],
                                  T nuf[6], T dv[6]) {
  const T L = c.L;
  for (int e = 0; e < 3; ++e) {
    nu[e] = x[7 + e] / L, nu[3 + e] = x[10 + e];
    nun[e] = xn[7 + e] / L, nun[3 + e] = xn[10 + e];
    Mi[e] = T(1) / c.mass;
    Mi[3 + e] = L * L / c.inertia[e];
  }
  // smooth impulse: gravity, and −ω × Iω (scaled: linear / L, angular / L²)
  const T* w = x + 10;
  const T Iw[3] = {c.inertia[0] * w[0], c.inertia[1] * w[1], c.inertia[2] * w[2]};
  T gyro[3];
  cross(w, Iw, gyro);
  T Fs[6] = {T(0), T(0), -c.gravity * c.mass * c.dt / L,
             -gyro[0] * c.dt / (L * L), -gyro[1] * c.dt / (L * L), -gyro[2] * c.dt / (L * L)};
  for (int e = 0; e < 6; ++e) {
    nuf[e] = nu[e] + Mi[e] * Fs[e];
    dv[e] = nun[e] - nuf[e];
  }
}

// a J row (6, SI) in scaled units: rotational columns divided by L
template <class T>
IMPULSE_HD void scaled_row(const T* row, T L, T* out) {
  for (int e = 0; e < 6; ++e) out[e] = e < 3 ? row[e] : row[e] / L;
}

template <class T>
IMPULSE_HD void scaled(const LossConsts<T>& c, const Frame<T>& f, const T* x, const T* xn,
                       Scaled<T>& s) {
  const T L = c.L;
  for (int i = 0; i < kK; ++i) {
    s.phi[i] = f.phi[i] / L, s.phin[i] = f.phin[i] / L;
    scaled_row(f.Jn[i], L, s.Jn[i]);
  }
  for (int r = 0; r < 2 * kK; ++r) scaled_row(f.Jt[r], L, s.Jt[r]);
  scaled_velocities(c, x, xn, s.nu, s.nun, s.Mi, s.nuf, s.dv);
}

// column j of B = [J_nᵀ, J_tᵀ] (6), j < 3k
template <class T>
IMPULSE_HD const T* bcol(const Scaled<T>& s, int j) {
  return j < kK ? s.Jn[j] : s.Jt[j - kK];
}

// The CSR pattern of A (host): penetration rows dense over (λ_n, λ_t) plus their
// slack, then one entry per cone row, or λ_n ≥ 0 rows and three entries per
// octagon row.
inline void pattern(int octagon, std::vector<int>& row_ptr, std::vector<int>& col) {
  const int k = kK;
  row_ptr.assign(1, 0);
  col.clear();
  auto end_row = [&]() { row_ptr.push_back(static_cast<int>(col.size())); };
  for (int i = 0; i < k; ++i) {
    for (int c = 0; c < 3 * k; ++c) col.push_back(c);
    col.push_back(3 * k + i);
    end_row();
  }
  if (!octagon) {
    for (int i = 0; i < k; ++i)
      for (int c : {i, k + 2 * i, k + 2 * i + 1}) col.push_back(c), end_row();
  } else {
    for (int i = 0; i < k; ++i) col.push_back(i), end_row();
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < kOctagon; ++j) {
        for (int c : {i, k + 2 * i, k + 2 * i + 1}) col.push_back(c);
        end_row();
      }
  }
}

// The loss QP's entries in scaled units, one formula each, for assemble_frame and the
// device's warp assembly (kernels/contactnets_kernels.cu). b_j: column j of B.
// P's prediction entry 2w (M⁻¹b_hi)ᵀ(M⁻¹b_lo), columns hi ≥ lo (in this order)
template <class T>
IMPULSE_HD T p_match(const LossConsts<T>& c, const T Mi[6], const T* bhi, const T* blo) {
  T acc = T(0);
  for (int e = 0; e < 6; ++e) acc += Mi[e] * Mi[e] * bhi[e] * blo[e];
  return T(2) * c.w_match * acc;
}
// q_j = −2w (M⁻¹b_j)ᵀΔv
template <class T>
IMPULSE_HD T q_match(const LossConsts<T>& c, const T Mi[6], const T* bj, const T dv[6]) {
  T acc = T(0);
  for (int e = 0; e < 6; ++e) acc += Mi[e] * bj[e] * dv[e];
  return T(-2) * c.w_match * acc;
}
// the constant w‖Δv‖²
template <class T>
IMPULSE_HD T match_constant(const LossConsts<T>& c, const T dv[6]) {
  T acc = T(0);
  for (int e = 0; e < 6; ++e) acc += dv[e] * dv[e];
  return acc * c.w_match;
}
// a J row's velocity J_r ν (scaled): c_i = J_t,i ν' is contact i's tangential velocity
// at ν', its two rows' values
template <class T>
IMPULSE_HD T row_velocity(const T* row, const T* nu) {
  T acc = T(0);
  for (int e = 0; e < 6; ++e) acc += row[e] * nu[e];
  return acc;
}
// penetration row i: A's entry −dt J_n,i M⁻¹ b_j, and b_i = φ_i + dt J_n,i ν_free
template <class T>
IMPULSE_HD T a_penetration(const LossConsts<T>& c, const T* jn, const T Mi[6], const T* bj) {
  T acc = T(0);
  for (int e = 0; e < 6; ++e) acc += jn[e] * Mi[e] * bj[e];
  return -c.dt * acc;
}
template <class T>
IMPULSE_HD T b_penetration(const LossConsts<T>& c, T phi_s, const T* jn, const T nuf[6]) {
  return phi_s + c.dt * row_velocity(jn, nuf);
}
template <class T>
IMPULSE_HD void tangent_velocity(const T (*Jt_s)[6], const T* nun, T cv[2]) {
  for (int r = 0; r < 2; ++r) cv[r] = row_velocity(Jt_s[r], nun);
}
// what contact i adds to P beyond the prediction: activation 2w φ'² on its normal
// (comp_n) and tangent (comp_t) diagonals; dissipation 2w_cone ‖c‖² on all three
// diagonals (cone) and 2w_cone c_r ‖c‖ between λ_n and λ_t,r (nt)
template <class T>
struct ContactP {
  T comp_n, comp_t, cone, nt[2];
};
template <class T>
IMPULSE_HD ContactP<T> contact_p(const LossConsts<T>& c, T phin_s, const T cv[2]) {
  const T p2 = phin_s * phin_s;
  const T cn2 = cv[0] * cv[0] + cv[1] * cv[1], cn = sqrt_of(cn2);
  return {T(2) * c.w_comp_n * p2, T(2) * c.w_comp_t * p2, T(2) * c.w_cone * cn2,
          {T(2) * c.w_cone * cv[0] * cn, T(2) * c.w_cone * cv[1] * cn}};
}
// P's entry (i, j): v (the prediction entry 2w (M⁻¹b_max(i,j))ᵀ(M⁻¹b_min(i,j)), or 0
// past B's columns) plus what the contacts add there, in this order: on a normal or
// tangent diagonal comp_n or comp_t, then cone; between λ_n,i and λ_t,i,r nt[r]; on a
// slack's diagonal 2 w_slack. cp: the kK contacts' contact_p.
template <class T>
IMPULSE_HD T p_entry(const LossConsts<T>& c, const ContactP<T>* cp, int i, int j, T v) {
  constexpr int k = kK, nb = 3 * kK;
  if (i >= nb || j >= nb) return i == j ? v + T(2) * c.w_slack : v;
  if (i == j) {
    const ContactP<T>& ci = cp[i < k ? i : (i - k) / 2];
    v += i < k ? ci.comp_n : ci.comp_t;
    return v + ci.cone;
  }
  if (i < k && j >= k && (j - k) / 2 == i) return v + cp[i].nt[(j - k) % 2];
  if (j < k && i >= k && (i - k) / 2 == j) return v + cp[j].nt[(i - k) % 2];
  return v;
}

// the octagon's direction j (cos, sin)
template <class T>
IMPULSE_HD void octagon_direction(int j, T& cs, T& sn) {
  const T ang = T(2) * T(3.14159265358979323846) * T(j) / T(kOctagon);
  cs = cos(ang), sn = sin(ang);
}

// Writes P (32 x 32 row-major), q (32), A (values in pattern()), b from a frame;
// returns the constant term (loss = ½λᵀPλ + qᵀλ + constant at the optimum).
template <class T, class S>
IMPULSE_HD T assemble_frame(const LossConsts<T>& c, const Frame<T>& f, const T* x, const T* xn,
                            View<T, S> P, View<T, S> q, View<T, S> A, View<T, S> b) {
  Scaled<T> s;
  scaled(c, f, x, xn, s);
  const int k = kK, n = kN;
  for (int i = 0; i < n; ++i) q[i] = T(0);
  const T constant = match_constant(c, s.dv);
  // activation, dissipation (u_i = λ_n,i c_i + ‖c_i‖ λ_t,i, c_i = J_t,i ν'): per contact
  ContactP<T> cp[kK];
  for (int i = 0; i < k; ++i) {
    T cv[2];
    tangent_velocity(s.Jt + 2 * i, s.nun, cv);
    cp[i] = contact_p(c, s.phin[i], cv);
  }
  // P: the prediction 2 w MiBᵀMiB, then the contacts' and slacks' terms (p_entry);
  // q: −2 w MiBᵀ dv
  for (int i = 0; i < n; ++i) {
    const T* bi = i < 3 * k ? bcol(s, i) : nullptr;
    if (bi) q[i] = q_match(c, s.Mi, bi, s.dv);
    for (int j = 0; j <= i; ++j) {
      const T v = bi && j < 3 * k ? p_match(c, s.Mi, bi, bcol(s, j)) : T(0);
      P[i * n + j] = p_entry(c, cp, i, j, v);
      if (j != i) P[j * n + i] = p_entry(c, cp, j, i, v);
    }
  }
  // penetration rows: −dt J_n,i M⁻¹ B λ − s_i + s_c = φ_i + dt J_n,i ν_free
  int p = 0;
  for (int i = 0; i < k; ++i) {
    for (int j = 0; j < 3 * k; ++j) A[p++] = a_penetration(c, s.Jn[i], s.Mi, bcol(s, j));
    A[p++] = T(-1);
    b[i] = b_penetration(c, s.phi[i], s.Jn[i], s.nuf);
  }
  const int m = rows(c.octagon);
  for (int r = k; r < m; ++r) b[r] = T(0);
  if (!c.octagon) {
    for (int r = 0; r < 3 * k; ++r) A[p++] = T(-1);
  } else {
    for (int i = 0; i < k; ++i) A[p++] = T(-1);
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < kOctagon; ++j) {
        T cs, sn;
        octagon_direction(j, cs, sn);
        A[p++] = T(-1);
        A[p++] = cs;
        A[p++] = sn;
      }
  }
  return constant;
}

// The contacts' common factors of qp_frame_gradient (scaled): with Jl = Bλ and
// jny = J_nᵀy, gJ = 2w M⁻¹(M⁻¹Jl − Δv) − dt M⁻¹ jny and pen_dir = M⁻¹Jl + ν_free.
template <class T>
IMPULSE_HD void gradient_directions(const LossConsts<T>& c, const T Mi[6], const T dv[6], const T nuf[6],
                                    const T Jl[6], const T jny[6], T gJ[6], T pen_dir[6]) {
  for (int e = 0; e < 6; ++e) {
    const T MiJl = Mi[e] * Jl[e];
    gJ[e] = T(2) * c.w_match * Mi[e] * (MiJl - dv[e]) - c.dt * Mi[e] * jny[e];
    pen_dir[e] = MiJl + nuf[e];
  }
}

// Contact i's part of qp_frame_gradient: given the batch of contacts' gJ and pen_dir
// (scaled), its scaled φ', J_t rows and ν', its λ (normal, two tangent) and its
// penetration row's dual y_i, adds dLoss/d(φ_i, φ'_i, J_n,i, J_t,i) (SI).
template <class T>
IMPULSE_HD void contact_qp_gradient(const LossConsts<T>& c, T phin_s, const T (*Jt_s)[6], const T* nun, T ln, T l0,
                                    T l1, T yi, const T gJ[6], const T pen_dir[6], T& gphi, T& gphin, T gJn[6],
                                    T (*gJt)[6]) {
  // scaled → SI: φ_s = φ/L, rotational Jacobian columns were divided by L
  const T L = c.L, dt = c.dt;
  for (int e = 0; e < 6; ++e) gJn[e] += (ln * gJ[e] - dt * yi * pen_dir[e]) / (e < 3 ? T(1) : L);
  gphi += -yi / L;
  gphin += T(2) * phin_s * (c.w_comp_n * ln * ln + c.w_comp_t * (l0 * l0 + l1 * l1)) / L;
  T cv[2];
  tangent_velocity(Jt_s, nun, cv);
  const T cn = sqrt_of(cv[0] * cv[0] + cv[1] * cv[1]);
  const T u[2] = {ln * cv[0] + cn * l0, ln * cv[1] + cn * l1};
  T dc[2] = {T(2) * c.w_cone * ln * u[0], T(2) * c.w_cone * ln * u[1]};
  if (cn > T(0)) {
    const T lu = l0 * u[0] + l1 * u[1];
    dc[0] += T(2) * c.w_cone * lu * cv[0] / cn;
    dc[1] += T(2) * c.w_cone * lu * cv[1] / cn;
  }
  const T lt[2] = {l0, l1};
  for (int r = 0; r < 2; ++r)
    for (int e = 0; e < 6; ++e) gJt[r][e] += (lt[r] * gJ[e] + dc[r] * nun[e]) / (e < 3 ? T(1) : L);
}

// g += dLoss/dframe of the QP part, by the envelope theorem at (λ, y) (the
// penetration rows' duals are y[0..k)), SI.
template <class T, class S>
IMPULSE_HD void qp_frame_gradient(const LossConsts<T>& c, const Frame<T>& f, const T* x, const T* xn,
                                  View<const T, S> lam, View<const T, S> y, FrameGrad<T>& g) {
  Scaled<T> s;
  scaled(c, f, x, xn, s);
  const int k = kK;
  T Jl[6], jny[6];
  for (int e = 0; e < 6; ++e) {
    T acc = T(0);
    for (int j = 0; j < 3 * k; ++j) acc += bcol(s, j)[e] * lam[j];
    Jl[e] = acc;
    acc = T(0);
    for (int i = 0; i < k; ++i) acc += s.Jn[i][e] * y[i];
    jny[e] = acc;
  }
  T gJ[6], pen_dir[6];
  gradient_directions(c, s.Mi, s.dv, s.nuf, Jl, jny, gJ, pen_dir);
  for (int i = 0; i < k; ++i)
    contact_qp_gradient(c, s.phin[i], s.Jt + 2 * i, s.nun, lam[i], lam[k + 2 * i], lam[k + 2 * i + 1], y[i], gJ,
                        pen_dir, g.phi[i], g.phin[i], g.Jn[i], g.Jt + 2 * i);
}

// Contact i's regularizer terms (position columns of its J_n row nv and J_t rows tv)
// added to reg; gJn and gJt, when given, += their gradient.
template <class T>
IMPULSE_HD void contact_regularizers(const LossConsts<T>& c, const T* nv, const T (*tv)[6], T& reg, T* gJn,
                                     T (*gJt)[6]) {
  const T nn = sqrt_of(nv[0] * nv[0] + nv[1] * nv[1] + nv[2] * nv[2]);
  if (c.w_unit != T(0)) {
    reg += c.w_unit * (nn - T(1)) * (nn - T(1));
    if (gJn && nn > T(0))
      for (int e = 0; e < 3; ++e) gJn[e] += T(2) * c.w_unit * (nn - T(1)) / nn * nv[e];
  }
  if (c.w_perp != T(0) && nn > T(0)) {
    for (int r = 0; r < 2; ++r) {
      const T* t = tv[r];
      const T tn = sqrt_of(t[0] * t[0] + t[1] * t[1] + t[2] * t[2]);
      if (tn == T(0)) continue;
      T cc = T(0);
      for (int e = 0; e < 3; ++e) cc += nv[e] / nn * t[e] / tn;
      reg += c.w_perp * cc * cc;
      if (gJn)
        for (int e = 0; e < 3; ++e) {
          gJn[e] += T(2) * c.w_perp * cc / nn * (t[e] / tn - cc * nv[e] / nn);
          gJt[r][e] += T(2) * c.w_perp * cc / tn * (nv[e] / nn - cc * t[e] / tn);
        }
    }
  }
}

// The regularizers R_1 + R_2 of a frame (position columns of J_n, J_t); g, when
// given, += their gradient.
template <class T>
IMPULSE_HD T regularizers(const LossConsts<T>& c, const Frame<T>& f, FrameGrad<T>* g) {
  T reg = T(0);
  for (int i = 0; i < kK; ++i)
    contact_regularizers(c, f.Jn[i], f.Jt + 2 * i, reg, g ? g->Jn[i] : nullptr, g ? g->Jt + 2 * i : nullptr);
  return reg;
}

// Contact i's share of polytope_backprop: given dL/d(φ_i, φ'_i, J_n,i, J_t,i) at (x, x')
// (rotations R, Rn), dz (3) and dT (6) += its part of dL/dz and dL/dT, da and db (3)
// += dL/da_i and dL/db_i.
template <class T>
IMPULSE_HD void contact_backprop(const T* th, const T R[9], const T Rn[9], const T* x, const T* xn, int i, T gphi,
                                 T gphin, const T* gJn, const T (*gJt)[6], T* dz, T* dT, T* da, T* db) {
  const T* z = th;
  const T* Tm = th + 3;
  const T* a = th + 9 + 3 * i;
  const T* bv = th + 33 + 3 * i;
  T u0[3], un[3];
  rt_mul(R, z, u0);
  rt_mul(Rn, z, un);
  // φ at q and at q'
  T Ra[3], Rna[3];
  r_mul(R, a, Ra);
  r_mul(Rn, a, Rna);
  for (int e = 0; e < 3; ++e) {
    dz[e] += gphi * (x[e] + Ra[e]) + gphin * (xn[e] + Rna[e]);
    da[e] += gphi * u0[e] + gphin * un[e];
  }
  // J_n,i = [zᵀ, (a × Rᵀz)ᵀ]
  const T* gl = gJn;
  const T* gr = gJn + 3;
  T t1[3], t2[3];
  cross(gr, a, t1);
  r_mul(R, t1, t2);
  cross(u0, gr, t1);
  for (int e = 0; e < 3; ++e) dz[e] += gl[e] + t2[e], da[e] += t1[e];
  // J_t,i row r = [T_r, (b × RᵀT_rᵀ)ᵀ]
  for (int r = 0; r < 2; ++r) {
    const T* tl = gJt[r];
    const T* tr = gJt[r] + 3;
    T ut[3];
    rt_mul(R, Tm + 3 * r, ut);
    cross(tr, bv, t1);
    r_mul(R, t1, t2);
    for (int e = 0; e < 3; ++e) dT[3 * r + e] += tl[e] + t2[e];
    cross(ut, tr, t1);
    for (int e = 0; e < 3; ++e) db[e] += t1[e];
  }
}

// grad (57, SI) += dL/dθ of the Polytope model given dL/dframe of (x, x').
template <class T>
IMPULSE_HD void polytope_backprop(const T* th, const T* x, const T* xn, const FrameGrad<T>& g,
                                  T* grad) {
  T R[9], Rn[9];
  rotation(x, R);
  rotation(xn, Rn);
  for (int i = 0; i < kK; ++i)
    contact_backprop(th, R, Rn, x, xn, i, g.phi[i], g.phin[i], g.Jn[i], g.Jt + 2 * i, grad, grad + 3,
                     grad + 9 + 3 * i, grad + 33 + 3 * i);
}

// The Polytope model's QP of (x, x') at θ from θ alone (the whole frame at once; the
// device assembles per contact with the functions above; tests check the two paths).
template <class T, class S>
IMPULSE_HD T assemble(const LossConsts<T>& c, const T* th, const T* x, const T* xn, View<T, S> P,
                      View<T, S> q, View<T, S> A, View<T, S> b) {
  Frame<T> f;
  polytope_frame(th, x, xn, f);
  return assemble_frame(c, f, x, xn, P, q, A, b);
}

// grad (57, SI) += dL/dθ of (x, x') at (λ, y), regularizers included; returns
// the regularizers' value (the whole frame at once, as assemble).
template <class T, class S>
IMPULSE_HD T gradient(const LossConsts<T>& c, const T* th, const T* x, const T* xn,
                      View<const T, S> lam, View<const T, S> y, T* grad) {
  Frame<T> f;
  polytope_frame(th, x, xn, f);
  FrameGrad<T> g;
  zero(g);
  qp_frame_gradient(c, f, x, xn, lam, y, g);
  const T reg = regularizers(c, f, &g);
  polytope_backprop(th, x, xn, g, grad);
  return reg;
}

}  // namespace cn
IMPULSE_NAMESPACE_END  // namespace impulse
