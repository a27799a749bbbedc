// Anderson acceleration of the ADMM iteration (type II, Walker and Ni 2011;
// as SCS 3 and the Anderson-accelerated OSQP variants use it). The ADMM
// iteration is a fixed-point map u ← F(u) of the state u = (x, z, y) (N = n +
// 2m numbers). After every step, with f = F(u_in) and g = f − u_in, the last
// `mem` differences ΔF, ΔG of f and g give
//   γ = argmin ‖g − ΔG γ‖² (+ a 1e-10 relative Tikhonov term),  u ← f − ΔF γ,
// which replaces the iterate the next step starts from. The step's own
// output f is what the solver checks (residuals, certificates, the answer):
// acceleration only chooses where the next step starts.
//
// On the recorded ContactNets QPs at eps 1e-6 it cuts the mean iterations 4x
// (gt) and 2x (train). It is used only on problems without second-order
// cones: on the Anitescu QPs (3-D cones) it made some problems fail that
// converge without it. The history is cleared when ρ changes (F changes).
//
// Generic in the element type V: T for one problem, Lanes<T> for a lane
// group, where every operation is per lane and a lane's history is cleared
// on its own (reset with a per-lane mask). Host and device; no allocation:
// the caller carves qp_anderson_size(n, m, mem) elements.
#pragma once

#include "solvers/config.h"
#include "solvers/view.h"

IMPULSE_NAMESPACE_BEGIN

constexpr int kQpAndersonMax = 8;  // the most differences kept (QpSettings::anderson)

IMPULSE_HD int qp_anderson_round(int k) { return (k + 15) & ~15; }
IMPULSE_HD int qp_anderson_size(int n, int m, int mem) {
  if (mem <= 0) return 0;
  const int N = n + 2 * m;
  return 4 * qp_anderson_round(N) + 2 * mem * qp_anderson_round(N) + qp_anderson_round(mem * mem) +
         qp_anderson_round(mem) + qp_anderson_round(1);
}

namespace detail {
// out_t = v · d_t for the K slots d_t = d + t·Nr (Nr a multiple of 16, v and
// the slots zero-padded to Nr). Generic: kC partial sums per slot.
template <int K, class V>
IMPULSE_HD void qp_aa_dots(const V* __restrict__ v, const V* __restrict__ d, int Nr, V* out) {
  constexpr int kC = sizeof(V) <= 8 ? 4 : 1;
  V a[K][kC];
  for (int t = 0; t < K; ++t)
    for (int l = 0; l < kC; ++l) a[t][l] = V(0);
  for (int i = 0; i < Nr; i += kC)
    for (int t = 0; t < K; ++t)
      for (int l = 0; l < kC; ++l) a[t][l] += v[i + l] * d[t * Nr + i + l];
  for (int t = 0; t < K; ++t) {
    V r = a[t][0];
    for (int l = 1; l < kC; ++l) r += a[t][l];
    out[t] = r;
  }
}
#if defined(__GNUC__) && !defined(__CUDA_ARCH__)
// host scalars: the partial sums as 32-byte vectors, two per slot (written as
// arrays the sums went to the stack: an Anderson step cost twice an ADMM step)
template <int K, class T>
inline void qp_aa_dots_vec(const T* __restrict__ v, const T* __restrict__ d, int Nr, T* out) {
  typedef T vec __attribute__((vector_size(32)));
  constexpr int L = 32 / int(sizeof(T));
  vec a0[K], a1[K];
  for (int t = 0; t < K; ++t) a0[t] = vec{}, a1[t] = vec{};
  for (int i = 0; i < Nr; i += 2 * L) {
    vec v0, v1;
    __builtin_memcpy(&v0, v + i, sizeof(vec));
    __builtin_memcpy(&v1, v + i + L, sizeof(vec));
    for (int t = 0; t < K; ++t) {
      vec d0, d1;
      __builtin_memcpy(&d0, d + t * Nr + i, sizeof(vec));
      __builtin_memcpy(&d1, d + t * Nr + i + L, sizeof(vec));
      a0[t] += v0 * d0;
      a1[t] += v1 * d1;
    }
  }
  for (int t = 0; t < K; ++t) {
    const vec s = a0[t] + a1[t];
    T r = s[0];
    for (int l = 1; l < L; ++l) r += s[l];
    out[t] = r;
  }
}
template <int K>
inline void qp_aa_dots(const double* __restrict__ v, const double* __restrict__ d, int Nr, double* out) {
  qp_aa_dots_vec<K>(v, d, Nr, out);
}
template <int K>
inline void qp_aa_dots(const float* __restrict__ v, const float* __restrict__ d, int Nr, float* out) {
  qp_aa_dots_vec<K>(v, d, Nr, out);
}
#endif
}  // namespace detail

template <class V, class S>
struct QpAnderson {
  // contiguous storage (UnitStride or LaneStride views), every vector padded
  // with zeros to Nr = round(N): dF and dG hold `mem` slots of Nr
  V *f_prev, *g_prev, *u_in, *f, *dF, *dG, *gram, *rhs, *valid;
  int n = 0, m = 0, N = 0, Nr = 0, mem = 0;
  int count = 0, next = 0;  // slots holding differences (for every lane), the next one to write
  bool any_prev = false;    // a step was taken since start(): f_prev, g_prev hold it
  // independent partial sums per product: scalars 4 (the products then
  // vectorize), lane groups 1 (each element already is a vector)
  static constexpr int kC = sizeof(V) <= 8 ? 4 : 1;

  IMPULSE_HD static QpAnderson carve(View<V, S> base, int n, int m, int mem) {
    QpAnderson a;
    a.n = n, a.m = m, a.N = n + 2 * m, a.Nr = qp_anderson_round(a.N), a.mem = mem;
    V* p = &base[0];
    int o = 0;
    auto next = [&](int len) {
      V* v = p + o;
      o += qp_anderson_round(len);
      return v;
    };
    a.f_prev = next(a.N);
    a.g_prev = next(a.N);
    a.u_in = next(a.N);
    a.f = next(a.N);
    a.dF = next(mem * a.Nr);
    a.dG = next(mem * a.Nr);
    a.gram = next(mem * mem);
    a.rhs = next(mem);
    a.valid = next(1);
    return a;
  }

  // f ← (x, z, y)
  template <class SX, class SZ>
  IMPULSE_HD void gather(View<V, SX> x, View<V, SZ> z, View<V, SX> y, V* __restrict__ out) const {
    const V* __restrict__ xp = &x[0];
    const V* __restrict__ zp = &z[0];
    const V* __restrict__ yp = &y[0];
    for (int i = 0; i < n; ++i) out[i] = xp[i];
    for (int i = 0; i < m; ++i) out[n + i] = zp[i];
    for (int i = 0; i < m; ++i) out[n + m + i] = yp[i];
  }

  // a fresh history at the current iterate
  template <class SX, class SZ>
  IMPULSE_HD void start(View<V, SX> x, View<V, SZ> z, View<V, SX> y) {
    gather(x, z, y, u_in);
    for (int i = N; i < Nr; ++i) f_prev[i] = g_prev[i] = u_in[i] = f[i] = V(0);
    for (int i = 0; i < mem * Nr; ++i) dF[i] = dG[i] = V(0);
    count = 0, next = 0;
    any_prev = false;
    valid[0] = V(0);
  }

  // clears the history of the lanes where drop is 1 (0 elsewhere; a scalar
  // 1 clears it all): their differences are zeroed, so they take γ = 0 (the
  // plain step) until new ones arrive, and their next difference is skipped
  IMPULSE_HD void reset(V drop) {
    const V keep = V(1) - drop;
    for (int i = 0; i < mem * Nr; ++i) dF[i] = dF[i] * keep, dG[i] = dG[i] * keep;
    for (int i = 0; i < mem * mem; ++i) gram[i] = gram[i] * keep;
    for (int i = 0; i < mem; ++i) rhs[i] = rhs[i] * keep;
    valid[0] = valid[0] * keep;
  }

  // the new difference into slot s, then the K slots' products with it
  // (the Gram matrix's row s) and with the new g (the right-hand side)
  template <int K>
  IMPULSE_HD void record(int s, V ok) {
    V* __restrict__ dfs = dF + s * Nr;
    V* __restrict__ dgs = dG + s * Nr;
    V* __restrict__ gp_w = g_prev;
    V* __restrict__ fp_w = f_prev;
    const V* __restrict__ fv = f;
    const V* __restrict__ uv = u_in;
    IMPULSE_SIMD
    for (int i = 0; i < N; ++i) {
      const V g = fv[i] - uv[i];
      dgs[i] = (g - gp_w[i]) * ok;
      dfs[i] = (fv[i] - fp_w[i]) * ok;
      gp_w[i] = g;
      fp_w[i] = fv[i];
    }
    // the Gram matrix's row s (K products); the right-hand side by update:
    // with g = g_prev + dg, ΔG_tᵀg = (its last value) + ΔG_tᵀdg for the
    // other slots (a slot lives `mem` steps, so rounding cannot build up),
    // and one product for the new slot
    dots<K>(dgs, gram + s * mem);
    V r[1];
    detail::qp_aa_dots<1>(static_cast<const V*>(g_prev), static_cast<const V*>(dgs), Nr, r);
    for (int t = 0; t < K; ++t) {
      gram[t * mem + s] = gram[s * mem + t];
      if (t != s) rhs[t] += gram[s * mem + t];
    }
    rhs[s] = r[0];
  }
  // out_t = v · slot t of ΔG, t < K (v padded with zeros to Nr)
  template <int K>
  IMPULSE_HD void dots(const V* __restrict__ v, V* out) const {
    detail::qp_aa_dots<K>(v, static_cast<const V*>(dG), Nr, out);
  }
  // u = f − ΔF γ
  template <int K>
  IMPULSE_HD void extrapolate(const V* gm) {
    V c[K];
    for (int t = 0; t < K; ++t) c[t] = gm[t];
    const V* __restrict__ fv = f;
    const V* __restrict__ df = dF;
    V* __restrict__ u = u_in;
    IMPULSE_SIMD
    for (int i = 0; i < N; ++i) {
      V v = fv[i];
      for (int t = 0; t < K; ++t) v -= c[t] * df[t * Nr + i];
      u[i] = v;
    }
  }

  // After a step that left (x, z, y) = F(u_in): records the differences and
  // writes the accelerated iterate into (x, z, y) and u_in.
  template <class SX, class SZ>
  IMPULSE_HD void step(View<V, SX> x, View<V, SZ> z, View<V, SX> y) {
    gather(x, z, y, f);
    if (!any_prev) {  // the first step: nothing to difference yet
      for (int i = 0; i < N; ++i) g_prev[i] = f[i] - u_in[i], f_prev[i] = f[i], u_in[i] = f[i];
      any_prev = true;
      valid[0] = V(1);
      return;
    }
    const V ok = valid[0];
    const int s = next;
    if (count < mem) ++count;
    next = next + 1 == mem ? 0 : next + 1;
    switch (count) {  // a fixed count: the sums stay in registers
      case 1: record<1>(s, ok); break;
      case 2: record<2>(s, ok); break;
      case 3: record<3>(s, ok); break;
      case 4: record<4>(s, ok); break;
      case 5: record<5>(s, ok); break;
      case 6: record<6>(s, ok); break;
      case 7: record<7>(s, ok); break;
      default: record<8>(s, ok); break;
    }
    valid[0] = V(1);
    // γ: (ΔGᵀΔG + δI) γ = ΔGᵀg by Cholesky (count x count, per lane), δ =
    // 1e-10 of the largest diagonal entry; the factor in a local array
    V dmax = V(0);
    for (int t = 0; t < count; ++t) dmax = max_of(dmax, gram[t * mem + t]);
    const V reg = V(1e-10) * dmax + V(1e-30);
    V Lc[kQpAndersonMax][kQpAndersonMax], gm[kQpAndersonMax];
    for (int a = 0; a < count; ++a) {
      for (int b = 0; b <= a; ++b) {
        V v = gram[a * mem + b];
        for (int e = 0; e < b; ++e) v -= Lc[a][e] * Lc[b][e];
        if (a == b)
          Lc[a][a] = sqrt_of(max_of(v + reg, reg));
        else
          Lc[a][b] = v / Lc[b][b];
      }
    }
    for (int a = 0; a < count; ++a) {
      V v = rhs[a];
      for (int e = 0; e < a; ++e) v -= Lc[a][e] * gm[e];
      gm[a] = v / Lc[a][a];
    }
    for (int a = count - 1; a >= 0; --a) {
      V v = gm[a];
      for (int e = a + 1; e < count; ++e) v -= Lc[e][a] * gm[e];
      gm[a] = v / Lc[a][a];
    }
    switch (count) {
      case 1: extrapolate<1>(gm); break;
      case 2: extrapolate<2>(gm); break;
      case 3: extrapolate<3>(gm); break;
      case 4: extrapolate<4>(gm); break;
      case 5: extrapolate<5>(gm); break;
      case 6: extrapolate<6>(gm); break;
      case 7: extrapolate<7>(gm); break;
      default: extrapolate<8>(gm); break;
    }
    V* __restrict__ xp = &x[0];
    V* __restrict__ zp = &z[0];
    V* __restrict__ yp = &y[0];
    const V* __restrict__ u = u_in;
    for (int i = 0; i < n; ++i) xp[i] = u[i];
    for (int i = 0; i < m; ++i) zp[i] = u[n + i];
    for (int i = 0; i < m; ++i) yp[i] = u[n + m + i];
  }
};

IMPULSE_NAMESPACE_END  // namespace impulse
