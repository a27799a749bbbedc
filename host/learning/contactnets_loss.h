// The ContactNets loss (paper Sec. 4.2, eq. 10-17; reference implementation's
// choices in DESIGN.md) for a batch of observed transitions (x, x'):
//
//   L(θ; x, x') = min_λ  w_match ‖M⁻¹(Jᵀλ − F_data)‖²              (prediction, 10)
//                      + Σ_i φ_i(q')² (w_comp_n λ_n,i² + w_comp_t ‖λ_t,i‖²)  (activation, 11)
//                      + w_cone Σ_i ‖ ‖J_t,i ν'‖ λ_t,i + λ_n,i J_t,i ν' ‖²  (max dissipation, 15)
//                      + w_slack Σ_i s_i²                              (penetration, 14)
//   s.t. φ_i(q) + dt J_n,i ṽ'(λ) + s_i ≥ 0,   ṽ'(λ) = ν + M⁻¹(F_s + Jᵀλ)
//        (λ_n,i, λ_t,i) in the exact friction cone ‖λ_t,i‖ ≤ λ_n,i (default), or
//        the reference implementation's octagon (λ_n ≥ 0, d_jᵀλ_t,i ≤ λ_n,i, 8 d_j)
// with F_data = M(ν' − ν) − F_s. Variables [λ_n (k); λ_t (2k, x/y per contact);
// s (k)], n = 4k. Plus the two regularizers (App. A.3), per transition:
//   R_1 = w_perp Σ_i Σ_r (n̂_i · t̂_i,r)²  (n = ∂φ_n,i/∂p, t = ∂φ_t,i,r/∂p)
//   R_2 = w_unit Σ_i (‖∂φ_n,i/∂p‖ − 1)².
//
// Units: the loss is evaluated in units where one length `length_unit` is 1
// (the cube's half-width by default), as the reference implementation did in
// block half-widths; this sets the relative weight of the terms. Everything
// given and returned (states, frames, gradients) is SI.
//
// Gradient: by the envelope theorem. With (λ*, y*) optimal, the derivative of
// the optimal value with respect to any data is that of the Lagrangian
// f(λ*) + y*ᵀ(Aλ* − b) (solver convention: Ax + s = b, s ∈ K, y ∈ K*). It is
// returned with respect to the frame (φ, J_n, J_t at q and φ at q'), and a
// contact model chains it into its parameters.
//
// The math itself is host-device code in solvers/contactnets_qp.h, shared with
// the GPU path; this layer converts frames and fills batches. k = 8 contacts.
#pragma once

#include <vector>

#include "host/dynamics/contact_model.h"
#include "host/batch/friction_model.h"
#include "host/batch/qp_batch.h"
#include "host/dynamics/rigid_body.h"
#include "solvers/contactnets_qp.h"

namespace impulse {

struct ContactNetsWeights {
  double match = 0.1;
  double comp_n = 1.0;
  double comp_t = 1.0;
  double cone = 1.0;
  double slack = 1.0;
  double reg_perp = 0.3;  // normal-tangent perpendicularity (R_1)
  double reg_unit = 0.3;  // position-Jacobian unit norm (R_2)
};

struct ContactNetsLossConfig {
  ContactNetsWeights weights;
  FrictionModel friction = FrictionModel::kCone;
  double length_unit = 0.0524;  // m; the loss is computed in these units
  double dt = 1.0 / 148.0;
  BodyParams body;
};

// What the loss needs of one transition, already evaluated by a contact model.
struct TransitionFrame {
  State x, x_next;
  ContactFrame frame;        // at q
  Eigen::VectorXd phi_next;  // φ_n at q'
};

// dLoss/d(frame quantities), same shapes as TransitionFrame's (SI).
struct FrameGradient {
  Eigen::VectorXd phi, phi_next;
  Eigen::MatrixXd Jn, Jt;
  void resize(int k);
};

// The loss's constants for the host-device code (solvers/contactnets_qp.h).
// Throws Error unless the body's inertia is diagonal (principal axes).
cn::LossConsts<double> loss_consts(const ContactNetsLossConfig& cfg);

// Transition t's frame in the host-device layout; throws Error unless it has
// cn::kK contacts and consistent sizes.
void to_cn_frame(const TransitionFrame& t, cn::Frame<double>& f);

// Builds transition t's QP (scaled units) as problem `index` of `batch` (made by
// make_loss_batch); returns the constant term (loss = ½λᵀPλ + qᵀλ + constant).
double assemble_loss_qp(const ContactNetsLossConfig& cfg, const TransitionFrame& t,
                        QpBatch<double>& batch, int index);

// `size` zero problems with the QP's cone layout and A's sparsity pattern
// (cn::pattern, shared by the batch).
QpBatch<double> make_loss_batch(const ContactNetsLossConfig& cfg, int size);

// Regularizers R_1 + R_2 of one frame, and their gradient added into g.
double regularizer_value(const ContactNetsLossConfig& cfg, const ContactFrame& f,
                         FrameGradient* g);

// Envelope gradient of the QP part given a solution (x*, y*) of transition t's QP
// (scaled units inside, SI out); added into g.
void loss_qp_gradient(const ContactNetsLossConfig& cfg, const TransitionFrame& t,
                      const double* x, const double* y, FrameGradient& g);

// The whole loss for a batch of frames: assemble, solve (any backend), QP value
// plus regularizers per transition, and optionally the frame gradients.
struct LossBatchResult {
  std::vector<double> qp_loss, reg_loss;  // per transition
  std::vector<FrameGradient> grad;        // per transition (when requested)
  int not_solved = 0;                     // transitions whose QP did not reach tolerance
  long iterations = 0;                    // ADMM iterations over the batch
  int max_iterations = 0;                 // the batch's slowest QP's iterations
  int max_rho_updates = 0;                // the most ρ updates (refactorizations) of a QP
};

class ContactNetsLoss {
 public:
  explicit ContactNetsLoss(ContactNetsLossConfig cfg, QpSettings<double> settings = {},
                           BatchOptions options = {});
  const ContactNetsLossConfig& config() const { return cfg_; }
  QpSettings<double>& settings() { return settings_; }
  BatchOptions& options() { return options_; }
  // frames[i] is transition i. If warm is given (size = frames.size()), it holds
  // per-transition (x, y, ρ) starts (empty = cold; the ρ the solve ended at, where
  // the next starts: BatchOptions::warm_rho) and receives the solutions.
  void evaluate(const std::vector<TransitionFrame>& frames, bool want_grad, LossBatchResult& out,
                std::vector<std::vector<double>>* warm = nullptr);

 private:
  ContactNetsLossConfig cfg_;
  QpSettings<double> settings_;
  BatchOptions options_;
  cn::LossConsts<double> consts_;
  QpBatch<double> batch_;
  QpSolutions<double> sol_;
  std::vector<double> constant_;
};

}  // namespace impulse
