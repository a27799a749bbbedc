// The batch API: B conic QPs of one shape, solved on the CPU (all cores, the
// same solvers/ functions the kernels call) or on the GPU.
//
// Host storage is problem-contiguous (problem k's P is P[k*n*n .. (k+1)*n*n)),
// which is what NumPy users and the CPU want; the GPU path transposes to
// batch-fastest on upload. A's sparsity pattern (CSR) is shared by the batch;
// A's values are stored per problem in pattern order.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "solvers/error.h"
#include "host/batch/parallel.h"
#include "kernels/qp_kernels.h"
#include "solvers/qp_admm.h"

namespace impulse {

enum class Backend { kCpu, kCuda };
Backend parse_backend(const std::string& s);  // "cpu" | "cuda"
const char* to_string(Backend b);

// A batch read in place: the caller's arrays, laid out as QpBatch keeps its own
// (problem-contiguous; A's values per problem in the pattern's order). solve_batch
// copies none of it (a NumPy user's arrays, a controller's buffers); they must
// outlive the solve and hold size·n·n, size·n, size·nnz and size·m numbers.
template <class T>
struct QpBatchView {
  int size = 0;  // B
  int n = 0;
  ConeSpec cones;
  int nnz_count = 0;
  const int* a_row_ptr = nullptr;  // m + 1
  const int* a_col = nullptr;      // nnz
  const T* P = nullptr;            // B * n * n, row-major, symmetric
  const T* q = nullptr;            // B * n
  const T* A = nullptr;            // B * nnz
  const T* b = nullptr;            // B * m

  int m() const { return cones.rows(); }
  int nnz() const { return nnz_count; }
  // throws Error naming what is wrong: a null array, a negative size, a pattern
  // whose row pointers do not run from 0 to nnz or whose columns are out of range
  // or not increasing along a row
  void check() const;
  QpShape shape() const;
  QpData<T, UnitStride> problem(int k) const;
  cuda::HostQpArrays<T> device_arrays() const;
};

template <class T>
struct QpBatch {
  int size = 0;  // B
  int n = 0;
  ConeSpec cones;
  std::vector<int> a_row_ptr;  // m + 1
  std::vector<int> a_col;      // nnz
  std::vector<T> P;            // B * n * n, row-major, symmetric
  std::vector<T> q;            // B * n
  std::vector<T> A;            // B * nnz
  std::vector<T> b;            // B * m

  int m() const { return cones.rows(); }
  int nnz() const { return static_cast<int>(a_col.size()); }
  // a batch of `size` zero problems with a dense pattern for A.
  static QpBatch dense(int size, int n, ConeSpec cones);
  // a batch of zero problems with the given pattern (row_ptr has m + 1 entries).
  static QpBatch with_pattern(int size, int n, ConeSpec cones, std::vector<int> row_ptr,
                              std::vector<int> col);
  // set problem k's A from a dense m x n row-major matrix; entries outside the
  // pattern must be zero (an Error names the first that is not).
  void set_A_dense(int k, const T* dense);
  // problem k's A as a dense m x n row-major matrix.
  std::vector<T> A_dense(int k) const;
  // the pattern every problem's nonzeros fit (union over the batch) of a dense
  // (B, m, n) array, and the values in that pattern.
  static QpBatch from_dense(int size, int n, ConeSpec cones, const std::vector<T>& P,
                            const std::vector<T>& q, const std::vector<T>& A_dense,
                            const std::vector<T>& b);
  // throws Error naming the array and the expected and actual sizes.
  void check_sizes() const;
  QpShape shape() const;  // points into this batch's pattern
  QpData<T, UnitStride> problem(int k) const;  // problem k's data; points into this batch
  cuda::HostQpArrays<T> device_arrays() const;  // what DeviceQpBatch::upload reads; points into this batch
  QpBatchView<T> view() const;                  // points into this batch
  template <class U>
  QpBatch<U> cast() const;
};

template <class T>
struct QpSolutions {
  int size = 0, n = 0, m = 0;
  std::vector<T> x, y;  // B * n, B * m
  std::vector<T> objective, value, prim_res, dual_res;  // value: QpInfo::value
  std::vector<SolveStatus> status;
  std::vector<InputFault> fault;
  // why each problem that is not solved is not: for invalid_input its fault
  // (to_string(InputFault)); for an infeasibility, the certificate and its
  // iteration; at the budget, the last check's residuals above their
  // tolerances and what was tried, e.g. "the budget of 4000 iterations ran
  // out with the primal residual 1.3e-04 at 26.1x its tolerance 4.9e-06, ...;
  // ADMM stalled at iteration 1000 (its residual ratio's best, 9.8 at
  // iteration 50, not bettered by 1% since), the interior point does not take
  // second-order cones, and ADMM restarted with the fallback settings at
  // iteration 1000". Empty for solved problems. (The device path records no
  // tolerances or stall: its text gives the residuals. Not in the solution
  // file: solve-batch prints it with each problem not solved.)
  std::vector<std::string> fault_text;
  std::vector<int> iterations, rho_updates;
  // the final ρ of each solve (QpInfo::rho; kept, as x and y are, when resize keeps
  // the shape): with BatchOptions::warm_rho the next warm-started solve starts there
  std::vector<T> rho;
  // of `iterations`, those of the interior-point finish after a stall or the
  // switch to it (CPU, double: QpSettings::stall_return and ipm_switch,
  // host/batch/qp_ipm.h); 0 where ADMM finished the problem
  std::vector<int> ipm_iterations;
  std::vector<double> solve_us;  // per-problem wall time (CPU backend only, when timed)

  void resize(int size_, int n_, int m_);
  // what DeviceQpBatch::download writes (and upload_warm_start reads): pointers into
  // this solution, with status and fault as ints in `codes` (2 × size, resized here);
  // take_codes copies them back into status and fault
  cuda::HostQpResults<T> device_results(std::vector<int>& codes);
  void take_codes(const std::vector<int>& codes);
  // one line per problem that is not solved, with its fault text:
  // "problem 17: invalid_input (P is not ...)".
  std::vector<std::string> problems_not_solved() const;
  int count(SolveStatus s) const;
};

// The factorizations a batch's CPU solves keep for re-solves in which only q and
// b change (OSQP's update of q and bounds; on the device, DeviceQpBatch::keep_factors):
// BatchOptions::factors. A solve with a store leaves each problem's factorization
// there, with its equilibration and ρ; a solve with BatchOptions::reuse_factors
// starts each problem from the one it finds, skipping P's and A's input checks,
// the equilibration and the factorization (the first ρ is then that
// factorization's: warm_rho gives way). The caller promises P and A are those of
// the store's last solve, and calls clear() when they change. A problem whose
// last solve left no usable factorization (an input fault, a numerical error,
// other σ, ρ_eq scale or Ruiz passes) sets up in full; in lanes a group sets up
// in full unless all its problems' are usable. A solve of another batch size,
// shape (n, m, nnz), precision, `lanes` or instruction set sets up in full and
// the store takes its layout. Memory is taken at the first solve of a layout.
class QpFactorStore {
 public:
  void clear();  // forget every factorization (keeps the memory)
  size_t bytes() const { return mem_.size(); }
  // (solve_batch's) the store's regions for this layout, zeroed when the layout
  // is new or after clear(); `usable`: whether they hold the last solve's
  struct Layout {
    int size = 0, n = 0, m = 0, nnz = 0, lane_bytes = 0;
    size_t elem = 0, stride = 0, regions = 0;
    bool lanes = false;
    bool operator==(const Layout& o) const {
      return size == o.size && n == o.n && m == o.m && nnz == o.nnz && lane_bytes == o.lane_bytes &&
             elem == o.elem && stride == o.stride && regions == o.regions && lanes == o.lanes;
    }
  };
  unsigned char* regions(const Layout& layout, bool& usable);

 private:
  std::vector<unsigned char> mem_;
  Layout layout_;
  bool filled_ = false;
};

struct BatchOptions {
  Backend backend = Backend::kCpu;
  int threads = 0;          // CPU threads; 0 = all cores
  bool warm_start = false;  // use the x, y already in the solutions as the start
  // with warm_start: start problem k at the ρ in the solutions (its last solve's
  // final ρ) where that is > 0, else at QpSettings::rho. The QPs of a training run
  // change little from one epoch to the next, and neither does the ρ they end at.
  bool warm_rho = false;
  bool time_each = false;   // record per-problem wall time (CPU; with lanes, each problem's
                            // share of its group's time)
  // CPU: solve W problems at once, one per lane of a SIMD vector
  // (solvers/qp_admm_lanes.h; W = 8 doubles or 16 floats with AVX-512).
  // false: one problem at a time (qp_admm_solve, the real-time path's solver,
  // whose answers do not depend on the other problems of the batch).
  bool lanes = true;
  // CUDA: one thread or one warp per problem (kernels/qp_kernels.h); kAuto picks by n
  cuda::DeviceLayout device_layout = cuda::DeviceLayout::kAuto;
  // CPU: keep each problem's factorization in `factors` (QpFactorStore); with
  // reuse_factors, start from the ones kept there (only q and b changed)
  QpFactorStore* factors = nullptr;
  bool reuse_factors = false;
};

// Solves every problem; per-problem outcomes are in `out.status` (one bad
// problem never spoils the rest). Problems with no optimum to report
// (invalid_input, numerical_error, primal or dual infeasible) get NaN
// objective and value; x and y are then the last iterate (zero for
// invalid input), an infeasibility's certificate direction aside. Throws Error for misuse: invalid settings,
// an empty batch, inconsistent sizes, a warm start of the wrong size, or the
// CUDA backend when it is not available.
template <class T>
void solve_batch(const QpBatch<T>& batch, const QpSettings<T>& settings,
                 const BatchOptions& options, QpSolutions<T>& out);
// the same, reading the batch in place (QpBatchView)
template <class T>
void solve_batch(const QpBatchView<T>& batch, const QpSettings<T>& settings,
                 const BatchOptions& options, QpSolutions<T>& out);

// The device layout solve_batch runs `batch` in with these options
// (cuda::resolve_layout: the warp for 16 <= n <= 32 when it fits, under kAuto).
template <class T>
cuda::DeviceLayout device_layout_for(const QpBatch<T>& batch, const BatchOptions& options);


}  // namespace impulse
