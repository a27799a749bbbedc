// The planar-impact study commands (host/impact/impact_report.h) on the real impacts:
// files, consistency of the references (best post hoc, IRB), resume, refusals, and a
// learned model recovering a known contact law on synthetic impacts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "host/impact/impact_eval.h"
#include "host/impact/impact_report.h"
#include "io/file_lock.h"
#include "io/impact_data.h"
#include "solvers/error.h"
#include "test_util.h"

namespace impulse {
namespace {

const std::string kData = std::string(IMPULSE_SHARED_DATA_DIR) + "/planar_impact/ellipse_impacts.npz";

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::vector<std::vector<std::string>> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    std::vector<std::string> c;
    std::stringstream ss(line);
    std::string x;
    while (std::getline(ss, x, ',')) c.push_back(x);
    out.push_back(c);
  }
  return out;
}

TEST(ImpactStudy, FitEvalLearnFilesAndReferences) {
  if (!std::filesystem::exists(kData)) IMPULSE_SKIP_WITHOUT_DATA("planar impact data not found at " << kData);
  ImpactStudyOptions o;
  o.data = kData;
  o.out = testing::fresh_dir("impact", "study");
  o.resamples = 5;
  o.threads = 2;
  o.train_size = 100;
  o.sizes = {20};
  o.curve_seeds = 1;
  o.gp_iterations = 30;
  std::ostringstream log;
  impact_fit(o, log);
  // Table 1 from the fit files
  const auto t1 = read_csv(o.out + "/table1.csv");
  ASSERT_EQ(t1.size(), 7u);
  for (size_t r = 1; r < t1.size(); ++r) {
    const nlohmann::json j = nlohmann::json::parse(testing::read_text_file(o.out + "/fit_" + t1[r][0] + ".json"));
    EXPECT_NEAR(std::stod(t1[r][1]), j["mu_mean"].get<double>(), 1e-5 * (1 + j["mu_mean"].get<double>()));
    EXPECT_EQ(j["each"].size(), 5u);
    EXPECT_GT(j["eps_mean"].get<double>(), 0.3) << t1[r][0];
    EXPECT_LT(j["eps_mean"].get<double>(), 0.7) << t1[r][0];
  }
  // a rerun reuses every fit
  std::ostringstream again;
  impact_fit(o, again);
  EXPECT_NE(again.str().find("whittaker already fitted"), std::string::npos) << again.str();

  impact_eval(o, log);
  const auto e = read_csv(o.out + "/errors_test.csv");
  ASSERT_EQ(e[0].size(), 9u);  // impact, six models, best post hoc, IRB
  for (size_t r = 1; r < e.size(); ++r) {
    double best = INFINITY;
    for (int m = 1; m <= 6; ++m) best = std::min(best, std::stod(e[r][static_cast<size_t>(m)]));
    const double post_hoc = std::stod(e[r][7]), irb = std::stod(e[r][8]);
    EXPECT_NEAR(post_hoc, best, 1e-5 * best) << "best post hoc is the best of the six, impact " << e[r][0];
    // the IRB impulse is the best admissible one; the models' impulses are admissible here
    EXPECT_LE(irb, post_hoc * (1 + 1e-4) + 1e-9) << "impact " << e[r][0];
  }
  EXPECT_EQ(e.size(), 361u);  // 30% of 1,200 held out

  impact_learn(o, log);
  const auto l = read_csv(o.out + "/learned.csv");
  EXPECT_EQ(l.size(), 1u + 6 + 3);
  const auto li = read_csv(o.out + "/learned_in_sample.csv");  // six models, best post hoc, IRB
  ASSERT_EQ(li.size(), 1u + 6 + 2);
  for (size_t r = 1; r < li.size(); ++r) EXPECT_GE(std::stod(li[r][1]), 0.0) << li[r][0];
  const auto lc = read_csv(o.out + "/learning_curve.csv");
  EXPECT_EQ(lc.size(), 1u + 6 + 3);
  // the learning curve resumes: nothing is recomputed
  std::ostringstream l2;
  impact_learn(o, l2);
  EXPECT_EQ(l2.str().find("impact learn: curve"), std::string::npos) << l2.str();

  // another seed in the same folder, and a second writer, are refused
  ImpactStudyOptions other = o;
  other.seed = 5;
  EXPECT_THROW(impact_eval(other, log), Error);
  {
    const FileLock held(o.out + "/.lock", "test", "test", "");
    try {
      impact_eval(o, log);
      ADD_FAILURE() << "a second writer ran";
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find("in use by another impact command"), std::string::npos) << err.what();
    }
  }
}

// Synthetic impacts whose observed impulse follows AP Newton with (μ, ε) varying
// smoothly with the contact velocity: the model with per-impact parameters from a GP
// (gp-params) and the GP on X₁ should predict far better than the fixed-parameter model.
TEST(ImpactStudy, LearnedModelsRecoverAKnownContactLaw) {
  if (!std::filesystem::exists(kData)) IMPULSE_SKIP_WITHOUT_DATA("planar impact data not found at " << kData);
  ImpactSet set = load_impacts(kData);
  set.impacts.resize(400);
  set.has_irb = true;
  set.has_wrench = false;
  std::vector<ImpactGeometry> g = impact_geometry(set);
  const int apn = impact_model_index("ap-newton");
  for (size_t i = 0; i < g.size(); ++i) {
    const double mu = 0.05 + 0.1 * std::tanh(g[i].vc(0)), eps = 0.4 + 0.1 * std::tanh(-g[i].vc(1) - 2);
    const Eigen::Vector2d P = predict_impact(apn, g[i], {std::max(0.0, mu), eps}).P;
    set.impacts[i].p_irb = {P(0), P(1)};
    const Eigen::Vector3d vf = g[i].post_velocity(P);
    for (int c = 0; c < 3; ++c) set.impacts[i].state_f[static_cast<size_t>(3 + c)] = vf(c);
  }
  g = impact_geometry(set);
  const std::vector<Eigen::Vector2d> obs = observed_impulses(set, g, 2);
  const ImpactSplit split = impact_split(400, 1, 0.25);
  LearnOptions lo;
  lo.threads = 2;
  lo.gp_iterations = 60;
  // the best fixed (μ, ε) for the training impacts
  std::vector<ImpactGeometry> tg;
  std::vector<Eigen::Vector2d> tt;
  for (int i : split.train) {
    tg.push_back(g[static_cast<size_t>(i)]);
    tt.push_back(obs[static_cast<size_t>(i)]);
  }
  IdentifyOptions io;
  io.threads = 2;
  const ImpactParams best = identify(apn, tg, tt, io).params;
  const ErrorStats fixed = velocity_errors(g, [&] {
    std::vector<ImpactGeometry> t;
    for (int i : split.test) t.push_back(g[static_cast<size_t>(i)]);
    std::vector<Eigen::Vector3d> v;
    const auto p = predict_impacts(apn, t, {best}, 2);
    for (size_t k = 0; k < t.size(); ++k) v.push_back(t[k].post_velocity(p[k].P));
    return v;
  }(), split.test);
  // impact learn's in-sample table predicts the training impacts from the same fit as the
  // test ones: the test predictions must be those of a test-only call, and the training
  // set's those of a training-only call
  for (const char* name : {"gp-x1-impulse", "gp-params", "residual-impulse"}) {
    const std::vector<Eigen::Vector3d> v = learned_predictions(name, set, g, obs, split.train, split.test, apn, best, lo);
    const std::vector<Eigen::Vector3d> vt = learned_predictions(name, set, g, obs, split.train, split.train, apn, best, lo);
    const std::vector<std::vector<Eigen::Vector3d>> w =
        learned_predictions(name, set, g, obs, split.train, {split.test, split.train}, apn, best, lo);
    ASSERT_EQ(w.size(), 2u);
    ASSERT_EQ(w[0].size(), split.test.size());
    ASSERT_EQ(w[1].size(), split.train.size());
    for (size_t k = 0; k < v.size(); ++k)
      EXPECT_LE((v[k] - w[0][k]).norm(), 1e-9 * (1 + v[k].norm())) << name << ", test impact " << split.test[k];
    for (size_t k = 0; k < vt.size(); ++k)
      EXPECT_LE((vt[k] - w[1][k]).norm(), 1e-9 * (1 + vt[k].norm())) << name << ", training impact " << split.train[k];
    const ErrorStats e = velocity_errors(g, v, split.test);
    std::printf("%s: mean error %.4g, the identified fixed model's %.4g\n", name, e.mean_raw, fixed.mean_raw);
    EXPECT_LT(e.mean_raw, 0.25 * fixed.mean_raw) << name << ": " << e.mean_raw << " vs the fixed model's " << fixed.mean_raw;
  }
}

}  // namespace
}  // namespace impulse
