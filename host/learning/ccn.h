// CCN (Bianchini, Halm, Posa, CoRL 2023; papers/ccn-contact-and-continuous-2023.txt):
// learn contact geometry, friction, inertia and a residual acceleration of a
// multibody system (host/dynamics/multibody.h) from observed transitions with a
// violation-implicit loss.
//
// Model parameters θ, one flat vector:
//   [vertices: 3 per contact vertex, links in order (link frame, m) |
//    inertia: log-Cholesky 10 per link (host/dynamics/inertia.h), the total mass
//    held at the system's | μ (one friction coefficient) | residual network]
// The residual δ(x) (optional) is an MLP 2×128 ReLU on the state with the base
// quaternion as its 9 rotation-matrix entries: input [vec R (row-major); p; θ;
// v], output nv accelerations added to the continuous acceleration (eq. 7).
//
// Loss of one transition (x, x') (eqs. 4, 5, 10, 11, 12), minimized over the
// contact impulses λ_i = (λ_n, λ_t) in the friction cones ‖λ_t‖ ≤ μ λ_n:
//   ‖M Δv + Jᵀλ‖²_{M⁻¹}                         prediction, energy norm
//   + 2 w_comp Σ λ_n,i |φ_i(q')| / Δt            complementarity
//   + 2 w_diss Σ λ_iᵀ [μ ‖J_t,i v'‖; J_t,i v']    dissipation
//   + 2 w_pen Σ min(0, φ_i(q'))²                 penetration (no λ)
//   + 2 w_res ‖δ(x) Δt‖²_M                       residual norm (CCN-R)
// The weights w are the paper's (Table 2), and they were tuned on its authors'
// code (DAIRLab/dair_pll, ContactNets loss terms), whose loss differs from eqs.
// 4a and 11 as printed in two ways that change what a weight means: the
// prediction term is halved (½‖·‖²_{M⁻¹}), and complementarity is λ_n |φ| / Δt
// (an energy, as the prediction term is; a penetrating vertex is charged, not
// rewarded as λ_n φ < 0 would). We keep the prediction whole and double every
// weighted term (twice their loss: the same minimizing λ, the same gradient
// direction), with their complementarity. (With the printed forms and Table 2's
// weights, complementarity is ~300x weaker against the prediction than the
// authors trained with; bench/results/ccn_loss_form_2026-11-25.md compares.)
// CcnWeights::applied gives the factors the loss uses. kCcnLossForm names this form
// in a run's config.json, so a checkpoint of the printed form is not resumed under it.
// with Δv = v − v' + a_cont Δt, a_cont = −M⁻¹h(q, v) + δ(x) (M, h, J at q;
// J_t,i v' uses J at q, as eq. 4b). The residual's norm is measured as the
// energy of the impulse it adds over a step, in the prediction term's units:
// the paper gives the weights (Table 2) but not the norm, and in plain ‖δ‖²
// (m²/s⁴ against the prediction's joules) its simulated weight 0.001 outweighs
// the data by two orders of magnitude on the vortex scenario, so the residual
// learns nothing. Per batch the loss is the mean over
// transitions plus 2 w_res_w ‖W‖² over the residual's weight matrices.
// Variables λ = [λ_n,i, λ_t,i/μ (2)] per contact (μ folded into J_t so that the
// cone is ‖·‖ ≤ λ_n, constant in θ): a conic QP with n = 3k, A = −I, b = 0 and
// k 3-D second-order cones, solved by the batched solver; its gradient with
// respect to θ is that of the objective at the solution (envelope theorem;
// the constraints do not depend on θ).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "host/batch/qp_batch.h"
#include "host/dynamics/multibody.h"
#include "host/learning/mlp.h"
#include "solvers/ccn_qp.h"

namespace impulse {

// 1: eqs. 4a and 11 as printed (runs before 2026-11-25); 2: the authors' code's form
constexpr int kCcnLossForm = 2;

struct CcnWeights {
  double comp = 0.001, diss = 0.1, pen = 100;  // Table 2, both real and simulated
  double res = 1, res_w = 0.1;                 // residual norm and weights: real data (sim: 0.001, 0)
  // the factors the loss applies (see above): comp per λ_n |φ| (2 w_comp / Δt), the
  // others doubled
  CcnWeights applied(double dt) const { return {2 * comp / dt, 2 * diss, 2 * pen, 2 * res, 2 * res_w}; }
  nlohmann::json to_json() const;
  static CcnWeights from_json(const nlohmann::json& j);
};

// the residual network's hidden layers and their width (ReLU); the paper's 2 x 128
struct ResidualShape {
  int layers = 2, width = 128;
};

class CcnModel {
 public:
  CcnModel() = default;
  // the system's nominal (true) geometry, inertia and friction; with a residual
  // network (`shape`, ReLU, output layer scaled by 1e-2 at initialization) if asked.
  CcnModel(MultibodySystem sys, bool residual, uint64_t seed = 0, ResidualShape shape = {});

  const MultibodySystem& system() const { return sys_; }
  bool has_residual() const { return residual_; }
  const Mlp& network() const { return net_; }

  int vertex_count() const { return sys_.contacts(); }
  int inertia_offset() const { return 3 * vertex_count(); }
  int mu_offset() const { return inertia_offset() + 10 * sys_.num_links(); }
  int net_offset() const { return mu_offset() + 1; }
  int parameter_count() const;
  Eigen::VectorXd parameters() const;
  void set_parameters(const Eigen::VectorXd& theta);  // throws Error on a wrong size or non-finite entry
  // the natural size of each parameter for the optimizer (lengths 0.05 m, others 1)
  Eigen::VectorXd parameter_scale() const;

  const std::vector<std::vector<Eigen::Vector3d>>& vertices() const { return vertices_; }
  // μ = |θ_μ|: the optimizer's variable may cross zero; the friction (and with
  // it every loss and the simulation) is that of |θ_μ|, the gradient in θ_μ
  // carries sign(θ_μ) (mu_sign()).
  double mu() const { return std::abs(mu_); }
  double mu_sign() const { return mu_ < 0 ? -1.0 : 1.0; }
  // stacked π (10 per link, the total mass the system's) and, if asked, ∂π/∂θ_inertia (10L x 10L)
  Eigen::VectorXd inertial(Eigen::MatrixXd* jacobian = nullptr) const;
  std::vector<LinkInertia> link_inertias() const;

  // residual input of a state (12 + nj + nv)
  void residual_features(const Eigen::Ref<const Eigen::VectorXd>& x, Eigen::Ref<Eigen::VectorXd> out) const;
  // δ of each state (nv x count; zeros without a network), the forward pass
  // left in ws for the network's backward; throws Error naming a state of the
  // wrong width.
  Eigen::MatrixXd residuals(const std::vector<const Eigen::VectorXd*>& xs, MlpWorkspace& ws) const;
  // w ‖W‖² over the network's weight matrices (0 without a network); adds its
  // gradient into grad_net (the network's parameters) when given.
  double residual_weight_penalty(double w, double* grad_net) const;

  // The paper's random initialization (App. A.4), seeded: every vertex
  // coordinate and μ times U(0.5, 1.5); per link a virtual box of the link's
  // size times U(0.5, 1.5) per axis, mass times U(0.5, 1.5), COM uniform in
  // the inner half of the box, principal moments of the uniform box rotated by
  // a uniformly random rotation.
  void randomize(uint64_t seed);

  nlohmann::json to_json() const;  // readable (SI) and exact (raw θ)
  static CcnModel from_json(const nlohmann::json& j, const MultibodySystem& sys);

 private:
  MultibodySystem sys_;
  bool residual_ = false;
  std::vector<std::vector<Eigen::Vector3d>> vertices_;
  std::vector<LogCholesky> inertia_;
  double mu_ = 0.3;
  Mlp net_;
};

// One observed transition, states in the system's layout (width 13 + 2nj).
struct CcnTransition {
  Eigen::VectorXd x, x_next;
};

struct CcnLossConfig {
  CcnWeights weights;
  double dt = 0.0068;
};

struct CcnLossResult {
  double loss = 0;                 // mean over transitions + weight penalty
  std::vector<double> per_transition;
  int not_solved = 0;
  long iterations = 0;
};

// Each transition's loss and its gradients, before the batch mean (CcnLoss::evaluate_each).
struct CcnLossEach {
  std::vector<double> loss;      // per transition (no weight penalty)
  std::vector<double> grad_theta;  // B x net_offset(): in the model's parameters without the network
  Eigen::MatrixXd grad_delta;    // nv x B: in each transition's residual acceleration δ
  int not_solved = 0;
  long iterations = 0;
};

class CcnLoss {
 public:
  explicit CcnLoss(CcnLossConfig cfg, QpSettings<double> settings = {}, BatchOptions options = {});
  const CcnLossConfig& config() const { return cfg_; }
  QpSettings<double>& settings() { return settings_; }
  BatchOptions& options() { return options_; }
  // The loss of a batch and, if grad is given, its gradient (parameter_count()
  // long, overwritten). Deterministic for every thread count.
  CcnLossResult evaluate(const CcnModel& model, const std::vector<CcnTransition>& batch,
                         Eigen::VectorXd* grad);
  // Each transition's loss and gradients with the residual δ given (nv x B; null:
  // none): what a residual of the caller's own (a torch module) needs. The model's
  // network, if it has one, is not used. evaluate is this, the mean and the network.
  void evaluate_each(const CcnModel& model, const std::vector<CcnTransition>& batch,
                     const Eigen::MatrixXd* residual, CcnLossEach& out);

 private:
  CcnLossConfig cfg_;
  QpSettings<double> settings_;
  BatchOptions options_;
};

// The host-device description of the model's system and the loss's constants
// (solvers/ccn_qp.h), which CcnLoss evaluates; throws Error when the system
// exceeds the CPU loss's capacity (ccnqp::HostCapacity: links, vertices).
ccnqp::System<double, ccnqp::HostCapacity> ccn_qp_system(const CcnModel& model, const CcnLossConfig& cfg);
// The same for the device loss (cuda::DeviceCcn), whose capacity is smaller
// (ccnqp::DeviceCapacity); the Error names both and the CPU backend.
ccnqp::System<double, ccnqp::DeviceCapacity> ccn_device_system(const CcnModel& model, const CcnLossConfig& cfg);

// The loss of one transition at given impulses λ (3 per contact: λ_n and
// λ_t/μ, the QP's variables) and its gradient in θ at fixed λ (the
// envelope theorem's function), computed with Eigen on host/dynamics/multibody.h:
// the independent reference the tests hold the host-device code to.
double ccn_objective_at(const CcnModel& model, const CcnLossConfig& cfg, const CcnTransition& t,
                        const Eigen::VectorXd& lambda, Eigen::VectorXd* grad);

}  // namespace impulse
