// Replay 1 of a contact-invariant plan (issue 19): the capsule's rigid-body dynamics
// integrated by the engine's Stewart-Trinkle time-stepping (host/dynamics/simulate.h)
// under gravity, the ground as a simulated contact (the capsule's two end spheres,
// friction μ), and the plan's hand forces (fingertips and palm, from the inner QPs)
// applied as external impulses, held constant over each plan sample. The plan's ground
// forces are not applied: the simulated ground replaces them. The replayed object is
// compared with the plan at every sample.
#pragma once

#include <vector>

#include <Eigen/Dense>

#include "host/planning/cio.h"

namespace impulse {

struct ReplayResult {
  std::vector<Eigen::Vector3d> replayed;  // object position at each plan sample
  double max_deviation = 0;               // from the plan, m
  double final_error = 0;                 // from the task's target, m
  int failed_steps = 0;                   // engine steps whose LCP was not solved
};

ReplayResult replay_forces(const CioProblem& problem, const std::vector<CioSample>& plan, double dt = 0.0025);

}  // namespace impulse
