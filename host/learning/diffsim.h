// DiffSim, the CCN paper's differentiable-simulation baseline: the same
// structured model as CCN (host/learning/ccn.h: vertices, log-Cholesky
// inertia, μ, optional residual) trained on the one-step prediction error of
// the Anitescu step (host/dynamics/multibody_sim.h):
//   v̂'(θ) = v* + M⁻¹ J̃ᵀ λ*(θ),  v* = v + Δt (−M⁻¹h + δ(x)),
//   λ*(θ) = argmin_{λ ∈ K} ½ λᵀ P λ + qᵀ λ,  P = J̃ M⁻¹ J̃ᵀ, q = J̃ v* + b̃, b̃_i = [φ_i/Δt, 0, 0],
//   loss = (v̂' − v')ᵀ M (v̂' − v')   (the prediction error in the energy norm,
//          the units of CCN's prediction term) + w_res ‖δ Δt‖²_M (ccn.h says
//          why this norm); per batch the mean
//          plus w_res_w ‖W‖² (Table 2: 1000 / 1 real, 1 / 0 simulated).
// Gradient: implicit differentiation of the conic QP at its solution. With
// Π the projection onto K and γ > 0, λ* solves F(λ) = λ − Π(λ − γ(Pλ + q)) = 0;
// with D = DΠ at λ − γ(Pλ + q) (the SOC projection's Jacobian), dλ =
// −γ A⁻¹ D (dP λ + dq), A = I − D + γ D P. For a loss with ∂/∂λ = g the
// adjoint r = −γ D A⁻ᵀ g gives gᵀdλ = rᵀ(dP λ + dq), chained into θ through P
// and q. A may be singular (P is only PSD: more impulse unknowns than
// velocities; λ* is then not unique although v̂' is): the adjoint is the
// minimum-norm solution (complete orthogonal decomposition), which gives the
// derivative of v̂' (the loss depends on λ only through J̃ᵀλ).
#pragma once

#include <vector>

#include "host/dynamics/multibody_sim.h"
#include "host/learning/ccn.h"

namespace impulse {

struct DiffSimConfig {
  double dt = 0.0068;
  double w_res = 1000, w_res_w = 1;  // real data (Table 2); simulated 1, 0
};

struct DiffSimResult {
  double loss = 0;  // mean + weight penalty
  std::vector<double> per_transition;
  int not_solved = 0;
  long long iterations = 0;
};

class DiffSimLoss {
 public:
  explicit DiffSimLoss(DiffSimConfig cfg, MultibodyStepOptions step = {});
  DiffSimConfig& config() { return cfg_; }
  MultibodyStepOptions& step_options() { return step_; }
  // loss of a batch and, if grad is given, its gradient (model.parameter_count()).
  DiffSimResult evaluate(const CcnModel& model, const std::vector<CcnTransition>& batch, Eigen::VectorXd* grad);

 private:
  DiffSimConfig cfg_;
  MultibodyStepOptions step_;
};

// The SOC projection's Jacobian at z = (t, u1, u2) (3 x 3); exposed for tests.
Eigen::Matrix3d soc_projection_jacobian(const Eigen::Vector3d& z);

}  // namespace impulse
