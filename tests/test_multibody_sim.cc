// The Anitescu multibody step (host/dynamics/multibody_sim.h) against
// independent expectations: exact free flight and the semi-implicit Euler
// parabola of the total centre of mass, resting / dropped / sliding cubes
// (μ g deceleration), the QP's KKT conditions recomputed with Eigen, the elbow
// coming to rest, the vortex and gravity model gaps, and the toss generator
// (determinism, npz round trip).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "host/dynamics/multibody.h"
#include "host/dynamics/multibody_sim.h"
#include "io/system_tosses.h"
#include "solvers/error.h"

#include "test_util.h"

namespace impulse {
namespace {

using testing::expect_error;

namespace fs = std::filesystem;
constexpr double kPi = 3.14159265358979323846;

Eigen::MatrixXd one(const Eigen::VectorXd& x) { return Eigen::MatrixXd(x); }

// x = [q; v] of sys at rest, identity orientation, base at height z, joints θ = 0
Eigen::VectorXd rest_state(const MultibodySystem& sys, double z) {
  Eigen::VectorXd x = Eigen::VectorXd::Zero(sys.width());
  x(0) = 1;
  x(6) = z;
  return x;
}

// total centre of mass (world)
Eigen::Vector3d total_com(const MultibodySystem& sys, const Eigen::VectorXd& pi, const Eigen::VectorXd& x) {
  Kinematics k;
  kinematics(sys, x.head(sys.nq()), k);
  Eigen::Vector3d s = Eigen::Vector3d::Zero();
  double m = 0;
  for (int l = 0; l < sys.num_links(); ++l) {
    const LinkKinematics& lk = k.links[static_cast<size_t>(l)];
    s += pi(10 * l) * lk.p + lk.R * pi.segment<3>(10 * l + 1);
    m += pi(10 * l);
  }
  return s / m;
}

Eigen::Vector3d com_velocity(const MultibodySystem& sys, const Eigen::VectorXd& pi, const Eigen::VectorXd& x) {
  Kinematics k;
  kinematics(sys, x.head(sys.nq()), k);
  Eigen::Vector3d s = Eigen::Vector3d::Zero();
  double m = 0;
  const Eigen::VectorXd v = x.tail(sys.nv());
  for (int l = 0; l < sys.num_links(); ++l) {
    const LinkKinematics& lk = k.links[static_cast<size_t>(l)];
    const Eigen::Vector3d rc = lk.R * pi.segment<3>(10 * l + 1);  // m R c
    const Eigen::Vector3d w = lk.Jw * v;
    s += pi(10 * l) * (lk.Jo * v) + w.cross(rc);
    m += pi(10 * l);
  }
  return s / m;
}

double min_phi(const MultibodySystem& sys, const MultibodyParams& p, const Eigen::VectorXd& x) {
  Kinematics k;
  kinematics(sys, x.head(sys.nq()), k);
  MultibodyContacts c;
  contact_frame(sys, k, p.vertices, c);
  return c.phi.minCoeff();
}

Eigen::VectorXd row(const MultibodyRollout::Trajectory& t, int i) { return t.row(i).transpose(); }

MultibodyStepOptions test_options() {
  MultibodyStepOptions o;
  o.batch.threads = 2;
  return o;
}

// ---- (i) free flight ---------------------------------------------------------------

TEST(MultibodySim, FreeFlightIsExactFreeVelocity) {
  const MultibodySystem sys = elbow_system();
  const MultibodyParams p = MultibodyParams::nominal(sys);
  Eigen::VectorXd x(sys.width());
  x << 0.8, 0.2, -0.3, 0.4, 0.1, -0.2, 5.0, 0.7, 1.5, -2.0, 0.8, 0.4, -0.3, 0.6, 3.0;
  x.head<4>().normalize();
  Eigen::MatrixXd Xn;
  MultibodyStepResult r;
  const MultibodyStepOptions o = test_options();
  multibody_step(sys, p, o, one(x), nullptr, Xn, &r);
  EXPECT_EQ(r.qp_count, 0);
  EXPECT_EQ(r.lambda.cwiseAbs().maxCoeff(), 0.0);
  const Eigen::VectorXd v_free = x.tail(sys.nv()) + o.dt * free_acceleration(sys, p.pi, x.head(sys.nq()), x.tail(sys.nv()));
  for (int i = 0; i < sys.nv(); ++i) EXPECT_EQ(Xn(sys.nq() + i, 0), v_free(i)) << i;
  Eigen::VectorXd qn(sys.nq());
  integrate_configuration(sys, x.head(sys.nq()), v_free, o.dt, qn);
  for (int i = 0; i < sys.nq(); ++i) EXPECT_EQ(Xn(i, 0), qn(i)) << i;
}

// The total COM of the tumbling elbow against the parabola p0 + u0 t − ½ g t² ẑ.
// Semi-implicit Euler moves a point mass to p0 + u0 t − ½ g t (t + dt) (positions
// use the updated velocity), an O(dt) gap of ½ g dt t; the articulated body adds
// O(dt) errors of its rotation (the COM is not a coordinate). Bound checked:
// ‖p_com(t) − parabola(t)‖ ≤ dt · t · (½ g + 2 m/s²) at t = 0.4 s, and halving dt
// at least roughly halves the error (first order).
TEST(MultibodySim, FreeFlightComFollowsParabola) {
  const MultibodySystem sys = elbow_system();
  const MultibodyParams p = MultibodyParams::nominal(sys);
  Eigen::VectorXd x(sys.width());
  x << 0.9, -0.1, 0.3, 0.2, 0.0, 0.0, 10.0, 0.5, 2.0, -1.5, 1.0, 0.5, -0.4, 1.2, 4.0;
  x.head<4>().normalize();
  const Eigen::Vector3d c0 = total_com(sys, p.pi, x), u0 = com_velocity(sys, p.pi, x);
  const double t_end = 0.4;
  double err[2];
  for (int pass = 0; pass < 2; ++pass) {
    MultibodyStepOptions o = test_options();
    o.dt = pass == 0 ? 0.004 : 0.002;
    const int steps = static_cast<int>(std::lround(t_end / o.dt));
    const MultibodyRollout r = multibody_rollout(sys, p, o, one(x), steps + 1);
    EXPECT_EQ(r.qp_states, 0);
    const Eigen::Vector3d c = total_com(sys, p.pi, row(r.trajectories[0], steps));
    const Eigen::Vector3d parabola = c0 + u0 * t_end - Eigen::Vector3d(0, 0, 0.5 * 9.81 * t_end * t_end);
    err[pass] = (c - parabola).norm();
    EXPECT_LE(err[pass], o.dt * t_end * (0.5 * 9.81 + 2.0)) << "dt " << o.dt;
  }
  EXPECT_GT(err[0] / err[1], 1.7);
  EXPECT_LT(err[0] / err[1], 2.3);
}

// The cube's COM is its frame origin: its motion is exactly the discrete parabola.
TEST(MultibodySim, FreeFlightCubeIsDiscreteParabola) {
  const MultibodySystem sys = cube_system();
  const MultibodyParams p = MultibodyParams::nominal(sys);
  Eigen::VectorXd x = rest_state(sys, 3.0);
  x.segment<3>(7) << 2.0, -1.0, 3.0;
  x.segment<3>(10) << 0.5, -0.3, 2.0;
  const MultibodyStepOptions o = test_options();
  const int steps = 60;
  const MultibodyRollout r = multibody_rollout(sys, p, o, one(x), steps + 1);
  const double t = steps * o.dt;
  const Eigen::VectorXd xe = row(r.trajectories[0], steps);
  EXPECT_NEAR(xe(4), 0.5 * t, 1e-12);
  EXPECT_NEAR(xe(5), -0.3 * t, 1e-12);
  EXPECT_NEAR(xe(6), 3.0 + 2.0 * t - 0.5 * 9.81 * t * (t + o.dt), 1e-12);
  EXPECT_NEAR(xe(12), 2.0 - 9.81 * t, 1e-12);
}

// ---- (ii) resting and dropped cube -------------------------------------------------

TEST(MultibodySim, CubeRestingStaysAtRest) {
  const MultibodySystem sys = cube_system();
  const MultibodyParams p = MultibodyParams::nominal(sys);
  const Eigen::VectorXd x = rest_state(sys, 0.5 * 0.1048);
  const MultibodyRollout r = multibody_rollout(sys, p, test_options(), one(x), 201);
  EXPECT_EQ(r.not_solved, 0);
  double drift = 0, rot = 0;
  for (int i = 0; i <= 200; ++i) {
    const Eigen::VectorXd xi = row(r.trajectories[0], i);
    drift = std::max(drift, (xi.segment<3>(4) - x.segment<3>(4)).norm());
    rot = std::max(rot, (xi.head<4>() - x.head<4>()).norm());
  }
  EXPECT_LE(drift, 1e-6);
  EXPECT_LE(rot, 1e-6);
}

TEST(MultibodySim, CubeDroppedLandsAndStops) {
  const MultibodySystem sys = cube_system();
  const MultibodyParams p = MultibodyParams::nominal(sys);
  Eigen::VectorXd x = rest_state(sys, 0.3);
  x.head<4>() = Eigen::Vector4d(0.9, 0.3, -0.2, 0.25).normalized();
  x.segment<3>(7) << 3.0, -2.0, 1.0;
  x.segment<3>(10) << 0.4, 0.2, -0.5;
  const MultibodyRollout r = multibody_rollout(sys, p, test_options(), one(x), 301);
  EXPECT_EQ(r.not_solved, 0);
  EXPECT_GT(r.qp_states, 0);
  for (int i = 200; i <= 300; ++i) {
    const Eigen::VectorXd xi = row(r.trajectories[0], i);
    EXPECT_GE(min_phi(sys, p, xi), -1e-3) << "state " << i;
  }
  const Eigen::VectorXd xe = row(r.trajectories[0], 300);
  EXPECT_LT(xe.tail(6).norm(), 1e-3);
  EXPECT_NEAR(min_phi(sys, p, xe), 0.0, 1e-3);
}

// ---- (iii) sliding -----------------------------------------------------------------

TEST(MultibodySim, SlidingCubeDeceleratesAtMuG) {
  const MultibodySystem sys = cube_system();
  const MultibodyParams p = MultibodyParams::nominal(sys);
  Eigen::VectorXd x = rest_state(sys, 0.5 * 0.1048);
  x(10) = 1.0;
  const MultibodyStepOptions o = test_options();
  const MultibodyRollout r = multibody_rollout(sys, p, o, one(x), 100);
  EXPECT_EQ(r.not_solved, 0);
  // velocity while sliding (steps 10 .. 60: v from ≈ 0.88 to ≈ 0.35 m/s): least squares slope
  const int i0 = 10, i1 = 60;
  double st = 0, sv = 0, stt = 0, stv = 0;
  const int nn = i1 - i0 + 1;
  for (int i = i0; i <= i1; ++i) {
    const double t = i * o.dt, v = r.trajectories[0](i, 10);
    st += t, sv += v, stt += t * t, stv += t * v;
  }
  const double slope = (nn * stv - st * sv) / (nn * stt - st * st);
  const double mug = sys.mu * 9.81;
  EXPECT_NEAR(-slope, mug, 0.03 * mug) << "deceleration " << -slope;
  // it stops (μ g: after about 1 / 1.77 = 0.57 s = 83 steps) and stays stopped
  EXPECT_LT(std::abs(r.trajectories[0](99, 10)), 1e-4);
  // no sideways motion; the height stays within Anitescu's hovering: the first
  // step lifts the cube at μ|v_t| (1.2 mm in one step), free flight carries it
  // on to about 2 mm, then it settles to about dt μ |v_t| while sliding
  EXPECT_LT(std::abs(r.trajectories[0](99, 5)), 1e-6);
  for (int i = 0; i < 100; ++i)
    EXPECT_LT(r.trajectories[0](i, 6) - 0.5 * 0.1048, 2 * o.dt * sys.mu * 1.0 + 1e-4) << "hovering at state " << i;
  EXPECT_NEAR(r.trajectories[0](99, 6), 0.5 * 0.1048, 1e-6);
}

// ---- (iv) KKT of the step's QP -------------------------------------------------------

class MultibodySimForms : public ::testing::TestWithParam<MultibodyQpForm> {};

TEST_P(MultibodySimForms, StepSatisfiesConeAndKkt) {
  const MultibodySystem sys = elbow_system();
  const MultibodyParams p = MultibodyParams::nominal(sys);
  MultibodyStepOptions o = test_options();
  o.form = GetParam();
  o.fallback = false;
  // states in contact: an elbow dropped with a spin, sampled over its impact
  Eigen::VectorXd x(sys.width());
  x << 0.9, 0.2, -0.3, 0.1, 0.0, 0.0, 0.12, 0.6, 2.0, -1.0, 1.5, 0.6, -0.3, -0.8, 3.0;
  x.head<4>().normalize();
  const MultibodyRollout roll = multibody_rollout(sys, p, o, one(x), 40);
  Eigen::MatrixXd X(sys.width(), 12);
  for (int j = 0; j < 12; ++j) X.col(j) = row(roll.trajectories[0], 4 + 3 * j);
  Eigen::MatrixXd Xn;
  MultibodyStepResult r;
  multibody_step(sys, p, o, X, nullptr, Xn, &r);
  EXPECT_GT(r.qp_count, 6);
  EXPECT_EQ(r.not_solved, 0);
  const int k = sys.contacts(), nv = sys.nv(), nq = sys.nq();
  for (int j = 0; j < X.cols(); ++j) {
    // independent assembly
    const Eigen::VectorXd q = X.col(j).head(nq), v = X.col(j).tail(nv);
    Kinematics kin;
    kinematics(sys, q, v, kin);
    Eigen::MatrixXd M;
    Eigen::VectorXd h;
    mass_matrix(kin, p.pi, M);
    bias_force(kin, p.pi, p.gravity, h);
    MultibodyContacts c;
    contact_frame(sys, kin, p.vertices, c);
    Eigen::MatrixXd Jt(3 * k, nv);
    Eigen::VectorXd bt = Eigen::VectorXd::Zero(3 * k);
    for (int i = 0; i < k; ++i) {
      Jt.row(3 * i) = c.Jn.row(i);
      Jt.row(3 * i + 1) = p.mu * c.Jt.row(2 * i);
      Jt.row(3 * i + 2) = p.mu * c.Jt.row(2 * i + 1);
      bt(3 * i) = c.phi(i) / o.dt;
    }
    const Eigen::VectorXd vstar = v - o.dt * M.ldlt().solve(h);
    EXPECT_LT((vstar - r.v_free.col(j)).norm(), 1e-12);
    const Eigen::VectorXd lam = r.lambda.col(j);
    const Eigen::VectorXd vn = Xn.col(j).tail(nv);
    // stationarity of the primal: M (v' − v*) = J̃ᵀ λ
    EXPECT_LT((M * (vn - vstar) - Jt.transpose() * lam).norm(), 1e-10 * (1 + lam.norm())) << "state " << j;
    const Eigen::VectorXd w = Jt * vn + bt;
    const double scale = 1 + w.lpNorm<Eigen::Infinity>();
    double comp = 0, lam_cone = 0, w_cone = 0;
    for (int i = 0; i < k; ++i) {
      lam_cone = std::max(lam_cone, lam.segment<2>(3 * i + 1).norm() - lam(3 * i));
      w_cone = std::max(w_cone, w.segment<2>(3 * i + 1).norm() - w(3 * i));
      comp += lam.segment<3>(3 * i).dot(w.segment<3>(3 * i));
    }
    EXPECT_LE(lam_cone, 1e-15 * (1 + lam.norm())) << "λ outside K, state " << j;  // projected: to rounding
    EXPECT_LE(w_cone, 1e-6 * scale) << "J̃v' + b̃ outside K, state " << j;
    // λᵀw against the size of the terms (λ ~ 0.01 N s, w ~ 1 m/s)
    EXPECT_LE(std::abs(comp), 1e-7 * (1 + lam.norm()) * scale) << "complementarity, state " << j;
    if (!r.used_qp[static_cast<size_t>(j)]) {
      EXPECT_EQ(lam.norm(), 0.0);
    }
    // strong duality: primal ½‖v'−v*‖²_M equals −(dual objective)
    const Eigen::MatrixXd G = Jt * M.ldlt().solve(Jt.transpose());
    const double dual = 0.5 * lam.dot(G * lam) + lam.dot(Jt * vstar + bt);
    const double primal = 0.5 * (vn - vstar).dot(M * (vn - vstar));
    EXPECT_NEAR(primal, -dual, 1e-7 * (1 + primal)) << "state " << j;
  }
}

// the resting cube in both forms, without the fallback
TEST_P(MultibodySimForms, CubeRestingStaysAtRest) {
  const MultibodySystem sys = cube_system();
  const MultibodyParams p = MultibodyParams::nominal(sys);
  MultibodyStepOptions o = test_options();
  o.form = GetParam();
  o.fallback = false;
  const Eigen::VectorXd x = rest_state(sys, 0.5 * 0.1048);
  const MultibodyRollout r = multibody_rollout(sys, p, o, one(x), 201);
  EXPECT_EQ(r.not_solved, 0);
  EXPECT_EQ(r.fallbacks, 0);
  EXPECT_LE((row(r.trajectories[0], 200) - x).norm(), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Forms, MultibodySimForms,
                         ::testing::Values(MultibodyQpForm::kImpulses, MultibodyQpForm::kVelocities),
                         [](const ::testing::TestParamInfo<MultibodyQpForm>& i) {
                           return std::string(i.param == MultibodyQpForm::kImpulses ? "Impulses" : "Velocities");
                         });

// ---- (v) the elbow -----------------------------------------------------------------

// the elbow tumbling 0.3 m above the table, its joint swinging
Eigen::VectorXd tumbling_elbow(const MultibodySystem& sys) {
  Eigen::VectorXd x(sys.width());
  x << 0.8, 0.3, 0.4, -0.2, 0.05, -0.02, 0.3, 1.0, 2.5, -1.5, 2.0, 0.5, 0.3, -0.5, 4.0;
  x.head<4>().normalize();
  return x;
}

TEST(MultibodySim, ElbowDroppedComesToRest) {
  const MultibodySystem sys = elbow_system();
  const MultibodyParams p = MultibodyParams::nominal(sys);
  const Eigen::VectorXd x = tumbling_elbow(sys);
  const MultibodyRollout r = multibody_rollout(sys, p, test_options(), one(x), 401);
  EXPECT_EQ(r.not_solved, 0);
  for (int i = 0; i <= 400; ++i) {
    ASSERT_TRUE(r.trajectories[0].row(i).allFinite()) << "state " << i;
    ASSERT_LT(std::abs(r.trajectories[0](i, 7)), 20.0) << "joint angle at state " << i;
  }
  const Eigen::VectorXd xe = row(r.trajectories[0], 400);
  EXPECT_LT(xe.tail(sys.nv()).norm(), 1e-3);
  EXPECT_GE(min_phi(sys, p, xe), -1e-3);
  EXPECT_LT(min_phi(sys, p, xe), 1e-3);
}

// A state that blows up (here: a joint spun past kDivergedSpeed by the first
// step) is marked where it diverged and held at its last valid state; the
// other tosses of the batch are simulated exactly as on their own.
TEST(MultibodySim, DivergedStateIsHeldAndTheBatchGoesOn) {
  const MultibodySystem sys = elbow_system();
  const MultibodyParams p = MultibodyParams::nominal(sys);
  const Eigen::VectorXd good = tumbling_elbow(sys);
  Eigen::VectorXd bad = good;
  bad(14) = 0.999 * kDivergedSpeed;  // valid now; the joint's Coriolis coupling pushes it over
  ASSERT_TRUE(rollout_state_is_valid(sys, bad));
  Eigen::MatrixXd X0(sys.width(), 2);
  X0 << bad, good;
  const MultibodyRollout both = multibody_rollout(sys, p, test_options(), X0, 31);
  const MultibodyRollout alone = multibody_rollout(sys, p, test_options(), one(good), 31);
  ASSERT_EQ(both.diverged_at.size(), 2u);
  EXPECT_EQ(both.diverged_at[1], -1);
  EXPECT_EQ(alone.diverged_at[0], -1);
  EXPECT_EQ(both.trajectories[1], alone.trajectories[0]);
  const int d = both.diverged_at[0];
  ASSERT_GE(d, 1) << "the spinning toss did not diverge";
  for (int k = d; k <= 30; ++k) EXPECT_EQ(both.trajectories[0].row(k), both.trajectories[0].row(d - 1)) << "row " << k;
  for (int k = 0; k < d; ++k) EXPECT_TRUE(rollout_state_is_valid(sys, row(both.trajectories[0], k))) << "row " << k;
  // what is not valid: a non-finite entry, a zero quaternion, a speed at the bound
  Eigen::VectorXd x = good;
  x(5) = NAN;
  EXPECT_FALSE(rollout_state_is_valid(sys, x));
  x = good;
  x.head<4>().setZero();
  EXPECT_FALSE(rollout_state_is_valid(sys, x));
  x = good;
  x(9) = -kDivergedSpeed;
  EXPECT_FALSE(rollout_state_is_valid(sys, x));
}

// ---- (vi) model gaps ---------------------------------------------------------------

TEST(MultibodySim, VortexPullsAndSwirls) {
  const MultibodySystem sys = cube_system();
  const MultibodyParams p = MultibodyParams::nominal(sys);
  const double kr = 10, kt = 20;
  const Eigen::VectorXd x = [&] {
    Eigen::VectorXd y = rest_state(sys, 5.0);
    y(4) = 0.1;
    return y;
  }();
  // the cube: a_ext's translational part is a(p) itself
  const ExternalAcceleration f = vortex_acceleration(sys, p.pi, kr, kt);
  Eigen::VectorXd a = Eigen::VectorXd::Zero(sys.nv());
  f(0, 0, x, a);
  EXPECT_NEAR(a(3), -kr * 0.1, 1e-12);
  EXPECT_NEAR(a(4), kt * 0.1, 1e-12);
  EXPECT_NEAR(a(5), 0.0, 1e-12);
  EXPECT_LT(a.head<3>().norm(), 1e-12);
  const MultibodyRollout r = multibody_rollout(sys, p, test_options(), one(x), 31, f);
  const Eigen::VectorXd xe = row(r.trajectories[0], 30);
  EXPECT_GT(xe(5), 0.005);                         // counter-clockwise drift (+y at +x)
  EXPECT_LT(std::hypot(xe(4), xe(5)), 0.1);        // pulled in
  EXPECT_GT(xe(4) * xe(11) - xe(5) * xe(10), 0.0); // angular momentum about z grew from 0
  // the elbow: the generalized force equals the numerical gradient of the
  // field's potential only for k_t = 0; with the swirl, check τ against the
  // link COM velocities: τ·v = Σ m a(p_com)·v_com for any v.
  const MultibodySystem el = elbow_system();
  const Eigen::VectorXd pe = stacked_inertial(el);
  Eigen::VectorXd xq(el.nq());
  xq << 0.7, 0.1, 0.5, -0.3, 0.12, -0.05, 0.3, 0.9;
  xq.head<4>().normalize();
  Kinematics kin;
  kinematics(el, xq, kin);
  Eigen::VectorXd tau;
  vortex_generalized_force(kin, pe, kr, kt, tau);
  const Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(el.nv(), -1.0, 2.0);
  double power = 0;
  const double eps = 1e-7;
  Eigen::VectorXd xq2(el.nq());
  integrate_configuration(el, xq, v, eps, xq2);
  for (int l = 0; l < el.num_links(); ++l) {
    // COM velocity by a finite difference of the COM position
    Kinematics k2;
    kinematics(el, xq2, k2);
    const auto& L1 = kin.links[static_cast<size_t>(l)];
    const auto& L2 = k2.links[static_cast<size_t>(l)];
    const Eigen::Vector3d c = pe.segment<3>(10 * l + 1) / pe(10 * l);
    const Eigen::Vector3d p1 = L1.p + L1.R * c, p2 = L2.p + L2.R * c;
    const Eigen::Vector3d acc(-kr * p1.x() - kt * p1.y(), -kr * p1.y() + kt * p1.x(), 0);
    power += pe(10 * l) * acc.dot((p2 - p1) / eps);
  }
  EXPECT_NEAR(tau.dot(v), power, 1e-5 * (1 + std::abs(power)));
}

TEST(MultibodySim, GravityFactorScalesTheFall) {
  const MultibodySystem sys = elbow_system();
  MultibodyParams p = MultibodyParams::nominal(sys);
  const Eigen::VectorXd x = rest_state(sys, 1.0);
  double z[3];
  for (int i = 0; i < 3; ++i) {
    p.gravity = i * 9.81;  // f = 0, 1, 2
    const MultibodyRollout r = multibody_rollout(sys, p, test_options(), one(x), 41);
    z[i] = r.trajectories[0](40, 6);
  }
  EXPECT_EQ(z[0], 1.0);  // f = 0: no fall at all
  const double t = 40 * 0.0068;
  EXPECT_NEAR(1.0 - z[1], 0.5 * 9.81 * t * (t + 0.0068), 1e-9);
  EXPECT_NEAR(1.0 - z[2], 2 * (1.0 - z[1]), 1e-9);
}

// The generated vortex tosses move against the plain ones counter-clockwise, by
// centimetres; the f = 0 tosses never fall (v_z < 0 drawn so that they land).
TEST(MultibodySim, GeneratorModelGaps) {
  SyntheticSystemOptions o;
  o.system = "elbow";
  o.tosses = 16;
  o.seed = 7;
  o.step.batch.threads = 2;
  const SystemTossSet plain = generate_system_tosses(o);
  SyntheticSystemOptions ov = o;
  ov.gap = ModelGap::kVortex;
  const SystemTossSet vortex = generate_system_tosses(ov);
  const int W = plain.width, T = o.states;
  std::vector<double> moved;
  double swirl = 0;
  for (int b = 0; b < o.tosses; ++b) {
    const double* a = &plain.tosses[static_cast<size_t>(b)].rows[static_cast<size_t>(T - 1) * W];
    const double* v = &vortex.tosses[static_cast<size_t>(b)].rows[static_cast<size_t>(T - 1) * W];
    // same initial states
    EXPECT_EQ(plain.tosses[static_cast<size_t>(b)].rows[4], vortex.tosses[static_cast<size_t>(b)].rows[4]);
    moved.push_back(std::hypot(v[4] - a[4], v[5] - a[5]));
    // the angle swept about the z axis, vortex minus plain
    swirl += std::remainder(std::atan2(v[5], v[4]) - std::atan2(a[5], a[4]), 2 * kPi);
  }
  std::sort(moved.begin(), moved.end());
  EXPECT_GT(moved[moved.size() / 2], 0.02) << "median final-position change (m)";
  EXPECT_GT(swirl, 0.0) << "vortex tosses should end counter-clockwise of the plain ones";

  SyntheticSystemOptions og = o;
  og.gap = ModelGap::kGravity;
  og.gravity_factor = 0.0;
  const SystemTossSet g0 = generate_system_tosses(og);
  for (const SystemToss& t : g0.tosses) EXPECT_LT(t.rows[8 + 5], 0.0);  // v_z drawn < 0 so that it lands
  og.gravity_factor = 2.5;
  expect_error([&] { generate_system_tosses(og); }, "gravity_factor");
}

// ---- (vii) the generator -----------------------------------------------------------

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

TEST(MultibodySim, GeneratorIsDeterministicAndRoundTrips) {
  const fs::path dir = fs::temp_directory_path() / ("impulse_mbsim_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const std::string name : {"cube", "asymmetric", "elbow"}) {
    SyntheticSystemOptions o;
    o.system = name;
    o.tosses = 6;
    o.seed = 42;
    o.step.batch.threads = 2;
    SyntheticSystemReport rep;
    const SystemTossSet a = generate_system_tosses(o, &rep);
    const SystemTossSet b = generate_system_tosses(o);
    EXPECT_EQ(rep.not_solved, 0) << name;
    EXPECT_GT(rep.qp_states, 0) << name;
    const std::string pa = (dir / (name + "_a.npz")).string(), pb = (dir / (name + "_b.npz")).string();
    write_system_tosses(pa, a);
    write_system_tosses(pb, b);
    EXPECT_EQ(read_bytes(pa), read_bytes(pb)) << name;
    const SystemTossSet l = load_system_tosses(pa, a.width);
    ASSERT_EQ(l.tosses.size(), a.tosses.size());
    EXPECT_EQ(l.width, a.width);
    EXPECT_EQ(l.dt, a.dt);
    for (size_t t = 0; t < a.tosses.size(); ++t) {
      EXPECT_EQ(l.tosses[t].rows, a.tosses[t].rows) << name << " toss " << t;
      EXPECT_EQ(l.tosses[t].name, a.tosses[t].name);
      EXPECT_EQ(a.tosses[t].steps(a.width), o.states);
    }
    // a different seed gives different tosses
    o.seed = 43;
    EXPECT_NE(generate_system_tosses(o).tosses[0].rows, a.tosses[0].rows) << name;
    // every toss lands: its lowest vertex reaches the ground
    const MultibodySystem sys = system_by_name(name);
    const MultibodyParams p = MultibodyParams::nominal(sys);
    for (const SystemToss& t : a.tosses) {
      const Eigen::Map<const Eigen::VectorXd> last(&t.rows[static_cast<size_t>(o.states - 1) * a.width], a.width);
      EXPECT_LT(min_phi(sys, p, last), 2e-3) << name << " toss " << t.name;
      EXPECT_GT(min_phi(sys, p, last), -1e-3) << name << " toss " << t.name;
    }
  }
  fs::remove_all(dir);
}

// The rows satisfy the data's convention v_k = (x_k − x_{k−1}) / dt for the
// position (semi-implicit Euler), and joint angles are wrapped to (−π, π].
TEST(MultibodySim, GeneratedRowsFollowTheDataConvention) {
  SyntheticSystemOptions o;
  o.tosses = 4;
  o.seed = 3;
  o.step.batch.threads = 2;
  const SystemTossSet s = generate_system_tosses(o);
  const int W = s.width;
  for (const SystemToss& t : s.tosses)
    for (int i = 1; i < o.states; ++i) {
      const double* a = &t.rows[static_cast<size_t>(i - 1) * W];
      const double* b = &t.rows[static_cast<size_t>(i) * W];
      for (int c = 0; c < 3; ++c) EXPECT_NEAR((b[4 + c] - a[4 + c]) / o.dt, b[8 + 3 + c], 1e-9);
      EXPECT_GT(b[7], -kPi);
      EXPECT_LE(b[7], kPi);
    }
}

TEST(MultibodySim, ErrorsNameTheItem) {
  const MultibodySystem sys = elbow_system();
  const MultibodyParams p = MultibodyParams::nominal(sys);
  const MultibodyStepOptions o = test_options();
  Eigen::MatrixXd Xn;
  expect_error([&] { multibody_step(sys, p, o, Eigen::MatrixXd::Zero(13, 2), nullptr, Xn); }, "X has 13 rows");
  Eigen::MatrixXd X(sys.width(), 2);
  X.col(0) = rest_state(sys, 1.0);
  X.col(1) = rest_state(sys, 1.0);
  const Eigen::MatrixXd bad_a = Eigen::MatrixXd::Zero(6, 2);
  expect_error([&] { multibody_step(sys, p, o, X, &bad_a, Xn); }, "a_ext");
  MultibodyParams q = p;
  q.pi.conservativeResize(10);
  expect_error([&] { multibody_step(sys, q, o, X, nullptr, Xn); }, "pi has 10");
  q = p;
  q.vertices.pop_back();
  expect_error([&] { multibody_step(sys, q, o, X, nullptr, Xn); }, "vertices");
  q = p;
  q.mu = -1;
  expect_error([&] { multibody_step(sys, q, o, X, nullptr, Xn); }, "mu");
  X(3, 1) = std::nan("");
  expect_error([&] { multibody_step(sys, p, o, X, nullptr, Xn); }, "column 1");
  MultibodyStepOptions o2 = o;
  o2.dt = 0;
  X(3, 1) = 0;
  expect_error([&] { multibody_step(sys, p, o2, X, nullptr, Xn); }, "dt");
  expect_error([&] { multibody_rollout(sys, p, o, X, 0); }, "n_states");
  SyntheticSystemOptions so;
  so.system = "pendulum";
  expect_error([&] { generate_system_tosses(so); }, "pendulum");
}

// Run with --gtest_also_run_disabled_tests: steps per second for 256 elbow
// states (60 generator steps: flight, impacts, sliding).
TEST(MultibodySim, DISABLED_TimingElbow256) {
  for (const MultibodyQpForm form : {MultibodyQpForm::kImpulses, MultibodyQpForm::kVelocities})
    for (const bool lanes : {false, true}) {
      SyntheticSystemOptions o;
      o.tosses = 256;
      o.states = 61;
      o.landing_fraction = 0.9;  // within 0.37 s
      o.step.batch.threads = 1;
      o.step.batch.lanes = lanes;
      o.step.form = form;
      SyntheticSystemReport rep;
      generate_system_tosses(o, &rep);
      const double state_steps = 256.0 * (o.states - 1);
      std::printf("elbow, 256 states x %d steps, 1 thread, %s form, lanes %d: %.2f s, %.0f state-steps/s, "
                  "%.1f batch steps/s; %.0f%% of state-steps needed a QP, mean %.0f ADMM iterations, "
                  "%lld fallbacks, %lld inaccurate, %lld not solved\n",
                  o.states - 1, form == MultibodyQpForm::kImpulses ? "impulse" : "velocity", lanes ? 1 : 0,
                  rep.seconds, state_steps / rep.seconds, (o.states - 1) / rep.seconds,
                  100.0 * rep.qp_states / state_steps, rep.qp_states ? double(rep.iterations) / rep.qp_states : 0.0,
                  rep.fallbacks, rep.inaccurate, rep.not_solved);
    }
}

}  // namespace
}  // namespace impulse
