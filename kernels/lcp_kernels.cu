// Batched LCP / contact CCP by projected Gauss-Seidel on the GPU: one thread per
// problem over batch-fastest arrays, calling solvers/lcp_pgs.h. Also the planar
// impulse LCPs of host/impact (kernels/impact_device.h), by solvers/impact_lcp.h.
#include <cuda_runtime.h>

#include <vector>

#include "kernels/device_util.cuh"
#include "kernels/impact_device.h"
#include "kernels/qp_kernels.h"
#include "solvers/impact_lcp.h"

namespace impulse {
namespace cuda {

namespace {

using detail::check;

template <class T>
__global__ void lcp_pgs_kernel(int batch, int n, const T* M, const T* q, const T* mu, T* z, T* w,
                               int* status, int* fault, int* iterations, T* residual,
                               LcpSettings<T> st) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= batch) return;
  const RunStride s{batch};
  View<const T, RunStride> Mv{M + k, s}, qv{q + k, s};
  View<T, RunStride> zv{z + k, s}, wv{w + k, s};
  LcpInfo<T> info;
  if (mu)
    info = ccp_block_pgs_solve(n / 3, Mv, qv, View<const T, RunStride>{mu + k, s}, zv, wv, st);
  else
    info = lcp_pgs_solve(n, Mv, qv, zv, wv, st);
  status[k] = static_cast<int>(info.status);
  fault[k] = static_cast<int>(info.fault);
  iterations[k] = info.iterations;
  residual[k] = info.residual;
}

__global__ void planar_ap_kernel(int batch, bool poisson, const double* in, double* out, int* solved) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= batch) return;
  const size_t B = size_t(batch);
  double Pt = 0, Pn = 0;
  const bool ok = planar_ap_impulse(poisson, in[k], in[B + k], in[2 * B + k], in[3 * B + k], in[4 * B + k],
                                    in[5 * B + k], in[6 * B + k], Pt, Pn);
  out[k] = Pt;
  out[B + k] = Pn;
  solved[k] = ok ? 1 : 0;
}

template <class T>
struct Buf {
  T* p = nullptr;
  explicit Buf(size_t count) { check(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)), "cudaMalloc"); }
  ~Buf() { cudaFree(p); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
};

// problem-contiguous host -> batch-fastest device
template <class T>
void put(Buf<T>& d, const T* h, int batch, int len) {
  std::vector<T> t;
  detail::to_batch_fastest(h, batch, len, t);
  check(cudaMemcpy(d.p, t.data(), sizeof(T) * t.size(), cudaMemcpyHostToDevice), "upload");
}
template <class T>
void get(const Buf<T>& d, T* h, int batch, int len) {
  std::vector<T> t(size_t(batch) * len);
  check(cudaMemcpy(t.data(), d.p, sizeof(T) * t.size(), cudaMemcpyDeviceToHost), "download");
  detail::from_batch_fastest(t, batch, len, h);
}

}  // namespace

template <class T>
void solve_lcp_batch(HostLcpArrays<T>& h, const LcpSettings<T>& st) {
  if (!available()) throw Error("CUDA not available: " + device_info().reason);
  const int B = h.batch, n = h.n;
  Buf<T> M(size_t(B) * n * n), q(size_t(B) * n), mu(size_t(B) * (n / 3)), z(size_t(B) * n),
      w(size_t(B) * n), res(B);
  Buf<int> status(B), fault(B), iters(B);
  put(M, h.M, B, n * n);
  put(q, h.q, B, n);
  if (h.mu) put(mu, h.mu, B, n / 3);
  put(z, h.z, B, n);
  const int threads = 128;
  lcp_pgs_kernel<T><<<(B + threads - 1) / threads, threads>>>(
      B, n, M.p, q.p, h.mu ? mu.p : nullptr, z.p, w.p, status.p, fault.p, iters.p, res.p, st);
  check(cudaGetLastError(), "lcp_pgs_kernel launch");
  check(cudaDeviceSynchronize(), "lcp_pgs_kernel");
  get(z, h.z, B, n);
  get(w, h.w, B, n);
  get(res, h.residual, B, 1);
  check(cudaMemcpy(h.status, status.p, sizeof(int) * B, cudaMemcpyDeviceToHost), "download");
  check(cudaMemcpy(h.fault, fault.p, sizeof(int) * B, cudaMemcpyDeviceToHost), "download");
  check(cudaMemcpy(h.iterations, iters.p, sizeof(int) * B, cudaMemcpyDeviceToHost), "download");
}

template void solve_lcp_batch(HostLcpArrays<float>&, const LcpSettings<float>&);
template void solve_lcp_batch(HostLcpArrays<double>&, const LcpSettings<double>&);

void solve_planar_ap(int batch, bool poisson, const double* in, double* out, int* solved) {
  if (!available()) throw Error("CUDA not available: " + device_info().reason);
  if (batch <= 0) return;
  const size_t B = size_t(batch);
  Buf<double> din(7 * B), dout(2 * B);
  Buf<int> dsolved(B);
  check(cudaMemcpy(din.p, in, sizeof(double) * 7 * B, cudaMemcpyHostToDevice), "upload");
  const int threads = 128;
  planar_ap_kernel<<<(batch + threads - 1) / threads, threads>>>(batch, poisson, din.p, dout.p, dsolved.p);
  check(cudaGetLastError(), "planar_ap_kernel launch");
  check(cudaDeviceSynchronize(), "planar_ap_kernel");
  check(cudaMemcpy(out, dout.p, sizeof(double) * 2 * B, cudaMemcpyDeviceToHost), "download");
  check(cudaMemcpy(solved, dsolved.p, sizeof(int) * B, cudaMemcpyDeviceToHost), "download");
}

}  // namespace cuda
}  // namespace impulse
