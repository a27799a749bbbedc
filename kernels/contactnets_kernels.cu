// ContactNets loss and gradient on the device (see kernels/contactnets_device.h): a
// warp per transition assembles, the layout's QP kernel solves (a warp per problem, or
// a thread per problem), and eight lanes per transition compute the gradient.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/contactnets_device.h"
#include "kernels/device_util.cuh"
#include "kernels/qp_kernels.h"

namespace impulse {
namespace cuda {

namespace {

using detail::check;
using detail::DevBuf;


// Three steps in either layout (kernels/contactnets_device.h): a warp per transition
// assembles its loss QP and loads its warm start; the QP kernel of the layout solves
// it (launch_qp_warp: a warp per problem, problem-contiguous arrays; launch_qp_thread:
// a thread per problem, batch-fastest arrays); eight lanes per transition keep the
// answer as the next warm start and compute the loss and gradient. The assembly and
// gradient kernels address the QP's arrays through Layout.
constexpr int kAsmWarps = 4;  // transitions (warps) per assembly block

// element e (of len) of problem kk: problem-contiguous (the warp QP's) or batch-fastest
// (the thread QP's: consecutive problems at consecutive addresses)
// (a template parameter of the kernels: the warp layout's code is as it was without it)
template <bool BatchFastest>
struct Layout {
  static constexpr bool batch_fastest = BatchFastest;
  int B;
  // problem kk's first element and the step between its elements
  __device__ size_t base(int kk, int len) const { return BatchFastest ? size_t(kk) : size_t(kk) * len; }
  __device__ size_t step() const { return BatchFastest ? size_t(B) : size_t(1); }
  __device__ size_t at(int kk, int len, int e) const { return base(kk, len) + size_t(e) * step(); }
};

// cn::assemble for a warp: lane j < 24 computes column j of B = [J_nᵀ J_tᵀ] (scaled
// units, cn::scaled) and keeps it in registers; the columns go through shared memory,
// and the warp writes P a row at a time (lane j: column j), q, A's penetration rows, b
// and the warm start with consecutive lanes at consecutive addresses (problem-contiguous
// arrays, the warp layout's; in the thread layout's batch-fastest arrays those lanes'
// addresses are B elements apart, a sector each, as the gradient kernel's reads of x and
// y are: that layout is not the default and was not tuned for it). The same sums,
// in cn::assemble_frame's order, as the CPU's. (A thread per transition held the whole
// frame in local memory and wrote 32 separate sectors per warp store.)
template <class T, bool BF>
__global__ void __launch_bounds__(kAsmWarps * 32)
    assemble_kernel(int B, int n, int m, int nnz, cn::LossConsts<T> c, const T* __restrict__ theta,
                    const int* __restrict__ idx, const T* __restrict__ xs, const T* __restrict__ xns,
                    const T* __restrict__ warm, const int* __restrict__ warm_ok, T* P, T* q, T* A, T* b,
                    T* x, T* y, T* constant, int* warm_each, T* rho0, Layout<BF> lay) {
  constexpr int k = cn::kK, nb = 3 * cn::kK;  // contacts, columns of B
  __shared__ T sB[kAsmWarps][nb][6];           // B's columns (scaled)
  __shared__ T sC[kAsmWarps][k][3];            // per contact: φ'_s, c_0, c_1
  __shared__ cn::ContactP<T> sP[kAsmWarps][k];  // per contact: cn::contact_p
  __shared__ T sTrig[cn::kOctagon][2];         // the octagon's directions
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  if (wid == 0 && lane < cn::kOctagon) cn::octagon_direction(lane, sTrig[lane][0], sTrig[lane][1]);
  __syncthreads();
  const int kk = blockIdx.x * kAsmWarps + wid;
  if (kk >= B) return;  // the whole warp
  const int t = idx[kk];
  const T* x0 = xs + size_t(t) * 13;
  const T* x1 = xns + size_t(t) * 13;
  const T L = c.L;
  // the scaled velocities (cn::scaled), every lane
  T nu[6], nun[6], Mi[6], nuf[6], dv[6];
  cn::scaled_velocities(c, x0, x1, nu, nun, Mi, nuf, dv);
  // lane j < 24: column j of B (its contact's cn::contact_frame at x, scaled); lane
  // i < 8 also φ_i and φ'_i
  T col[6] = {T(0), T(0), T(0), T(0), T(0), T(0)};
  T phi_s = T(0);
  if (lane < nb) {
    T R[9], phi, Jn[6], Jt[2][6];
    cn::rotation(x0, R);
    const bool normal = lane < k;
    const int i = normal ? lane : (lane - k) / 2;
    cn::contact_frame(theta, R, x0, i, phi, Jn, Jt);
    const bool odd = ((lane - k) & 1) != 0;
    T row[6];
#pragma unroll
    for (int e = 0; e < 6; ++e) row[e] = normal ? Jn[e] : odd ? Jt[1][e] : Jt[0][e];  // (no local array)
    cn::scaled_row(row, L, col);
    if (normal) {
      cn::rotation(x1, R);
      phi_s = phi / L;
      sC[wid][i][0] = cn::contact_phi(theta, R, x1, i) / L;
    }
    for (int e = 0; e < 6; ++e) sB[wid][lane][e] = col[e];
  }
  // c_i = J_t,i ν' of contact i: its two tangent lanes' entries (through shared
  // memory: GPGPU-Sim leaves the register of CUDA 13's shfl.sync.idx unwritten)
  if (lane >= k && lane < nb) {
    sC[wid][(lane - k) / 2][1 + (lane - k) % 2] = cn::row_velocity(col, nun);
  }
  __syncwarp();
  if (lane < k) {
    const T cv[2] = {sC[wid][lane][1], sC[wid][lane][2]};
    sP[wid][lane] = cn::contact_p(c, sC[wid][lane][0], cv);
  }
  __syncwarp();
  // P, a row at a time: 2 w MiBᵀMiB, then the activation, dissipation and slack terms
  // (cn::p_entry, as assemble_frame)
  for (int i = 0; i < n; ++i) {
    T v = T(0);
    if (i < nb && lane < nb) {  // the CPU's (row, column) = (max, min) of the pair, selected
      T bhi[6], blo[6];         // element by element (one call, no divergent pair of calls)
#pragma unroll
      for (int e = 0; e < 6; ++e) {
        bhi[e] = lane >= i ? col[e] : sB[wid][i][e];
        blo[e] = lane >= i ? sB[wid][i][e] : col[e];
      }
      v = cn::p_match(c, Mi, bhi, blo);
    }
    P[lay.at(kk, n * n, i * n + lane)] = cn::p_entry(c, sP[wid], i, lane, v);
  }
  q[lay.at(kk, n, lane)] = lane < nb ? cn::q_match(c, Mi, col, dv) : T(0);
  // A's penetration rows (−dt J_n,i M⁻¹ B, then the slack's −1), then the cone rows
  for (int i = 0; i < k; ++i)
    if (lane <= nb) A[lay.at(kk, nnz, i * (nb + 1) + lane)] = lane < nb ? cn::a_penetration(c, sB[wid][i], Mi, col) : T(-1);
  for (int p = k * (nb + 1) + lane; p < nnz; p += 32) {
    T v = T(-1);
    const int r = p - k * (nb + 1) - k;  // octagon: past the λ_n ≥ 0 rows
    if (c.octagon && r >= 0 && r % 3 != 0) v = sTrig[(r / 3) % cn::kOctagon][r % 3 - 1];
    A[lay.at(kk, nnz, p)] = v;
  }
  // b: φ_i + dt J_n,i ν_free on the penetration rows, 0 on the cone rows
  for (int r = lane; r < m; r += 32) b[lay.at(kk, m, r)] = r < k ? cn::b_penetration(c, phi_s, col, nuf) : T(0);
  if (lane == 0) constant[kk] = cn::match_constant(c, dv);
  // the warm start: x, y and the ρ the last solve ended at (n + m + 1 a transition)
  const int w = warm_ok[t];
  const T* wt = warm + size_t(t) * (n + m + 1);
  if (lane == 0) warm_each[kk] = w, rho0[kk] = w ? wt[n + m] : T(0);
  if (w)
    for (int i = lane; i < n + m; i += 32) (i < n ? x[lay.at(kk, n, i)] : y[lay.at(kk, m, i - n)]) = wt[i];
}

constexpr int kFinPer = 16;  // transitions per gradient block (8 lanes each)

// cn::gradient for eight lanes a transition: lane i of its octet takes contact i (its
// frame, its part of the QP gradient, regularizers and backpropagation, through the
// same cn:: functions as the CPU); the sums over contacts (Bλ, J_nᵀy, then dL/dz,
// dL/dT and the regularizers) go through shared memory, each lane adding the eight
// parts in contact order. (A thread per transition held the whole frame and its
// gradient in local memory.)
template <class T, bool BF>
__global__ void __launch_bounds__(kFinPer * cn::kK)
    finish_kernel(int B, int n, int m, cn::LossConsts<T> c, const T* __restrict__ theta,
                  const int* __restrict__ idx, const T* __restrict__ xs, const T* __restrict__ xns, T* warm,
                  int* warm_ok, const T* __restrict__ x, const T* __restrict__ y,
                  const T* __restrict__ constant, const T* __restrict__ value, const T* __restrict__ rho,
                  const int* __restrict__ status, T* loss, T* grad, int* solved, int want_grad, Layout<BF> lay) {
  constexpr int k = cn::kK;
  __shared__ T red[kFinPer][k][12];
  const int oct = threadIdx.x / k, i = threadIdx.x % k;  // transition in the block, contact
  const int kk_ = blockIdx.x * kFinPer + oct;
  const bool live = kk_ < B;
  const int kk = live ? kk_ : B - 1;  // (a dead octet computes a live one's numbers, stores nothing)
  const int t = idx[kk];
  const T* x0 = xs + size_t(t) * 13;
  const T* x1 = xns + size_t(t) * 13;
  const T* xk = x + lay.base(kk, n);
  const T* yk = y + lay.base(kk, m);
  const size_t st = lay.step();
  const T L = c.L;
  T R[9], Rn[9];
  cn::rotation(x0, R);
  cn::rotation(x1, Rn);
  // contact i's frame (SI) and scaled rows
  T phi, Jn[6], Jt[2][6];
  cn::contact_frame(theta, R, x0, i, phi, Jn, Jt);
  const T phin = cn::contact_phi(theta, Rn, x1, i);
  T Jn_s[6], Jt_s[2][6];
  cn::scaled_row(Jn, L, Jn_s);
  cn::scaled_row(Jt[0], L, Jt_s[0]);
  cn::scaled_row(Jt[1], L, Jt_s[1]);
  T nu[6], nun[6], Mi[6], nuf[6], dv[6];
  cn::scaled_velocities(c, x0, x1, nu, nun, Mi, nuf, dv);
  const T ln = xk[i * st], l0 = xk[(k + 2 * i) * st], l1 = xk[(k + 2 * i + 1) * st], yi = yk[i * st];
  // Bλ and J_nᵀy over the contacts
  for (int e = 0; e < 6; ++e) {
    red[oct][i][e] = Jn_s[e] * ln + Jt_s[0][e] * l0 + Jt_s[1][e] * l1;
    red[oct][i][6 + e] = Jn_s[e] * yi;
  }
  __syncwarp();
  T Jl[6], jny[6];
  for (int e = 0; e < 6; ++e) {
    T a = T(0), b = T(0);
    for (int j = 0; j < k; ++j) a += red[oct][j][e], b += red[oct][j][6 + e];
    Jl[e] = a, jny[e] = b;
  }
  __syncwarp();
  T gJ[6], pen_dir[6];
  cn::gradient_directions(c, Mi, dv, nuf, Jl, jny, gJ, pen_dir);
  T gphi = T(0), gphin = T(0), gJn[6] = {}, gJt[2][6] = {};
  cn::contact_qp_gradient(c, phin / L, Jt_s, nun, ln, l0, l1, yi, gJ, pen_dir, gphi, gphin, gJn, gJt);
  T reg = T(0);
  cn::contact_regularizers(c, Jn, Jt, reg, gJn, gJt);
  T dzT[9] = {}, da[3] = {}, db[3] = {};
  cn::contact_backprop(theta, R, Rn, x0, x1, i, gphi, gphin, gJn, gJt, dzT, dzT + 3, da, db);
  // dL/dz, dL/dT and the regularizers over the contacts
  for (int e = 0; e < 9; ++e) red[oct][i][e] = dzT[e];
  red[oct][i][9] = reg;
  __syncwarp();
  if (!live) return;
  if (want_grad) {
    for (int e = 0; e < 3; ++e) {
      grad[size_t(9 + 3 * i + e) * B + kk] = da[e];
      grad[size_t(33 + 3 * i + e) * B + kk] = db[e];
    }
    for (int e = i; e < 9; e += k) {
      T acc = T(0);
      for (int j = 0; j < k; ++j) acc += red[oct][j][e];
      grad[size_t(e) * B + kk] = acc;
    }
  }
  T* wt = warm + size_t(t) * (n + m + 1);
  for (int r = i; r < n + m; r += k) wt[r] = r < n ? xk[r * st] : yk[(r - n) * st];
  if (i == 0) {
    wt[n + m] = rho[kk];
    T rsum = T(0);
    for (int j = 0; j < k; ++j) rsum += red[oct][j][9];
    warm_ok[t] = 1;
    solved[kk] = is_solved(SolveStatus(status[kk])) ? 1 : 0;
    const T qp = value[kk] + constant[kk];
    loss[kk] = (qp > T(0) ? qp : T(0)) + rsum;
  }
}

}  // namespace

template <class T>
struct DeviceContactNets<T>::Impl {
  cn::LossConsts<T> consts;
  QpSettings<T> settings;
  DeviceLayout layout = DeviceLayout::kAuto;
  int n = cn::kN, m = 0, nnz = 0;
  detail::DevicePattern pat;
  QpShape shape;
  detail::ResidentSet<T> sets[2];
  DevBuf<T> P, q, A, b, x, y, work, grad;
  detail::StepIo<T> io;  // θ and indices down; losses, gradient sum, iterations, solved flags, ρ updates up
  // per-problem results (either layout)
  DevBuf<T> constant, objective, value, prim_res, dual_res, rho;
  DevBuf<int> status, fault, warm_each;
  cudaEvent_t start = nullptr, stop = nullptr;
};

template <class T>
DeviceContactNets<T>::DeviceContactNets(const cn::LossConsts<T>& consts, const QpSettings<T>& st,
                                        DeviceLayout layout)
    : impl_(new Impl) {
  if (!available()) throw Error("CUDA not available: " + device_info().reason);
  if (const char* bad = st.validate()) throw Error(std::string("QP settings: ") + bad);
  Impl& d = *impl_;
  d.consts = consts;
  d.settings = st;  // each layout's launch takes what it runs (detail::device_settings)
  std::vector<int> rp, cl;
  cn::pattern(consts.octagon, rp, cl);
  d.m = cn::rows(consts.octagon);
  d.nnz = static_cast<int>(cl.size());
  d.layout = resolve_layout(layout, d.n, d.m, d.nnz, sizeof(T));
  d.pat.upload(d.m, d.n, rp.data(), cl.data(), d.layout == DeviceLayout::kWarp);
  ConeSpec cones;
  if (consts.octagon) cones.n_nonneg = d.m;
  else cones.n_nonneg = cn::kK, cones.n_soc = cn::kK;
  d.shape.n = d.n;
  d.shape.cones = cones;
  d.shape.a = CsrPattern{d.m, d.n, d.nnz, d.pat.row_ptr.p, d.pat.col.p};
  check(cudaEventCreate(&d.start), "cudaEventCreate");
  check(cudaEventCreate(&d.stop), "cudaEventCreate");
}

template <class T>
DeviceContactNets<T>::~DeviceContactNets() {
  if (impl_->start) cudaEventDestroy(impl_->start);
  if (impl_->stop) cudaEventDestroy(impl_->stop);
}

template <class T>
DeviceLayout DeviceContactNets<T>::layout() const {
  return impl_->layout;
}

template <class T>
void DeviceContactNets<T>::upload_transitions(int set, const double* x, const double* xn, int count) {
  if (set < 0 || set > 1) throw Error("device transitions: set must be 0 (train) or 1 (valid)");
  Impl& d = *impl_;
  d.sets[set].upload(x, xn, count, 13, d.n + d.m + 1, "device transitions");  // x, y, ρ
}

template <class T>
DeviceLossStats DeviceContactNets<T>::evaluate(int set, const double* theta, const int* idx, int count,
                                               double* loss, double* grad) {
  if (set < 0 || set > 1) throw Error("device loss: set must be 0 (train) or 1 (valid)");
  Impl& d = *impl_;
  auto& S = d.sets[set];
  S.check_indices(idx, count, "device loss");
  const size_t B = size_t(count);
  d.io.shape(B, cn::kTheta);
  d.io.upload(theta, idx);
  d.P.ensure(B * d.n * d.n);
  d.q.ensure(B * d.n);
  d.A.ensure(B * d.nnz);
  d.b.ensure(B * d.m);
  d.x.ensure(B * d.n);
  d.y.ensure(B * d.m);
  d.grad.ensure(B * cn::kTheta);
  for (DevBuf<T>* v : {&d.constant, &d.objective, &d.value, &d.prim_res, &d.dual_res, &d.rho}) v->ensure(B);
  for (DevBuf<int>* v : {&d.status, &d.fault, &d.warm_each}) v->ensure(B);
  const bool warp = d.layout == DeviceLayout::kWarp;
  check(cudaEventRecord(d.start), "event");
  auto assemble = [&](auto lay) {
    assemble_kernel<T, decltype(lay)::batch_fastest><<<(count + kAsmWarps - 1) / kAsmWarps, kAsmWarps * 32>>>(
        count, d.n, d.m, d.nnz, d.consts, d.io.theta(), d.io.idx(), S.x.p, S.xn.p, S.warm.p, S.warm_ok.p, d.P.p, d.q.p,
        d.A.p, d.b.p, d.x.p, d.y.p, d.constant.p, d.warm_each.p, d.rho.p, lay);
  };
  auto finish = [&](auto lay) {
    finish_kernel<T, decltype(lay)::batch_fastest><<<(count + kFinPer - 1) / kFinPer, kFinPer * cn::kK>>>(
        count, d.n, d.m, d.consts, d.io.theta(), d.io.idx(), S.x.p, S.xn.p, S.warm.p, S.warm_ok.p, d.x.p, d.y.p,
        d.constant.p, d.value.p, d.rho.p, d.status.p, d.io.loss(), d.grad.p, d.io.solved(), grad ? 1 : 0, lay);
  };
  auto in_layout = [&](auto&& launch) {  // the kernels' instantiation for the layout
    if (warp)
      launch(Layout<false>{count});
    else
      launch(Layout<true>{count});
  };
  in_layout(assemble);
  check(cudaGetLastError(), "assembly kernel launch");
  if (warp) {
    detail::WarpLaunch<T> a;
    a.batch = count, a.n = d.n, a.m = d.m, a.nnz = d.nnz, a.cones = d.shape.cones;
    a.set_pattern(d.pat);
    a.P = d.P.p, a.q = d.q.p, a.A = d.A.p, a.b = d.b.p, a.x = d.x.p, a.y = d.y.p;
    a.objective = d.objective.p, a.value = d.value.p, a.prim_res = d.prim_res.p, a.dual_res = d.dual_res.p;
    a.status = d.status.p, a.fault = d.fault.p, a.iterations = d.io.iters(), a.rho_updates = d.io.rho_updates();
    a.warm_each = d.warm_each.p;
    a.rho0 = a.rho_out = d.rho.p;  // each transition's last ρ in, its final ρ out
    detail::launch_qp_warp(a, d.settings, false);
    check(cudaGetLastError(), "qp_admm_warp_kernel launch");
  } else {
    d.work.ensure(B * qp_work_size(d.n, d.m));
    detail::launch_qp_thread(count, d.shape, d.P.p, d.q.p, d.A.p, d.b.p, d.x.p, d.y.p, d.work.p, d.objective.p,
                             d.value.p, d.prim_res.p, d.dual_res.p, d.status.p, d.fault.p, d.io.iters(),
                             d.io.rho_updates(), d.settings, false, false, d.warm_each.p, d.rho.p, d.rho.p);
    check(cudaGetLastError(), "qp_admm_kernel launch");
  }
  in_layout(finish);
  check(cudaGetLastError(), "gradient kernel launch");
  if (grad) {
    detail::sum_rows_kernel<T><<<cn::kTheta, 256>>>(count, d.grad.p, d.io.grad_sum());
    check(cudaGetLastError(), "gradient sum launch");
  }
  check(cudaEventRecord(d.stop), "event");
  check(cudaEventSynchronize(d.stop), "loss kernel");
  DeviceLossStats st;
  float ms = 0;
  cudaEventElapsedTime(&ms, d.start, d.stop);
  st.kernel_ms = ms;
  d.io.download(loss, grad, st, true);
  return st;
}

template <class T>
std::vector<std::vector<double>> DeviceContactNets<T>::download_warm_starts(int set) const {
  if (set < 0 || set > 1) throw Error("device warm starts: set must be 0 (train) or 1 (valid)");
  return impl_->sets[set].download_warm(impl_->n + impl_->m + 1);
}

template <class T>
void DeviceContactNets<T>::upload_warm_starts(int set, const std::vector<std::vector<double>>& warm) {
  if (set < 0 || set > 1) throw Error("device warm starts: set must be 0 (train) or 1 (valid)");
  impl_->sets[set].upload_warm(warm, impl_->n + impl_->m + 1, true, "device warm starts");
}

template class DeviceContactNets<float>;
template class DeviceContactNets<double>;

}  // namespace cuda
}  // namespace impulse
