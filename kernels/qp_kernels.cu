// Batched conic-QP ADMM on the GPU: one thread per problem, and the batch API
// (DeviceQpBatch) over both layouts (the warp kernel: kernels/qp_warp_kernels.cu).
//
// The thread layout: every problem of a batch has the same shape and pattern, so
// a warp runs 32 problems in lockstep with no divergence in the loop structure,
// and the batch-fastest layout makes each load of "entry e of 32 neighbouring
// problems" one coalesced transaction. Its cost is the n² workspace per problem
// in global memory; for 16 <= n <= 32 the warp layout keeps it on chip (the
// simulated counts: bench/results/gpu_warp_vs_thread_2026-11-24.md).
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "kernels/device_util.cuh"
#include "kernels/qp_kernels.h"

namespace impulse {
namespace cuda {

namespace {

using detail::check;
using detail::DevBuf;
using detail::DevicePattern;
using detail::from_batch_fastest;
using detail::to_batch_fastest;


template <class T>
__global__ void qp_admm_kernel(int batch, QpShape shape, const T* __restrict__ P,
                               const T* __restrict__ q, const T* __restrict__ A,
                               const T* __restrict__ b, T* x, T* y, T* work, T* objective,
                               T* value, T* prim_res, T* dual_res, int* status, int* fault, int* iterations,
                               int* rho_updates, QpSettings<T> st, bool warm, bool reuse,
                               const int* __restrict__ warm_each, const T* rho0, T* rho_out) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= batch) return;
  if (warm_each) warm = warm_each[k] != 0;
  if (rho0) st.rho = impulse::detail::qp_first_rho(st, rho0[k]);
  const RunStride s{batch};
  QpData<T, RunStride> d{View<const T, RunStride>{P + k, s}, View<const T, RunStride>{q + k, s},
                         View<const T, RunStride>{A + k, s}, View<const T, RunStride>{b + k, s}};
  auto w = QpWork<T, RunStride>::carve(View<T, RunStride>{work + k, s}, shape.n, shape.m());
  const QpInfo<T> info = qp_admm_solve(shape, d, View<T, RunStride>{x + k, s},
                                       View<T, RunStride>{y + k, s}, w, st, warm, reuse);
  objective[k] = info.objective;
  value[k] = info.value;
  prim_res[k] = info.prim_res;
  dual_res[k] = info.dual_res;
  status[k] = static_cast<int>(info.status);
  fault[k] = static_cast<int>(info.fault);
  iterations[k] = info.iterations;
  rho_updates[k] = info.rho_updates;
  if (rho_out) rho_out[k] = info.rho;
}

// problem-contiguous (batch x len) <-> batch-fastest (len x batch) on the device:
// element (k, e) of the one is element (e, k) of the other
template <class T>
__global__ void batch_transpose_kernel(const T* __restrict__ src, T* __restrict__ dst, int batch, int len,
                                       bool to_batch_fastest) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= size_t(batch) * len) return;
  const size_t k = i / len, e = i % len;  // i = k * len + e in the problem-contiguous array
  if (to_batch_fastest)
    dst[e * batch + k] = src[i];
  else
    dst[i] = src[e * batch + k];
}

template <class T>
void batch_transpose(const T* src, T* dst, int batch, int len, bool to_bf, const char* what) {
  const size_t count = size_t(batch) * len;
  if (count == 0) return;
  const int threads = 256;
  batch_transpose_kernel<T><<<unsigned((count + threads - 1) / threads), threads>>>(src, dst, batch, len, to_bf);
  check(cudaGetLastError(), what);
}

}  // namespace

template <class T>
DeviceArray<T>::DeviceArray(size_t count) : n_(count) {
  if (!available()) throw Error("CUDA not available: " + device_info().reason);
  check(cudaMalloc(&p_, (count > 0 ? count : 1) * sizeof(T)), "cudaMalloc");
}
template <class T>
DeviceArray<T>::~DeviceArray() {
  if (p_) cudaFree(p_);
}
template <class T>
void DeviceArray<T>::upload(const T* host) {
  check(cudaMemcpy(p_, host, n_ * sizeof(T), cudaMemcpyHostToDevice), "DeviceArray::upload");
}
template <class T>
void DeviceArray<T>::download(T* host) const {
  check(cudaMemcpy(host, p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "DeviceArray::download");
}
template class DeviceArray<float>;
template class DeviceArray<double>;
template class DeviceArray<int>;

namespace detail {
template <class T>
void launch_qp_thread(int batch, const QpShape& shape, const T* P, const T* q, const T* A, const T* b, T* x, T* y,
                      T* work, T* objective, T* value, T* prim_res, T* dual_res, int* status, int* fault,
                      int* iterations, int* rho_updates, const QpSettings<T>& st, bool warm, bool reuse,
                      const int* warm_each, const T* rho0, T* rho_out) {
  const int threads = 128, blocks = (batch + threads - 1) / threads;
  qp_admm_kernel<T><<<blocks, threads>>>(batch, shape, P, q, A, b, x, y, work, objective, value, prim_res, dual_res,
                                         status, fault, iterations, rho_updates, device_settings(st), warm, reuse,
                                         warm_each, rho0, rho_out);
}
template void launch_qp_thread<float>(int, const QpShape&, const float*, const float*, const float*, const float*,
                                      float*, float*, float*, float*, float*, float*, float*, int*, int*, int*, int*,
                                      const QpSettings<float>&, bool, bool, const int*, const float*, float*);
template void launch_qp_thread<double>(int, const QpShape&, const double*, const double*, const double*,
                                       const double*, double*, double*, double*, double*, double*, double*,
                                       double*, int*, int*, int*, int*, const QpSettings<double>&, bool, bool,
                                       const int*, const double*, double*);
}  // namespace detail

DeviceInfo device_info() {
  DeviceInfo info;
  info.built = true;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    info.reason = cudaGetErrorString(e);
    cudaGetLastError();  // clear the sticky error
    return info;
  }
  info.count = count;
  if (count == 0) {
    info.reason = "no CUDA device present";
    return info;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
    info.name = prop.name;
    info.memory_gib = double(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
    info.sm_count = prop.multiProcessorCount;
    info.cc_major = prop.major;
    info.cc_minor = prop.minor;
  }
  return info;
}

bool available() { return device_info().count > 0; }

template <class T>
struct DeviceQpBatch<T>::Impl {
  DeviceLayout asked = DeviceLayout::kAuto, layout = DeviceLayout::kAuto;
  int batch = 0, n = 0, m = 0, nnz = 0;
  ConeSpec cones;
  DevicePattern pat;
  DevBuf<T> P, q, A, b, x, y, work, kept, objective, value, prim_res, dual_res, rho;
  DevBuf<int> status, fault, iterations, rho_updates;
  bool keep = false;
  cudaEvent_t start = nullptr, stop = nullptr;
  std::vector<T> tmp;  // the host-side transposition (thread layout)
  // array src (problem-contiguous, batch × len; host memory, or device memory with
  // on_device) into buf, in the layout's order
  void put(DevBuf<T>& buf, const T* src, int len, const char* what, bool on_device = false) {
    if (layout == DeviceLayout::kWarp) {  // problem-contiguous, as given
      check(cudaMemcpy(buf.p, src, sizeof(T) * size_t(batch) * len,
                       on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice),
            what);
      return;
    }
    if (on_device) {
      batch_transpose(src, buf.p, batch, len, true, what);
      return;
    }
    to_batch_fastest(src, batch, len, tmp);
    check(cudaMemcpy(buf.p, tmp.data(), sizeof(T) * tmp.size(), cudaMemcpyHostToDevice), what);
  }
};

template <class T>
DeviceQpBatch<T>::DeviceQpBatch(DeviceLayout layout) : impl_(new Impl) {
  if (!available()) throw Error("CUDA not available: " + device_info().reason);
  impl_->asked = impl_->layout = layout;
  check(cudaEventCreate(&impl_->start), "cudaEventCreate");
  check(cudaEventCreate(&impl_->stop), "cudaEventCreate");
}

template <class T>
DeviceQpBatch<T>::~DeviceQpBatch() {
  if (impl_->start) cudaEventDestroy(impl_->start);
  if (impl_->stop) cudaEventDestroy(impl_->stop);
}

template <class T>
int DeviceQpBatch<T>::batch() const {
  return impl_->batch;
}

template <class T>
DeviceLayout DeviceQpBatch<T>::layout() const {
  return impl_->layout;
}

// the kept factorizations (keep_factors) of the uploaded batch, all marked invalid
// (qp_factor_kept and the warp kernel's flag read 0)
template <class T, class Impl>
void clear_kept(Impl& d) {
  const size_t B = size_t(d.batch);
  if (d.layout == DeviceLayout::kWarp) {
    d.kept.ensure(B * warp_kept_size(d.n, d.m));
    check(cudaMemset(d.kept.p, 0, sizeof(T) * B * warp_kept_size(d.n, d.m)), "clear kept factors");
  } else {
    check(cudaMemset(d.work.p, 0, sizeof(T) * B * qp_work_size(d.n, d.m)), "clear kept factors");
  }
}

template <class T>
void DeviceQpBatch<T>::upload(const HostQpArrays<T>& h) {
  Impl& d = *impl_;
  d.layout = resolve_layout(d.asked, h.n, h.cones.rows(), h.nnz, sizeof(T));
  const bool warp = d.layout == DeviceLayout::kWarp;
  d.batch = h.batch;
  d.n = h.n;
  d.cones = h.cones;
  d.m = h.cones.rows();
  d.nnz = h.nnz;
  const size_t B = size_t(h.batch);
  d.pat.upload(d.m, d.n, h.a_row_ptr, h.a_col, warp);
  auto put = [&](DevBuf<T>& buf, const T* src, int len) {
    buf.ensure(B * std::max(len, 1));
    d.put(buf, src, len, "upload", h.on_device);
  };
  put(d.P, h.P, d.n * d.n);
  put(d.q, h.q, d.n);
  put(d.A, h.A, d.nnz);
  put(d.b, h.b, d.m);
  d.x.ensure(B * d.n);
  d.y.ensure(B * std::max(d.m, 1));
  if (!warp) d.work.ensure(B * qp_work_size(d.n, d.m));
  if (d.keep) clear_kept<T>(d);  // new P and A: no kept factorization is valid
  d.objective.ensure(B);
  d.value.ensure(B);
  d.prim_res.ensure(B);
  d.dual_res.ensure(B);
  d.status.ensure(B);
  d.fault.ensure(B);
  d.iterations.ensure(B);
  d.rho_updates.ensure(B);
  if (d.rho.n < size_t(B)) {  // none yet: the settings' ρ (0)
    d.rho.ensure(B);
    check(cudaMemset(d.rho.p, 0, sizeof(T) * B), "cudaMemset rho");
  }
}

template <class T>
void DeviceQpBatch<T>::upload_warm_start(const HostQpResults<T>& r) {
  Impl& d = *impl_;
  d.put(d.x, r.x, d.n, "upload x", r.on_device);
  d.put(d.y, r.y, d.m, "upload y", r.on_device);
  if (r.rho) d.put(d.rho, r.rho, 1, "upload rho", r.on_device);
}

template <class T>
void DeviceQpBatch<T>::keep_factors(bool on) {
  Impl& d = *impl_;
  const bool was = d.keep;
  d.keep = on;
  if (on && !was && d.batch > 0) clear_kept<T>(d);  // set-up: allocates (warp layout)
}

template <class T>
void DeviceQpBatch<T>::upload_vectors(const T* q, const T* b) {
  Impl& d = *impl_;
  if (d.batch == 0) throw Error("DeviceQpBatch::upload_vectors: no batch uploaded");
  d.put(d.q, q, d.n, "upload q");
  d.put(d.b, b, d.m, "upload b");
}

template <class T>
double DeviceQpBatch<T>::solve(const QpSettings<T>& st, bool warm, bool reuse, bool warm_rho) {
  Impl& d = *impl_;
  if (reuse && !d.keep) throw Error("DeviceQpBatch::solve: reuse needs keep_factors(true) before upload");
  if (d.batch == 0) return 0.0;
  QpShape shape;
  shape.n = d.n;
  shape.cones = d.cones;
  shape.a = CsrPattern{d.m, d.n, d.nnz, d.pat.row_ptr.p, d.pat.col.p};
  check(cudaEventRecord(d.start), "cudaEventRecord");
  if (d.layout == DeviceLayout::kWarp) {
    detail::WarpLaunch<T> a;
    a.batch = d.batch, a.n = d.n, a.m = d.m, a.nnz = d.nnz, a.cones = d.cones;
    a.set_pattern(d.pat);
    a.P = d.P.p, a.q = d.q.p, a.A = d.A.p, a.b = d.b.p, a.x = d.x.p, a.y = d.y.p;
    a.objective = d.objective.p, a.value = d.value.p, a.prim_res = d.prim_res.p, a.dual_res = d.dual_res.p;
    a.status = d.status.p, a.fault = d.fault.p, a.iterations = d.iterations.p, a.rho_updates = d.rho_updates.p;
    if (d.keep) a.kept = d.kept.p, a.reuse = reuse;
    a.rho0 = warm && warm_rho ? d.rho.p : nullptr, a.rho_out = d.rho.p;
    detail::launch_qp_warp(a, st, warm);
    check(cudaGetLastError(), "qp_admm_warp_kernel launch");
  } else {
    detail::launch_qp_thread(d.batch, shape, d.P.p, d.q.p, d.A.p, d.b.p, d.x.p, d.y.p, d.work.p, d.objective.p,
                             d.value.p, d.prim_res.p, d.dual_res.p, d.status.p, d.fault.p, d.iterations.p,
                             d.rho_updates.p, st, warm, reuse, nullptr, warm && warm_rho ? d.rho.p : nullptr,
                             d.rho.p);
    check(cudaGetLastError(), "qp_admm_kernel launch");
  }
  check(cudaEventRecord(d.stop), "cudaEventRecord");
  check(cudaEventSynchronize(d.stop), d.layout == DeviceLayout::kWarp ? "qp_admm_warp_kernel" : "qp_admm_kernel");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, d.start, d.stop), "cudaEventElapsedTime");
  return ms;
}

template <class T>
void DeviceQpBatch<T>::download(HostQpResults<T>& r) const {
  const Impl& d = *impl_;
  std::vector<T> tmp;
  const cudaMemcpyKind kind = r.on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
  auto get = [&](const DevBuf<T>& buf, int len, T* dst) {
    if (!dst) return;
    if (d.layout == DeviceLayout::kWarp || len == 1) {  // (one entry a problem: the same in both orders)
      check(cudaMemcpy(dst, buf.p, sizeof(T) * size_t(d.batch) * len, kind), "download");
      return;
    }
    if (r.on_device) {
      batch_transpose(buf.p, dst, d.batch, len, false, "download");
      return;
    }
    tmp.resize(size_t(d.batch) * len);
    check(cudaMemcpy(tmp.data(), buf.p, sizeof(T) * tmp.size(), cudaMemcpyDeviceToHost),
          "download");
    from_batch_fastest(tmp, d.batch, len, dst);
  };
  get(d.x, d.n, r.x);
  get(d.y, d.m, r.y);
  get(d.objective, 1, r.objective);
  get(d.value, 1, r.value);
  get(d.prim_res, 1, r.prim_res);
  get(d.dual_res, 1, r.dual_res);
  auto geti = [&](const DevBuf<int>& buf, int* dst) {
    if (!dst) return;
    check(cudaMemcpy(dst, buf.p, sizeof(int) * d.batch, kind), "download");
  };
  geti(d.status, r.status);
  geti(d.fault, r.fault);
  geti(d.iterations, r.iterations);
  geti(d.rho_updates, r.rho_updates);
  get(d.rho, 1, r.rho);
}

template class DeviceQpBatch<float>;
template class DeviceQpBatch<double>;

}  // namespace cuda
}  // namespace impulse
