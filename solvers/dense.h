// Small dense linear algebra on views: Cholesky, triangular solves, products.
// Matrices are n x n row-major inside one problem's storage.
#pragma once

#include "solvers/view.h"

IMPULSE_NAMESPACE_BEGIN

// `return fn<T, N>(args...)` with N fixed at compile time for the common
// sizes (8, 16, 24, 32, 48, 64: the loops then have known, whole-chunk trip
// counts, ~25% faster at n = 32) and N = 0 (the run-time n) otherwise.
#define IMPULSE_RETURN_FIXED_SIZE(n, fn, T, ...)  \
  switch (n) {                                     \
    case 8: return fn<T, 8>(__VA_ARGS__);          \
    case 16: return fn<T, 16>(__VA_ARGS__);        \
    case 24: return fn<T, 24>(__VA_ARGS__);        \
    case 32: return fn<T, 32>(__VA_ARGS__);        \
    case 48: return fn<T, 48>(__VA_ARGS__);        \
    case 64: return fn<T, 64>(__VA_ARGS__);        \
    default: return fn<T, 0>(__VA_ARGS__);         \
  }

// factor K (row-major, n x n, lower triangle read) in place: K = L L^T.
// Storage after the call: the strict lower triangle holds L, the strict upper
// triangle holds L^T (so that both triangular solves read rows contiguously),
// and the diagonal holds 1 / L_ii (no divisions in the solves).
// Returns false when a pivot is not positive (K not positive definite).
namespace detail {

// The same factorization on contiguous storage, right-looking on the upper
// triangle (row j of U = Lᵀ scales the rows below it: contiguous axpys). Every
// vector loop starts at the multiple of 8 at or below its first needed column,
// so that it runs on whole, aligned chunks; the entries left of the diagonal
// it touches are scratch until the final mirror overwrites them. No scalar
// store lands inside a chunk that a vector load reads soon after (a narrow
// store followed by a wide load of the same bytes cannot be forwarded and
// stalls): the 1/L_jj are kept aside and written at the end.
// Pivots go in pairs (rows j and j+1 scaled first, then each row below takes
// both updates in one pass), which halves the loads and stores of the rows
// below.

// The elimination itself, on rows that hold the upper triangle (row p of U
// = Lᵀ from its diagonal on; what lies left of a diagonal is scratch). The
// diagonal ends up holding √d. N > 0: a copy with the size fixed at compile
// time (whole-chunk trip counts).
template <class T, int N>
IMPULSE_HD bool cholesky_upper_rows(int n_rt, T* __restrict__ K) {
  const int n = N > 0 ? N : n_rt;
  int p = 0;
  for (; p + 2 <= n; p += 2) {
    T* __restrict__ u = K + p * n;
    T* __restrict__ v = K + (p + 1) * n;
    const T d = u[p];
    if (!(d > T(0)) || !is_finite(d)) return false;
    const T inv = T(1) / sqrt_of(d);
    IMPULSE_SIMD
    for (int k = p & ~7; k < n; ++k) u[k] *= inv;
    const T l = u[p + 1];
    const T d1 = v[p + 1] - l * l;
    if (!(d1 > T(0)) || !is_finite(d1)) return false;
    const T inv1 = T(1) / sqrt_of(d1);
    IMPULSE_SIMD
    for (int k = (p + 1) & ~7; k < n; ++k) v[k] = (v[k] - l * u[k]) * inv1;
    for (int i = p + 2; i < n; ++i) {
      const T a = u[i], b = v[i];
      T* __restrict__ ri = K + i * n;
      IMPULSE_SIMD
      for (int k = i & ~7; k < n; ++k) ri[k] -= a * u[k] + b * v[k];
    }
  }
  if (p < n) {  // odd n: the last pivot
    T* __restrict__ rj = K + p * n;
    const T d = rj[p];
    if (!(d > T(0)) || !is_finite(d)) return false;
    rj[p] = sqrt_of(d);
  }
  return true;
}

// the common sizes get fixed-size copies (n = 32: 1.31 → 1.15 µs)
template <class T>
IMPULSE_HD bool cholesky_upper_rows_any(int n, T* __restrict__ K) {
  IMPULSE_RETURN_FIXED_SIZE(n, cholesky_upper_rows, T, n, K)
}

template <class T>
IMPULSE_HD bool cholesky_raw(int n, T* __restrict__ K) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < i; ++j) K[j * n + i] = K[i * n + j];
  if (!cholesky_upper_rows_any(n, K)) return false;
  // the diagonals hold √d; they become 1/√d
  for (int i = 0; i < n; ++i) {
    K[i * n + i] = T(1) / K[i * n + i];
    for (int j = 0; j < i; ++j) K[i * n + j] = K[j * n + i];
  }
  return true;
}

// K⁻¹ of a symmetric positive definite K (full storage, both triangles),
// in place, by Gauss-Jordan elimination without pivoting (the pivots of an
// SPD matrix are its Schur complements' diagonals, all positive). n³
// multiply-adds, twice the Cholesky route's, but every one in a whole-row
// vector loop. Pivots go in pairs: each other row takes both eliminations in
// one pass (a rank-2 update), which halves the row loads and stores that
// bound the one-pivot form (n = 32: 3.4 → µs). For pivots k, k+1 with
// X = row k / d_k (X_k = 1/d_k) and Y = row k+1 after step k, over its pivot
// (Y_{k+1} = 1/d'), a row i with a = K_ik, c = K_i,k+1 − a·X_{k+1} becomes
//   row_i − a·X̂ − c·Ŷ,  X̂ = X but X̂_k = 1 + X_k,  Ŷ = Y but Ŷ_{k+1} = 1 + Y_{k+1},
// which is both steps at once, the columns k and k+1 included. rk: 2n
// scratch. Returns false when a pivot is not positive (K not positive
// definite).
template <class T, int N>
IMPULSE_HD bool spd_inverse_gj(int n_rt, T* __restrict__ K, T* __restrict__ rk) {
  const int n = N > 0 ? N : n_rt;
  T* __restrict__ X = rk;
  T* __restrict__ Y = rk + n;
  int k = 0;
  for (; k + 2 <= n; k += 2) {
    T* __restrict__ r0 = K + k * n;
    T* __restrict__ r1 = K + (k + 1) * n;
    const T d0 = r0[k];
    if (!(d0 > T(0)) || !is_finite(d0)) return false;
    const T p0 = T(1) / d0;
    IMPULSE_SIMD
    for (int j = 0; j < n; ++j) X[j] = r0[j] * p0;
    X[k] = p0;
    const T b = r1[k];
    const T d1 = r1[k + 1] - b * X[k + 1];
    if (!(d1 > T(0)) || !is_finite(d1)) return false;
    const T p1 = T(1) / d1;
    IMPULSE_SIMD
    for (int j = 0; j < n; ++j) Y[j] = (r1[j] - b * X[j]) * p1;
    Y[k] = -b * p0 * p1;
    Y[k + 1] = p1;
    const T ck = X[k + 1];
    IMPULSE_SIMD
    for (int j = 0; j < n; ++j) r0[j] = X[j] - ck * Y[j];
    r0[k + 1] = -ck * p1;
    IMPULSE_SIMD
    for (int j = 0; j < n; ++j) r1[j] = Y[j];
    X[k] = T(1) + p0;
    Y[k + 1] = T(1) + p1;
    for (int i = 0; i < n; ++i) {
      if (i == k || i == k + 1) continue;
      T* __restrict__ ri = K + i * n;
      const T a = ri[k];
      const T c = ri[k + 1] - a * ck;
      IMPULSE_SIMD
      for (int j = 0; j < n; ++j) ri[j] -= a * X[j] + c * Y[j];
    }
  }
  if (k < n) {  // odd n: the last pivot alone
    T* __restrict__ row_k = K + k * n;
    const T d = row_k[k];
    if (!(d > T(0)) || !is_finite(d)) return false;
    const T p = T(1) / d;
    IMPULSE_SIMD
    for (int j = 0; j < n; ++j) X[j] = row_k[j] * p;
    X[k] = p;
    for (int i = 0; i < n; ++i) {
      if (i == k) continue;
      T* __restrict__ ri = K + i * n;
      const T f = ri[k];
      IMPULSE_SIMD
      for (int j = 0; j < n; ++j) ri[j] -= f * X[j];
      ri[k] = -f * p;
    }
    IMPULSE_SIMD
    for (int j = 0; j < n; ++j) row_k[j] = X[j];
  }
  return true;
}

template <class T>
IMPULSE_HD bool spd_inverse_raw(int n, T* __restrict__ K, T* __restrict__ rk) {
  IMPULSE_RETURN_FIXED_SIZE(n, spd_inverse_gj, T, n, K, rk)
}

}  // namespace detail

template <class T>
IMPULSE_HD bool cholesky_in_place(int n, View<T, UnitStride> K) {
  return detail::cholesky_raw(n, K.p);
}

template <class T, class S>
IMPULSE_HD bool cholesky_in_place(int n, View<T, S> K) {
  for (int j = 0; j < n; ++j) {
    // diagonal pivot
    T d = K[j * n + j];
    IMPULSE_SIMD_REDUCE(d)
    for (int k = 0; k < j; ++k) d -= K[j * n + k] * K[j * n + k];
    if (!(d > T(0)) || !is_finite(d)) return false;
    const T inv = T(1) / sqrt_of(d);
    K[j * n + j] = inv;
    // column below the pivot: row i dotted with row j over the first j entries
    for (int i = j + 1; i < n; ++i) {
      T acc = K[i * n + j];
      IMPULSE_SIMD_REDUCE(acc)
      for (int k = 0; k < j; ++k) acc -= K[i * n + k] * K[j * n + k];
      K[i * n + j] = acc * inv;
    }
  }
  // mirror L into the upper triangle
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < i; ++j) K[j * n + i] = K[i * n + j];
  return true;
}

// solve L L^T x = r in place (r becomes x), with the factor from
// cholesky_in_place. Both sweeps are column-oriented (axpy on contiguous rows).
template <class T, class S, class SV>
IMPULSE_HD void cholesky_solve_in_place(int n, View<const T, S> L, View<T, SV> r) {
  // forward: L y = r; column i of L is row i of the upper mirror
  for (int i = 0; i < n; ++i) {
    const T yi = r[i] * L[i * n + i];
    r[i] = yi;
    IMPULSE_SIMD
    for (int k = i + 1; k < n; ++k) r[k] -= L[i * n + k] * yi;
  }
  // backward: L^T x = y; row i of L holds column i of L^T
  for (int i = n - 1; i >= 0; --i) {
    const T xi = r[i] * L[i * n + i];
    r[i] = xi;
    IMPULSE_SIMD
    for (int k = 0; k < i; ++k) r[k] -= L[i * n + k] * xi;
  }
}

// K⁻¹ from the factor of cholesky_in_place (L lower with 1/L_ii on the
// diagonal, Lᵀ mirrored above), written over the factor as a full symmetric
// matrix. scratch holds n x n. Both halves are vectorized loops of n³/6
// multiply-adds: the columns of L⁻¹ (forward substitution on unit vectors,
// stored as rows of scratch, row j = column j of L⁻¹ from entry j on), then
// K⁻¹[a][b] = Σ_{i ≥ max(a,b)} L⁻¹[i][a] L⁻¹[i][b].
template <class T, class S, class SS>
IMPULSE_HD void cholesky_inverse_in_place(int n, View<T, S> L, View<T, SS> scratch) {
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < n; ++i) scratch[j * n + i] = T(0);
    scratch[j * n + j] = T(1);
    for (int i = j; i < n; ++i) {
      const T yi = scratch[j * n + i] * L[i * n + i];
      scratch[j * n + i] = yi;
      IMPULSE_SIMD
      for (int k = i + 1; k < n; ++k) scratch[j * n + k] -= L[i * n + k] * yi;
    }
  }
  for (int a = 0; a < n; ++a) {
    for (int b = a; b < n; ++b) {
      T acc = T(0);
      IMPULSE_SIMD_REDUCE(acc)
      for (int i = b; i < n; ++i) acc += scratch[a * n + i] * scratch[b * n + i];
      L[a * n + b] = acc;
      L[b * n + a] = acc;
    }
  }
}

// K⁻¹ (full symmetric) over K, for a symmetric positive definite K of which
// the lower triangle is read. scratch: n x n. False when K is not positive
// definite. Contiguous storage: Gauss-Jordan (detail::spd_inverse_raw);
// otherwise (the GPU's batch-strided views) Cholesky, then the inverse from
// the factor.
template <class T, class S, class SS>
IMPULSE_HD bool spd_inverse_in_place(int n, View<T, S> K, View<T, SS> scratch) {
  if (!cholesky_in_place(n, K)) return false;
  cholesky_inverse_in_place(n, K, scratch);
  return true;
}

template <class T>
IMPULSE_HD bool spd_inverse_in_place(int n, View<T, UnitStride> K, View<T, UnitStride> scratch) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < i; ++j) K.p[j * n + i] = K.p[i * n + j];
  return detail::spd_inverse_raw(n, K.p, scratch.p);
}

// out = M v (M dense n x n row-major).
template <class T, class S, class SV, class SO>
IMPULSE_HD void dense_matvec(int n, View<const T, S> M, View<const T, SV> v, View<T, SO> out) {
  for (int i = 0; i < n; ++i) {
    T acc = T(0);
    IMPULSE_SIMD_REDUCE(acc)
    for (int j = 0; j < n; ++j) acc += M[i * n + j] * v[j];
    out[i] = acc;
  }
}

// out = M v for a symmetric M (n x n row-major, both triangles stored), as a
// sum of rows scaled by v (contiguous axpys: vectorizes without reductions).
template <class T, class S, class SV, class SO>
IMPULSE_HD void dense_symv(int n, View<const T, S> M, View<const T, SV> v, View<T, SO> out) {
  for (int i = 0; i < n; ++i) out[i] = T(0);
  for (int j = 0; j < n; ++j) {
    const T vj = v[j];
    IMPULSE_SIMD
    for (int i = 0; i < n; ++i) out[i] += M[j * n + i] * vj;
  }
}

namespace detail {
template <class T>
IMPULSE_HD void dense_symv_raw(int n, const T* __restrict__ M, const T* __restrict__ v,
                               T* __restrict__ out) {
  for (int i = 0; i < n; ++i) out[i] = T(0);
  for (int j = 0; j < n; ++j) {
    const T vj = v[j];
    const T* __restrict__ row = M + j * n;
    IMPULSE_SIMD
    for (int i = 0; i < n; ++i) out[i] += row[i] * vj;
  }
}
}  // namespace detail

// contiguous storage: the same product on pointers that do not alias
template <class T>
IMPULSE_HD void dense_symv(int n, View<const T, UnitStride> M, View<const T, UnitStride> v,
                           View<T, UnitStride> out) {
  detail::dense_symv_raw(n, M.p, v.p, out.p);
}

// out_j = c·D_j·max_i |M_ij|·D_i (column infinity norms of c·D M D).
template <class T, class S, class SD, class SO>
IMPULSE_HD void dense_col_absmax_scaled(int n, View<const T, S> M, View<const T, SD> D, T c,
                                        View<T, SO> out) {
  for (int j = 0; j < n; ++j) out[j] = T(0);
  for (int i = 0; i < n; ++i) {
    const T di = D[i];
    for (int j = 0; j < n; ++j) out[j] = max_of(out[j], abs_of(M[i * n + j]) * di);
  }
  for (int j = 0; j < n; ++j) out[j] *= c * D[j];
}

namespace detail {
template <class T>
IMPULSE_HD void dense_col_absmax_scaled_raw(int n, const T* __restrict__ M, const T* __restrict__ D,
                                            T c, T* __restrict__ out) {
  for (int j = 0; j < n; ++j) out[j] = T(0);
  int i = 0;
  for (; i + 4 <= n; i += 4) {  // four rows per pass over out: a 4x shorter chain
    const T d0 = D[i], d1 = D[i + 1], d2 = D[i + 2], d3 = D[i + 3];
    const T* __restrict__ r0 = M + i * n;
    const T* __restrict__ r1 = r0 + n;
    const T* __restrict__ r2 = r1 + n;
    const T* __restrict__ r3 = r2 + n;
    IMPULSE_SIMD
    for (int j = 0; j < n; ++j) {
      const T v0 = (r0[j] < T(0) ? -r0[j] : r0[j]) * d0;
      const T v1 = (r1[j] < T(0) ? -r1[j] : r1[j]) * d1;
      const T v2 = (r2[j] < T(0) ? -r2[j] : r2[j]) * d2;
      const T v3 = (r3[j] < T(0) ? -r3[j] : r3[j]) * d3;
      const T a = v0 > v1 ? v0 : v1, b = v2 > v3 ? v2 : v3;
      const T v = a > b ? a : b;
      out[j] = out[j] > v ? out[j] : v;
    }
  }
  for (; i < n; ++i) {
    const T di = D[i];
    const T* __restrict__ row = M + i * n;
    IMPULSE_SIMD
    for (int j = 0; j < n; ++j) {
      const T v = (row[j] < T(0) ? -row[j] : row[j]) * di;
      out[j] = out[j] > v ? out[j] : v;
    }
  }
  IMPULSE_SIMD
  for (int j = 0; j < n; ++j) out[j] *= c * D[j];
}
}  // namespace detail

template <class T>
IMPULSE_HD void dense_col_absmax_scaled(int n, View<const T, UnitStride> M,
                                        View<const T, UnitStride> D, T c, View<T, UnitStride> out) {
  detail::dense_col_absmax_scaled_raw(n, M.p, D.p, c, out.p);
}

// out = M u for a column-major M (rows x cols, column j at M + j·ld),
// contiguous storage. ld must be a multiple of 16 with rows ≤ ld, and the
// padding rows of M zero: rows are taken in chunks of 32 and 16 whose
// accumulators stay in registers (the product then runs at the machine's
// load rate, one vector multiply-add per loaded vector), so out[rows ..
// round16(rows)) is written too (zeros). Column pairs (chunks of 32) or
// quadruples (16) go to separate accumulators: independent chains hide the
// multiply-add latency.
namespace detail {
#if defined(__GNUC__) && !defined(__CUDA_ARCH__)
// host: the accumulators as GCC/Clang vector types. Written as arrays under
// `omp simd`, GCC keeps them on the stack once the product is inlined into
// the solver (a store and a reload per column: the chain then runs at the
// store-forwarding latency, not the load rate).
// The vector width the accumulators use: the machine's (64 bytes with
// AVX-512, 32 without). Emulated 64-byte vectors on AVX2 take two of its 16
// registers each, and the chunks below then spill their accumulators (QPCBLEND's
// dense iteration at n = 83: 43 µs instead of ~4 µs).
#if defined(__AVX512F__)
constexpr int kGemvVecBytes = 64;
#else
constexpr int kGemvVecBytes = 32;
#endif
template <class T, int C, int S>
inline void gemv_colmajor_chunk(int ld, int cols, const T* __restrict__ M,
                                const T* __restrict__ u, T* __restrict__ out) {
  constexpr int kBytes = C * int(sizeof(T)) < kGemvVecBytes ? C * int(sizeof(T)) : kGemvVecBytes;
  typedef T vec __attribute__((vector_size(kBytes)));
  constexpr int L = kBytes / int(sizeof(T)), V = C / L;
  vec acc[S][V];
  for (int s = 0; s < S; ++s)
    for (int v = 0; v < V; ++v) acc[s][v] = vec{};
  int j = 0;
  for (; j + S <= cols; j += S)
    for (int s = 0; s < S; ++s) {
      const T uj = u[j + s];
      const T* col = M + (j + s) * ld;
      for (int v = 0; v < V; ++v) {
        vec c;
        __builtin_memcpy(&c, col + v * L, sizeof(vec));
        acc[s][v] += c * uj;
      }
    }
  for (; j < cols; ++j) {
    const T uj = u[j];
    const T* col = M + j * ld;
    for (int v = 0; v < V; ++v) {
      vec c;
      __builtin_memcpy(&c, col + v * L, sizeof(vec));
      acc[0][v] += c * uj;
    }
  }
  for (int s = 1; s < S; ++s)
    for (int v = 0; v < V; ++v) acc[0][v] += acc[s][v];
  for (int v = 0; v < V; ++v) __builtin_memcpy(out + v * L, &acc[0][v], sizeof(vec));
}
#else
template <class T, int C, int S>
IMPULSE_HD void gemv_colmajor_chunk(int ld, int cols, const T* __restrict__ M,
                                    const T* __restrict__ u, T* __restrict__ out) {
  T acc[S][C];
  for (int s = 0; s < S; ++s)
    for (int i = 0; i < C; ++i) acc[s][i] = T(0);
  int j = 0;
  for (; j + S <= cols; j += S) {
    for (int s = 0; s < S; ++s) {
      const T uj = u[j + s];
      const T* __restrict__ col = M + (j + s) * ld;
      IMPULSE_SIMD
      for (int i = 0; i < C; ++i) acc[s][i] += col[i] * uj;
    }
  }
  for (; j < cols; ++j) {
    const T uj = u[j];
    const T* __restrict__ col = M + j * ld;
    IMPULSE_SIMD
    for (int i = 0; i < C; ++i) acc[0][i] += col[i] * uj;
  }
  for (int s = 1; s < S; ++s)
    for (int i = 0; i < C; ++i) acc[0][i] += acc[s][i];
  for (int i = 0; i < C; ++i) out[i] = acc[0][i];
}
#endif
}  // namespace detail

template <class T>
IMPULSE_HD void gemv_colmajor(int rows, int ld, int cols, const T* M, const T* u, T* out) {
  int i = 0;
#if defined(__GNUC__) && !defined(__CUDA_ARCH__) && !defined(__AVX512F__)
  // 16 vector registers (AVX2 and older): eight accumulators of 32 bytes at most
  constexpr int kS = sizeof(T) == 4 ? 4 : 2;
  for (; i < rows; i += 16) detail::gemv_colmajor_chunk<T, 16, kS>(ld, cols, M + i, u, out + i);
#else
  for (; i + 32 <= rows; i += 32) detail::gemv_colmajor_chunk<T, 32, 2>(ld, cols, M + i, u, out + i);
  for (; i < rows; i += 16) detail::gemv_colmajor_chunk<T, 16, 4>(ld, cols, M + i, u, out + i);
#endif
}

// out[0..n) = Σ_k vals[k]·M[idx[k]·n + ·]: a combination of cnt rows of the
// row-major n x n matrix M (idx == nullptr: rows 0 .. cnt−1). Up to four rows
// per pass over out (a short group is padded with zero weights), the first
// pass writing instead of adding: a chain of loads and stores of out per
// four rows, not per row.
template <class T>
IMPULSE_HD void combine_rows(int n, const int* __restrict__ idx, const T* __restrict__ vals,
                             int cnt, const T* __restrict__ M, T* __restrict__ out) {
  int k = 0;
  do {
    const T* r[4];
    T v[4];
    for (int g = 0; g < 4; ++g) {
      const bool in = k + g < cnt;
      r[g] = M + (in ? (idx ? idx[k + g] : k + g) * n : 0);
      v[g] = in ? vals[k + g] : T(0);
    }
    const T* __restrict__ r0 = r[0];
    const T* __restrict__ r1 = r[1];
    const T* __restrict__ r2 = r[2];
    const T* __restrict__ r3 = r[3];
    if (k == 0) {
      IMPULSE_SIMD
      for (int i = 0; i < n; ++i) out[i] = (r0[i] * v[0] + r1[i] * v[1]) + (r2[i] * v[2] + r3[i] * v[3]);
    } else {
      IMPULSE_SIMD
      for (int i = 0; i < n; ++i) out[i] += (r0[i] * v[0] + r1[i] * v[1]) + (r2[i] * v[2] + r3[i] * v[3]);
    }
    k += 4;
  } while (k < cnt);
}

// Sparse pattern shared by every problem of a batch (CSR): row r holds the
// entries row_ptr[r] .. row_ptr[r+1]-1 with columns col[k]; values live per
// problem. A dense m x n matrix is the full pattern.
struct CsrPattern {
  int rows = 0;
  int cols = 0;
  int nnz = 0;
  const int* row_ptr = nullptr;
  const int* col = nullptr;
};

// out = A v.
template <class T, class S, class SV, class SO>
IMPULSE_HD void csr_matvec(const CsrPattern& a, View<const T, S> val, View<const T, SV> v,
                           View<T, SO> out) {
  for (int r = 0; r < a.rows; ++r) {
    T acc = T(0);
    for (int k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) acc += val[k] * v[a.col[k]];
    out[r] = acc;
  }
}

// out = A^T v (out has a.cols entries, overwritten).
template <class T, class S, class SV, class SO>
IMPULSE_HD void csr_matvec_t(const CsrPattern& a, View<const T, S> val, View<const T, SV> v,
                             View<T, SO> out) {
  for (int j = 0; j < a.cols; ++j) out[j] = T(0);
  for (int r = 0; r < a.rows; ++r) {
    const T vr = v[r];
    for (int k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) out[a.col[k]] += val[k] * vr;
  }
}

// true when no entry is NaN or ±Inf.
template <class T, class S>
IMPULSE_HD bool all_finite(int len, View<const T, S> v) {
  for (int i = 0; i < len; ++i)
    if (!is_finite(v[i])) return false;
  return true;
}

// contiguous: v·0 is ±0 for a finite v and NaN otherwise, so one
// vectorized sum answers for the whole array (v·0 rather than v − v: one
// load per entry, 0.5 → 0.2 µs over the octagon QP's data)
template <class T>
IMPULSE_HD bool all_finite(int len, View<const T, UnitStride> v) {
  const T* __restrict__ p = v.p;
  T acc = T(0);
  IMPULSE_SIMD_REDUCE(acc)
  for (int i = 0; i < len; ++i) acc += p[i] * T(0);
  return acc == T(0);
}

// max_ij |M_ij| and max_{j<i} |M_ij − M_ji| of an n x n row-major matrix
template <class T, class S>
IMPULSE_HD void absmax_and_asymmetry(int n, View<const T, S> M, T& absmax, T& asym) {
  absmax = T(0);
  asym = T(0);
  for (int i = 0; i < n * n; ++i) absmax = max_of(absmax, abs_of(M[i]));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < i; ++j) asym = max_of(asym, abs_of(M[i * n + j] - M[j * n + i]));
}

// contiguous: branch-free vector reductions (scalar, the two scans took a
// fifth of the octagon QP's set-up); the common sizes get fixed-size copies
// (n = 32: 1.1 → 0.4 µs)
namespace detail {
template <class T, int N>
IMPULSE_HD void absmax_and_asymmetry_raw(int n_rt, const T* __restrict__ p, T& absmax, T& asym) {
  const int n = N > 0 ? N : n_rt;
  T a = T(0), s = T(0);
  IMPULSE_SIMD_MAX(a)
  for (int i = 0; i < n * n; ++i) {
    const T v = p[i] < T(0) ? -p[i] : p[i];
    a = a > v ? a : v;
  }
  for (int i = 1; i < n; ++i) {
    IMPULSE_SIMD_MAX(s)
    for (int j = 0; j < i; ++j) {
      const T dlt = p[i * n + j] - p[j * n + i];
      const T v = dlt < T(0) ? -dlt : dlt;
      s = s > v ? s : v;
    }
  }
  absmax = a;
  asym = s;
}
}  // namespace detail

template <class T>
IMPULSE_HD void absmax_and_asymmetry(int n, View<const T, UnitStride> M, T& absmax, T& asym) {
  IMPULSE_RETURN_FIXED_SIZE(n, detail::absmax_and_asymmetry_raw, T, n, M.p, absmax, asym)
}

// true when M + shift·I has a Cholesky factor (M symmetric, n x n
// row-major, lower triangle read): M is positive semidefinite up to
// `shift`. scratch: n x n.
template <class T, class S, class SS>
IMPULSE_HD bool psd_up_to(int n, View<const T, S> M, T shift, View<T, SS> scratch) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) scratch[i * n + j] = M[i * n + j];
  for (int i = 0; i < n; ++i) scratch[i * n + i] += shift;
  return cholesky_in_place(n, scratch);
}

// contiguous: M's rows are its columns, so a whole copy already holds the
// upper triangle that the elimination reads, and no factor is written out
// (no mirrors: n = 32, 1.65 → 1.2 µs)
template <class T>
IMPULSE_HD bool psd_up_to(int n, View<const T, UnitStride> M, T shift,
                          View<T, UnitStride> scratch) {
  const T* __restrict__ m = M.p;
  T* __restrict__ k = scratch.p;
  IMPULSE_SIMD
  for (int i = 0; i < n * n; ++i) k[i] = m[i];
  for (int i = 0; i < n; ++i) k[i * n + i] += shift;
  return detail::cholesky_upper_rows_any(n, k);
}

template <class T, class S>
IMPULSE_HD T norm_inf(int n, View<const T, S> v) {
  T r = T(0);
  for (int i = 0; i < n; ++i) r = max_of(r, abs_of(v[i]));
  return r;
}

IMPULSE_NAMESPACE_END  // namespace impulse
