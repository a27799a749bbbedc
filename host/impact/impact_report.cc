#include "host/impact/impact_report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "host/impact/impact_eval.h"
#include "io/figure_script.h"
#include "io/file_lock.h"
#include "io/impact_data.h"
#include "io/json_file.h"
#include "io/files.h"
#include "solvers/error.h"

namespace fs = std::filesystem;

namespace impulse {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string fmt(double x, const char* f = "%.6g") {
  char b[48];
  std::snprintf(b, sizeof b, f, x);
  return b;
}

// everything a command needs: the data, the split, the lock on OUT. With test data
// the set holds --data's impacts, then --test-data's (join_impacts).
struct Study {
  ImpactSet set;
  std::vector<ImpactGeometry> g;
  std::vector<Eigen::Vector2d> observed;
  ImpactSplit split;
  Backend backend = Backend::kCpu;
  fs::path out;
  std::unique_ptr<FileLock> lock;
  int n_data = 0;               // impacts from --data (the rest from --test-data)
  std::string test_from;        // "361 test impacts (...)": which, and from where
  // an impact's row in the file it came from (errors_*.csv, ellipse_<row>.csv)
  int row(int i) const { return i < n_data ? i : i - n_data; }
};

Study open_study(const ImpactStudyOptions& o, std::ostream& log) {
  if (o.data.empty()) throw Error("impact: --data is required (e.g. ../shared/data/planar_impact/ellipse_impacts.npz)");
  if (o.out.empty()) throw Error("impact: --out is required");
  if (o.threads < 0) throw Error("impact: --threads must be >= 0");
  const bool held_out = !o.test_data.empty();
  if (held_out) {
    std::error_code ec;
    if (fs::exists(o.test_data) && fs::exists(o.data) && fs::equivalent(o.test_data, o.data, ec))
      throw Error("--test-data " + o.test_data + " is the --data file: the test impacts must be held out from training");
  }
  Study s;
  s.out = fs::path(o.out);
  std::error_code ec;
  fs::create_directories(s.out, ec);
  if (ec) throw Error("--out " + o.out + ": cannot create it (" + ec.message() + ")");
  s.lock = std::make_unique<FileLock>((s.out / ".lock").string(), o.out, "another impact command",
                                      "wait for it to finish");
  s.set = load_impacts(o.data);
  s.backend = parse_backend(o.backend);
  s.n_data = static_cast<int>(s.set.impacts.size());
  const std::string data_path = fs::weakly_canonical(fs::path(o.data)).string();
  nlohmann::json rec = {{"data", data_path}, {"impacts", s.n_data}, {"seed", o.seed}};
  if (held_out) {
    ImpactSet test;
    try {
      test = load_impacts(o.test_data);
    } catch (const Error& e) {
      throw Error(std::string("--test-data: ") + e.what());
    }
    ImpactSet joined = join_impacts(s.set, test);  // refuses another object or shared impacts
    // each file's geometry (the same object: they concatenate) and observed impulses
    // by its own rule (its IRB fits, else ours)
    s.g = impact_geometry(s.set);
    const std::vector<ImpactGeometry> gt = impact_geometry(test);
    s.observed = observed_impulses(s.set, s.g, o.threads);
    const std::vector<Eigen::Vector2d> ot = observed_impulses(test, gt, o.threads);
    s.g.insert(s.g.end(), gt.begin(), gt.end());
    s.observed.insert(s.observed.end(), ot.begin(), ot.end());
    s.set = std::move(joined);
    s.split = impact_split_held_out(s.n_data, static_cast<int>(test.impacts.size()), o.seed);
    const std::string test_path = fs::weakly_canonical(fs::path(o.test_data)).string();
    rec["test_data"] = test_path;
    rec["test_impacts"] = test.impacts.size();
    rec["test_fraction"] = nullptr;
    rec["train"] = "all impacts of data";
    rec["test"] = "all impacts of test_data";
    s.test_from = std::to_string(test.impacts.size()) + " test impacts (every impact of " + test_path +
                  "; trained and identified on all " + std::to_string(s.n_data) + " impacts of " + data_path + ")";
  } else {
    s.g = impact_geometry(s.set);
    s.observed = observed_impulses(s.set, s.g, o.threads);
    s.split = impact_split(s.n_data, o.seed, o.test_fraction);
    rec["test_data"] = nullptr;
    rec["test_impacts"] = nullptr;
    rec["test_fraction"] = o.test_fraction;
    rec["test"] = s.split.test;
    s.test_from = std::to_string(s.split.test.size()) + " test impacts (a seeded " + fmt(100 * o.test_fraction, "%.0f") +
                  "% of " + data_path + "; the rest trains)";
  }
  log << "impact: " << s.test_from << "\n";
  const fs::path rp = s.out / "study.json";
  if (fs::exists(rp)) {
    const nlohmann::json old = read_json_file(rp.string());
    for (const char* k : {"data", "impacts", "seed", "test_fraction", "test_data", "test_impacts"})
      if (old.value(k, nlohmann::json()) != rec[k])
        throw Error(o.out + " holds a study of another " + std::string(k) + " (" + old.value(k, nlohmann::json()).dump() +
                    ", now " + rec[k].dump() + "); choose another --out");
  } else {
    write_text_atomic(rp.string(), rec.dump(1) + "\n");
  }
  return s;
}

std::vector<ImpactGeometry> subset(const std::vector<ImpactGeometry>& g, const std::vector<int>& idx) {
  std::vector<ImpactGeometry> o;
  for (int i : idx) o.push_back(g[static_cast<size_t>(i)]);
  return o;
}
struct Fitted {
  ImpactParams mean;
  double mu_std = 0, eps_std = 0;
};

// the fitted (mean) parameters of every model, from fit_<model>.json
std::vector<Fitted> read_fits(const fs::path& out) {
  std::vector<Fitted> f(kImpactModels);
  for (int m = 0; m < kImpactModels; ++m) {
    const fs::path p = out / (std::string("fit_") + impact_model_name(m) + ".json");
    if (!fs::exists(p)) throw Error(p.string() + " is missing: run `impulse impact fit` with the same --out first");
    const nlohmann::json j = read_json_file(p.string());
    f[static_cast<size_t>(m)] = {{j.at("mu_mean"), j.at("eps_mean")}, j.at("mu_std"), j.at("eps_std")};
  }
  return f;
}

std::vector<Eigen::Vector3d> velocities(const std::vector<ImpactGeometry>& g, const std::vector<ImpactPrediction>& p) {
  std::vector<Eigen::Vector3d> v;
  for (size_t i = 0; i < g.size(); ++i) v.push_back(g[i].post_velocity(p[i].P));
  return v;
}

std::string row(const std::string& name, const ErrorStats& e) {
  return name + "," + fmt(e.mean_raw) + "," + fmt(e.median_raw) + "," + fmt(e.mean_normalized) + "," +
         fmt(e.median_normalized) + "," + fmt(e.mean_abs(0)) + "," + fmt(e.mean_abs(1)) + "," + fmt(e.mean_abs(2)) +
         "\n";
}
std::string md_row(const std::string& name, const ErrorStats& e) {
  return "| " + name + " | " + fmt(e.mean_raw, "%.4f") + " | " + fmt(e.median_raw, "%.4f") + " | " +
         fmt(e.mean_normalized, "%.4f") + " | " + fmt(e.median_normalized, "%.4f") + " | " + fmt(e.mean_abs(0), "%.3f") +
         " | " + fmt(e.mean_abs(1), "%.3f") + " | " + fmt(e.mean_abs(2), "%.2f") + " |\n";
}
const char* kHeader =
    "model,mean_error,median_error,mean_normalized_error,median_normalized_error,mean_abs_error_xdot,"
    "mean_abs_error_ydot,mean_abs_error_thetadot\n";
const char* kMdHeader =
    "| model | mean ‖v̂−v‖ | median ‖v̂−v‖ | mean normalized | median normalized | mean \\|ẋ err\\| (m/s) | "
    "mean \\|ẏ err\\| (m/s) | mean \\|θ̇ err\\| (rad/s) |\n|---|---|---|---|---|---|---|---|\n";

struct References {
  std::vector<ErrorStats> models;  // the six on `idx`
  ErrorStats best_post_hoc, irb;
  int best_model = 0;              // lowest mean normalized error on the training impacts
};

References references(const Study& s, const std::vector<Fitted>& fits, const std::vector<int>& idx,
                      const std::vector<int>& train, int threads) {
  References r;
  const std::vector<ImpactGeometry> g = subset(s.g, idx);
  std::vector<std::vector<Eigen::Vector3d>> v(kImpactModels);
  double best_train = INFINITY;
  const std::vector<ImpactGeometry> gt = subset(s.g, train);
  for (int m = 0; m < kImpactModels; ++m) {
    v[static_cast<size_t>(m)] = velocities(g, predict_impacts(m, g, {fits[static_cast<size_t>(m)].mean}, threads, s.backend));
    r.models.push_back(velocity_errors(s.g, v[static_cast<size_t>(m)], idx));
    const ErrorStats et = velocity_errors(s.g, velocities(gt, predict_impacts(m, gt, {fits[static_cast<size_t>(m)].mean}, threads, s.backend)), train);
    if (et.mean_normalized < best_train) {
      best_train = et.mean_normalized;
      r.best_model = m;
    }
  }
  // best post hoc: per impact the model closest to the outcome
  std::vector<Eigen::Vector3d> bp;
  for (size_t k = 0; k < idx.size(); ++k) {
    int best = 0;
    for (int m = 1; m < kImpactModels; ++m)
      if (r.models[static_cast<size_t>(m)].raw[k] < r.models[static_cast<size_t>(best)].raw[k]) best = m;
    bp.push_back(v[static_cast<size_t>(best)][k]);
  }
  r.best_post_hoc = velocity_errors(s.g, bp, idx);
  const std::vector<Eigen::Vector2d> irb = irb_impulses(g, threads, nullptr, s.backend);
  std::vector<Eigen::Vector3d> vi;
  for (size_t k = 0; k < g.size(); ++k) vi.push_back(g[k].post_velocity(irb[k]));
  r.irb = velocity_errors(s.g, vi, idx);
  return r;
}

}  // namespace

void impact_fit(const ImpactStudyOptions& o, std::ostream& log) {
  Study s = open_study(o, log);
  const auto t0 = Clock::now();
  IdentifyOptions io;
  io.k = o.k;
  io.resamples = o.resamples;
  io.seed = o.seed;
  io.threads = o.threads;
  io.backend = s.backend;
  io.method = o.identify_method;
  std::string csv = "model,mu_mean,mu_std,eps_mean,eps_std,k,resamples,mean_cost_per_impact,seconds,method\n";
  std::string md = "| model | μ | ε | identified by |\n|---|---|---|---|\n";
  for (int m = 0; m < kImpactModels; ++m) {
    const fs::path p = s.out / (std::string("fit_") + impact_model_name(m) + ".json");
    nlohmann::json j;
    const std::string method = identify_method(m, io);
    if (fs::exists(p)) {
      j = read_json_file(p.string());
      if (j.value("k", -1) != o.k || j.value("resamples", -1) != o.resamples || j.value("seed", uint64_t(0)) != o.seed ||
          j.value("method", std::string("search")) != method)
        j = nlohmann::json();
      else
        log << "impact fit: " << impact_model_name(m) << " already fitted (" << p.string() << ")\n";
    }
    if (j.is_null()) {
      const auto tm = Clock::now();
      io.progress = [&](int done, int total) {
        if (done % 10 == 0 || done == total)
          log << "impact fit: " << impact_model_name(m) << " resample " << done << "/" << total << " ("
              << fmt(since(tm), "%.1f") << " s)\n" << std::flush;
      };
      const ResampledFit f = identify_resampled(m, s.g, s.observed, s.split.train, io);
      double cost = 0;
      nlohmann::json each = nlohmann::json::array();
      for (const Identified& e : f.each) {
        each.push_back({e.params.mu, e.params.eps, e.cost / o.k});
        cost += e.cost / o.k / static_cast<double>(f.each.size());
      }
      j = {{"model", impact_model_name(m)}, {"k", o.k}, {"resamples", o.resamples}, {"seed", o.seed},
           {"mu_mean", f.mu_mean}, {"mu_std", f.mu_std}, {"eps_mean", f.eps_mean}, {"eps_std", f.eps_std},
           {"mean_cost_per_impact", cost}, {"seconds", since(tm)}, {"method", method}, {"each", each}};
      write_text_atomic(p.string(), j.dump(1) + "\n");
    }
    csv += std::string(impact_model_name(m)) + "," + fmt(j["mu_mean"]) + "," + fmt(j["mu_std"]) + "," + fmt(j["eps_mean"]) +
           "," + fmt(j["eps_std"]) + "," + std::to_string(o.k) + "," + std::to_string(o.resamples) + "," +
           fmt(j["mean_cost_per_impact"]) + "," + fmt(j["seconds"].get<double>(), "%.2f") + "," + method + "\n";
    md += "| " + std::string(impact_model_name(m)) + " | " + fmt(j["mu_mean"], "%.3f") + " ± " + fmt(j["mu_std"], "%.3f") +
          " | " + fmt(j["eps_mean"], "%.3f") + " ± " + fmt(j["eps_std"], "%.3f") + " | " + method + " |\n";
  }
  // Fig. 6: each training impact's own best (μ, ε) for AP Newton (identify_each) and the
  // error of the impulse they predict; kept once written (it depends on the data alone)
  const fs::path pe = s.out / "params_each.csv";
  if (!fs::exists(pe)) {
    const auto te = Clock::now();
    std::vector<int> rows = s.split.train;
    std::sort(rows.begin(), rows.end());
    std::vector<Eigen::Vector2d> obs;
    for (int i : rows) obs.push_back(s.observed[static_cast<size_t>(i)]);
    IdentifyOptions ie = io;
    ie.method = "search";
    ie.progress = nullptr;
    const std::vector<Identified> each = identify_each(impact_model_index("ap-newton"), subset(s.g, rows), obs, ie);
    std::string c = "impact,mu,eps,impulse_error,relative_impulse_error\n";
    for (size_t k = 0; k < rows.size(); ++k)
      c += std::to_string(s.row(rows[k])) + "," + fmt(each[k].params.mu, "%.12g") + "," + fmt(each[k].params.eps, "%.12g") + "," +
           fmt(each[k].cost) + "," + fmt(each[k].cost / std::max(1e-300, obs[k].norm())) + "\n";
    write_text_atomic(pe.string(), c);
    log << "impact fit: ap-newton's (mu, eps) per training impact (Fig. 6): " << pe.string() << " ("
        << fmt(since(te), "%.1f") << " s)\n";
  }
  write_text_atomic((s.out / "table1.csv").string(), csv);
  write_text_atomic((s.out / "table1.md").string(),
                    "Identified parameters (Eq. 6; k = " + std::to_string(o.k) + " of the " +
                        std::to_string(s.split.train.size()) + " training impacts, " + std::to_string(o.resamples) +
                        " resamples; mean ± std). Held out: " + s.test_from + "\n\n" + md);
  log << "impact fit: wrote " << (s.out / "table1.md").string() << " in " << fmt(since(t0), "%.1f") << " s\n" << md;
}

void impact_eval(const ImpactStudyOptions& o, std::ostream& log) {
  Study s = open_study(o, log);
  const std::vector<Fitted> fits = read_fits(s.out);
  const References r = references(s, fits, s.split.test, s.split.train, o.threads);
  std::string csv = kHeader, md = "Post-impact velocity error on " + s.test_from +
                                  ". Raw: ‖v̂ − v‖₂ in m/s and rad/s as the paper's ℓ2; normalized: by ‖v_f‖₂\n\n" + kMdHeader;
  for (int m = 0; m < kImpactModels; ++m) {
    csv += row(impact_model_name(m), r.models[static_cast<size_t>(m)]);
    md += md_row(impact_model_name(m), r.models[static_cast<size_t>(m)]);
  }
  csv += row("best-post-hoc", r.best_post_hoc) + row("irb-bound", r.irb);
  md += md_row("best post hoc", r.best_post_hoc) + md_row("IRB bound", r.irb);
  {  // the data's frames: does the rotation answer the tangential impulse as J's lever arm says?
    const LeverArmCheck c = lever_arm_check(s.g, s.split.train);
    md += "\nFrames (training impacts): I Δθ̇ ≈ a_t d_θ P_t + a_n n_θ P_n with a_t " + fmt(c.a_t, "%.3f") + ", a_n " +
          fmt(c.a_n, "%.3f") + " (R² " + fmt(c.r2, "%.3f") + "; a point impulse in one right-handed frame: 1, 1). " +
          "Torque no point impulse explains, mean |τ|/I: " + fmt(c.mean_abs_tau_over_inertia, "%.2f") +
          " rad/s with the data's d_θ, " + fmt(c.mean_abs_tau_over_inertia_flipped, "%.2f") + " with d_θ negated.\n";
  }
  write_text_atomic((s.out / "eval.csv").string(), csv);
  write_text_atomic((s.out / "eval.md").string(), md);
  // per impact
  std::ostringstream e;
  e << "impact";
  for (int m = 0; m < kImpactModels; ++m) e << "," << impact_model_name(m);
  e << ",best-post-hoc,irb-bound\n";
  for (size_t k = 0; k < s.split.test.size(); ++k) {
    e << s.row(s.split.test[k]);
    for (int m = 0; m < kImpactModels; ++m) e << "," << fmt(r.models[static_cast<size_t>(m)].normalized[k]);
    e << "," << fmt(r.best_post_hoc.normalized[k]) << "," << fmt(r.irb.normalized[k]) << "\n";
  }
  write_text_atomic((s.out / "errors_test.csv").string(), e.str());
  // the impulse-space picture of three test impacts
  for (size_t pick = 0; pick < std::min<size_t>(3, s.split.test.size()); ++pick) {
    const int i = s.split.test[pick];
    const ImpactGeometry& G = s.g[static_cast<size_t>(i)];
    std::ostringstream c;
    c << "kind,label,P_t,P_n\n";
    for (const Eigen::Vector2d& P : G.energy_ellipse(1.0, 200)) c << "ellipse,alpha=1," << fmt(P(0)) << "," << fmt(P(1)) << "\n";
    for (int m = 0; m < kImpactModels; ++m) {
      const ImpactPrediction p = predict_impact(m, G, fits[static_cast<size_t>(m)].mean);
      c << "model," << impact_model_name(m) << "," << fmt(p.P(0)) << "," << fmt(p.P(1)) << "\n";
    }
    const Eigen::Vector2d irb = irb_impulses({G}, 1)[0];
    c << "irb,IRB bound," << fmt(irb(0)) << "," << fmt(irb(1)) << "\n";
    // the observed velocity change's least-squares impulse (unconstrained)
    const Eigen::Matrix<double, 3, 2> B = G.Minv * G.J.transpose();
    const Eigen::Vector2d ls = B.colPivHouseholderQr().solve(G.vf - G.vi);
    c << "observed,least-squares fit of the outcome," << fmt(ls(0)) << "," << fmt(ls(1)) << "\n";
    write_text_atomic((s.out / ("ellipse_" + std::to_string(s.row(i)) + ".csv")).string(), c.str());
  }
  log << md;
}

void impact_learn(const ImpactStudyOptions& o, std::ostream& log) {
  Study s = open_study(o, log);
  const std::vector<Fitted> fits = read_fits(s.out);
  const int ntrain = static_cast<int>(s.split.train.size());
  if (o.train_size < 2 || o.train_size > ntrain)
    throw Error("impact learn: --train " + std::to_string(o.train_size) + " must be in [2, " + std::to_string(ntrain) + "] (the training impacts)");
  for (int n : o.sizes)
    if (n < 2 || n > ntrain) throw Error("impact learn: size " + std::to_string(n) + " outside [2, " + std::to_string(ntrain) + "]");
  if (o.curve_seeds < 1) throw Error("impact learn: --curve-seeds must be >= 1");
  LearnOptions lo;
  lo.threads = o.threads;
  lo.backend = s.backend;
  lo.gp_iterations = o.gp_iterations;
  lo.gp_restarts = o.gp_restarts;
  const auto t0 = Clock::now();
  const std::vector<int> train(s.split.train.begin(), s.split.train.begin() + o.train_size);
  const References r = references(s, fits, s.split.test, train, o.threads);
  const int base = r.best_model;
  const ImpactParams bp = fits[static_cast<size_t>(base)].mean;
  log << "impact learn: Class II base model " << impact_model_name(base) << " (lowest training error)\n";
  std::string csv = kHeader, md = "Learned models with " + std::to_string(o.train_size) + " training impacts, on " +
                                  s.test_from + " (Class II base: " + impact_model_name(base) + ")\n\n" + kMdHeader;
  // each model also predicts its own training impacts (in-sample): how much of its
  // held-out error is the data's scatter it cannot know, and what a score on the
  // training set would claim
  const References rt = references(s, fits, train, train, o.threads);
  std::string csv_in = kHeader, md_in = "The same models on their own " + std::to_string(o.train_size) +
                                        " training impacts (in-sample; not a measure of prediction)\n\n" + kMdHeader;
  std::vector<ErrorStats> learned;
  for (const std::string& name : learned_model_names()) {
    const auto tm = Clock::now();
    lo.seed = o.seed;
    const std::vector<std::vector<Eigen::Vector3d>> v =
        learned_predictions(name, s.set, s.g, s.observed, train, {s.split.test, train}, base, bp, lo);
    const ErrorStats e = velocity_errors(s.g, v[0], s.split.test);
    const ErrorStats ein = velocity_errors(s.g, v[1], train);
    csv_in += row(name, ein);
    md_in += md_row(name, ein);
    learned.push_back(e);
    csv += row(name, e);
    md += md_row(name, e);
    log << "impact learn: " << name << ": mean normalized error " << fmt(e.mean_normalized, "%.4f") << " ("
        << fmt(since(tm), "%.1f") << " s)\n" << std::flush;
  }
  csv += row(std::string("best-analytical:") + impact_model_name(base), r.models[static_cast<size_t>(base)]) +
         row("best-post-hoc", r.best_post_hoc) + row("irb-bound", r.irb);
  md += md_row(std::string("best analytical (") + impact_model_name(base) + ")", r.models[static_cast<size_t>(base)]) +
        md_row("best post hoc", r.best_post_hoc) + md_row("IRB bound", r.irb);
  {  // per impact, normalized
    std::ostringstream e;
    e << "impact";
    for (const std::string& name : learned_model_names()) e << "," << name;
    e << ",best-analytical,best-post-hoc,irb-bound\n";
    for (size_t k = 0; k < s.split.test.size(); ++k) {
      e << s.row(s.split.test[k]);
      for (const ErrorStats& l : learned) e << "," << fmt(l.normalized[k]);
      e << "," << fmt(r.models[static_cast<size_t>(base)].normalized[k]) << "," << fmt(r.best_post_hoc.normalized[k]) << ","
        << fmt(r.irb.normalized[k]) << "\n";
    }
    write_text_atomic((s.out / "errors_learned.csv").string(), e.str());
  }
  csv_in += row("best-post-hoc", rt.best_post_hoc) + row("irb-bound", rt.irb);
  md_in += md_row("best post hoc", rt.best_post_hoc) + md_row("IRB bound", rt.irb);
  md += "\n" + md_in;
  write_text_atomic((s.out / "learned.csv").string(), csv);
  write_text_atomic((s.out / "learned_in_sample.csv").string(), csv_in);
  write_text_atomic((s.out / "learned.md").string(), md);
  log << md;
  // learning curves: each (model, size, seed) kept as it finishes
  const fs::path cp = s.out / "learning_curve.json";
  nlohmann::json done = fs::exists(cp) ? read_json_file(cp.string()) : nlohmann::json::object();
  const int total = static_cast<int>(learned_model_names().size() * o.sizes.size()) * o.curve_seeds;
  int at = 0;
  for (int n : o.sizes)
    for (int seed = 0; seed < o.curve_seeds; ++seed) {
      // a seeded subset of the training split
      std::vector<int> pool = s.split.train;
      std::mt19937_64 rng(o.seed * 1000003ULL + static_cast<uint64_t>(seed) * 7919ULL + static_cast<uint64_t>(n));
      for (int i = 0; i < n; ++i) std::swap(pool[static_cast<size_t>(i)], pool[static_cast<size_t>(i) + rng() % (pool.size() - static_cast<size_t>(i))]);
      const std::vector<int> tr(pool.begin(), pool.begin() + n);
      for (const std::string& name : learned_model_names()) {
        ++at;
        const std::string key = name + "/" + std::to_string(n) + "/" + std::to_string(seed);
        if (done.contains(key)) continue;
        lo.seed = o.seed + static_cast<uint64_t>(seed);
        const ErrorStats e = velocity_errors(
            s.g, learned_predictions(name, s.set, s.g, s.observed, tr, s.split.test, base, bp, lo), s.split.test);
        done[key] = {{"model", name}, {"size", n}, {"seed", seed}, {"mean_error", e.mean_raw},
                     {"mean_normalized_error", e.mean_normalized}};
        write_text_atomic(cp.string(), done.dump(1) + "\n");
        log << "impact learn: curve " << at << "/" << total << " " << key << ": " << fmt(e.mean_normalized, "%.4f") << " ("
            << fmt(since(t0), "%.0f") << " s)\n" << std::flush;
      }
    }
  std::string lc = "model,size,seed,mean_error,mean_normalized_error\n";
  for (const auto& [k, v] : done.items())
    lc += v["model"].get<std::string>() + "," + std::to_string(v["size"].get<int>()) + "," + std::to_string(v["seed"].get<int>()) +
          "," + fmt(v["mean_error"]) + "," + fmt(v["mean_normalized_error"]) + "\n";
  // the references as flat lines
  for (const auto& [name, e] : std::vector<std::pair<std::string, ErrorStats>>{
           {"best-post-hoc", r.best_post_hoc}, {"irb-bound", r.irb},
           {std::string("best-analytical:") + impact_model_name(base), r.models[static_cast<size_t>(base)]}})
    lc += name + ",0,0," + fmt(e.mean_raw) + "," + fmt(e.mean_normalized) + "\n";
  write_text_atomic((s.out / "learning_curve.csv").string(), lc);
  log << "impact learn: done in " << fmt(since(t0), "%.0f") << " s\n";
}

bool impact_figures(const ImpactStudyOptions& o, std::ostream& log) {
  if (o.out.empty()) throw Error("impact figures: --out (the study folder) is required");
  if (!fs::exists(fs::path(o.out) / "study.json")) throw Error(o.out + ": not a study folder (no study.json)");
  const std::string py = python_with_matplotlib(o.python);
  if (py.empty()) {
    log << "impact figures: skipped: " << o.python << " with matplotlib not found (apt-get install python3-matplotlib)\n";
    return false;
  }
  log.flush();
  const std::vector<std::string> figs = run_figure_script(py, o.figure_script, {o.out});
  log << "impact figures: wrote " << figs.size() << " files to " << o.out << "\n";
  return true;
}

}  // namespace impulse
