// Batched conic-QP ADMM on the GPU: one WARP per problem (n <= 32), the layout
// DeviceQpBatch picks for 16 <= n <= 32 (kernels/qp_kernels.h, DeviceLayout). Why:
// bench/results/gpu_warp_vs_thread_2026-11-24.md (simulated counts: the problem's
// working set stays on chip, one problem's latency falls ~20x; the thread kernel's
// n² workspace per problem streams from HBM).
//
// The algorithm is qp_admm_solve's (solvers/qp_admm.h) as the thread kernel runs it
// (explicit K⁻¹, no dense iteration; its checks predicted as the CPU's, which the thread
// kernel cannot do: detail::device_settings): the same input checks,
// Ruiz equilibration, per-row ρ, iteration, residual checks, duality gap,
// infeasibility tests, adaptive ρ and finish, with the work spread over the 32 lanes:
//   - lane j owns variable j: x_j, q_j, σ_j, D_j in registers, and column j of K
//     (then K⁻¹, by in-register Gauss-Jordan, each pivot's column broadcast through
//     shared memory) in 32 registers; K is formed in shared memory from A's nonzeros
//     (the pattern's pairs, row by row), or, in the stagnation-restart variants when it
//     fits (Problem::dense: ContactNets' QP), in registers from A held dense in shared
//     memory, where P then sits too and Ax may take the dense rows (row_dot_dense);
//   - A's nonzeros sit in shared memory in CSR order, with b, z, y, ρ, 1/ρ, E and
//     scratch rows; the pattern (CSR and its column view) is the batch's, read
//     through the cache;
//   - the x-step K⁻¹·rhs is 32 FMAs per lane with rhs broadcast through shared
//     memory, loads issued ahead of the FMAs that use them; Ax and
//     Aᵀv are a lane per row / per column over its nonzeros (the 128-register
//     variants in the CPU's order: csr_matvec's and csr_matvec_t's sums, bit for bit;
//     the stagnation-restart variants in four partial sums, kSums); the projections take a
//     lane per zero/nonnegative row and per 3-row cone; norms and dot products are
//     shuffle reductions. P stays in global memory (read coalesced at set-up and at
//     the checks).
// Sums run in the serial code's order where it is cheap (the products with K⁻¹, A,
// Aᵀ, P; four partial sums instead in the stagnation-restart variants), so the
// iterates agree with the CPU's to rounding. One difference: the
// PSD test of P + δI and the factorization of K take Gauss-Jordan pivots (the
// Schur complements) rather than a Cholesky: the same pivots up to rounding.
//
// Rows with b = +inf (a nonnegative row without a bound) are as on the CPU
// (qp_b_usable, qp_by); the stagnation restart (QpSettings::fallback) is a template
// variant of the kernel, and so is the kept factorization (WarpLaunch::kept: a re-solve
// after q and b changed loads K⁻¹, D, E, c and ρ from global memory instead of
// checking P and A, equilibrating and factoring, as qp_admm_solve's `reuse`).
//
// Blocks hold one warp. Under GPGPU-Sim (functional mode) shuffles in blocks of
// several warps read warp 0's registers (a simulator fault; see the note above), and
// on sm_90 the 128 registers a lane allow 16 resident warps per SM either way (the
// stagnation-restart variants take up to 255 and 8 warps: below).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#ifdef IMPULSE_WARP_CLOCKS
#include <cstdio>
#endif

#include "kernels/device_util.cuh"
#include "kernels/qp_kernels.h"

namespace impulse {
namespace cuda {
namespace detail {
namespace {

constexpr int kW = 32;
constexpr unsigned kFull = 0xffffffffu;

// Warp shuffles as plain PTX (only the butterfly is used: broadcasts go through the
// shared broadcast row, Smem::bc). CUDA 13's __shfl_*_sync compile to the form with a
// predicate output (shfl.sync.bfly.b32 d|p, ...), whose value GPGPU-Sim (4.2, as patched
// in ../shared/tools/gpgpu-sim) never writes: every such shuffle reads 0 there ("reading
// undefined register"). The form without the predicate is the same instruction on a
// device and simulates correctly.
__device__ __forceinline__ unsigned shfl_xor_b32(unsigned v, int mask) {
  unsigned r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 31, -1;" : "=r"(r) : "r"(v), "r"(mask));
  return r;
}
__device__ __forceinline__ float shfl_xor(float v, int mask) {
  return __uint_as_float(shfl_xor_b32(__float_as_uint(v), mask));
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
// |v| as one instruction (abs_of's select keeps −0's sign: three). Used only where a
// magnitude is compared, maximized or summed into a tolerance, all of which treat ±0
// alike (a zero norm becomes a scaling of 1 either way): the same results.
template <class T>
__device__ __forceinline__ T mag(T v) {
  return fabs(v);
}
// N reductions at once, level by level: each level's N shuffles are issued before
// their combinations, so one shuffle latency a level is paid instead of one per value;
// each value's butterfly is wmax's or wsum's, bit for bit
template <class T, int N, class Op>
__device__ __forceinline__ void wreduce_all(T (&v)[N], Op op) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    T t[N];
#pragma unroll
    for (int u = 0; u < N; ++u) t[u] = shfl_xor(v[u], o);
#pragma unroll
    for (int u = 0; u < N; ++u) v[u] = op(v[u], t[u]);
  }
}
template <class T, int N>
__device__ __forceinline__ void wmax_all(T (&v)[N]) {
  wreduce_all(v, [](T a, T b) { return max_of(a, b); });
}
// NM maxima and NS sums at once, level by level as wreduce_all
template <class T, int NM, int NS>
__device__ __forceinline__ void wmax_sum_all(T (&mx)[NM], T (&sm)[NS]) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    T a[NM], b[NS];
#pragma unroll
    for (int u = 0; u < NM; ++u) a[u] = shfl_xor(mx[u], o);
#pragma unroll
    for (int u = 0; u < NS; ++u) b[u] = shfl_xor(sm[u], o);
#pragma unroll
    for (int u = 0; u < NM; ++u) mx[u] = max_of(mx[u], a[u]);
#pragma unroll
    for (int u = 0; u < NS; ++u) sm[u] += b[u];
  }
}

// Latency, not instructions: the loops below issue a chunk's independent loads or
// shuffles before the chain of dependent multiply-adds that consumes them. Interleaved,
// each step of the chain waited a full load or shuffle latency (seen in the GPU
// simulator, which issues the PTX in order: bench/results/gpu_latency_2026-11-26.md).
// The products (col_dot, p_dot, row_dot_dense, K⁻¹ rhs) take S partial sums: S = 1 is
// the serial order (the CPU's sums, bit for bit); S = 4, in the stagnation-restart
// variants (the kernel's kSums), four chains a quarter as long, added as
// (s0 + s1) + (s2 + s3), which round differently from the CPU's (the device agrees with
// it to rounding, its iterations as the tests check). row_dot keeps the serial order.
constexpr int kChunk = 4;  // P's column, A's row and column nonzeros (8: spills in float on sm_90)

// S partial sums (1 or 4), added as (s0 + s1) + (s2 + s3)
template <int S, class T>
__device__ __forceinline__ T add_partials(const T (&a)[S]) {
  static_assert(S == 1 || S == 4, "one or four partial sums");
  if constexpr (S == 1) return a[0];
  else return (a[0] + a[1]) + (a[2] + a[3]);
}

// the shared-memory rows of one problem (T elements), carved per warp. K comes first,
// at the aligned base: while K is not being formed, its first 32 elements are the
// broadcast row `bc` (the x-step's right-hand side; Gauss-Jordan's pivot rows, alternating
// with `tn`), read
// with 16-byte loads. Dense (warp_shared_bytes_dense): no K block but the broadcast row,
// then A dense, m rows of warp_dense_ld (16-byte aligned), and P (32 x 32, as in global
// memory).
template <class T>
struct Smem {
  T *A, *xs, *xts, *ds, *tn;                       // A: nnz values (CSR order); n-sized: 32 each
  T *z, *v, *y, *yp, *rho, *rinv, *b, *e, *tm;     // m-sized
  T* K;                                            // K while it is formed: 32 x 33
  T* bc;                                           // K's first row otherwise: 32 (with tn: Gauss-Jordan's broadcast rows)
  T *Ad, *P;                                       // dense: A, m x dld; P
  static constexpr int ldk = kW + 1;
  static constexpr int dld = warp_dense_ld(sizeof(T));
  // warp_shared_bytes' rows, or warp_shared_bytes_dense's: each 16-byte aligned (the
  // nonzeros and the m-sized rows padded to multiples of 4 elements)
  __device__ static Smem carve(T* base, int nnz_, int m_, bool dense) {
    Smem s;
    T* p = base;
    const int m = m_;
    const int nnz = warp_pad4(nnz_), mp = warp_pad4(m_);
    s.K = s.bc = p, p += dense ? kW : kW * ldk;
    s.Ad = p, p += dense ? m * dld : 0;
    s.P = p, p += dense ? kW * kW : 0;
    s.A = p, p += nnz;
    s.xs = p, p += kW;
    s.xts = p, p += kW;
    s.ds = p, p += kW;
    s.tn = p, p += kW;
    s.z = p, p += mp;
    s.v = p, p += mp;
    s.y = p, p += mp;
    s.yp = p, p += mp;
    s.rho = p, p += mp;
    s.rinv = p, p += mp;
    s.b = p, p += mp;
    s.e = p, p += mp;
    s.tm = p, p += mp;
    return s;
  }
};

// four consecutive elements of a 16-byte aligned shared row (one float4, two double2)
__device__ __forceinline__ void load4(const float* p, float (&v)[4]) {
  const float4 t = *reinterpret_cast<const float4*>(p);
  v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
}
__device__ __forceinline__ void load4(const double* p, double (&v)[4]) {
  const double2 t0 = reinterpret_cast<const double2*>(p)[0], t1 = reinterpret_cast<const double2*>(p)[1];
  v[0] = t0.x, v[1] = t0.y, v[2] = t1.x, v[3] = t1.y;
}

// Keeps the loads above it above it (a compiler barrier; no instruction): the loops that
// load a group's entries and then multiply them would otherwise be emitted load, use,
// load, use, each use waiting a full load latency (the simulator issues the PTX in order)
__device__ __forceinline__ void loads_issued() { asm volatile("" ::: "memory"); }

struct Problem {  // the batch's shape (problem-contiguous arrays)
  int n, m, nnz;
  ConeSpec cones;
  bool dense;  // A also dense in shared memory (the stagnation-restart variants, when it fits)
};

// A's pattern, shared by the batch: CSR (row_ptr, col) and its column view (col_ptr;
// per column its entries' CSR positions and rows, in row order)
struct Pattern {
  const int* __restrict__ row_ptr;
  const int* __restrict__ col;
  const int* __restrict__ col_ptr;
  const int* __restrict__ csc_pos;
  const int* __restrict__ csc_row;
};

// K (lane j: column j in Kc) ← K⁻¹ by Gauss-Jordan without pivoting (SPD: every
// pivot is a Schur complement's diagonal, positive). The pivot's row reaches every lane
// through a shared broadcast row, each lane i writing its own K_ki: the elimination
// keeps the matrix symmetric in the rows and columns not yet pivoted and antisymmetric
// between a pivoted one and the rest (an update and its mirror are the same products,
// negated: exact), so K_ik = K_ki for i >= k and −K_ki for i < k, the pivot's column
// read from that row. (K is formed symmetric from the same products in the same order
// on both sides, given a symmetric P; an asymmetry the input check tolerates stays a
// difference of that size.)
// Pipelined: each pivot updates row k+1 first, writes it to the other of two broadcast
// rows (bc0, bc1) and issues the next pivot's divide, then updates its other rows while
// the divide is in flight; the next pivot's row is the one just written. Every entry
// takes the same operation as in plain order, so the inverse is the same bit for bit.
// False when a pivot is not positive or not finite (warp-uniform: the pivot is read from
// the broadcast row). Lanes ≥ n hold identity columns. Inverse = false: the elimination
// below the pivots only (the same pivots, about half the work), as a
// positive-definiteness test.
template <class T, bool Inverse = true>
__device__ __forceinline__ bool gj_inverse(T (&Kc)[kW], int lane, T* __restrict__ bc0, T* __restrict__ bc1) {
  __syncwarp();  // the broadcast rows' earlier reads done
  bc0[lane] = Kc[0];
  __syncwarp();
  T d = bc0[0], pinv = T(1) / d;
  // a bad pivot is noted, not branched on: a branch before the pivot's use would let the
  // compiler move the next pivot's divide after it, out of the shadow of this pivot's
  // updates (the elimination goes on to the end, its result unused)
  bool ok = true;
#pragma unroll
  for (int k = 0; k < kW; ++k) {
    const T* __restrict__ row = (k & 1) ? bc1 : bc0;  // K_ki (negated for i < k)
    T* __restrict__ next = (k & 1) ? bc0 : bc1;
    ok = ok & (d > T(0)) & is_finite(d);  // (no short circuit: no branch)
    // row i of column `lane`: K_ij − K_ik·K_kj/K_kk, and in the pivot's column
    // −K_ik/K_kk: one select and one fused multiply-add per entry (K_ik·(−m) is
    // −K_ik·m exactly: no negation an entry)
    const bool piv = lane == k;
    const T mult = piv ? pinv : Kc[k] * pinv, nmult = -mult;
    T dn = T(1), pn = T(1);
    if (k + 1 < kW) {  // row k+1, its broadcast and the next pivot's divide
      Kc[k + 1] = fma(row[k + 1], nmult, piv ? T(0) : Kc[k + 1]);
      next[lane] = lane < k + 1 ? -Kc[k + 1] : Kc[k + 1];
      __syncwarp();
      dn = next[k + 1];
      pn = T(1) / dn;
    }
    // the other rows, four at a time, the next four loaded before these are used
    const int first = Inverse ? 0 : (k & ~3);  // the test's rows i > k only
    T cur[4], nxt[4];
    load4(row + first, cur);
#pragma unroll
    for (int i0 = 0; i0 < kW; i0 += 4) {
      if (i0 < first) continue;
      if (i0 + 4 < kW) load4(row + i0 + 4, nxt);
      T base[4];  // the four selects before the four multiply-adds that wait on them
#pragma unroll
      for (int u = 0; u < 4; ++u) base[u] = piv ? T(0) : Kc[i0 + u];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int i = i0 + u;
        if (i == k || i == k + 1 || (!Inverse && i < k)) continue;
        Kc[i] = fma(cur[u], nmult, base[u]);
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) cur[u] = nxt[u];
    }
    Kc[k] = mult;
    __syncwarp();  // this row's reads done before pivot k+1 writes its buffer again
    d = dn, pinv = pn;
  }
  return ok;
}

// Kc ← column `lane` of K = P + diag(σ) + Aᵀdiag(ρ)A (identity columns beyond n),
// then its inverse. K is formed in shared memory from A's nonzeros: for each row r of
// the pattern (L entries), lane b adds ρ_r·(A_ra·A_rb) to K[c_a][c_b] for every entry a,
// L steps a row (the nonzero pairs, in row order as qp_form_K adds them) instead of a
// dense m x n sweep, taken Chunk at a time (loads first: one memory latency a chunk,
// not one an entry; the sums unchanged). Chunk > 1 costs registers: the kernel takes 4
// in its 255-register variants, 1 in the others (at 2 the float plain one spilled).
//
// Dense (A also dense in shared memory, Problem::dense): lane j forms column j in its
// registers, P's column and σ, then for each row r of column j's nonzeros in row order
// ρ_r·(A_ri·A_rj) for every i (A_ri = 0 off the pattern adds an exact zero), so each
// entry takes the same terms in the same order as above, with no shared K and no pass
// over the rows one at a time.
template <int Chunk, bool Dense, class T>
__device__ bool factor(const Problem& pr, const Pattern& pt, const T* __restrict__ P, const Smem<T>& s, T sig,
                       T (&Kc)[kW], int lane) {
  const int n = pr.n, m = pr.m, ldk = Smem<T>::ldk;
  const int* __restrict__ row_ptr = pt.row_ptr;
  const int* __restrict__ col = pt.col;
  const bool own = lane < n;
  if (Dense && pr.dense) {
#pragma unroll
    for (int i = 0; i < kW; ++i)
      Kc[i] = own && i < n ? P[i * n + lane] + (i == lane ? sig : T(0)) : (i == lane ? T(1) : T(0));
    if (own) {
      for (int k = pt.col_ptr[lane], e = pt.col_ptr[lane + 1]; k < e; ++k) {
        const int r = pt.csc_row[k];
        const T ab = s.A[pt.csc_pos[k]], rr = s.rho[r];
        const T* __restrict__ ar = s.Ad + r * Smem<T>::dld;
#pragma unroll
        for (int i0 = 0; i0 < kW; i0 += 4) {
          T a[4];
          load4(ar + i0, a);
#pragma unroll
          for (int u = 0; u < 4; ++u) Kc[i0 + u] = Kc[i0 + u] + rr * (a[u] * ab);
        }
      }
    }
    return gj_inverse(Kc, lane, s.bc, s.tn);
  }
  __syncwarp();  // K's first row may still be read as the broadcast row
  for (int i = 0; i < n; ++i)
    if (own) s.K[i * ldk + lane] = P[i * n + lane] + (i == lane ? sig : T(0));
  __syncwarp();
  for (int r = 0; r < m; ++r) {
    const int k0 = row_ptr[r], L = row_ptr[r + 1] - k0;  // L <= n <= 32
    const T rr = s.rho[r];
    const bool mine = lane < L;
    const int cb = mine ? col[k0 + lane] : 0;
    const T ab = mine ? s.A[k0 + lane] : T(0);
    // Chunk entries a at a time: their columns, values and K's entries loaded before
    // the multiply-adds and stores (distinct K entries: a row's columns are distinct)
    for (int a0 = 0; a0 < L; a0 += Chunk) {
      int ca[Chunk];
      T aa[Chunk], kv[Chunk];
#pragma unroll
      for (int u = 0; u < Chunk; ++u) ca[u] = a0 + u < L ? col[k0 + a0 + u] : 0;
#pragma unroll
      for (int u = 0; u < Chunk; ++u)
        if (a0 + u < L) aa[u] = s.A[k0 + a0 + u], kv[u] = mine ? s.K[ca[u] * ldk + cb] : T(0);
#pragma unroll
      for (int u = 0; u < Chunk; ++u)
        if (a0 + u < L && mine) s.K[ca[u] * ldk + cb] = kv[u] + rr * (aa[u] * ab);
    }
    __syncwarp();
  }
#pragma unroll
  for (int i = 0; i < kW; ++i) Kc[i] = own && i < n ? s.K[i * ldk + lane] : (i == lane ? T(1) : T(0));
  __syncwarp();
  return gj_inverse(Kc, lane, s.bc, s.tn);
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

template <class T>
__device__ __forceinline__ T max4(const T (&v)[4]) {
  return max_of(max_of(v[0], v[1]), max_of(v[2], v[3]));
}

// dst[i] = src[i] for i < count, lane-strided, U loads of a lane issued before their stores
template <int U, class T>
__device__ __forceinline__ void copy_strided(T* __restrict__ dst, const T* __restrict__ src, int count, int lane) {
  for (int i0 = lane; i0 < count; i0 += U * kW) {
    T v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = i0 + u * kW < count ? src[i0 + u * kW] : T(0);
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (i0 + u * kW < count) dst[i0 + u * kW] = v[u];
  }
}

// (A v)_r over row r's nonzeros in CSR order (csr_matvec's sums), v in shared; a
// chunk's column indices and values are loaded before its multiply-adds
template <class T>
__device__ __forceinline__ T row_dot(const Smem<T>& s, const Pattern& pt, int r, const T* v) {
  T acc = T(0);
  const int e = pt.row_ptr[r + 1];
  for (int k = pt.row_ptr[r]; k < e; k += kChunk) {
    int c[kChunk];
    T a[kChunk], w[kChunk];
#pragma unroll
    for (int u = 0; u < kChunk; ++u) c[u] = k + u < e ? pt.col[k + u] : 0;
#pragma unroll
    for (int u = 0; u < kChunk; ++u)
      if (k + u < e) a[u] = s.A[k + u], w[u] = v[c[u]];
#pragma unroll
    for (int u = 0; u < kChunk; ++u)
      if (k + u < e) acc += a[u] * w[u];
  }
  return acc;
}
// acc + (Aᵀ w)_j over column j's nonzeros in row order (csr_matvec_t's sums), w in shared
template <int S, class T>
__device__ __forceinline__ T col_dot(const Smem<T>& s, const Pattern& pt, int j, const T* w, T acc0 = T(0)) {
  T acc[S];  // S partial sums (a slot of the chunk adds into acc[slot % S])
#pragma unroll
  for (int u = 0; u < S; ++u) acc[u] = u == 0 ? acc0 : T(0);
  const int e = pt.col_ptr[j + 1];
  for (int k = pt.col_ptr[j]; k < e; k += kChunk) {
    int p[kChunk], r[kChunk];
    T a[kChunk], x[kChunk];
#pragma unroll
    for (int u = 0; u < kChunk; ++u) {
      p[u] = k + u < e ? pt.csc_pos[k + u] : 0;
      r[u] = k + u < e ? pt.csc_row[k + u] : 0;
    }
#pragma unroll
    for (int u = 0; u < kChunk; ++u)
      if (k + u < e) a[u] = s.A[p[u]], x[u] = w[r[u]];
#pragma unroll
    for (int u = 0; u < kChunk; ++u)
      if (k + u < e) acc[u % S] += a[u] * x[u];
  }
  return add_partials<S>(acc);
}
// (P v)_j, v in shared: P symmetric, so column j (coalesced over the lanes) in row order
template <int S, class T>
__device__ __forceinline__ T p_dot(const T* __restrict__ P, int n, int j, const T* v) {
  T acc[S];  // S partial sums
#pragma unroll
  for (int u = 0; u < S; ++u) acc[u] = T(0);
  static_assert(kChunk == 4, "v's chunks are 16-byte loads");
  // (v: a row of 32, 16-byte aligned.) The whole chunks without a test an entry, then
  // the partial one (its entries beyond n not used)
  const int nf = n & ~(kChunk - 1);
  for (int i = 0; i < nf; i += kChunk) {
    T a[kChunk], w[kChunk];
    load4(v + i, w);
#pragma unroll
    for (int u = 0; u < kChunk; ++u) a[u] = P[(i + u) * n + j];
    loads_issued();
#pragma unroll
    for (int u = 0; u < kChunk; ++u) acc[u % S] += a[u] * w[u];
  }
  if (nf < n) {
    T a[kChunk], w[kChunk];
    load4(v + nf, w);
#pragma unroll
    for (int u = 0; u < kChunk; ++u)
      if (nf + u < n) a[u] = P[(nf + u) * n + j];
#pragma unroll
    for (int u = 0; u < kChunk; ++u)
      if (nf + u < n) acc[u % S] += a[u] * w[u];
  }
  return add_partials<S>(acc);
}

// With A dense in shared memory (Problem::dense): (A v)_r over row r's 32 entries in
// column order, the entries off the pattern adding exact zeros, in S partial sums
// (columns i mod S; S = 1: row_dot's sum for a pattern whose rows list their columns in
// ascending order). Chains of 32 / S multiply-adds with no index loads: on the
// ContactNets QP (rows of up to 25 nonzeros) shorter than the
// sparse loop's chunks of dependent loads. (Aᵀw the same way: col_dot_dense, below.)
template <int S, class T>
__device__ __forceinline__ T row_dot_dense(const Smem<T>& s, int r, const T* v) {
  const T* __restrict__ a = s.Ad + r * Smem<T>::dld;
  T acc[S];
#pragma unroll
  for (int u = 0; u < S; ++u) acc[u] = T(0);
  // four entries a step, the next four loaded before these are used (v: a row of 32,
  // 16-byte aligned)
  T av[4], w[4];
  load4(a, av);
  load4(v, w);
#pragma unroll
  for (int i0 = 0; i0 < kW; i0 += 4) {
    T an[4], wn[4];
    if (i0 + 4 < kW) load4(a + i0 + 4, an), load4(v + i0 + 4, wn);
    loads_issued();
#pragma unroll
    for (int u = 0; u < 4; ++u) acc[u % S] += av[u] * w[u];
    if (i0 + 4 < kW)
#pragma unroll
      for (int u = 0; u < 4; ++u) av[u] = an[u], w[u] = wn[u];
  }
  return add_partials<S>(acc);
}
// acc + (Aᵀ w)_j from the dense A (Problem::dense; m <= 32: the caller's `dprod`): column j's m entries in row
// order, S partial sums (rows r mod S), the entries off the pattern adding exact zeros;
// a lane reads its column's entries (consecutive across the lanes) and w (broadcast)
template <int S, class T>
__device__ __forceinline__ T col_dot_dense(const Smem<T>& s, int m, int j, const T* w, T acc0) {
  const T* __restrict__ a = s.Ad + j;
  T acc[S];
#pragma unroll
  for (int u = 0; u < S; ++u) acc[u] = u == 0 ? acc0 : T(0);
  // (w: an m-sized row, padded to a multiple of 4, 16-byte aligned.) The whole groups
  // of four rows without a test an entry, then the partial one, whose padding adds zeros
  const int mf = m & ~3;
#pragma unroll
  for (int r0 = 0; r0 < kW; r0 += 4) {
    if (r0 >= mf) break;
    T av[4], wv[4];
    load4(w + r0, wv);
#pragma unroll
    for (int u = 0; u < 4; ++u) av[u] = a[(r0 + u) * Smem<T>::dld];
    loads_issued();
#pragma unroll
    for (int u = 0; u < 4; ++u) acc[u % S] += av[u] * wv[u];
  }
  if (mf < m) {
    T av[4], wv[4];
    load4(w + mf, wv);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      av[u] = mf + u < m ? a[(mf + u) * Smem<T>::dld] : T(0);
      wv[u] = mf + u < m ? wv[u] : T(0);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) acc[u % S] += av[u] * wv[u];
  }
  return add_partials<S>(acc);
}
template <int S, class T>
__device__ __forceinline__ T col_dot_any(bool dense, const Smem<T>& s, const Pattern& pt, int m, int j, const T* w,
                                         T acc0 = T(0)) {
  return dense ? col_dot_dense<S>(s, m, j, w, acc0) : col_dot<S>(s, pt, j, w, acc0);
}
// row_dot_dense where `dense` (the kernel's choice, below), else row_dot
template <int S, class T>
__device__ __forceinline__ T row_dot_any(bool dense, const Smem<T>& s, const Pattern& pt, int r, const T* v) {
  return dense ? row_dot_dense<S>(s, r, v) : row_dot(s, pt, r, v);
}

// blocks of one warp; at most 128 registers (16 resident warps per SM on sm_90), the
// stagnation-restart variants 255 (8 warps): at 128 the double one spilled 1,024 B a
// lane (stores; 1,680 B loads), and it is ContactNets' QP, whose training steps put
// one problem's warp on an SM (latency-bound: registers matter, occupancy not).
// Fallback: the stagnation restart (QpSettings::fallback) is compiled in (a second
// phase, cold, with qp_fallback_settings for the rest of the budget, as qp_admm_solve);
// the launch picks the variant, so a solve without it pays nothing for it.
// warm_each (optional): per problem, warm-start it (non-zero) or not; else `warm`.
// rho0, rho_out (optional): per problem, the first ρ (> 0; else the settings') and the final ρ.
// Kept: the kept factorization (WarpLaunch::kept) is compiled in, a variant launched
// only with it: the code that loads and stores it costs the others registers (spills).
// IMPULSE_WARP_CLOCKS (a measurement build only: CMake's IMPULSE_WARP_CLOCKS, used by
// bench/gpu_timing.sh's *_clocks cases): lane 0 reads %clock at the kernel's phase
// boundaries and adds each interval to its phase (in shared memory); the finish prints
// them ("impulse_clocks" lines, print below), which bench/gpu_model.py reads. Under the
// simulator's timing model %clock is its cycle count, so these are the phases' own
// cycles (a few instructions a boundary added), not summed latencies.
#ifdef IMPULSE_WARP_CLOCKS
// (phases: loading the data into shared memory, the input check, the initial iterate,
// Ruiz, ρ and the first factorization; an iteration's own work; a check's three parts
// (Ax and the primal residual, Px and Aᵀy, the reductions and the verdict); the
// infeasibility test; a ρ update that refactored, a ρ test that did not; a stagnation
// restart's set-up; the finish)
enum ClockPhase {
  kClkLoad, kClkInput, kClkInit, kClkRuiz, kClkFactor, kClkIter, kClkCheckAx, kClkCheckPx, kClkCheckEnd,
  kClkInfeas, kClkRho, kClkRhoTest, kClkRestart, kClkFinish, kClkN
};
// the sums and counts ahead of the kernel's own shared memory, in the launch's dynamic
// shared memory (the simulator places a static __shared__ array over the dynamic one)
constexpr int kClkBytes = 128;
static_assert(2 + 2 * kClkN <= 32, "a problem's fields (print)");
static_assert(kClkN * 8 <= kClkBytes, "the clocks' shared bytes");
__device__ __forceinline__ unsigned clock32() {  // %clock (the simulator has no %clock64)
  unsigned c;
  asm volatile("mov.u32 %0, %%clock;" : "=r"(c));
  return c;
}
struct WarpClocks {
  unsigned* sum;  // kClkN in shared memory (32 bits: the simulator's widening of a 32-bit
                  // difference to 64 gave 0; a solve's cycles are far below 2³²)
  int* cnt;
  unsigned t;
  __device__ void start(int lane) {
    if (lane == 0) {
      for (int p = 0; p < kClkN; ++p) sum[p] = 0, cnt[p] = 0;
      t = clock32();
    }
  }
  __device__ void lap(int lane, int p) {
    if (lane == 0) {
      const unsigned now = clock32();
      sum[p] += now - t, ++cnt[p], t = now;
    }
  }
  // one number a line: the simulator's printf takes %u, %d and %f and reads one argument
  // right, so each line is ((k·32 + field)·2³² + value) as a double (exact below 2⁵³):
  // field 0 iterations, 1 ρ updates, 2 + 2p phase p's cycles, 3 + 2p its intervals
  __device__ void print(int lane, int k, int iterations, int rho_updates) const {
    if (lane != 0) return;
    auto put = [&](int field, unsigned long long v) {
      printf("impulse_clocks %f\n", (double(k) * 32.0 + double(field)) * 4294967296.0 + double(v));
    };
    put(0, unsigned(iterations)), put(1, unsigned(rho_updates));
    for (int p = 0; p < kClkN; ++p) put(2 + 2 * p, sum[p]), put(3 + 2 * p, unsigned(cnt[p]));
  }
};
#define IMPULSE_CLK(...) __VA_ARGS__
#else
#define IMPULSE_CLK(...)
#endif

template <class T, bool Fallback, bool Kept>
__global__ void __launch_bounds__(kW, Fallback ? 8 : 16) qp_admm_warp_kernel(int batch, Problem pr, Pattern pt,
                                    const T* __restrict__ Pg,
                                    const T* __restrict__ qg, const T* __restrict__ Ag,
                                    const T* __restrict__ bg, T* xg, T* yg, T* objective, T* value,
                                    T* prim_res_out, T* dual_res_out, int* status_out, int* fault_out,
                                    int* iterations_out, int* rho_updates_out, QpSettings<T> st0,
                                    bool warm, const int* __restrict__ warm_each, T* kept, bool reuse,
                                    const T* rho0, T* rho_out) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  constexpr int kFactorChunk = Fallback ? 4 : 1;  // the 255-register variants (factor)
  // partial sums of the products (col_dot, p_dot, row_dot_dense, K⁻¹ rhs): four in the
  // 255-register variants; one, the serial order, in the 128-register ones, where four
  // spilled on sm_90 (float: 0 -> 4 B; `python3 bench/gpu_spills.py`)
  constexpr int kSums = Fallback ? 4 : 1;
  const int lane = threadIdx.x;
  const int k = blockIdx.x;
  if (k >= batch) return;
  IMPULSE_CLK(WarpClocks clk{reinterpret_cast<unsigned*>(smem_raw), reinterpret_cast<int*>(smem_raw + kClkN * 4), 0u};
              clk.start(lane);)
  const int n = pr.n, m = pr.m, nnz = pr.nnz;
  const ConeSpec cones = pr.cones;
  // A dense and P in shared memory: the stagnation-restart variants, when it fits
  const bool dense = Fallback && pr.dense;
  const Smem<T> s = Smem<T>::carve(reinterpret_cast<T*>(smem_raw IMPULSE_CLK(+kClkBytes)), nnz, m, dense);
  // Ax from the dense A (row_dot_dense) where A is dense, m <= 32 (one round of rows) and a
  // row has 12 or more nonzeros (below that the sparse loop's few chunks are shorter)
  bool dprod = false;
  if (dense && m <= kW) {
    int longest = 0;
    for (int r = lane; r < m; r += kW) longest = max(longest, pt.row_ptr[r + 1] - pt.row_ptr[r]);
    for (int o = 16; o > 0; o >>= 1) longest = max(longest, int(shfl_xor_b32(unsigned(longest), o)));
    dprod = longest >= 12;
  }

  // P in shared memory in the dense variants (loaded below), else read where it is
  const T* __restrict__ P = dense ? s.P : Pg + size_t(k) * n * n;
  const T* __restrict__ A = Ag + size_t(k) * nnz;
  const bool own = lane < n;
  const T qj = own ? qg[size_t(k) * n + lane] : T(0);

  // ---- set-up: A's nonzeros and b into shared memory -------------------------------
  // (global reads eight a lane at a time, all in flight before their stores: one memory
  // latency per eight, not one per element)
  copy_strided<8>(s.A, A, nnz, lane);
  for (int r = lane; r < m; r += kW) s.b[r] = bg[size_t(k) * m + r];
  if (dense) {  // P; A dense: zeros, then a lane per row scatters its nonzeros
    copy_strided<8>(s.P, Pg + size_t(k) * n * n, n * n, lane);
    for (int i = lane; i < m * Smem<T>::dld; i += kW) s.Ad[i] = T(0);
    __syncwarp();
    for (int r = lane; r < m; r += kW) {
      const int e1 = pt.row_ptr[r + 1];
      for (int e = pt.row_ptr[r]; e < e1; e += 4) {  // four entries' column and value, then their stores
        int c[4];
        T v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) c[u] = e + u < e1 ? pt.col[e + u] : 0, v[u] = e + u < e1 ? s.A[e + u] : T(0);
#pragma unroll
        for (int u = 0; u < 4; ++u)
          if (e + u < e1) s.Ad[r * Smem<T>::dld + c[u]] = v[u];
      }
    }
  }
  __syncwarp();

  QpInfo<T> info;
  T xj = T(0);
  T Kc[kW];
  // the kept factorization (WarpLaunch::kept, qp_admm_solve's `reuse`): K⁻¹ by rows of
  // n, D, E, c, ρ, σ, ρ_eq scale, Ruiz passes (usable only with the same: qp_factor_kept),
  // and the flag (1: usable)
  // (its address formed where used, from the launch's constants: a pointer held
  // through the kernel costs the iteration two registers)
  const int kf = n * n + n + m + 5;
  auto kept_at = [&]() { return kept + size_t(blockIdx.x) * warp_kept_size(n, m); };
  const bool kept_k = Kept && reuse && kept_at()[kf] == T(1) && kept_at()[kf - 3] == st0.sigma &&
                      kept_at()[kf - 2] == st0.rho_eq_scale && kept_at()[kf - 1] == T(st0.scaling_iters);
  auto keep_flag = [&](bool valid) {
    if (Kept && lane == 0) kept_at()[kf] = valid ? T(1) : T(0);
  };
  auto finish_early = [&]() {  // x, y as they are; the info as set
    IMPULSE_CLK(clk.lap(lane, kClkFinish); clk.print(lane, k, info.iterations, info.rho_updates);)
    if (own) xg[size_t(k) * n + lane] = xj;
    for (int r = lane; r < m; r += kW) yg[size_t(k) * m + r] = s.y[r];
    if (lane == 0) {
      objective[k] = info.objective, value[k] = info.value;
      prim_res_out[k] = info.prim_res, dual_res_out[k] = info.dual_res;
      status_out[k] = int(info.status), fault_out[k] = int(info.fault);
      iterations_out[k] = info.iterations, rho_updates_out[k] = info.rho_updates;
      if (rho_out) rho_out[k] = info.rho;
    }
  };

  IMPULSE_CLK(clk.lap(lane, kClkLoad);)
  // ---- the input check (qp_check_input) ----------------------------------------
  if (st0.check_input) {
    bool bad_p = false, bad_q = false, bad_a = false, bad_b = false;
    T amax = T(0), asym = T(0), dmax = T(1);
    if (own && !kept_k) {  // row r, column `lane`; below the diagonal against its mirror
      for (int r = 0; r < n; ++r) {
        const T v = P[r * n + lane];
        bad_p |= !is_finite(v);
        amax = max_of(amax, mag(v));
        if (lane < r) asym = max_of(asym, mag(v - P[lane * n + r]));
        if (lane == r) dmax = max_of(dmax, mag(v));
      }
    }
    bad_q = own && !is_finite(qj);
    if (!kept_k)
      for (int i = lane; i < nnz; i += kW) bad_a |= !is_finite(A[i]);
    for (int r = lane; r < m; r += kW) {  // qp_b_usable: +inf allowed on a nonnegative row
      const T v = s.b[r];
      bad_b |= !is_finite(v) && (r < cones.n_zero || r >= cones.soc_begin() || !(v > T(0)));
    }
    InputFault f = InputFault::kNone;
    if (__any_sync(kFull, bad_p))
      f = InputFault::kNonFiniteP;
    else if (__any_sync(kFull, bad_q))
      f = InputFault::kNonFiniteQ;
    else if (__any_sync(kFull, bad_a))
      f = InputFault::kNonFiniteA;
    else if (__any_sync(kFull, bad_b))
      f = InputFault::kNonFiniteB;
    else if (!kept_k) {
      amax = wmax(amax), asym = wmax(asym), dmax = wmax(dmax);
      const T sym_tol = T(1e3) * max_of(amax, T(1)) * (sizeof(T) == 4 ? T(1.2e-7) : T(2.3e-16));
      if (asym > sym_tol) {
        f = InputFault::kAsymmetricP;
      } else if (st0.check_psd) {
        // PSD up to psd_tol: P + shift·I must have positive pivots
        const T shift = st0.psd_tol * dmax;
#pragma unroll
        for (int i = 0; i < kW; ++i) {
          if (own && i < n)
            Kc[i] = P[i * n + lane] + (i == lane ? shift : T(0));
          else
            Kc[i] = i == lane ? T(1) : T(0);
        }
        if (!gj_inverse<T, false>(Kc, lane, s.bc, s.tn)) f = InputFault::kNotPsdP;
      }
    }
    if (f != InputFault::kNone) {
      for (int r = lane; r < m; r += kW) s.y[r] = T(0);
      __syncwarp();
      info.fault = f;
      info.status = SolveStatus::kInvalidInput;
      if (!kept_k) keep_flag(false);  // as the CPU's, whose PSD test overwrites its K⁻¹
      finish_early();
      return;
    }
  }

  // phase 0 with the settings given; phase 1 (Fallback), after a stall, cold with
  // qp_fallback_settings for the rest of the budget (qp_admm_solve's phases)
  const bool warm_k = warm_each ? warm_each[k] != 0 : warm;
  int used = 0, updates = 0;  // the stalled phase's iterations and ρ updates
  for (int phase = 0;; ++phase) {
    const QpSettings<T> st =
        Fallback && phase == 1 ? impulse::detail::qp_fallback_settings(st0, st0.max_iter - used) : st0;
    const bool warm = phase == 0 && warm_k;
    const bool kept_ph = phase == 0 && kept_k;
    info = QpInfo<T>{};
    IMPULSE_CLK(clk.lap(lane, phase == 0 ? kClkInput : kClkRestart);)
    // ---- the initial iterate ------------------------------------------------------
    if (warm) {
      xj = own ? xg[size_t(k) * n + lane] : T(0);
      s.xs[lane] = xj;
      // a row without a bound (b_r = +inf) keeps y_r = 0, as qp_setup
      for (int r = lane; r < m; r += kW)
        s.y[r] = r >= cones.n_zero && r < cones.soc_begin() && !is_finite(s.b[r]) ? T(0) : yg[size_t(k) * m + r];
      __syncwarp();
      for (int r = lane; r < m; r += kW) s.z[r] = row_dot_any<kSums>(dprod, s, pt, r, s.xs);
    } else {
      xj = T(0);
      for (int r = lane; r < m; r += kW) s.y[r] = T(0), s.z[r] = T(0);
    }
    __syncwarp();
    IMPULSE_CLK(clk.lap(lane, phase == 0 ? kClkInit : kClkRestart);)

    // ---- Ruiz equilibration (qp_equilibrate) ------------------------------------------
    T dj = T(1), cscale = T(1);
    for (int r = lane; r < m; r += kW) s.e[r] = kept_ph ? kept_at()[n * n + n + r] : T(1);
    s.ds[lane] = own ? T(1) : T(0);
    __syncwarp();
    // with a kept factorization: none (iters = −1), D, E, c as they were (below)
    const int iters = kept_ph ? -1 : st.scaling_iters;
    // |P|'s column `lane` in the registers K⁻¹ takes later (zero beyond n)
    if (!kept_ph) {
#pragma unroll
      for (int i = 0; i < kW; ++i) Kc[i] = own && i < n ? mag(P[i * n + lane]) : T(0);
    }
    for (int it = 0; it <= iters; ++it) {
      // column norms of c·D P D (dense_col_absmax_scaled: max over i of |P_ij|·D_i)
      // (maxima in four chains, combined: a maximum is the same in any order)
      T tn;
      {
        T mx[4] = {T(0), T(0), T(0), T(0)};
#pragma unroll
        for (int i0 = 0; i0 < kW; i0 += 4) {
          T d[4];
          load4(s.ds + i0, d);
#pragma unroll
          for (int u = 0; u < 4; ++u) mx[u] = max_of(mx[u], Kc[i0 + u] * d[u]);
        }
        tn = max4(mx);
      }
      tn *= cscale * dj;
      if (it > 0 || iters == 0) {
        s.tn[lane] = tn;
        __syncwarp();
        T mean = T(0);
#pragma unroll
        for (int j0 = 0; j0 < kW; j0 += 4) {  // the serial order, four reads a load
          T t[4];
          load4(s.tn + j0, t);
#pragma unroll
          for (int u = 0; u < 4; ++u)
            if (j0 + u < n) mean += t[u];
        }
        const T qn = wmax(own ? mag(qj) * dj : T(0)) * cscale;
        mean /= T(n);
        const T gamma = T(1) / impulse::detail::qp_limit_scaling(max_of(mean, qn));
        if (iters > 0) {
          cscale *= gamma;
          tn *= gamma;
        }
        __syncwarp();
      }
      if (it == iters) break;
      // column and row norms of E A D (qp_A_norms)
      // (dense: over the dense A's column and rows, whose entries off the pattern add
      // products 0, which change no maximum: the same norms, without index loads)
      T cn = T(0);
      if (dense) {
        if (own) {
          T mx[4] = {T(0), T(0), T(0), T(0)};
          const int mf = m & ~3;  // whole groups of four rows, then the partial one
          for (int r0 = 0; r0 < mf; r0 += 4) {
            T a[4], e[4];
            load4(s.e + r0, e);
#pragma unroll
            for (int u = 0; u < 4; ++u) a[u] = s.Ad[(r0 + u) * Smem<T>::dld + lane];
            loads_issued();
#pragma unroll
            for (int u = 0; u < 4; ++u) mx[u] = max_of(mx[u], (mag(a[u]) * dj) * e[u]);
          }
          if (mf < m) {
            T a[4], e[4];
            load4(s.e + mf, e);  // (the padding beyond m: not used)
#pragma unroll
            for (int u = 0; u < 4; ++u)
              a[u] = mf + u < m ? s.Ad[(mf + u) * Smem<T>::dld + lane] : T(0), e[u] = mf + u < m ? e[u] : T(0);
#pragma unroll
            for (int u = 0; u < 4; ++u) mx[u] = max_of(mx[u], (mag(a[u]) * dj) * e[u]);
          }
          cn = max4(mx);
        }
        for (int r = lane; r < m; r += kW) {
          T mx[4] = {T(0), T(0), T(0), T(0)};
#pragma unroll
          for (int i0 = 0; i0 < kW; i0 += 4) {
            T a[4], d[4];
            load4(s.Ad + r * Smem<T>::dld + i0, a);
            load4(s.ds + i0, d);
#pragma unroll
            for (int u = 0; u < 4; ++u) mx[u] = max_of(mx[u], mag(a[u]) * d[u]);
          }
          s.tm[r] = max4(mx) * s.e[r];
        }
      } else {
        if (own)
          for (int k = pt.col_ptr[lane], e = pt.col_ptr[lane + 1]; k < e; ++k)
            cn = max_of(cn, (mag(s.A[pt.csc_pos[k]]) * dj) * s.e[pt.csc_row[k]]);
        for (int r = lane; r < m; r += kW) {
          T rn = T(0);
          for (int k = pt.row_ptr[r], e = pt.row_ptr[r + 1]; k < e; ++k)
            rn = max_of(rn, mag(s.A[k]) * s.ds[pt.col[k]]);
          s.tm[r] = rn * s.e[r];
        }
      }
      __syncwarp();
      for (int c = lane; c < cones.n_soc; c += kW) {  // one factor per cone
        const int r = cones.soc_begin() + 3 * c;
        const T v = max_of(s.tm[r], max_of(s.tm[r + 1], s.tm[r + 2]));
        s.tm[r] = s.tm[r + 1] = s.tm[r + 2] = v;
      }
      __syncwarp();
      if (own) dj *= T(1) / sqrt_of(impulse::detail::qp_limit_scaling(max_of(tn, cn)));
      for (int r = lane; r < m; r += kW) s.e[r] *= T(1) / sqrt_of(impulse::detail::qp_limit_scaling(s.tm[r]));
      s.ds[lane] = own ? dj : T(0);
      __syncwarp();
    }
    if (iters == 0) cscale = T(1);
    IMPULSE_CLK(clk.lap(lane, phase == 0 ? kClkRuiz : kClkRestart);)
    // ---- ρ and the factorization (qp_setup) -----------------------------------------
    // (the first phase at the problem's own first ρ where one is given: WarpLaunch::rho0)
    T rho = phase == 0 && rho0 ? impulse::detail::qp_first_rho(st, rho0[k]) : st.rho;
    if (kept_ph) {
      const T* kp = kept_at();
      dj = own ? kp[n * n + lane] : T(1);
      cscale = kp[n * n + n + m];
      rho = kp[n * n + n + m + 1];
    }
    const T sig = own ? st.sigma / (cscale * dj * dj) : T(0);

    set_rho(pr, s, rho, st.rho_eq_scale, cscale, lane);
    if (kept_ph) {
      const T* kp = kept_at();
#pragma unroll
      for (int i = 0; i < kW; ++i) Kc[i] = own && i < n ? kp[i * n + lane] : (i == lane ? T(1) : T(0));
    } else if (!factor<kFactorChunk, Fallback>(pr, pt, P, s, sig, Kc, lane)) {
      info.status = SolveStatus::kNumericalError;
      info.iterations += used, info.rho_updates += updates;
      keep_flag(false);
      finish_early();
      return;
    }

    // ---- the iteration (qp_admm_solve) ----------------------------------------------
    const T alpha = st.alpha, beta = T(1) - alpha;
    SolveStatus status = SolveStatus::kMaxIterations;
    impulse::detail::QpCheck<T> c;
    impulse::detail::QpSchedule<T> sc;
    sc.next_check = warm ? 1 : st.check_every;
    T xprev = T(0);
    impulse::detail::QpStagnation<T> stagnation;
    bool stalled = false;
    int it = 0;
    const int soc0 = cones.soc_begin();
    IMPULSE_CLK(clk.lap(lane, phase == 0 ? kClkFactor : kClkRestart);)
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
        rj = col_dot_any<kSums>(dprod, s, pt, m, lane, s.tm, sig * xj - qj);
      }
      // x̃_j = Σ_l K⁻¹_jl rhs_l, rhs through the broadcast row, four at a time, the next
      // four loaded before these are used
      s.bc[lane] = rj;
      __syncwarp();
      T xt = T(0);
      {
        T cur[4], nxt[4], acc[kSums];
#pragma unroll
        for (int u = 0; u < kSums; ++u) acc[u] = T(0);
        load4(s.bc, cur);
#pragma unroll
        for (int l0 = 0; l0 < kW; l0 += 4) {
          if (l0 + 4 < kW) load4(s.bc + l0 + 4, nxt);
#pragma unroll
          for (int u = 0; u < 4; ++u) acc[u % kSums] += Kc[l0 + u] * cur[u];
#pragma unroll
          for (int u = 0; u < 4; ++u) cur[u] = nxt[u];
        }
        xt = add_partials<kSums>(acc);
      }
      s.xts[lane] = xt;
      xj = own ? alpha * xt + beta * xj : T(0);
      __syncwarp();
      // rows: v = αAx̃ + (1−α)z
      for (int r = lane; r < m; r += kW) s.v[r] = alpha * row_dot_any<kSums>(dprod, s, pt, r, s.xts) + beta * s.z[r];
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
      IMPULSE_CLK(clk.lap(lane, kClkIter);)
      if (!check) continue;

      // ---- the check (qp_check_residuals) ----
      SolveStatus verdict = SolveStatus::kNotRun;
      s.xs[lane] = xj;
      __syncwarp();
      {
        T prim = T(0), axn = T(0), zn = T(0), spr = T(0), saxn = T(0), szn = T(0);
        for (int r = lane; r < m; r += kW) {
          const T ax = row_dot_any<kSums>(dprod, s, pt, r, s.xs);
          s.tm[r] = ax;
          const T e = s.e[r];
          const T rr = mag(ax - s.z[r]), aax = mag(ax), zz = mag(s.z[r]);
          prim = max_of(prim, rr), axn = max_of(axn, aax), zn = max_of(zn, zz);
          spr = max_of(spr, e * rr), saxn = max_of(saxn, e * aax), szn = max_of(szn, e * zz);
        }
        IMPULSE_CLK(clk.lap(lane, kClkCheckAx);)
        T dual = T(0), pxn = T(0), atyn = T(0), qn = T(0), sdr = T(0), spxn = T(0), satyn = T(0), sqn = T(0);
        T xpx = T(0), qx = T(0), by = T(0);
        if (own) {
          const T px = p_dot<kSums>(P, n, lane, s.xs);
          xpx = xj * px, qx = qj * xj;
          const T aty = col_dot_any<kSums>(dprod, s, pt, m, lane, s.y);
          const T rr = mag(px + qj + aty), apx = mag(px), aaty = mag(aty), aq = mag(qj);
          dual = rr, pxn = apx, atyn = aaty, qn = aq;
          sdr = dj * rr, spxn = dj * apx, satyn = dj * aaty, sqn = dj * aq;
        }
        IMPULSE_CLK(clk.lap(lane, kClkCheckPx);)
        // one butterfly for every maximum (and the gap's sums): the norms that the
        // tolerances and ρ's update use only through their maximum are combined in each
        // lane first, max(‖Ax‖, ‖z‖) and so on (a maximum in any grouping is the same)
        T red[8] = {prim, spr, max_of(saxn, szn), dual, sdr, max_of(max_of(spxn, satyn), sqn),
                    max_of(axn, zn), max_of(max_of(pxn, atyn), qn)};
        if (st.check_gap) {  // |xᵀPx + qᵀx + bᵀy| <= eps_abs + eps_rel·max(|xᵀPx|, |qᵀx|, |bᵀy|)
          for (int r = lane; r < m; r += kW) by += s.y[r] == T(0) ? T(0) : s.b[r] * s.y[r];
          T sums[3] = {xpx, qx, by};
          wmax_sum_all(red, sums);
          xpx = sums[0], qx = sums[1], by = sums[2];
        } else {
          wmax_all(red);
        }
        // (the scaled norms hold their groups' maxima: each field alone is not its own norm,
        // which only ρ's update reads, through those maxima)
        c.prim_res = red[0], c.sp_res = red[1], c.sax_norm = c.sz_norm = red[2];
        c.dual_res = red[3], c.sd_res = red[4], c.spx_norm = c.saty_norm = c.sq_norm = red[5];
        const T unorm_p = red[6], unorm_d = red[7];
        bool fin = is_finite(xj);
        for (int r = lane; r < m; r += kW) fin = fin && is_finite(s.y[r]);
        if (!is_finite(c.prim_res) || !is_finite(c.dual_res) || !__all_sync(kFull, fin)) {
          verdict = SolveStatus::kNumericalError;
        } else {
          c.eps_prim = st.eps_abs + st.eps_rel * unorm_p;
          c.eps_dual = st.eps_abs + st.eps_rel * unorm_d;
          bool gap_ok = true;
          if (st.check_gap) {
            const T gap = mag(xpx + qx + by);
            const T eg = st.eps_abs + st.eps_rel * max_of(max_of(mag(xpx), mag(qx)), mag(by));
            c.gap = is_finite(gap) && is_finite(eg) ? gap : T(1e30);
            c.eps_gap = eg;
            gap_ok = c.gap <= c.eps_gap;
          }
          if (c.prim_res <= c.eps_prim && c.dual_res <= c.eps_dual && gap_ok) verdict = SolveStatus::kSolved;
        }
      }
      IMPULSE_CLK(clk.lap(lane, kClkCheckEnd);)
      if (verdict == SolveStatus::kNotRun) {
        impulse::detail::qp_schedule_next(st, it, c, sc);
        // ---- infeasibility (qp_check_infeasible) ----
        __syncwarp();
        {  // primal: δy ∈ K*, Aᵀδy ≈ 0, bᵀδy < 0
          T dyn = T(0), bdy = T(0);
          for (int r = lane; r < m; r += kW) {
            const T dy = s.y[r] - s.yp[r];
            s.tm[r] = dy;
            dyn = max_of(dyn, mag(dy));
            bdy += qp_by(s.b[r], dy);
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
              const T aty = own ? mag(col_dot_any<kSums>(dprod, s, pt, m, lane, s.tm)) : T(0);
              if (wmax(aty) <= tol) verdict = SolveStatus::kPrimalInfeasible;
            }
          }
        }
        if (verdict == SolveStatus::kNotRun) {  // dual: Pδx ≈ 0, qᵀδx < 0, Aδx ∈ −K
          const T dx = own ? xj - xprev : T(0);
          const T dxn = wmax(mag(dx)), qdx = wsum(qj * dx);
          const T tol = st.eps_dinf * dxn;
          if (dxn > T(0) && qdx < -tol) {
            s.xs[lane] = dx;
            __syncwarp();
            bool in = true;
            for (int r = lane; r < m; r += kW) {
              const T a = row_dot_any<kSums>(dprod, s, pt, r, s.xs);
              s.tm[r] = a;
              if (r < cones.n_zero) in = in && !(mag(a) > tol);
              else if (r < soc0) in = in && !(a > tol && is_finite(s.b[r]));  // b_r = +inf: no bound
            }
            __syncwarp();
            for (int q = lane; q < cones.n_soc; q += kW) {
              const int r = soc0 + 3 * q;
              in = in && !(soc3_violation(-s.tm[r], -s.tm[r + 1], -s.tm[r + 2]) > tol);
            }
            if (__all_sync(kFull, in)) {
              const T pdx = own ? mag(p_dot<kSums>(P, n, lane, s.xs)) : T(0);
              if (wmax(pdx) <= tol) verdict = SolveStatus::kDualInfeasible;
            }
          }
        }
        __syncwarp();  // s.tm and s.xs were read across lanes: before they are written again
      }
      IMPULSE_CLK(clk.lap(lane, kClkInfeas); const int ru0 = info.rho_updates;)
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
          if (!factor<kFactorChunk, Fallback>(pr, pt, P, s, sig, Kc, lane))
            verdict = SolveStatus::kNumericalError;
          else
            ++info.rho_updates;
        }
      }
      IMPULSE_CLK(clk.lap(lane, info.rho_updates != ru0 ? kClkRho : kClkRhoTest);)
      if (verdict != SolveStatus::kNotRun) {
        status = verdict;
        break;
      }
      // ---- stagnation (QpSettings::fallback): restart cold ----
      if (Fallback && phase == 0 && st.fallback && stagnation.stalled(sc.last_ratio, it, st.max_iter)) {
        stalled = true;
        break;
      }
    }
    if (Fallback && stalled) {
      used = it, updates = info.rho_updates;
      continue;
    }
    // the factorization for the next solve (qp_keep_factor's rule): usable when made
    // in the first phase and not ended by a numerical error; rewritten unless it is
    // the kept one unchanged. (Here, not after the finish: K⁻¹'s registers are free there.)
    const bool usable = phase == 0 && status != SolveStatus::kNumericalError;
    if (Kept && usable && !(kept_ph && info.rho_updates == 0)) {
      T* kp = kept_at();
      if (own) {
#pragma unroll
        for (int i = 0; i < kW; ++i)  // (a constant index keeps Kc in registers)
          if (i < n) kp[i * n + lane] = Kc[i];
        kp[n * n + lane] = dj;
      }
      for (int r = lane; r < m; r += kW) kp[n * n + n + r] = s.e[r];
      if (lane == 0) {
        kp[n * n + n + m] = cscale, kp[n * n + n + m + 1] = rho;
        kp[kf - 3] = st.sigma, kp[kf - 2] = st.rho_eq_scale, kp[kf - 1] = T(st.scaling_iters);
      }
    }
    keep_flag(usable);

    // ---- finish (qp_finish) -----------------------------------------------------------
    if (it > st.max_iter) it = st.max_iter;
    status = impulse::detail::qp_final_status(status, c);
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
      for (int k = pt.row_ptr[r], e = pt.row_ptr[r + 1]; k < e; ++k) ax += double(s.A[k]) * double(s.xs[pt.col[k]]);
      lag += double(s.y[r]) * ax;
    }
    obj = wsum(obj), lag = wsum(lag);
    impulse::detail::qp_finish_info(status, it, obj, lag, c, info);
    info.rho = phase == 0 ? rho : T(0);  // (QpInfo::rho: not the fallback settings')
    info.iterations += used, info.rho_updates += updates;
    finish_early();
    return;
  }
}

}  // namespace

template <class T>
void launch_qp_warp(const WarpLaunch<T>& a, const QpSettings<T>& st, bool warm) {
  // A dense in the stagnation-restart variants when it fits (factor)
  const bool dense = st.fallback && warp_shared_bytes_dense(a.m, a.nnz, sizeof(T)) <= kWarpSharedLimit;
  const Problem pr{a.n, a.m, a.nnz, a.cones, dense};
  const Pattern pt{a.row_ptr, a.col, a.col_ptr, a.csc_pos, a.csc_row};
  const size_t smem = (dense ? warp_shared_bytes_dense(a.m, a.nnz, sizeof(T)) : warp_shared_bytes(a.m, a.nnz, sizeof(T)))
                      IMPULSE_CLK(+kClkBytes);
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "float or double");
  auto kernel = st.fallback ? (a.kept ? qp_admm_warp_kernel<T, true, true> : qp_admm_warp_kernel<T, true, false>)
                            : (a.kept ? qp_admm_warp_kernel<T, false, true> : qp_admm_warp_kernel<T, false, false>);
  kernel<<<a.batch, kW, smem>>>(a.batch, pr, pt, a.P, a.q, a.A, a.b, a.x, a.y, a.objective, a.value,
                                a.prim_res, a.dual_res, a.status, a.fault, a.iterations, a.rho_updates,
                                device_settings(st, true), warm, a.warm_each, a.kept, a.reuse, a.rho0, a.rho_out);
}

template void launch_qp_warp<float>(const WarpLaunch<float>&, const QpSettings<float>&, bool);
template void launch_qp_warp<double>(const WarpLaunch<double>&, const QpSettings<double>&, bool);

}  // namespace detail
}  // namespace cuda
}  // namespace impulse
