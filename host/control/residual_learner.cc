#include "host/control/residual_learner.h"

#include <chrono>
#include <cmath>
#include <string>

#include "solvers/error.h"

namespace impulse {

ResidualLearner::ResidualLearner(const Lcs& model, const ResidualLearnerSettings& settings)
    : ResidualLearner(model, settings, nullptr) {}

ResidualLearner::ResidualLearner(const Lcs& model, const ResidualLearnerSettings& settings,
                                 LcsLinearizer* linearizer)
    : linearizer_(linearizer), settings_(settings), channel_(model.nl) {
  model.validate();
  nx_ = model.nx;
  nu_ = model.nu;
  nl_ = model.nl;
  if (nl_ < 1) throw Error("ResidualLearner: the model has no complementarity rows");
  if (settings_.buffer < 1)
    throw Error("ResidualLearner: buffer must be >= 1, got " + std::to_string(settings_.buffer));
  if (!(settings_.epsilon > 0.0))
    throw Error("ResidualLearner: epsilon must be > 0, got " + std::to_string(settings_.epsilon));
  if (!(settings_.lr > 0.0)) throw Error("ResidualLearner: lr must be > 0");
  if (linearizer_ && (linearizer_->nx() != nx_ || linearizer_->nu() != nu_ || linearizer_->nl() != nl_))
    throw Error("ResidualLearner: the linearizer's sizes differ from the model's");
  const Eigen::MatrixXd& F0 = model.F[0];
  Qd_ = settings_.Qd.size() == 0 ? Eigen::VectorXd::Ones(nx_) : settings_.Qd;
  if (Qd_.size() != nx_ || !(Qd_.array() >= 0.0).all())
    throw Error("ResidualLearner: Qd must have " + std::to_string(nx_) + " entries >= 0, got " +
                std::to_string(Qd_.size()));
  // γ below σ_min(F + Fᵀ)
  const Eigen::MatrixXd S = F0 + F0.transpose();
  const double smin = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(S).eigenvalues().minCoeff();
  if (!(smin > 0.0))
    throw Error("ResidualLearner: F + F^T must be positive definite (its smallest eigenvalue is " +
                std::to_string(smin) + ")");
  gamma_ = settings_.gamma > 0.0 ? settings_.gamma : 0.5 * smin;
  if (!(gamma_ < smin))
    throw Error("ResidualLearner: gamma must be below sigma_min(F + F^T) = " + std::to_string(smin));

  // buffer
  const int nb = settings_.buffer;
  bx_.setZero(nx_, nb);
  bu_.setZero(nu_, nb);
  bxn_.setZero(nx_, nb);
  warm_.assign(nb, 0);

  // per-slot models (all the construction model's step 0 until a linearizer replaces them)
  const int n = 2 * nl_, m = 2 * nl_;
  slots_ = make_lcs_storage(nb, nx_, nu_, nl_);
  for (int s = 0; s < nb; ++s) slots_.copy_step(model, 0, s);
  Ps_.setZero(n, n);
  P_.assign(size_t(nb) * n * n, 0.0);
  for (int s = 0; s < nb; ++s) slot_hessian(s);
  const Eigen::Map<const Eigen::MatrixXd> P(P_.data(), n, n);
  q_.assign(n, 0.0);
  a_row_ptr_.resize(m + 1);
  a_col_.resize(m);
  for (int i = 0; i <= m; ++i) a_row_ptr_[i] = i;
  for (int i = 0; i < m; ++i) a_col_[i] = i;
  Aval_.assign(m, -1.0);  // s = b − Aξ = ξ ∈ R₊
  b_.assign(m, 0.0);
  shape_.n = n;
  shape_.cones.n_nonneg = m;
  shape_.a = CsrPattern{m, n, m, a_row_ptr_.data(), a_col_.data()};
  work_.assign(qp_work_host_size(n, m), 0.0);
  xs_.setZero(n, nb);
  ys_.setZero(m, nb);
  qp_settings_.eps_abs = settings_.qp_eps;
  qp_settings_.eps_rel = settings_.qp_eps;
  qp_settings_.max_iter = settings_.qp_max_iter;
  qp_settings_.check_input = false;  // P checked once here
  if (const char* bad = qp_settings_.validate()) throw Error(std::string("ResidualLearner: ") + bad);
  if (Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(P).eigenvalues().minCoeff() <
      -1e-9 * P.cwiseAbs().maxCoeff())
    throw Error("ResidualLearner: the loss QP is not convex (gamma too large)");

  zdyn_.setZero(nx_);
  zdyn_qd_.setZero(nx_);
  qlcp_.setZero(nl_);
  tmp_nl_.setZero(nl_);
  grad_.setZero(nl_);
  sample_grad_.setZero(nl_);
  r_ = Eigen::VectorXd::Zero(nl_);
  AdamWSettings as;
  as.lr = settings_.lr;
  as.weight_decay = 0.0;
  as.eps = settings_.adam_eps;
  adam_ = AdamW(nl_, as);
  px_.setZero(nx_);
  pu_.setZero(nu_);
  pxn_.setZero(nx_);
}

ResidualLearner::~ResidualLearner() { stop(); }

// P = [DᵀQ_dD + FᵀF/(εγ), I/ε − Fᵀ/(εγ); I/ε − F/(εγ), I/(εγ)], symmetrized; column-major
// into slot's block of P_ (symmetric, so the layout does not matter). No allocation.
void ResidualLearner::slot_hessian(int s) {
  const int n = 2 * nl_;
  const double ie = 1.0 / settings_.epsilon, ieg = ie / gamma_;
  const Eigen::MatrixXd& D = slots_.D[s];
  const Eigen::MatrixXd& F = slots_.F[s];
  for (int i = 0; i < nl_; ++i) {
    for (int j = 0; j < nl_; ++j) {
      double dqd = 0.0, ff = 0.0;
      for (int a = 0; a < nx_; ++a) dqd += D(a, i) * Qd_[a] * D(a, j);
      for (int a = 0; a < nl_; ++a) ff += F(a, i) * F(a, j);
      Ps_(i, j) = dqd + ieg * ff;
      Ps_(i, nl_ + j) = (i == j ? ie : 0.0) - ieg * F(j, i);
      Ps_(nl_ + i, j) = (i == j ? ie : 0.0) - ieg * F(i, j);
      Ps_(nl_ + i, nl_ + j) = i == j ? ieg : 0.0;
    }
  }
  double* out = P_.data() + size_t(s) * n * n;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) out[size_t(i) * n + j] = 0.5 * (Ps_(i, j) + Ps_(j, i));
}

void ResidualLearner::add_sample(const Eigen::Ref<const Eigen::VectorXd>& x,
                                 const Eigen::Ref<const Eigen::VectorXd>& u,
                                 const Eigen::Ref<const Eigen::VectorXd>& x_next) {
  if (x.size() != nx_ || u.size() != nu_ || x_next.size() != nx_) return;
  if (!x.allFinite() || !u.allFinite() || !x_next.allFinite()) return;
  bx_.col(head_) = x;
  bu_.col(head_) = u;
  bxn_.col(head_) = x_next;
  if (linearizer_) {
    linearizer_->linearize(x, u, slots_, head_);
    slot_hessian(head_);
  }
  warm_[head_] = 0;
  head_ = (head_ + 1) % settings_.buffer;
  if (count_ < settings_.buffer) ++count_;
}

int ResidualLearner::drain(SampleRing& ring) {
  int n = 0;
  while (ring.pop(px_, pu_, pxn_)) {
    add_sample(px_, pu_, pxn_);
    ++n;
  }
  return n;
}

void ResidualLearner::set_residual(const Eigen::Ref<const Eigen::VectorXd>& r) {
  if (r.size() != nl_ || !r.allFinite()) return;
  r_ = r;
  channel_.publish(r_);
}

double ResidualLearner::sample_loss(int slot, const Eigen::Ref<const Eigen::VectorXd>& r,
                                    Eigen::Ref<Eigen::VectorXd> grad) {
  const int n = 2 * nl_;
  const double ie = 1.0 / settings_.epsilon, ieg = ie / gamma_;
  const Eigen::MatrixXd& D = slots_.D[slot];
  const Eigen::MatrixXd& F = slots_.F[slot];
  // z = A x + B u + d − x⁺, q = E x + H u + c, b0 = q + r
  zdyn_.noalias() = slots_.A[slot] * bx_.col(slot);
  zdyn_.noalias() += slots_.B[slot] * bu_.col(slot);
  zdyn_ += slots_.d[slot] - bxn_.col(slot);
  qlcp_.noalias() = slots_.E[slot] * bx_.col(slot);
  qlcp_.noalias() += slots_.H[slot] * bu_.col(slot);
  qlcp_ += slots_.c[slot] + r;
  // linear term: λ: DᵀQd z + Fᵀ b0/(εγ); η: −b0/(εγ)
  Eigen::Map<Eigen::VectorXd> q(q_.data(), n);
  zdyn_qd_ = Qd_.cwiseProduct(zdyn_);
  tmp_nl_.noalias() = D.transpose() * zdyn_qd_;
  q.head(nl_) = tmp_nl_;
  q.head(nl_).noalias() += ieg * (F.transpose() * qlcp_);
  q.tail(nl_) = -ieg * qlcp_;
  QpData<double, UnitStride> data{unit_view<const double>(P_.data() + size_t(slot) * n * n), unit_view<const double>(q_.data()),
                                  unit_view<const double>(Aval_.data()),
                                  unit_view<const double>(b_.data())};
  auto w = QpWork<double, UnitStride>::carve(unit_view(qp_work_align(work_.data())), shape_.n, shape_.m(), true);
  const QpInfo<double> info =
      qp_admm_solve(shape_, data, unit_view(xs_.col(slot).data()), unit_view(ys_.col(slot).data()), w,
                    qp_settings_, warm_[slot] != 0);
  warm_[slot] = info.status == SolveStatus::kNumericalError ? 0 : 1;
  if (!is_solved(info.status)) ++stats_.qp_unsolved;
  // λ*, η* clamped to the cone (ADMM's x is feasible only to tolerance)
  double loss = info.value + 0.5 * zdyn_.dot(zdyn_qd_) + 0.5 * ieg * qlcp_.squaredNorm();
  const auto lam = xs_.col(slot).head(nl_);
  const auto eta = xs_.col(slot).tail(nl_);
  grad = qlcp_;
  tmp_nl_ = lam.cwiseMax(0.0);
  grad.noalias() += F * tmp_nl_;
  grad -= eta.cwiseMax(0.0);
  grad *= ieg;
  return loss;
}

double ResidualLearner::loss_and_grad(const Eigen::Ref<const Eigen::VectorXd>& r,
                                      Eigen::Ref<Eigen::VectorXd> grad) {
  grad.setZero();
  double loss = 0.0;
  stats_.qp_unsolved = 0;
  for (int s = 0; s < count_; ++s) {
    loss += sample_loss(s, r, sample_grad_);
    grad += sample_grad_;
  }
  return loss;
}

double ResidualLearner::update() {
  stats_.samples = count_;
  if (count_ == 0) return 0.0;
  const double loss = loss_and_grad(r_, grad_);
  stats_.loss = loss;
  if (grad_.allFinite()) {
    adam_.step(r_, grad_);
    channel_.publish(r_);
  }
  ++stats_.updates;
  return loss;
}

void ResidualLearner::start(SampleRing* ring, double period_s) {
  stop();
  running_ = true;
  thread_ = std::thread([this, ring, period_s] {
    using Clock = std::chrono::steady_clock;
    auto next = Clock::now();
    const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(period_s));
    while (running_.load(std::memory_order_relaxed)) {
      if (ring) drain(*ring);
      update();
      next += period;
      std::this_thread::sleep_until(next);
    }
  });
}

void ResidualLearner::stop() {
  running_ = false;
  if (thread_.joinable()) thread_.join();
}

}  // namespace impulse
