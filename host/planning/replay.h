// Replays of a contact-invariant plan (issue 19), proof that it is physically valid.
//
// Replay 1 (replay_forces): the capsule's rigid-body dynamics
// integrated by the engine's Stewart-Trinkle time-stepping (host/dynamics/simulate.h)
// under gravity, the ground as a simulated contact (the capsule's two end spheres,
// friction μ), and the plan's hand forces (fingertips and palm, from the inner QPs)
// applied as external impulses, held constant over each plan sample. The plan's ground
// forces are not applied: the simulated ground replaces them. The replayed object is
// compared with the plan at every sample.
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
  double max_deviation = 0;               // from the plan, m
  double final_error = 0;                 // from the task's target, m
  int failed_steps = 0;                   // engine steps whose LCP was not solved
};

ReplayResult replay_forces(const CioProblem& problem, const std::vector<CioSample>& plan, double dt = 0.0025);

struct HandReplayOptions {
  double dt = 0.0025;           // s
  double sphere_radius = 0.005;  // m
  double squeeze = 0.0005;       // m
};
ReplayResult replay_hand(const CioProblem& problem, const std::vector<CioSample>& plan, const HandReplayOptions& options = {});

}  // namespace impulse
