// Online learning of the complementarity residual r of an LCS
// (papers/adaptive-c3-residual-learning-2024.txt, Sec. VI, Algorithm 1).
//
// Buffer: the last n_b transitions (x, u, x⁺) (a ring). Per sample the loss is
//
//   l_ε(r) = min_{λ ≥ 0, η ≥ 0} ½ (Dλ + z)ᵀ Q_d (Dλ + z)
//                             + (1/ε) (λᵀη + 1/(2γ) ‖q + Fλ + r − η‖²),
//   z = A x + B u + d − x⁺,  q = E x + H u + c,
//
// a convex QP in ξ = (λ, η) when 0 < γ < σ_min(F + Fᵀ) (its Hessian's Schur complement
// is (F + Fᵀ − γI)/ε). It is solved with the project's conic ADMM (solvers/qp_admm.h,
// nonnegative cone, one preallocated workspace, warm-started per buffer slot). The
// gradient follows from the envelope theorem, r entering only the objective:
//
//   ∂l_ε/∂r = (q + Fλ* + r − η*) / (εγ).
//
// An update sums loss and gradient over the buffer and takes one Adam step
// (impulse::AdamW, no weight decay), then publishes r on a ResidualChannel
// (host/control/rt_channels.h) that the controller reads without locks.
//
// The model matrices θ* of a sample are those of step 0 of the Lcs given at construction,
// or, with an LcsLinearizer (host/control/lcs_linearize.h), the model re-linearized about the
// sample's (x, u) when it enters the buffer (the ball task: the contact normal turns as
// the end-effector moves around the ball). With a linearizer, every linearization must
// keep σ_min(F + Fᵀ) above γ (Anitescu's F ⪰ κI does: set γ < 2κ). add_sample(),
// update() and loss_and_grad() do not allocate after construction; they are
// deterministic. start() runs update() in its own
// thread at a fixed rate, taking samples from a SampleRing the controller fills.
#pragma once

#include <Eigen/Dense>
#include <atomic>
#include <thread>
#include <vector>

#include "host/optim/adam.h"
#include "host/control/lcs.h"
#include "host/control/lcs_linearize.h"
#include "host/control/rt_channels.h"
#include "solvers/qp_admm.h"

namespace impulse {

struct ResidualLearnerSettings {
  int buffer = 10;            // n_b: samples kept (the newest)
  double epsilon = 1.0;       // ε > 0
  double gamma = 0.0;         // γ; 0: half of σ_min(F + Fᵀ) of the model
  double lr = 5e-3;           // Adam learning rate ξ
  double adam_eps = 1e-2;     // Adam ε, in gradient units: gradients far below it (the
                              // ADMM round-off where model and data agree on no contact)
                              // do not move r
  Eigen::VectorXd Qd;         // nx diagonal prediction weights (empty: ones)
  int qp_max_iter = 2000;     // ADMM budget per sample QP
  double qp_eps = 1e-7;       // ADMM absolute and relative tolerance
};

struct ResidualLearnerStats {
  double loss = 0.0;      // L_ε of the last update (sum over the buffer)
  int samples = 0;        // samples in the buffer
  int qp_unsolved = 0;    // sample QPs that ended without kSolved in the last update
  long updates = 0;
};

class ResidualLearner {
 public:
  // throws Error on a bad model / settings or when F + Fᵀ is not positive definite.
  ResidualLearner(const Lcs& model, const ResidualLearnerSettings& settings = {});
  // per-sample linearization: `linearizer` (sizes equal to the model's; not owned, must
  // outlive the learner and be used by no other thread) is called in add_sample().
  ResidualLearner(const Lcs& model, const ResidualLearnerSettings& settings, LcsLinearizer* linearizer);
  ~ResidualLearner();
  ResidualLearner(const ResidualLearner&) = delete;
  ResidualLearner& operator=(const ResidualLearner&) = delete;

  // add one transition to the buffer (the oldest is overwritten when full).
  void add_sample(const Eigen::Ref<const Eigen::VectorXd>& x,
                  const Eigen::Ref<const Eigen::VectorXd>& u,
                  const Eigen::Ref<const Eigen::VectorXd>& x_next);
  // move every transition waiting in `ring` into the buffer; returns how many.
  int drain(SampleRing& ring);

  // one Adam step on L_ε over the buffer (no-op on an empty buffer); publishes r.
  // Returns the loss before the step.
  double update();
  // L_ε(r) over the buffer and its gradient (nl) at residual r; no state change except
  // the QP warm starts.
  double loss_and_grad(const Eigen::Ref<const Eigen::VectorXd>& r, Eigen::Ref<Eigen::VectorXd> grad);

  const Eigen::VectorXd& residual() const { return r_; }
  void set_residual(const Eigen::Ref<const Eigen::VectorXd>& r);
  const ResidualChannel& channel() const { return channel_; }
  const ResidualLearnerStats& stats() const { return stats_; }
  double gamma() const { return gamma_; }

  // learner thread: every period_s, drain `ring` and update(). stop() joins it.
  // While it runs, call nothing else on this object (stats() excepted, racy).
  void start(SampleRing* ring, double period_s);
  void stop();

 private:
  double sample_loss(int slot, const Eigen::Ref<const Eigen::VectorXd>& r, Eigen::Ref<Eigen::VectorXd> grad);
  void slot_hessian(int slot);  // the QP Hessian of slot's model into P_

  int nx_, nu_, nl_;
  LcsLinearizer* linearizer_ = nullptr;
  Lcs slots_;  // step s: the model of buffer slot s
  Eigen::MatrixXd Ps_;  // n x n, scratch for slot_hessian
  Eigen::VectorXd Qd_;
  ResidualLearnerSettings settings_;
  double gamma_ = 0.0;
  // buffer
  Eigen::MatrixXd bx_, bu_, bxn_;  // columns are samples
  std::vector<char> warm_;
  int head_ = 0, count_ = 0;
  // QP (n = 2 nl variables, 2 nl nonnegative rows, A = −I)
  QpShape shape_;
  std::vector<int> a_row_ptr_, a_col_;
  std::vector<double> P_, q_, Aval_, b_, work_;  // P_: n x n per slot
  Eigen::MatrixXd xs_, ys_;  // per slot warm starts (2nl x buffer)
  QpSettings<double> qp_settings_;
  Eigen::VectorXd zdyn_, zdyn_qd_, qlcp_, tmp_nl_, grad_, sample_grad_;
  // learning
  Eigen::VectorXd r_;
  AdamW adam_;
  ResidualChannel channel_;
  ResidualLearnerStats stats_;
  // thread
  std::thread thread_;
  std::atomic<bool> running_{false};
  Eigen::VectorXd px_, pu_, pxn_;
};

}  // namespace impulse
