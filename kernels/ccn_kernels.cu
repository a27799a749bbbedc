// The CCN loss and gradient on the device, one thread per transition
// (see kernels/ccn_device.h).
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/ccn_device.h"
#include "kernels/device_util.cuh"
#include "kernels/qp_kernels.h"

namespace impulse {
namespace cuda {

namespace {

using detail::check;
using detail::DevBuf;

using Cap = ccnqp::DeviceCapacity;

template <class T>
ccnqp::System<T, Cap> cast_system(const ccnqp::System<double, Cap>& s) {
  ccnqp::System<T, Cap> o;
  o.links = s.links;
  for (int l = 0; l < Cap::kLinks; ++l) {
    o.parent[l] = s.parent[l];
    o.nvert[l] = s.nvert[l];
    for (int i = 0; i < 3; ++i) o.origin[l][i] = T(s.origin[l][i]), o.axis[l][i] = T(s.axis[l][i]);
  }
  o.total_mass = T(s.total_mass), o.gravity = T(s.gravity), o.dt = T(s.dt);
  o.w_comp = T(s.w_comp), o.w_diss = T(s.w_diss), o.w_pen = T(s.w_pen), o.w_res = T(s.w_res);
  return o;
}

template <class T>
__global__ void ccn_kernel(int B, QpShape shape, ccnqp::System<T, Cap> sys, QpSettings<T> st,
                           const T* __restrict__ theta, const T* __restrict__ delta, const int* __restrict__ idx,
                           const T* __restrict__ xs, const T* __restrict__ xns, T* warm, int* warm_ok, T* P,
                           T* q, T* A, T* b, T* x, T* y, T* work, T* loss, T* grad, T* gdelta, int* iters,
                           int* solved, int want_grad) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= B) return;
  const int n = shape.n, m = shape.m(), W = sys.width(), nv = sys.nv(), nt = sys.theta_size();
  const RunStride s{B};
  const int t = idx[k];
  T th[Cap::kTheta], x0[13 + 2 * (Cap::kLinks - 1)], x1[13 + 2 * (Cap::kLinks - 1)];
  T dl[Cap::kNv];
  for (int i = 0; i < nt; ++i) th[i] = theta[i];
  for (int i = 0; i < W; ++i) x0[i] = xs[size_t(t) * W + i], x1[i] = xns[size_t(t) * W + i];
  if (delta)
    for (int i = 0; i < nv; ++i) dl[i] = delta[size_t(k) * nv + i];
  View<T, RunStride> Pv{P + k, s}, qv{q + k, s}, Av{A + k, s}, bv{b + k, s}, xv{x + k, s}, yv{y + k, s};
  ccnqp::Terms<T, Cap> terms;
  T constant = T(0);
  const bool ok = ccnqp::assemble(sys, th, x0, x1, delta ? dl : nullptr, terms, Pv, qv, Av, bv, &constant);
  const bool have_warm = warm_ok[t] != 0;
  if (have_warm)
    for (int i = 0; i < n + m; ++i) (i < n ? xv[i] : yv[i - n]) = warm[size_t(t) * (n + m) + i];
  QpData<T, RunStride> d{Pv.as_const(), qv.as_const(), Av.as_const(), bv.as_const()};
  auto w = QpWork<T, RunStride>::carve(View<T, RunStride>{work + k, s}, n, m);
  const QpInfo<T> info = qp_admm_solve(shape, d, xv, yv, w, st, have_warm);
  for (int i = 0; i < n + m; ++i) warm[size_t(t) * (n + m) + i] = i < n ? xv[i] : yv[i - n];
  warm_ok[t] = 1;
  iters[k] = info.iterations;
  solved[k] = ok && is_solved(info.status) ? 1 : 0;
  T g[Cap::kTheta], gd[Cap::kNv];
  for (int i = 0; i < nt; ++i) g[i] = T(0);
  const T value = ccnqp::gradient(sys, th, x0, x1, delta ? dl : nullptr, xv.as_const(), terms, g, gd);
  loss[k] = value;
  if (want_grad) {
    for (int i = 0; i < nt; ++i) grad[size_t(i) * B + k] = g[i];
    if (gdelta)
      for (int i = 0; i < nv; ++i) gdelta[size_t(k) * nv + i] = gd[i];
  }
}

}  // namespace

template <class T>
struct DeviceCcn<T>::Impl {
  ccnqp::System<T, Cap> sys;
  QpSettings<T> settings;
  int n = 0, m = 0, width = 0, nv = 0, nt = 0;
  DevBuf<int> row_ptr, col;
  QpShape shape;
  detail::ResidentSet<T> sets[2];
  DevBuf<T> delta, gdelta, P, q, A, b, x, y, work, grad;
  detail::StepIo<T> io;  // θ and indices down; losses, gradient sum, iterations, solved flags up
  cudaEvent_t start = nullptr, stop = nullptr;
};

template <class T>
DeviceCcn<T>::DeviceCcn(const ccnqp::System<double, Cap>& system, const QpSettings<T>& st) : impl_(new Impl) {
  if (!available()) throw Error("CUDA not available: " + device_info().reason);
  if (const char* bad = st.validate()) throw Error(std::string("QP settings: ") + bad);
  Impl& d = *impl_;
  d.sys = cast_system<T>(system);
  d.settings = detail::device_settings(st);
  d.n = d.m = 3 * system.contacts();
  d.width = system.width();
  d.nv = system.nv();
  d.nt = system.theta_size();
  std::vector<int> rp(size_t(d.m) + 1), cl(size_t(d.m));
  for (int r = 0; r <= d.m; ++r) rp[size_t(r)] = r;
  for (int r = 0; r < d.m; ++r) cl[size_t(r)] = r;
  d.row_ptr.ensure(rp.size());
  d.col.ensure(cl.size());
  check(cudaMemcpy(d.row_ptr.p, rp.data(), sizeof(int) * rp.size(), cudaMemcpyHostToDevice), "pattern");
  check(cudaMemcpy(d.col.p, cl.data(), sizeof(int) * cl.size(), cudaMemcpyHostToDevice), "pattern");
  ConeSpec cones;
  cones.n_soc = system.contacts();
  d.shape.n = d.n;
  d.shape.cones = cones;
  d.shape.a = CsrPattern{d.m, d.n, d.m, d.row_ptr.p, d.col.p};
  check(cudaEventCreate(&d.start), "cudaEventCreate");
  check(cudaEventCreate(&d.stop), "cudaEventCreate");
}

template <class T>
DeviceCcn<T>::~DeviceCcn() {
  if (impl_->start) cudaEventDestroy(impl_->start);
  if (impl_->stop) cudaEventDestroy(impl_->stop);
}

template <class T>
void DeviceCcn<T>::upload_transitions(int set, const double* x, const double* xn, int count) {
  if (set < 0 || set > 1) throw Error("device CCN transitions: set must be 0 (train) or 1 (valid)");
  Impl& d = *impl_;
  d.sets[set].upload(x, xn, count, d.width, d.n + d.m, "device CCN transitions");
}

template <class T>
DeviceLossStats DeviceCcn<T>::evaluate(int set, const double* theta, const double* delta, const int* idx,
                                       int count, double* loss, double* grad, double* grad_delta) {
  if (set < 0 || set > 1) throw Error("device CCN loss: set must be 0 (train) or 1 (valid)");
  Impl& d = *impl_;
  auto& S = d.sets[set];
  S.check_indices(idx, count, "device CCN loss");
  const size_t B = size_t(count);
  d.io.shape(B, size_t(d.nt));
  d.io.upload(theta, idx);
  if (delta) {
    std::vector<T> dl(B * d.nv);
    for (size_t i = 0; i < dl.size(); ++i) dl[i] = T(delta[i]);
    d.delta.ensure(dl.size());
    check(cudaMemcpy(d.delta.p, dl.data(), sizeof(T) * dl.size(), cudaMemcpyHostToDevice), "upload residuals");
  }
  if (grad_delta) d.gdelta.ensure(B * d.nv);
  d.P.ensure(B * d.n * d.n);
  d.q.ensure(B * d.n);
  d.A.ensure(B * d.m);
  d.b.ensure(B * d.m);
  d.x.ensure(B * d.n);
  d.y.ensure(B * d.m);
  d.work.ensure(B * qp_work_size(d.n, d.m));
  d.grad.ensure(B * d.nt);
  const int threads = 64, blocks = int((B + threads - 1) / threads);
  check(cudaEventRecord(d.start), "event");
  ccn_kernel<T><<<blocks, threads>>>(count, d.shape, d.sys, d.settings, d.io.theta(), delta ? d.delta.p : nullptr,
                                     d.io.idx(), S.x.p, S.xn.p, S.warm.p, S.warm_ok.p, d.P.p, d.q.p, d.A.p, d.b.p,
                                     d.x.p, d.y.p, d.work.p, d.io.loss(), d.grad.p,
                                     grad_delta ? d.gdelta.p : nullptr, d.io.iters(), d.io.solved(),
                                     (grad || grad_delta) ? 1 : 0);
  check(cudaGetLastError(), "CCN loss kernel launch");
  if (grad) {
    detail::sum_rows_kernel<T><<<d.nt, 256>>>(count, d.grad.p, d.io.grad_sum());
    check(cudaGetLastError(), "gradient sum launch");
  }
  check(cudaEventRecord(d.stop), "event");
  check(cudaEventSynchronize(d.stop), "CCN loss kernel");
  DeviceLossStats st;
  float ms = 0;
  cudaEventElapsedTime(&ms, d.start, d.stop);
  st.kernel_ms = ms;
  d.io.download(loss, grad, st, false);
  if (grad_delta) {
    std::vector<T> g(B * d.nv);
    check(cudaMemcpy(g.data(), d.gdelta.p, sizeof(T) * g.size(), cudaMemcpyDeviceToHost), "download residual gradient");
    for (size_t i = 0; i < g.size(); ++i) grad_delta[i] = double(g[i]);
  }
  return st;
}

template <class T>
std::vector<std::vector<double>> DeviceCcn<T>::download_warm_starts(int set) const {
  if (set < 0 || set > 1) throw Error("device CCN warm starts: set must be 0 (train) or 1 (valid)");
  return impl_->sets[set].download_warm(impl_->n + impl_->m);
}

template <class T>
void DeviceCcn<T>::upload_warm_starts(int set, const std::vector<std::vector<double>>& warm) {
  if (set < 0 || set > 1) throw Error("device CCN warm starts: set must be 0 (train) or 1 (valid)");
  impl_->sets[set].upload_warm(warm, impl_->n + impl_->m, false, "device CCN warm starts");
}

template class DeviceCcn<float>;
template class DeviceCcn<double>;

}  // namespace cuda
}  // namespace impulse
