// DiffSim (host/learning/diffsim.h): the SOC projection's Jacobian and the
// implicit gradient of the one-step prediction loss through the Anitescu QP
// against central finite differences of the solved loss; zero loss at the
// truth on transitions of the same simulator.
#include <gtest/gtest.h>

#include <random>

#include "host/learning/diffsim.h"
#include "solvers/cones.h"
#include "solvers/error.h"

namespace impulse {
namespace {

TEST(DiffSim, SocProjectionJacobianMatchesFiniteDifferences) {
  std::mt19937_64 rng(1);
  std::normal_distribution<double> n(0, 1);
  for (int trial = 0; trial < 200; ++trial) {
    const Eigen::Vector3d z(n(rng), n(rng), n(rng));
    const Eigen::Matrix3d J = soc_projection_jacobian(z);
    for (int j = 0; j < 3; ++j) {
      Eigen::Vector3d a = z, b = z;
      a(j) += 1e-7;
      b(j) -= 1e-7;
      project_soc3(a(0), a(1), a(2));
      project_soc3(b(0), b(1), b(2));
      EXPECT_LT(((a - b) / 2e-7 - J.col(j)).norm(), 1e-6) << z.transpose();
    }
  }
}

// states of the model's own Anitescu step, dropped so that they touch the ground
std::vector<CcnTransition> contact_batch(const CcnModel& model, const MultibodyStepOptions& opt, int count,
                                         uint64_t seed) {
  const MultibodySystem& sys = model.system();
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0, 1);
  Eigen::MatrixXd X(sys.width(), count);
  MultibodyParams p;
  p.pi = model.inertial();
  p.vertices = model.vertices();
  p.mu = model.mu();
  p.gravity = sys.gravity;
  for (int b = 0; b < count; ++b) {
    Eigen::VectorXd x(sys.width());
    x.head<4>() = Eigen::Vector4d(n(rng), n(rng), n(rng), n(rng)).normalized();
    x.segment<3>(4) = Eigen::Vector3d(0, 0, 0);
    for (int j = 0; j < sys.joints(); ++j) x(7 + j) = 0.4 * n(rng);
    for (int i = 0; i < sys.nv(); ++i) x(sys.nq() + i) = 0.5 * n(rng);
    x(sys.nq() + 5) = -1.0;  // falling
    Kinematics k;
    kinematics(sys, x.head(sys.nq()), k);
    MultibodyContacts c;
    contact_frame(sys, k, p.vertices, c);
    x(6) = 0.003 - c.phi.minCoeff();  // lowest vertex 3 mm above: lands within the step
    X.col(b) = x;
  }
  Eigen::MatrixXd Xn;
  multibody_step(sys, p, opt, X, nullptr, Xn);
  std::vector<CcnTransition> out;
  for (int b = 0; b < count; ++b) {
    CcnTransition t;
    t.x = X.col(b);
    t.x_next = Xn.col(b);
    t.x_next(sys.nq() + 3) += 0.05 * n(rng);  // an observation the model does not explain exactly
    out.push_back(t);
  }
  return out;
}

MultibodyStepOptions tight_step() {
  MultibodyStepOptions o;
  o.qp.eps_abs = 1e-12;
  o.qp.eps_rel = 1e-12;
  o.qp.max_iter = 400000;
  return o;
}

class DiffSimSystems : public ::testing::TestWithParam<std::string> {};

TEST_P(DiffSimSystems, ImplicitGradientMatchesFiniteDifferences) {
  const MultibodySystem sys = system_by_name(GetParam());
  CcnModel truth(sys, false);
  const std::vector<CcnTransition> batch = contact_batch(truth, tight_step(), 4, 3);
  CcnModel model(sys, true, 5);
  model.randomize(7);
  DiffSimConfig cfg;
  cfg.w_res = 1;
  cfg.w_res_w = 0.01;
  DiffSimLoss loss(cfg, tight_step());
  Eigen::VectorXd g;
  const DiffSimResult r = loss.evaluate(model, batch, &g);
  EXPECT_EQ(r.not_solved, 0);
  EXPECT_GT(r.loss, 0);
  const Eigen::VectorXd theta = model.parameters();
  CcnModel m2 = model;
  std::vector<int> idx;
  for (int i = 0; i < model.net_offset(); ++i) idx.push_back(i);
  idx.push_back(model.net_offset() + 7);
  idx.push_back(static_cast<int>(theta.size()) - 1);
  int checked = 0;
  for (int i : idx) {
    const double h = 1e-5 * (i < model.inertia_offset() ? 0.05 : 1);
    Eigen::VectorXd a = theta, b = theta;
    a(i) += h;
    b(i) -= h;
    m2.set_parameters(a);
    const double fa = loss.evaluate(m2, batch, nullptr).loss;
    m2.set_parameters(b);
    const double fb = loss.evaluate(m2, batch, nullptr).loss;
    const double fd = (fa - fb) / (2 * h);
    // the solved loss carries the solver's error (~1e-12 at eps 1e-12): 1e-11 / h
    EXPECT_NEAR(fd, g(i), 1e-4 * std::abs(fd) + 1e-6 * g.cwiseAbs().maxCoeff() + 1e-11 / h)
        << GetParam() << " parameter " << i;
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

TEST_P(DiffSimSystems, ZeroLossAtTheTruthOnItsOwnSteps) {
  const MultibodySystem sys = system_by_name(GetParam());
  CcnModel truth(sys, false);
  MultibodyStepOptions opt = tight_step();
  std::vector<CcnTransition> batch = contact_batch(truth, opt, 6, 9);
  // undo the observation noise: the observed next state is the model's own step
  MultibodyParams p;
  p.pi = truth.inertial();
  p.vertices = truth.vertices();
  p.mu = truth.mu();
  p.gravity = sys.gravity;
  Eigen::MatrixXd X(sys.width(), 6), Xn;
  for (int b = 0; b < 6; ++b) X.col(b) = batch[static_cast<size_t>(b)].x;
  multibody_step(sys, p, opt, X, nullptr, Xn);
  for (int b = 0; b < 6; ++b) batch[static_cast<size_t>(b)].x_next = Xn.col(b);
  DiffSimLoss loss(DiffSimConfig{}, opt);
  EXPECT_LT(loss.evaluate(truth, batch, nullptr).loss, 1e-18);
  CcnModel wrong = truth;
  wrong.randomize(2);
  EXPECT_GT(loss.evaluate(wrong, batch, nullptr).loss, 1e-8);
}

// A negative friction variable (Adam may step through zero) simulates |θ_μ|,
// where the simulator used to reject it and the run died.
TEST(DiffSim, NegativeFrictionVariableActsAsItsMagnitude) {
  const MultibodySystem sys = cube_system();
  CcnModel truth(sys, false);
  const std::vector<CcnTransition> batch = contact_batch(truth, tight_step(), 4, 5);
  CcnModel pos(sys, false), neg(sys, false);
  Eigen::VectorXd th = pos.parameters();
  th(pos.mu_offset()) = 0.3;
  pos.set_parameters(th);
  th(pos.mu_offset()) = -0.3;
  neg.set_parameters(th);
  DiffSimLoss loss(DiffSimConfig{}, tight_step());
  Eigen::VectorXd gp, gn;
  const double lp = loss.evaluate(pos, batch, &gp).loss, ln = loss.evaluate(neg, batch, &gn).loss;
  EXPECT_EQ(lp, ln);
  EXPECT_NE(gp(pos.mu_offset()), 0.0);
  EXPECT_EQ(gn(pos.mu_offset()), -gp(pos.mu_offset()));
}

INSTANTIATE_TEST_SUITE_P(DiffSim, DiffSimSystems, ::testing::Values("cube", "elbow"));

}  // namespace
}  // namespace impulse
