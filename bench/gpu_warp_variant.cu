// Experimental: the batched conic-QP ADMM with one WARP per problem (issue 14), to
// be compared with the thread-per-problem kernel (kernels/qp_kernels.cu) under the
// GPU simulator. Not part of the library: built only with -DIMPULSE_GPU_WARP_VARIANT=ON
// (target impulse_gpu_warp_variant) or by bench/gpu_counts.sh.
//
// The algorithm is qp_admm_solve's (solvers/qp_admm.h) as the thread kernel runs it
// (explicit K⁻¹, no dense iteration, fixed check schedule): the same input checks,
// Ruiz equilibration, per-row ρ, iteration, residual checks, infeasibility tests,
// adaptive ρ and finish, with the work spread over the 32 lanes:
//   - lane j owns variable j (n ≤ 32): x_j, q_j, σ_j, D_j in registers, and column j
//     of K (then K⁻¹, by in-register Gauss-Jordan with shuffles) in 32 registers; K is
//     formed in shared memory from A's nonzeros (the pattern's pairs, row by row);
//   - A is held dense in shared memory (m × (n+1), odd stride: row- and column-wise
//     accesses are free of bank conflicts), with b, z, y, ρ, 1/ρ, E and scratch rows;
//   - the x-step K⁻¹·rhs is 32 FMAs per lane with rhs broadcast by shuffles; Ax and
//     Aᵀv are a lane per row / per column over shared memory; the projections take a
//     lane per zero/nonnegative row and per 3-row cone; norms and dot products are
//     shuffle reductions. P stays in global memory (read coalesced at set-up and at
//     the checks).
// Sums run in the serial code's order where it is cheap (the products with K⁻¹, A,
// Aᵀ, P), so the iterates agree with the CPU's to rounding.
//
// Blocks hold one warp by default (--warps-per-block 1 to 4). Under GPGPU-Sim (functional
// mode) blocks of 4 warps gave wrong shuffle results in warps 1-3 (their P + δI tested
// not PSD) while warp 0 and blocks of one warp agree with the CPU: a simulator fault in
// shuffles of multi-warp blocks, so the counts are taken with blocks of one warp.
//
//   gpu_warp_variant --in BATCH.npz [--eps 1e-5] [--max-iter N] [--warps-per-block W] [--thread]
//                    [--no-check-input] [--scaling-iters K]
// solves the batch (float32) with the warp kernel, solves it on the CPU (one problem
// at a time, the kernels' check schedule) and compares them problem by problem
// (status, input fault, iterations within one check interval, x, y, objective and
// value to 1e-3 relative, as tests/test_gpu.cc's float test); --thread also runs the
// thread-per-problem kernel on the batch (for counts side by side). A warm start is
// taken from the file's x0, y0 when it has them. Exit status 1 on any disagreement.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "host/batch/qp_batch.h"
#include "host/batch/qp_file.h"
#include "solvers/qp_admm.h"

namespace impulse {
namespace warpvar {

constexpr int kW = 32;
constexpr unsigned kFull = 0xffffffffu;

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "gpu_warp_variant: CUDA error in %s: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
  }
}

// The duality-gap test (QpSettings::check_gap, QpCheck::gap), where the solver has it:
// followed when present, so that this file matches the solver it is built with.
template <class S, class = void>
struct HasGap : std::false_type {};
template <class S>
struct HasGap<S, std::void_t<decltype(std::declval<S&>().check_gap)>> : std::true_type {};
template <class S>
__device__ __forceinline__ bool gap_on(const S& st) {
  if constexpr (HasGap<S>::value) return st.check_gap;
  return false;
}
template <class C, class T>
__device__ __forceinline__ auto set_gap(C& c, T gap, T eps, int) -> decltype(c.gap = gap, void()) {
  c.gap = gap;
  c.eps_gap = eps;
}
template <class C, class T>
__device__ __forceinline__ void set_gap(C&, T, T, long) {}
template <class C, class T>
__device__ __forceinline__ auto gap_within(const C& c, T f, int) -> decltype(c.gap <= c.eps_gap) {
  return c.gap <= f * c.eps_gap;
}
template <class C, class T>
__device__ __forceinline__ bool gap_within(const C&, T, long) { return true; }

// Warp shuffles as plain PTX. CUDA 13's __shfl_*_sync compile to the form with a
// predicate output (shfl.sync.idx.b32 d|p, ...), whose value GPGPU-Sim (4.2, as patched
// in ../shared/tools/gpgpu-sim) never writes: every such shuffle reads 0 there ("reading
// undefined register"). The form without the predicate is the same instruction on a
// device and simulates correctly.
__device__ __forceinline__ unsigned shfl_idx_b32(unsigned v, int src) {
  unsigned r;
  asm volatile("shfl.sync.idx.b32 %0, %1, %2, 31, -1;" : "=r"(r) : "r"(v), "r"(src));
  return r;
}
__device__ __forceinline__ unsigned shfl_xor_b32(unsigned v, int mask) {
  unsigned r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 31, -1;" : "=r"(r) : "r"(v), "r"(mask));
  return r;
}
__device__ __forceinline__ float shfl_idx(float v, int src) {
  return __uint_as_float(shfl_idx_b32(__float_as_uint(v), src));
}
__device__ __forceinline__ float shfl_xor(float v, int mask) {
  return __uint_as_float(shfl_xor_b32(__float_as_uint(v), mask));
}
__device__ __forceinline__ double shfl_idx(double v, int src) {
  return __hiloint2double(int(shfl_idx_b32(unsigned(__double2hiint(v)), src)),
                          int(shfl_idx_b32(unsigned(__double2loint(v)), src)));
}
__device__ __forceinline__ double shfl_xor(double v, int mask) {
  return __hiloint2double(int(shfl_xor_b32(unsigned(__double2hiint(v)), mask)),
                          int(shfl_xor_b32(unsigned(__double2loint(v)), mask)));
}

template <class T>
__device__ __forceinline__ T wmax(T v) {
  for (int o = 16; o > 0; o >>= 1) v = max_of(v, shfl_xor(v, o));
  return v;
}
template <class T>
__device__ __forceinline__ T wsum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += shfl_xor(v, o);
  return v;
}

// the shared-memory rows of one problem (T elements), carved per warp
template <class T>
struct Smem {
  T *A, *xs, *xts, *ds, *tn;                       // A: m x lda; n-sized: 32 each
  T *z, *v, *y, *yp, *rho, *rinv, *b, *e, *tm;     // m-sized
  T* K;                                            // K while it is formed: 32 x 33
  static constexpr int ldk = kW + 1;
  __device__ static int lda(int n) { return n % 2 == 0 ? n + 1 : n; }
  __host__ __device__ static int size(int n, int m) {
    const int l = n % 2 == 0 ? n + 1 : n;
    return m * l + 4 * kW + 9 * m + kW * ldk;
  }
  __device__ static Smem carve(T* base, int n, int m) {
    Smem s;
    T* p = base;
    s.A = p, p += m * lda(n);
    s.xs = p, p += kW;
    s.xts = p, p += kW;
    s.ds = p, p += kW;
    s.tn = p, p += kW;
    s.z = p, p += m;
    s.v = p, p += m;
    s.y = p, p += m;
    s.yp = p, p += m;
    s.rho = p, p += m;
    s.rinv = p, p += m;
    s.b = p, p += m;
    s.e = p, p += m;
    s.tm = p, p += m;
    s.K = p, p += kW * ldk;
    return s;
  }
};

struct Problem {  // one problem's global arrays (problem-contiguous layout)
  int n, m, nnz;
  ConeSpec cones;
};

// K (lane j: column j in Kc) ← K⁻¹ by Gauss-Jordan without pivoting (SPD: every
// pivot is a Schur complement's diagonal, positive). False when a pivot is not
// positive or not finite (warp-uniform: the pivot is broadcast). Lanes ≥ n hold
// identity columns. Inverse = false: the elimination below the pivots only (the
// same pivots, about half the work), as a positive-definiteness test.
template <class T, bool Inverse = true>
__device__ __forceinline__ bool gj_inverse(T (&Kc)[kW], int lane) {
#pragma unroll
  for (int k = 0; k < kW; ++k) {
    const T d = shfl_idx(Kc[k], k);
    if (!(d > T(0)) || !is_finite(d)) return false;
    const T pinv = T(1) / d;
    const T rk = Kc[k] * pinv;
#pragma unroll
    for (int i = 0; i < kW; ++i) {
      if (i == k || (!Inverse && i < k)) continue;
      const T mik = shfl_idx(Kc[i], k);
      Kc[i] = lane == k ? -mik * pinv : Kc[i] - mik * rk;
    }
    Kc[k] = lane == k ? pinv : rk;
  }
  return true;
}

// Kc ← column `lane` of K = P + diag(σ) + Aᵀdiag(ρ)A (identity columns beyond n),
// then its inverse. K is formed in shared memory from A's nonzeros: for each row r of
// the pattern (L entries), lane b adds ρ_r·(A_ra·A_rb) to K[c_a][c_b] for every entry a,
// L steps a row (the nonzero pairs, in row order as qp_form_K adds them) instead of a
// dense m x n sweep.
template <class T>
__device__ bool factor(const Problem& pr, const int* __restrict__ row_ptr, const int* __restrict__ col,
                       const T* __restrict__ P, const Smem<T>& s, T sig, T (&Kc)[kW], int lane) {
  const int n = pr.n, m = pr.m, lda = Smem<T>::lda(n), ldk = Smem<T>::ldk;
  const bool own = lane < n;
  for (int i = 0; i < n; ++i)
    if (own) s.K[i * ldk + lane] = P[i * n + lane] + (i == lane ? sig : T(0));
  __syncwarp();
  for (int r = 0; r < m; ++r) {
    const int k0 = row_ptr[r], L = row_ptr[r + 1] - k0;  // L <= n <= 32
    const T rr = s.rho[r];
    const bool mine = lane < L;
    const int cb = mine ? col[k0 + lane] : 0;
    const T ab = mine ? s.A[r * lda + cb] : T(0);
    for (int a = 0; a < L; ++a) {
      const int ca = col[k0 + a];
      const T aa = s.A[r * lda + ca];
      if (mine) s.K[ca * ldk + cb] += rr * (aa * ab);
    }
    __syncwarp();
  }
#pragma unroll
  for (int i = 0; i < kW; ++i) Kc[i] = own && i < n ? s.K[i * ldk + lane] : (i == lane ? T(1) : T(0));
  __syncwarp();
  return gj_inverse(Kc, lane);
}

template <class T>
__device__ void set_rho(const Problem& pr, const Smem<T>& s, T rho, T eq_scale, T cscale, int lane) {
  const T c_inv = T(1) / cscale;
  for (int i = lane; i < pr.m; i += kW) {
    const T e = s.e[i];
    s.rho[i] = (i < pr.cones.n_zero ? rho * eq_scale : rho) * (e * e * c_inv);
    s.rinv[i] = T(1) / s.rho[i];
  }
  __syncwarp();
}

// out_r = (A v)_r for the rows of this lane, v in shared (n entries)
template <class T>
__device__ __forceinline__ T row_dot(const Smem<T>& s, int lda, int n, int r, const T* v) {
  T acc = T(0);
  for (int j = 0; j < n; ++j) acc += s.A[r * lda + j] * v[j];
  return acc;
}
// (Aᵀ w)_j for this lane's column j, w in shared (m entries)
template <class T>
__device__ __forceinline__ T col_dot(const Smem<T>& s, int lda, int m, int j, const T* w) {
  T acc = T(0);
  for (int r = 0; r < m; ++r) acc += s.A[r * lda + j] * w[r];
  return acc;
}
// (P v)_j, v in shared: P symmetric, so column j (coalesced over the lanes) in row order
template <class T>
__device__ __forceinline__ T p_dot(const T* __restrict__ P, int n, int j, const T* v) {
  T acc = T(0);
  for (int i = 0; i < n; ++i) acc += P[i * n + j] * v[i];
  return acc;
}

// at most 128 registers (16 resident warps per SM on sm_90; 141 unbounded, without spills
// at 128, with spills at 96)
template <class T>
__global__ void __launch_bounds__(4 * kW, 4) qp_admm_warp_kernel(int batch, Problem pr, const int* __restrict__ row_of,
                                    const int* __restrict__ row_ptr, const int* __restrict__ col,
                                    const T* __restrict__ Pg,
                                    const T* __restrict__ qg, const T* __restrict__ Ag,
                                    const T* __restrict__ bg, T* xg, T* yg, T* objective, T* value,
                                    T* prim_res_out, T* dual_res_out, int* status_out, int* fault_out,
                                    int* iterations_out, int* rho_updates_out, QpSettings<T> st,
                                    bool warm) {
  extern __shared__ unsigned char smem_raw[];
  const int lane = threadIdx.x & (kW - 1);
  const int wib = threadIdx.x / kW;
  const int k = blockIdx.x * (blockDim.x / kW) + wib;
  if (k >= batch) return;  // whole warps
  const int n = pr.n, m = pr.m, nnz = pr.nnz, lda = Smem<T>::lda(n);
  const ConeSpec cones = pr.cones;
  const Smem<T> s = Smem<T>::carve(reinterpret_cast<T*>(smem_raw) + size_t(wib) * Smem<T>::size(n, m), n, m);
  const T* __restrict__ P = Pg + size_t(k) * n * n;
  const T* __restrict__ A = Ag + size_t(k) * nnz;
  const bool own = lane < n;
  const T qj = own ? qg[size_t(k) * n + lane] : T(0);

  // ---- set-up: A dense into shared memory, b -------------------------------------
  for (int i = lane; i < m * lda; i += kW) s.A[i] = T(0);
  __syncwarp();
  for (int i = lane; i < nnz; i += kW) s.A[row_of[i] * lda + col[i]] = A[i];
  for (int r = lane; r < m; r += kW) s.b[r] = bg[size_t(k) * m + r];
  __syncwarp();

  QpInfo<T> info;
  T xj = T(0);
  T Kc[kW];
  auto finish_early = [&]() {  // x, y as they are; the info as set
    if (own) xg[size_t(k) * n + lane] = xj;
    for (int r = lane; r < m; r += kW) yg[size_t(k) * m + r] = s.y[r];
    if (lane == 0) {
      objective[k] = info.objective, value[k] = info.value;
      prim_res_out[k] = info.prim_res, dual_res_out[k] = info.dual_res;
      status_out[k] = int(info.status), fault_out[k] = int(info.fault);
      iterations_out[k] = info.iterations, rho_updates_out[k] = info.rho_updates;
    }
  };

  // ---- the input check (qp_check_input) ----------------------------------------
  if (st.check_input) {
    bool bad_p = false, bad_q = false, bad_a = false, bad_b = false;
    T amax = T(0), asym = T(0), dmax = T(1);
    for (int i = lane; i < n * n; i += kW) {
      const T v = P[i];
      bad_p |= !is_finite(v);
      amax = max_of(amax, abs_of(v));
      const int r = i / n, c = i % n;
      if (c < r) asym = max_of(asym, abs_of(v - P[c * n + r]));
      if (c == r) dmax = max_of(dmax, abs_of(v));
    }
    bad_q = own && !is_finite(qj);
    for (int i = lane; i < nnz; i += kW) bad_a |= !is_finite(A[i]);
    for (int r = lane; r < m; r += kW) bad_b |= !is_finite(s.b[r]);
    InputFault f = InputFault::kNone;
    if (__any_sync(kFull, bad_p))
      f = InputFault::kNonFiniteP;
    else if (__any_sync(kFull, bad_q))
      f = InputFault::kNonFiniteQ;
    else if (__any_sync(kFull, bad_a))
      f = InputFault::kNonFiniteA;
    else if (__any_sync(kFull, bad_b))
      f = InputFault::kNonFiniteB;
    else {
      amax = wmax(amax), asym = wmax(asym), dmax = wmax(dmax);
      const T sym_tol = T(1e3) * max_of(amax, T(1)) * (sizeof(T) == 4 ? T(1.2e-7) : T(2.3e-16));
      if (asym > sym_tol) {
        f = InputFault::kAsymmetricP;
      } else {
        // PSD up to psd_tol: P + shift·I must have positive pivots
        const T shift = st.psd_tol * dmax;
#pragma unroll
        for (int i = 0; i < kW; ++i) {
          if (own && i < n)
            Kc[i] = P[i * n + lane] + (i == lane ? shift : T(0));
          else
            Kc[i] = i == lane ? T(1) : T(0);
        }
        if (!gj_inverse<T, false>(Kc, lane)) f = InputFault::kNotPsdP;
      }
    }
    if (f != InputFault::kNone) {
      for (int r = lane; r < m; r += kW) s.y[r] = T(0);
      __syncwarp();
      info.fault = f;
      info.status = SolveStatus::kInvalidInput;
      finish_early();
      return;
    }
  }

  // ---- the initial iterate ------------------------------------------------------
  if (warm) {
    xj = own ? xg[size_t(k) * n + lane] : T(0);
    s.xs[lane] = xj;
    for (int r = lane; r < m; r += kW) s.y[r] = yg[size_t(k) * m + r];
    __syncwarp();
    for (int r = lane; r < m; r += kW) s.z[r] = row_dot(s, lda, n, r, s.xs);
  } else {
    for (int r = lane; r < m; r += kW) s.y[r] = T(0), s.z[r] = T(0);
  }
  __syncwarp();

  // ---- Ruiz equilibration (qp_equilibrate) ------------------------------------------
  T dj = T(1), cscale = T(1);
  for (int r = lane; r < m; r += kW) s.e[r] = T(1);
  s.ds[lane] = own ? T(1) : T(0);
  __syncwarp();
  const int iters = st.scaling_iters;
  for (int it = 0; it <= iters; ++it) {
    // column norms of c·D P D (dense_col_absmax_scaled: max over i of |P_ij|·D_i)
    T tn = T(0);
    if (own) {
      for (int i = 0; i < n; ++i) tn = max_of(tn, abs_of(P[i * n + lane]) * s.ds[i]);
      tn *= cscale * dj;
    }
    if (it > 0 || iters == 0) {
      s.tn[lane] = tn;
      __syncwarp();
      T mean = T(0);
      for (int j = 0; j < n; ++j) mean += s.tn[j];  // the serial order
      const T qn = wmax(own ? abs_of(qj) * dj : T(0)) * cscale;
      mean /= T(n);
      const T gamma = T(1) / detail::qp_limit_scaling(max_of(mean, qn));
      if (iters > 0) {
        cscale *= gamma;
        tn *= gamma;
      }
      __syncwarp();
    }
    if (it == iters) break;
    // column and row norms of E A D (qp_A_norms)
    T cn = T(0);
    if (own)
      for (int r = 0; r < m; ++r) cn = max_of(cn, (abs_of(s.A[r * lda + lane]) * dj) * s.e[r]);
    for (int r = lane; r < m; r += kW) {
      T rn = T(0);
      for (int j = 0; j < n; ++j) rn = max_of(rn, abs_of(s.A[r * lda + j]) * s.ds[j]);
      s.tm[r] = rn * s.e[r];
    }
    __syncwarp();
    for (int c = lane; c < cones.n_soc; c += kW) {  // one factor per cone
      const int r = cones.soc_begin() + 3 * c;
      const T v = max_of(s.tm[r], max_of(s.tm[r + 1], s.tm[r + 2]));
      s.tm[r] = s.tm[r + 1] = s.tm[r + 2] = v;
    }
    __syncwarp();
    if (own) dj *= T(1) / sqrt_of(detail::qp_limit_scaling(max_of(tn, cn)));
    for (int r = lane; r < m; r += kW) s.e[r] *= T(1) / sqrt_of(detail::qp_limit_scaling(s.tm[r]));
    s.ds[lane] = own ? dj : T(0);
    __syncwarp();
  }
  if (iters == 0) cscale = T(1);
  const T sig = own ? st.sigma / (cscale * dj * dj) : T(0);

  T rho = st.rho;
  set_rho(pr, s, rho, st.rho_eq_scale, cscale, lane);
  if (!factor(pr, row_ptr, col, P, s, sig, Kc, lane)) {
    info.status = SolveStatus::kNumericalError;
    finish_early();
    return;
  }

  // ---- the iteration (qp_admm_solve) ----------------------------------------------
  const T alpha = st.alpha, beta = T(1) - alpha;
  SolveStatus status = SolveStatus::kMaxIterations;
  detail::QpCheck<T> c;
  detail::QpSchedule<T> sc;
  sc.next_check = warm ? 1 : st.check_every;
  T xprev = T(0);
  int it = 0;
  const int soc0 = cones.soc_begin();
  for (it = 1; it <= st.max_iter; ++it) {
    const bool check = it == sc.next_check || it == st.max_iter ||
                       (st.adaptive_rho && it % st.adaptive_rho_interval == 0);
    if (check) {
      xprev = xj;
      for (int r = lane; r < m; r += kW) s.yp[r] = s.y[r];
    }
    // x-step: rhs = σ∘x − q + Aᵀ(ρ∘z − y), x̃ = K⁻¹ rhs
    for (int r = lane; r < m; r += kW) s.tm[r] = s.rho[r] * s.z[r] - s.y[r];
    __syncwarp();
    T rj = T(0);
    if (own) {
      rj = sig * xj - qj;
      for (int r = 0; r < m; ++r) rj += s.A[r * lda + lane] * s.tm[r];
    }
    T xt = T(0);
#pragma unroll
    for (int l = 0; l < kW; ++l) xt += Kc[l] * shfl_idx(rj, l);
    s.xts[lane] = xt;
    xj = own ? alpha * xt + beta * xj : T(0);
    __syncwarp();
    // rows: v = αAx̃ + (1−α)z
    for (int r = lane; r < m; r += kW) s.v[r] = alpha * row_dot(s, lda, n, r, s.xts) + beta * s.z[r];
    __syncwarp();
    // z ← Π_C(v + y/ρ), y ← y + ρ∘(v − z): a lane per zero / nonnegative row, per cone
    for (int u = lane; u < soc0 + cones.n_soc; u += kW) {
      if (u < cones.n_zero) {
        const T v = s.v[u], zn = s.b[u];
        s.y[u] += s.rho[u] * (v - zn);
        s.z[u] = zn;
      } else if (u < soc0) {
        const T v = s.v[u], zn = min_of(v + s.y[u] * s.rinv[u], s.b[u]);
        s.y[u] += s.rho[u] * (v - zn);
        s.z[u] = zn;
      } else {
        const int r = soc0 + 3 * (u - soc0);
        const T v0 = s.v[r], v1 = s.v[r + 1], v2 = s.v[r + 2];
        T t = s.b[r] - (v0 + s.y[r] * s.rinv[r]);
        T u1 = s.b[r + 1] - (v1 + s.y[r + 1] * s.rinv[r + 1]);
        T u2 = s.b[r + 2] - (v2 + s.y[r + 2] * s.rinv[r + 2]);
        project_soc3(t, u1, u2);
        const T z0 = s.b[r] - t, z1 = s.b[r + 1] - u1, z2 = s.b[r + 2] - u2;
        s.y[r] += s.rho[r] * (v0 - z0);
        s.y[r + 1] += s.rho[r + 1] * (v1 - z1);
        s.y[r + 2] += s.rho[r + 2] * (v2 - z2);
        s.z[r] = z0, s.z[r + 1] = z1, s.z[r + 2] = z2;
      }
    }
    __syncwarp();
    if (!check) continue;

    // ---- the check (qp_check_residuals) ----
    SolveStatus verdict = SolveStatus::kNotRun;
    s.xs[lane] = xj;
    __syncwarp();
    {
      T prim = T(0), axn = T(0), zn = T(0), spr = T(0), saxn = T(0), szn = T(0);
      for (int r = lane; r < m; r += kW) {
        const T ax = row_dot(s, lda, n, r, s.xs);
        s.tm[r] = ax;
        const T e = s.e[r];
        const T rr = abs_of(ax - s.z[r]), aax = abs_of(ax), zz = abs_of(s.z[r]);
        prim = max_of(prim, rr), axn = max_of(axn, aax), zn = max_of(zn, zz);
        spr = max_of(spr, e * rr), saxn = max_of(saxn, e * aax), szn = max_of(szn, e * zz);
      }
      T dual = T(0), pxn = T(0), atyn = T(0), qn = T(0), sdr = T(0), spxn = T(0), satyn = T(0), sqn = T(0);
      T xpx = T(0), qx = T(0), by = T(0);
      if (own) {
        const T px = p_dot(P, n, lane, s.xs);
        xpx = xj * px, qx = qj * xj;
        const T aty = col_dot(s, lda, m, lane, s.y);
        const T rr = abs_of(px + qj + aty), apx = abs_of(px), aaty = abs_of(aty), aq = abs_of(qj);
        dual = rr, pxn = apx, atyn = aaty, qn = aq;
        sdr = dj * rr, spxn = dj * apx, satyn = dj * aaty, sqn = dj * aq;
      }
      c.prim_res = wmax(prim), c.sp_res = wmax(spr), c.sax_norm = wmax(saxn), c.sz_norm = wmax(szn);
      c.dual_res = wmax(dual), c.sd_res = wmax(sdr), c.spx_norm = wmax(spxn), c.saty_norm = wmax(satyn);
      c.sq_norm = wmax(sqn);
      axn = wmax(axn), zn = wmax(zn), pxn = wmax(pxn), atyn = wmax(atyn), qn = wmax(qn);
      bool fin = is_finite(xj);
      for (int r = lane; r < m; r += kW) fin = fin && is_finite(s.y[r]);
      if (!is_finite(c.prim_res) || !is_finite(c.dual_res) || !__all_sync(kFull, fin)) {
        verdict = SolveStatus::kNumericalError;
      } else {
        c.eps_prim = st.eps_abs + st.eps_rel * max_of(axn, zn);
        c.eps_dual = st.eps_abs + st.eps_rel * max_of(max_of(pxn, atyn), qn);
        bool gap_ok = true;
        if (gap_on(st)) {  // |xᵀPx + qᵀx + bᵀy| <= eps_abs + eps_rel·max(|xᵀPx|, |qᵀx|, |bᵀy|)
          for (int r = lane; r < m; r += kW) by += s.y[r] == T(0) ? T(0) : s.b[r] * s.y[r];
          xpx = wsum(xpx), qx = wsum(qx), by = wsum(by);
          T gap = abs_of(xpx + qx + by);
          gap = gap == gap ? gap : T(1e30);
          const T eg = st.eps_abs + st.eps_rel * max_of(max_of(abs_of(xpx), abs_of(qx)), abs_of(by));
          set_gap(c, gap, eg, 0);
          gap_ok = gap <= eg;
        }
        if (c.prim_res <= c.eps_prim && c.dual_res <= c.eps_dual && gap_ok) verdict = SolveStatus::kSolved;
      }
    }
    if (verdict == SolveStatus::kNotRun) {
      detail::qp_schedule_next(st, it, c, sc);
      // ---- infeasibility (qp_check_infeasible) ----
      __syncwarp();
      {  // primal: δy ∈ K*, Aᵀδy ≈ 0, bᵀδy < 0
        T dyn = T(0), bdy = T(0);
        for (int r = lane; r < m; r += kW) {
          const T dy = s.y[r] - s.yp[r];
          s.tm[r] = dy;
          dyn = max_of(dyn, abs_of(dy));
          bdy += s.b[r] * dy;
        }
        dyn = wmax(dyn), bdy = wsum(bdy);
        __syncwarp();
        const T tol = st.eps_pinf * dyn;
        if (dyn > T(0) && bdy < -tol) {
          bool in = true;
          for (int i = cones.n_zero + lane; i < soc0; i += kW) in = in && !(s.tm[i] < -tol);
          for (int q = lane; q < cones.n_soc; q += kW) {
            const int r = soc0 + 3 * q;
            in = in && !(soc3_violation(s.tm[r], s.tm[r + 1], s.tm[r + 2]) > tol);
          }
          if (__all_sync(kFull, in)) {
            const T aty = own ? abs_of(col_dot(s, lda, m, lane, s.tm)) : T(0);
            if (wmax(aty) <= tol) verdict = SolveStatus::kPrimalInfeasible;
          }
        }
      }
      if (verdict == SolveStatus::kNotRun) {  // dual: Pδx ≈ 0, qᵀδx < 0, Aδx ∈ −K
        const T dx = own ? xj - xprev : T(0);
        const T dxn = wmax(abs_of(dx)), qdx = wsum(qj * dx);
        const T tol = st.eps_dinf * dxn;
        if (dxn > T(0) && qdx < -tol) {
          s.xs[lane] = dx;
          __syncwarp();
          bool in = true;
          for (int r = lane; r < m; r += kW) {
            const T a = row_dot(s, lda, n, r, s.xs);
            s.tm[r] = a;
            if (r < cones.n_zero) in = in && !(abs_of(a) > tol);
            else if (r < soc0) in = in && !(a > tol);
          }
          __syncwarp();
          for (int q = lane; q < cones.n_soc; q += kW) {
            const int r = soc0 + 3 * q;
            in = in && !(soc3_violation(-s.tm[r], -s.tm[r + 1], -s.tm[r + 2]) > tol);
          }
          if (__all_sync(kFull, in)) {
            const T pdx = own ? abs_of(p_dot(P, n, lane, s.xs)) : T(0);
            if (wmax(pdx) <= tol) verdict = SolveStatus::kDualInfeasible;
          }
          __syncwarp();
        }
      }
    }
    // ---- adaptive ρ (qp_adapt_rho) ----
    if (verdict == SolveStatus::kNotRun && st.adaptive_rho && it % st.adaptive_rho_interval == 0 &&
        info.rho_updates < st.max_rho_updates && sc.remaining > T(st.adaptive_rho_interval)) {
      const T pn = c.sp_res / (max_of(c.sax_norm, c.sz_norm) + T(1e-30));
      const T dn = c.sd_res / (max_of(max_of(c.spx_norm, c.saty_norm), c.sq_norm) + T(1e-30));
      T rho_new = rho * sqrt_of(pn / (dn + T(1e-30)));
      rho_new = min_of(max_of(rho_new, st.rho_min), st.rho_max);
      if (rho_new > rho * st.adaptive_rho_tolerance || rho_new * st.adaptive_rho_tolerance < rho) {
        rho = rho_new;
        sc.last_check = 0;
        set_rho(pr, s, rho, st.rho_eq_scale, cscale, lane);
        if (!factor(pr, row_ptr, col, P, s, sig, Kc, lane))
          verdict = SolveStatus::kNumericalError;
        else
          ++info.rho_updates;
      }
    }
    if (verdict != SolveStatus::kNotRun) {
      status = verdict;
      break;
    }
  }

  // ---- finish (qp_finish) -----------------------------------------------------------
  if (it > st.max_iter) it = st.max_iter;
  if (status == SolveStatus::kMaxIterations && c.prim_res <= T(10) * c.eps_prim &&
      c.dual_res <= T(10) * c.eps_dual && gap_within(c, T(10), 0))
    status = SolveStatus::kSolvedInaccurate;
  s.xs[lane] = xj;
  __syncwarp();
  double obj = 0.0, lag = 0.0;
  if (own) {
    double pxi = 0.0;
    for (int i = 0; i < n; ++i) pxi += double(P[i * n + lane]) * double(s.xs[i]);
    obj = double(xj) * (0.5 * pxi + double(qj));
  }
  for (int r = lane; r < m; r += kW) {
    if (s.y[r] == T(0)) continue;  // adds nothing (and b_r may be +inf where the solver allows it)
    double ax = -double(s.b[r]);
    for (int j = 0; j < n; ++j) ax += double(s.A[r * lda + j]) * double(s.xs[j]);
    lag += double(s.y[r]) * ax;
  }
  obj = wsum(obj), lag = wsum(lag);
  info.status = status;
  info.iterations = it;
  info.objective = T(obj);
  info.value = T(obj + lag);
  info.prim_res = c.prim_res;
  info.dual_res = c.dual_res;
  finish_early();
}

// ---- host ------------------------------------------------------------------------------

template <class T>
struct Dev {
  T* p = nullptr;
  explicit Dev(size_t count) { check(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)), "cudaMalloc"); }
  Dev(const Dev&) = delete;
  ~Dev() { cudaFree(p); }
  void put(const std::vector<T>& v) {
    check(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  void get(std::vector<T>& v) const {
    check(cudaMemcpy(v.data(), p, v.size() * sizeof(T), cudaMemcpyDeviceToHost), "download");
  }
};

// solves the batch with the warp kernel (warps_per_block problems per block)
template <class T>
void solve_warp(const QpBatch<T>& bt, const QpSettings<T>& st, bool warm, QpSolutions<T>& out,
                int warps_per_block) {
  const int B = bt.size, n = bt.n, m = bt.m(), nnz = bt.nnz();
  std::vector<int> row_of(std::max(nnz, 1));
  for (int r = 0; r < m; ++r)
    for (int kk = bt.a_row_ptr[r]; kk < bt.a_row_ptr[r + 1]; ++kk) row_of[kk] = r;
  Dev<int> drow(nnz), drp(m + 1), dcol(nnz), dstatus(B), dfault(B), dits(B), drho(B);
  Dev<T> dP(bt.P.size()), dq(bt.q.size()), dA(bt.A.size()), db(bt.b.size()), dx(size_t(B) * n),
      dy(size_t(B) * m), dobj(B), dval(B), dpr(B), ddr(B);
  drow.put(row_of);
  drp.put(bt.a_row_ptr);
  dcol.put(bt.a_col);
  dP.put(bt.P), dq.put(bt.q), dA.put(bt.A), db.put(bt.b);
  if (warm) {
    dx.put(out.x);
    dy.put(out.y);
  } else {
    out.resize(B, n, m);
  }
  Problem pr{n, m, nnz, bt.cones};
  const size_t smem = size_t(Smem<T>::size(n, m)) * sizeof(T) * warps_per_block;
  const int blocks = (B + warps_per_block - 1) / warps_per_block;
  std::printf("warp kernel: %d blocks of %d warps (a problem each), shared memory per block: %zu bytes "
              "(n=%d, m=%d, nnz=%d)\n", blocks, warps_per_block, smem, n, m, nnz);
  QpSettings<T> ds = st;
  ds.predict_checks = false;  // as the thread kernel (cuda::detail::device_settings)
  qp_admm_warp_kernel<T><<<blocks, kW * warps_per_block, smem>>>(
      B, pr, drow.p, drp.p, dcol.p, dP.p, dq.p, dA.p, db.p, dx.p, dy.p, dobj.p, dval.p, dpr.p, ddr.p, dstatus.p,
      dfault.p, dits.p, drho.p, ds, warm);
  check(cudaGetLastError(), "qp_admm_warp_kernel launch");
  check(cudaDeviceSynchronize(), "qp_admm_warp_kernel");
  dx.get(out.x), dy.get(out.y), dobj.get(out.objective), dval.get(out.value);
  dpr.get(out.prim_res), ddr.get(out.dual_res);
  std::vector<int> st_(B), fa(B);
  dstatus.get(st_), dfault.get(fa), dits.get(out.iterations), drho.get(out.rho_updates);
  for (int k = 0; k < B; ++k) {
    out.status[k] = static_cast<SolveStatus>(st_[k]);
    out.fault[k] = static_cast<InputFault>(fa[k]);
  }
}

// what a comparison found: problems that disagree, those whose status, fault or
// iterations disagree, and the largest relative differences of x, y, objective, value
struct Verdict {
  int bad = 0, hard = 0;
  double worst[4] = {0, 0, 0, 0};
};

// tests/test_gpu.cc's comparison of a device's answers with the CPU's
template <class T>
Verdict compare(const char* what, const QpBatch<T>& bt, const QpSolutions<T>& cpu, const QpSolutions<T>& gpu,
                int check_every, double rtol) {
  const int n = bt.n, m = bt.m();
  int bad = 0, same = 0, hard = 0;
  double wx = 0, wy = 0, wo = 0, wv = 0;
  for (int k = 0; k < bt.size; ++k) {
    std::string why;
    if (cpu.status[k] != gpu.status[k]) why += " status";
    if (cpu.fault[k] != gpu.fault[k]) why += " fault";
    if (std::abs(cpu.iterations[k] - gpu.iterations[k]) > check_every) why += " iterations";
    hard += !why.empty();
    same += cpu.iterations[k] == gpu.iterations[k];
    if (cpu.status[k] != SolveStatus::kInvalidInput) {
      double xs = 1e-30, ys = 1e-30, dx = 0, dy = 0, qx = 0, xpx = 0;
      for (int j = 0; j < n; ++j) {
        xs = std::max(xs, std::abs(double(cpu.x[size_t(k) * n + j])));
        dx = std::max(dx, std::abs(double(cpu.x[size_t(k) * n + j]) - double(gpu.x[size_t(k) * n + j])));
      }
      for (int r = 0; r < m; ++r) {
        ys = std::max(ys, std::abs(double(cpu.y[size_t(k) * m + r])));
        dy = std::max(dy, std::abs(double(cpu.y[size_t(k) * m + r]) - double(gpu.y[size_t(k) * m + r])));
      }
      for (int i = 0; i < n; ++i) {
        double pxi = 0;
        for (int j = 0; j < n; ++j)
          pxi += double(bt.P[size_t(k) * n * n + i * n + j]) * double(cpu.x[size_t(k) * n + j]);
        xpx += double(cpu.x[size_t(k) * n + i]) * pxi;
        qx += std::abs(double(bt.q[size_t(k) * n + i]) * double(cpu.x[size_t(k) * n + i]));
      }
      const double os = std::max({std::abs(double(cpu.objective[k])), std::abs(xpx), qx, 1e-30});
      const double dob = std::abs(double(cpu.objective[k]) - double(gpu.objective[k])) / os;
      const double dv = std::abs(double(cpu.value[k]) - double(gpu.value[k])) /
                        std::max(std::abs(double(cpu.value[k])), os);
      if (dx / xs > rtol) why += " x";
      if (dy / ys > rtol) why += " y";
      if (dob > rtol) why += " objective";
      if (dv > rtol) why += " value";
      wx = std::max(wx, dx / xs), wy = std::max(wy, dy / ys), wo = std::max(wo, dob), wv = std::max(wv, dv);
    }
    if (!why.empty()) {
      ++bad;
      std::printf("  %s problem %d differs:%s (status %d/%d, fault %d/%d, iterations %d/%d, objective %.7g/%.7g)\n",
                  what, k, why.c_str(), int(cpu.status[k]), int(gpu.status[k]), int(cpu.fault[k]),
                  int(gpu.fault[k]), cpu.iterations[k], gpu.iterations[k], double(cpu.objective[k]),
                  double(gpu.objective[k]));
    }
  }
  if (same < bt.size * 3 / 4) {
    ++bad, ++hard;
    std::printf("  %s: only %d of %d problems stopped at the reference's iteration\n", what, same, bt.size);
  }
  std::printf("%s: %d of %d problems disagree; %d stopped at the reference's iteration; largest relative "
              "differences: x %.1e, y %.1e, objective %.1e, value %.1e\n",
              what, bad, bt.size, same, wx, wy, wo, wv);
  Verdict v;
  v.bad = bad, v.hard = hard;
  v.worst[0] = wx, v.worst[1] = wy, v.worst[2] = wo, v.worst[3] = wv;
  return v;
}

template <class T>
double mean_iterations(const QpSolutions<T>& s) {
  double t = 0;
  for (int v : s.iterations) t += v;
  return t / std::max(1, s.size);
}

int run(int argc, char** argv) {
  std::string in;
  double eps = 1e-5;
  int max_iter = 4000, wpb = 1, scaling_iters = -1;
  bool thread = false, check_input = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gpu_warp_variant: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--in") in = next();
    else if (a == "--eps") eps = std::atof(next());
    else if (a == "--max-iter") max_iter = std::atoi(next());
    else if (a == "--warps-per-block") wpb = std::atoi(next());
    else if (a == "--thread") thread = true;
    else if (a == "--no-check-input") check_input = false;
    else if (a == "--scaling-iters") scaling_iters = std::atoi(next());
    else {
      std::fprintf(stderr, "usage: gpu_warp_variant --in BATCH.npz [--eps E] [--max-iter N] "
                           "[--warps-per-block W] [--thread] [--no-check-input] [--scaling-iters K]\n");
      return 2;
    }
  }
  if (wpb < 1 || wpb > 4) {
    std::fprintf(stderr, "gpu_warp_variant: --warps-per-block must be 1 to 4\n");
    return 2;
  }
  if (in.empty()) {
    std::fprintf(stderr, "gpu_warp_variant: --in is required\n");
    return 2;
  }
  using T = float;
  const QpFile f = read_qp_file(in);
  const QpBatch<T> bt = f.batch.cast<T>();
  if (bt.n > kW) {
    std::fprintf(stderr, "gpu_warp_variant: n = %d; the warp variant holds n <= 32\n", bt.n);
    return 2;
  }
  QpSettings<T> st;
  st.eps_abs = st.eps_rel = T(eps);
  st.max_iter = max_iter;
  st.check_input = check_input;  // (the set-up's parts, measured one at a time)
  if (scaling_iters >= 0) st.scaling_iters = scaling_iters;
  QpSettings<T> ref = st;  // the CPU reference as tests/test_gpu.cc runs it
  ref.predict_checks = false;
  ref.dense_iteration = false;
  BatchOptions cpu_opt;
  cpu_opt.lanes = false;
  cpu_opt.threads = 1;
  QpSolutions<T> cpu, warp, thr;
  const bool warm = f.has_warm_start;
  if (warm) {
    for (QpSolutions<T>* s : {&cpu, &warp, &thr}) {
      s->resize(bt.size, bt.n, bt.m());
      s->x.assign(f.x0.begin(), f.x0.end());
      s->y.assign(f.y0.begin(), f.y0.end());
    }
    cpu_opt.warm_start = true;
  }
  solve_batch(bt, ref, cpu_opt, cpu);
  solve_warp(bt, st, warm, warp, wpb);
  std::printf("warp kernel: solved %d problems (n=%d, m=%d, %s), mean %.2f iterations (CPU: %.2f)\n", bt.size,
              bt.n, bt.m(), warm ? "warm" : "cold", mean_iterations(warp), mean_iterations(cpu));
  const Verdict vw = compare("warp kernel vs CPU", bt, cpu, warp, st.check_every, 1e-3);
  bool ok = vw.bad == 0;
  if (thread) {
    BatchOptions g;
    g.backend = Backend::kCuda;
    g.warm_start = warm;
    solve_batch(bt, st, g, thr);
    std::printf("thread kernel: mean %.2f iterations\n", mean_iterations(thr));
    const Verdict vt = compare("thread kernel vs CPU", bt, cpu, thr, st.check_every, 1e-3);
    // where the thread kernel itself differs from the CPU beyond these limits (float
    // rounding on problems whose x is poorly determined, stops that move by more than
    // one check interval), the warp kernel passes if it does no worse: no more problems
    // whose status, fault or iterations disagree, and differences above 1e-3 no larger
    // than the thread kernel's
    if (!ok && vw.hard <= vt.hard) {
      bool within = true;
      for (int i = 0; i < 4; ++i) within = within && vw.worst[i] <= std::max(1e-3, vt.worst[i]);
      if (within) {
        ok = true;
        std::printf("warp kernel: no worse than the thread kernel against the CPU (%d / %d problems "
                    "with status, fault or iterations apart; every difference above 1e-3 within the "
                    "thread kernel's)\n", vw.hard, vt.hard);
      }
    }
  }
  std::printf("gpu_warp_variant: %s\n", ok ? "the answers agree with the CPU" : "DISAGREEMENT");
  return ok ? 0 : 1;
}

}  // namespace warpvar
}  // namespace impulse

int main(int argc, char** argv) {
  try {
    return impulse::warpvar::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_warp_variant: %s\n", e.what());
    return 2;
  }
}
