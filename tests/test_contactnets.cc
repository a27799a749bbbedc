// ContactNets loss: the assembled QP against the loss terms written out
// directly, and the envelope gradient against central finite differences of the
// solved loss, for every parameter group of the polytope model.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <Eigen/Eigenvalues>

#include "host/learning/contactnets_loss.h"
#include "host/learning/contactnets_model.h"
#include "tests/contact_util.h"
#include "tests/test_util.h"

namespace impulse {
using impulse::testing::random_transitions;
using impulse::testing::tight;
}  // namespace impulse

namespace impulse {
namespace {

double total_loss(ContactNetsLoss& loss, PolytopeContactModel& m,
                  std::vector<TransitionFrame> frames, std::vector<double>* grad) {
  m.frames(frames, 1);
  LossBatchResult r;
  loss.evaluate(frames, grad != nullptr, r);
  EXPECT_EQ(r.not_solved, 0);
  double L = 0;
  for (size_t i = 0; i < frames.size(); ++i) L += r.qp_loss[i] + r.reg_loss[i];
  if (grad) {
    grad->assign(m.parameter_count(), 0.0);
    for (size_t i = 0; i < frames.size(); ++i)
      m.backprop(frames[i].x, frames[i].x_next, r.grad[i], grad->data());
  }
  return L;
}

class ContactNetsGradient : public ::testing::TestWithParam<FrictionModel> {};

TEST_P(ContactNetsGradient, EnvelopeGradientMatchesFiniteDifferences) {
  ContactNetsLossConfig cfg;
  cfg.friction = GetParam();
  BatchOptions opt;
  opt.threads = 1;
  ContactNetsLoss loss(cfg, tight(), opt);
  PolytopeContactModel model(perturb_polytope(PolytopeParams::cube(0.0524, 0.18), 0.4, 3));
  const auto frames = random_transitions(model, 6, 11);
  std::vector<double> g;
  const double L0 = total_loss(loss, model, frames, &g);
  ASSERT_GT(L0, 0);
  const std::vector<double> theta = model.parameters();
  const std::vector<double> scale = model.parameter_scale(cfg.length_unit);
  const char* group[] = {"normal", "tangent", "normal vertices", "tangent vertices"};
  const int bounds[] = {0, 3, 9, 33, 57};
  for (int gi = 0; gi < 4; ++gi) {
    double worst = 0, gnorm = 0;
    for (int i = bounds[gi]; i < bounds[gi + 1]; ++i) {
      const double h = 1e-6 * scale[i];
      std::vector<double> tp = theta, tm = theta;
      tp[i] += h;
      tm[i] -= h;
      PolytopeContactModel mp(model.params()), mm(model.params());
      mp.set_parameters(tp);
      mm.set_parameters(tm);
      const double fd = (total_loss(loss, mp, frames, nullptr) - total_loss(loss, mm, frames, nullptr)) / (2 * h);
      worst = std::max(worst, std::abs(fd - g[i]) * scale[i]);
      gnorm = std::max(gnorm, std::abs(g[i]) * scale[i]);
    }
    EXPECT_LT(worst, 1e-5 * std::max(1.0, gnorm)) << group[gi] << ": largest |fd - analytic| "
                                                  << worst << " (scaled), max |grad| " << gnorm;
  }
}

INSTANTIATE_TEST_SUITE_P(Friction, ContactNetsGradient,
                         ::testing::Values(FrictionModel::kCone, FrictionModel::kOctagon),
                         [](const auto& param_info) {
                           return param_info.param == FrictionModel::kCone ? std::string("Cone")
                                                                           : std::string("Octagon");
                         });

// The QP's value equals the loss terms of the paper written out directly at its
// solution, and no other feasible λ does better (checked on random feasible
// perturbations).
TEST(ContactNetsLoss, QpValueEqualsTermsWrittenOut) {
  ContactNetsLossConfig cfg;
  BatchOptions opt;
  opt.threads = 1;
  ContactNetsLoss loss(cfg, tight(), opt);
  PolytopeContactModel model(perturb_polytope(PolytopeParams::cube(0.0524, 0.18), 0.4, 5));
  auto frames = random_transitions(model, 4, 21);
  LossBatchResult r;
  loss.evaluate(frames, false, r);
  const double L = cfg.length_unit;
  const ContactNetsWeights& w = cfg.weights;
  for (size_t t = 0; t < frames.size(); ++t) {
    // re-solve alone to get λ
    QpBatch<double> b = make_loss_batch(cfg, 1);
    assemble_loss_qp(cfg, frames[t], b, 0);
    QpSolutions<double> s;
    solve_batch(b, tight(), opt, s);
    const int k = 8;
    Eigen::Map<const Eigen::VectorXd> ln(s.x.data(), k), lt(s.x.data() + k, 2 * k),
        sl(s.x.data() + 3 * k, k);
    // terms in scaled units
    const auto& f = frames[t];
    Eigen::MatrixXd Jn = f.frame.Jn, Jt = f.frame.Jt;
    Jn.rightCols<3>() /= L;
    Jt.rightCols<3>() /= L;
    Vec6 nu = velocity(f.x), nun = velocity(f.x_next);
    nu.head<3>() /= L;
    nun.head<3>() /= L;
    BodyParams body = cfg.body;
    body.inertia /= L * L;
    Vec6 Fs = smooth_impulse(f.x, cfg.body, cfg.dt);
    Fs.head<3>() /= L;
    Fs.tail<3>() /= L * L;
    const Mat6 M = body.mass_matrix(), Mi = body.mass_matrix_inverse();
    const Vec6 Fdata = M * (nun - nu) - Fs;
    // the loss written out at impulses (ln, lt), the penetration slack at its best
    // (l_3 = min(0, φ̃)²); fills the slacks it implies
    auto written_out = [&](const Eigen::VectorXd& lnv, const Eigen::VectorXd& ltv, Eigen::VectorXd* slack) {
      const Vec6 Jl = Jn.transpose() * lnv + Jt.transpose() * ltv;
      double v = w.match * (Mi * (Jl - Fdata)).squaredNorm();
      for (int i = 0; i < k; ++i) {
        const double pn = f.phi_next(i) / L;
        v += pn * pn * (w.comp_n * lnv(i) * lnv(i) + w.comp_t * ltv.segment<2>(2 * i).squaredNorm());
        const Eigen::Vector2d c = Jt.middleRows(2 * i, 2) * nun;
        v += w.cone * (c.norm() * ltv.segment<2>(2 * i) + lnv(i) * c).squaredNorm();
        const double phit = f.frame.phi(i) / L + cfg.dt * Jn.row(i).dot(nu + Mi * (Fs + Jl));
        if (slack) (*slack)(i) = std::max(0.0, -phit);
        v += w.slack * std::min(0.0, phit) * std::min(0.0, phit);
      }
      return v;
    };
    Eigen::VectorXd best_slack(k);
    const double val = written_out(ln, lt, &best_slack);
    for (int i = 0; i < k; ++i) {
      EXPECT_NEAR(sl(i), best_slack(i), 1e-6) << "transition " << t << " contact " << i;
      EXPECT_LE(lt.segment<2>(2 * i).norm(), ln(i) + 1e-8);
    }
    EXPECT_NEAR(r.qp_loss[t], val, 1e-7 * std::max(1.0, val)) << "transition " << t;
    // no other feasible λ does better: random perturbations of every size, projected
    // onto λ_n ≥ 0 and the friction cones ‖λ_t,i‖ ≤ λ_n,i
    std::mt19937_64 rng(100 + t);
    std::normal_distribution<double> nd;
    const double size = 1e-3 + ln.cwiseAbs().maxCoeff() + lt.cwiseAbs().maxCoeff();
    int tried = 0;
    for (double step : {1e-4, 1e-2, 1.0}) {
      for (int trial = 0; trial < 30; ++trial) {
        Eigen::VectorXd ln2 = ln, lt2 = lt;
        for (int i = 0; i < k; ++i) {
          double tn = ln(i) + step * size * nd(rng);
          double t1 = lt(2 * i) + step * size * nd(rng), t2 = lt(2 * i + 1) + step * size * nd(rng);
          project_soc3(tn, t1, t2);
          ln2(i) = tn, lt2(2 * i) = t1, lt2(2 * i + 1) = t2;
        }
        const double v2 = written_out(ln2, lt2, nullptr);
        EXPECT_GE(v2, val - 1e-9 * std::max(1.0, val)) << "transition " << t << ", step " << step;
        ++tried;
      }
    }
    EXPECT_EQ(tried, 90);
  }
}

// the batch's slowest QP (what a device step waits for): the most iterations and ρ
// updates of its transitions, each solved alone (one problem at a time: a problem's
// solve does not depend on the rest of its batch)
TEST(ContactNetsLoss, ReportsTheSlowestQpOfTheBatch) {
  BatchOptions opt;
  opt.threads = 1;
  opt.lanes = false;
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-6;
  ContactNetsLoss loss(ContactNetsLossConfig{}, st, opt);
  PolytopeContactModel model(perturb_polytope(PolytopeParams::cube(0.0524, 0.18), 0.3, 3));
  auto frames = random_transitions(model, 12, 5);
  model.frames(frames, 1);
  LossBatchResult all;
  loss.evaluate(frames, false, all);
  long sum = 0;
  int most = 0, most_rho = 0, least = 1 << 30;
  for (const TransitionFrame& f : frames) {
    LossBatchResult one;
    loss.evaluate({f}, false, one);
    EXPECT_EQ(one.max_iterations, one.iterations);
    sum += one.iterations;
    most = std::max(most, one.max_iterations);
    least = std::min(least, one.max_iterations);
    most_rho = std::max(most_rho, one.max_rho_updates);
  }
  EXPECT_EQ(all.iterations, sum);
  EXPECT_EQ(all.max_iterations, most);
  EXPECT_EQ(all.max_rho_updates, most_rho);
  EXPECT_GT(most, least) << "the transitions' QPs all took as long: the test tells nothing";
  EXPECT_GT(most_rho, 0) << "no QP updated rho: the test tells nothing";
}

// the warm starts a training run keeps per transition: x, y and the ρ its solve ended
// at, where the next solve starts (a start of x and y only, an older checkpoint's, starts
// at the settings' ρ)
TEST(ContactNetsLoss, WarmStartsCarryEachTransitionsRho) {
  for (bool lanes : {true, false}) {
    SCOPED_TRACE(lanes ? "lanes" : "one at a time");
    QpSettings<double> st;
    st.eps_abs = st.eps_rel = 1e-6;
    ContactNetsLoss loss(ContactNetsLossConfig{}, st, testing::cpu_path(lanes));
    PolytopeContactModel model(perturb_polytope(PolytopeParams::cube(0.0524, 0.18), 0.3, 3));
    auto frames = random_transitions(model, 12, 5);
    model.frames(frames, 1);
    std::vector<std::vector<double>> warm(frames.size());
    LossBatchResult r;
    loss.evaluate(frames, false, r, &warm);
    const size_t len = warm[0].size();  // n + m + 1
    int moved = 0;
    for (const auto& w : warm) {
      ASSERT_EQ(w.size(), len);
      EXPECT_GE(w.back(), st.rho_min);
      EXPECT_LE(w.back(), st.rho_max);
      moved += w.back() != st.rho;
    }
    EXPECT_GT(moved, 0) << "no transition's rho moved: the test tells nothing";
    // without adaptation a solve ends at the ρ it started at
    loss.settings().adaptive_rho = false;
    loss.settings().fallback = false;  // (a stall's restart takes the fallback settings' ρ)
    for (size_t i = 0; i < warm.size(); ++i) {
      if (i % 3 == 0) warm[i].pop_back();  // no ρ: the settings'
      else warm[i].back() = 0.05 * double(i + 1);
    }
    loss.evaluate(frames, false, r, &warm);
    EXPECT_EQ(r.not_solved, 0);
    for (size_t i = 0; i < warm.size(); ++i) {
      ASSERT_EQ(warm[i].size(), len);
      EXPECT_EQ(warm[i].back(), i % 3 == 0 ? st.rho : 0.05 * double(i + 1)) << "transition " << i;
    }
  }
}

// the loss QP's P is positive semidefinite by construction (what lets training skip the
// PSD test, QpSettings::check_psd): its smallest eigenvalue, over random transitions of
// perturbed models, both friction models and weights from 0 to 100, is >= 0 to rounding
TEST(ContactNetsLoss, AssembledPIsPositiveSemidefinite) {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  double worst = 1.0;  // smallest eigenvalue over the largest |entry|
  int count = 0;
  for (FrictionModel fm : {FrictionModel::kCone, FrictionModel::kOctagon}) {
    for (int trial = 0; trial < 6; ++trial) {
      ContactNetsLossConfig cfg;
      cfg.friction = fm;
      if (trial > 0) {  // trial 0: the defaults; then weights across four decades, one of them 0
        for (double* w : {&cfg.weights.match, &cfg.weights.comp_n, &cfg.weights.comp_t, &cfg.weights.cone,
                          &cfg.weights.slack})
          *w = std::pow(10.0, 4.0 * U(rng) - 2.0);
        (trial % 2 ? cfg.weights.comp_t : cfg.weights.slack) = 0.0;
      }
      PolytopeContactModel model(perturb_polytope(PolytopeParams::cube(0.0524, 0.18), 0.5, 40 + trial));
      auto frames = random_transitions(model, 8, 60 + trial);
      model.frames(frames, 1);
      QpBatch<double> bt = make_loss_batch(cfg, 1);
      const int n = bt.n;
      for (const TransitionFrame& t : frames) {
        assemble_loss_qp(cfg, t, bt, 0);
        const Eigen::Map<const Eigen::MatrixXd> P(bt.P.data(), n, n);
        const double scale = P.cwiseAbs().maxCoeff();
        ASSERT_GT(scale, 0.0);
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(P);
        worst = std::min(worst, es.eigenvalues().minCoeff() / scale);
        ++count;
      }
    }
  }
  EXPECT_EQ(count, 96);
  EXPECT_GE(worst, -1e-13) << "P has a negative eigenvalue beyond rounding";
  // and the test itself sees a P that is not PSD: one with a cone term's sign flipped
  ContactNetsLossConfig cfg;
  PolytopeContactModel model(perturb_polytope(PolytopeParams::cube(0.0524, 0.18), 0.3, 3));
  auto frames = random_transitions(model, 1, 5);
  model.frames(frames, 1);
  QpBatch<double> bt = make_loss_batch(cfg, 1);
  assemble_loss_qp(cfg, frames[0], bt, 0);
  const int n = bt.n;
  for (int i = 0; i < n; ++i) bt.P[size_t(i) * n + i] *= i == 0 ? -1.0 : 1.0;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(Eigen::Map<const Eigen::MatrixXd>(bt.P.data(), n, n));
  EXPECT_LT(es.eigenvalues().minCoeff(), 0.0);
}

TEST(ContactNetsLoss, RejectsMismatchedFrames) {
  ContactNetsLoss loss(ContactNetsLossConfig{});
  PolytopeContactModel model(PolytopeParams::cube(0.0524, 0.18));
  auto frames = random_transitions(model, 2, 1);
  frames[1].phi_next.resize(3);
  LossBatchResult r;
  EXPECT_THROW(loss.evaluate(frames, true, r), Error);
  std::vector<TransitionFrame> none;
  EXPECT_THROW(loss.evaluate(none, true, r), Error);
}

}  // namespace
}  // namespace impulse

namespace impulse {
namespace {

double deep_total(ContactNetsLoss& loss, DeepContactModel& m, std::vector<TransitionFrame> frames,
                  std::vector<double>* grad, bool batched) {
  if (batched) {
    m.frames(frames, 1);
  } else {  // the base class's loop over evaluate, the reference for the override
    m.LearnableContactModel::frames(frames, 1);
  }
  LossBatchResult r;
  loss.evaluate(frames, grad != nullptr, r);
  double L = 0;
  for (size_t i = 0; i < frames.size(); ++i) L += r.qp_loss[i] + r.reg_loss[i];
  if (grad) {
    grad->assign(m.parameter_count(), 0.0);
    if (batched) {
      m.backprop_batch(frames, r.grad, grad->data());
    } else {
      for (size_t i = 0; i < frames.size(); ++i)
        m.backprop(frames[i].x, frames[i].x_next, r.grad[i], grad->data());
    }
  }
  return L;
}

// ContactNets Deep: the network's Jacobian enters J_n, J_t; the gradient with
// respect to every polytope parameter and to network weights of every layer
// matches central differences, and the batched path equals the per-sample one.
TEST(ContactNetsDeep, GradientMatchesFiniteDifferences) {
  ContactNetsLossConfig cfg;
  BatchOptions opt;
  opt.threads = 1;
  ContactNetsLoss loss(cfg, tight(), opt);
  const PolytopeParams start = perturb_polytope(PolytopeParams::cube(0.0524, 0.18), 0.3, 8);
  DeepContactModel model(start, cfg.length_unit, 17, {6, 5});
  // larger network weights so its share of φ and J is not negligible
  std::vector<double> theta = model.parameters();
  for (size_t i = PolytopeParams::kSize; i < theta.size(); ++i) theta[i] *= 4.0;
  model.set_parameters(theta);
  PolytopeContactModel poly(start);
  const auto frames = random_transitions(poly, 5, 13);
  std::vector<double> g, g_batched;
  deep_total(loss, model, frames, &g, false);
  deep_total(loss, model, frames, &g_batched, true);
  ASSERT_EQ(g.size(), g_batched.size());
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], g_batched[i], 1e-9 * (1 + std::abs(g[i]))) << "parameter " << i;
  const std::vector<double> scale = model.parameter_scale(cfg.length_unit);
  double worst = 0, gmax = 0;
  int checked = 0;
  for (size_t i = 0; i < theta.size(); i += (i < PolytopeParams::kSize ? 1 : 3)) {
    const double h = 1e-6 * scale[i];
    std::vector<double> tp = theta, tm = theta;
    tp[i] += h;
    tm[i] -= h;
    DeepContactModel mp = model, mm = model;
    mp.set_parameters(tp);
    mm.set_parameters(tm);
    const double fd = (deep_total(loss, mp, frames, nullptr, false) -
                       deep_total(loss, mm, frames, nullptr, false)) / (2 * h);
    worst = std::max(worst, std::abs(fd - g[i]) * scale[i]);
    gmax = std::max(gmax, std::abs(g[i]) * scale[i]);
    ++checked;
  }
  EXPECT_GT(checked, 80);
  EXPECT_LT(worst, 1e-5 * std::max(1.0, gmax)) << "largest |fd - analytic| " << worst << ", max |grad| " << gmax;
}

}  // namespace
}  // namespace impulse

#include "solvers/contactnets_qp.h"

namespace impulse {
namespace {

// The whole-frame Polytope path (cn::assemble / cn::gradient from θ) against
// the host's path through a contact model's frame (PolytopeModel, the loss
// batch, PolytopeContactModel::backprop): the same QP data in the batch's
// pattern and the same gradient for arbitrary (λ, y), for both friction models.
class DeviceLossMath : public ::testing::TestWithParam<FrictionModel> {};

TEST_P(DeviceLossMath, WholeFramePolytopePathMatchesHostPath) {
  ContactNetsLossConfig cfg;
  cfg.friction = GetParam();
  cfg.body.inertia = Eigen::Vector3d(0.0008, 0.0009, 0.0007).asDiagonal();
  const cn::LossConsts<double> c = loss_consts(cfg);
  PolytopeContactModel model(perturb_polytope(PolytopeParams::cube(0.0524, 0.18), 0.4, 31));
  const std::vector<double> theta = model.parameters();
  const auto frames = random_transitions(model, 5, 41);
  QpBatch<double> host = make_loss_batch(cfg, 1), dev = make_loss_batch(cfg, 1);
  ASSERT_EQ(dev.nnz(), cn::nnz(c.octagon));
  ASSERT_EQ(dev.m(), cn::rows(c.octagon));
  std::mt19937_64 rng(5);
  std::normal_distribution<double> N(0.0, 1.0);
  for (const auto& t : frames) {
    const double constant = assemble_loss_qp(cfg, t, host, 0);
    const double whole = cn::assemble<double, UnitStride>(
        c, theta.data(), t.x.data(), t.x_next.data(), View<double, UnitStride>{dev.P.data(), {}},
        View<double, UnitStride>{dev.q.data(), {}}, View<double, UnitStride>{dev.A.data(), {}},
        View<double, UnitStride>{dev.b.data(), {}});
    // the constant term is a sum of the same terms in another order on the two
    // paths: equal to rounding (bitwise only where the compiler happens to
    // vectorize both alike: on AVX-512 it did, on AVX2 the last bit differs)
    EXPECT_NEAR(whole, constant, 1e-14 * (1 + std::abs(constant)));
    EXPECT_EQ(dev.P, host.P);
    EXPECT_EQ(dev.q, host.q);
    EXPECT_EQ(dev.A, host.A);
    EXPECT_EQ(dev.b, host.b);
    // gradient at arbitrary (λ, y)
    std::vector<double> lam(32), y(dev.m());
    for (double& v : lam) v = N(rng);
    for (double& v : y) v = std::abs(N(rng));
    FrameGradient g;
    g.resize(8);
    loss_qp_gradient(cfg, t, lam.data(), y.data(), g);
    const double reg_host = regularizer_value(cfg, t.frame, &g);
    std::vector<double> want(57, 0.0), got(57, 0.0);
    model.backprop(t.x, t.x_next, g, want.data());
    const double reg_dev = cn::gradient<double, UnitStride>(
        c, theta.data(), t.x.data(), t.x_next.data(), View<const double, UnitStride>{lam.data(), {}},
        View<const double, UnitStride>{y.data(), {}}, got.data());
    EXPECT_NEAR(reg_dev, reg_host, 1e-12 * (1 + reg_host));
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-10 * (1 + std::abs(want[i]))) << "grad[" << i << "]";
  }
}

INSTANTIATE_TEST_SUITE_P(Friction, DeviceLossMath,
                         ::testing::Values(FrictionModel::kCone, FrictionModel::kOctagon),
                         [](const auto& param_info) {
                           return param_info.param == FrictionModel::kCone ? std::string("Cone")
                                                                           : std::string("Octagon");
                         });

}  // namespace
}  // namespace impulse
