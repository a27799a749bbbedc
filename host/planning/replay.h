// Replays of a contact-invariant plan (issue 19), proof that it is physically valid.
//
// Replay 1 (replay_forces): the capsule's rigid-body dynamics
// integrated by the engine's Stewart-Trinkle time-stepping (host/dynamics/simulate.h)
// under gravity, the ground as a simulated contact (the capsule's two end spheres,
// friction μ), and the plan's hand forces (fingertips and palm, from the inner QPs)
// applied as external impulses, held constant over each plan sample (the plan is
// sampled at the replay's step). Two readings of "under the planned forces, with the
// ground as a contact", both reported by impulse plan:
//   with_ground_forces = true (the criterion): every planned force, the ground's too; the
//     simulated ground adds only what keeps the capsule out of the floor. It checks that
//     the plan's forces explain its motion, rotation included, once integrated.
//   with_ground_forces = false (strict): the hand's forces only, the simulated ground
//     replacing the plan's. It also asks the plan's ground forces to be what a Coulomb
//     floor would give; open loop over a second, any slip of the plan on the floor or any
//     velocity mismatch at lift-off grows linearly (see bench/results/planning_*.md).
// The replayed object is compared with the plan at every sample.
//
// Replay 2 (replay_hand): no planned forces at all. The palm and the fingertips are
// kinematic spheres moving along the plan (linearly between its samples), the capsule a
// free rigid body (orientation included) among them and the ground, all through the
// same time-stepping with friction μ; the spheres' motion enters each contact's gap and
// slip rates (ContactFrame::vn, vt). A sphere's centre is its hand point moved out from
// the planned capsule's surface by (radius − squeeze): a hand point on the surface
// presses into the capsule by `squeeze`, which is what holds a grasp in a rigid-contact
// simulation (two spheres merely touching a capsule do not squeeze it).
#pragma once

#include <vector>

#include <Eigen/Dense>

#include "host/planning/cio.h"

namespace impulse {

struct ReplayResult {
  std::vector<Eigen::Vector3d> replayed;  // object position at each plan sample
  std::vector<Eigen::Quaterniond> orientation;  // and orientation
  double max_deviation = 0;               // from the plan, m
  double max_rotation_deviation = 0;      // rad
  double final_error = 0;                 // from the task's target, m
  int failed_steps = 0;                   // engine steps whose LCP was not solved
};

// with_ground_forces: also apply the plan's ground forces (the simulated ground then only
// adds what keeps the capsule out of the floor); false: the hand's forces only
ReplayResult replay_forces(const CioProblem& problem, const std::vector<CioSample>& plan, double dt = 0.0025,
                           bool with_ground_forces = false);

struct HandReplayOptions {
  double dt = 0.0025;           // s
  double sphere_radius = 0.005;  // m
  double squeeze = 0.0005;       // m
};
ReplayResult replay_hand(const CioProblem& problem, const std::vector<CioSample>& plan, const HandReplayOptions& options = {});

}  // namespace impulse
