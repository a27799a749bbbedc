// Lanes: W same-shape problems side by side in one SIMD vector (host only).
//
// The GPU runs one problem per thread on batch-fastest storage; the CPU does
// the same in the lanes of a vector register: Lanes<T> holds element e of W
// problems (W = 8 doubles or 16 floats with AVX-512, 4 / 8 with AVX), and
// the solvers' generic templates (View<T, S> with any T) run unchanged on
// it, every operation on all W problems at once. Nothing per problem is then
// left scalar: the sparse products, the cone projections, the equilibration
// and the factorization all take full vectors, where one problem alone
// fills a vector only in its dense loops.
//
// What cannot be written generically are the data-dependent branches: here
// a comparison gives a LaneMask, `select_of` chooses per lane, and the
// functions that branch (project_soc3, the Cholesky pivot test) have lane
// overloads. The control flow of a solve (which lanes stopped, and why) is
// the lane driver's (qp_admm_lanes.h).
#pragma once

#if defined(__CUDACC__)
#error "solvers/lanes.h is host-only (the GPU runs one problem per thread instead)"
#endif

#include <immintrin.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <new>

#include "solvers/view.h"

IMPULSE_NAMESPACE_BEGIN

// bytes of one lane vector: the widest this compilation targets (or
// IMPULSE_LANE_BYTES = 16, 32, 64 where that is supported)
#if !defined(IMPULSE_LANE_BYTES)
#if defined(__AVX512F__)
#define IMPULSE_LANE_BYTES 64
#elif defined(__AVX__)
#define IMPULSE_LANE_BYTES 32
#else
#define IMPULSE_LANE_BYTES 16
#endif
#endif
constexpr int kLaneBytes = IMPULSE_LANE_BYTES;

namespace detail {
template <class T>
struct LaneIntOf;
template <>
struct LaneIntOf<float> {
  using type = int32_t;
};
template <>
struct LaneIntOf<double> {
  using type = int64_t;
};
}  // namespace detail

// The allocator of the lane solvers' host buffers: an ordinary aligned
// new/delete, but a type of the solvers' namespace, so that a std::vector of
// lanes or of plain numbers compiled for one instruction set
// (host/batch/lane_solve.cc) is its own instantiation, never the baseline's.
template <class T>
struct LaneAllocator {
  using value_type = T;
  LaneAllocator() = default;
  template <class U>
  LaneAllocator(const LaneAllocator<U>&) {}
  T* allocate(size_t count) {
    return static_cast<T*>(::operator new(count * sizeof(T), std::align_val_t(alignof(T))));
  }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(alignof(T))); }
  template <class U>
  bool operator==(const LaneAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const LaneAllocator<U>&) const { return false; }
};

// Per-lane truth values: all bits set (true) or clear (false) per lane.
template <class T>
struct LaneMask {
  using I = typename detail::LaneIntOf<T>::type;
  typedef I V __attribute__((vector_size(kLaneBytes)));
  static constexpr int W = kLaneBytes / int(sizeof(T));
  V v;
  static LaneMask none() { return LaneMask{V{}}; }
  // the first `count` lanes true
  static LaneMask first(int count) {
    LaneMask r = none();
    for (int l = 0; l < W && l < count; ++l) r.v[l] = -1;
    return r;
  }
  bool operator[](int l) const { return v[l] != 0; }
  void set(int l, bool on) { v[l] = on ? -1 : 0; }
  bool any() const {
    I acc = 0;
    for (int l = 0; l < W; ++l) acc |= v[l];
    return acc != 0;
  }
  LaneMask operator&(LaneMask o) const { return LaneMask{v & o.v}; }
  LaneMask operator|(LaneMask o) const { return LaneMask{v | o.v}; }
  LaneMask operator!() const { return LaneMask{~v}; }
  LaneMask& operator&=(LaneMask o) { v &= o.v; return *this; }
  LaneMask& operator|=(LaneMask o) { v |= o.v; return *this; }
};

template <class T>
struct Lanes {
  typedef T V __attribute__((vector_size(kLaneBytes)));
  static constexpr int W = kLaneBytes / int(sizeof(T));
  V v;
  Lanes() = default;
  // broadcast (implicit, as the generic code writes T(0), T(1e-30), ...)
  Lanes(T s) : v(V{} + s) {}
  static Lanes of(V x) {
    Lanes r;
    r.v = x;
    return r;
  }
  T operator[](int l) const { return v[l]; }
  void set(int l, T s) { v[l] = s; }

  Lanes operator-() const { return of(-v); }
  Lanes& operator+=(Lanes o) { v += o.v; return *this; }
  Lanes& operator-=(Lanes o) { v -= o.v; return *this; }
  Lanes& operator*=(Lanes o) { v *= o.v; return *this; }
  Lanes& operator/=(Lanes o) { v /= o.v; return *this; }
  friend Lanes operator+(Lanes a, Lanes b) { return of(a.v + b.v); }
  friend Lanes operator-(Lanes a, Lanes b) { return of(a.v - b.v); }
  friend Lanes operator*(Lanes a, Lanes b) { return of(a.v * b.v); }
  friend Lanes operator/(Lanes a, Lanes b) { return of(a.v / b.v); }
  friend LaneMask<T> operator<(Lanes a, Lanes b) { return LaneMask<T>{a.v < b.v}; }
  friend LaneMask<T> operator<=(Lanes a, Lanes b) { return LaneMask<T>{a.v <= b.v}; }
  friend LaneMask<T> operator>(Lanes a, Lanes b) { return LaneMask<T>{a.v > b.v}; }
  friend LaneMask<T> operator>=(Lanes a, Lanes b) { return LaneMask<T>{a.v >= b.v}; }
  friend LaneMask<T> operator==(Lanes a, Lanes b) { return LaneMask<T>{a.v == b.v}; }
};

// the lane overloads of config.h's helpers (more specialized, so chosen
// wherever the generic templates are called with Lanes)
template <class T>
inline Lanes<T> select_of(LaneMask<T> c, Lanes<T> a, Lanes<T> b) {
  return Lanes<T>::of(c.v ? a.v : b.v);
}
template <class T>
inline Lanes<T> max_of(Lanes<T> a, Lanes<T> b) {
  return Lanes<T>::of(a.v > b.v ? a.v : b.v);
}
template <class T>
inline Lanes<T> min_of(Lanes<T> a, Lanes<T> b) {
  return Lanes<T>::of(a.v < b.v ? a.v : b.v);
}
template <class T>
inline Lanes<T> abs_of(Lanes<T> a) {
  return Lanes<T>::of(a.v < 0 ? -a.v : a.v);
}
inline Lanes<double> sqrt_of(Lanes<double> a) {
#if IMPULSE_LANE_BYTES == 64
  return Lanes<double>::of(_mm512_sqrt_pd(a.v));
#elif IMPULSE_LANE_BYTES == 32
  return Lanes<double>::of(_mm256_sqrt_pd(a.v));
#else
  return Lanes<double>::of(_mm_sqrt_pd(a.v));
#endif
}
inline Lanes<float> sqrt_of(Lanes<float> a) {
#if IMPULSE_LANE_BYTES == 64
  return Lanes<float>::of(_mm512_sqrt_ps(a.v));
#elif IMPULSE_LANE_BYTES == 32
  return Lanes<float>::of(_mm256_sqrt_ps(a.v));
#else
  return Lanes<float>::of(_mm_sqrt_ps(a.v));
#endif
}
// ≈ 1/√a to about 28 bits (AVX-512: the 14-bit estimate and one Newton
// step, a few cycles where a square root and a division take ~30), for
// quantities that are heuristics anyway (the equilibration's factors)
template <class T>
inline Lanes<T> rsqrt_approx(Lanes<T> a) {
#if IMPULSE_LANE_BYTES == 64
  Lanes<T> y;
  if constexpr (sizeof(T) == 8)
    y.v = _mm512_rsqrt14_pd(a.v);
  else
    y.v = _mm512_rsqrt14_ps(a.v);
  return y * (Lanes<T>(T(1.5)) - Lanes<T>(T(0.5)) * a * y * y);
#else
  return Lanes<T>(T(1)) / sqrt_of(a);
#endif
}
template <class T>
inline Lanes<T> log_of(Lanes<T> a) {  // only at checks: lane by lane
  Lanes<T> r;
  for (int l = 0; l < Lanes<T>::W; ++l) r.v[l] = std::log(a.v[l]);
  return r;
}
// x·0 is 0 for a finite x and NaN otherwise
template <class T>
inline LaneMask<T> is_finite(Lanes<T> a) {
  return LaneMask<T>{a.v * T(0) == T(0)};
}

// project (t, u1, u2) onto {‖u‖ ≤ t} lane by lane: cones.h's project_soc3
// with its two early returns as selects (the same formulas in each lane).
template <class T>
inline void project_soc3(Lanes<T>& t, Lanes<T>& u1, Lanes<T>& u2) {
  const Lanes<T> nu = sqrt_of(u1 * u1 + u2 * u2);
  const LaneMask<T> inside = nu <= t, polar = nu <= -t;
  const Lanes<T> a = T(0.5) * (t + nu);
  const Lanes<T> k = a / nu;  // unused (and maybe not finite) where nu = 0: inside or polar
  t = select_of(inside, t, select_of(polar, Lanes<T>(T(0)), a));
  u1 = select_of(inside, u1, select_of(polar, Lanes<T>(T(0)), u1 * k));
  u2 = select_of(inside, u2, select_of(polar, Lanes<T>(T(0)), u2 * k));
}

// Storage of one lane group: element e of every lane at p[e] (a View with
// this stride is never matched by the UnitStride overloads, whose scalar
// fixed-size code branches per element).
struct LaneStride {
  IMPULSE_HD int operator()(int i) const { return i; }
};
template <class T>
inline View<Lanes<T>, LaneStride> lane_view(Lanes<T>* p) {
  return View<Lanes<T>, LaneStride>{p, LaneStride{}};
}

// Cholesky of K (n x n row-major, lower triangle read) in every lane, in
// cholesky_in_place's storage (L below the diagonal, Lᵀ mirrored above,
// 1/L_ii on the diagonal), so cholesky_solve_in_place applies. A lane whose
// pivot is not a positive finite number is marked in the result; its pivot
// is replaced by 1, so that the other lanes go on (its factor is garbage).
// Four rows at a time below each pivot: one load of row j's entries serves
// four independent dot products.
template <class T>
inline LaneMask<T> cholesky_lanes(int n, View<Lanes<T>, LaneStride> Kv) {
  using L = Lanes<T>;
  L* __restrict__ K = Kv.p;
  LaneMask<T> failed = LaneMask<T>::none();
  for (int j = 0; j < n; ++j) {
    const L* __restrict__ rj = K + j * n;
    L d = rj[j];
    for (int k = 0; k < j; ++k) d -= rj[k] * rj[k];
    const LaneMask<T> bad = (!(d > L(T(0)))) | (!is_finite(d));
    failed |= bad;
    d = select_of(bad, L(T(1)), d);
    const L inv = L(T(1)) / sqrt_of(d);
    K[j * n + j] = inv;
    int i = j + 1;
    for (; i + 4 <= n; i += 4) {
      L* __restrict__ r0 = K + i * n;
      L* __restrict__ r1 = r0 + n;
      L* __restrict__ r2 = r1 + n;
      L* __restrict__ r3 = r2 + n;
      L a0 = r0[j], a1 = r1[j], a2 = r2[j], a3 = r3[j];
      for (int k = 0; k < j; ++k) {
        const L c = rj[k];
        a0 -= r0[k] * c;
        a1 -= r1[k] * c;
        a2 -= r2[k] * c;
        a3 -= r3[k] * c;
      }
      r0[j] = a0 * inv;
      r1[j] = a1 * inv;
      r2[j] = a2 * inv;
      r3[j] = a3 * inv;
    }
    for (; i < n; ++i) {
      L* __restrict__ ri = K + i * n;
      L a = ri[j];
      for (int k = 0; k < j; ++k) a -= ri[k] * rj[k];
      ri[j] = a * inv;
    }
  }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < i; ++j) K[j * n + i] = K[i * n + j];
  return failed;
}

// Solve L Lᵀ x = r in place with cholesky_lanes' factor (the lane overload
// of cholesky_solve_in_place). Both sweeps in dot form on rows (the forward
// one on L below the diagonal, the backward one on the mirrored Lᵀ above
// it), four rows per pass: one load of a solved entry serves four running
// sums kept in registers, and nothing is stored but the solution (the
// column-oriented axpy form stores every entry it touches).
template <class T>
inline void cholesky_solve_in_place(int n, View<const Lanes<T>, LaneStride> Lv,
                                    View<Lanes<T>, LaneStride> rv) {
  using L = Lanes<T>;
  const L* __restrict__ K = Lv.p;
  L* __restrict__ r = rv.p;
  // forward: y_i = (r_i − Σ_{k<i} L_ik y_k) / L_ii
  int i0 = 0;
  for (; i0 + 4 <= n; i0 += 4) {
    const L* __restrict__ k0 = K + i0 * n;
    const L* __restrict__ k1 = k0 + n;
    const L* __restrict__ k2 = k1 + n;
    const L* __restrict__ k3 = k2 + n;
    L a0 = r[i0], a1 = r[i0 + 1], a2 = r[i0 + 2], a3 = r[i0 + 3];
    for (int k = 0; k < i0; ++k) {
      const L c = r[k];
      a0 -= k0[k] * c;
      a1 -= k1[k] * c;
      a2 -= k2[k] * c;
      a3 -= k3[k] * c;
    }
    a0 *= k0[i0];
    a1 = (a1 - k1[i0] * a0) * k1[i0 + 1];
    a2 = (a2 - k2[i0] * a0 - k2[i0 + 1] * a1) * k2[i0 + 2];
    a3 = (a3 - k3[i0] * a0 - k3[i0 + 1] * a1 - k3[i0 + 2] * a2) * k3[i0 + 3];
    r[i0] = a0, r[i0 + 1] = a1, r[i0 + 2] = a2, r[i0 + 3] = a3;
  }
  for (int i = i0; i < n; ++i) {
    const L* __restrict__ ki = K + i * n;
    L a = r[i];
    for (int k = 0; k < i; ++k) a -= ki[k] * r[k];
    r[i] = a * ki[i];
  }
  // backward: x_i = (y_i − Σ_{k>i} L_ki x_k) / L_ii, L_ki mirrored at row i
  int i1 = n;
  for (; i1 - 4 >= 0; i1 -= 4) {
    const int b = i1 - 4;
    const L* __restrict__ k0 = K + b * n;
    const L* __restrict__ k1 = k0 + n;
    const L* __restrict__ k2 = k1 + n;
    const L* __restrict__ k3 = k2 + n;
    L a0 = r[b], a1 = r[b + 1], a2 = r[b + 2], a3 = r[b + 3];
    for (int k = i1; k < n; ++k) {
      const L c = r[k];
      a0 -= k0[k] * c;
      a1 -= k1[k] * c;
      a2 -= k2[k] * c;
      a3 -= k3[k] * c;
    }
    a3 *= k3[b + 3];
    a2 = (a2 - k2[b + 3] * a3) * k2[b + 2];
    a1 = (a1 - k1[b + 3] * a3 - k1[b + 2] * a2) * k1[b + 1];
    a0 = (a0 - k0[b + 3] * a3 - k0[b + 2] * a2 - k0[b + 1] * a1) * k0[b];
    r[b] = a0, r[b + 1] = a1, r[b + 2] = a2, r[b + 3] = a3;
  }
  for (int i = i1 - 1; i >= 0; --i) {
    const L* __restrict__ ki = K + i * n;
    L a = r[i];
    for (int k = i + 1; k < n; ++k) a -= ki[k] * r[k];
    r[i] = a * ki[i];
  }
}

// out = M v for a symmetric M (the lane overload of dense_symv): rows in dot
// form, four at a time (one load of v_j for four sums in registers)
template <class T>
inline void dense_symv(int n, View<const Lanes<T>, LaneStride> Mv, View<const Lanes<T>, LaneStride> vv,
                       View<Lanes<T>, LaneStride> ov) {
  using L = Lanes<T>;
  const L* __restrict__ M = Mv.p;
  const L* __restrict__ v = vv.p;
  L* __restrict__ o = ov.p;
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    const L* __restrict__ m0 = M + i * n;
    const L* __restrict__ m1 = m0 + n;
    const L* __restrict__ m2 = m1 + n;
    const L* __restrict__ m3 = m2 + n;
    L a0(T(0)), a1(T(0)), a2(T(0)), a3(T(0));
    for (int j = 0; j < n; ++j) {
      const L c = v[j];
      a0 += m0[j] * c;
      a1 += m1[j] * c;
      a2 += m2[j] * c;
      a3 += m3[j] * c;
    }
    o[i] = a0, o[i + 1] = a1, o[i + 2] = a2, o[i + 3] = a3;
  }
  for (; i < n; ++i) {
    L a(T(0));
    for (int j = 0; j < n; ++j) a += M[i * n + j] * v[j];
    o[i] = a;
  }
}

// out_j = c·D_j·max_i |M_ij|·D_i for a symmetric M (the lane overload of
// dense_col_absmax_scaled): as row norms, four rows at a time with their
// running maxima in registers
template <class T>
inline void dense_col_absmax_scaled(int n, View<const Lanes<T>, LaneStride> Mv,
                                    View<const Lanes<T>, LaneStride> Dv, Lanes<T> c,
                                    View<Lanes<T>, LaneStride> ov) {
  using L = Lanes<T>;
  const L* __restrict__ M = Mv.p;
  const L* __restrict__ D = Dv.p;
  int j = 0;
  for (; j + 4 <= n; j += 4) {
    const L* __restrict__ m0 = M + j * n;
    const L* __restrict__ m1 = m0 + n;
    const L* __restrict__ m2 = m1 + n;
    const L* __restrict__ m3 = m2 + n;
    L a0(T(0)), a1(T(0)), a2(T(0)), a3(T(0));
    for (int i = 0; i < n; ++i) {
      const L di = D[i];
      a0 = max_of(a0, abs_of(m0[i]) * di);
      a1 = max_of(a1, abs_of(m1[i]) * di);
      a2 = max_of(a2, abs_of(m2[i]) * di);
      a3 = max_of(a3, abs_of(m3[i]) * di);
    }
    ov.p[j] = a0 * (c * D[j]);
    ov.p[j + 1] = a1 * (c * D[j + 1]);
    ov.p[j + 2] = a2 * (c * D[j + 2]);
    ov.p[j + 3] = a3 * (c * D[j + 3]);
  }
  for (; j < n; ++j) {
    const L* __restrict__ row = M + j * n;
    L a(T(0));
    for (int i = 0; i < n; ++i) a = max_of(a, abs_of(row[i]) * D[i]);
    ov.p[j] = a * (c * D[j]);
  }
}

IMPULSE_NAMESPACE_END  // namespace impulse
