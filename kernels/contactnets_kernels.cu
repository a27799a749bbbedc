// ContactNets loss and gradient on the device (see kernels/contactnets_device.h):
// one fused kernel, a thread per transition (the thread layout), or assembly and
// gradient a thread per transition around the warp-per-problem QP kernel (warp).
#include <cuda_runtime.h>

#include <algorithm>
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


// θ, and the states x, x' of transition t, into registers (or the thread's stack)
template <class T>
__device__ void load_transition(const T* __restrict__ theta, const T* __restrict__ xs, const T* __restrict__ xns,
                                int t, T (&th)[cn::kTheta], T (&x0)[13], T (&x1)[13]) {
  for (int i = 0; i < cn::kTheta; ++i) th[i] = theta[i];
  for (int i = 0; i < 13; ++i) x0[i] = xs[size_t(t) * 13 + i], x1[i] = xns[size_t(t) * 13 + i];
}

template <class T>
__global__ void loss_kernel(int B, QpShape shape, cn::LossConsts<T> c, QpSettings<T> st,
                            const T* __restrict__ theta, const int* __restrict__ idx,
                            const T* __restrict__ xs, const T* __restrict__ xns, T* warm,
                            int* warm_ok, T* P, T* q, T* A, T* b, T* x, T* y, T* work, T* loss,
                            T* grad, int* iters, int* solved, int want_grad) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= B) return;
  const int n = shape.n, m = shape.m();
  const RunStride s{B};
  const int t = idx[k];
  T th[cn::kTheta], x0[13], x1[13];
  load_transition(theta, xs, xns, t, th, x0, x1);
  View<T, RunStride> Pv{P + k, s}, qv{q + k, s}, Av{A + k, s}, bv{b + k, s}, xv{x + k, s},
      yv{y + k, s};
  const T constant = cn::assemble(c, th, x0, x1, Pv, qv, Av, bv);
  const bool have_warm = warm_ok[t] != 0;
  if (have_warm)
    for (int i = 0; i < n + m; ++i) (i < n ? xv[i] : yv[i - n]) = warm[size_t(t) * (n + m) + i];
  QpData<T, RunStride> d{Pv.as_const(), qv.as_const(), Av.as_const(), bv.as_const()};
  auto w = QpWork<T, RunStride>::carve(View<T, RunStride>{work + k, s}, n, m);
  const QpInfo<T> info = qp_admm_solve(shape, d, xv, yv, w, st, have_warm);
  for (int i = 0; i < n + m; ++i) warm[size_t(t) * (n + m) + i] = i < n ? xv[i] : yv[i - n];
  warm_ok[t] = 1;
  iters[k] = info.iterations;
  solved[k] = is_solved(info.status) ? 1 : 0;
  T g[cn::kTheta];
  for (int i = 0; i < cn::kTheta; ++i) g[i] = T(0);
  const T reg = cn::gradient(c, th, x0, x1, xv.as_const(), yv.as_const(), g);
  const T qp = info.value + constant;
  loss[k] = (qp > T(0) ? qp : T(0)) + reg;
  if (want_grad)
    for (int i = 0; i < cn::kTheta; ++i) grad[size_t(i) * B + k] = g[i];
}

// The warp layout's three steps (kernels/contactnets_device.h): a thread per
// transition assembles its loss QP problem-contiguously and loads its warm start,
// a warp per transition solves it (launch_qp_warp), a thread per transition keeps
// the answer as the next warm start and computes the loss and gradient.
template <class T>
__global__ void assemble_kernel(int B, int n, int m, int nnz, cn::LossConsts<T> c, const T* __restrict__ theta,
                                const int* __restrict__ idx, const T* __restrict__ xs, const T* __restrict__ xns,
                                const T* __restrict__ warm, const int* __restrict__ warm_ok, T* P, T* q, T* A,
                                T* b, T* x, T* y, T* constant, int* warm_each) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= B) return;
  const int t = idx[k];
  T th[cn::kTheta], x0[13], x1[13];
  load_transition(theta, xs, xns, t, th, x0, x1);
  constant[k] = cn::assemble(c, th, x0, x1, unit_view(P + size_t(k) * n * n), unit_view(q + size_t(k) * n),
                             unit_view(A + size_t(k) * nnz), unit_view(b + size_t(k) * m));
  const int w = warm_ok[t];
  warm_each[k] = w;
  if (w)
    for (int i = 0; i < n + m; ++i)
      (i < n ? x[size_t(k) * n + i] : y[size_t(k) * m + i - n]) = warm[size_t(t) * (n + m) + i];
}

template <class T>
__global__ void finish_kernel(int B, int n, int m, cn::LossConsts<T> c, const T* __restrict__ theta,
                              const int* __restrict__ idx, const T* __restrict__ xs, const T* __restrict__ xns,
                              T* warm, int* warm_ok, const T* __restrict__ x, const T* __restrict__ y,
                              const T* __restrict__ constant, const T* __restrict__ value,
                              const int* __restrict__ status, T* loss, T* grad, int* solved, int want_grad) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= B) return;
  const int t = idx[k];
  T th[cn::kTheta], x0[13], x1[13];
  load_transition(theta, xs, xns, t, th, x0, x1);
  const T* xk = x + size_t(k) * n;
  const T* yk = y + size_t(k) * m;
  for (int i = 0; i < n + m; ++i) warm[size_t(t) * (n + m) + i] = i < n ? xk[i] : yk[i - n];
  warm_ok[t] = 1;
  solved[k] = is_solved(SolveStatus(status[k])) ? 1 : 0;
  T g[cn::kTheta];
  for (int i = 0; i < cn::kTheta; ++i) g[i] = T(0);
  const T reg = cn::gradient(c, th, x0, x1, unit_view(xk), unit_view(yk), g);
  const T qp = value[k] + constant[k];
  loss[k] = (qp > T(0) ? qp : T(0)) + reg;
  if (want_grad)
    for (int i = 0; i < cn::kTheta; ++i) grad[size_t(i) * B + k] = g[i];
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
  DevBuf<T> theta, P, q, A, b, x, y, work, loss, grad, grad_sum;
  DevBuf<int> idx, iters, solved;
  // the warp layout's per-problem results
  DevBuf<T> constant, objective, value, prim_res, dual_res;
  DevBuf<int> status, fault, rho_updates, warm_each;
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
  d.settings = detail::device_settings(st);
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
  d.theta.ensure(cn::kTheta);
  d.grad_sum.ensure(cn::kTheta);
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
  d.sets[set].upload(x, xn, count, 13, d.n + d.m, "device transitions");
}

template <class T>
DeviceLossStats DeviceContactNets<T>::evaluate(int set, const double* theta, const int* idx, int count,
                                               double* loss, double* grad) {
  if (set < 0 || set > 1) throw Error("device loss: set must be 0 (train) or 1 (valid)");
  Impl& d = *impl_;
  auto& S = d.sets[set];
  S.check_indices(idx, count, "device loss");
  const size_t B = size_t(count);
  T th[cn::kTheta];
  for (int i = 0; i < cn::kTheta; ++i) th[i] = T(theta[i]);
  check(cudaMemcpy(d.theta.p, th, sizeof th, cudaMemcpyHostToDevice), "upload theta");
  d.idx.ensure(B);
  check(cudaMemcpy(d.idx.p, idx, sizeof(int) * B, cudaMemcpyHostToDevice), "upload indices");
  d.P.ensure(B * d.n * d.n);
  d.q.ensure(B * d.n);
  d.A.ensure(B * d.nnz);
  d.b.ensure(B * d.m);
  d.x.ensure(B * d.n);
  d.y.ensure(B * d.m);
  d.loss.ensure(B);
  d.grad.ensure(B * cn::kTheta);
  d.iters.ensure(B);
  d.solved.ensure(B);
  const int threads = 128, blocks = int((B + threads - 1) / threads);
  check(cudaEventRecord(d.start), "event");
  if (d.layout == DeviceLayout::kWarp) {
    for (DevBuf<T>* v : {&d.constant, &d.objective, &d.value, &d.prim_res, &d.dual_res}) v->ensure(B);
    for (DevBuf<int>* v : {&d.status, &d.fault, &d.rho_updates, &d.warm_each}) v->ensure(B);
    assemble_kernel<T><<<blocks, threads>>>(count, d.n, d.m, d.nnz, d.consts, d.theta.p, d.idx.p, S.x.p, S.xn.p,
                                            S.warm.p, S.warm_ok.p, d.P.p, d.q.p, d.A.p, d.b.p, d.x.p, d.y.p,
                                            d.constant.p, d.warm_each.p);
    check(cudaGetLastError(), "assembly kernel launch");
    detail::WarpLaunch<T> a;
    a.batch = count, a.n = d.n, a.m = d.m, a.nnz = d.nnz, a.cones = d.shape.cones;
    a.set_pattern(d.pat);
    a.P = d.P.p, a.q = d.q.p, a.A = d.A.p, a.b = d.b.p, a.x = d.x.p, a.y = d.y.p;
    a.objective = d.objective.p, a.value = d.value.p, a.prim_res = d.prim_res.p, a.dual_res = d.dual_res.p;
    a.status = d.status.p, a.fault = d.fault.p, a.iterations = d.iters.p, a.rho_updates = d.rho_updates.p;
    a.warm_each = d.warm_each.p;
    detail::launch_qp_warp(a, d.settings, false);
    check(cudaGetLastError(), "qp_admm_warp_kernel launch");
    finish_kernel<T><<<blocks, threads>>>(count, d.n, d.m, d.consts, d.theta.p, d.idx.p, S.x.p, S.xn.p, S.warm.p,
                                          S.warm_ok.p, d.x.p, d.y.p, d.constant.p, d.value.p, d.status.p,
                                          d.loss.p, d.grad.p, d.solved.p, grad ? 1 : 0);
    check(cudaGetLastError(), "loss kernel launch");
  } else {
    d.work.ensure(B * qp_work_size(d.n, d.m));
    loss_kernel<T><<<blocks, threads>>>(count, d.shape, d.consts, d.settings, d.theta.p, d.idx.p, S.x.p,
                                        S.xn.p, S.warm.p, S.warm_ok.p, d.P.p, d.q.p, d.A.p, d.b.p, d.x.p,
                                        d.y.p, d.work.p, d.loss.p, d.grad.p, d.iters.p, d.solved.p,
                                        grad ? 1 : 0);
    check(cudaGetLastError(), "loss kernel launch");
  }
  if (grad) {
    detail::sum_rows_kernel<T><<<cn::kTheta, 256>>>(count, d.grad.p, d.grad_sum.p);
    check(cudaGetLastError(), "gradient sum launch");
  }
  check(cudaEventRecord(d.stop), "event");
  check(cudaEventSynchronize(d.stop), "loss kernel");
  DeviceLossStats st;
  float ms = 0;
  cudaEventElapsedTime(&ms, d.start, d.stop);
  st.kernel_ms = ms;
  detail::download_losses(B, d.loss, d.iters, d.solved, loss, st);
  if (grad) {
    T g[cn::kTheta];
    check(cudaMemcpy(g, d.grad_sum.p, sizeof g, cudaMemcpyDeviceToHost), "download gradient");
    for (int i = 0; i < cn::kTheta; ++i) grad[i] = double(g[i]);
  }
  return st;
}

template class DeviceContactNets<float>;
template class DeviceContactNets<double>;

}  // namespace cuda
}  // namespace impulse
