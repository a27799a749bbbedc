// CUDA side of the batch API: device discovery and a device-resident QP
// batch solver. Host code and tests compile the same with or without CUDA:
// without it, kernels/no_cuda.cc implements this header and every call
// reports "CUDA not available" (available() is false, methods throw Error).
//
// Layout on the device: structure-of-arrays with the batch index fastest
// (element e of problem k at base[e * B + k]), so neighbouring threads read
// neighbouring words. One thread solves one problem with solvers/qp_admm.h.
// Allocation: buffers are sized by reserve(); solve() allocates nothing.
#pragma once

#include <memory>
#include <string>

#include "solvers/lcp_pgs.h"
#include "solvers/qp_admm.h"

namespace impulse {
namespace cuda {

struct DeviceInfo {
  bool built = false;    // compiled with the CUDA kernels
  int count = 0;         // devices present
  std::string name;      // device 0
  std::string reason;    // why none is usable, when count == 0
  double memory_gib = 0;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
};

// never throws.
DeviceInfo device_info();
// true when kernels were built and a device is present.
bool available();

// Host-side description of a batch (problem-contiguous arrays, as in
// host/batch/qp_batch.h). Pointers are host memory.
template <class T>
struct HostQpArrays {
  int batch = 0;
  int n = 0;
  ConeSpec cones;
  int nnz = 0;
  const int* a_row_ptr = nullptr;  // m + 1
  const int* a_col = nullptr;      // nnz
  const T* P = nullptr;            // batch * n * n
  const T* q = nullptr;            // batch * n
  const T* A = nullptr;            // batch * nnz
  const T* b = nullptr;            // batch * m
};

template <class T>
struct HostQpResults {
  T* x = nullptr;           // batch * n (warm start in, answer out)
  T* y = nullptr;           // batch * m
  T* objective = nullptr;   // batch
  T* value = nullptr;       // batch
  T* prim_res = nullptr;
  T* dual_res = nullptr;
  int* status = nullptr;    // SolveStatus as int
  int* fault = nullptr;     // InputFault as int
  int* iterations = nullptr;
  int* rho_updates = nullptr;
};

// A batch kept resident on the device across solves (training re-solves the
// same transitions every step; only changed data need uploading).
template <class T>
class DeviceQpBatch {
 public:
  DeviceQpBatch();
  ~DeviceQpBatch();
  DeviceQpBatch(const DeviceQpBatch&) = delete;
  DeviceQpBatch& operator=(const DeviceQpBatch&) = delete;

  // upload problem data (transposed to batch-fastest); (re)allocates only when
  // the shape or batch size grows.
  void upload(const HostQpArrays<T>& h);
  // upload a warm start (x, y) from host results.
  void upload_warm_start(const HostQpResults<T>& r);
  // solve every problem; warm uses the resident (x, y). Returns kernel time in ms.
  double solve(const QpSettings<T>& st, bool warm);
  // copy results back (transposed to problem-contiguous).
  void download(HostQpResults<T>& r) const;
  int batch() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A batch of LCPs (mu == nullptr) or contact cone complementarity problems
// (n = 3 * contacts, mu per contact), problem-contiguous host arrays. z holds
// the warm start (zeros for cold) on entry and the answer on exit. Uploads,
// solves one problem per thread with solvers/lcp_pgs.h, downloads.
template <class T>
struct HostLcpArrays {
  int batch = 0, n = 0;
  const T* M = nullptr;   // batch * n * n
  const T* q = nullptr;   // batch * n
  const T* mu = nullptr;  // batch * n / 3, or nullptr for a plain LCP
  T* z = nullptr;         // batch * n
  T* w = nullptr;         // batch * n
  int* status = nullptr;  // batch
  int* fault = nullptr;
  int* iterations = nullptr;
  T* residual = nullptr;
};
template <class T>
void solve_lcp_batch(HostLcpArrays<T>& h, const LcpSettings<T>& st);

extern template class DeviceQpBatch<float>;
extern template class DeviceQpBatch<double>;

}  // namespace cuda
}  // namespace impulse
