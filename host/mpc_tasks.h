// Control tasks for C3 (host/c3.h) and the adaptive loop (host/residual_learner.h).
//
// Cart-pole between two soft walls (papers/adaptive-c3-residual-learning-2024.txt,
// Sec. VII-A; the model of Aydinoglu et al., "Stabilization of complementarity systems
// via contact-aware controllers", as in the C3 reference examples). State
// x = (cart position [m], pole angle from upright [rad], cart velocity [m/s], pole rate
// [rad/s]); input u = horizontal force on the cart [N]; λ = (right wall, left wall) spring
// forces on the pole tip [N]. Parameters (SI):
//   cart mass 0.978 kg, pole mass 0.411 kg, pole length 0.6 m (tip lever), pole centre of
//   mass at 0.4267 m, g = 9.81 m/s²; walls at ±0.35 m from the origin, modelled as
//   springs of stiffness 100 N/m (λ = k·penetration: 0 ≤ λ ⊥ gap + λ/k ≥ 0);
//   time step 0.01 s (explicit Euler of the linearization about the upright equilibrium).
// The true system is this LCS with the true wall offsets (c_true = ĉ + Δφ), stepped
// with Lemke (lcs_step); the controller's model uses ĉ.
//
// Ball rolling (planar, see BallRollingTask below).
#pragma once

#include <Eigen/Dense>

#include "host/c3.h"
#include "host/lcs.h"

namespace impulse {

struct CartPoleParams {
  double mc = 0.978, mp = 0.411, len_p = 0.6, len_com = 0.4267, g = 9.81;
  double wall = 0.35;      // nominal wall distance [m] (the model's ĉ)
  double stiffness = 100;  // wall spring [N/m]
  double dt = 0.01;        // [s]
};

// the LCS (time-invariant over N steps) with wall offsets c = (wall, wall) + offset.
Lcs cartpole_lcs(const CartPoleParams& p, int N, const Eigen::Vector2d& offset = Eigen::Vector2d::Zero());

// C3 weights of the reference example: Q = diag(10, 3, 1, 1), R = 1, Q_N = the DARE
// solution of the contact-free linearization; G = (0.1 x, 10 λ, 0.1 u),
// U = (1000 x, 0.1 λ, 0.1 u); bounds on |x| (5 m, 1.5 rad, 20 m/s, 40 rad/s), |u| ≤ 50 N.
C3Costs cartpole_costs(const CartPoleParams& p);
C3Settings cartpole_settings();

}  // namespace impulse
