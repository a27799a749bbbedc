// The batch API for LCPs (z ≥ 0 ⊥ Mz + q ≥ 0) and contact cone
// complementarity problems (λ per contact in the friction cone), solved by
// projected Gauss-Seidel on all CPU cores or on the GPU with the same
// solvers/lcp_pgs.h functions. Problem-contiguous host storage.
#pragma once

#include <vector>

#include "host/batch/qp_batch.h"
#include "solvers/lcp_pgs.h"

namespace impulse {

template <class T>
struct LcpBatch {
  int size = 0, n = 0;
  std::vector<T> M;   // B * n * n, row-major
  std::vector<T> q;   // B * n
  std::vector<T> mu;  // B * n / 3 for contact problems; empty for plain LCPs
  bool contact() const { return !mu.empty(); }
  void check_sizes() const;  // throws Error naming the array
};

template <class T>
struct LcpSolutions {
  std::vector<T> z, w, residual;
  std::vector<SolveStatus> status;
  std::vector<InputFault> fault;
  std::vector<int> iterations;
};

// z in `out` is the warm start when options.warm_start (else zeros).
template <class T>
void solve_lcp_batch(const LcpBatch<T>& batch, const LcpSettings<T>& settings,
                     const BatchOptions& options, LcpSolutions<T>& out);

}  // namespace impulse
