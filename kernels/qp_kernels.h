// CUDA side of the batch API: device discovery and a device-resident QP
// batch solver. Host code and tests compile the same with or without CUDA:
// without it, kernels/no_cuda.cc implements this header and every call
// reports "CUDA not available" (available() is false, methods throw Error).
//
// Two layouts on the device (DeviceLayout), the same algorithm (solvers/qp_admm.h;
// the thread layout checks on a fixed schedule, the warp layout predicts its checks as
// the CPU does: detail::device_settings) and the same answers to rounding:
//   - thread: one thread solves one problem (kernels/qp_kernels.cu); arrays are
//     structure-of-arrays with the batch index fastest (element e of problem k at
//     base[e * B + k]), its workspace (K⁻¹ included) in global memory;
//   - warp: one warp solves one problem, n <= 32 (kernels/qp_warp_kernels.cu); arrays
//     problem-contiguous, the iterate, A and K⁻¹ on chip (shared memory, registers).
// kAuto takes the warp for 16 <= n <= 32 (the sizes where the simulated counts favour
// it: bench/results/gpu_warp_vs_thread_2026-11-24.md) when its shared memory fits
// (resolve_layout), the thread otherwise.
// Allocation: buffers grow in upload(); solve() allocates nothing.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "solvers/error.h"
#include "solvers/lcp_pgs.h"
#include "solvers/qp_admm.h"

namespace impulse {
namespace cuda {

enum class DeviceLayout { kAuto, kThread, kWarp };
inline const char* to_string(DeviceLayout l) {
  return l == DeviceLayout::kAuto ? "auto" : l == DeviceLayout::kThread ? "thread" : "warp";
}
// "auto", "thread" or "warp"; throws Error naming the value otherwise
inline DeviceLayout parse_device_layout(const std::string& s) {
  if (s == "auto") return DeviceLayout::kAuto;
  if (s == "thread") return DeviceLayout::kThread;
  if (s == "warp") return DeviceLayout::kWarp;
  throw Error("unknown device layout '" + s + "': expected auto, thread or warp");
}

// Shared memory one problem of the warp layout takes: A's nonzeros, four rows of 32
// and nine of m entries, and K while it is formed (32 × 33). The nonzeros and each row of
// m take a multiple of 4 elements (warp_pad4), so every row starts 16-byte aligned and is
// read four elements a load.
IMPULSE_HD constexpr int warp_pad4(int v) { return (v + 3) & ~3; }
inline size_t warp_shared_bytes(int m, int nnz, size_t elem) {
  return size_t(warp_pad4(nnz) + 4 * 32 + 9 * warp_pad4(m) + 32 * 33) * elem;
}
// The same with A also held dense (m rows of warp_dense_ld, zeros off the pattern) and P
// (32 x 32), as the stagnation-restart variants take it when it fits the limit below: K
// is then formed in registers, a lane's column from its column's rows of the dense A, and
// needs no shared 32 x 33 block (only its first row, the broadcast row, stays); P is read
// from shared memory; with m <= 32 and long rows, Ax and Aᵀy from the dense A.
// The dense A's row stride: 32 columns and padding, rows 16-byte aligned, and rows 4 banks
// apart (68 words in double, 36 in float), so lanes reading 16 bytes each of different
// rows at the same column (the factorization's K, Ruiz's row norms) meet no bank conflict.
IMPULSE_HD constexpr int warp_dense_ld(size_t elem) { return elem == 8 ? 34 : 36; }
inline size_t warp_shared_bytes_dense(int m, int nnz, size_t elem) {
  return size_t(warp_pad4(nnz) + 4 * 32 + 9 * warp_pad4(m) + 32 + size_t(m) * warp_dense_ld(elem) + 32 * 32) * elem;
}
constexpr size_t kWarpSharedLimit = 48 * 1024;  // without opting in to more

// Elements of the factorization one problem of the warp layout keeps between solves
// (DeviceQpBatch::keep_factors): K⁻¹ (n × n), D (n), E (m), c, ρ, the settings it
// depends on (σ, ρ_eq scale, Ruiz passes) and a validity flag.
IMPULSE_HD int warp_kept_size(int n, int m) { return n * n + n + m + 6; }

// The layout a batch runs in. kThread always. kWarp when n <= 32 and its shared
// memory fits (else Error saying which). kAuto: kWarp for 16 <= n <= 32 when it
// fits, else kThread. Both layouts take what the CPU's qp_admm_solve takes (rows
// with b = +inf, the fallback restart); the warp kernel always forms K⁻¹ (the thread
// kernel and the CPU honour QpSettings::explicit_inverse = false with a Cholesky solve
// per iteration: the same iterates up to rounding).
inline DeviceLayout resolve_layout(DeviceLayout want, int n, int m, int nnz, size_t elem) {
  const bool fits = n >= 1 && n <= 32 && warp_shared_bytes(m, nnz, elem) <= kWarpSharedLimit;
  if (want == DeviceLayout::kWarp && !fits)
    throw Error("device layout warp: needs n <= 32 and at most " + std::to_string(kWarpSharedLimit) +
                " bytes of shared memory per problem; this batch has n = " + std::to_string(n) + ", m = " +
                std::to_string(m) + " (" + std::to_string(warp_shared_bytes(m, nnz, elem)) + " bytes)");
  if (want == DeviceLayout::kAuto) return fits && n >= 16 ? DeviceLayout::kWarp : DeviceLayout::kThread;
  return want;
}

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

// A batch's description (problem-contiguous arrays, as in host/batch/qp_batch.h).
// Pointers are host memory, or with on_device the data (P, q, A, b) are device
// memory (a caller's own, e.g. PyTorch's CUDA tensors through DLPack): upload then
// copies or transposes on the device, with no host round trip. The pattern
// (a_row_ptr, a_col) is host memory either way.
template <class T>
struct HostQpArrays {
  bool on_device = false;
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

// Where results go (and a warm start comes from): host memory, or with on_device
// device memory (every pointer), written on the device.
template <class T>
struct HostQpResults {
  bool on_device = false;
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
  T* rho = nullptr;         // batch: each solve's final ρ (out); with warm_rho, the first ρ (in)
};

// Device memory of `count` elements for callers without the CUDA runtime's headers
// (tests, bindings): allocated in the constructor (Error when CUDA is not available),
// freed in the destructor; upload and download copy count elements from and to the host.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t count);
  ~DeviceArray();
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* data() const { return p_; }
  size_t size() const { return n_; }
  void upload(const T* host);
  void download(T* host) const;

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};
extern template class DeviceArray<float>;
extern template class DeviceArray<double>;
extern template class DeviceArray<int>;

// A batch kept resident on the device across solves (training re-solves the
// same transitions every step; only changed data need uploading).
template <class T>
class DeviceQpBatch {
 public:
  explicit DeviceQpBatch(DeviceLayout layout = DeviceLayout::kAuto);
  ~DeviceQpBatch();
  DeviceQpBatch(const DeviceQpBatch&) = delete;
  DeviceQpBatch& operator=(const DeviceQpBatch&) = delete;

  // upload problem data (transposed to batch-fastest for the thread layout; from
  // host or, with h.on_device, device memory);
  // resolves the layout for its shape (resolve_layout: Error when warp was asked
  // for and does not fit); (re)allocates only when the shape or batch size grows.
  void upload(const HostQpArrays<T>& h);
  // the layout the uploaded batch runs in (the one asked for before any upload)
  DeviceLayout layout() const;
  // upload a warm start (x, y, and ρ where r.rho is given) from results (host or,
  // with r.on_device, device memory). The values are not checked here: they must be
  // finite (solve_batch checks host ones).
  void upload_warm_start(const HostQpResults<T>& r);
  // Re-solves that keep the factorization (OSQP's update of q and bounds; qp_admm_solve's
  // `reuse`). With keep_factors(true) every solve leaves each problem's factorization on
  // the device (the thread layout in its workspace, the warp layout in
  // warp_kept_size(n, m) elements a problem, allocated then or by the next upload: set-up,
  // not solve); upload() forgets them (new P and A). upload_vectors replaces only q
  // (batch × n) and b (batch × m), host arrays problem-contiguous, and keeps them.
  void keep_factors(bool on);
  void upload_vectors(const T* q, const T* b);
  // solve every problem; warm uses the resident (x, y). reuse (needs keep_factors): each
  // problem whose last solve left a usable factorization starts from it (P, A and the
  // settings must be that solve's), the others set up in full. warm_rho (with warm): each
  // problem starts at the resident ρ (its last solve's final ρ, or the uploaded one) where
  // that is > 0, clamped to [rho_min, rho_max] (BatchOptions::warm_rho; solve_batch refuses
  // a NaN or out-of-range one before it gets here); a problem that starts from its kept
  // factorization (reuse) starts at that factorization's ρ. Returns kernel time in ms.
  double solve(const QpSettings<T>& st, bool warm, bool reuse = false, bool warm_rho = false);
  // copy results back (transposed to problem-contiguous), to host or, with
  // r.on_device, device memory.
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
