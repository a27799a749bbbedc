// Helpers shared by the .cu files: error checks and the host-side layout
// transposes between problem-contiguous and batch-fastest arrays.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "solvers/error.h"
#include "solvers/qp_admm.h"

namespace impulse {
namespace cuda {
namespace detail {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
}

// The QP settings as the kernels run them: one thread per problem, so the
// check schedule stays fixed (predicted checks would have the threads of a
// warp check at different iterations and all wait for each check).
template <class T>
QpSettings<T> device_settings(QpSettings<T> st) {
  st.predict_checks = false;
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

}  // namespace detail
}  // namespace cuda
}  // namespace impulse
