// The planning room's geometry and interpolation (host/planning/capsule.h, spline.h):
// capsule projections against a brute-force search over a dense sampling of the surface,
// every Jacobian against central finite differences, the capsule's mass properties against
// quadrature of the solid, Catmull-Rom (keyframes, weights, time derivatives), SLERP
// (endpoints, Eigen's slerp, angular velocity, keyframe derivatives), piecewise-constant
// values, and the misuse errors.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "host/planning/capsule.h"
#include "host/planning/spline.h"
#include "solvers/error.h"

#include "test_util.h"

namespace impulse {
namespace {

using testing::expect_error;

constexpr double kPi = 3.14159265358979323846;

Eigen::Quaterniond random_quaternion(std::mt19937_64& rng) {
  std::normal_distribution<double> nd(0.0, 1.0);
  return Eigen::Quaterniond(nd(rng), nd(rng), nd(rng), nd(rng)).normalized();
}

Eigen::Vector3d random_vector(std::mt19937_64& rng, double scale) {
  std::uniform_real_distribution<double> ud(-scale, scale);
  return Eigen::Vector3d(ud(rng), ud(rng), ud(rng));
}

double max_abs(const Eigen::MatrixXd& m) { return m.cwiseAbs().maxCoeff(); }

// ---- brute force on the capsule surface ---------------------------------------------

// Distance from a body-frame point to the axis segment.
double axis_distance(const Capsule& c, const Eigen::Vector3d& y) {
  const double s = std::clamp(y.x(), -c.half_length, c.half_length);
  return (y - Eigen::Vector3d(s, 0, 0)).norm();
}

// The surface by the arc length l ∈ [0, πR + 2H] along its meridian (from the −x pole over
// the −x hemisphere, the side, the +x hemisphere to the +x pole) and the azimuth φ.
Eigen::Vector3d surface_point(const Capsule& c, double l, double phi) {
  const double R = c.radius, H = c.half_length, quarter = 0.5 * kPi * R;
  double x, rho;
  if (l < quarter) {
    const double a = l / R;
    x = -H - R * std::cos(a);
    rho = R * std::sin(a);
  } else if (l < quarter + 2 * H) {
    x = -H + (l - quarter);
    rho = R;
  } else {
    const double a = (l - quarter - 2 * H) / R;
    x = H + R * std::sin(a);
    rho = R * std::cos(a);
  }
  return c.position + c.orientation * Eigen::Vector3d(x, rho * std::cos(phi), rho * std::sin(phi));
}

struct BruteForce {
  double best = std::numeric_limits<double>::infinity();  // least sampled distance
  double l = 0, phi = 0;
  double resolution = 0;  // bound on the distance from any surface point to the nearest sample
};

BruteForce sample_grid(const Capsule& c, const Eigen::Vector3d& x, double l0, double l1, int nl, double phi0,
                       double phi1, int nphi) {
  BruteForce b;
  const double dl = (l1 - l0) / nl, dphi = (phi1 - phi0) / nphi;
  for (int i = 0; i <= nl; ++i) {
    const double l = l0 + i * dl;
    for (int j = 0; j <= nphi; ++j) {
      const double phi = phi0 + j * dphi;
      const double dist = (surface_point(c, l, phi) - x).norm();
      if (dist < b.best) {
        b.best = dist;
        b.l = l;
        b.phi = phi;
      }
    }
  }
  b.resolution = 0.5 * std::hypot(dl, c.radius * dphi);
  return b;
}

// Coarse sampling of the whole surface, then a fine one around the best coarse sample.
struct BruteResult {
  BruteForce coarse, fine;
};
BruteResult brute_force(const Capsule& c, const Eigen::Vector3d& x) {
  const double L = kPi * c.radius + 2 * c.half_length;
  BruteResult r;
  r.coarse = sample_grid(c, x, 0.0, L, 400, 0.0, 2 * kPi, 400);
  const double dl = L / 400, dphi = 2 * kPi / 400;
  r.fine = sample_grid(c, x, std::max(0.0, r.coarse.l - 3 * dl), std::min(L, r.coarse.l + 3 * dl), 240,
                       r.coarse.phi - 3 * dphi, r.coarse.phi + 3 * dphi, 240);
  return r;
}

Capsule test_capsule(std::mt19937_64& rng) {
  Capsule c;
  c.radius = 0.3;
  c.half_length = 0.5;
  c.position = Eigen::Vector3d(0.3, -0.2, 0.5);
  c.orientation = random_quaternion(rng);
  return c;
}

void check_against_brute_force(const Capsule& c, const Eigen::Vector3d& x, const std::string& what) {
  const CapsuleProjection pr = project_to_capsule(c, x);
  const Eigen::Matrix3d rot = c.orientation.toRotationMatrix();
  const Eigen::Vector3d y = rot.transpose() * (x - c.position);
  const Eigen::Vector3d s_b = rot.transpose() * (pr.point - c.position);
  // on the surface, with the right sign and the right normal
  EXPECT_NEAR(axis_distance(c, s_b), c.radius, 1e-12) << what;
  const double gap = (x - pr.point).norm();
  EXPECT_NEAR(std::abs(pr.distance), gap, 1e-12) << what;
  EXPECT_EQ(pr.distance < 0, axis_distance(c, y) < c.radius) << what;
  EXPECT_NEAR(pr.normal.norm(), 1.0, 1e-12) << what;
  const double sa = std::clamp(s_b.x(), -c.half_length, c.half_length);
  const Eigen::Vector3d surface_normal = rot * (s_b - Eigen::Vector3d(sa, 0, 0)) / c.radius;
  EXPECT_LE((pr.normal - surface_normal).norm(), 1e-9) << what;
  if (gap > 1e-9) {
    const Eigen::Vector3d along = (pr.distance > 0 ? 1.0 : -1.0) * (x - pr.point) / gap;
    EXPECT_LE((pr.normal - along).norm(), 1e-9) << what;
  }
  // no sample is closer; the best samples are as close as the projection
  const BruteResult b = brute_force(c, x);
  EXPECT_GE(b.coarse.best, gap - 1e-12) << what;
  EXPECT_GE(b.fine.best, gap - 1e-12) << what;
  EXPECT_LE(b.coarse.best - gap, b.coarse.resolution) << what;
  EXPECT_LE(b.fine.best - gap, 1e-4) << what << " (fine resolution " << b.fine.resolution << ")";
}

// ---- capsule projection ---------------------------------------------------------------

TEST(PlanningCapsule, ProjectionMatchesBruteForce) {
  std::mt19937_64 rng(11);
  const Capsule c = test_capsule(rng);
  const Eigen::Matrix3d rot = c.orientation.toRotationMatrix();
  auto world = [&](double bx, double by, double bz) { return Eigen::Vector3d(c.position + rot * Eigen::Vector3d(bx, by, bz)); };
  // named body-frame cases: outside the side, inside the side, outside and inside each cap,
  // just outside / inside the surface, far away, on the axis beyond the caps, on a cap's rim plane
  const std::vector<std::pair<std::string, Eigen::Vector3d>> cases = {
      {"outside side", world(0.1, 0.5, -0.2)},
      {"inside side", world(-0.2, 0.05, 0.12)},
      {"outside +cap", world(0.75, 0.2, 0.1)},
      {"inside +cap", world(0.62, -0.07, 0.05)},
      {"outside -cap", world(-0.9, -0.1, 0.3)},
      {"inside -cap", world(-0.55, 0.1, -0.12)},
      {"just outside", world(0.2, 0.3 + 1e-3, 0.0)},
      {"just inside", world(-0.1, 0.0, -(0.3 - 1e-3))},
      {"far", world(3.0, -2.0, 1.5)},
      {"axis beyond +cap", world(1.2, 0.0, 0.0)},
      {"axis beyond -cap (inside)", world(-0.65, 0.0, 0.0)},
      {"rim plane", world(0.5, 0.21, -0.1)},
  };
  for (const auto& [name, x] : cases) check_against_brute_force(c, x, name);
  for (int k = 0; k < 16; ++k) {
    const Eigen::Vector3d x = c.position + random_vector(rng, 1.0);
    check_against_brute_force(c, x, "random " + std::to_string(k));
  }
}

TEST(PlanningCapsule, RegionsAndAxisCases) {
  std::mt19937_64 rng(12);
  const Capsule c = test_capsule(rng);
  const Eigen::Matrix3d rot = c.orientation.toRotationMatrix();
  auto world = [&](double bx, double by, double bz) { return Eigen::Vector3d(c.position + rot * Eigen::Vector3d(bx, by, bz)); };
  EXPECT_EQ(project_to_capsule(c, world(0.1, 1, 0)).region, CapsuleRegion::kSide);
  EXPECT_EQ(project_to_capsule(c, world(0.7, 1, 0)).region, CapsuleRegion::kCapPlus);
  EXPECT_EQ(project_to_capsule(c, world(-0.7, 1, 0)).region, CapsuleRegion::kCapMinus);

  // on the axis beyond a cap: not degenerate, the pole
  const CapsuleProjection pole = project_to_capsule(c, world(1.1, 0, 0));
  EXPECT_FALSE(pole.on_axis);
  EXPECT_NEAR(pole.distance, 0.3, 1e-12);
  EXPECT_LE((pole.point - world(0.8, 0, 0)).norm(), 1e-12);
  EXPECT_LE((pole.normal - rot.col(0)).norm(), 1e-12);

  // on the axis segment: the documented normal body +z, the point on the side, distance −R
  for (double bx : {-0.5, -0.2, 0.0, 0.37, 0.5}) {
    const CapsuleProjection pr = project_to_capsule(c, world(bx, 0, 0));
    EXPECT_TRUE(pr.on_axis) << bx;
    EXPECT_NEAR(pr.distance, -0.3, 1e-12) << bx;
    EXPECT_LE((pr.normal - rot.col(2)).norm(), 1e-12) << bx;
    EXPECT_LE((pr.point - world(bx, 0, 0.3)).norm(), 1e-12) << bx;
    EXPECT_LE((pr.ddistance_dx - pr.normal.transpose()).norm(), 1e-15) << bx;
    // the one-sided derivative: moving along +n keeps the point, along the axis slides it
    const double eps = 1e-6;
    const CapsuleProjection up = project_to_capsule(c, world(bx, 0, 0) + eps * pr.normal);
    EXPECT_LE((up.point - pr.point).norm(), 1e-9) << bx;
    EXPECT_LE((pr.dpoint_dx * pr.normal).norm(), 1e-12) << bx;
    if (std::abs(bx) < 0.5) {
      EXPECT_LE((pr.dpoint_dx * rot.col(0) - rot.col(0)).norm(), 1e-12) << bx;
    }
  }
  // a sphere (H = 0) projected from its centre
  Capsule sphere = c;
  sphere.half_length = 0;
  const CapsuleProjection centre = project_to_capsule(sphere, c.position);
  EXPECT_TRUE(centre.on_axis);
  EXPECT_NEAR(centre.distance, -0.3, 1e-12);
  EXPECT_LE((centre.point - (c.position + 0.3 * rot.col(2))).norm(), 1e-12);
  check_against_brute_force(sphere, c.position + Eigen::Vector3d(0.05, -0.1, 0.2), "sphere inside");
  check_against_brute_force(sphere, c.position + Eigen::Vector3d(0.5, 0.4, -0.2), "sphere outside");
}

// Central differences of (point, normal, distance) under a perturbation f(ε, j).
struct Fd {
  Eigen::Matrix3d point, normal;
  Eigen::RowVector3d distance;
};
Fd central(const std::function<CapsuleProjection(double, int)>& f, double eps) {
  Fd d;
  for (int j = 0; j < 3; ++j) {
    const CapsuleProjection a = f(eps, j), b = f(-eps, j);
    d.point.col(j) = (a.point - b.point) / (2 * eps);
    d.normal.col(j) = (a.normal - b.normal) / (2 * eps);
    d.distance(j) = (a.distance - b.distance) / (2 * eps);
  }
  return d;
}

TEST(PlanningCapsule, JacobiansMatchFiniteDifferences) {
  std::mt19937_64 rng(13);
  const double eps = 1e-6, tol = 2e-7;
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const Capsule c = test_capsule(rng);
    const Eigen::Vector3d x = c.position + random_vector(rng, 1.0);
    const CapsuleProjection pr = project_to_capsule(c, x);
    const Eigen::Vector3d y = c.orientation.conjugate() * (x - c.position);
    // away from the region planes and the axis (where the Jacobians are one-sided)
    if (std::abs(std::abs(y.x()) - c.half_length) < 1e-3 || std::abs(pr.distance + c.radius) < 1e-3) continue;
    ++checked;
    const std::string what = "trial " + std::to_string(trial);
    const Fd dx = central(
        [&](double e, int j) { return project_to_capsule(c, x + e * Eigen::Vector3d::Unit(j)); }, eps);
    EXPECT_LE(max_abs(dx.point - pr.dpoint_dx), tol) << what;
    EXPECT_LE(max_abs(dx.normal - pr.dnormal_dx), tol * 10) << what;
    EXPECT_LE(max_abs(dx.distance - pr.ddistance_dx), tol) << what;
    const Fd dp = central(
        [&](double e, int j) {
          Capsule moved = c;
          moved.position += e * Eigen::Vector3d::Unit(j);
          return project_to_capsule(moved, x);
        },
        eps);
    EXPECT_LE(max_abs(dp.point - pr.dpoint_dp), tol) << what;
    EXPECT_LE(max_abs(dp.normal - pr.dnormal_dp), tol * 10) << what;
    EXPECT_LE(max_abs(dp.distance - pr.ddistance_dp), tol) << what;
    const Fd dr = central(
        [&](double e, int j) {
          Capsule turned = c;
          turned.orientation = rotation_exp(e * Eigen::Vector3d::Unit(j)) * c.orientation;
          return project_to_capsule(turned, x);
        },
        eps);
    EXPECT_LE(max_abs(dr.point - pr.dpoint_drot), tol * 5) << what;
    EXPECT_LE(max_abs(dr.normal - pr.dnormal_drot), tol * 10) << what;
    EXPECT_LE(max_abs(dr.distance - pr.ddistance_drot), tol) << what;
  }
  EXPECT_GE(checked, 40);
}

TEST(PlanningGround, ProjectionAndJacobians) {
  const Eigen::Vector3d x(0.4, -1.2, 0.25);
  const GroundProjection g = project_to_ground(x);
  EXPECT_EQ(g.point, Eigen::Vector3d(0.4, -1.2, 0.0));
  EXPECT_EQ(g.normal, Eigen::Vector3d::UnitZ());
  EXPECT_EQ(g.distance, 0.25);
  EXPECT_EQ(project_to_ground(Eigen::Vector3d(1, 2, -0.5)).distance, -0.5);
  const double eps = 1e-6;
  for (int j = 0; j < 3; ++j) {
    const GroundProjection a = project_to_ground(x + eps * Eigen::Vector3d::Unit(j));
    const GroundProjection b = project_to_ground(x - eps * Eigen::Vector3d::Unit(j));
    EXPECT_LE(((a.point - b.point) / (2 * eps) - g.dpoint_dx.col(j)).norm(), 1e-9) << j;
    EXPECT_NEAR((a.distance - b.distance) / (2 * eps), g.ddistance_dx(j), 1e-9) << j;
  }
}

// ---- mass properties ------------------------------------------------------------------

TEST(PlanningCapsule, InertiaMatchesIntegration) {
  const double R = 0.3, H = 0.5, rho = 700.0;
  const LinkInertia li = capsule_inertia(R, H, rho);
  EXPECT_EQ(li.com, Eigen::Vector3d::Zero());
  EXPECT_EQ(li.inertia_com(0, 1), 0.0);
  EXPECT_EQ(li.inertia_com(0, 2), 0.0);
  EXPECT_EQ(li.inertia_com(1, 2), 0.0);

  // 1. slices along the axis (discs of radius ρ(x)), 5-point Gauss-Legendre on each piece:
  //    dm = ρ π ρ(x)² dx, dI_xx = dm ρ(x)²/2, dI_yy = dm (ρ(x)²/4 + x²)
  const double gx[5] = {-0.9061798459386640, -0.5384693101056831, 0.0, 0.5384693101056831, 0.9061798459386640};
  const double gw[5] = {0.2369268850561891, 0.4786286704993665, 0.5688888888888889, 0.4786286704993665,
                        0.2369268850561891};
  double m = 0, ixx = 0, iyy = 0;
  auto piece = [&](double a, double b) {
    for (int k = 0; k < 5; ++k) {
      const double x = 0.5 * (a + b) + 0.5 * (b - a) * gx[k];
      const double over = std::max(0.0, std::abs(x) - H);
      const double r2 = R * R - over * over;
      const double dm = rho * kPi * r2 * 0.5 * (b - a) * gw[k];
      m += dm;
      ixx += dm * r2 / 2;
      iyy += dm * (r2 / 4 + x * x);
    }
  };
  piece(-H - R, -H);
  piece(-H, H);
  piece(H, H + R);
  EXPECT_NEAR(li.mass, m, 1e-12 * m);
  EXPECT_NEAR(li.inertia_com(0, 0), ixx, 1e-12 * ixx);
  EXPECT_NEAR(li.inertia_com(1, 1), iyy, 1e-12 * iyy);
  EXPECT_NEAR(li.inertia_com(2, 2), iyy, 1e-12 * iyy);

  // 2. a midpoint grid over the bounding box: the whole tensor, to the grid's accuracy
  const int n = 120;
  const double lx = 2 * (H + R), ly = 2 * R;
  const double dx = lx / n, dy = ly / n, dv = dx * dy * dy;
  Eigen::Matrix3d I = Eigen::Matrix3d::Zero();
  double mg = 0;
  for (int i = 0; i < n; ++i) {
    const double x = -H - R + (i + 0.5) * dx;
    const double over = std::max(0.0, std::abs(x) - H);
    for (int j = 0; j < n; ++j) {
      const double y = -R + (j + 0.5) * dy;
      for (int k = 0; k < n; ++k) {
        const double z = -R + (k + 0.5) * dy;
        if (over * over + y * y + z * z > R * R) continue;
        const Eigen::Vector3d r(x, y, z);
        mg += rho * dv;
        I += rho * dv * (r.squaredNorm() * Eigen::Matrix3d::Identity() - r * r.transpose());
      }
    }
  }
  EXPECT_NEAR(li.mass, mg, 3e-3 * li.mass);
  EXPECT_LE(max_abs(li.inertia_com - I), 3e-3 * li.inertia_com.maxCoeff()) << I;

  // 3. the limits: a sphere (H = 0), and mass = ρ·volume
  const LinkInertia s = capsule_inertia(R, 0.0, rho);
  const double ms = rho * 4.0 / 3.0 * kPi * R * R * R;
  EXPECT_NEAR(s.mass, ms, 1e-12 * ms);
  EXPECT_LE(max_abs(s.inertia_com - 0.4 * ms * R * R * Eigen::Matrix3d::Identity()), 1e-12 * ms * R * R);
  EXPECT_NEAR(li.mass, rho * (kPi * R * R * 2 * H + 4.0 / 3.0 * kPi * R * R * R), 1e-12 * li.mass);
}

// ---- Catmull-Rom ----------------------------------------------------------------------

Eigen::MatrixXd random_keys(std::mt19937_64& rng, int d, int K) {
  std::uniform_real_distribution<double> ud(-1.0, 1.0);
  Eigen::MatrixXd keys(d, K);
  for (int k = 0; k < K; ++k)
    for (int i = 0; i < d; ++i) keys(i, k) = ud(rng);
  return keys;
}

TEST(PlanningCatmullRom, PassesThroughKeyframesAndWeightsReproduce) {
  std::mt19937_64 rng(21);
  for (int K : {2, 3, 4, 7}) {
    const double T = 1.7;
    const Eigen::MatrixXd keys = random_keys(rng, 3, K);
    for (int k = 0; k < K; ++k) {
      const double tk = k * T / (K - 1);
      const SplineSample s = catmull_rom(keys, T, tk);
      EXPECT_LE((s.value - keys.col(k)).norm(), 1e-14) << "K " << K << " k " << k;
      EXPECT_EQ(s.interval, std::min(k, K - 2)) << "K " << K << " k " << k;
    }
    std::uniform_real_distribution<double> ut(0.0, T);
    for (int trial = 0; trial < 50; ++trial) {
      const double t = trial == 0 ? 0.0 : trial == 1 ? T : ut(rng);
      const SplineSample s = catmull_rom(keys, T, t);
      const SplineWeights w = catmull_rom_weights(K, T, t);
      EXPECT_EQ(w.interval, s.interval);
      EXPECT_LE((keys * w.value - s.value).norm(), 1e-13) << t;
      EXPECT_LE((keys * w.velocity - s.velocity).norm(), 1e-12) << t;
      EXPECT_LE((keys * w.acceleration - s.acceleration).norm(), 1e-11) << t;
      // partition of unity; weights outside [first, last] vanish
      EXPECT_NEAR(w.value.sum(), 1.0, 1e-14);
      EXPECT_NEAR(w.velocity.sum(), 0.0, 1e-12);
      EXPECT_NEAR(w.acceleration.sum(), 0.0, 1e-10);
      for (int k = 0; k < K; ++k) {
        if (k >= w.first && k <= w.last) continue;
        EXPECT_EQ(w.value(k), 0.0);
        EXPECT_EQ(w.velocity(k), 0.0);
        EXPECT_EQ(w.acceleration(k), 0.0);
      }
      // ∂value/∂P_k is the weight: perturb one keyframe
      const int k = static_cast<int>(trial % K);
      Eigen::MatrixXd moved = keys;
      moved(1, k) += 0.25;
      EXPECT_NEAR(catmull_rom(moved, T, t).value(1) - s.value(1), 0.25 * w.value(k), 1e-13);
    }
  }
}

TEST(PlanningCatmullRom, LinearMotionIsExact) {
  // one-sided end tangents: keyframes on a line in time give that line, constant velocity
  const int K = 6;
  const double T = 2.5;
  Eigen::VectorXd a(2), v(2);
  a << 0.3, -1.0;
  v << 1.5, 0.4;
  Eigen::MatrixXd keys(2, K);
  for (int k = 0; k < K; ++k) keys.col(k) = a + v * (k * T / (K - 1));
  for (double t : {0.0, 0.1, 0.77, 1.25, 2.3, 2.5}) {
    const SplineSample s = catmull_rom(keys, T, t);
    EXPECT_LE((s.value - (a + v * t)).norm(), 1e-14) << t;
    EXPECT_LE((s.velocity - v).norm(), 1e-13) << t;
    EXPECT_LE(s.acceleration.norm(), 1e-12) << t;
  }
}

TEST(PlanningCatmullRom, DerivativesMatchFiniteDifferences) {
  std::mt19937_64 rng(22);
  const int K = 6;
  const double T = 2.0, h = T / (K - 1), eps = 1e-5;
  const Eigen::MatrixXd keys = random_keys(rng, 4, K);
  std::uniform_real_distribution<double> ut(0.0, T);
  int checked = 0;
  while (checked < 40) {
    const double t = ut(rng);
    const double frac = t / h - std::floor(t / h);
    if (frac < 1e-3 || frac > 1 - 1e-3) continue;  // the acceleration jumps at knots
    ++checked;
    const SplineSample s = catmull_rom(keys, T, t), a = catmull_rom(keys, T, t + eps), b = catmull_rom(keys, T, t - eps);
    EXPECT_LE(((a.value - b.value) / (2 * eps) - s.velocity).norm(), 1e-8) << t;
    EXPECT_LE(((a.velocity - b.velocity) / (2 * eps) - s.acceleration).norm(), 1e-7) << t;
  }
  // C¹ at the interior knots: value and velocity agree from both sides
  for (int k = 1; k < K - 1; ++k) {
    const double tk = k * h;
    const SplineSample l = catmull_rom(keys, T, tk - 1e-9), r = catmull_rom(keys, T, tk + 1e-9);
    EXPECT_LE((l.value - r.value).norm(), 1e-8) << k;
    EXPECT_LE((l.velocity - r.velocity).norm(), 1e-6) << k;
  }
}

// ---- SLERP ----------------------------------------------------------------------------

double angle_between(const Eigen::Quaterniond& a, const Eigen::Quaterniond& b) {
  return rotation_log(a * b.conjugate()).norm();
}

std::vector<Eigen::Quaterniond> random_key_quaternions(std::mt19937_64& rng, int K) {
  // consecutive keyframes within about 1.5 rad, with random signs
  std::vector<Eigen::Quaterniond> keys = {random_quaternion(rng)};
  std::uniform_int_distribution<int> coin(0, 1);
  for (int k = 1; k < K; ++k) {
    Eigen::Quaterniond q = rotation_exp(random_vector(rng, 0.85)) * keys.back();
    if (coin(rng)) q.coeffs() = -q.coeffs();
    keys.push_back(q);
  }
  return keys;
}

TEST(PlanningSlerp, EndpointsUnitNormAndEigenSlerp) {
  std::mt19937_64 rng(31);
  const int K = 5;
  const double T = 3.0, h = T / (K - 1);
  const auto keys = random_key_quaternions(rng, K);
  for (int k = 0; k < K; ++k) {
    const SlerpSample s = slerp_keyframes(keys, T, k * h);
    EXPECT_LE(angle_between(s.q, keys[k]), 1e-14) << k;
    if (k < K - 1) {  // u = 0: the keyframe itself
      EXPECT_LE((s.q.coeffs() - keys[k].coeffs()).norm(), 1e-15) << k;
    }
  }
  std::uniform_real_distribution<double> ut(0.0, T);
  for (int trial = 0; trial < 50; ++trial) {
    const double t = ut(rng);
    const SlerpSample s = slerp_keyframes(keys, T, t);
    EXPECT_NEAR(s.q.norm(), 1.0, 1e-14);
    const Eigen::Quaterniond eig = keys[s.interval].slerp(s.u, keys[s.interval + 1]);  // shortest arc too
    EXPECT_LE(angle_between(s.q, eig), 1e-12) << t;
    // the shortest arc: the rotation angle per interval is at most π
    EXPECT_LE(s.omega.norm() * h, kPi + 1e-12);
  }
  // negating a keyframe changes nothing but signs
  auto flipped = keys;
  flipped[2].coeffs() = -flipped[2].coeffs();
  for (double t : {0.3, 1.1, 1.9, 2.6}) {
    const SlerpSample a = slerp_keyframes(keys, T, t), b = slerp_keyframes(flipped, T, t);
    EXPECT_LE(angle_between(a.q, b.q), 1e-14) << t;
    EXPECT_LE((a.omega - b.omega).norm(), 1e-12) << t;
  }
}

TEST(PlanningSlerp, AngularVelocityMatchesFiniteDifferences) {
  std::mt19937_64 rng(32);
  const int K = 5;
  const double T = 3.0, h = T / (K - 1), eps = 1e-6;
  const auto keys = random_key_quaternions(rng, K);
  std::uniform_real_distribution<double> ut(0.0, T);
  int checked = 0;
  while (checked < 30) {
    const double t = ut(rng);
    const double frac = t / h - std::floor(t / h);
    if (frac < 1e-3 || frac > 1 - 1e-3) continue;
    ++checked;
    const SlerpSample s = slerp_keyframes(keys, T, t);
    const Eigen::Quaterniond a = slerp_keyframes(keys, T, t + eps).q, b = slerp_keyframes(keys, T, t - eps).q;
    const Eigen::Vector3d fd = rotation_log(a * b.conjugate()) / (2 * eps);  // world frame
    EXPECT_LE((fd - s.omega).norm(), 1e-8) << t;
    // the same through the coefficients: dq/dt = ½ (0, ω)⊗q
    const Eigen::Vector4d dq = (a.coeffs() - b.coeffs()) / (2 * eps);  // x, y, z, w
    const Eigen::Vector4d want = quaternion_rotation_jacobian(s.q) * s.omega;  // w, x, y, z
    EXPECT_LE((Eigen::Vector4d(dq(3), dq(0), dq(1), dq(2)) - want).norm(), 1e-8) << t;
  }
}

TEST(PlanningSlerp, KeyframeDerivativesMatchFiniteDifferences) {
  std::mt19937_64 rng(33);
  const int K = 4;
  const double T = 1.5, eps = 1e-6;
  std::uniform_real_distribution<double> ut(0.0, T);
  for (int trial = 0; trial < 24; ++trial) {
    const auto keys = random_key_quaternions(rng, K);
    const double t = trial == 0 ? 0.0 : trial == 1 ? T : ut(rng);
    const SlerpSample s = slerp_keyframes(keys, T, t);
    EXPECT_LE(max_abs(s.dq_dkey0 + s.dq_dkey1 - Eigen::Matrix3d::Identity()), 1e-12) << t;
    for (int which = 0; which < K; ++which) {
      Eigen::Matrix3d dq, dw;
      for (int j = 0; j < 3; ++j) {
        auto a = keys, b = keys;
        a[which] = rotation_exp(eps * Eigen::Vector3d::Unit(j)) * keys[which];
        b[which] = rotation_exp(-eps * Eigen::Vector3d::Unit(j)) * keys[which];
        const SlerpSample sa = slerp_keyframes(a, T, t), sb = slerp_keyframes(b, T, t);
        ASSERT_EQ(sa.interval, s.interval);
        dq.col(j) = rotation_log(sa.q * sb.q.conjugate()) / (2 * eps);
        dw.col(j) = (sa.omega - sb.omega) / (2 * eps);
      }
      Eigen::Matrix3d want_q = Eigen::Matrix3d::Zero(), want_w = Eigen::Matrix3d::Zero();
      if (which == s.interval) {
        want_q = s.dq_dkey0;
        want_w = s.domega_dkey0;
      } else if (which == s.interval + 1) {
        want_q = s.dq_dkey1;
        want_w = s.domega_dkey1;
      }
      EXPECT_LE(max_abs(dq - want_q), 1e-8) << "t " << t << " key " << which;
      EXPECT_LE(max_abs(dw - want_w), 1e-7) << "t " << t << " key " << which;
    }
  }
  // the 4×3 form: coefficients of exp(ε)⊗q against finite differences
  const Eigen::Quaterniond q = random_quaternion(rng);
  const Eigen::Matrix<double, 4, 3> J = quaternion_rotation_jacobian(q);
  for (int j = 0; j < 3; ++j) {
    const Eigen::Quaterniond a = rotation_exp(eps * Eigen::Vector3d::Unit(j)) * q;
    const Eigen::Quaterniond b = rotation_exp(-eps * Eigen::Vector3d::Unit(j)) * q;
    const Eigen::Vector4d d = (a.coeffs() - b.coeffs()) / (2 * eps);
    EXPECT_LE((Eigen::Vector4d(d(3), d(0), d(1), d(2)) - J.col(j)).norm(), 1e-9) << j;
  }
}

TEST(PlanningSlerp, RotationHelpers) {
  std::mt19937_64 rng(34);
  for (double scale : {1e-9, 1e-5, 1e-3, 0.3, 1.5}) {
    const Eigen::Vector3d v = random_vector(rng, scale);
    const Eigen::Quaterniond q = rotation_exp(v);
    const Eigen::AngleAxisd aa(v.norm(), v.normalized());
    EXPECT_LE((q.toRotationMatrix() - aa.toRotationMatrix()).norm(), 1e-15) << scale;
    EXPECT_LE((rotation_log(q) - v).norm(), 1e-15 + 1e-14 * v.norm()) << scale;
    EXPECT_LE(
        (rotation_log(Eigen::Quaterniond(-q.w(), -q.x(), -q.y(), -q.z())) - v).norm(),
        1e-15 + 1e-14 * v.norm())
        << scale;
    EXPECT_LE(max_abs(so3_left_jacobian(v) * so3_left_jacobian_inverse(v) - Eigen::Matrix3d::Identity()), 1e-13)
        << scale;
  }
  // J_l as the derivative of exp: exp(φ + dφ) ≈ exp(J_l(φ) dφ)⊗exp(φ)
  const Eigen::Vector3d phi(0.7, -1.1, 0.4);
  const double eps = 1e-6;
  Eigen::Matrix3d fd;
  for (int j = 0; j < 3; ++j) {
    const Eigen::Quaterniond a = rotation_exp(phi + eps * Eigen::Vector3d::Unit(j));
    const Eigen::Quaterniond b = rotation_exp(phi - eps * Eigen::Vector3d::Unit(j));
    fd.col(j) = rotation_log(a * b.conjugate()) / (2 * eps);
  }
  EXPECT_LE(max_abs(fd - so3_left_jacobian(phi)), 1e-9);
}

// ---- piecewise constant ---------------------------------------------------------------

TEST(PlanningPiecewiseConstant, IntervalIndex) {
  Eigen::MatrixXd c(2, 4);
  c << 0, 1, 2, 3, 10, 11, 12, 13;
  const double T = 2.0;  // K = 5 knots, h = 0.5
  const std::vector<std::pair<double, int>> cases = {{0.0, 0}, {0.2, 0}, {0.5, 1}, {0.4999, 0}, {0.9, 1},
                                                     {1.0, 2}, {1.7, 3}, {2.0, 3}, {3 * (2.0 / 4), 3}};
  for (const auto& [t, i] : cases) {
    const PiecewiseConstantSample s = piecewise_constant(c, T, t);
    EXPECT_EQ(s.interval, i) << t;
    EXPECT_EQ(s.value, c.col(i)) << t;
    EXPECT_EQ(interval_index(5, T, t), i) << t;
  }
  // a knot computed with rounding error still starts its interval
  const double T3 = 0.3;
  for (int k = 0; k < 10; ++k) {
    const double tk = k * (T3 / 10);
    EXPECT_EQ(interval_index(11, T3, tk), k) << k;
    EXPECT_EQ(locate_on_grid(11, T3, tk).u, 0.0) << k;
  }
  EXPECT_EQ(interval_index(11, T3, T3), 9);
  EXPECT_EQ(locate_on_grid(11, T3, T3).u, 1.0);
  EXPECT_DOUBLE_EQ(grid_step(11, T3), 0.03);
}

// ---- misuse ---------------------------------------------------------------------------

TEST(PlanningErrors, BadInputsNameTheItem) {
  Capsule c;
  c.radius = 0.1;
  c.half_length = 0.2;
  const Eigen::Vector3d x(1, 0, 0);
  for (double R : {0.0, -1.0, std::nan("")}) {
    Capsule bad = c;
    bad.radius = R;
    expect_error([&] { project_to_capsule(bad, x); }, {"capsule radius"});
    expect_error([&] { capsule_inertia(R, 0.2, 1000.0); }, {"capsule radius"});
  }
  {
    Capsule bad = c;
    bad.half_length = -0.1;
    expect_error([&] { project_to_capsule(bad, x); }, {"half_length", "-0.1"});
    bad = c;
    bad.orientation = Eigen::Quaterniond(1.0, 0.1, 0.0, 0.0);
    expect_error([&] { project_to_capsule(bad, x); }, {"orientation", "unit quaternion"});
    bad = c;
    bad.position.x() = std::numeric_limits<double>::infinity();
    expect_error([&] { project_to_capsule(bad, x); }, {"capsule position"});
  }
  expect_error([&] { project_to_capsule(c, Eigen::Vector3d(0, std::nan(""), 0)); }, {"point projected onto the capsule"});
  expect_error([&] { project_to_ground(Eigen::Vector3d(0, 0, std::nan(""))); }, {"point projected onto the ground"});
  expect_error([&] { capsule_inertia(0.1, -1.0, 1000.0); }, {"half_length"});
  expect_error([&] { capsule_inertia(0.1, 0.2, 0.0); }, {"density"});

  const Eigen::MatrixXd keys = Eigen::MatrixXd::Ones(3, 4);
  expect_error([&] { catmull_rom_weights(1, 1.0, 0.5); }, {"K must be >= 2", "got 1"});
  expect_error([&] { catmull_rom(Eigen::MatrixXd::Ones(3, 1), 1.0, 0.5); }, {"at least 2 keyframes", "got 1"});
  expect_error([&] { catmull_rom(keys, 0.0, 0.0); }, {"duration T", "got 0"});
  expect_error([&] { catmull_rom(keys, 1.0, -0.1); }, {"t = -0.1", "outside [0, T = 1]"});
  expect_error([&] { catmull_rom(keys, 1.0, 1.01); }, {"t = 1.01", "outside"});
  expect_error([&] { catmull_rom_weights(4, 1.0, std::nan("")); }, {"outside"});
  Eigen::MatrixXd bad_keys = keys;
  bad_keys(1, 2) = std::numeric_limits<double>::infinity();
  expect_error([&] { catmull_rom(bad_keys, 1.0, 0.5); }, {"finite"});
  // within 1e-12·T of the ends is clamped, not an error
  EXPECT_EQ(catmull_rom_weights(4, 1.0, 1.0 + 1e-14).interval, 2);
  EXPECT_EQ(catmull_rom_weights(4, 1.0, -1e-14).interval, 0);

  std::vector<Eigen::Quaterniond> q(3, Eigen::Quaterniond::Identity());
  q[2] = Eigen::Quaterniond(0.9, 0.0, 0.0, 0.0);
  expect_error([&] { slerp_keyframes(q, 1.0, 0.2); }, {"SLERP keyframe 2", "unit quaternion", "0.9"});
  expect_error([&] { slerp_keyframes({Eigen::Quaterniond::Identity()}, 1.0, 0.0); }, {"at least 2", "got 1"});
  q[2] = Eigen::Quaterniond::Identity();
  expect_error([&] { slerp_keyframes(q, 1.0, 2.0); }, {"outside"});
  expect_error([&] { piecewise_constant(Eigen::MatrixXd(2, 0), 1.0, 0.0); }, {"at least 1 interval", "got 0"});
  expect_error([&] { piecewise_constant(Eigen::MatrixXd::Ones(2, 3), 1.0, -1.0); }, {"outside"});
}

}  // namespace
}  // namespace impulse
