// Problem generators: random conic QPs with a known optimal primal-dual pair
// (test references), and batches shaped like the problems the learning and
// simulation layers solve (the cube's ContactNets loss QP, an Anitescu step).
#pragma once

#include <cstdint>

#include "host/batch/friction_model.h"
#include "host/batch/qp_batch.h"

namespace impulse {

struct GeneratedQps {
  QpBatch<double> batch;
  std::vector<double> x_opt, y_opt, obj_opt;  // a known optimum per problem (when known)
};

// Random feasible, bounded QPs over `cones` with n variables: P = GᵀG of a
// random rank (possibly singular), a complementary pair (s*, y*) per cone
// (active and inactive rows, SOC boundary and interior) and b = Ax* + s*,
// q = −Px* − Aᵀy*, so (x*, y*) is optimal and obj_opt its value.
GeneratedQps random_qp_batch(int size, int n, ConeSpec cones, uint64_t seed);

// The solver benchmarks' random QPs (issue 46's class, the shape OSQP's and ProxQP's
// benchmarks use): P = M Mᵀ/n + 0.1 I with M of n × max(1, n/2) (entries nonzero with
// probability `density`), A of `equalities` zero-cone rows then `inequalities`
// nonnegative rows, Gaussian entries in a pattern drawn once for the batch (each entry
// with probability `density`, at least one per row), half the inequality rows active at
// the known optimum (x*, y*) (b = Ax* + s*, q = −Px* − Aᵀy*; P is positive definite, so
// x* is the only minimizer and obj_opt its value). Throws Error naming a size or
// density out of range.
struct RandomQpShape {
  int n = 16;
  int inequalities = 32;
  int equalities = 0;
  double density = 1.0;  // (0, 1]
};
GeneratedQps random_benchmark_batch(int size, const RandomQpShape& shape, uint64_t seed);

// The cube's ContactNets loss QP (8 corner contacts, 32 variables
// [λ_n (8), λ_t (16, x/y per contact), penetration slack (8)]) at random
// poses near a table: prediction, contact activation and dissipation terms in
// P and q; rows λ_n ≥ 0, slack ≥ 0, penetration with slack, and friction as
// 8 exact cones (m = 48) or the reference implementation's octagon (m = 88).
GeneratedQps cube_loss_batch(int size, FrictionModel friction, uint64_t seed);

// An Anitescu contact step for the cube: 24 variables (λ per contact
// [n, t1, t2], μ folded into the tangent rows), 8 second-order cones.
GeneratedQps anitescu_step_batch(int size, uint64_t seed);

}  // namespace impulse
