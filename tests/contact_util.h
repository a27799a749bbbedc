// Helpers shared by the ContactNets tests: random observed transitions of a cube
// near the table, and QP settings tight enough for finite differences.
#pragma once

#include <random>
#include <vector>

#include "host/learning/contactnets_model.h"

namespace impulse {
namespace testing {

// A cube near the table with a random pose and velocity, and its next state
// from a short free-flight step plus a random velocity change (an "observed"
// transition, not necessarily physical).
inline std::vector<TransitionFrame> random_transitions(LearnableContactModel& model, int count,
                                                uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> N(0.0, 1.0);
  std::vector<TransitionFrame> out(count);
  const double dt = 1.0 / 148.0;
  for (auto& t : out) {
    Eigen::Quaterniond q(N(rng), N(rng), N(rng), N(rng));
    q.normalize();
    const Eigen::Vector3d p(0.01 * N(rng), 0.01 * N(rng), 0.06 + 0.02 * N(rng));
    const Eigen::Vector3d v(0.3 * N(rng), 0.3 * N(rng), -0.5 + 0.3 * N(rng));
    const Eigen::Vector3d w(3 * N(rng), 3 * N(rng), 3 * N(rng));
    t.x = make_state(p, q, v, w);
    Vec6 nu_next;
    nu_next << v + Eigen::Vector3d(0.1 * N(rng), 0.1 * N(rng), 0.4 + 0.2 * N(rng)),
        w + Eigen::Vector3d(N(rng), N(rng), N(rng));
    t.x_next = integrate(t.x, nu_next, dt);
  }
  model.frames(out, 1);
  return out;
}

inline QpSettings<double> tight() {
  QpSettings<double> s;
  s.eps_abs = 1e-12;
  s.eps_rel = 1e-12;
  s.max_iter = 200000;
  s.max_rho_updates = 50;
  s.ipm_switch = 0;  // ADMM to the end, as the device runs it (GPU tests compare the two)
  return s;
}

}  // namespace testing
}  // namespace impulse
