// The real ContactNets loss QPs (../shared/data/contactnets_qps, OSQP form
// l <= Ax <= u with l = -inf) as a QpBatch: Ax + s = u, s >= 0.
#pragma once

#include <string>
#include <vector>

#include "host/batch/qp_batch.h"

namespace impulse {

struct GoldenQps {
  QpBatch<double> batch;
  std::vector<double> ref_obj;  // reference optimal values (interior point, 1e-10)
  std::vector<double> ref_x;    // reference solutions, B * n
};

// Reads `<dir>/<prefix>_{P,q,A,l,u,ref_x,ref_obj}.npy` (prefix "train" or
// "gt"). Throws Error naming the file on any inconsistency, including a finite l
// (only one-sided rows are supported by this converter).
GoldenQps load_golden_qps(const std::string& dir, const std::string& prefix);

}  // namespace impulse
