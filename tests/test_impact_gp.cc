// Gp (ARD squared-exponential GP regression): the log marginal likelihood
// against a dense evaluation with K formed and inverted explicitly; its
// gradient against central differences (every component, d = 3 and 5); the
// posterior mean and variance against the textbook formulas; the jitter retry
// on an exactly singular K; recovery of a smooth function of 2 of 5 features
// (test RMSE and ARD lengthscales); MultiGp against one Gp per column;
// bitwise determinism; and the misuse errors.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "host/impact/gp.h"

#include "test_util.h"

namespace impulse {
namespace {

using testing::expect_error;

using Eigen::MatrixXd;
using Eigen::VectorXd;

constexpr double kPi = 3.14159265358979323846;

// portable uniform in [lo, hi) and standard normal (Box-Muller)
double uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * (double(rng() >> 11) * 0x1.0p-53);
}
double normal(std::mt19937_64& rng) {
  const double u1 = 1.0 - uniform(rng, 0, 1), u2 = uniform(rng, 0, 1);
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * kPi * u2);
}
MatrixXd uniform_matrix(Eigen::Index r, Eigen::Index c, double lo, double hi,
                        std::mt19937_64& rng) {
  MatrixXd m(r, c);
  for (Eigen::Index j = 0; j < c; ++j)
    for (Eigen::Index i = 0; i < r; ++i) m(i, j) = uniform(rng, lo, hi);
  return m;
}

// features on different scales and offsets, a smooth output with an offset,
// so the standardization matters
void random_problem(Eigen::Index n, Eigen::Index d, std::uint64_t seed, MatrixXd* X, VectorXd* y) {
  std::mt19937_64 rng(seed);
  *X = uniform_matrix(n, d, -1, 1, rng);
  for (Eigen::Index k = 0; k < d; ++k)
    X->col(k) = X->col(k) * double(k + 1) + VectorXd::Constant(n, 0.5 * double(k));
  y->resize(n);
  for (Eigen::Index i = 0; i < n; ++i)
    (*y)(i) = 10 + 3 * std::sin(X->row(i).sum()) + 0.3 * normal(rng);
}

GpHyper random_hyper(Eigen::Index d, std::mt19937_64& rng) {
  GpHyper h;
  h.log_lengthscales.resize(d);
  for (Eigen::Index k = 0; k < d; ++k) h.log_lengthscales(k) = uniform(rng, -1, 1);
  h.log_signal_std = uniform(rng, -0.5, 0.5);
  h.log_noise_std = uniform(rng, -2, -0.5);
  return h;
}

// the test's own standardization: population mean and standard deviation
struct Standardized {
  MatrixXd X;
  VectorXd y;
  Eigen::RowVectorXd x_mean, x_scale;
  double y_mean = 0, y_scale = 1;
};
Standardized standardize(const MatrixXd& X, const VectorXd& y) {
  Standardized s;
  const double n = double(X.rows());
  s.x_mean.resize(X.cols());
  s.x_scale.resize(X.cols());
  s.X.resize(X.rows(), X.cols());
  for (Eigen::Index k = 0; k < X.cols(); ++k) {
    double m = 0, v = 0;
    for (Eigen::Index i = 0; i < X.rows(); ++i) m += X(i, k);
    m /= n;
    for (Eigen::Index i = 0; i < X.rows(); ++i) v += (X(i, k) - m) * (X(i, k) - m);
    s.x_mean(k) = m;
    s.x_scale(k) = std::sqrt(v / n);
    for (Eigen::Index i = 0; i < X.rows(); ++i) s.X(i, k) = (X(i, k) - m) / s.x_scale(k);
  }
  double m = 0, v = 0;
  for (Eigen::Index i = 0; i < y.size(); ++i) m += y(i);
  m /= n;
  for (Eigen::Index i = 0; i < y.size(); ++i) v += (y(i) - m) * (y(i) - m);
  s.y_mean = m;
  s.y_scale = std::sqrt(v / n);
  s.y = (y.array() - m) / s.y_scale;
  return s;
}

// k(a, b) written out from the definition
double kernel(const Eigen::RowVectorXd& a, const Eigen::RowVectorXd& b, const GpHyper& h) {
  double r2 = 0;
  for (Eigen::Index k = 0; k < a.size(); ++k) {
    const double l = std::exp(h.log_lengthscales(k));
    r2 += (a(k) - b(k)) * (a(k) - b(k)) / (l * l);
  }
  return std::exp(2 * h.log_signal_std) * std::exp(-0.5 * r2);
}
MatrixXd dense_K(const MatrixXd& X, const GpHyper& h) {
  MatrixXd K(X.rows(), X.rows());
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    for (Eigen::Index j = 0; j < X.rows(); ++j)
      K(i, j) = kernel(X.row(i), X.row(j), h) + (i == j ? std::exp(2 * h.log_noise_std) : 0.0);
  return K;
}

bool bitwise_equal(const MatrixXd& a, const MatrixXd& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), sizeof(double) * size_t(a.size())) == 0;
}

TEST(ImpactGp, StandardizationAndLogMarginalLikelihoodMatchDense) {
  MatrixXd X;
  VectorXd y;
  random_problem(20, 3, 1, &X, &y);
  std::mt19937_64 rng(2);
  const Standardized s = standardize(X, y);
  for (int trial = 0; trial < 3; ++trial) {
    const GpHyper h = random_hyper(3, rng);
    Gp gp;
    gp.set(X, y, h);
    EXPECT_LT((gp.x_mean() - s.x_mean).cwiseAbs().maxCoeff(), 1e-12);
    EXPECT_LT((gp.x_scale() - s.x_scale).cwiseAbs().maxCoeff(), 1e-12);
    EXPECT_NEAR(gp.y_mean(), s.y_mean, 1e-12);
    EXPECT_NEAR(gp.y_scale(), s.y_scale, 1e-12);
    const MatrixXd K = dense_K(s.X, h);
    const double n = double(X.rows());
    const double expected = -0.5 * s.y.dot(K.inverse() * s.y) - 0.5 * std::log(K.determinant()) -
                            0.5 * n * std::log(2 * kPi);
    const double got = gp.log_marginal_likelihood(h);
    EXPECT_NEAR(got, expected, 1e-9 * std::max(1.0, std::abs(expected))) << "trial " << trial;
    EXPECT_EQ(gp.jitter(), 0.0);
  }
}

void check_gradient(Eigen::Index d, std::uint64_t seed) {
  MatrixXd X;
  VectorXd y;
  random_problem(30, d, seed, &X, &y);
  std::mt19937_64 rng(seed + 100);
  for (int trial = 0; trial < 3; ++trial) {
    const GpHyper h = random_hyper(d, rng);
    Gp gp;
    gp.set(X, y, h);
    VectorXd grad;
    gp.log_marginal_likelihood(h, &grad);
    ASSERT_EQ(grad.size(), d + 2);
    const VectorXd theta = h.to_vector();
    const double eps = 1e-5;
    for (Eigen::Index k = 0; k < theta.size(); ++k) {
      VectorXd tp = theta, tm = theta;
      tp(k) += eps;
      tm(k) -= eps;
      const double fd = (gp.log_marginal_likelihood(GpHyper::from_vector(tp)) -
                         gp.log_marginal_likelihood(GpHyper::from_vector(tm))) /
                        (2 * eps);
      EXPECT_NEAR(grad(k), fd, 1e-6 * std::max(1.0, std::abs(fd)))
          << "d " << d << ", trial " << trial << ", component " << k;
    }
  }
}

TEST(ImpactGp, GradientMatchesCentralDifferencesD3) { check_gradient(3, 11); }
TEST(ImpactGp, GradientMatchesCentralDifferencesD5) { check_gradient(5, 12); }

TEST(ImpactGp, PosteriorMatchesTextbookFormulas) {
  MatrixXd X;
  VectorXd y;
  random_problem(25, 2, 3, &X, &y);
  std::mt19937_64 rng(4);
  const GpHyper h = random_hyper(2, rng);
  Gp gp;
  gp.set(X, y, h);
  MatrixXd Xs(6, 2);
  Xs.topRows(4) = uniform_matrix(4, 2, -2, 3, rng);
  Xs.row(4) = X.row(7);  // a training input
  Xs.row(5) << 40, -30;  // far away: the prior
  VectorXd var;
  const VectorXd mean = gp.predict(Xs, &var);
  ASSERT_EQ(mean.size(), 6);
  ASSERT_EQ(var.size(), 6);
  // R&W eqs. 2.25-2.26 in standardized units, then back to original units
  const Standardized s = standardize(X, y);
  const MatrixXd Kinv = dense_K(s.X, h).inverse();
  for (Eigen::Index i = 0; i < Xs.rows(); ++i) {
    const Eigen::RowVectorXd xs = (Xs.row(i) - s.x_mean).cwiseQuotient(s.x_scale);
    VectorXd ks(X.rows());
    for (Eigen::Index j = 0; j < X.rows(); ++j) ks(j) = kernel(xs, s.X.row(j), h);
    const double m = s.y_mean + s.y_scale * ks.dot(Kinv * s.y);
    const double v = s.y_scale * s.y_scale * (kernel(xs, xs, h) - ks.dot(Kinv * ks));
    EXPECT_NEAR(mean(i), m, 1e-9 * std::max(1.0, std::abs(m))) << "point " << i;
    EXPECT_NEAR(var(i), v, 1e-9 * s.y_scale * s.y_scale) << "point " << i;
  }
  // far away the posterior is the prior: mean y_mean, variance s² y_scale²
  EXPECT_NEAR(mean(5), s.y_mean, 1e-12 * s.y_mean);
  EXPECT_NEAR(var(5), std::exp(2 * h.log_signal_std) * s.y_scale * s.y_scale, 1e-9);
  // without var the mean is the same
  EXPECT_TRUE(bitwise_equal(gp.predict(Xs), mean));
}

TEST(ImpactGp, JitterRescuesAnExactlySingularKernel) {
  // lengthscale e^40: every kernel entry rounds to exactly s² = 1 and noise
  // e^-800 underflows to 0, so K = 11ᵀ and the plain Cholesky meets a zero pivot
  MatrixXd X;
  VectorXd y;
  random_problem(10, 2, 5, &X, &y);
  GpHyper h;
  h.log_lengthscales = VectorXd::Constant(2, 40);
  h.log_signal_std = 0;
  h.log_noise_std = -400;
  Gp gp;
  gp.set(X, y, h);
  EXPECT_GT(gp.jitter(), 0.0);
  EXPECT_LE(gp.jitter(), 1e-4);
  VectorXd var;
  const VectorXd mean = gp.predict(X, &var);
  EXPECT_TRUE(mean.allFinite());
  EXPECT_TRUE(var.allFinite());
  EXPECT_TRUE(std::isfinite(gp.log_marginal_likelihood(h)));
}

// y = sin(3 x1) + 0.5 x2² on [-1, 1]^5, features 3-5 irrelevant
double truth(const Eigen::RowVectorXd& x) { return std::sin(3 * x(0)) + 0.5 * x(1) * x(1); }

TEST(ImpactGp, RecoversSmoothFunctionAndIgnoresIrrelevantFeatures) {
  std::mt19937_64 rng(6);
  const int n = 150, d = 5;
  const double noise = 0.05;
  const MatrixXd X = uniform_matrix(n, d, -1, 1, rng);
  VectorXd y(n);
  for (int i = 0; i < n; ++i) y(i) = truth(X.row(i)) + noise * normal(rng);
  const MatrixXd Xt = uniform_matrix(400, d, -1, 1, rng);
  VectorXd yt(Xt.rows());
  for (Eigen::Index i = 0; i < Xt.rows(); ++i) yt(i) = truth(Xt.row(i));

  Gp gp;
  const auto t0 = std::chrono::steady_clock::now();
  gp.fit(X, y);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  VectorXd var;
  const VectorXd pred = gp.predict(Xt, &var);
  const double rmse = std::sqrt((pred - yt).squaredNorm() / double(yt.size()));
  const double spread = std::sqrt((yt.array() - yt.mean()).square().mean());
  const GpHyper& h = gp.hyper();
  std::printf("  fit %.2f s; test RMSE %.4f (output std %.3f); lengthscales", secs, rmse, spread);
  for (int k = 0; k < d; ++k) std::printf(" %.3g", std::exp(h.log_lengthscales(k)));
  std::printf("; signal %.3g, noise %.3g (standardized)\n", std::exp(h.log_signal_std),
              std::exp(h.log_noise_std));
  // The test targets are noise-free and the function depends on 2 smooth
  // coordinates, sampled by 150 points (about 12 per axis): a well-fitted GP
  // is within a few hundredths. 0.05 (the training noise, 7% of the output's
  // std 0.7; the constant predictor is at 0.7) fails a fit that lost a
  // relevant feature, kept the irrelevant ones or over-smoothed.
  EXPECT_LT(rmse, 0.05);
  // the mean predicted variance is of the order of the actual squared error
  const double mean_sd = std::sqrt(var.mean());
  EXPECT_GT(mean_sd, rmse / 5);
  EXPECT_LT(mean_sd, rmse * 5);
  // noise estimate: 0.05 in original units is 0.05 / y_scale standardized
  const double noise_hat = std::exp(h.log_noise_std) * gp.y_scale();
  EXPECT_GT(noise_hat, 0.5 * noise);
  EXPECT_LT(noise_hat, 2 * noise);
  // ARD: each irrelevant feature's lengthscale at least 10x the longest relevant one
  const double relevant = std::max(h.log_lengthscales(0), h.log_lengthscales(1));
  for (int k = 2; k < d; ++k)
    EXPECT_GT(h.log_lengthscales(k), relevant + std::log(10.0)) << "feature " << k;
  // the optimum beats the fixed starting point
  GpHyper start;
  start.log_lengthscales = VectorXd::Zero(d);
  start.log_noise_std = std::log(0.1);
  EXPECT_GT(gp.log_marginal_likelihood(h), gp.log_marginal_likelihood(start));
}

TEST(ImpactGp, MultiGpEqualsOneGpPerColumn) {
  std::mt19937_64 rng(7);
  const MatrixXd X = uniform_matrix(40, 2, -1, 1, rng);
  MatrixXd Y(40, 3);
  for (int i = 0; i < 40; ++i) {
    Y(i, 0) = std::sin(2 * X(i, 0));
    Y(i, 1) = X(i, 0) * X(i, 1) + std::cos(X(i, 1)) + 0.01 * normal(rng);
    Y(i, 2) = 100 + 20 * X(i, 1);
  }
  GpFitOptions opt;
  opt.restarts = 1;
  opt.seed = 3;
  MultiGp multi;
  multi.fit(X, Y, opt);
  ASSERT_EQ(multi.outputs(), 3);
  const MatrixXd Xs = uniform_matrix(15, 2, -1.2, 1.2, rng);
  MatrixXd var;
  const MatrixXd pred = multi.predict(Xs, &var);
  ASSERT_EQ(pred.rows(), 15);
  ASSERT_EQ(pred.cols(), 3);
  for (int k = 0; k < 3; ++k) {
    Gp gp;
    gp.fit(X, Y.col(k), opt);
    VectorXd v;
    const VectorXd p = gp.predict(Xs, &v);
    EXPECT_TRUE(bitwise_equal(p, pred.col(k))) << "column " << k;
    EXPECT_TRUE(bitwise_equal(v, var.col(k))) << "column " << k;
    EXPECT_TRUE(bitwise_equal(gp.hyper().to_vector(), multi.gp(k).hyper().to_vector()));
  }
  EXPECT_TRUE(bitwise_equal(multi.predict(Xs), pred));
}

TEST(ImpactGp, FitIsBitwiseDeterministic) {
  MatrixXd X;
  VectorXd y;
  random_problem(60, 3, 8, &X, &y);
  std::mt19937_64 rng(9);
  const MatrixXd Xs = uniform_matrix(20, 3, -1, 2, rng);
  GpFitOptions opt;
  opt.seed = 42;
  Gp a, b;
  a.fit(X, y, opt);
  b.fit(X, y, opt);
  EXPECT_TRUE(bitwise_equal(a.hyper().to_vector(), b.hyper().to_vector()));
  VectorXd va, vb;
  EXPECT_TRUE(bitwise_equal(a.predict(Xs, &va), b.predict(Xs, &vb)));
  EXPECT_TRUE(bitwise_equal(va, vb));
  // refitting the same object gives the same again
  a.fit(X, y, opt);
  EXPECT_TRUE(bitwise_equal(a.hyper().to_vector(), b.hyper().to_vector()));
}

TEST(ImpactGp, BadInputThrowsNamingTheItem) {
  MatrixXd X;
  VectorXd y;
  random_problem(10, 3, 10, &X, &y);
  GpHyper h;
  h.log_lengthscales = VectorXd::Zero(3);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  GpFitOptions fast;
  fast.restarts = 0;
  fast.max_iterations = 5;

  Gp fresh;
  expect_error([&] { fresh.predict(X); }, {"predict", "fit() or set() first"});
  expect_error([&] { fresh.hyper(); }, {"hyper", "fit() or set() first"});
  expect_error([&] { fresh.log_marginal_likelihood(h); }, {"log_marginal_likelihood", "first"});

  MatrixXd Xbad = X;
  Xbad(3, 1) = nan;
  expect_error([&] { Gp().fit(Xbad, y, fast); }, {"X(3, 1)", "nan"});
  expect_error([&] { Gp().set(Xbad, y, h); }, {"X(3, 1)", "nan"});
  VectorXd ybad = y;
  ybad(2) = inf;
  expect_error([&] { Gp().fit(X, ybad, fast); }, {"y(2)", "inf"});
  expect_error([&] { Gp().fit(X, y.head(9), fast); }, {"y has 9 entries", "X has 10 rows"});
  expect_error([&] { Gp().fit(X.topRows(1), y.head(1), fast); }, {"1 rows", "at least 2 points"});
  expect_error([&] { Gp().fit(MatrixXd(10, 0), y, fast); }, {"X has 0 columns"});

  GpHyper h2;
  h2.log_lengthscales = VectorXd::Zero(2);
  expect_error([&] { Gp().set(X, y, h2); }, {"log_lengthscales has 2 entries, expected 3"});
  GpHyper hn = h;
  hn.log_noise_std = nan;
  expect_error([&] { Gp().set(X, y, hn); }, {"log_noise_std", "nan"});

  GpFitOptions o = fast;
  o.restarts = -1;
  expect_error([&] { Gp().fit(X, y, o); }, {"restarts"});
  o = fast;
  o.max_iterations = 0;
  expect_error([&] { Gp().fit(X, y, o); }, {"max_iterations"});
  o = fast;
  o.min_log_noise = nan;
  expect_error([&] { Gp().fit(X, y, o); }, {"log_noise"});
  o = fast;
  o.min_log_lengthscale = 10;
  expect_error([&] { Gp().fit(X, y, o); }, {"log_lengthscale"});

  Gp gp;
  gp.set(X, y, h);
  expect_error([&] { gp.predict(MatrixXd::Zero(4, 2)); }, {"Xs has 2 columns, expected 3"});
  MatrixXd Xs = MatrixXd::Zero(4, 3);
  Xs(0, 2) = -inf;
  expect_error([&] { gp.predict(Xs); }, {"Xs(0, 2)", "-inf"});
  expect_error([&] { gp.log_marginal_likelihood(h2); }, {"log_lengthscales has 2 entries"});

  MultiGp multi;
  expect_error([&] { multi.predict(X); }, {"MultiGp::predict", "fit() first"});
  expect_error([&] { multi.fit(X, MatrixXd::Zero(9, 2), fast); }, {"Y has 9 rows", "X has 10"});
  expect_error([&] { multi.fit(X, MatrixXd::Zero(10, 0), fast); }, {"Y has 0 columns"});
  MatrixXd Ybad = MatrixXd::Zero(10, 2);
  Ybad(4, 1) = nan;
  expect_error([&] { multi.fit(X, Ybad, fast); }, {"Y(4, 1)", "nan"});
  multi.fit(X, MatrixXd::Zero(10, 2), fast);
  expect_error([&] { multi.gp(2); }, {"output 2 out of range"});
}

}  // namespace
}  // namespace impulse
