#include "host/control/c3.h"

#include <cmath>
#include <limits>
#include <string>

#include "solvers/error.h"

namespace impulse {

// ---- HorizonQp ----------------------------------------------------------------------

void HorizonQp::resize(int N, int nx, int nl, int nu) {
  N_ = N;
  nx_ = nx;
  nl_ = nl;
  nv_ = nl + nu;
  const int nz = nx + nv_;
  W_.assign(N, Eigen::MatrixXd::Zero(nz, nz));
  P_.assign(N + 1, Eigen::MatrixXd::Zero(nx, nx));
  K_.assign(N, Eigen::MatrixXd::Zero(nv_, nx));
  Bv_.assign(N, Eigen::MatrixXd::Zero(nx, nv_));
  Qvv_.assign(N, Eigen::LLT<Eigen::MatrixXd>(nv_));
  kff_.setZero(nv_, N);
  PA_.setZero(nx, nx);
  PB_.setZero(nx, nv_);
  Qxx_.setZero(nx, nx);
  Qvx_.setZero(nv_, nx);
  Qvv_tmp_.setZero(nv_, nv_);
  Ptmp_.setZero(nx, nx);
  p_.setZero(nx);
  h_.setZero(nx);
  qx_.setZero(nx);
  qv_.setZero(nv_);
  v_.setZero(nv_);
}

bool HorizonQp::factor_step(const Lcs& lcs, int k) {
  const Eigen::MatrixXd& A = lcs.A[k];
  Eigen::MatrixXd& Bv = Bv_[k];
  Bv.leftCols(nl_) = lcs.D[k];
  Bv.rightCols(nv_ - nl_) = lcs.B[k];
  const Eigen::MatrixXd& P = P_[k + 1];
  // Q-function Hessian blocks: W_k + [A Bv]ᵀ P_{k+1} [A Bv]
  PA_.noalias() = P * A;
  PB_.noalias() = P * Bv;
  Qxx_ = W_[k].topLeftCorner(nx_, nx_);
  Qxx_.noalias() += A.transpose() * PA_;
  Qvx_ = W_[k].bottomLeftCorner(nv_, nx_);
  Qvx_.noalias() += Bv.transpose() * PA_;
  Qvv_tmp_ = W_[k].bottomRightCorner(nv_, nv_);
  Qvv_tmp_.noalias() += Bv.transpose() * PB_;
  Qvv_[k].compute(Qvv_tmp_);
  if (Qvv_[k].info() != Eigen::Success) return false;
  // gain K = −Qvv⁻¹ Qvx, value Hessian P_k = Qxx + Qvxᵀ K (symmetrized)
  K_[k] = Qvx_;
  Qvv_[k].solveInPlace(K_[k]);
  K_[k] *= -1.0;
  Ptmp_ = Qxx_;
  Ptmp_.noalias() += Qvx_.transpose() * K_[k];
  P_[k] = 0.5 * (Ptmp_ + Ptmp_.transpose());
  return P_[k].allFinite();
}

bool HorizonQp::factor(const Lcs& lcs, const std::vector<Eigen::MatrixXd>& W,
                       const Eigen::MatrixXd& WN) {
  for (int k = 0; k < N_; ++k) W_[k] = W[k];
  P_[N_] = WN;
  for (int k = N_ - 1; k >= 0; --k)
    if (!factor_step(lcs, k)) return false;
  return true;
}

bool HorizonQp::factor_diag(const Lcs& lcs, const Eigen::MatrixXd& base,
                            const Eigen::VectorXd& wdiag, const Eigen::MatrixXd& WN) {
  for (int k = 0; k < N_; ++k) {
    W_[k] = base;
    W_[k].diagonal() += wdiag;
  }
  P_[N_] = WN;
  for (int k = N_ - 1; k >= 0; --k)
    if (!factor_step(lcs, k)) return false;
  return true;
}

void HorizonQp::solve(const Lcs& lcs, const Eigen::Ref<const Eigen::VectorXd>& x0,
                      const Eigen::Ref<const Eigen::MatrixXd>& g,
                      const Eigen::Ref<const Eigen::VectorXd>& gN, Eigen::Ref<Eigen::MatrixXd> z,
                      Eigen::Ref<Eigen::VectorXd> xN) {
  // backward pass on the linear terms: p_k, feedforward kff_k
  p_ = gN;
  for (int k = N_ - 1; k >= 0; --k) {
    h_.noalias() = P_[k + 1] * lcs.d[k];
    h_ += p_;
    qx_ = g.col(k).head(nx_);
    qx_.noalias() += lcs.A[k].transpose() * h_;
    qv_ = g.col(k).tail(nv_);
    qv_.noalias() += Bv_[k].transpose() * h_;
    v_ = qv_;
    Qvv_[k].solveInPlace(v_);
    kff_.col(k) = -v_;
    p_ = qx_;
    p_.noalias() += K_[k].transpose() * qv_;
  }
  // forward pass: v_k = K_k x_k + kff_k, x_{k+1} = A x_k + Bv v_k + d
  z.col(0).head(nx_) = x0;
  for (int k = 0; k < N_; ++k) {
    v_ = kff_.col(k);
    v_.noalias() += K_[k] * z.col(k).head(nx_);
    z.col(k).tail(nv_) = v_;
    h_.noalias() = lcs.A[k] * z.col(k).head(nx_);
    h_.noalias() += Bv_[k] * v_;
    h_ += lcs.d[k];
    if (k + 1 < N_) z.col(k + 1).head(nx_) = h_;
    else xN = h_;
  }
}

// ---- ComplementarityProjector -------------------------------------------------------

ComplementarityProjector::ComplementarityProjector(int nx, int nl, int nu)
    : nx_(nx), nl_(nl), nu_(nu), nz_(nx + nl + nu) {
  R_.setZero(2 * nl, nz_);
  Rginv_.setZero(2 * nl, nz_);
  gram_.setZero(2 * nl, 2 * nl);
  v_.setZero(2 * nl);
  vbest_y_.setZero(2 * nl);
}

void ComplementarityProjector::set(const Eigen::MatrixXd& E, const Eigen::MatrixXd& F,
                                   const Eigen::MatrixXd& H, const Eigen::VectorXd& G) {
  const int m = nl_;
  R_.setZero();
  for (int i = 0; i < m; ++i) R_(i, nx_ + i) = 1.0;
  R_.block(m, 0, m, nx_) = E;
  R_.block(m, nx_, m, m) = F;
  R_.block(m, nx_ + m, m, nu_) = H;
  Rginv_ = R_ * G.cwiseInverse().asDiagonal();
  gram_.noalias() = Rginv_ * R_.transpose();
}

bool ComplementarityProjector::project(const Eigen::Ref<const Eigen::VectorXd>& p,
                                       const Eigen::Ref<const Eigen::VectorXd>& o,
                                       Eigen::Ref<Eigen::VectorXd> delta) {
  const int m = nl_;
  constexpr int kCap = 2 * kMaxContacts;
  if (m == 0) {
    delta = p;
    last_cost_ = 0.0;
    return true;
  }
  // constraint values at p: v = (λ, s) with s = Ex + Fλ + Hu + o
  v_.noalias() = R_ * p;
  v_.tail(m) += o;
  double vmax = 0.0;
  for (int j = 0; j < 2 * m; ++j) vmax = std::fmax(vmax, std::fabs(v_[j]));
  const double feas_tol = 1e-9 * (1.0 + vmax);
  double gmax = 0.0;
  for (int j = 0; j < 2 * m; ++j) gmax = std::fmax(gmax, gram_(j, j));
  const double piv_tol = 1e-12 * (1.0 + gmax);

  int idx[kCap], best_idx[kCap];
  double S[kCap * kCap], y[kCap], best_y[kCap];
  int best_k = -1;
  double best_cost = std::numeric_limits<double>::infinity();
  int npat = 1;
  for (int i = 0; i < m; ++i) npat *= 3;
  for (int code = 0; code < npat; ++code) {
    // pattern digit per contact: 0 → λ_i = 0, 1 → s_i = 0, 2 → both
    int k = 0, c = code;
    for (int i = 0; i < m; ++i, c /= 3) {
      const int dgt = c % 3;
      if (dgt != 1) idx[k++] = i;
      if (dgt != 0) idx[k++] = m + i;
    }
    // Cholesky of the Gram block, solve for the multipliers y
    for (int a = 0; a < k; ++a)
      for (int b = 0; b <= a; ++b) S[a * kCap + b] = gram_(idx[a], idx[b]);
    bool ok = true;
    for (int a = 0; a < k && ok; ++a) {
      for (int b = 0; b <= a; ++b) {
        double s = S[a * kCap + b];
        for (int l = 0; l < b; ++l) s -= S[a * kCap + l] * S[b * kCap + l];
        if (a == b) {
          if (!(s > piv_tol)) { ok = false; break; }
          S[a * kCap + a] = std::sqrt(s);
        } else {
          S[a * kCap + b] = s / S[b * kCap + b];
        }
      }
    }
    if (!ok) continue;
    for (int a = 0; a < k; ++a) {
      double s = v_[idx[a]];
      for (int l = 0; l < a; ++l) s -= S[a * kCap + l] * y[l];
      y[a] = s / S[a * kCap + a];
    }
    for (int a = k - 1; a >= 0; --a) {
      double s = y[a];
      for (int l = a + 1; l < k; ++l) s -= S[l * kCap + a] * y[l];
      y[a] = s / S[a * kCap + a];
    }
    // squared G-distance = vᵢᵀ y; only a better candidate needs the feasibility test
    double cost = 0.0;
    for (int a = 0; a < k; ++a) cost += v_[idx[a]] * y[a];
    if (!(cost < best_cost)) continue;
    bool feasible = true;
    for (int j = 0; j < 2 * m && feasible; ++j) {
      double vj = v_[j];
      for (int a = 0; a < k; ++a) vj -= gram_(j, idx[a]) * y[a];
      if (vj < -feas_tol) feasible = false;
    }
    if (!feasible) continue;
    best_cost = cost;
    best_k = k;
    for (int a = 0; a < k; ++a) best_idx[a] = idx[a], best_y[a] = y[a];
  }
  delta = p;
  if (best_k < 0) {
    last_cost_ = 0.0;
    return false;
  }
  // δ = p − G⁻¹ R_Iᵀ y
  for (int a = 0; a < best_k; ++a) delta -= best_y[a] * Rginv_.row(best_idx[a]).transpose();
  for (int i = 0; i < m; ++i) delta[nx_ + i] = std::fmax(delta[nx_ + i], 0.0);
  last_cost_ = best_cost;
  return true;
}

// ---- C3Controller ---------------------------------------------------------------------

const char* to_string(C3Status s) {
  switch (s) {
    case C3Status::kSolved: return "solved";
    case C3Status::kBudgetExhausted: return "budget_exhausted";
    case C3Status::kBadInput: return "bad_input";
  }
  return "unknown";
}

void C3Settings::validate() const {
  if (admm_iterations < 1)
    throw Error("C3Settings.admm_iterations must be >= 1, got " + std::to_string(admm_iterations));
  if (!(rho0 > 0.0 && std::isfinite(rho0)))
    throw Error("C3Settings.rho0 must be finite and > 0, got " + std::to_string(rho0));
  if (!(rho_scale >= 1.0 && std::isfinite(rho_scale)))
    throw Error("C3Settings.rho_scale must be finite and >= 1, got " + std::to_string(rho_scale));
  if (!(consensus_tol >= 0.0))
    throw Error("C3Settings.consensus_tol must be >= 0, got " + std::to_string(consensus_tol));
  if (!(deadline_s >= 0.0 && std::isfinite(deadline_s)))
    throw Error("C3Settings.deadline_s must be finite and >= 0, got " + std::to_string(deadline_s));
}

namespace {
void expect_size(const char* name, Eigen::Index rows, Eigen::Index cols, Eigen::Index r,
                 Eigen::Index c) {
  if (rows != r || cols != c)
    throw Error(std::string("C3Costs.") + name + ": expected " + std::to_string(r) + " x " +
                std::to_string(c) + ", got " + std::to_string(rows) + " x " + std::to_string(cols));
}
}  // namespace

C3Controller::C3Controller(const Lcs& model, const C3Costs& costs, const C3Settings& settings)
    : model_(model), costs_(costs), settings_(settings) {
  model_.validate();
  settings_.validate();
  N_ = model_.horizon();
  nx_ = model_.nx;
  nl_ = model_.nl;
  nu_ = model_.nu;
  nz_ = nx_ + nl_ + nu_;
  if (nl_ > ComplementarityProjector::kMaxContacts)
    throw Error("C3Controller: the exact projection supports at most " +
                std::to_string(ComplementarityProjector::kMaxContacts) +
                " complementarity rows per step, got " + std::to_string(nl_));
  expect_size("Q", costs_.Q.rows(), costs_.Q.cols(), nx_, nx_);
  expect_size("R", costs_.R.rows(), costs_.R.cols(), nu_, nu_);
  expect_size("QN", costs_.QN.rows(), costs_.QN.cols(), nx_, nx_);
  expect_size("G", costs_.G.rows(), costs_.G.cols(), nz_, 1);
  if (!(costs_.G.array() > 0.0).all() || !costs_.G.allFinite())
    throw Error("C3Costs.G: every weight must be finite and > 0");
  if (costs_.U.size() == 0) costs_.U = costs_.G;
  expect_size("U", costs_.U.rows(), costs_.U.cols(), nz_, 1);
  if (!(costs_.U.array() > 0.0).all() || !costs_.U.allFinite())
    throw Error("C3Costs.U: every weight must be finite and > 0");
  if (costs_.x_bound.size() == 0)
    costs_.x_bound = Eigen::VectorXd::Constant(nx_, std::numeric_limits<double>::infinity());
  expect_size("x_bound", costs_.x_bound.rows(), costs_.x_bound.cols(), nx_, 1);
  if (costs_.u_limit.size() != 0) expect_size("u_limit", costs_.u_limit.rows(), costs_.u_limit.cols(), nu_, 1);

  const int iters = settings_.admm_iterations;
  qp_.resize(iters + 1);
  for (auto& q : qp_) q.resize(N_, nx_, nl_, nu_);
  qp_valid_.assign(iters + 1, 0);
  base_W_.setZero(nz_, nz_);
  base_W_.topLeftCorner(nx_, nx_) = 2.0 * costs_.Q;
  base_W_.bottomRightCorner(nu_, nu_) = 2.0 * costs_.R;
  WN_ = 2.0 * costs_.QN;
  proj_.assign(N_, ComplementarityProjector(nx_, nl_, nu_));
  set_projectors();
  x_ref_.setZero(nx_, N_ + 1);
  z_.setZero(nz_, N_);
  delta_.setZero(nz_, N_);
  w_.setZero(nz_, N_);
  g_.setZero(nz_, N_);
  target_.setZero(nz_, N_);
  xN_.setZero(nx_);
  gN_.setZero(nx_);
  o_.setZero(nl_);
  p_.setZero(nz_);
  tmp_nz_.setZero(nz_);
  r_in_.setZero(nl_);
  best_u_.setZero(nu_);
  last_u_.setZero(nu_);
  // factor every iteration's QP now so that the first step() costs what later ones do
  for (int i = 0; i <= iters; ++i)
    if (!ensure_factor(i)) throw Error("C3Controller: the QP step's Riccati factorization failed");
}

void C3Controller::set_projectors() {
  for (int k = 0; k < N_; ++k) proj_[k].set(model_.E[k], model_.F[k], model_.H[k], costs_.U);
}

bool C3Controller::ensure_factor(int iteration) {
  if (qp_valid_[iteration]) return true;
  const double rho = settings_.rho0 * std::pow(settings_.rho_scale, iteration);
  tmp_nz_ = rho * costs_.G;
  const bool ok = qp_[iteration].factor_diag(model_, base_W_, tmp_nz_, WN_);
  qp_valid_[iteration] = ok ? 1 : 0;
  return ok;
}

bool C3Controller::set_model(const Lcs& m) {
  if (m.nx != nx_ || m.nu != nu_ || m.nl != nl_ || m.horizon() != N_) return false;
  for (int k = 0; k < N_; ++k) {
    if (m.A[k].rows() != nx_ || m.A[k].cols() != nx_ || m.B[k].rows() != nx_ ||
        m.B[k].cols() != nu_ || m.D[k].rows() != nx_ || m.D[k].cols() != nl_ ||
        m.d[k].size() != nx_ || m.E[k].rows() != nl_ || m.E[k].cols() != nx_ ||
        m.F[k].rows() != nl_ || m.F[k].cols() != nl_ || m.H[k].rows() != nl_ ||
        m.H[k].cols() != nu_ || m.c[k].size() != nl_)
      return false;
    if (!m.A[k].allFinite() || !m.B[k].allFinite() || !m.D[k].allFinite() || !m.d[k].allFinite() ||
        !m.E[k].allFinite() || !m.F[k].allFinite() || !m.H[k].allFinite() || !m.c[k].allFinite())
      return false;
  }
  for (int k = 0; k < N_; ++k) model_.copy_step(m, k, k);
  // r stays: it is the learned residual (set_residual / the attached channel)
  for (auto& v : qp_valid_) v = 0;
  set_projectors();
  return true;
}

bool C3Controller::set_reference(const Eigen::Ref<const Eigen::MatrixXd>& x_ref) {
  if (x_ref.rows() != nx_ || x_ref.cols() != N_ + 1 || !x_ref.allFinite()) return false;
  x_ref_ = x_ref;
  return true;
}

void C3Controller::set_residual(const Eigen::Ref<const Eigen::VectorXd>& r) {
  if (r.size() == nl_ && r.allFinite()) model_.r = r;
}

bool C3Controller::observe(const Eigen::Ref<const Eigen::VectorXd>& x,
                           const Eigen::Ref<const Eigen::VectorXd>& u,
                           const Eigen::Ref<const Eigen::VectorXd>& x_next) {
  if (!sample_sink_ || x.size() != nx_ || u.size() != nu_ || x_next.size() != nx_) return false;
  if (!x.allFinite() || !u.allFinite() || !x_next.allFinite()) return false;
  return sample_sink_->push(x, u, x_next);
}

void C3Controller::reset() {
  have_warm_ = false;
  last_u_.setZero();
  delta_.setZero();
  w_.setZero();
}

void C3Controller::qp_step(int iteration, const Eigen::Ref<const Eigen::VectorXd>& x0,
                           const Eigen::Ref<const Eigen::MatrixXd>& target) {
  ensure_factor(iteration);
  const double rho = settings_.rho0 * std::pow(settings_.rho_scale, iteration);
  // g_k = −2Q x̄_k (state part) − ρ G ∘ (δ_k − w_k)
  for (int k = 0; k < N_; ++k) {
    g_.col(k) = -rho * costs_.G.cwiseProduct(target.col(k));
    g_.col(k).head(nx_).noalias() -= base_W_.topLeftCorner(nx_, nx_) * x_ref_.col(k);
  }
  gN_.noalias() = -WN_ * x_ref_.col(N_);
  qp_[iteration].solve(model_, x0, g_, gN_, z_, xN_);
}

C3Status C3Controller::step(const Eigen::Ref<const Eigen::VectorXd>& x, double /*t*/,
                            Eigen::Ref<Eigen::VectorXd> u_out) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = settings_.deadline_s > 0.0 ? Clock::now() : Clock::time_point{};
  // reject bad input with the last safe command
  if (u_out.size() != nu_) return C3Status::kBadInput;
  bool ok = x.size() == nx_;
  for (int i = 0; ok && i < nx_; ++i)
    ok = std::isfinite(x[i]) && std::fabs(x[i]) <= costs_.x_bound[i];
  if (!ok) {
    u_out = last_u_;
    return C3Status::kBadInput;
  }
  // newest residual (never blocks; a torn or non-finite read keeps the old one)
  if (residual_source_ && residual_source_->size() == nl_) {
    const std::int64_t v = residual_source_->read(r_in_);
    if (v >= 0 && v != residual_version_ && r_in_.allFinite()) {
      model_.r = r_in_;
      residual_version_ = v;
    }
  }
  // warm start: shift δ and w one step
  if (have_warm_ && settings_.warm_start) {
    for (int k = 0; k + 1 < N_; ++k) {
      delta_.col(k) = delta_.col(k + 1);
      w_.col(k) = w_.col(k + 1);
    }
  } else {
    delta_.setZero();
    w_.setZero();
  }
  // ADMM
  const int iters = settings_.admm_iterations;
  double consensus = std::numeric_limits<double>::infinity();
  int it = 0;
  for (; it < iters; ++it) {
    if (settings_.deadline_s > 0.0 && it > 0 &&
        std::chrono::duration<double>(Clock::now() - t0).count() > settings_.deadline_s)
      break;
    target_ = delta_ - w_;
    qp_step(it, x, target_);
    consensus = 0.0;
    for (int k = 0; k < N_; ++k) {
      p_ = z_.col(k) + w_.col(k);
      o_ = model_.c[k] + model_.r;
      proj_[k].project(p_, o_, delta_.col(k));
      w_.col(k) += z_.col(k) - delta_.col(k);
      consensus = std::fmax(consensus, (z_.col(k) - delta_.col(k)).cwiseAbs().maxCoeff());
    }
    w_ /= settings_.rho_scale;
  }
  last_iterations_ = it;
  last_consensus_ = consensus;
  // final QP step: the command is its u_0
  target_ = delta_ - w_;
  qp_step(it, x, target_);
  best_u_ = z_.col(0).tail(nu_);
  if (!best_u_.allFinite() || !delta_.allFinite() || !w_.allFinite()) {
    have_warm_ = false;
    u_out = last_u_;
    return C3Status::kBudgetExhausted;
  }
  if (costs_.u_limit.size() == nu_)
    best_u_ = best_u_.cwiseMax(-costs_.u_limit).cwiseMin(costs_.u_limit);
  have_warm_ = true;
  last_u_ = best_u_;
  u_out = best_u_;
  return (it == iters && consensus <= settings_.consensus_tol) ? C3Status::kSolved
                                                              : C3Status::kBudgetExhausted;
}

}  // namespace impulse
