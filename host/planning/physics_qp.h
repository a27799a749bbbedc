// The physics term of contact-invariant optimization as an optimal value (issue 19):
// at each sample of the motion, the contact forces that best explain the object's
// change of momentum,
//
//   V = min_f ‖Σ_j c_j F_j + m g − m a‖² + w_M ‖Σ_j c_j (r_j − x_O) × F_j − L̇‖² + λ Σ_j ‖f_j‖²
//       F_j = R_j f_j,  f_j = (f_n, f_t1, f_t2) in contact j's frame R_j = [n t1 t2],
//       ‖(f_t1, f_t2)‖ ≤ μ f_n   (each force in its friction cone, n pointing into the object)
//
// (w_M = 1/ℓ², ℓ a length: the notes weigh moments and forces alike, w_M = 1, which for a
// 3 cm object lets a moment that spins it up in a fraction of a second cost less than the
// force regularization; the planner uses ℓ² = I_min / m, so both terms measure m²‖δa‖²,
// δa a linear or a surface acceleration), a small conic QP per sample (3 unknowns and one second-order cone per contact), all
// samples solved in one batch by the batched solver. Its gradient with respect to the
// motion comes from the envelope theorem: with the cone fixed in the local frame, the
// feasible set does not depend on the motion, so dV/dθ = ∂Φ/∂θ at the optimal f. With
// ρ = (ρ_F, ρ_M) the residual force and moment at the optimum:
// (and ρ̄_M = w_M ρ_M):
//   ∂V/∂c_j = 2 ρ_F·F_j + 2 ρ̄_M·((r_j − x_O) × F_j)
//   ∂V/∂r_j = 2 c_j F_j × ρ̄_M,      ∂V/∂x_O = −Σ_j ∂V/∂r_j
//   ∂V/∂a = −2 m ρ_F,               ∂V/∂L̇ = −2 ρ̄_M
//   ∂V/∂R_j = 2 c_j (ρ_F + ρ̄_M × (r_j − x_O)) f_jᵀ   (a 3×3 matrix)
// (the caller chains ∂V/∂R_j through the frame's dependence on the geometry).
#pragma once

#include <vector>

#include <Eigen/Dense>

#include "host/batch/qp_batch.h"

namespace impulse {

struct PhysicsSample {
  double mass = 1;
  Eigen::Vector3d gravity{0, 0, -9.81};
  Eigen::Vector3d x_obj = Eigen::Vector3d::Zero();   // object centre of mass
  Eigen::Vector3d accel = Eigen::Vector3d::Zero();   // its acceleration
  Eigen::Vector3d Ldot = Eigen::Vector3d::Zero();    // rate of angular momentum about it
  std::vector<Eigen::Vector3d> r;                    // contact points
  std::vector<Eigen::Matrix3d> frame;                // columns: inward normal, two tangents
  std::vector<double> c;                             // contact weights
  double moment_weight = 1;                          // w_M, 1/m²
};

struct PhysicsGradient {
  double value = 0;
  std::vector<Eigen::Vector3d> force;                // world forces F_j = R_j f_j at the optimum
  Eigen::Vector3d residual_force = Eigen::Vector3d::Zero(), residual_moment = Eigen::Vector3d::Zero();  // ρ_F, ρ_M
  std::vector<double> d_c;
  std::vector<Eigen::Vector3d> d_r;
  std::vector<Eigen::Matrix3d> d_frame;
  Eigen::Vector3d d_x_obj = Eigen::Vector3d::Zero(), d_accel = Eigen::Vector3d::Zero(), d_Ldot = Eigen::Vector3d::Zero();
  bool solved = true;
};

struct PhysicsQpOptions {
  double mu = 0.8;          // friction coefficient of every contact
  double lambda = 1e-4;     // force regularization
  double eps = 1e-9;        // QP tolerance (absolute and relative)
  bool cones = true;        // false: forces unconstrained (the notes' formulation), a linear solve
  int threads = 0;
  Backend backend = Backend::kCpu;
};

// The contact frame [n t1 t2] the QP uses for a unit normal n (tangents by a fixed
// construction; V depends on n only, the cone being symmetric), and dV/dn from
// dV/dframe through that construction.
Eigen::Matrix3d contact_frame(const Eigen::Vector3d& n);
Eigen::Vector3d contact_frame_gradient_to_normal(const Eigen::Vector3d& n, const Eigen::Matrix3d& dV_dframe);

// The value and its envelope gradient at every sample (all of one contact count).
std::vector<PhysicsGradient> physics_values(const std::vector<PhysicsSample>& samples, const PhysicsQpOptions& opt);

// The objective Φ at given local forces f (3 per contact), for checks.
double physics_objective(const PhysicsSample& s, const std::vector<Eigen::Vector3d>& f_local, double lambda);

}  // namespace impulse
