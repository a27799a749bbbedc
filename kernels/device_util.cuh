// Helpers shared by the .cu files: error checks and the host-side layout
// transposes between problem-contiguous and batch-fastest arrays.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/contactnets_device.h"
#include "solvers/error.h"
#include "solvers/qp_admm.h"

namespace impulse {
namespace cuda {
namespace detail {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
}

// The QP settings as the kernels run them. A thread per problem (warp = false): the
// check schedule stays fixed (predicted checks would have the threads of a warp check
// at different iterations and all wait for each check). A warp per problem: its lanes
// check together, so QpSettings::predict_checks is kept (the CPU's schedule: fewer
// checks, a stop at the predicted iteration). A stall restarts on the device
// (QpSettings::fallback), never returns to a host finish (stall_return is the host
// batch path's).
template <class T>
QpSettings<T> device_settings(QpSettings<T> st, bool warp = false) {
  if (!warp) st.predict_checks = false;
  st.stall_return = false;
  return st;
}

// A device buffer that only grows (cudaMalloc on growth, cudaFree at the end).
template <class T>
struct DevBuf {
  T* p = nullptr;
  size_t n = 0;
  void ensure(size_t count) {
    if (count <= n) return;
    if (p) cudaFree(p);
    p = nullptr;
    check(cudaMalloc(&p, (count > 0 ? count : 1) * sizeof(T)), "cudaMalloc");
    n = count;
  }
  DevBuf() = default;
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  ~DevBuf() {
    if (p) cudaFree(p);
  }
};

// out[p] = Σ_k grad[p * B + k], one block of 256 threads per parameter
// (a fixed reduction order: deterministic).
template <class T>
__global__ void sum_rows_kernel(int B, const T* __restrict__ grad, T* out) {
  __shared__ double part[256];
  const int p = blockIdx.x;
  double acc = 0.0;
  for (int k = threadIdx.x; k < B; k += blockDim.x) acc += double(grad[size_t(p) * B + k]);
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int h = blockDim.x / 2; h > 0; h /= 2) {
    if (int(threadIdx.x) < h) part[threadIdx.x] += part[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[p] = T(part[0]);
}

// A batch's constraint pattern on the device: CSR (row_ptr, col) and, for the warp
// kernel, its column view (col_ptr; per column its entries' CSR positions and rows,
// in row order: csr_matvec_t's summation order).
struct DevicePattern {
  DevBuf<int> row_ptr, col, col_ptr, csc_pos, csc_row;
  void upload(int m, int n, const int* rp, const int* cl, bool column_view) {
    const int nnz = rp[m];
    auto put = [](DevBuf<int>& buf, const int* v, size_t len) {
      buf.ensure(len > 0 ? len : 1);
      if (len) check(cudaMemcpy(buf.p, v, sizeof(int) * len, cudaMemcpyHostToDevice), "upload pattern");
    };
    put(row_ptr, rp, size_t(m) + 1);
    put(col, cl, size_t(nnz));
    if (!column_view) return;
    std::vector<int> cp(size_t(n) + 1, 0), pos(size_t(nnz > 0 ? nnz : 1), 0), row(pos.size(), 0);
    for (int k = 0; k < nnz; ++k) ++cp[cl[k] + 1];
    for (int j = 0; j < n; ++j) cp[j + 1] += cp[j];
    std::vector<int> next(cp.begin(), cp.end() - 1);
    for (int r = 0; r < m; ++r)
      for (int k = rp[r]; k < rp[r + 1]; ++k) {
        const int at = next[cl[k]]++;
        pos[at] = k;
        row[at] = r;
      }
    put(col_ptr, cp.data(), cp.size());
    put(csc_pos, pos.data(), pos.size());
    put(csc_row, row.data(), row.size());
  }
};

// Transitions resident on the device for the learning losses: states x and
// x' (`width` numbers each, converted to T) and each transition's QP warm start
// (warm_len numbers, valid once warm_ok is set).
template <class T>
struct ResidentSet {
  int count = 0;
  DevBuf<T> x, xn, warm;
  DevBuf<int> warm_ok;
  // replaces the set's transitions and resets its warm starts
  void upload(const double* xs, const double* xns, int n, int width, int warm_len, const std::string& who) {
    if (n < 0) throw Error(who + ": negative count");
    count = n;
    std::vector<T> tmp(size_t(n) * width);
    x.ensure(tmp.size());
    xn.ensure(tmp.size());
    for (size_t i = 0; i < tmp.size(); ++i) tmp[i] = T(xs[i]);
    check(cudaMemcpy(x.p, tmp.data(), sizeof(T) * tmp.size(), cudaMemcpyHostToDevice), "upload transitions");
    for (size_t i = 0; i < tmp.size(); ++i) tmp[i] = T(xns[i]);
    check(cudaMemcpy(xn.p, tmp.data(), sizeof(T) * tmp.size(), cudaMemcpyHostToDevice), "upload transitions");
    warm.ensure(size_t(n) * warm_len);
    warm_ok.ensure(size_t(n > 1 ? n : 1));
    check(cudaMemset(warm_ok.p, 0, sizeof(int) * (n > 1 ? n : 1)), "reset warm starts");
  }
  // the warm starts, per transition (warm_len numbers; empty where not solved since
  // the upload), and back. With a ρ (the last number, rho_last), an entry of warm_len - 1
  // is accepted too and starts at the settings' ρ (stored 0). Error, naming the
  // transition, on a wrong count or width, a NaN or Inf, or a negative ρ.
  std::vector<std::vector<double>> download_warm(int warm_len) const {
    const size_t len = size_t(warm_len), N = size_t(count);
    std::vector<std::vector<double>> out(N);
    if (N == 0) return out;
    std::vector<T> w(N * len);
    std::vector<int> ok(N);
    check(cudaMemcpy(w.data(), warm.p, sizeof(T) * w.size(), cudaMemcpyDeviceToHost), "download warm starts");
    check(cudaMemcpy(ok.data(), warm_ok.p, sizeof(int) * N, cudaMemcpyDeviceToHost), "download warm starts");
    for (size_t t = 0; t < N; ++t)
      if (ok[t]) out[t].assign(w.begin() + t * len, w.begin() + (t + 1) * len);
    return out;
  }
  void upload_warm(const std::vector<std::vector<double>>& list, int warm_len, bool rho_last, const std::string& who) {
    const size_t len = size_t(warm_len), N = size_t(count);
    if (list.size() != N)
      throw Error(who + ": " + std::to_string(list.size()) + " entries for a set of " + std::to_string(N) +
                  " transitions");
    if (N == 0) return;
    std::vector<T> w(N * len, T(0));
    std::vector<int> ok(N, 0);
    for (size_t t = 0; t < N; ++t) {
      const auto& v = list[t];
      if (v.empty()) continue;
      if (v.size() != len && !(rho_last && v.size() == len - 1))
        throw Error(who + ": transition " + std::to_string(t) + " has " + std::to_string(v.size()) + " numbers, not " +
                    std::to_string(len) + (rho_last ? " (x, y, rho) or " + std::to_string(len - 1) : std::string(" (x, y)")));
      for (size_t i = 0; i < v.size(); ++i) {
        if (!std::isfinite(v[i])) throw Error(who + ": transition " + std::to_string(t) + " has a NaN or Inf entry");
        w[t * len + i] = T(v[i]);
      }
      if (rho_last && v.size() == len && v.back() < 0)
        throw Error(who + ": transition " + std::to_string(t) + " has a negative rho");
      ok[t] = 1;  // (an entry without its ρ: 0, the settings')
    }
    check(cudaMemcpy(warm.p, w.data(), sizeof(T) * w.size(), cudaMemcpyHostToDevice), "upload warm starts");
    check(cudaMemcpy(warm_ok.p, ok.data(), sizeof(int) * N, cudaMemcpyHostToDevice), "upload warm starts");
  }
  // throws unless every idx[0 .. n) names a transition of the set
  void check_indices(const int* idx, int n, const std::string& who) const {
    if (n <= 0) throw Error(who + ": empty batch");
    for (int i = 0; i < n; ++i)
      if (idx[i] < 0 || idx[i] >= count)
        throw Error(who + ": transition index " + std::to_string(idx[i]) + " out of range (set has " +
                    std::to_string(count) + ")");
  }
};

// A training step's small transfers, one copy each way: on a device every cudaMemcpy is
// a round trip through the driver and the bus, waited for, so a step's θ and indices go
// down together, and its losses, gradient sum and solver counts come back together (the
// ContactNets step had seven such copies, now two). The device buffers are carved into
// 8-byte-aligned arrays; they and the host copies grow with the batch, never shrink.
template <class T>
struct StepIo {
  DevBuf<double> dev_in, dev_out;        // 8-byte units
  std::vector<unsigned char> host_in, host_out;
  std::vector<T> theta_h, loss_h, grad_h;  // typed copies of the byte blocks' arrays
  std::vector<int> counts_h;               // iterations, solved flags, ρ updates
  size_t B = 0, P = 0, tb = 0, ib = 0, lb = 0;
  static size_t up8(size_t bytes) { return (bytes + 7) / 8 * 8; }
  size_t in_bytes() const { return tb + ib; }
  size_t out_bytes() const { return lb + tb + 3 * ib; }
  // a step of B transitions and P parameters
  void shape(size_t B_, size_t P_) {
    B = B_, P = P_;
    tb = up8(sizeof(T) * P), ib = up8(sizeof(int) * B), lb = up8(sizeof(T) * B);
    dev_in.ensure(in_bytes() / 8);
    dev_out.ensure(out_bytes() / 8);
    if (host_in.size() < in_bytes()) host_in.resize(in_bytes());
    if (host_out.size() < out_bytes()) host_out.resize(out_bytes());
    theta_h.resize(P), grad_h.resize(P), loss_h.resize(B), counts_h.resize(3 * B);
  }
  char* din() const { return reinterpret_cast<char*>(dev_in.p); }
  char* dout() const { return reinterpret_cast<char*>(dev_out.p); }
  // the device's views: inputs θ and indices; outputs losses, gradient sum, counts
  T* theta() const { return reinterpret_cast<T*>(din()); }
  int* idx() const { return reinterpret_cast<int*>(din() + tb); }
  T* loss() const { return reinterpret_cast<T*>(dout()); }
  T* grad_sum() const { return reinterpret_cast<T*>(dout() + lb); }
  int* iters() const { return reinterpret_cast<int*>(dout() + lb + tb); }
  int* solved() const { return reinterpret_cast<int*>(dout() + lb + tb + ib); }
  int* rho_updates() const { return reinterpret_cast<int*>(dout() + lb + tb + 2 * ib); }
  // θ (as T) and the indices down, in one copy
  void upload(const double* theta_in, const int* idx_in) {
    for (size_t i = 0; i < P; ++i) theta_h[i] = T(theta_in[i]);
    std::memcpy(host_in.data(), theta_h.data(), sizeof(T) * P);
    std::memcpy(host_in.data() + tb, idx_in, sizeof(int) * B);
    check(cudaMemcpy(dev_in.p, host_in.data(), in_bytes(), cudaMemcpyHostToDevice), "upload theta and indices");
  }
  // after the step's kernels: everything back in one copy; the losses into loss_out,
  // the counts into st, the gradient sum (if grad_out: the sum kernel ran) into grad_out
  void download(double* loss_out, double* grad_out, DeviceLossStats& st, bool with_rho) {
    const unsigned char* h = host_out.data();
    check(cudaMemcpy(host_out.data(), dev_out.p, out_bytes(), cudaMemcpyDeviceToHost),
          "download losses and gradient");
    std::memcpy(loss_h.data(), h, sizeof(T) * B);
    for (int c = 0; c < 3; ++c) std::memcpy(counts_h.data() + c * B, h + lb + tb + c * ib, sizeof(int) * B);
    const int *iters_h = counts_h.data(), *solved_h = iters_h + B, *rho_h = iters_h + 2 * B;
    for (size_t i = 0; i < B; ++i) {
      loss_out[i] = double(loss_h[i]);
      st.iterations += iters_h[i], st.not_solved += solved_h[i] ? 0 : 1;
      st.max_iterations = std::max(st.max_iterations, iters_h[i]);
      if (with_rho) st.max_rho_updates = std::max(st.max_rho_updates, rho_h[i]), st.rho_updates += rho_h[i];
    }
    if (grad_out) {
      std::memcpy(grad_h.data(), h + lb, sizeof(T) * P);
      for (size_t i = 0; i < P; ++i) grad_out[i] = double(grad_h[i]);
    }
  }
};


// problem-contiguous (batch x len) -> batch-fastest (len x batch).
template <class T>
void to_batch_fastest(const T* src, int batch, int len, std::vector<T>& dst) {
  dst.resize(size_t(batch) * len);
  for (int k = 0; k < batch; ++k)
    for (int e = 0; e < len; ++e) dst[size_t(e) * batch + k] = src[size_t(k) * len + e];
}

// batch-fastest (len x batch) -> problem-contiguous (batch x len).
template <class T>
void from_batch_fastest(const std::vector<T>& src, int batch, int len, T* dst) {
  for (int k = 0; k < batch; ++k)
    for (int e = 0; e < len; ++e) dst[size_t(k) * len + e] = src[size_t(e) * batch + k];
}

// The warp-per-problem QP kernel's arguments (kernels/qp_warp_kernels.cu): device
// pointers, problem-contiguous arrays (problem k's P at P + k·n², ...), the pattern
// (CSR, and its column view: col_ptr, and per column its entries' CSR positions and
// rows in row order), results per problem.
template <class T>
struct WarpLaunch {
  int batch = 0, n = 0, m = 0, nnz = 0;
  ConeSpec cones;
  const int *row_ptr = nullptr, *col = nullptr, *col_ptr = nullptr, *csc_pos = nullptr, *csc_row = nullptr;
  const T *P = nullptr, *q = nullptr, *A = nullptr, *b = nullptr;
  T *x = nullptr, *y = nullptr, *objective = nullptr, *value = nullptr, *prim_res = nullptr, *dual_res = nullptr;
  int *status = nullptr, *fault = nullptr, *iterations = nullptr, *rho_updates = nullptr;
  const int* warm_each = nullptr;  // optional: per problem, warm-start it (non-zero); else the launch's flag
  // optional: per problem, the first ρ (> 0; 0: the settings' ρ; BatchOptions::warm_rho),
  // and where each problem's final ρ goes (may be the same array)
  const T* rho0 = nullptr;
  T* rho_out = nullptr;
  // optional: per problem, the factorization its last solve left (warp_kept_size elements
  // each; DeviceQpBatch::keep_factors): every solve writes it, and with `reuse` a problem
  // whose entry is valid starts from it instead of equilibrating and factoring
  T* kept = nullptr;
  bool reuse = false;
  void set_pattern(const DevicePattern& p) {
    row_ptr = p.row_ptr.p, col = p.col.p, col_ptr = p.col_ptr.p, csc_pos = p.csc_pos.p, csc_row = p.csc_row.p;
  }
};
// launches one block of one warp per problem (asynchronous; the caller checks)
template <class T>
void launch_qp_warp(const WarpLaunch<T>& a, const QpSettings<T>& st, bool warm);
// the thread-per-problem QP kernel (kernels/qp_kernels.cu) on batch-fastest arrays
// (element e of problem k at e·batch + k), `work` qp_work_size(n, m) elements a problem;
// the pattern (shape.a) in device memory; reuse as qp_admm_solve's (the factorization
// the last solve left in `work`); warm_each as WarpLaunch's (asynchronous; the caller
// checks); rho0 and rho_out as WarpLaunch's
template <class T>
void launch_qp_thread(int batch, const QpShape& shape, const T* P, const T* q, const T* A, const T* b, T* x, T* y,
                      T* work, T* objective, T* value, T* prim_res, T* dual_res, int* status, int* fault,
                      int* iterations, int* rho_updates, const QpSettings<T>& st, bool warm, bool reuse = false,
                      const int* warm_each = nullptr, const T* rho0 = nullptr, T* rho_out = nullptr);

}  // namespace detail
}  // namespace cuda
}  // namespace impulse
