// The CCN loss (host/learning/ccn.h): finite differences for its gradient at
// fixed impulses and for the solved loss (envelope theorem), zero loss on exact
// free-flight transitions of the true model, the model's parameter layout,
// its physical validity under random initialization, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "host/learning/ccn.h"
#include "host/learning/mlp.h"
#include "host/systems/system_file.h"
#include "solvers/error.h"
#include "test_util.h"

namespace impulse {
namespace {

// a transition of the model's own dynamics without contact (semi-implicit
// Euler, eq. 6), base at height z
CcnTransition free_transition(const MultibodySystem& sys, const Eigen::VectorXd& pi, std::mt19937_64& rng,
                              double z, double dt) {
  std::normal_distribution<double> n(0, 1);
  CcnTransition t;
  t.x.resize(sys.width());
  Eigen::Vector4d quat(n(rng), n(rng), n(rng), n(rng));
  t.x.head<4>() = quat.normalized();
  t.x.segment<3>(4) = Eigen::Vector3d(0.1 * n(rng), 0.1 * n(rng), z);
  for (int j = 0; j < sys.joints(); ++j) t.x(7 + j) = 0.5 * n(rng);
  for (int i = 0; i < sys.nv(); ++i) t.x(sys.nq() + i) = n(rng);
  const Eigen::VectorXd q = t.x.head(sys.nq()), v = t.x.tail(sys.nv());
  const Eigen::VectorXd vn = v + dt * free_acceleration(sys, pi, q, v);
  t.x_next.resize(sys.width());
  t.x_next.tail(sys.nv()) = vn;
  Eigen::VectorXd qn(sys.nq());
  integrate_configuration(sys, q, vn, dt, qn);
  t.x_next.head(sys.nq()) = qn;
  return t;
}

// a transition that touches the ground: a free transition moved down so that
// its lowest vertex sits at `depth` at x', with an observed velocity change
// (an impact-like jump) added
CcnTransition contact_transition(const CcnModel& model, std::mt19937_64& rng, double depth, double dt) {
  const MultibodySystem& sys = model.system();
  CcnTransition t = free_transition(sys, model.inertial(), rng, 0.0, dt);
  Kinematics k;
  kinematics(sys, t.x_next.head(sys.nq()), k);
  MultibodyContacts c;
  contact_frame(sys, k, model.vertices(), c);
  const double shift = depth - c.phi.minCoeff();
  t.x(6) += shift;
  t.x_next(6) += shift;
  t.x_next(sys.nq() + 5) += 0.8;  // upward jump of the base
  return t;
}

QpSettings<double> tight() {
  QpSettings<double> s;
  s.eps_abs = 1e-11;
  s.eps_rel = 1e-11;
  s.max_iter = 200000;
  return s;
}

class CcnSystems : public ::testing::TestWithParam<std::string> {};

TEST_P(CcnSystems, ObjectiveGradientAtFixedImpulsesMatchesFiniteDifferences) {
  const MultibodySystem sys = load_system(GetParam());
  for (bool residual : {false, true}) {
    CcnModel model(sys, residual, 4);
    model.randomize(9);
    CcnLossConfig cfg;
    cfg.weights.res = 0.5;
    std::mt19937_64 rng(21);
    std::uniform_real_distribution<double> u(0, 1);
    const CcnTransition t = contact_transition(model, rng, -0.004, cfg.dt);
    const int k = sys.contacts();
    Eigen::VectorXd lam(3 * k);
    for (int i = 0; i < k; ++i) {
      lam(3 * i) = u(rng);
      lam(3 * i + 1) = 0.5 * lam(3 * i) * (2 * u(rng) - 1);
      lam(3 * i + 2) = 0.5 * lam(3 * i) * (2 * u(rng) - 1);
    }
    Eigen::VectorXd g;
    ccn_objective_at(model, cfg, t, lam, &g);
    const Eigen::VectorXd theta = model.parameters();
    ASSERT_EQ(g.size(), theta.size());
    // every structured parameter, and a spread of the network's
    std::vector<int> idx;
    for (int i = 0; i < model.net_offset(); ++i) idx.push_back(i);
    for (int i = model.net_offset(); i < theta.size(); i += 97) idx.push_back(i);
    if (residual) idx.push_back(static_cast<int>(theta.size()) - 1);
    CcnModel m2 = model;
    for (int i : idx) {
      const double h = 1e-6 * std::max(1.0, std::abs(theta(i))) * (i < model.inertia_offset() ? 0.05 : 1);
      Eigen::VectorXd a = theta, b = theta;
      a(i) += h;
      b(i) -= h;
      m2.set_parameters(a);
      const double fa = ccn_objective_at(m2, cfg, t, lam, nullptr);
      m2.set_parameters(b);
      const double fb = ccn_objective_at(m2, cfg, t, lam, nullptr);
      const double fd = (fa - fb) / (2 * h);
      EXPECT_NEAR(fd, g(i), 1e-5 * (1 + std::abs(fd))) << GetParam() << " residual " << residual << " parameter " << i;
    }
  }
}

// The host-device code (solvers/ccn_qp.h) the loss and the device run, held
// to the Eigen reference on host/dynamics/multibody.h: value and gradient at
// the same impulses, and its QP's objective at λ.
// The objective at fixed impulses is the documented sum (ccn.h), recomputed here term
// by term from the dynamics room's M, h, J and φ: the prediction in the energy norm,
// then 2 w_comp Σ λ_n |φ'| / Δt (a penetrating vertex charged, not rewarded),
// 2 w_diss, 2 w_pen and 2 w_res terms. A transition with one vertex 3 mm deep and
// others above the ground, so both signs of φ' count.
TEST_P(CcnSystems, ObjectiveIsTheDocumentedSum) {
  std::mt19937_64 rng(21);
  CcnModel model(load_system(GetParam()), true, 4);
  CcnLossConfig cfg;
  cfg.weights.res = 0.3;
  const MultibodySystem& sys = model.system();
  const CcnTransition t = contact_transition(model, rng, -0.003, cfg.dt);
  MlpWorkspace ws;
  const Eigen::VectorXd delta = model.residuals({&t.x}, ws).col(0);
  Kinematics k, kn;
  kinematics(sys, t.x.head(sys.nq()), t.x.tail(sys.nv()), k);
  kinematics(sys, t.x_next.head(sys.nq()), kn);
  Eigen::MatrixXd M;
  Eigen::VectorXd h;
  mass_matrix(k, model.inertial(), M);
  bias_force(k, model.inertial(), sys.gravity, h);
  MultibodyContacts c, cn;
  contact_frame(sys, k, model.vertices(), c);
  contact_frame(sys, kn, model.vertices(), cn);
  ASSERT_LT(cn.phi.minCoeff(), 0);
  ASSERT_GT(cn.phi.maxCoeff(), 0);
  const int nc = static_cast<int>(c.phi.size());
  std::uniform_real_distribution<double> u(0, 1);
  Eigen::VectorXd lam(3 * nc);
  for (int i = 0; i < nc; ++i) {
    lam(3 * i) = u(rng);
    lam(3 * i + 1) = 0.5 * lam(3 * i) * (u(rng) - 0.5);
    lam(3 * i + 2) = 0.5 * lam(3 * i) * (u(rng) - 0.5);
  }
  const double mu = model.mu(), dt = cfg.dt;
  const Eigen::VectorXd v = t.x.tail(sys.nv()), vn = t.x_next.tail(sys.nv());
  const Eigen::VectorXd a = -M.ldlt().solve(h) + delta;
  const Eigen::VectorXd dv = v - vn + a * dt;
  Eigen::VectorXd f = M * dv;
  double comp = 0, diss = 0, pen = 0;
  for (int i = 0; i < nc; ++i) {
    const Eigen::Vector2d lt = mu * lam.segment<2>(3 * i + 1);  // the variables hold λ_t / μ
    f += c.Jn.row(i).transpose() * lam(3 * i) + c.Jt.middleRows<2>(2 * i).transpose() * lt;
    const Eigen::Vector2d jv = c.Jt.middleRows<2>(2 * i) * vn;
    comp += lam(3 * i) * std::abs(cn.phi(i)) / dt;
    diss += lam(3 * i) * mu * jv.norm() + lt.dot(jv);
    pen += std::pow(std::min(0.0, cn.phi(i)), 2);
  }
  const CcnWeights& w = cfg.weights;
  const double expected = f.dot(M.ldlt().solve(f)) + 2 * w.comp * comp + 2 * w.diss * diss + 2 * w.pen * pen +
                          2 * w.res * dt * dt * delta.dot(M * delta);
  const double got = ccn_objective_at(model, cfg, t, lam, nullptr);
  EXPECT_NEAR(got, expected, 1e-10 * std::abs(expected)) << GetParam();
}

TEST_P(CcnSystems, HostDeviceCodeMatchesTheEigenReference) {
  const MultibodySystem sys = load_system(GetParam());
  CcnModel model(sys, true, 4);
  model.randomize(13);
  CcnLossConfig cfg;
  cfg.weights.res = 0.7;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  const auto qs = ccn_qp_system(model, cfg);
  const Eigen::VectorXd theta = model.parameters();
  for (int trial = 0; trial < 4; ++trial) {
    // the lowest vertex above, then below the ground; never at φ' = 0 exactly, where
    // complementarity's |φ'| has its kink and the two codes' roundings pick sides
    const CcnTransition t = contact_transition(model, rng, 0.001 - 0.003 * trial, cfg.dt);
    const int k = sys.contacts(), n = 3 * k;
    Eigen::VectorXd lam(n);
    for (int i = 0; i < k; ++i) {
      lam(3 * i) = u(rng);
      lam(3 * i + 1) = 0.5 * lam(3 * i) * (2 * u(rng) - 1);
      lam(3 * i + 2) = 0.5 * lam(3 * i) * (2 * u(rng) - 1);
    }
    Eigen::VectorXd g_ref;
    const double v_ref = ccn_objective_at(model, cfg, t, lam, &g_ref);
    Eigen::VectorXd feat(model.network().input_size());
    model.residual_features(t.x, feat);
    const Eigen::VectorXd delta = model.network()(feat);
    ccnqp::Terms<double, ccnqp::HostCapacity> T;
    Eigen::VectorXd g = Eigen::VectorXd::Zero(model.net_offset()), gd(sys.nv());
    const double v = ccnqp::gradient(qs, theta.data(), t.x.data(), t.x_next.data(), delta.data(),
                                     unit_view(static_cast<const double*>(lam.data())), T, g.data(), gd.data());
    EXPECT_NEAR(v, v_ref, 1e-12 * (1 + std::abs(v_ref)));
    EXPECT_LT((g - g_ref.head(model.net_offset())).cwiseAbs().maxCoeff(), 1e-10 * (1 + g_ref.cwiseAbs().maxCoeff()))
        << GetParam() << " trial " << trial;
    // the QP at λ: ½λᵀPλ + qᵀλ + constant is the same value
    std::vector<double> P(static_cast<size_t>(n * n)), q(static_cast<size_t>(n)), A(static_cast<size_t>(n)),
        b(static_cast<size_t>(n));
    double constant = 0;
    ASSERT_TRUE(ccnqp::assemble(qs, theta.data(), t.x.data(), t.x_next.data(), delta.data(), T, unit_view(P.data()),
                                unit_view(q.data()), unit_view(A.data()), unit_view(b.data()), &constant));
    const Eigen::Map<const Eigen::MatrixXd> Pm(P.data(), n, n);
    const double qp_value = 0.5 * lam.dot(Pm * lam) + Eigen::Map<const Eigen::VectorXd>(q.data(), n).dot(lam) + constant;
    EXPECT_NEAR(qp_value, v_ref, 1e-10 * (1 + std::abs(v_ref)));
  }
}

// The solved loss's gradient (envelope theorem) against central differences of
// the solved loss itself, on transitions in contact.
TEST_P(CcnSystems, SolvedLossGradientMatchesFiniteDifferences) {
  const MultibodySystem sys = load_system(GetParam());
  CcnModel model(sys, true, 2);
  model.randomize(5);
  CcnLossConfig cfg;
  std::mt19937_64 rng(8);
  std::vector<CcnTransition> batch;
  for (int i = 0; i < 3; ++i) batch.push_back(contact_transition(model, rng, 0.0005 - 0.002 * i, cfg.dt));
  batch.push_back(free_transition(sys, model.inertial(), rng, 0.5, cfg.dt));
  CcnLoss loss(cfg, tight());
  Eigen::VectorXd g;
  const CcnLossResult r = loss.evaluate(model, batch, &g);
  EXPECT_EQ(r.not_solved, 0);
  const Eigen::VectorXd theta = model.parameters();
  CcnModel m2 = model;
  std::vector<int> idx;
  for (int i = 0; i < model.net_offset(); i += (i < model.inertia_offset() ? 5 : 1)) idx.push_back(i);
  idx.push_back(model.net_offset() + 3);
  idx.push_back(static_cast<int>(theta.size()) - 2);
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
    EXPECT_NEAR(fd, g(i), 1e-4 * (1 + std::abs(fd))) << GetParam() << " parameter " << i;
  }
}

// Exact free flight of the true model: the loss is zero (λ = 0, nothing to
// explain, no penetration); a wrong inertia or gravity makes it positive.
TEST_P(CcnSystems, ExactFreeFlightHasZeroLossAtTheTruth) {
  const MultibodySystem sys = load_system(GetParam());
  CcnModel model(sys, false);
  CcnLossConfig cfg;
  std::mt19937_64 rng(1);
  std::vector<CcnTransition> batch;
  for (int i = 0; i < 8; ++i) batch.push_back(free_transition(sys, model.inertial(), rng, 0.4, cfg.dt));
  CcnLoss loss(cfg, tight());
  const CcnLossResult r = loss.evaluate(model, batch, nullptr);
  // the loss is an energy (J): 1e-12 is rounding of terms of order 1e-2
  EXPECT_LT(r.loss, 1e-12);
  EXPECT_EQ(r.not_solved, 0);
  CcnModel wrong = model;
  wrong.randomize(3);
  const double lw = loss.evaluate(wrong, batch, nullptr).loss;
  // (inertia shows only through gyroscopic terms over one step: a small but clear signal)
  EXPECT_GT(lw, 1e-9) << "a random model explains exact free flight";
  CcnLossConfig heavy = cfg;
  MultibodySystem s2 = sys;
  s2.gravity = 0.9 * sys.gravity;  // the model's gravity 10% off
  CcnModel low(s2, false);
  EXPECT_GT(CcnLoss(heavy, tight()).evaluate(low, batch, nullptr).loss, 1e-6);
}

TEST_P(CcnSystems, RandomInitializationIsPhysicalAndKeepsTheMass) {
  const MultibodySystem sys = load_system(GetParam());
  for (uint64_t seed = 0; seed < 50; ++seed) {
    CcnModel m(sys, false);
    m.randomize(seed);
    const Eigen::VectorXd pi = m.inertial();
    double mass = 0;
    for (int l = 0; l < sys.num_links(); ++l) {
      EXPECT_TRUE(physically_consistent(pi.segment<10>(10 * l)));
      mass += pi(10 * l);
    }
    EXPECT_NEAR(mass, sys.total_mass(), 1e-12);
    EXPECT_GE(m.mu(), 0.5 * sys.mu - 1e-12);
    EXPECT_LE(m.mu(), 1.5 * sys.mu + 1e-12);
    // seeded: the same seed gives the same model
    CcnModel again(sys, false);
    again.randomize(seed);
    EXPECT_EQ(again.parameters(), m.parameters());
  }
}

TEST_P(CcnSystems, JsonRoundTripIsExact) {
  const MultibodySystem sys = load_system(GetParam());
  CcnModel m(sys, true, 3);
  m.randomize(4);
  const CcnModel back = CcnModel::from_json(nlohmann::json::parse(m.to_json().dump()), sys);
  EXPECT_EQ(back.parameters(), m.parameters());
  EXPECT_THROW(CcnModel::from_json(m.to_json(), sys.name == "cube" ? elbow_system() : cube_system()), Error);
}

// θ_μ may cross zero during training: the friction is |θ_μ| (a negative
// friction would turn the dissipation term into a reward, and the simulator
// rejects it), and the gradient in θ_μ flips with its sign.
TEST(Ccn, NegativeFrictionVariableActsAsItsMagnitude) {
  const MultibodySystem sys = elbow_system();
  CcnModel pos(sys, false);
  pos.randomize(3);
  Eigen::VectorXd th = pos.parameters();
  th(pos.mu_offset()) = 0.25;
  pos.set_parameters(th);
  CcnModel neg = pos;
  th(pos.mu_offset()) = -0.25;
  neg.set_parameters(th);
  EXPECT_EQ(neg.mu(), 0.25);
  CcnLossConfig cfg;
  std::mt19937_64 rng(2);
  std::vector<CcnTransition> batch;
  for (int i = 0; i < 4; ++i) batch.push_back(contact_transition(pos, rng, -0.002 * i, cfg.dt));
  CcnLoss loss(cfg, tight());
  Eigen::VectorXd gp, gn;
  const double lp = loss.evaluate(pos, batch, &gp).loss, ln = loss.evaluate(neg, batch, &gn).loss;
  EXPECT_EQ(lp, ln);
  EXPECT_NE(gp(pos.mu_offset()), 0.0);
  EXPECT_EQ(gn(pos.mu_offset()), -gp(pos.mu_offset()));
  gn(pos.mu_offset()) = gp(pos.mu_offset());
  EXPECT_EQ(gp, gn);
}

TEST(Ccn, DeterministicAcrossThreadCounts) {
  const MultibodySystem sys = elbow_system();
  CcnModel model(sys, true, 1);
  model.randomize(2);
  CcnLossConfig cfg;
  std::mt19937_64 rng(4);
  std::vector<CcnTransition> batch;
  for (int i = 0; i < 24; ++i) batch.push_back(contact_transition(model, rng, -0.001 * (i % 3), cfg.dt));
  Eigen::VectorXd g1, g2;
  BatchOptions o1, o2;
  o1.threads = 1;
  o2.threads = 2;
  const double l1 = CcnLoss(cfg, {}, o1).evaluate(model, batch, &g1).loss;
  const double l2 = CcnLoss(cfg, {}, o2).evaluate(model, batch, &g2).loss;
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(g1, g2);
}

TEST(Ccn, BadInputIsNamed) {
  CcnModel model(elbow_system(), false);
  CcnLoss loss(CcnLossConfig{});
  CcnTransition t;
  t.x = Eigen::VectorXd::Zero(13);  // a cube state given to the elbow
  t.x(0) = 1;
  t.x_next = t.x;
  try {
    loss.evaluate(model, {t}, nullptr);
    FAIL() << "a 13-number state was accepted for the elbow";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("15"), std::string::npos) << e.what();
  }
  Eigen::VectorXd theta = model.parameters();
  theta(3) = std::nan("");
  EXPECT_THROW(model.set_parameters(theta), Error);
  EXPECT_THROW(model.set_parameters(Eigen::VectorXd::Zero(3)), Error);
}

// Capacities: the CPU loss takes the 3-link chain (3 links, 29 vertices); the device's
// fixed arrays (2 links, 16 vertices) refuse it naming both limits and the CPU backend,
// and take the elbow.
TEST(Ccn, TheDeviceCapacityIsNamedWhereASystemExceedsIt) {
  const CcnModel chain(load_system(IMPULSE_SOURCE_DIR "/tests/data/systems/chain3.json"), false);
  EXPECT_EQ(ccn_qp_system(chain, CcnLossConfig{}).contacts(), 29);
  try {
    ccn_device_system(chain, CcnLossConfig{});
    FAIL() << "the device took a 3-link, 29-vertex system";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("3 links and 29 vertices; the GPU loss handles up to 2 and 16 (the CPU backend: up to 8 and 64)"),
              std::string::npos)
        << m;
  }
  EXPECT_EQ(ccn_device_system(CcnModel(elbow_system(), false), CcnLossConfig{}).links, 2);
}

// the built-ins, a 3-link chain described in a file (29 vertices: past the device's
// capacity, within the CPU loss's) and the wedge from a mesh
INSTANTIATE_TEST_SUITE_P(Ccn, CcnSystems,
                         ::testing::Values("cube", "asymmetric", "elbow", IMPULSE_SOURCE_DIR "/tests/data/systems/chain3.json",
                                           IMPULSE_SOURCE_DIR "/tests/data/systems/wedge.urdf"),
                         testing::SystemParamName());

}  // namespace
}  // namespace impulse
