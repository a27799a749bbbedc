// The planar-impact study commands (host/impact/impact_report.h) on the real impacts:
// files, consistency of the references (best post hoc, IRB), resume, refusals, a test
// set held out in its own file (--test-data), and a learned model recovering a known
// contact law on synthetic impacts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include <nlohmann/json.hpp>

#include "host/impact/impact_eval.h"
#include "host/impact/impact_report.h"
#include "io/figure_script.h"
#include "io/file_lock.h"
#include "io/impact_data.h"
#include "io/npz.h"
#include "solvers/error.h"
#include "test_util.h"

namespace impulse {
namespace {

const std::string kData = testing::shared_data("planar_impact/ellipse_impacts.npz");

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::vector<std::vector<std::string>> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) out.push_back(testing::csv_cells(line));
  return out;
}

TEST(ImpactStudy, FitEvalLearnFilesAndReferences) {
  if (!std::filesystem::exists(kData))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("planar impact data", kData, "impacts"));
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

  // the figures: the last line counts the figure files, which are those in the folder
  if (!python_with_matplotlib("python3").empty()) {
    o.figure_script = std::string(IMPULSE_SOURCE_DIR) + "/host/impact/impact_figures.py";
    std::ostringstream fl;
    ASSERT_TRUE(impact_figures(o, fl));
    int figures = 0;
    for (const auto& f : std::filesystem::directory_iterator(o.out)) {
      const std::string name = f.path().filename().string(), ext = f.path().extension().string();
      figures += f.is_regular_file() && name.rfind("fig_", 0) == 0 && (ext == ".png" || ext == ".svg");
    }
    EXPECT_GT(figures, 0);
    EXPECT_EQ(fl.str(), "impact figures: wrote " + std::to_string(figures) + " files to " + o.out + "\n");
  }

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
  if (!std::filesystem::exists(kData))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("planar impact data", kData, "impacts"));
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

// rows [0, n_train) of the real impacts as DIR/train.npz and [n_train, n_end) as
// DIR/test.npz (the project's writer); the study's options reading them, one thread
// (on a loaded machine two spin far longer than they gain)
ImpactStudyOptions held_out_files(int n_train, int n_end, const std::string& dir) {
  const ImpactSet all = load_impacts(kData);
  ImpactSet tr = all, te = all;
  tr.impacts.assign(all.impacts.begin(), all.impacts.begin() + n_train);
  te.impacts.assign(all.impacts.begin() + n_train, all.impacts.begin() + n_end);
  write_impacts(dir + "/train.npz", tr);
  write_impacts(dir + "/test.npz", te);
  ImpactStudyOptions o;
  o.data = dir + "/train.npz";
  o.test_data = dir + "/test.npz";
  o.threads = 1;
  return o;
}

// --test-data: the real impacts split into two files (the project's writer); fit draws
// from every impact of the training file, eval and learn score every impact of the test
// file, and their per-impact errors are those of the internal API on the same impacts.
TEST(ImpactStudy, HeldOutTestFileIsScoredWhole) {
  if (!std::filesystem::exists(kData))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("planar impact data", kData, "impacts"));
  const std::string dir = testing::fresh_dir("impact", "held_out");
  ImpactStudyOptions o = held_out_files(150, 200, dir);
  o.out = dir + "/study";
  o.seed = 3;
  o.k = 150;  // every training impact: more than a 70% split of 150 could give
  o.resamples = 1;
  o.identify_method = "search";
  o.train_size = 150;
  o.sizes = {20};
  o.curve_seeds = 1;
  o.gp_iterations = 15;
  std::ostringstream log;
  impact_fit(o, log);

  // the same impacts through the internal API
  const ImpactSet dtr = load_impacts(o.data), dte = load_impacts(o.test_data);
  const std::vector<ImpactGeometry> gtr = impact_geometry(dtr), gte = impact_geometry(dte);
  const std::vector<Eigen::Vector2d> obs_tr = observed_impulses(dtr, gtr, 1);
  std::vector<int> test_rows(gte.size());
  std::iota(test_rows.begin(), test_rows.end(), 0);
  std::vector<ImpactParams> fitted;
  IdentifyOptions io;
  io.threads = 1;
  io.method = "search";
  for (int m = 0; m < kImpactModels; ++m) {
    const nlohmann::json j =
        nlohmann::json::parse(testing::read_text_file(o.out + "/fit_" + impact_model_name(m) + ".json"));
    fitted.push_back({j["mu_mean"].get<double>(), j["eps_mean"].get<double>()});
    // identified on all 150 training impacts (one resample of k = 150 draws them all)
    const Identified id = identify(m, gtr, obs_tr, io);
    EXPECT_NEAR(fitted.back().mu, id.params.mu, 1e-6) << impact_model_name(m);
    EXPECT_NEAR(fitted.back().eps, id.params.eps, 1e-6) << impact_model_name(m);
  }

  // Fig. 6's data: AP Newton's (μ, ε) for each training impact alone, and its error
  {
    const int apn = impact_model_index("ap-newton");
    const auto pe = read_csv(o.out + "/params_each.csv");
    ASSERT_EQ(pe.size(), 1 + gtr.size()) << "every training impact";
    double each = 0, global = 0;
    for (size_t k = 0; k < gtr.size(); ++k) {
      ASSERT_EQ(pe[k + 1][0], std::to_string(k));
      const ImpactParams p{std::stod(pe[k + 1][1]), std::stod(pe[k + 1][2])};
      const double c = identification_cost(apn, {gtr[k]}, {obs_tr[k]}, p, 1);
      EXPECT_NEAR(std::stod(pe[k + 1][3]), c, 2e-5 * c + 1e-12) << "training impact " << k;
      EXPECT_NEAR(std::stod(pe[k + 1][4]), c / obs_tr[k].norm(), 2e-5 * c / obs_tr[k].norm() + 1e-12);
      each += c;
      global += identification_cost(apn, {gtr[k]}, {obs_tr[k]}, fitted[static_cast<size_t>(apn)], 1);
    }
    EXPECT_LT(each, 0.8 * global) << "per-impact parameters explain each impact better than one pair for all";
  }

  impact_eval(o, log);
  const auto e = read_csv(o.out + "/errors_test.csv");
  ASSERT_EQ(e.size(), 1 + gte.size()) << "every test impact, nothing else";
  std::vector<std::vector<double>> direct;  // normalized errors per model, then IRB
  for (int m = 0; m < kImpactModels; ++m) {
    const std::vector<ImpactPrediction> p = predict_impacts(m, gte, {fitted[static_cast<size_t>(m)]}, 1);
    std::vector<Eigen::Vector3d> v;
    for (size_t k = 0; k < gte.size(); ++k) v.push_back(gte[k].post_velocity(p[k].P));
    direct.push_back(velocity_errors(gte, v, test_rows).normalized);
  }
  {
    const std::vector<Eigen::Vector2d> irb = irb_impulses(gte, 1);
    std::vector<Eigen::Vector3d> v;
    for (size_t k = 0; k < gte.size(); ++k) v.push_back(gte[k].post_velocity(irb[k]));
    direct.push_back(velocity_errors(gte, v, test_rows).normalized);
  }
  for (size_t k = 0; k < gte.size(); ++k) {
    EXPECT_EQ(e[k + 1][0], std::to_string(k)) << "test impacts numbered by their row in the test file";
    for (int m = 0; m < kImpactModels; ++m)
      EXPECT_NEAR(std::stod(e[k + 1][static_cast<size_t>(m + 1)]), direct[static_cast<size_t>(m)][k],
                  1e-5 * direct[static_cast<size_t>(m)][k])
          << impact_model_name(m) << ", test impact " << k;
    EXPECT_NEAR(std::stod(e[k + 1][8]), direct[6][k], 1e-5 * direct[6][k]) << "IRB, test impact " << k;
  }
  const std::string md = testing::read_text_file(o.out + "/eval.md");
  EXPECT_NE(md.find(std::filesystem::weakly_canonical(o.test_data).string()), std::string::npos) << md;
  EXPECT_NE(md.find(std::filesystem::weakly_canonical(o.data).string()), std::string::npos) << md;
  const nlohmann::json study = nlohmann::json::parse(testing::read_text_file(o.out + "/study.json"));
  EXPECT_EQ(study["test_data"], std::filesystem::weakly_canonical(o.test_data).string());
  EXPECT_EQ(study["test_impacts"], gte.size());

  impact_learn(o, log);
  // learned models trained on every training impact (the split's train is all of them)
  const ImpactSplit split = impact_split_held_out(150, 50, o.seed);
  std::vector<int> sorted = split.train;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 150; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
  const ImpactSet joined = join_impacts(dtr, dte);
  const std::vector<ImpactGeometry> gj = impact_geometry(joined);
  std::vector<Eigen::Vector2d> obs = obs_tr;
  const std::vector<Eigen::Vector2d> obs_te = observed_impulses(dte, gte, 1);
  obs.insert(obs.end(), obs_te.begin(), obs_te.end());
  // the Class II base: the analytical model with the lowest training error
  int base = 0;
  double best = INFINITY;
  for (int m = 0; m < kImpactModels; ++m) {
    const std::vector<ImpactPrediction> p = predict_impacts(m, gtr, {fitted[static_cast<size_t>(m)]}, 1);
    std::vector<Eigen::Vector3d> v;
    for (size_t k = 0; k < gtr.size(); ++k) v.push_back(gtr[k].post_velocity(p[k].P));
    std::vector<int> rows(gtr.size());
    std::iota(rows.begin(), rows.end(), 0);
    const double err = velocity_errors(gtr, v, rows).mean_normalized;
    if (err < best) best = err, base = m;
  }
  const auto l = read_csv(o.out + "/errors_learned.csv");
  ASSERT_EQ(l.size(), 1 + gte.size());
  LearnOptions lo;
  lo.threads = 1;
  lo.seed = o.seed;
  lo.gp_iterations = o.gp_iterations;
  for (const char* name : {"gp-x1-impulse", "residual-impulse"}) {
    const size_t col = static_cast<size_t>(
        std::find(l[0].begin(), l[0].end(), std::string(name)) - l[0].begin());
    ASSERT_LT(col, l[0].size()) << name;
    const std::vector<Eigen::Vector3d> v =
        learned_predictions(name, joined, gj, obs, split.train, split.test, base, fitted[static_cast<size_t>(base)], lo);
    const ErrorStats err = velocity_errors(gj, v, split.test);
    for (size_t k = 0; k < gte.size(); ++k)
      EXPECT_NEAR(std::stod(l[k + 1][col]), err.normalized[k], 1e-5 * err.normalized[k]) << name << ", test impact " << k;
  }
  EXPECT_NE(testing::read_text_file(o.out + "/learned.md").find(std::filesystem::weakly_canonical(o.test_data).string()),
            std::string::npos);
}

// --test-data that cannot be a test set is refused, naming the file and what is wrong
TEST(ImpactStudy, HeldOutTestFileRefusals) {
  if (!std::filesystem::exists(kData))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("planar impact data", kData, "impacts"));
  const ImpactSet all = load_impacts(kData);
  const std::string dir = testing::fresh_dir("impact", "held_out_bad");
  ImpactStudyOptions o = held_out_files(40, 60, dir);
  o.test_data.clear();  // each check below names its own test file (or none)
  o.k = 10;
  o.resamples = 1;
  auto error_of = [&](const std::string& test_data, const std::string& out) {
    ImpactStudyOptions b = o;
    b.test_data = test_data;
    b.out = dir + "/" + out;
    std::ostringstream log;
    try {
      impact_eval(b, log);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  // missing
  std::string m = error_of(dir + "/none.npz", "s1");
  EXPECT_NE(m.find("--test-data"), std::string::npos) << m;
  EXPECT_NE(m.find(dir + "/none.npz: no such file"), std::string::npos) << m;
  // a NaN, and a wrong shape, in the test file: named by file, array, row and column
  {
    NpzArchive z = read_npz(dir + "/test.npz");
    NpzArchive bad = z;
    std::vector<double> sf = z.at("states_f").as<double>();
    sf[3 * 6 + 4] = NAN;
    bad["states_f"] = make_npy({20, 6}, sf);
    write_npz(dir + "/nan.npz", bad);
    bad = z;
    bad["n"] = make_npy({20, 2}, std::vector<double>(40, 1.0));
    write_npz(dir + "/shape.npz", bad);
    // the training file's own rows, with their original_index
    bad = read_npz(dir + "/train.npz");
    std::vector<double> idx;
    for (int i = 0; i < 40; ++i) idx.push_back(all.impacts[static_cast<size_t>(i)].original_index);
    bad["original_index"] = make_npy({40}, idx);
    write_npz(dir + "/train_idx.npz", bad);
    bad = z;
    idx.assign({static_cast<double>(all.impacts[45].original_index)});
    for (int i = 1; i < 20; ++i) idx.push_back(all.impacts[static_cast<size_t>(i % 3 == 0 ? 7 : 40 + i)].original_index);
    bad["original_index"] = make_npy({20}, idx);
    write_npz(dir + "/overlap.npz", bad);
  }
  m = error_of(dir + "/nan.npz", "s2");
  EXPECT_NE(m.find(dir + "/nan.npz: array 'states_f' row 3 column 4 is not finite"), std::string::npos) << m;
  m = error_of(dir + "/shape.npz", "s3");
  EXPECT_NE(m.find(dir + "/shape.npz: array 'n' has shape (20, 2), expected (20, 3)"), std::string::npos) << m;
  // the training file itself
  m = error_of(o.data, "s4");
  EXPECT_NE(m.find("is the --data file"), std::string::npos) << m;
  // impacts of the training file (by original_index): the first such row is named
  o.data = dir + "/train_idx.npz";
  m = error_of(dir + "/overlap.npz", "s5");
  EXPECT_NE(m.find(dir + "/overlap.npz: row 3 (original_index " + std::to_string(all.impacts[7].original_index) +
                   ") is row 7 of the training data"),
            std::string::npos)
      << m;
  // a study folder of the default split refuses a test file, and the other way round
  o.data = dir + "/train.npz";
  {
    ImpactStudyOptions b = o;
    b.out = dir + "/s6";
    std::ostringstream log;
    impact_fit(b, log);
    b.test_data = dir + "/test.npz";
    EXPECT_THROW(impact_eval(b, log), Error);
    b.out = dir + "/s7";
    impact_fit(b, log);
    b.test_data.clear();
    EXPECT_THROW(impact_eval(b, log), Error);
  }
  EXPECT_THROW(impact_split_held_out(1, 5, 0), Error);
  EXPECT_THROW(impact_split_held_out(5, 0, 0), Error);
}

TEST(ImpactStudy, VelocityErrorsPerComponentAreTheMeanAbsoluteErrors) {
  // three impacts, two of them scored: the component means are over the scored ones only
  std::vector<ImpactGeometry> g(3);
  g[0].vf = Eigen::Vector3d(1, -2, 30);
  g[1].vf = Eigen::Vector3d(0.5, 1, -10);
  g[2].vf = Eigen::Vector3d(9, 9, 9);
  const std::vector<Eigen::Vector3d> v = {Eigen::Vector3d(1.5, -2, 20), Eigen::Vector3d(0.0, 2, -10)};
  const ErrorStats e = velocity_errors(g, v, {0, 1});
  EXPECT_DOUBLE_EQ(e.mean_abs(0), 0.5);
  EXPECT_DOUBLE_EQ(e.mean_abs(1), 0.5);
  EXPECT_DOUBLE_EQ(e.mean_abs(2), 5.0);
  EXPECT_DOUBLE_EQ(e.mean_raw, 0.5 * (std::sqrt(0.25 + 100) + std::sqrt(0.25 + 1)));
}

// The wrench labels (w_data) through the wrench model's map to a post-impact velocity
// (post_velocity_wrench: J's lever arms, the object's mass and inertia, τ on θ) give the
// observed velocity: a learned wrench model's error is its prediction's, not the map's.
// (With the data README's k_g = 0.0192 m instead of the object's 3.70e-4 m² per kg,
// θ̇ would be off by 0.1 rad/s on average.)
TEST(ImpactStudy, WrenchLabelsReconstructTheObservedVelocity) {
  if (!std::filesystem::exists(kData))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("planar impact data", kData, "impacts"));
  const ImpactSet set = load_impacts(kData);
  ASSERT_TRUE(set.has_wrench);
  const std::vector<ImpactGeometry> g = impact_geometry(set);
  for (size_t i = 0; i < g.size(); ++i) {
    const Impact& m = set.impacts[i];
    const Eigen::Vector3d v = g[i].post_velocity_wrench(Eigen::Vector3d(m.w_data[0], m.w_data[1], m.w_data[2]));
    ASSERT_LE((v - g[i].vf).norm(), 1e-9 * (1 + g[i].vf.norm())) << "impact " << i;
  }
}

// lever_arm_check on impacts made from the real geometry: a point impulse in the Jacobian's
// own frame answers (1, 1) with nothing left over; the same impulses with a mirrored
// tangential lever arm (the rotation d_θ P_t turned round) answer (−1, 1), and the torque
// left over vanishes only with d_θ negated.
TEST(ImpactStudy, LeverArmCheckReadsTheFramesOfSyntheticImpacts) {
  if (!std::filesystem::exists(kData))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("planar impact data", kData, "impacts"));
  ImpactSet set = load_impacts(kData);
  set.impacts.resize(300);
  std::vector<ImpactGeometry> g = impact_geometry(set);
  std::vector<int> idx(g.size());
  std::iota(idx.begin(), idx.end(), 0);
  const int wh = impact_model_index("whittaker");
  for (int mirrored = 0; mirrored < 2; ++mirrored) {
    std::vector<ImpactGeometry> h = g;
    for (size_t i = 0; i < h.size(); ++i) {
      const Eigen::Vector2d P = predict_impact(wh, g[i], {0.12, 0.5}).P;
      Eigen::Vector3d vf = g[i].post_velocity(P);
      if (mirrored) vf(2) -= 2 * g[i].Minv(2, 2) * g[i].J(0, 2) * P(0);
      h[i].vf = vf;
    }
    const LeverArmCheck c = lever_arm_check(h, idx);
    EXPECT_NEAR(c.a_t, mirrored ? -1.0 : 1.0, 1e-9) << "mirrored " << mirrored;
    EXPECT_NEAR(c.a_n, 1.0, 1e-9) << "mirrored " << mirrored;
    EXPECT_NEAR(c.r2, 1.0, 1e-9) << "mirrored " << mirrored;
    EXPECT_LT(mirrored ? c.mean_abs_tau_over_inertia_flipped : c.mean_abs_tau_over_inertia, 1e-6);
    EXPECT_GT(mirrored ? c.mean_abs_tau_over_inertia : c.mean_abs_tau_over_inertia_flipped, 1.0);
  }
  EXPECT_THROW(lever_arm_check(g, {0}), Error);
}

// The real impacts (the training impacts of seed 0's split): the measured rotation turns
// against the tangent row's lever arm (a_t < 0) and with the normal row's (a_n > 0); with
// d_θ negated a point impulse explains most of the torque. Why the wrench labels' τ is
// large and the IRB impulse's P_t opposes the measured m Δẋ (impact_2026-11-24.md).
TEST(ImpactStudy, RealImpactsRotateAgainstTheTangentLeverArm) {
  if (!std::filesystem::exists(kData))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("planar impact data", kData, "impacts"));
  const ImpactSet set = load_impacts(kData);
  const std::vector<ImpactGeometry> g = impact_geometry(set);
  const ImpactSplit split = impact_split(static_cast<int>(g.size()), 0, 0.3);
  const LeverArmCheck c = lever_arm_check(g, split.train);
  std::printf("a_t %.4f a_n %.4f r2 %.4f  mean |tau|/I %.3f (d_theta negated: %.3f) rad/s\n", c.a_t, c.a_n, c.r2,
              c.mean_abs_tau_over_inertia, c.mean_abs_tau_over_inertia_flipped);
  EXPECT_LT(c.a_t, -0.5);
  EXPECT_GT(c.a_n, 0.5);
  EXPECT_GT(c.r2, 0.8);
  EXPECT_LT(c.mean_abs_tau_over_inertia_flipped, 0.2 * c.mean_abs_tau_over_inertia);
}

}  // namespace
}  // namespace impulse
