// GCC 12 reports false -Wmaybe-uninitialized inside Eigen's AVX-512 kernels (-march=native).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "host/residual_learner.h"

#include <chrono>
#include <cmath>
#include <string>

#include "io/error.h"

namespace impulse {

ResidualLearner::ResidualLearner(const Lcs& model, const ResidualLearnerSettings& settings)
    : settings_(settings), channel_(model.nl) {
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
  A_ = model.A[0], B_ = model.B[0], D_ = model.D[0], E_ = model.E[0], F_ = model.F[0],
  H_ = model.H[0];
  d_ = model.d[0], c_ = model.c[0];
  Qd_ = settings_.Qd.size() == 0 ? Eigen::VectorXd::Ones(nx_) : settings_.Qd;
  if (Qd_.size() != nx_ || !(Qd_.array() >= 0.0).all())
    throw Error("ResidualLearner: Qd must have " + std::to_string(nx_) + " entries >= 0, got " +
                std::to_string(Qd_.size()));
  // γ below σ_min(F + Fᵀ)
  const Eigen::MatrixXd S = F_ + F_.transpose();
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

  // QP: P is the same for every sample
  const int n = 2 * nl_, m = 2 * nl_;
  const double ie = 1.0 / settings_.epsilon, ieg = ie / gamma_;
  const Eigen::MatrixXd I = Eigen::MatrixXd::Identity(nl_, nl_);
  Eigen::MatrixXd P(n, n);
  P.topLeftCorner(nl_, nl_) = D_.transpose() * Qd_.asDiagonal() * D_ + ieg * F_.transpose() * F_;
  P.topRightCorner(nl_, nl_) = ie * I - ieg * F_.transpose();
  P.bottomLeftCorner(nl_, nl_) = ie * I - ieg * F_;
  P.bottomRightCorner(nl_, nl_) = ieg * I;
  P = 0.5 * (P + P.transpose()).eval();
  P_.resize(size_t(n) * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) P_[size_t(i) * n + j] = P(i, j);
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
  work_.assign(qp_work_size(n, m), 0.0);
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

void ResidualLearner::add_sample(const Eigen::Ref<const Eigen::VectorXd>& x,
                                 const Eigen::Ref<const Eigen::VectorXd>& u,
                                 const Eigen::Ref<const Eigen::VectorXd>& x_next) {
  if (x.size() != nx_ || u.size() != nu_ || x_next.size() != nx_) return;
  if (!x.allFinite() || !u.allFinite() || !x_next.allFinite()) return;
  bx_.col(head_) = x;
  bu_.col(head_) = u;
  bxn_.col(head_) = x_next;
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
  // z = A x + B u + d − x⁺, q = E x + H u + c, b0 = q + r
  zdyn_.noalias() = A_ * bx_.col(slot);
  zdyn_.noalias() += B_ * bu_.col(slot);
  zdyn_ += d_ - bxn_.col(slot);
  qlcp_.noalias() = E_ * bx_.col(slot);
  qlcp_.noalias() += H_ * bu_.col(slot);
  qlcp_ += c_ + r;
  // linear term: λ: DᵀQd z + Fᵀ b0/(εγ); η: −b0/(εγ)
  Eigen::Map<Eigen::VectorXd> q(q_.data(), n);
  tmp_nl_.noalias() = D_.transpose() * Qd_.cwiseProduct(zdyn_);
  q.head(nl_) = tmp_nl_;
  q.head(nl_).noalias() += ieg * (F_.transpose() * qlcp_);
  q.tail(nl_) = -ieg * qlcp_;
  QpData<double, UnitStride> data{unit_view<const double>(P_.data()), unit_view<const double>(q_.data()),
                                  unit_view<const double>(Aval_.data()),
                                  unit_view<const double>(b_.data())};
  auto w = QpWork<double, UnitStride>::carve(unit_view(work_.data()), n, n);
  const QpInfo<double> info =
      qp_admm_solve(shape_, data, unit_view(xs_.col(slot).data()), unit_view(ys_.col(slot).data()), w,
                    qp_settings_, warm_[slot] != 0);
  warm_[slot] = info.status == SolveStatus::kNumericalError ? 0 : 1;
  if (!is_solved(info.status)) ++stats_.qp_unsolved;
  // λ*, η* clamped to the cone (ADMM's x is feasible only to tolerance)
  double loss = info.objective + 0.5 * zdyn_.dot(Qd_.cwiseProduct(zdyn_)) + 0.5 * ieg * qlcp_.squaredNorm();
  const auto lam = xs_.col(slot).head(nl_);
  const auto eta = xs_.col(slot).tail(nl_);
  grad = qlcp_;
  grad.noalias() += F_ * lam.cwiseMax(0.0);
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
