// Stewart-Trinkle step, rollouts, rollout metrics and the synthetic toss generator.
//
// Physical checks against closed forms (rest, Coulomb sliding, free flight), the
// LCP checked by recomputing its matrix from the contact frame with Eigen and its
// complementarity from the data, metrics on constructed offsets, and the
// generator's determinism and its round trip through a rollout.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "host/dynamics/polytope.h"
#include "host/dynamics/simulate.h"
#include "host/dynamics/synthetic.h"
#include "solvers/error.h"

namespace impulse {
namespace {

constexpr double kH = 0.0524;  // cube half-width, m
constexpr double kMu = 0.18;
constexpr double kPi = 3.14159265358979323846;

using MatR = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Reductions as plain loops: GCC 12 warns (-Wmaybe-uninitialized, a false
// positive) inside Eigen's AVX-512 reductions under -march=native.
double max_abs(const Eigen::MatrixXd& m) {
  double r = 0.0;
  for (Eigen::Index i = 0; i < m.size(); ++i) r = std::max(r, std::abs(m.data()[i]));
  return r;
}
double min_of(const Eigen::MatrixXd& m) {
  double r = std::numeric_limits<double>::infinity();
  for (Eigen::Index i = 0; i < m.size(); ++i) r = std::min(r, m.data()[i]);
  return r;
}
// a · b by plain loops (Eigen's dynamic-size product kernels trip the same warning)
Eigen::MatrixXd mul(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  Eigen::MatrixXd c = Eigen::MatrixXd::Zero(a.rows(), b.cols());
  for (Eigen::Index i = 0; i < a.rows(); ++i)
    for (Eigen::Index k = 0; k < a.cols(); ++k)
      for (Eigen::Index j = 0; j < b.cols(); ++j) c(i, j) += a(i, k) * b(k, j);
  return c;
}
double sum_of(const Eigen::MatrixXd& m) {
  double r = 0.0;
  for (Eigen::Index i = 0; i < m.size(); ++i) r += m.data()[i];
  return r;
}

PolytopeModel true_cube() { return PolytopeModel(PolytopeParams::cube(kH, kMu)); }

double lowest_corner(const State& x) {
  const Eigen::Matrix3d R = rotation(x);
  return x(2) - kH * (std::abs(R(2, 0)) + std::abs(R(2, 1)) + std::abs(R(2, 2)));
}

Eigen::Quaterniond random_quaternion(std::mt19937_64& rng) {
  std::normal_distribution<double> nd(0.0, 1.0);
  Eigen::Quaterniond q(nd(rng), nd(rng), nd(rng), nd(rng));
  return q.normalized();
}

// ---- the step -------------------------------------------------------------------------

TEST(SimulateTest, RestingCubeStaysAtRestAndCarriesItsWeight) {
  const BodyParams body;
  const SimOptions opt;
  const PolytopeModel cube = true_cube();
  Simulator sim(body, opt);
  const State x0 = make_state({0.1, -0.2, kH}, Eigen::Quaterniond::Identity(), {0, 0, 0}, {0, 0, 0});
  State x = x0;
  StepInfo info;
  for (int t = 0; t < 100; ++t) {
    x = sim.step(cube, x, &info);
    ASSERT_EQ(info.status, SolveStatus::kSolved) << "step " << t;
    EXPECT_EQ(info.active, 4) << "only the bottom face is in the LCP";
    // the normal impulses carry the weight over the step; no friction is needed
    EXPECT_NEAR(sum_of(sim.normal_impulses()), body.mass * body.gravity * opt.dt, 1e-3 * body.mass * body.gravity * opt.dt);
    EXPECT_LT(max_abs(sim.tangent_impulses()), 1e-10);
  }
  EXPECT_LT((position(x) - position(x0)).norm(), 1e-4);
  EXPECT_LT(velocity(x).norm(), 1e-6);
  EXPECT_LT(rotation_angle_between(orientation(x), orientation(x0)), 1e-6);
}

TEST(SimulateTest, SlidingCubeDeceleratesAtMuGAndStops) {
  const BodyParams body;
  const SimOptions opt;
  const PolytopeModel cube = true_cube();
  Simulator sim(body, opt);
  const double decel = kMu * body.gravity;
  // along a friction direction (x) and between two of them (30 degrees)
  for (const double heading : {0.0, kPi / 6}) {
    const Eigen::Vector3d u(std::cos(heading), std::sin(heading), 0.0);
    const double v0 = 1.0;
    State x = make_state({0, 0, kH}, Eigen::Quaterniond::Identity(), v0 * u, {0, 0, 0});
    const int n = 40;
    for (int t = 0; t < n; ++t) x = sim.step(cube, x, nullptr);
    const double dv = v0 - x.segment<3>(7).dot(u);
    // Coulomb: v0 − μ g n dt (the +0.001·I regularization adds about 2 %)
    EXPECT_NEAR(dv, decel * n * opt.dt, 0.05 * decel * n * opt.dt) << "heading " << heading;
    // no sideways drift along a friction direction; between two of them the
    // polyhedral cone's friction is up to 11.25 degrees off the velocity
    const double side = std::abs(x.segment<3>(7).dot(Eigen::Vector3d::UnitZ().cross(u)));
    EXPECT_LT(side, heading == 0.0 ? 1e-9 : 0.05 * v0) << "sideways drift";
    // it stops where Coulomb says and does not reverse (beyond the regularization's
    // compliance, r·β ~ 1e-6 m/s, on the step that sticks)
    double min_along = 1.0;
    for (int t = n; t < 140; ++t) {
      x = sim.step(cube, x, nullptr);
      min_along = std::min(min_along, x.segment<3>(7).dot(u));
    }
    EXPECT_GT(min_along, -1e-5);
    EXPECT_LT(velocity(x).norm(), 1e-6);
    const double travelled = x.segment<2>(0).norm();
    EXPECT_NEAR(travelled, v0 * v0 / (2 * decel), 0.05 * v0 * v0 / (2 * decel));
    EXPECT_LT(std::abs(lowest_corner(x)), 1e-6) << "no tipping";
  }
}

TEST(SimulateTest, FreeFlightMatchesTheParabola) {
  const BodyParams body;
  const SimOptions opt;
  const PolytopeModel cube = true_cube();
  Simulator sim(body, opt);
  const Eigen::Vector3d p0(0.1, 0.2, 1.5), v0(0.7, -0.4, 1.2), w0(3.0, -2.0, 5.0);
  const Eigen::Quaterniond q0 =
      Eigen::Quaterniond(Eigen::AngleAxisd(0.7, Eigen::Vector3d(1, -2, 0.5).normalized()));
  State x = make_state(p0, q0, v0, w0);
  const double dt = opt.dt, g = body.gravity;
  StepInfo info;
  for (int n = 1; n <= 60; ++n) {
    x = sim.step(cube, x, &info);
    EXPECT_EQ(info.active, 0);
    EXPECT_EQ(info.status, SolveStatus::kSolved);
    EXPECT_EQ(max_abs(sim.normal_impulses()), 0.0);
    // semi-implicit Euler: v_n = v0 − g n dt, p_n = p0 + v0 n dt − g dt² n(n+1)/2
    const Eigen::Vector3d v = v0 - Eigen::Vector3d(0, 0, g * n * dt);
    const Eigen::Vector3d p = p0 + v0 * n * dt - Eigen::Vector3d(0, 0, g * dt * dt * n * (n + 1) / 2);
    ASSERT_LT((x.segment<3>(7) - v).norm(), 1e-12) << "step " << n;
    ASSERT_LT((position(x) - p).norm(), 1e-12) << "step " << n;
    // isotropic inertia: no gyroscopic torque, ω constant
    ASSERT_LT((x.segment<3>(10) - w0).norm(), 1e-12);
  }
  ASSERT_GT(lowest_corner(x), 0.1);
}

TEST(SimulateTest, DroppedCubeDoesNotPenetrate) {
  const BodyParams body;
  const SimOptions opt;
  const PolytopeModel cube = true_cube();
  Simulator sim(body, opt);
  std::mt19937_64 rng(7);
  std::normal_distribution<double> nd(0.0, 1.0);
  double worst = 0.0;
  for (int trial = 0; trial < 6; ++trial) {
    const Eigen::Quaterniond q = random_quaternion(rng);
    State x = make_state({0, 0, 0}, q, {0.5 * nd(rng), 0.5 * nd(rng), -1.0},
                         {4 * nd(rng), 4 * nd(rng), 4 * nd(rng)});
    x(2) = 0.15 - lowest_corner(x);
    StepInfo info;
    for (int t = 0; t < 150; ++t) {
      x = sim.step(cube, x, &info);
      ASSERT_EQ(info.status, SolveStatus::kSolved) << "trial " << trial << " step " << t;
      worst = std::max(worst, -lowest_corner(x));
    }
    EXPECT_LT(std::abs(lowest_corner(x)), 1e-4) << "trial " << trial << ": ends on the table";
  }
  EXPECT_LT(worst, 1e-3) << "deepest penetration over the drops, m";
}

// The LCP matrix rebuilt with Eigen from the frame, for the contacts the step used.
void expect_lcp_matches_frame(const Simulator& sim, const SimOptions& opt, const BodyParams& body) {
  const ContactFrame& f = sim.frame();
  const std::vector<int>& act = sim.active_contacts();
  const int na = static_cast<int>(act.size()), nd = opt.friction_directions;
  const int m = (1 + nd) * na, n = (2 + nd) * na;
  const LcpView lcp = sim.last_lcp();
  ASSERT_EQ(lcp.n, n);
  if (n == 0) return;
  Eigen::MatrixXd J(m, 6);
  for (int a = 0; a < na; ++a) {
    J.row(a) = f.Jn.row(act[a]);
    for (int j = 0; j < nd; ++j) {
      const double th = 2 * kPi * j / nd;
      J.row(na + a * nd + j) = std::cos(th) * f.Jt.row(2 * act[a]) + std::sin(th) * f.Jt.row(2 * act[a] + 1);
    }
  }
  Eigen::MatrixXd E = Eigen::MatrixXd::Zero(nd * na, na);
  for (int a = 0; a < na; ++a) E.block(a * nd, a, nd, 1).setOnes();
  Eigen::MatrixXd M = Eigen::MatrixXd::Zero(n, n);
  M.topLeftCorner(m, m) = mul(mul(J, body.mass_matrix_inverse()), J.transpose());
  M.block(na, m, nd * na, na) = E;
  M.block(m, 0, na, na) = Eigen::MatrixXd::Identity(na, na);
  M.block(m, na, na, nd * na) = -E.transpose();
  M.diagonal().array() += opt.regularization;
  Eigen::VectorXd q = Eigen::VectorXd::Zero(n);
  q.head(m) = mul(J, sim.free_velocity());
  for (int a = 0; a < na; ++a) q(a) += f.phi(act[a]) / opt.dt;
  const Eigen::Map<const MatR> Ms(lcp.M, n, n);
  const Eigen::Map<const Eigen::VectorXd> qs(lcp.q, n);
  EXPECT_LT(max_abs(Ms - M), 1e-12 * (1 + max_abs(M)));
  EXPECT_LT(max_abs(qs - q), 1e-12 * (1 + max_abs(q)));
}

TEST(SimulateTest, LcpSolutionIsComplementaryNearTheTable) {
  const BodyParams body;
  const PolytopeModel cube = true_cube();
  std::mt19937_64 rng(11);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_real_distribution<double> ud(-0.001, 0.005);
  for (const bool drop : {true, false}) {
    SimOptions opt;
    opt.drop_separated = drop;
    Simulator sim(body, opt);
    int contacts_seen = 0;
    for (int trial = 0; trial < 40; ++trial) {
      // any orientation, or (every other trial) nearly face down so that several
      // corners are within millimetres of the table
      const Eigen::Quaterniond q0 =
          trial % 2 ? random_quaternion(rng)
                    : Eigen::Quaterniond(Eigen::AngleAxisd(0.01 * nd(rng), Eigen::Vector3d::UnitX()) *
                                         Eigen::AngleAxisd(0.01 * nd(rng), Eigen::Vector3d::UnitY()));
      State x = make_state({0.01 * nd(rng), 0.01 * nd(rng), 0}, q0,
                           {0.5 * nd(rng), 0.5 * nd(rng), -0.5 + 0.3 * nd(rng)},
                           {3 * nd(rng), 3 * nd(rng), 3 * nd(rng)});
      x(2) = ud(rng) - lowest_corner(x);  // lowest corner from 1 mm deep to 5 mm up
      StepInfo info;
      sim.step(cube, x, &info);
      ASSERT_EQ(info.status, SolveStatus::kSolved) << "trial " << trial;
      contacts_seen += info.active;
      expect_lcp_matches_frame(sim, opt, body);
      // complementarity recomputed from the data
      const LcpView lcp = sim.last_lcp();
      const int n = lcp.n;
      const Eigen::Map<const MatR> M(lcp.M, n, n);
      const Eigen::Map<const Eigen::VectorXd> q(lcp.q, n), z(lcp.z, n);
      const Eigen::VectorXd w = mul(M, z) + q;
      const double scale = 1.0 + max_abs(q);
      if (n > 0) {
        EXPECT_GE(min_of(z), -1e-12);
        EXPECT_GE(min_of(w), -1e-9 * scale) << "trial " << trial;
        EXPECT_LT(max_abs(z.cwiseProduct(w)), 1e-9 * scale) << "trial " << trial;
      }
      // ν' from the reported impulses, and no contact (left out or not) closing
      const ContactFrame& f = sim.frame();
      Vec6 impulse = Vec6::Zero();  // J_nᵀ λ_n + J_tᵀ λ_t
      for (int i = 0; i < f.contacts(); ++i)
        for (int c = 0; c < 6; ++c)
          impulse(c) += f.Jn(i, c) * sim.normal_impulses()(i) +
                        f.Jt(2 * i, c) * sim.tangent_impulses()(2 * i) +
                        f.Jt(2 * i + 1, c) * sim.tangent_impulses()(2 * i + 1);
      const Vec6 nu = sim.free_velocity() + body.mass_matrix_inverse() * impulse;
      EXPECT_LT((nu - sim.next_velocity()).norm(), 1e-10);
      // no contact closes beyond the regularization's compliance: w_n = gap + r λ_n ≥ 0
      // (left-out contacts have λ_n = 0 and must not close at all)
      const Eigen::VectorXd gap = f.phi / opt.dt + mul(f.Jn, sim.next_velocity()) +
                                  opt.regularization * sim.normal_impulses();
      EXPECT_GE(min_of(gap), -1e-9 * scale) << "trial " << trial;
      // friction inside the (lumped, μ = 1) polygonal cone, widened by r γ_i:
      // ‖λ_t,i‖ ≤ Σ_j β_ij ≤ λ_n,i + r γ_i
      std::vector<double> gamma(f.contacts(), 0.0);
      const std::vector<int>& act = sim.active_contacts();
      const int na = static_cast<int>(act.size());
      for (int a = 0; a < na; ++a) gamma[act[a]] = z(n - na + a);
      for (int i = 0; i < f.contacts(); ++i)
        EXPECT_LE(sim.tangent_impulses().segment<2>(2 * i).norm(),
                  sim.normal_impulses()(i) + opt.regularization * gamma[i] + 1e-12);
    }
    EXPECT_GT(contacts_seen, 60) << "the poses should make contact";
  }
}

TEST(SimulateTest, LeavingOutSeparatedContactsChangesNothingWithoutSliding) {
  // A resting cube: its top corners are separated and not sliding, so leaving them
  // out changes nothing; in free flight the full LCP's r·γ term gives the sliding
  // corners a phantom friction impulse, which leaving them out removes.
  const BodyParams body;
  const PolytopeModel cube = true_cube();
  SimOptions keep_all;
  keep_all.drop_separated = false;
  Simulator a(body, SimOptions{}), b(body, keep_all);
  StepInfo ia, ib;
  const State rest = make_state({0, 0, kH}, Eigen::Quaterniond::Identity(), {0, 0, 0}, {0, 0, 0});
  const State ya = a.step(cube, rest, &ia), yb = b.step(cube, rest, &ib);
  EXPECT_EQ(ia.active, 4);
  EXPECT_EQ(ib.active, 8);
  EXPECT_LT(max_abs(ya - yb), 1e-12);
  EXPECT_LT(max_abs(a.normal_impulses() - b.normal_impulses()), 1e-12);

  const State flying = make_state({0, 0, 0.5}, Eigen::Quaterniond::Identity(), {1, 0, 0}, {0, 0, 0});
  const State fa = a.step(cube, flying, &ia), fb = b.step(cube, flying, &ib);
  EXPECT_EQ(ia.active, 0);
  EXPECT_DOUBLE_EQ(fa(7), 1.0);
  EXPECT_LT(fb(7), 1.0 - 1e-5) << "the artifact this option exists to remove";
}

TEST(SimulateTest, FailedSolveReportsItsStatusAndKeepsAFiniteStep) {
  // a pivot cap far too small for a sliding landing: every attempt fails
  const BodyParams body;
  SimOptions opt;
  opt.lemke.max_pivots = 2;
  opt.regularization_retries = 1;
  const PolytopeModel cube = true_cube();
  Simulator sim(body, opt);
  const Eigen::Quaterniond tilt(Eigen::AngleAxisd(0.02, Eigen::Vector3d(1, 1, 0).normalized()));
  State x = make_state({0, 0, 0}, tilt, {0.4, -0.3, -0.3}, {1, -2, 0.5});
  x(2) = -0.0005 - lowest_corner(x) + x(2);
  StepInfo info;
  const State y = sim.step(cube, x, &info);
  EXPECT_EQ(info.status, SolveStatus::kMaxIterations);
  EXPECT_GE(info.solves, 2) << "one retry with 10x regularization";
  EXPECT_GT(info.active, 0);
  EXPECT_TRUE(y.allFinite());
  // the same step with the default cap solves
  Simulator ok(body, SimOptions{});
  ok.step(cube, x, &info);
  EXPECT_EQ(info.status, SolveStatus::kSolved);
  EXPECT_EQ(info.solves, 1);
}

TEST(SimulateTest, RejectsBadOptionsAndFrames) {
  const BodyParams body;
  SimOptions o;
  o.dt = 0;
  EXPECT_THROW(Simulator(body, o), Error);
  o = SimOptions{};
  o.friction_directions = 0;
  EXPECT_THROW(Simulator(body, o), Error);
  o = SimOptions{};
  o.restitution = 0.5;
  EXPECT_THROW(Simulator(body, o), Error);
  EXPECT_EQ(SimOptions{}.validate(), nullptr);

  struct BadModel : ContactModel {
    int contacts() const override { return 2; }
    void evaluate(const State&, ContactFrame& out) const override {
      out.phi = Eigen::VectorXd::Zero(2);
      out.Jn = Eigen::MatrixXd::Zero(2, 6);
      out.Jt = Eigen::MatrixXd::Zero(3, 6);  // should be 4 x 6
    }
  } bad;
  Simulator sim(body);
  const State x = make_state({0, 0, 1}, Eigen::Quaterniond::Identity(), {0, 0, 0}, {0, 0, 0});
  EXPECT_THROW(sim.step(bad, x), Error);

  // a NaN state is reported, not passed off as solved
  State nan_x = x;
  nan_x(7) = std::nan("");
  StepInfo info;
  sim.step(true_cube(), nan_x, &info);
  EXPECT_EQ(info.status, SolveStatus::kInvalidInput);
}

// ---- moving obstacles (ContactFrame::vn, vt) ------------------------------------------------

// a point-like body (one contact at its centre) on a plane that moves with velocity v:
// a conveyor (v along x) or an elevator (v along z)
struct MovingPlane : ContactModel {
  Eigen::Vector3d v = Eigen::Vector3d::Zero();
  double mu = 0.5, height = 0.0;  // the plane's height now
  int contacts() const override { return 1; }
  void evaluate(const State& x, ContactFrame& out) const override {
    out.resize(1, 6);
    out.phi(0) = position(x)(2) - height;
    out.Jn(0, 2) = 1;
    out.Jt(0, 0) = mu;
    out.Jt(1, 1) = mu;
    out.vn(0) = -v(2);  // the gap closes as the plane rises
    out.vt(0) = -mu * v(0);
    out.vt(1) = -mu * v(1);
  }
};

SimOptions fine_steps() {
  SimOptions opt;
  opt.dt = 0.002;
  return opt;
}
const State kAtRestAtOrigin = make_state({0, 0, 0}, Eigen::Quaterniond::Identity(), {0, 0, 0}, {0, 0, 0});

TEST(SimulateTest, AConveyorDragsABodyUpToItsSpeedAtMuG) {
  const BodyParams body;
  const SimOptions opt = fine_steps();
  Simulator sim(body, opt);
  MovingPlane belt;
  belt.v = Eigen::Vector3d(0.5, 0, 0);
  State x = kAtRestAtOrigin;
  // slipping: friction accelerates it at μ g until it reaches the belt's speed
  const double t_slip = 0.5 / (belt.mu * body.gravity);
  const int n_half = static_cast<int>(0.5 * t_slip / opt.dt);
  for (int k = 0; k < n_half; ++k) x = sim.step(belt, x);
  EXPECT_NEAR(velocity(x)(0), belt.mu * body.gravity * n_half * opt.dt, 0.02 * 0.5);
  for (int k = 0; k < 2 * n_half + 50; ++k) x = sim.step(belt, x);
  EXPECT_NEAR(velocity(x)(0), 0.5, 1e-3) << "then it rides along";
  EXPECT_NEAR(position(x)(2), 0.0, 1e-4);
  // a static plane (vn, vt zero) stops it instead
  MovingPlane still;
  for (int k = 0; k < 4 * n_half; ++k) x = sim.step(still, x);
  EXPECT_NEAR(velocity(x)(0), 0.0, 1e-3);
}

TEST(SimulateTest, AnElevatorLiftsABody) {
  const SimOptions opt = fine_steps();
  Simulator sim(BodyParams{}, opt);
  MovingPlane lift;
  lift.v = Eigen::Vector3d(0, 0, 0.2);
  State x = kAtRestAtOrigin;
  for (int k = 0; k < 250; ++k) {
    lift.height = 0.2 * k * opt.dt;  // where the plane is at the step's start; vn moves it on
    x = sim.step(lift, x);
  }
  EXPECT_NEAR(velocity(x)(2), 0.2, 1e-3);
  EXPECT_NEAR(position(x)(2), 0.2 * 250 * opt.dt, 1e-5) << "it rides on the plane, neither sinking nor flying off";
}

// ---- metrics -----------------------------------------------------------------------------

std::vector<StateRow> toy_trajectory(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::vector<StateRow> tr(n);
  for (int j = 0; j < n; ++j) {
    const State x = make_state({nd(rng), nd(rng), 0.2 + 0.01 * j}, random_quaternion(rng),
                               {nd(rng), nd(rng), nd(rng)}, {nd(rng), nd(rng), nd(rng)});
    tr[j] = to_row(x);
  }
  return tr;
}

TEST(MetricTest, IdenticalTrajectoriesScoreZero) {
  const std::vector<StateRow> tr = toy_trajectory(30, 1);
  const TrajectoryErrors e = trajectory_errors(tr, tr, kH);
  EXPECT_EQ(e.position_m, 0.0);
  EXPECT_LT(e.rotation_deg, 1e-12);
  EXPECT_EQ(e.penetration_m, 0.0);  // every pose is well above the table
  EXPECT_EQ(e.states, 30);
}

TEST(MetricTest, KnownOffsetsAreRecovered) {
  const std::vector<StateRow> truth = toy_trajectory(25, 2);
  // position offset of 5 mm, rotation of 10 degrees about a body axis
  std::vector<StateRow> pred = truth;
  const Eigen::Quaterniond turn(Eigen::AngleAxisd(10.0 * kPi / 180.0, Eigen::Vector3d(1, 2, 2) / 3.0));
  for (StateRow& r : pred) {
    r[0] += 0.003;
    r[1] -= 0.004;
    const Eigen::Quaterniond q = Eigen::Quaterniond(r[3], r[4], r[5], r[6]) * turn;
    r[3] = q.w(), r[4] = q.x(), r[5] = q.y(), r[6] = q.z();
  }
  const TrajectoryErrors e = trajectory_errors(pred, truth, kH);
  EXPECT_NEAR(e.position_m, 0.005, 1e-12);
  EXPECT_NEAR(e.rotation_deg, 10.0, 1e-9);

  // a cube resting on a face sunk by 2 mm, and tilted 45 degrees about x
  StateRow sunk = to_row(make_state({0, 0, kH - 0.002}, Eigen::Quaterniond::Identity(), {0, 0, 0}, {0, 0, 0}));
  EXPECT_NEAR(cube_penetration(sunk, kH), 0.002, 1e-15);
  const Eigen::Quaterniond tilt(Eigen::AngleAxisd(kPi / 4, Eigen::Vector3d::UnitX()));
  const StateRow on_edge = to_row(make_state({0, 0, kH}, tilt, {0, 0, 0}, {0, 0, 0}));
  EXPECT_NEAR(cube_penetration(on_edge, kH), (std::sqrt(2.0) - 1.0) * kH, 1e-15);
  EXPECT_EQ(cube_penetration(to_row(make_state({0, 0, kH + 1e-9}, Eigen::Quaterniond::Identity(),
                                               {0, 0, 0}, {0, 0, 0})), kH), 0.0);

  // aggregation: mean of per-toss means, percentages of the full width 2h
  std::vector<StateRow> a(10, sunk), b(30, sunk);
  for (StateRow& r : b) r[2] = kH - 0.004;
  std::vector<TrajectoryErrors> per{trajectory_errors(a, a, kH), trajectory_errors(b, b, kH)};
  per[0].position_m = 0.01;
  per[1].position_m = 0.03;
  per[0].rotation_deg = 2.0;
  per[1].rotation_deg = 4.0;
  const RolloutMetrics m = aggregate_metrics(per, kH);
  EXPECT_EQ(m.n_tosses, 2);
  EXPECT_NEAR(m.position_error_m, 0.02, 1e-15);
  EXPECT_NEAR(m.position_error_pct_width, 100.0 * 0.02 / (2 * kH), 1e-12);
  EXPECT_NEAR(m.rotation_error_deg, 3.0, 1e-15);
  EXPECT_NEAR(m.penetration_m, 0.003, 1e-15);  // (2 mm + 4 mm) / 2, not weighted by length
  EXPECT_NEAR(m.penetration_pct_width, 100.0 * 0.003 / (2 * kH), 1e-12);
  EXPECT_EQ(aggregate_metrics({}, kH).n_tosses, 0);
}

TEST(MetricTest, MismatchedTrajectoriesThrow) {
  const std::vector<StateRow> a = toy_trajectory(5, 3), b = toy_trajectory(6, 3);
  EXPECT_THROW(trajectory_errors(a, b, kH), Error);
  EXPECT_THROW(trajectory_errors({}, {}, kH), Error);
}

TEST(MetricTest, RolloutCsvHasOneRowPerState) {
  const std::vector<StateRow> truth = toy_trajectory(12, 4);
  std::vector<StateRow> pred = truth;
  for (StateRow& r : pred) r[2] += 0.01;
  const std::string path = ::testing::TempDir() + "impulse_rollout_test.csv";
  write_rollout_csv(path, pred, truth, kH, 0.01);
  std::ifstream in(path);
  ASSERT_TRUE(in.good());
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("t,px,py,pz,qw,qx,qy,qz,px_true,", 0), 0u);
  int rows = 0;
  std::vector<double> last;
  while (std::getline(in, line)) {
    ++rows;
    std::stringstream ss(line);
    std::string cell;
    last.clear();
    while (std::getline(ss, cell, ',')) last.push_back(std::stod(cell));
    ASSERT_EQ(last.size(), 18u);
  }
  EXPECT_EQ(rows, 12);
  EXPECT_NEAR(last[0], 0.11, 1e-12);
  EXPECT_NEAR(last[15], 0.01, 1e-8);  // position error
  EXPECT_NEAR(last[16], 0.0, 1e-6);   // angle error
  std::remove(path.c_str());
  EXPECT_THROW(write_rollout_csv(path, pred, toy_trajectory(3, 4), kH, 0.01), Error);
}

// ---- synthetic tosses and rollouts ------------------------------------------------------

SyntheticConfig small_config(int n, uint64_t seed, int threads) {
  SyntheticConfig c;
  c.n_tosses = n;
  c.seed = seed;
  c.threads = threads;
  return c;
}

bool same_sets(const TossSet& a, const TossSet& b) {
  if (a.tosses.size() != b.tosses.size()) return false;
  for (size_t i = 0; i < a.tosses.size(); ++i)
    if (a.tosses[i].states != b.tosses[i].states || a.tosses[i].name != b.tosses[i].name) return false;
  return true;
}

TEST(SyntheticTest, DeterministicForASeedWhateverTheThreads) {
  const TossSet a = generate_synthetic_tosses(small_config(6, 42, 1));
  const TossSet b = generate_synthetic_tosses(small_config(6, 42, 2));
  const TossSet c = generate_synthetic_tosses(small_config(6, 43, 2));
  EXPECT_TRUE(same_sets(a, b)) << "bit-identical for a seed";
  EXPECT_FALSE(same_sets(a, c));
  // a prefix of a larger set is the smaller set (toss j depends on (seed, j) only)
  const TossSet d = generate_synthetic_tosses(small_config(8, 42, 2));
  for (int j = 0; j < 6; ++j) EXPECT_EQ(a.tosses[j].states, d.tosses[j].states);
}

TEST(SyntheticTest, TossesStartInFlightAndComeToRestOnTheTable) {
  const SyntheticConfig cfg = small_config(12, 5, 2);
  const TossSet set = generate_synthetic_tosses(cfg);
  EXPECT_EQ(set.format, "impulse");
  EXPECT_EQ(set.meta.dt, cfg.dt);
  EXPECT_EQ(set.meta.mass, 0.37);
  EXPECT_EQ(set.meta.inertia[2], 0.00081);
  EXPECT_EQ(set.meta.half_width, kH);
  EXPECT_EQ(set.meta.mu, kMu);
  EXPECT_EQ(set.meta.gravity, 9.81);
  ASSERT_EQ(set.tosses.size(), 12u);
  for (const Toss& toss : set.tosses) {
    ASSERT_GE(static_cast<int>(toss.states.size()), cfg.min_states);
    ASSERT_LE(static_cast<int>(toss.states.size()), cfg.max_states);
    const State first = to_state(toss.states.front()), last = to_state(toss.states.back());
    EXPECT_GE(lowest_corner(first), cfg.height_min - 1e-12) << "toss " << toss.name;
    EXPECT_LE(lowest_corner(first), cfg.height_max + 1e-12);
    EXPECT_NEAR(orientation(first).norm(), 1.0, 1e-12);
    // at rest on the table
    EXPECT_LT(last.segment<3>(7).norm() + std::sqrt(3.0) * kH * last.segment<3>(10).norm(), 0.01)
        << "toss " << toss.name;
    EXPECT_LT(std::abs(lowest_corner(last)), 1e-3) << "toss " << toss.name;
    double worst = 0;
    for (const StateRow& r : toss.states) worst = std::max(worst, cube_penetration(r, kH));
    EXPECT_LT(worst, 1e-3) << "toss " << toss.name;
  }
}

TEST(SyntheticTest, PositionNoiseTouchesOnlyPositions) {
  SyntheticConfig cfg = small_config(3, 9, 1);
  const TossSet clean = generate_synthetic_tosses(cfg);
  cfg.position_noise_std = 0.001;
  const TossSet noisy = generate_synthetic_tosses(cfg);
  double sq = 0;
  int count = 0;
  for (size_t i = 0; i < clean.tosses.size(); ++i) {
    ASSERT_EQ(clean.tosses[i].states.size(), noisy.tosses[i].states.size());
    for (size_t t = 0; t < clean.tosses[i].states.size(); ++t) {
      const StateRow& a = clean.tosses[i].states[t];
      const StateRow& b = noisy.tosses[i].states[t];
      for (int c = 3; c < 13; ++c) ASSERT_EQ(a[c], b[c]);
      for (int c = 0; c < 3; ++c) sq += (a[c] - b[c]) * (a[c] - b[c]), ++count;
    }
  }
  EXPECT_NEAR(std::sqrt(sq / count), 0.001, 0.0002);
  cfg.max_states = 10;
  EXPECT_THROW(generate_synthetic_tosses(cfg), Error) << "max_states < min_states";
}

// The rollout path (evaluate_rollouts with the true model) replays the synthetic
// generator's tosses bit for bit: both run the same simulator, so this checks the
// plumbing and determinism of rollouts and metrics (zero error for a perfect model),
// not physics; the simulator's physics is checked against analytic motion above.
TEST(RolloutTest, TrueModelReplaysTheGeneratorsTossesBitForBit) {
  const SyntheticConfig cfg = small_config(4, 17, 2);
  const TossSet set = generate_synthetic_tosses(cfg);
  const PolytopeModel cube = true_cube();
  std::vector<TrajectoryErrors> per;
  std::vector<RolloutResult> rs;
  const RolloutMetrics m = evaluate_rollouts(cube, set, {}, sim_options_from_meta(set.meta), 2, &per, &rs);
  EXPECT_EQ(m.n_tosses, 4);
  EXPECT_EQ(m.position_error_m, 0.0);
  EXPECT_LT(m.rotation_error_deg, 1e-12);
  ASSERT_EQ(rs.size(), 4u);
  for (size_t j = 0; j < rs.size(); ++j) {
    EXPECT_EQ(rs[j].states, set.tosses[j].states) << "bit-identical, toss " << j;
    EXPECT_EQ(rs[j].failed_steps, 0);
  }
  EXPECT_LT(m.penetration_m, 1e-4);
}

TEST(RolloutTest, BatchMatchesSerialAndIgnoresThreadCount) {
  const TossSet set = generate_synthetic_tosses(small_config(5, 23, 2));
  // a model that differs from the truth (wider cube, more friction)
  const PolytopeModel other(PolytopeParams::cube(1.1 * kH, 0.3));
  const BodyParams body = body_from_meta(set.meta);
  const SimOptions opt = sim_options_from_meta(set.meta);
  const std::vector<int> idx{4, 1, 3};
  const std::vector<RolloutResult> one = rollout_tosses(other, body, opt, set.tosses, idx, 1);
  const std::vector<RolloutResult> two = rollout_tosses(other, body, opt, set.tosses, idx, 2);
  Simulator sim(body, opt);
  ASSERT_EQ(one.size(), 3u);
  for (size_t j = 0; j < idx.size(); ++j) {
    const Toss& toss = set.tosses[idx[j]];
    const RolloutResult serial = rollout(sim, other, toss.states.front(), static_cast<int>(toss.states.size()));
    EXPECT_EQ(one[j].states, serial.states);
    EXPECT_EQ(two[j].states, serial.states);
    EXPECT_EQ(serial.states.front(), toss.states.front());
    EXPECT_GT(trajectory_errors(serial.states, toss.states, kH).position_m, 1e-4) << "the models differ";
  }
  EXPECT_THROW(rollout_tosses(other, body, opt, set.tosses, {5}, 1), Error);

  // a model's misuse error inside the parallel loop reaches the caller
  struct BadModel : ContactModel {
    int contacts() const override { return 1; }
    void evaluate(const State&, ContactFrame& out) const override {
      out.phi = Eigen::VectorXd::Zero(1);
      out.Jn = Eigen::MatrixXd::Zero(1, 6);
      out.Jt = Eigen::MatrixXd::Zero(1, 6);  // should be 2 x 6
    }
  } bad;
  EXPECT_THROW(rollout_tosses(bad, body, opt, set.tosses, {}, 2), Error);
}

}  // namespace
}  // namespace impulse
