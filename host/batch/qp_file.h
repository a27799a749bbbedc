// Batch files: a QP batch and its solutions as a NumPy .npz archive, so the
// same problems can be solved by other solvers (np.load reads them directly).
//
// Problem file (np.savez layout, float64 or float32 arrays):
//   cones  int32 (3,)      [n_zero, n_nonneg, n_soc]; rows are in that order
//   P      (B, n, n)       symmetric positive semidefinite
//   q      (B, n)
//   A      (B, m, n)       dense; the shared sparsity pattern is the union of nonzeros
//   b      (B, m)
//   meaning: minimize ½xᵀPx + qᵀx  s.t.  Ax + s = b,  s ∈ K
//   optional warm start: x0 (B, n), y0 (B, m)
// Solution file:
//   x (B, n), y (B, m), objective (B,) = ½xᵀPx + qᵀx, value (B,) = the optimal-value
//   estimate objective + yᵀ(Ax − b), prim_res (B,), dual_res (B,) float64;
//   status (B,) int32 (0 not_run, 1 solved, 2 solved_inaccurate, 3 max_iterations,
//   4 primal_infeasible, 5 dual_infeasible, 6 numerical_error, 7 invalid_input),
//   fault (B,) int32, iterations (B,) int32, solve_us (B,) float64 (per-problem
//   CPU wall time when timed, else 0).
// Writes are atomic (temporary file + rename).
#pragma once

#include <string>

#include "host/batch/qp_batch.h"

namespace impulse {

struct QpFile {
  QpBatch<double> batch;
  bool has_warm_start = false;
  std::vector<double> x0, y0;
};

QpFile read_qp_file(const std::string& path);
void write_qp_file(const std::string& path, const QpBatch<double>& batch);
template <class T>
void write_solution_file(const std::string& path, const QpSolutions<T>& sol);
// reads x, y, objective, value, status, iterations, solve_us back (the other fields zero).
QpSolutions<double> read_solution_file(const std::string& path);

}  // namespace impulse
