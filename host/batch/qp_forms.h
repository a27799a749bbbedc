// The forms users hold their QPs in, as the conic batch the solver takes, and
// the multipliers back in the user's rows.
//
// Two-sided rows (OSQP's and ProxQP's form):
//   minimize ½xᵀPx + qᵀx  subject to  l ≤ A x ≤ u
// Each row i becomes conic rows (QpBatch: Ax + s = b, s in the cones):
//   l = u (finite)        one zero-cone row     a_i x + s = u
//   u finite, l = −inf    one nonnegative row   a_i x + s = u
//   l finite, u = +inf    one nonnegative row  −a_i x + s = −l
//   both finite, l < u    both of the above
//   both infinite         dropped (a free row)
// in the order: every equality, then every upper bound, then every lower bound.
// Which of these a row is must be the same in every problem of a batch (the
// pattern is shared); an Error names the row and the problems that differ.
// OSQP's multiplier of row i is the upper bound's minus the lower bound's
// (positive where a_i x = u binds, negative where a_i x = l does).
#pragma once

#include <string>
#include <vector>

#include "host/batch/qp_batch.h"

namespace impulse {

// B problems with two-sided rows, dense, row-major.
struct BoundedQps {
  int size = 0, n = 0, m = 0;
  std::vector<double> P;     // B × n × n
  std::vector<double> q;     // B × n
  std::vector<double> A;     // B × m × n
  std::vector<double> l, u;  // B × m, ±inf where a bound is missing
};

// Which conic row came from which of the user's rows.
struct RowMap {
  int m = 0;                         // the user's rows
  std::vector<int> equality, upper, lower;  // the user's row of each conic row, in conic order
};

struct ConicBatch {
  QpBatch<double> batch;
  RowMap rows;
};

// The rows alone (what conic_from_bounds does to A, l and u; the Python package's
// solve_qp_batch_osqp uses it too): A (size, m, n) and l, u (size, m) dense
// row-major in, the conic A (size, mc, n), b (size, mc), the cones and the map out.
struct ConicRows {
  ConeSpec cones;
  std::vector<double> A, b;
  RowMap rows;
};
ConicRows conic_rows_from_bounds(int size, int n, int m, const double* A, const double* l, const double* u,
                                 const std::string& what);

// Throws Error naming the array, the problem and the row: a wrong size, a NaN,
// l > u, l = +inf or u = −inf (no x satisfies it), a row whose kind differs
// between problems. `what` prefixes every message (e.g. the file's name).
ConicBatch conic_from_bounds(const BoundedQps& qps, const std::string& what);

// y (B × rows.m) in the user's rows from the conic solution's y (B × conic rows).
template <class T>
std::vector<T> bounds_multipliers(const RowMap& rows, int size, const std::vector<T>& conic_y);

}  // namespace impulse
