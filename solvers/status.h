// The numerical-outcome vocabulary shared by every solver.
//
// A status describes what happened to one problem. Misuse (wrong sizes, NaN
// input, bad settings) is a separate vocabulary: the host layer reports it as an
// impulse::Error with a message, and per-problem input faults found inside a
// batch show up here as kInvalidInput with an InputFault code.
#pragma once

#include "solvers/config.h"

IMPULSE_NAMESPACE_BEGIN

enum class SolveStatus : int {
  kNotRun = 0,
  kSolved = 1,
  kSolvedInaccurate = 2,   // stopped at the budget with residuals within 10x tolerance
  kMaxIterations = 3,      // stopped at the budget; the iterate is returned anyway
  kPrimalInfeasible = 4,   // a certificate of primal infeasibility was found
  kDualInfeasible = 5,     // a certificate of dual infeasibility (unbounded) was found
  kNumericalError = 6,     // a factorization failed or the iterate became non-finite
  kInvalidInput = 7,       // the problem's data were rejected (see InputFault)
  kRayTermination = 8,     // Lemke: secondary ray, no solution found from this start
};

// What was wrong with one problem's data (kInvalidInput).
enum class InputFault : int {
  kNone = 0,
  kNonFiniteP = 1,
  kNonFiniteQ = 2,
  kNonFiniteA = 3,
  kNonFiniteB = 4,
  kAsymmetricP = 5,
  kNotPsdP = 6,
  kNonFiniteM = 7,
  kNonPositiveDiagonal = 8,  // PGS needs M_ii > 0
  kNonFiniteMu = 9,
  kNegativeMu = 10,
};

inline const char* to_string(SolveStatus s) {
  switch (s) {
    case SolveStatus::kNotRun: return "not_run";
    case SolveStatus::kSolved: return "solved";
    case SolveStatus::kSolvedInaccurate: return "solved_inaccurate";
    case SolveStatus::kMaxIterations: return "max_iterations";
    case SolveStatus::kPrimalInfeasible: return "primal_infeasible";
    case SolveStatus::kDualInfeasible: return "dual_infeasible";
    case SolveStatus::kNumericalError: return "numerical_error";
    case SolveStatus::kInvalidInput: return "invalid_input";
    case SolveStatus::kRayTermination: return "ray_termination";
  }
  return "unknown";
}

inline const char* to_string(InputFault f) {
  switch (f) {
    case InputFault::kNone: return "none";
    case InputFault::kNonFiniteP: return "P has a NaN or Inf entry";
    case InputFault::kNonFiniteQ: return "q has a NaN or Inf entry";
    case InputFault::kNonFiniteA: return "A has a NaN or Inf entry";
    case InputFault::kNonFiniteB: return "b has a NaN, a -Inf, or an Inf outside the nonnegative rows";
    case InputFault::kAsymmetricP: return "P is not symmetric";
    case InputFault::kNotPsdP: return "P is not positive semidefinite";
    case InputFault::kNonFiniteM: return "M or q has a NaN or Inf entry";
    case InputFault::kNonPositiveDiagonal: return "M has a non-positive diagonal entry";
    case InputFault::kNonFiniteMu: return "mu has a NaN or Inf entry";
    case InputFault::kNegativeMu: return "mu has a negative entry";
  }
  return "unknown";
}

// True for the statuses whose iterate is a usable answer.
IMPULSE_HD bool is_solved(SolveStatus s) {
  return s == SolveStatus::kSolved || s == SolveStatus::kSolvedInaccurate;
}

IMPULSE_NAMESPACE_END  // namespace impulse
