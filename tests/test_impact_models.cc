// Planar impact (host/impact): the six analytical models against closed-form cases,
// brute force, energy and the friction cone; against the authors' own predictions in
// the real data; the IRB bound's optimality; identification of known parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "host/impact/identify.h"
#include "host/impact/impact_models.h"
#include "io/impact_data.h"
#include "io/npz.h"
#include "solvers/error.h"
#include "solvers/impact_lcp.h"
#include "test_util.h"

namespace impulse {
namespace {

const std::string kData = testing::shared_data("planar_impact/ellipse_impacts.npz");

// a random planar impact of the ellipse's mass and inertia, approaching the surface
ImpactGeometry random_impact(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  Impact m;
  const double th = u(rng) * M_PI;
  m.n = {0, 1, 0.03 * u(rng)};
  m.d = {1, 0, 0.035 * u(rng) + 0.01 * std::cos(th)};
  m.state_i = {0, 0, th, 1.5 * u(rng), -0.5 - 2.5 * std::abs(u(rng)), 10 * u(rng)};
  m.state_f = m.state_i;
  ImpactGeometry g = ImpactGeometry::of(m, 0.0364, 0.0364 * 3.7e-4);
  if (g.vc(1) >= 0) m.state_i[4] -= g.vc(1) + 0.5;  // make it approach
  return ImpactGeometry::of(m, 0.0364, 0.0364 * 3.7e-4);
}

TEST(ImpactModels, FrictionlessTheyGiveTheRestitutionImpulse) {
  std::mt19937_64 rng(1);
  for (int trial = 0; trial < 50; ++trial) {
    ImpactGeometry g = random_impact(rng);
    const double eps = 0.1 + 0.8 * (trial % 9) / 8.0;
    // frictionless: P_t = 0 and the normal impulse (1 + ε) times the one that stops v_n;
    // Whittaker (the authors' form: the sticking impulse's P_n, then the clamp) only
    // when the normal and tangential directions are uncoupled (W_tn = 0)
    for (bool coupled : {true, false}) {
      if (!coupled) g.W(0, 1) = g.W(1, 0) = 0;
      const double Pn = -(1 + eps) * g.vc(1) / g.W(1, 1);
      for (int m = 0; m < kImpactModels; ++m) {
        if (coupled && m == impact_model_index("whittaker")) continue;
        const ImpactPrediction p = predict_impact(m, g, {0.0, eps});
        EXPECT_EQ(p.status, kImpactOk) << impact_model_name(m);
        EXPECT_NEAR(p.P(0), 0, 1e-7 * Pn) << impact_model_name(m);
        EXPECT_NEAR(p.P(1), Pn, 2e-6 * Pn) << impact_model_name(m) << " eps " << eps << " coupled " << coupled;
      }
    }
  }
}

TEST(ImpactModels, StickingNewtonModelsStopTheSlipAndRestituteTheNormalVelocity) {
  std::mt19937_64 rng(2);
  for (int trial = 0; trial < 50; ++trial) {
    const ImpactGeometry g = random_impact(rng);
    const double eps = 0.5;
    for (int m : {impact_model_index("ap-newton"), impact_model_index("whittaker")}) {
      const ImpactPrediction p = predict_impact(m, g, {10.0, eps});  // a cone wide enough to stick
      const Eigen::Vector2d vcf = g.vc + g.W * p.P;
      EXPECT_NEAR(vcf(0), 0, 1e-9) << impact_model_name(m);
      EXPECT_NEAR(vcf(1), -eps * g.vc(1), 1e-9) << impact_model_name(m);
    }
    // head-on without coupling: nothing tangential
    ImpactGeometry h = g;
    h.W(0, 1) = h.W(1, 0) = 0;
    h.vc(0) = 0;
    for (int m = 0; m < kImpactModels; ++m)
      EXPECT_NEAR(predict_impact(m, h, {0.3, eps}).P(0), 0, 1e-9) << impact_model_name(m);
  }
}

// the planar AP Newton LCP by enumeration of its cases: no contact, stick, slide ±
ImpactGeometry random_impact_of_seed(uint64_t seed) {
  std::mt19937_64 rng(seed);
  return random_impact(rng);
}

// Every solution of the 4 x 4 AP LCP, by trying each of its 16 complementary bases
// (the LCP as the header writes it, built here independently of impact_models.cc):
// the impulses (P_t, P_n) of the bases whose z and w are both nonnegative.
std::vector<Eigen::Vector2d> ap_lcp_all_solutions(const ImpactGeometry& g, double mu, double e) {
  const double Wtt = g.W(0, 0), Wtn = g.W(0, 1), Wnn = g.W(1, 1);
  Eigen::Matrix4d M;
  M << Wnn, Wtn, -Wtn, 0, Wtn, Wtt, -Wtt, 1, -Wtn, -Wtt, Wtt, 1, mu, -1, -1, 0;
  const Eigen::Vector4d q((1 + e) * g.vc(1), g.vc(0), -g.vc(0), 0);
  std::vector<Eigen::Vector2d> sols;
  for (int S = 0; S < 16; ++S) {
    std::vector<int> idx;
    for (int i = 0; i < 4; ++i)
      if (S & (1 << i)) idx.push_back(i);
    Eigen::Vector4d z = Eigen::Vector4d::Zero();
    if (!idx.empty()) {
      const int k = static_cast<int>(idx.size());
      Eigen::MatrixXd A(k, k);
      Eigen::VectorXd b(k);
      for (int r = 0; r < k; ++r) {
        b(r) = -q(idx[static_cast<size_t>(r)]);
        for (int c = 0; c < k; ++c) A(r, c) = M(idx[static_cast<size_t>(r)], idx[static_cast<size_t>(c)]);
      }
      const Eigen::FullPivLU<Eigen::MatrixXd> lu(A);
      if (lu.rank() < k) continue;  // a singular basis: its solutions, if any, are another basis's too
      const Eigen::VectorXd zs = lu.solve(b);
      for (int r = 0; r < k; ++r) z(idx[static_cast<size_t>(r)]) = zs(r);
    }
    const Eigen::Vector4d w = M * z + q;
    const double scale = 1e-10 * (1 + z.cwiseAbs().maxCoeff() + q.cwiseAbs().maxCoeff());
    if (z.minCoeff() >= -scale && w.minCoeff() >= -scale) sols.emplace_back(z(1) - z(2), z(0));
  }
  return sols;
}

TEST(ImpactModels, ApPiecesAreSolutionsOfTheLcpAndEqualLemkeWhereItIsUnique) {
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<double> u(0, 1);
  int unique = 0, total = 0;
  for (int trial = 0; trial < 400; ++trial) {
    ImpactGeometry g = random_impact(rng);
    if (trial % 10 == 0) g.vc(0) = 0;  // no slip before: sticking from the start
    const double mu = trial % 4 == 0 ? 1.5 * u(rng) : 0.4 * u(rng), eps = u(rng);
    for (int model : {1, 2}) {  // ap-poisson, ap-newton
      const bool poisson = model == 1;
      const std::vector<Eigen::Vector2d> all = ap_lcp_all_solutions(g, mu, poisson ? 0.0 : eps);
      ASSERT_FALSE(all.empty()) << "trial " << trial;
      int fallbacks = -1;
      const ImpactPrediction p = predict_impacts(model, {g}, {{mu, eps}}, 1, Backend::kCpu, &fallbacks)[0];
      ASSERT_EQ(p.status, kImpactOk) << "trial " << trial;
      EXPECT_EQ(fallbacks, 0) << "trial " << trial << ": a rigid body's LCP left to Lemke";
      // the batched answer, undone to the compression impulse for Poisson
      const Eigen::Vector2d Pc = poisson ? Eigen::Vector2d(p.P(0), p.P(1) / (1 + eps)) : p.P;
      double nearest = 1e300;
      bool same = true;
      for (const Eigen::Vector2d& s : all) {
        nearest = std::min(nearest, (s - Pc).norm());
        same = same && (s - all.front()).norm() <= 1e-9 * (1 + s.norm());
      }
      EXPECT_LE(nearest, 1e-9 * (1 + Pc.norm())) << "trial " << trial << ": not a solution of the LCP";
      ++total;
      if (!same) continue;
      ++unique;
      const ImpactPrediction l = predict_impact_lemke(model, g, {mu, eps});
      EXPECT_LE((l.P - p.P).norm(), 1e-9 * (1 + p.P.norm())) << "trial " << trial << " Lemke " << l.P.transpose()
                                                             << " pieces " << p.P.transpose();
    }
  }
  // the comparison with Lemke must have covered nearly every problem
  EXPECT_GE(unique, total * 9 / 10) << unique << " of " << total;
}

TEST(ImpactModels, ApPiecesAgreeWithLemkeOnTheRealImpacts) {
  if (!std::filesystem::exists(kData))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("planar impact data", kData, "impacts"));
  const std::vector<ImpactGeometry> g = impact_geometry(load_impacts(kData));
  // Table 1's values and two far from them
  for (const ImpactParams p : {ImpactParams{0.101, 0.526}, ImpactParams{0.084, 0.547}, ImpactParams{0.3, 0.2},
                               ImpactParams{1.0, 0.9}})
    for (int model : {1, 2}) {
      int fallbacks = -1;
      const std::vector<ImpactPrediction> b = predict_impacts(model, g, {p}, 2, Backend::kCpu, &fallbacks);
      EXPECT_EQ(fallbacks, 0) << impact_model_name(model) << ": every real impact is solved by its pieces";
      double worst = 0;
      for (size_t k = 0; k < g.size(); ++k) {
        const ImpactPrediction l = predict_impact_lemke(model, g[k], p);
        ASSERT_EQ(b[k].status, l.status) << impact_model_name(model) << " impact " << k;
        worst = std::max(worst, (b[k].P - l.P).norm() / (1 + l.P.norm()));
      }
      EXPECT_LE(worst, 1e-10) << impact_model_name(model) << " mu " << p.mu << " eps " << p.eps;
    }
}

TEST(ImpactModels, ApBatchIsTheSameForAnyThreadCountAndLane) {
  std::mt19937_64 rng(22);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<ImpactGeometry> g;
  std::vector<ImpactParams> par;
  for (int k = 0; k < 37; ++k) {  // not a multiple of any lane width: a partial group
    g.push_back(random_impact(rng));
    par.push_back({0.5 * u(rng), u(rng)});
  }
  for (int model : {1, 2}) {
    const auto one = predict_impacts(model, g, par, 1), two = predict_impacts(model, g, par, 2);
    for (size_t k = 0; k < g.size(); ++k) {
      EXPECT_EQ(one[k].P(0), two[k].P(0)) << k;
      EXPECT_EQ(one[k].P(1), two[k].P(1)) << k;
      // alone (lane 0 of a group of one) as in the batch (lane k mod W)
      const ImpactPrediction alone = predict_impact(model, g[k], par[k]);
      EXPECT_EQ(alone.P(0), one[k].P(0)) << k;
      EXPECT_EQ(alone.P(1), one[k].P(1)) << k;
      // and the scalar instantiation of the same header
      double Pt = 0, Pn = 0;
      ASSERT_TRUE(planar_ap_impulse(model == 1, g[k].W(0, 0), g[k].W(0, 1), g[k].W(1, 1), g[k].vc(0), g[k].vc(1),
                                    par[k].mu, par[k].eps, Pt, Pn));
      EXPECT_NEAR(Pt, one[k].P(0), 1e-14 * (1 + std::abs(Pt))) << k;
      EXPECT_NEAR(Pn, one[k].P(1), 1e-14 * (1 + std::abs(Pn))) << k;
    }
  }
}

TEST(ImpactModels, ApBatchFallsBackToLemkeWhereNoPieceHolds) {
  // A W that is not positive definite (no rigid body has one: the pieces' premise
  // fails) and μ above Wnn/Wtn: most of these impacts have no piece that holds
  std::mt19937_64 rng(23);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<ImpactGeometry> g;
  int none = 0;
  for (int k = 0; k < 400; ++k) {
    ImpactGeometry G;
    G.W << 1.0, 1.2, 1.2, 1.0;
    G.vc = Eigen::Vector2d(2 * u(rng), -0.1 - std::abs(u(rng)));
    double Pt, Pn;
    if (!planar_ap_lcp(G.W(0, 0), G.W(0, 1), G.W(1, 1), G.vc(0), G.vc(1), 1.5, 0.5, Pt, Pn)) ++none;
    g.push_back(G);
  }
  ASSERT_GT(none, 0) << "no impact exercised the fallback";
  int fallbacks = -1;
  const auto b = predict_impacts(impact_model_index("ap-newton"), g, {{1.5, 0.5}}, 2, Backend::kCpu, &fallbacks);
  EXPECT_EQ(fallbacks, none);
  for (size_t k = 0; k < g.size(); ++k) {
    const ImpactPrediction l = predict_impact_lemke(impact_model_index("ap-newton"), g[k], {1.5, 0.5});
    double Pt, Pn;
    if (!planar_ap_lcp(g[k].W(0, 0), g[k].W(0, 1), g[k].W(1, 1), g[k].vc(0), g[k].vc(1), 1.5, 0.5, Pt, Pn)) {
      EXPECT_EQ(b[k].status, l.status) << k;
      EXPECT_EQ(b[k].P(0), l.P(0)) << k;  // Lemke's own answer
      EXPECT_EQ(b[k].P(1), l.P(1)) << k;
    }
  }
}

TEST(ImpactModels, ApPiecesRefuseNonFiniteDataAndOverflow) {
  // a NaN, an infinite approach velocity, and one whose (1 + e) v_n overflows: no piece
  // may be taken (Lemke then decides), in the scalar and the lane instantiation alike
  const double nan = std::nan(""), inf = INFINITY;
  const double cases[][5] = {{1.0, 0.2, 1.0, 0.5, nan}, {1.0, 0.2, 1.0, 0.5, -inf}, {1.0, 0.2, 1.0, inf, -1.0},
                             {1.0, 0.2, 1.0, 0.5, -1e308}};
  for (const auto& c : cases) {
    double Pt = 0, Pn = 0;
    EXPECT_FALSE(planar_ap_lcp(c[0], c[1], c[2], c[3], c[4], 0.3, 0.9, Pt, Pn)) << c[3] << " " << c[4];
    ImpactGeometry G;
    G.W << c[0], c[1], c[1], c[2];
    G.vc = Eigen::Vector2d(c[3], c[4]);
    int fallbacks = -1;
    const std::vector<ImpactGeometry> two = {random_impact_of_seed(5), G};
    predict_impacts(impact_model_index("ap-newton"), two, {{0.3, 0.9}}, 1, Backend::kCpu, &fallbacks);
    EXPECT_EQ(fallbacks, 1) << c[3] << " " << c[4];
  }
}

TEST(ImpactModels, ImpulsesLieInTheConeAndMirtichNeverCreatesEnergy) {
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 300; ++trial) {
    const ImpactGeometry g = random_impact(rng);
    const ImpactParams p{0.4 * u(rng), u(rng)};
    for (int m = 0; m < kImpactModels; ++m) {
      const ImpactPrediction r = predict_impact(m, g, p);
      EXPECT_GE(r.P(1), -1e-12) << impact_model_name(m);
      EXPECT_LE(std::abs(r.P(0)), p.mu * r.P(1) * (1 + 1e-9) + 1e-12) << impact_model_name(m) << " trial " << trial;
    }
    // Stronge's energetic restitution: the contact's kinetic energy never grows
    const ImpactPrediction r = predict_impact(impact_model_index("mirtich"), g, p);
    EXPECT_LE(g.energy_ratio(r.P), 1 + 1e-9) << "trial " << trial;
  }
}

TEST(ImpactModels, NoModelCreatesEnergyOnTheRealImpacts) {
  if (!std::filesystem::exists(kData))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("planar impact data", kData, "impacts"));
  const ImpactSet s = load_impacts(kData);
  const std::vector<ImpactGeometry> g = impact_geometry(s);
  // a 5 x 4 grid over the range of the identified parameters and a margin (Table 1: μ
  // 0.06-0.12, ε 0.48-0.56). Far outside it the Poisson and Newton forms can create
  // energy (e.g. Drumwright-Shell at μ 0.3, ε 0.9 on 2 of these impacts); Stronge's
  // energetic form (Mirtich) never does (above)
  std::vector<ImpactParams> grid;
  for (double mu : {0.05, 0.075, 0.1, 0.125, 0.15})
    for (double eps : {0.45, 0.5, 0.55, 0.6}) grid.push_back(ImpactParams{mu, eps});
  for (int m = 0; m < kImpactModels; ++m)
    for (const ImpactParams& p : grid) {
      const std::vector<ImpactPrediction> r = predict_impacts(m, g, {p}, 2);
      int created = 0;
      for (size_t i = 0; i < g.size(); ++i) created += g[i].energy_ratio(r[i].P) > 1 + 1e-9;
      EXPECT_EQ(created, 0) << impact_model_name(m) << " mu " << p.mu << " eps " << p.eps;
    }
}

// the authors' stored impulses of model m (p_models), one per impact
std::vector<Eigen::Vector2d> their_predictions(const ImpactSet& s, int m) {
  std::vector<Eigen::Vector2d> theirs;
  for (const Impact& im : s.impacts) theirs.emplace_back(im.p_models[2 * m], im.p_models[2 * m + 1]);
  return theirs;
}

// the authors' predictions (p_models), with (μ, ε) identified for them on 300 impacts,
// checked on the other 900
TEST(ImpactModels, MatchTheAuthorsPredictions) {
  if (!std::filesystem::exists(kData))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("planar impact data", kData, "impacts"));
  const ImpactSet s = load_impacts(kData);
  ASSERT_TRUE(s.has_models);
  const std::vector<ImpactGeometry> g = impact_geometry(s);
  const std::vector<ImpactGeometry> fit_g(g.begin(), g.begin() + 300);
  for (const char* name : {"drumwright-shell", "ap-newton", "wang-mason", "whittaker"}) {
    const int m = impact_model_index(name);
    const std::vector<Eigen::Vector2d> theirs = their_predictions(s, m);
    IdentifyOptions o;
    o.threads = 2;
    o.refine_steps = 60;
    o.refine_tol = 1e-6;
    const Identified f = identify(m, fit_g, std::vector<Eigen::Vector2d>(theirs.begin(), theirs.begin() + 300), o);
    const std::vector<ImpactPrediction> ours = predict_impacts(m, g, {f.params}, 2);
    double err = 0, norm = 0;
    for (size_t i = 300; i < g.size(); ++i) {
      err += (ours[i].P - theirs[i]).norm();
      norm += theirs[i].norm();
    }
    // their own IRB fit agrees with ours to 1.3e-4 (below): the data's precision
    EXPECT_LT(err / norm, 1e-3) << name << " at mu " << f.params.mu << " eps " << f.params.eps;
  }
}

// AP Poisson and Mirtich follow the authors' own forms in the stored predictions
// (impact_models.h, predict_impact_authors): fitted on 300 impacts, checked on the other
// 900. Mirtich's form reproduces them to 3e-6 (to rounding at the (μ, ε) they used, which
// the fit finds to ~2e-6); AP Poisson's on the impacts where the
// authors' LCP solves converged (their solver stopped early on ~10%, near the ellipse's
// vertices, where no converged form can match them)
TEST(ImpactModels, TheAuthorsFormsOfApPoissonAndMirtichMatchTheirPredictions) {
  if (!std::filesystem::exists(kData))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("planar impact data", kData, "impacts"));
  const ImpactSet s = load_impacts(kData);
  ASSERT_TRUE(s.has_models);
  const std::vector<ImpactGeometry> g = impact_geometry(s);
  const std::vector<ImpactGeometry> fit_g(g.begin(), g.begin() + 300);
  for (const char* name : {"mirtich", "ap-poisson"}) {
    const int m = impact_model_index(name);
    const std::vector<Eigen::Vector2d> theirs = their_predictions(s, m);
    IdentifyOptions o;
    o.authors_form = true;
    o.grid_mu = 11;
    o.grid_eps = 11;
    o.refine_steps = 80;
    o.refine_tol = 1e-7;
    const Identified f = identify(m, fit_g, std::vector<Eigen::Vector2d>(theirs.begin(), theirs.begin() + 300), o);
    std::vector<double> rel;
    double err = 0, norm = 0;
    for (size_t i = 300; i < g.size(); ++i) {
      const ImpactPrediction p = predict_impact_authors(m, g[i], f.params);
      EXPECT_EQ(p.status, kImpactOk);
      err += (p.P - theirs[i]).norm();
      norm += theirs[i].norm();
      rel.push_back((p.P - theirs[i]).norm() / theirs[i].norm());
    }
    std::sort(rel.begin(), rel.end());
    const double median = rel[rel.size() / 2], p85 = rel[rel.size() * 85 / 100];
    SCOPED_TRACE(std::string(name) + " at mu " + std::to_string(f.params.mu) + " eps " + std::to_string(f.params.eps));
    if (std::string(name) == "mirtich") {
      EXPECT_LT(err / norm, 1e-5) << "the fit lands within ~2e-6 of the (mu, eps) they used, where it is exact";
      EXPECT_NEAR(f.params.mu, 0.062, 0.01) << "Table 1's Mirtich mu";
    } else {
      EXPECT_LT(median, 1e-5);
      EXPECT_LT(p85, 1e-4) << "85% of the impacts to 1e-4";
      EXPECT_NEAR(f.params.mu, 0.101, 0.01) << "Table 1's AP Poisson mu";
    }
  }
  EXPECT_THROW(predict_impact_authors(impact_model_index("whittaker"), g[0], {0.1, 0.5}), Error);
}

TEST(ImpactIrb, AdmissibleOptimalAndAsTheData) {
  if (!std::filesystem::exists(kData))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("planar impact data", kData, "impacts"));
  const ImpactSet s = load_impacts(kData);
  std::vector<ImpactGeometry> g = impact_geometry(s);
  g.resize(200);
  int solved = 0;
  const std::vector<Eigen::Vector2d> P = irb_impulses(g, 2, &solved);
  EXPECT_EQ(solved, 200);
  double err = 0, norm = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Eigen::Vector2d data(s.impacts[i].p_irb[0], s.impacts[i].p_irb[1]);
    err += (P[i] - data).norm();
    norm += data.norm();
    // admissible: energy not created, no penetration
    EXPECT_LE(g[i].energy_ratio(P[i]), 1 + 1e-6) << i;
    EXPECT_GE((g[i].vc + g[i].W * P[i])(1), -1e-6) << i;
    // no admissible impulse fits better: a polar grid over the ellipse (α ≤ 1)
    auto fit = [&](const Eigen::Vector2d& Q) { return (g[i].vf - g[i].post_velocity(Q)).squaredNorm(); };
    const double best = fit(P[i]);
    for (double a : {0.05, 0.2, 0.4, 0.6, 0.8, 0.95, 1.0})
      for (const Eigen::Vector2d& Q : g[i].energy_ellipse(a, 180)) {
        if ((g[i].vc + g[i].W * Q)(1) < 0) continue;
        EXPECT_GE(fit(Q), best * (1 - 1e-6) - 1e-12) << "impact " << i << " alpha " << a;
      }
  }
  EXPECT_LT(err / norm, 5e-4) << "against the data's own IRB fits";
}

// The IRB problem (Eq. 7) restated from the impact's data alone, without the solver's
// conic form (no Cholesky factor, no duals):
//   min f(P) = ½‖Δv − B P‖²,  B = M⁻¹Jᵀ, Δv = v_f − v_i
//   s.t. g(P) = u_n >= 0,  h(P) = E₀ − uᵀM_c u >= 0,  u = v_c + W P, E₀ = v_cᵀM_c v_c,
// with ∇f = Bᵀ(BP − Δv), ∇g = W's normal row, ∇h = −2 W M_c u = −2u. KKT at the returned
// P: primal feasibility, multipliers λ of the active constraints from stationarity
// ∇f = λ_g ∇g + λ_h ∇h, dual feasibility λ >= 0 and complementarity λ·slack = 0. The
// problem is convex (a convex quadratic over the intersection of an ellipse and a half
// plane), so KKT means no admissible impulse fits better.
//
// Tolerances come from the solver's stopping test (tight_settings in impact_models.cc:
// eps_abs 1e-10, eps_rel 1e-9 on ∞-norms of the unscaled residuals):
// - primal: ‖Ax − z‖∞ <= eps_p = eps_abs + eps_rel·max(‖Ax‖∞, ‖z‖∞) with z in b − K;
//   ‖Ax‖∞ is max(|(WP)_n|, ‖C W P‖∞) <= max(|(WP)_n|, √(PᵀWP)), and z within eps_p of
//   it, so u_n >= −eps_p and √(uᵀM_c u) − √E₀ <= (1 + √2) eps_p (the cone's head and
//   its 2-vector each off by at most eps_p in ∞-norm);
// - stationarity: ‖HP + q + Aᵀy‖∞ <= eps_d = eps_abs + eps_rel·max(‖HP‖∞, ‖q‖∞,
//   ‖Aᵀy‖∞), and ‖Aᵀy‖∞ <= ‖HP‖∞ + ‖q‖∞ + eps_d, so scale_d = ‖HP‖∞ + ‖q‖∞; the
//   cone's multiplier need only be near-aligned with u (its alignment is bounded by the
//   duality gap test, same eps), which we allow for with a factor kAlign;
// - complementarity: λ·slack <= the gap tolerance eps_abs + eps_rel·max(|PᵀHP|, |qᵀP|)
//   plus |P|·eps_d (sᵀy = gap − xᵀ(dual residual)).
// A constraint counts as active when its slack is within kActive·eps_p; with two
// active constraints in two unknowns stationarity is exact and dual feasibility decides.
TEST(ImpactIrb, KktConditionsHoldAtTheReturnedImpulse) {
  constexpr double kEpsAbs = 1e-10, kEpsRel = 1e-9, kAlign = 10, kActive = 100;
  std::vector<ImpactGeometry> g;
  // real impacts (if the data are here): rows 300 .. 399, other than the test above
  if (std::filesystem::exists(kData)) {
    const ImpactSet s = load_impacts(kData);
    const std::vector<ImpactGeometry> all = impact_geometry(s);
    g.assign(all.begin() + 300, all.begin() + 400);
  }
  const size_t n_real = g.size();
  // random impacts whose outcome is an impulse anywhere in and around the Energy Ellipse
  // (up to 1.5 times its size) plus a velocity change no impulse gives: every active set
  std::mt19937_64 rng(18);
  std::uniform_real_distribution<double> u01(0, 1);
  while (g.size() < n_real + 100) {
    ImpactGeometry G = random_impact(rng);
    const Eigen::Matrix2d Mc = G.W.inverse();
    const double r = std::sqrt(G.vc.dot(Mc * G.vc));
    const Eigen::Matrix2d LinvT = Eigen::Matrix2d(G.W.llt().matrixL()).transpose().inverse();
    const double a = 2 * M_PI * u01(rng);
    const Eigen::Vector2d Pt = -Mc * G.vc + 1.5 * r * u01(rng) * LinvT * Eigen::Vector2d(std::cos(a), std::sin(a));
    const Eigen::Vector3d dv = G.Minv * G.J.transpose() * Pt;
    G.vf = G.vi + dv + 0.05 * dv.norm() * Eigen::Vector3d(u01(rng) - 0.5, u01(rng) - 0.5, u01(rng) - 0.5);
    g.push_back(G);
  }
  int solved = 0;
  const std::vector<Eigen::Vector2d> P = irb_impulses(g, 2, &solved);
  ASSERT_EQ(solved, static_cast<int>(g.size()));
  int cases[4] = {0, 0, 0, 0};  // active: none, normal only, energy only, both
  double worst_stat = 0, worst_comp = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const ImpactGeometry& G = g[i];
    const Eigen::Matrix<double, 3, 2> B = G.Minv * G.J.transpose();
    const Eigen::Matrix2d H = B.transpose() * B, Mc = G.W.inverse();
    const Eigen::Vector2d q = -B.transpose() * (G.vf - G.vi);
    const Eigen::Vector2d grad = H * P[i] + q;
    const Eigen::Vector2d u = G.vc + G.W * P[i], WP = G.W * P[i];
    const double E0 = G.vc.dot(Mc * G.vc), E = u.dot(Mc * u);
    const double eps_p = kEpsAbs + kEpsRel * std::max({std::abs(WP(1)), std::sqrt(P[i].dot(WP)), std::abs(G.vc(1)),
                                                       std::sqrt(E0)});
    const double scale_d = (H * P[i]).cwiseAbs().maxCoeff() + q.cwiseAbs().maxCoeff();
    const double eps_d = kEpsAbs + kEpsRel * scale_d;
    const double eps_gap = kEpsAbs + kEpsRel * std::max(std::abs(P[i].dot(H * P[i])), std::abs(q.dot(P[i]))) +
                           P[i].lpNorm<1>() * eps_d;
    // primal feasibility
    const double slack_g = u(1), slack_h_root = std::sqrt(E0) - std::sqrt(E);  // h's slack in √ energy units
    EXPECT_GE(slack_g, -eps_p) << "impact " << i << ": v_n after the impulse";
    EXPECT_GE(slack_h_root, -(1 + std::sqrt(2.0)) * eps_p) << "impact " << i << ": energy created";
    // active set and multipliers
    const bool act_g = slack_g <= kActive * eps_p, act_h = slack_h_root <= kActive * eps_p;
    const Eigen::Vector2d dg = G.W.row(1).transpose(), dh = -2 * u;
    Eigen::Vector2d lambda = Eigen::Vector2d::Zero();
    if (act_g && act_h) {
      Eigen::Matrix2d A;
      A << dg, dh;
      lambda = A.fullPivLu().solve(grad);
    } else if (act_g) {
      lambda(0) = grad.dot(dg) / dg.squaredNorm();
    } else if (act_h) {
      lambda(1) = grad.dot(dh) / dh.squaredNorm();
    }
    ++cases[(act_g ? 1 : 0) + (act_h ? 2 : 0)];
    // stationarity
    const Eigen::Vector2d res = grad - lambda(0) * dg - lambda(1) * dh;
    const double stat = res.cwiseAbs().maxCoeff();
    worst_stat = std::max(worst_stat, stat / eps_d);
    EXPECT_LE(stat, kAlign * eps_d) << "impact " << i << ": stationarity, active " << act_g << act_h << ", ∇f "
                                    << grad.transpose();
    // dual feasibility: λ ∇c no larger against its constraint than the stationarity slack
    EXPECT_GE(lambda(0) * dg.cwiseAbs().maxCoeff(), -kAlign * eps_d) << "impact " << i << ": λ_g " << lambda(0);
    EXPECT_GE(lambda(1) * dh.cwiseAbs().maxCoeff(), -kAlign * eps_d) << "impact " << i << ": λ_h " << lambda(1);
    // complementarity, in the solver's units: λ_g·u_n, and for the cone λ_h·(E₀ − E)
    // = (2λ_h√E₀)·(√E₀ − √E)·(1 + √(E/E₀))/2, its multiplier y₀ = 2λ_h√E₀ times its slack
    const double comp = std::max(std::abs(lambda(0) * slack_g), std::abs(lambda(1) * (E0 - E)));
    worst_comp = std::max(worst_comp, comp / eps_gap);
    EXPECT_LE(comp, kAlign * eps_gap) << "impact " << i << ": complementarity";
  }
  std::printf("IRB KKT: %zu real + %zu random impacts; active sets none %d, v_n %d, energy %d, both %d; "
              "worst stationarity %.3g eps_d, complementarity %.3g eps_gap\n",
              n_real, g.size() - n_real, cases[0], cases[1], cases[2], cases[3], worst_stat, worst_comp);
  // the random impacts reach every active set (else the test would not check them)
  for (int c = 0; c < 4; ++c) EXPECT_GE(cases[c], 5) << "active set " << c;
}

TEST(ImpactIdentify, RecoversKnownParametersFromEachModel) {
  if (!std::filesystem::exists(kData))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("planar impact data", kData, "impacts"));
  const ImpactSet s = load_impacts(kData);
  std::vector<ImpactGeometry> g = impact_geometry(s);
  g.resize(150);
  const ImpactParams truth{0.11, 0.52};
  for (int m = 0; m < kImpactModels; ++m) {
    std::vector<Eigen::Vector2d> target;
    for (const ImpactPrediction& p : predict_impacts(m, g, {truth}, 2)) target.push_back(p.P);
    for (const std::string method : {"search", "gradient"}) {
      if (method == "gradient" && !impact_model_has_gradient(m)) continue;
      IdentifyOptions o;
      o.threads = 2;
      o.refine_steps = 60;
      o.refine_tol = 1e-6;
      o.method = method;
      const Identified f = identify(m, g, target, o);
      // exact targets: Gauss-Newton lands on the truth; the search to its step
      const double tol = method == "gradient" ? 1e-6 : 2e-3;
      EXPECT_NEAR(f.params.mu, truth.mu, tol) << impact_model_name(m) << " by " << method;
      EXPECT_NEAR(f.params.eps, truth.eps, tol) << impact_model_name(m) << " by " << method;
    }
  }
}

// Gauss-Newton against the pattern search on real impacts and their observed (IRB)
// impulses, where no parameters fit exactly: it reaches the search's cost or lower.
TEST(ImpactIdentify, GradientReachesTheSearchCostOnRealImpacts) {
  if (!std::filesystem::exists(kData))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("planar impact data", kData, "impacts"));
  const ImpactSet s = load_impacts(kData);
  std::vector<ImpactGeometry> g = impact_geometry(s);
  std::vector<Eigen::Vector2d> target;
  for (size_t i = 0; i < 240; ++i) target.push_back(Eigen::Vector2d(s.impacts[i].p_irb[0], s.impacts[i].p_irb[1]));
  for (int half = 0; half < 2; ++half) {
    const std::vector<ImpactGeometry> gh(g.begin() + 120 * half, g.begin() + 120 * (half + 1));
    const std::vector<Eigen::Vector2d> th(target.begin() + 120 * half, target.begin() + 120 * (half + 1));
    for (int m = 0; m < kImpactModels; ++m) {
      if (!impact_model_has_gradient(m)) continue;
      IdentifyOptions o;
      o.threads = 2;
      o.method = "search";
      const Identified search = identify(m, gh, th, o);
      o.method = "gradient";
      const Identified grad = identify(m, gh, th, o);
      EXPECT_LE(grad.cost, search.cost * (1 + 1e-4)) << impact_model_name(m) << ", impacts " << 120 * half << "+";
      std::printf("[ identify ] %-16s impacts %3d+: search mu %.4f eps %.4f cost %.6f | gradient mu %.4f eps %.4f cost %.6f\n",
                  impact_model_name(m), 120 * half, search.params.mu, search.params.eps, search.cost, grad.params.mu,
                  grad.params.eps, grad.cost);
    }
  }
}

TEST(ImpactIdentify, MethodsAreCheckedByName) {
  std::mt19937_64 rng(3);
  std::vector<ImpactGeometry> g = {random_impact(rng), random_impact(rng)};
  std::vector<Eigen::Vector2d> t = {Eigen::Vector2d(0, 0.1), Eigen::Vector2d(0, 0.1)};
  IdentifyOptions o;
  o.method = "gradient";
  const int mirtich = impact_model_index("mirtich");
  testing::expect_error([&] { identify(mirtich, g, t, o); }, "mirtich has no derivatives");
  testing::expect_error([&] { predict_impact_derivative(impact_model_index("wang-mason"), g[0], {0.1, 0.5}); },
                                   "wang-mason");
  o.method = "newton";
  testing::expect_error([&] { identify(impact_model_index("whittaker"), g, t, o); }, "unknown method 'newton'");
  o.method = "auto";
  EXPECT_EQ(identify_method(mirtich, o), "search");
  EXPECT_EQ(identify_method(impact_model_index("ap-newton"), o), "gradient");
  o.authors_form = true;
  EXPECT_EQ(identify_method(impact_model_index("ap-poisson"), o), "search");
}

// dP/d(μ, ε) of the four differentiable models against central differences, on random
// impacts and parameters; a sample whose one-sided differences disagree straddles a
// switch of the active set (a kink) and is not a test of the derivative: at most 5%.
TEST(ImpactModels, DerivativesMatchFiniteDifferences) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> umu(0.02, 0.4), ueps(0.05, 0.95);
  for (int m = 0; m < kImpactModels; ++m) {
    if (!impact_model_has_gradient(m)) continue;
    int checked = 0, kinks = 0, sliding = 0, sticking = 0, jams = 0;
    for (int i = 0; i < 300; ++i) {
      const ImpactGeometry g = random_impact(rng);
      const ImpactParams p{umu(rng), ueps(rng)};
      const ImpactDerivative d = predict_impact_derivative(m, g, p);
      ASSERT_EQ(d.pred.status == kImpactFailed, false) << impact_model_name(m);
      EXPECT_LT((d.pred.P - predict_impact(m, g, p).P).norm(), 1e-7 * (1 + d.pred.P.norm())) << impact_model_name(m);
      const double h = 1e-6;
      Eigen::Matrix2d central, fwd, bwd;
      for (int c = 0; c < 2; ++c) {
        ImpactParams a = p, b = p;
        (c == 0 ? a.mu : a.eps) += h;
        (c == 0 ? b.mu : b.eps) -= h;
        const Eigen::Vector2d Pa = predict_impact_derivative(m, g, a).pred.P;
        const Eigen::Vector2d Pb = predict_impact_derivative(m, g, b).pred.P;
        central.col(c) = (Pa - Pb) / (2 * h);
        fwd.col(c) = (Pa - d.pred.P) / h;
        bwd.col(c) = (d.pred.P - Pb) / h;
      }
      const double scale = central.norm() + 1e-6;  // relative: impulses are ~0.05 N s
      jams += d.pred.status == kImpactJam;
      if ((fwd - bwd).norm() > 1e-4 * scale) {
        ++kinks;
        continue;
      }
      ++checked;
      (d.dP.col(0).norm() > 1e-9 ? sliding : sticking) += 1;
      EXPECT_LT((d.dP - central).norm(), 1e-5 * scale)
          << impact_model_name(m) << " impact " << i << " mu " << p.mu << " eps " << p.eps << "\nanalytic\n"
          << d.dP << "\ncentral\n" << central;
    }
    EXPECT_LE(kinks, 15) << impact_model_name(m);
    // both kinds of branch were tested: friction at its bound (dP/dμ != 0) and not
    EXPECT_GE(sliding, 20) << impact_model_name(m);
    EXPECT_GE(sticking, 20) << impact_model_name(m);
    std::printf("[ derivative ] %-16s %d checked (%d with dP/dmu != 0, %d jammed), %d at kinks\n",
                impact_model_name(m), checked, sliding, jams, kinks);
  }
}

// Whittaker's other branch: where the sticking impulse would pull (strong tangent-normal
// coupling, fast slip), it slides with P_n from the restitution target. Contact-space
// geometries built for it; its derivative against central differences.
TEST(ImpactModels, WhittakerJamDerivativeMatchesFiniteDifferences) {
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> u(0, 1);
  const int wh = impact_model_index("whittaker");
  int jams = 0;
  for (int i = 0; i < 100; ++i) {
    ImpactGeometry g;
    const double a = 20 + 30 * u(rng), b = 20 + 30 * u(rng), rho = (u(rng) < 0.5 ? -1 : 1) * (0.8 + 0.15 * u(rng));
    g.W << a, rho * std::sqrt(a * b), rho * std::sqrt(a * b), b;
    g.vc = Eigen::Vector2d(-(rho > 0 ? 1 : -1) * (2 + 4 * u(rng)), -(0.5 + 1.5 * u(rng)));
    const ImpactParams p{0.05 + 0.4 * u(rng), 0.1 + 0.8 * u(rng)};
    const ImpactDerivative d = predict_impact_derivative(wh, g, p);
    if (d.pred.status != kImpactJam) continue;
    ++jams;
    const double h = 1e-6;
    Eigen::Matrix2d central;
    for (int c = 0; c < 2; ++c) {
      ImpactParams hi = p, lo = p;
      (c == 0 ? hi.mu : hi.eps) += h;
      (c == 0 ? lo.mu : lo.eps) -= h;
      central.col(c) = (predict_impact(wh, g, hi).P - predict_impact(wh, g, lo).P) / (2 * h);
    }
    EXPECT_LT((d.dP - central).norm(), 1e-5 * (central.norm() + 1e-6)) << "geometry " << i << "\n" << d.dP << "\n" << central;
  }
  EXPECT_GE(jams, 30);
}

// Drumwright-Shell: the exact active-set solution of the compression QP (the derivative
// path) and the batched conic-QP solver agree to the solver's tolerance.
TEST(ImpactModels, DrumwrightShellActiveSetsEqualTheBatchedSolver) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> umu(0.0, 0.6), ueps(0.0, 1.0);
  std::vector<ImpactGeometry> g;
  std::vector<ImpactParams> p;
  for (int i = 0; i < 400; ++i) {
    g.push_back(random_impact(rng));
    p.push_back({i % 40 == 0 ? 0.0 : umu(rng), ueps(rng)});
  }
  const int ds = impact_model_index("drumwright-shell");
  const std::vector<ImpactPrediction> batch = predict_impacts(ds, g, p, 2);
  const std::vector<ImpactDerivative> exact = predict_impacts_derivative(ds, g, p, 2);
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_EQ(batch[i].status, kImpactOk) << i;
    ASSERT_EQ(exact[i].pred.status, kImpactOk) << i;
    EXPECT_LT((batch[i].P - exact[i].pred.P).norm(), 1e-7 * (1 + exact[i].pred.P.norm())) << "impact " << i;
  }
}

TEST(ImpactData, BadFilesAreNamed) {
  const std::string dir = testing::fresh_dir("impact", "bad");
  auto write = [&](const std::string& name, std::vector<double> si, int64_t rows, int64_t cols) {
    NpzArchive z;
    z["states_i"] = make_npy({rows, cols}, si);
    z["states_f"] = make_npy({2, 6}, std::vector<double>(12, 0.0));
    z["n"] = make_npy({2, 3}, std::vector<double>{0, 1, 0, 0, 1, 0});
    z["d"] = make_npy({2, 3}, std::vector<double>{1, 0, 0, 1, 0, 0});
    write_npz(dir + "/" + name, z);
    try {
      load_impacts(dir + "/" + name);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::vector<double> ok(12, 0.0);
  EXPECT_EQ(write("ok.npz", ok, 2, 6), "");
  std::vector<double> nan = ok;
  nan[7] = NAN;
  EXPECT_NE(write("nan.npz", nan, 2, 6).find("'states_i' row 1 column 1 is not finite"), std::string::npos);
  EXPECT_NE(write("shape.npz", std::vector<double>(10, 0.0), 2, 5).find("'states_i' has shape (2, 5), expected (2, 6)"),
            std::string::npos);
  EXPECT_NE(write("rows.npz", std::vector<double>(18, 0.0), 3, 6).find("'states_f' has shape (2, 6), expected (3, 6)"),
            std::string::npos);
  std::ofstream(dir + "/corrupt.npz") << "not a zip";
  EXPECT_THROW(load_impacts(dir + "/corrupt.npz"), Error);
  EXPECT_THROW(load_impacts(dir + "/missing.npz"), Error);
  EXPECT_THROW(predict_impact(0, ImpactGeometry(), {-0.1, 0.5}), Error);
  EXPECT_THROW(predict_impact(0, ImpactGeometry(), {0.1, 1.5}), Error);
  EXPECT_THROW(impact_model_index("newton"), Error);
}

}  // namespace
}  // namespace impulse
