// The articulated model (host/dynamics/multibody.h, the elbow's published
// numbers) against the real elbow tosses' free-flight segments
// (../shared/data/articulated_elbow; skipped with a message when absent).
//
// What the data allow. Velocities in the files are backward differences of
// tracked poses, so one-step accelerations carry noise of ~10 m/s² and
// ~70 rad/s² (and some frames repeat: Δv = 0 exactly). Two checks that a wrong
// model fails:
//  1. The system's centre of mass (both links, nominal masses) follows a
//     parabola with vertical acceleration −g: a least-squares quadratic fit of
//     its positions over each free-flight segment. The files' nominal
//     dt = 0.0068 s is longer than the effective one (README: free fall gives
//     0.0066–0.0067 s), so g comes out as 9.81 (0.0066..0.0068 / 0.0068)².
//  2. Over windows of 5 steps, the velocity change the model predicts from the
//     recorded states (Σ dt·a(x_k), with Coriolis, centrifugal and joint
//     coupling) is closer to the recorded one than gravity alone, in the sum of
//     squares normalized by each coordinate's noise (a one-step, white-noise
//     estimate, ~4x too small for these correlated velocities: see the third
//     test, which compares to a properly estimated noise level).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "host/dynamics/multibody.h"
#include "io/system_tosses.h"
#include "test_util.h"

namespace impulse {
namespace {

std::string elbow_dir() {
  return testing::shared_data("articulated_elbow");
}

struct Segments {
  MultibodySystem sys = elbow_system();
  SystemTossSet set;
  std::vector<std::vector<char>> free;  // per toss and row: every vertex 2 cm above the table
};

bool load(Segments& s) {
  try {
    s.set = load_system_tosses(elbow_dir(), 15);
  } catch (const Error&) {
    return false;
  }
  std::vector<std::vector<Eigen::Vector3d>> verts;
  for (const LinkSpec& l : s.sys.links) verts.push_back(l.vertices);
  Kinematics kin;
  MultibodyContacts c;
  for (const SystemToss& t : s.set.tosses) {
    std::vector<char> f(static_cast<size_t>(t.steps(15)));
    for (int k = 0; k < t.steps(15); ++k) {
      kinematics(s.sys, Eigen::Map<const Eigen::VectorXd>(t.rows.data() + 15 * k, 8), kin);
      contact_frame(s.sys, kin, verts, c);
      f[static_cast<size_t>(k)] = c.phi.minCoeff() > 0.02;
    }
    s.free.push_back(std::move(f));
  }
  return true;
}

TEST(RealElbow, CentreOfMassFallsAtGravity) {
  Segments s;
  if (!load(s))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("real elbow tosses", elbow_dir(), "elbow"));
  const Eigen::VectorXd pi = stacked_inertial(s.sys);
  const double dt = 0.0068, M = s.sys.total_mass();
  std::vector<double> gz, gh;
  Kinematics kin;
  for (size_t ti = 0; ti < s.set.tosses.size(); ++ti) {
    const SystemToss& t = s.set.tosses[ti];
    // the leading free-flight segment (the toss starts after release)
    int n = 0;
    while (n < t.steps(15) && s.free[ti][static_cast<size_t>(n)]) ++n;
    if (n < 12) continue;
    Eigen::MatrixXd A(n, 3), Y(n, 3);
    for (int k = 0; k < n; ++k) {
      kinematics(s.sys, Eigen::Map<const Eigen::VectorXd>(t.rows.data() + 15 * k, 8), kin);
      Eigen::Vector3d com = Eigen::Vector3d::Zero();
      for (int l = 0; l < 2; ++l)
        com += (pi(10 * l) * kin.links[static_cast<size_t>(l)].p +
                kin.links[static_cast<size_t>(l)].R * pi.segment<3>(10 * l + 1)) / M;
      const double tk = k * dt;
      A.row(k) << 1, tk, 0.5 * tk * tk;
      Y.row(k) = com.transpose();
    }
    const Eigen::MatrixXd coef = A.colPivHouseholderQr().solve(Y);
    gz.push_back(-coef(2, 2));
    gh.push_back(std::hypot(coef(2, 0), coef(2, 1)));
  }
  ASSERT_GE(gz.size(), 100u) << "too few free-flight segments of 12+ rows";
  std::sort(gz.begin(), gz.end());
  std::sort(gh.begin(), gh.end());
  const double med_z = gz[gz.size() / 2], med_h = gh[gh.size() / 2];
  // 9.81 (0.0066 / 0.0068)² = 9.24 .. 9.81
  EXPECT_GT(med_z, 9.81 * std::pow(0.0065 / 0.0068, 2)) << "median vertical COM acceleration";
  EXPECT_LT(med_z, 9.81 * 1.02);
  EXPECT_LT(med_h, 0.5) << "median horizontal COM acceleration (m/s²)";
  std::printf("[ elbow ] %zu free-flight segments: median vertical COM acceleration %.3f m/s^2 "
              "(effective dt %.5f s), median horizontal %.3f m/s^2\n",
              gz.size(), med_z, dt * std::sqrt(med_z / 9.81), med_h);
}

TEST(RealElbow, ModelExplainsFreeFlightBetterThanGravityAlone) {
  Segments s;
  if (!load(s))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("real elbow tosses", elbow_dir(), "elbow"));
  const Eigen::VectorXd pi = stacked_inertial(s.sys);
  const double dt = 0.0068;
  const int N = 5;
  Eigen::VectorXd se_model = Eigen::VectorXd::Zero(7), se_grav = se_model, d2 = se_model;
  int windows = 0, n2 = 0;
  for (size_t ti = 0; ti < s.set.tosses.size(); ++ti) {
    const SystemToss& t = s.set.tosses[ti];
    const auto X = [&](int k) { return Eigen::Map<const Eigen::VectorXd>(t.rows.data() + 15 * k, 15); };
    const auto& f = s.free[ti];
    const int T = t.steps(15);
    for (int k = 1; k + 1 < T; ++k) {
      if (f[static_cast<size_t>(k - 1)] && f[static_cast<size_t>(k)] && f[static_cast<size_t>(k + 1)]) {
        d2 += (X(k + 1).tail(7) - 2 * X(k).tail(7) + X(k - 1).tail(7)).array().square().matrix();
        ++n2;
      }
    }
    for (int k = 0; k + N < T; k += N) {
      bool ok = true;
      for (int j = k; j <= k + N; ++j) ok = ok && f[static_cast<size_t>(j)];
      if (!ok) continue;
      Eigen::VectorXd pred = Eigen::VectorXd::Zero(7);
      for (int j = k; j < k + N; ++j) pred += dt * free_acceleration(s.sys, pi, X(j).head(8), X(j).tail(7));
      const Eigen::VectorXd rec = X(k + N).tail(7) - X(k).tail(7);
      Eigen::VectorXd grav = Eigen::VectorXd::Zero(7);
      grav(5) = -9.81 * N * dt;
      se_model += (rec - pred).array().square().matrix();
      se_grav += (rec - grav).array().square().matrix();
      ++windows;
    }
  }
  ASSERT_GE(windows, 300);
  // white-noise velocity std from second differences: var = 6σ²
  const Eigen::VectorXd noise2 = 2 * d2 / n2 / 6;  // variance of a difference of two velocities
  const double model = (se_model.array() / windows / noise2.array()).sum();
  const double grav = (se_grav.array() / windows / noise2.array()).sum();
  std::printf("[ elbow ] %d windows of %d steps: normalized squared residual model %.2f, gravity alone %.2f "
              "(7 = white noise only)\n",
              windows, N, model, grav);
  EXPECT_LT(model, 0.97 * grav);
}

// The model's accelerations against the recorded ones, to the data's noise
// level, properly estimated (issue 16).
//
// Why the window residual above is 5x its "noise": that noise comes from
// one-step second differences under a white-noise assumption, but the files'
// velocities are not white: components are held or smoothed over frames (27 %
// of consecutive values repeat exactly), so the velocity noise is correlated
// over ~2 rows (measured from the data: lag-1 correlation ~0.6, lag-2 ~0.2,
// lag-3 ~0). One-step second differences then see 6C0 − 8C1 + 2C2 instead of
// 6C0 and underestimate the variance of a 5-step velocity change (2 C0) by ~4x.
// Estimated at a lag past the correlation (3 rows: var = 6C0 − 8C3 + 2C6 ≈ 6C0,
// model-free), the noise of a 5-step change is 2C0 = var / 3, and the nominal
// model's residual over the leading free-flight segments is 7.3 of 7 (white
// noise in all 7 coordinates); a toss bootstrap gives a spread of 0.33 for this
// number, so the bound below is 7 + 3 spreads = 8.0. Gravity halved gives 10.5
// (asserted: the check can fail). The true signal's share in the noise
// estimate (the model's own lag-3 second differences) is < 1 % (asserted < 5 %).
// What the data cannot separate at this window: gravity alone, the joint frozen,
// the joint axis flipped all stay within 0.2 of the model (printed): over 5 steps
// the Coriolis, gyroscopic and coupling terms change the velocities by much less
// than the noise, so this asserts a match to the noise, not that those terms are
// seen (the test above compares them over all free rows).
TEST(RealElbow, ModelMatchesLeadingFreeFlightToTheNoise) {
  Segments s;
  if (!load(s))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("real elbow tosses", elbow_dir(), "elbow"));
  const double dt = s.set.dt;
  const int N = 5, L = 3;
  MultibodySystem half = s.sys;
  half.gravity = 0.5 * s.sys.gravity;
  const Eigen::VectorXd pi = stacked_inertial(s.sys);
  // the joint frozen: base accelerations of the rigid assembly, θ̈ = 0
  const auto frozen = [&](const Eigen::VectorXd& q, const Eigen::VectorXd& v) {
    Kinematics k;
    kinematics(s.sys, q, v, k);
    Eigen::MatrixXd M;
    Eigen::VectorXd h;
    mass_matrix(k, pi, M);
    bias_force(k, pi, s.sys.gravity, h);
    Eigen::VectorXd a = Eigen::VectorXd::Zero(7);
    a.head(6) = -M.topLeftCorner(6, 6).llt().solve(h.head(6));
    return a;
  };
  enum { kModel, kHalf, kGrav, kFrozen, kCount };
  Eigen::VectorXd se[kCount], d2 = Eigen::VectorXd::Zero(7), d2_model = d2;
  for (auto& e : se) e = Eigen::VectorXd::Zero(7);
  int windows = 0, rows = 0;
  for (size_t ti = 0; ti < s.set.tosses.size(); ++ti) {
    const SystemToss& t = s.set.tosses[ti];
    const auto X = [&](int k) { return Eigen::Map<const Eigen::VectorXd>(t.rows.data() + 15 * k, 15); };
    int n = 0;  // the leading free-flight segment
    while (n < t.steps(15) && s.free[ti][static_cast<size_t>(n)]) ++n;
    if (n < 2 * L + 1) continue;
    // cumulative predicted velocity changes, dt Σ a(x_j), per model
    std::vector<Eigen::MatrixXd> C(kCount, Eigen::MatrixXd::Zero(7, n + 1));
    for (int j = 0; j < n; ++j) {
      const Eigen::VectorXd q = X(j).head(8), v = X(j).tail(7);
      Eigen::VectorXd a[kCount];
      a[kModel] = free_acceleration(s.sys, pi, q, v);
      a[kHalf] = free_acceleration(half, pi, q, v);
      a[kGrav] = Eigen::VectorXd::Zero(7);
      a[kGrav](5) = -s.sys.gravity;
      a[kFrozen] = frozen(q, v);
      for (int m = 0; m < kCount; ++m) C[static_cast<size_t>(m)].col(j + 1) = C[static_cast<size_t>(m)].col(j) + dt * a[m];
    }
    for (int k = L; k + L < n; ++k) {
      d2 += (X(k + L).tail(7) - 2 * X(k).tail(7) + X(k - L).tail(7)).array().square().matrix();
      const Eigen::MatrixXd& c = C[kModel];
      d2_model += (c.col(k + L) - 2 * c.col(k) + c.col(k - L)).array().square().matrix();
      ++rows;
    }
    for (int k = 0; k + N < n; ++k) {
      const Eigen::VectorXd rec = X(k + N).tail(7) - X(k).tail(7);
      for (int m = 0; m < kCount; ++m) {
        const Eigen::MatrixXd& c = C[static_cast<size_t>(m)];
        se[m] += (rec - (c.col(k + N) - c.col(k))).array().square().matrix();
      }
      ++windows;
    }
  }
  ASSERT_GE(windows, 1000) << "too few windows in the leading free-flight segments";
  ASSERT_GE(rows, 1000);
  const Eigen::ArrayXd noise2 = (d2 / rows / 3).array();  // 2 C0 per coordinate
  double r[kCount];
  for (int m = 0; m < kCount; ++m) r[m] = (se[m].array() / windows / noise2).sum();
  const double signal_share = (d2_model.array() / d2.array()).maxCoeff();
  std::printf("[ elbow ] leading free flight, %d windows of %d steps, noise 2C0 from lag-%d second "
              "differences (%d rows): normalized squared residual model %.2f, gravity alone %.2f, joint "
              "frozen %.2f, gravity halved %.2f (7 = noise only); signal share of the noise estimate "
              "%.4f\n",
              windows, N, L, rows, r[kModel], r[kGrav], r[kFrozen], r[kHalf], signal_share);
  EXPECT_LT(signal_share, 0.05) << "the lag-3 second differences are not noise-dominated";
  EXPECT_LT(r[kModel], 8.0) << "the model's velocity changes do not match the recorded ones to the noise";
  EXPECT_GT(r[kHalf], 8.0) << "the check cannot tell gravity halved from the data";
}

}  // namespace
}  // namespace impulse
