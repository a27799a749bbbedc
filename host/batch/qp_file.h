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
#include "host/batch/qp_forms.h"
#include "io/npz.h"

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
// the solution file's arrays (for a caller that adds its own before write_npz)
template <class T>
NpzArchive solution_arrays(const QpSolutions<T>& sol);
// reads x, y, objective, value, status, iterations, solve_us back (the other fields zero).
QpSolutions<double> read_solution_file(const std::string& path);

// OSQP's form (qp_forms.h) as OSQP and ProxQP users hold it: an .npz, or a folder
// of P.npy, q.npy, A.npy, l.npy, u.npy; one problem (P (n, n), q (n,), A (m, n),
// l and u (m,)) or a batch (a leading B on each). float64 or float32; ±inf for a
// missing bound (numpy writes them). Errors name the file, the array and the shape.
BoundedQps read_bounded_file(const std::string& path);

// A QPS file (io/qps.h) as one problem with two-sided rows: the file's constraint
// rows, then one row x_j for each variable with a finite bound, in variable order.
struct QpsAsBounds {
  std::string name;             // the file's NAME
  BoundedQps qps;               // size 1; rows: the constraints, then the bounds
  int constraint_rows = 0;      // the file's rows (the first of qps.m)
  std::vector<int> bound_vars;  // the variable of each bound row
  double constant = 0;          // the objective's constant (not in q)
};
QpsAsBounds read_qps_problem(const std::string& path);

}  // namespace impulse
