#include "host/impact/gp.h"

#include <LBFGSB.h>

#include <cmath>
#include <exception>
#include <limits>
#include <new>
#include <random>
#include <string>
#include <utility>

namespace impulse {

namespace {

using Eigen::Index;
using Eigen::MatrixXd;
using Eigen::VectorXd;

constexpr double kLog2Pi = 1.8378770664093454836;  // log(2π)

std::string num(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return std::to_string(x);
}

void check_finite(const MatrixXd& m, const std::string& name) {
  for (Index j = 0; j < m.cols(); ++j)
    for (Index i = 0; i < m.rows(); ++i)
      if (!std::isfinite(m(i, j)))
        throw Error(name + "(" + std::to_string(i) + ", " + std::to_string(j) + ") is " +
                    num(m(i, j)) + "; expected a finite value");
}

void check_finite(const VectorXd& v, const std::string& name) {
  for (Index i = 0; i < v.size(); ++i)
    if (!std::isfinite(v(i)))
      throw Error(name + "(" + std::to_string(i) + ") is " + num(v(i)) +
                  "; expected a finite value");
}

void check_hyper(const GpHyper& h, Index d, const std::string& who) {
  if (h.log_lengthscales.size() != d)
    throw Error(who + ": hyper.log_lengthscales has " + std::to_string(h.log_lengthscales.size()) +
                " entries, expected " + std::to_string(d) + " (one per feature)");
  check_finite(h.log_lengthscales, who + ": hyper.log_lengthscales");
  if (!std::isfinite(h.log_signal_std))
    throw Error(who + ": hyper.log_signal_std is " + num(h.log_signal_std));
  if (!std::isfinite(h.log_noise_std))
    throw Error(who + ": hyper.log_noise_std is " + num(h.log_noise_std));
}

// s² exp(-½ Σ_d (A_id - B_jd)²) for inputs already divided by the lengthscales
MatrixXd se_kernel(const MatrixXd& A, const MatrixXd& B, double s2) {
  MatrixXd K(A.rows(), B.rows());
  for (Index j = 0; j < B.rows(); ++j)
    for (Index i = 0; i < A.rows(); ++i)
      K(i, j) = s2 * std::exp(-0.5 * (A.row(i) - B.row(j)).squaredNorm());
  return K;
}

MatrixXd scaled(const MatrixXd& X, const VectorXd& log_lengthscales) {
  return X.array().rowwise() / log_lengthscales.array().exp().transpose();
}

// Cholesky of K, adding jitter·mean(diag K) to the diagonal (0, then 1e-10 up
// to 1e-4) until it succeeds; false if it never does
bool cholesky(MatrixXd K, Eigen::LLT<MatrixXd>& llt, double* jitter) {
  const double scale = K.diagonal().mean();
  double added = 0;
  for (double rel = 0; rel <= 1.5e-4; rel = rel == 0 ? 1e-10 : rel * 10) {
    const double target = rel * scale;
    K.diagonal().array() += target - added;
    added = target;
    llt.compute(K);
    if (llt.info() == Eigen::Success) {
      *jitter = added;
      return true;
    }
  }
  return false;
}

// log p(y | X, h) with grad; false if K cannot be factorized
bool lml(const MatrixXd& X, const VectorXd& y, const GpHyper& h, double* value, VectorXd* grad) {
  const Index n = X.rows(), d = X.cols();
  const MatrixXd Z = scaled(X, h.log_lengthscales);
  const double s2 = std::exp(2 * h.log_signal_std), sn2 = std::exp(2 * h.log_noise_std);
  const MatrixXd Kf = se_kernel(Z, Z, s2);
  MatrixXd K = Kf;
  K.diagonal().array() += sn2;
  Eigen::LLT<MatrixXd> llt;
  double jitter = 0;
  if (!cholesky(std::move(K), llt, &jitter)) return false;
  const VectorXd alpha = llt.solve(y);
  const double log_det = 2 * llt.matrixLLT().diagonal().array().log().sum();
  *value = -0.5 * y.dot(alpha) - 0.5 * log_det - 0.5 * double(n) * kLog2Pi;
  if (!std::isfinite(*value)) return false;
  if (grad) {
    // W = ααᵀ - K⁻¹; dL/dθ = ½ Σ_ij W_ij ∂K_ij/∂θ (K and W symmetric)
    MatrixXd W = -llt.solve(MatrixXd::Identity(n, n));
    W.noalias() += alpha * alpha.transpose();
    grad->setZero(d + 2);
    for (Index j = 0; j < n; ++j)
      for (Index i = 0; i < n; ++i) {
        const double wk = W(i, j) * Kf(i, j);
        // ∂K_ij/∂log ℓ_k = K_ij (x_ik - x_jk)² / ℓ_k²
        for (Index k = 0; k < d; ++k) {
          const double dz = Z(i, k) - Z(j, k);
          (*grad)(k) += 0.5 * wk * dz * dz;
        }
        (*grad)(d) += wk;  // ∂K/∂log s = 2 K_f
      }
    (*grad)(d + 1) = sn2 * W.trace();  // ∂K/∂log σ_n = 2 σ_n² I
    if (!grad->allFinite()) return false;
  }
  return true;
}

struct EvalFailed {};  // an evaluation that could not be factorized: ends that start

// portable uniform in [lo, hi)
double uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * (double(rng() >> 11) * 0x1.0p-53);
}

}  // namespace

VectorXd GpHyper::to_vector() const {
  VectorXd t(log_lengthscales.size() + 2);
  t << log_lengthscales, log_signal_std, log_noise_std;
  return t;
}

GpHyper GpHyper::from_vector(const VectorXd& theta) {
  if (theta.size() < 3)
    throw Error("GpHyper::from_vector: theta has " + std::to_string(theta.size()) +
                " entries, expected d + 2 >= 3");
  GpHyper h;
  const Index d = theta.size() - 2;
  h.log_lengthscales = theta.head(d);
  h.log_signal_std = theta(d);
  h.log_noise_std = theta(d + 1);
  return h;
}

void GpFitOptions::validate() const {
  if (max_iterations <= 0)
    throw Error("GpFitOptions: max_iterations must be > 0, got " + std::to_string(max_iterations));
  if (restarts < 0)
    throw Error("GpFitOptions: restarts must be >= 0, got " + std::to_string(restarts));
  const auto range = [](double lo, double hi, const char* name) {
    if (!(std::isfinite(lo) && std::isfinite(hi) && lo < hi))
      throw Error(std::string("GpFitOptions: min_") + name + " < max_" + name +
                  " (both finite) required, got [" + num(lo) + ", " + num(hi) + "]");
  };
  range(min_log_noise, max_log_noise, "log_noise");
  range(min_log_lengthscale, max_log_lengthscale, "log_lengthscale");
  range(min_log_signal, max_log_signal, "log_signal");
}

void Gp::store(const MatrixXd& X, const VectorXd& y) {
  if (X.cols() == 0) throw Error("Gp: X has 0 columns; expected d >= 1 features");
  if (X.rows() < 2)
    throw Error("Gp: X has " + std::to_string(X.rows()) + " rows; expected at least 2 points");
  if (y.size() != X.rows())
    throw Error("Gp: y has " + std::to_string(y.size()) + " entries but X has " +
                std::to_string(X.rows()) + " rows");
  check_finite(X, "Gp: X");
  check_finite(y, "Gp: y");
  const double n = double(X.rows());
  x_mean_ = X.colwise().mean();
  const MatrixXd centered = X.rowwise() - x_mean_;
  x_scale_ = (centered.colwise().squaredNorm() / n).cwiseSqrt();
  for (Index k = 0; k < x_scale_.size(); ++k)
    if (!(x_scale_(k) > 0)) x_scale_(k) = 1;  // a constant feature
  X_ = centered.array().rowwise() / x_scale_.array();
  y_mean_ = y.mean();
  y_scale_ = std::sqrt((y.array() - y_mean_).square().sum() / n);
  if (!(y_scale_ > 0)) y_scale_ = 1;
  y_ = (y.array() - y_mean_) / y_scale_;
  fitted_ = false;
}

void Gp::factorize() {
  const double s2 = std::exp(2 * hyper_.log_signal_std);
  const MatrixXd Z = scaled(X_, hyper_.log_lengthscales);
  MatrixXd K = se_kernel(Z, Z, s2);
  K.diagonal().array() += std::exp(2 * hyper_.log_noise_std);
  if (!cholesky(std::move(K), llt_, &jitter_))
    throw Error(
        "Gp: the kernel matrix is not positive definite even with jitter; hyper "
        "log_noise_std = " +
        num(hyper_.log_noise_std));
  alpha_ = llt_.solve(y_);
  fitted_ = true;
}

void Gp::set(const MatrixXd& X, const VectorXd& y, const GpHyper& h) {
  check_hyper(h, X.cols(), "Gp::set");
  store(X, y);
  hyper_ = h;
  factorize();
}

void Gp::fit(const MatrixXd& X, const VectorXd& y, const GpFitOptions& opt) {
  opt.validate();
  store(X, y);
  const Index d = X_.cols(), p = d + 2;

  VectorXd lb(p), ub(p);
  lb << VectorXd::Constant(d, opt.min_log_lengthscale), opt.min_log_signal, opt.min_log_noise;
  ub << VectorXd::Constant(d, opt.max_log_lengthscale), opt.max_log_signal, opt.max_log_noise;

  // the best point any evaluation reached, over all starts
  VectorXd best;
  double best_f = std::numeric_limits<double>::infinity();
  auto objective = [&](const VectorXd& theta, VectorXd& grad) {
    double value = 0;
    if (!lml(X_, y_, GpHyper::from_vector(theta), &value, &grad)) throw EvalFailed{};
    grad = -grad;
    if (-value < best_f) {
      best_f = -value;
      best = theta;
    }
    return -value;
  };

  LBFGSpp::LBFGSBParam<double> param;
  param.max_iterations = opt.max_iterations;
  param.max_linesearch = 40;
  LBFGSpp::LBFGSBSolver<double> solver(param);

  std::mt19937_64 rng(opt.seed);
  for (int start = 0; start <= opt.restarts; ++start) {
    VectorXd theta(p);
    if (start == 0) {  // ℓ = 1 and s = 1 in standardized units, σ_n = 0.1
      theta << VectorXd::Zero(d), 0.0, std::log(0.1);
    } else {
      for (Index k = 0; k < d; ++k) theta(k) = uniform(rng, std::log(0.2), std::log(5.0));
      theta(d) = uniform(rng, std::log(0.5), std::log(2.0));
      theta(d + 1) = uniform(rng, std::log(1e-3), std::log(0.3));
    }
    theta = theta.cwiseMax(lb).cwiseMin(ub);
    double fx = 0;
    try {
      solver.minimize(objective, theta, fx, lb, ub);
    } catch (const EvalFailed&) {
      // keep the best point seen so far
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception&) {
      // LBFGS++ line-search failures (no descent, too many trials): same
    }
  }
  if (best.size() != p)
    throw Error(
        "Gp::fit: the log marginal likelihood could not be evaluated at any starting "
        "point (the kernel matrix was never positive definite)");
  hyper_ = GpHyper::from_vector(best);
  factorize();
}

void Gp::require_fitted(const char* what) const {
  if (!fitted_) throw Error(std::string("Gp::") + what + ": call fit() or set() first");
}

const GpHyper& Gp::hyper() const {
  require_fitted("hyper");
  return hyper_;
}

VectorXd Gp::predict(const MatrixXd& Xs, VectorXd* var) const {
  require_fitted("predict");
  if (Xs.cols() != X_.cols())
    throw Error("Gp::predict: Xs has " + std::to_string(Xs.cols()) + " columns, expected " +
                std::to_string(X_.cols()) + " features");
  check_finite(Xs, "Gp::predict: Xs");
  const MatrixXd S = (Xs.rowwise() - x_mean_).array().rowwise() / x_scale_.array();
  const double s2 = std::exp(2 * hyper_.log_signal_std);
  const MatrixXd Ks = se_kernel(scaled(S, hyper_.log_lengthscales),
                                scaled(X_, hyper_.log_lengthscales), s2);  // n*×n
  VectorXd mean = (Ks * alpha_).array() * y_scale_ + y_mean_;
  if (var) {
    const MatrixXd V = llt_.matrixL().solve(Ks.transpose());  // L⁻¹ k*, n×n*
    *var = ((s2 - V.colwise().squaredNorm().array()).max(0.0) * (y_scale_ * y_scale_))
               .matrix()
               .transpose();
  }
  return mean;
}

double Gp::log_marginal_likelihood(const GpHyper& h, VectorXd* grad) const {
  require_fitted("log_marginal_likelihood");
  check_hyper(h, X_.cols(), "Gp::log_marginal_likelihood");
  double value = 0;
  if (!lml(X_, y_, h, &value, grad))
    throw Error(
        "Gp::log_marginal_likelihood: the kernel matrix is not positive definite even "
        "with jitter; hyper log_noise_std = " +
        num(h.log_noise_std));
  return value;
}

void MultiGp::fit(const MatrixXd& X, const MatrixXd& Y, const GpFitOptions& opt) {
  if (Y.cols() == 0) throw Error("MultiGp::fit: Y has 0 columns; expected k >= 1 outputs");
  if (Y.rows() != X.rows())
    throw Error("MultiGp::fit: Y has " + std::to_string(Y.rows()) + " rows but X has " +
                std::to_string(X.rows()));
  check_finite(Y, "MultiGp::fit: Y");
  std::vector<Gp> gps(size_t(Y.cols()));
  for (Index k = 0; k < Y.cols(); ++k) gps[size_t(k)].fit(X, Y.col(k), opt);
  gps_ = std::move(gps);
}

MatrixXd MultiGp::predict(const MatrixXd& Xs, MatrixXd* var) const {
  if (gps_.empty()) throw Error("MultiGp::predict: call fit() first");
  MatrixXd mean(Xs.rows(), outputs());
  if (var) var->resize(Xs.rows(), outputs());
  VectorXd v;
  for (Index k = 0; k < outputs(); ++k) {
    mean.col(k) = gps_[size_t(k)].predict(Xs, var ? &v : nullptr);
    if (var) var->col(k) = v;
  }
  return mean;
}

const Gp& MultiGp::gp(Index k) const {
  if (k < 0 || k >= outputs())
    throw Error("MultiGp::gp: output " + std::to_string(k) + " out of range [0, " +
                std::to_string(outputs()) + ")");
  return gps_[size_t(k)];
}

}  // namespace impulse
