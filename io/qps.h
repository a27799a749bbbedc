// Quadratic programs in the QPS format (MPS with a quadratic objective), the
// format the Maros–Meszaros test set and most QP solvers' readers use.
//
// The problem read:
//   minimize    ½ xᵀQx + cᵀx + c0
//   subject to  row_lower ≤ A x ≤ row_upper,   col_lower ≤ x ≤ col_upper
//
// Sections (fixed or free format: fields are split at white space, so names may
// not contain spaces; lines starting with '*' are comments):
//   NAME, ROWS (N, E, L, G; the first N row is the objective, other N rows are
//   free and dropped), COLUMNS, RHS, RANGES, BOUNDS (UP, LO, FX, FR, MI, PL),
//   QUADOBJ (one triangle of Q: each off-diagonal entry once), QMATRIX or
//   QSECTION of the objective row (Q in full: both triangles), OBJSENSE MIN,
//   ENDATA. The set names in RHS, RANGES and BOUNDS may be left out.
// Conventions (as CPLEX, Gurobi and the Maros–Meszaros reference values use):
//   - the RHS of the objective row is −c0;
//   - a variable is ≥ 0 unless BOUNDS say otherwise; UP with a negative value
//     on a variable whose lower bound is still the default 0 makes it −∞;
//   - RANGES R on a row: E: [rhs, rhs + R] for R > 0, [rhs + R, rhs] for R < 0;
//     L: [rhs − |R|, rhs]; G: [rhs, rhs + |R|];
//   - a bound or right-hand side of magnitude ≥ 1e20 is infinite.
// Refused, each by name: integer markers and bound types (MARKER, BV, LI, UI,
// SC), OBJSENSE MAX, quadratic constraints (QCMATRIX, QSECTION of a constraint
// row), an entry given twice, a name used before its section defines it, a
// number that does not parse or is not finite, a missing ENDATA (a truncated
// file). Errors name the file and the line.
#pragma once

#include <string>
#include <vector>

namespace impulse {

struct QpsProblem {
  std::string name;                    // NAME's
  int n = 0, m = 0;                    // variables, constraint rows (objective and free rows dropped)
  std::vector<std::string> var_names;  // n, in the order COLUMNS gives them
  std::vector<std::string> row_names;  // m, in the order ROWS gives them
  std::vector<double> Q;               // n × n dense, row-major, symmetric
  std::vector<double> c;               // n
  double c0 = 0;                       // the objective's constant
  std::vector<double> A;               // m × n dense, row-major
  std::vector<double> row_lower, row_upper;  // m (±inf where unbounded)
  std::vector<double> col_lower, col_upper;  // n (±inf where unbounded)
};

// Throws impulse::Error "FILE:LINE: what is wrong" (or "FILE: ..." for the file as
// a whole). max_dense_entries bounds n² + m·n (the problem is held dense).
QpsProblem read_qps(const std::string& path, long long max_dense_entries = 50'000'000);

}  // namespace impulse
