// Gaussian-process regression with an ARD squared-exponential kernel
// (Rasmussen & Williams 2006, ch. 2 and 5):
//   k(x, x') = s² exp(-½ Σ_d (x_d - x'_d)² / ℓ_d²),   K = k(X, X) + σ_n² I.
// Gp models one scalar output. Inputs are standardized per feature and the
// output by its mean and standard deviation (population, 1/n; a constant
// feature or output gets scale 1); the hyperparameters, the log marginal
// likelihood and its gradient are all in these standardized units, while
// predict() answers in original units.
//
// fit() maximizes the log marginal likelihood over the log-hyperparameters
// with L-BFGS-B (LBFGS++) inside box bounds, from one fixed start and
// `restarts` further starts drawn from a generator seeded by `seed`, keeping
// the best point any evaluation reached (a start whose line search fails,
// as it can when the noise sits at its lower bound and K is ill-conditioned,
// ends at its best point so far). Nothing is random beyond the seeded
// starts, so the same data, options and seed give bitwise the same
// hyperparameters and predictions (for one build and one OpenMP thread count:
// Eigen may split its larger products over threads). The Cholesky
// factorization retries with a growing diagonal jitter when K is not
// numerically positive definite (jitter()).
//
// Misuse (non-finite data, mismatched sizes, fewer than 2 points, no
// features, predicting before fit/set, bad options) throws impulse::Error
// naming the item.
#pragma once

#include <Eigen/Dense>
#include <cmath>
#include <cstdint>
#include <vector>

#include "solvers/error.h"

namespace impulse {

struct GpHyper {
  Eigen::VectorXd log_lengthscales;  // log ℓ_d, one per feature
  double log_signal_std = 0;         // log s
  double log_noise_std = -2;         // log σ_n

  // [log_lengthscales..., log_signal_std, log_noise_std]
  Eigen::VectorXd to_vector() const;
  static GpHyper from_vector(const Eigen::VectorXd& theta);  // size d + 2 >= 3
};

struct GpFitOptions {
  int max_iterations = 200;  // L-BFGS-B iterations per start, > 0
  int restarts = 2;          // starts after the fixed one, >= 0
  uint64_t seed = 0;         // for the restarts' starting points
  // bounds of the search (standardized units); min < max each
  double min_log_noise = std::log(1e-6);
  double max_log_noise = std::log(10.0);
  double min_log_lengthscale = std::log(1e-2);
  double max_log_lengthscale = std::log(1e3);
  double min_log_signal = std::log(1e-3);
  double max_log_signal = std::log(1e2);
  void validate() const;  // throws Error naming the bad field
};

class Gp {  // one scalar output
 public:
  // X is n×d (n >= 2, d >= 1), y has n entries; all finite.
  void fit(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const GpFitOptions& opt = {});
  // stores the data with the given hyperparameters (standardized units), no optimization
  void set(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const GpHyper& h);

  // posterior mean at the rows of Xs (n*×d) and, if var is given, the
  // posterior variance of the latent function (no noise), both in original units
  Eigen::VectorXd predict(const Eigen::MatrixXd& Xs, Eigen::VectorXd* var = nullptr) const;

  // log p(y | X, h) of the stored standardized data (the original-unit value
  // is this minus n log y_scale()); grad (if given) gets
  // d/d[log_lengthscales..., log_signal_std, log_noise_std] (R&W eq. 5.9)
  double log_marginal_likelihood(const GpHyper& h, Eigen::VectorXd* grad = nullptr) const;

  bool fitted() const { return fitted_; }
  const GpHyper& hyper() const;
  Eigen::Index dims() const { return X_.cols(); }
  // the standardization: x_std = (x - x_mean) / x_scale, y_std = (y - y_mean) / y_scale
  const Eigen::RowVectorXd& x_mean() const { return x_mean_; }
  const Eigen::RowVectorXd& x_scale() const { return x_scale_; }
  double y_mean() const { return y_mean_; }
  double y_scale() const { return y_scale_; }
  double jitter() const { return jitter_; }  // added to K's diagonal by the last factorization

 private:
  void store(const Eigen::MatrixXd& X, const Eigen::VectorXd& y);
  void factorize();
  void require_fitted(const char* what) const;

  Eigen::MatrixXd X_;  // standardized inputs, n×d
  Eigen::VectorXd y_;  // standardized outputs
  Eigen::RowVectorXd x_mean_, x_scale_;
  double y_mean_ = 0, y_scale_ = 1;
  GpHyper hyper_;
  Eigen::LLT<Eigen::MatrixXd> llt_;  // of K (+ jitter)
  Eigen::VectorXd alpha_;            // K⁻¹ y (standardized)
  double jitter_ = 0;
  bool fitted_ = false;
};

// independent Gps, one per output column, fitted with the same options
class MultiGp {
 public:
  void fit(const Eigen::MatrixXd& X, const Eigen::MatrixXd& Y /*n×k, k >= 1*/,
           const GpFitOptions& opt = {});
  // n*×k means; var (if given) gets the n*×k latent variances
  Eigen::MatrixXd predict(const Eigen::MatrixXd& Xs, Eigen::MatrixXd* var = nullptr) const;
  Eigen::Index outputs() const { return Eigen::Index(gps_.size()); }
  const Gp& gp(Eigen::Index k) const;  // throws Error if out of range

 private:
  std::vector<Gp> gps_;
};

}  // namespace impulse
