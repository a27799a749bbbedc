#include "host/impact/impact_eval.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "host/impact/gp.h"
#include "solvers/error.h"

namespace impulse {

ImpactSplit impact_split(int n, uint64_t seed, double test_fraction) {
  if (n < 2) throw Error("impact split: need at least 2 impacts");
  if (!(test_fraction > 0 && test_fraction < 1)) throw Error("impact split: test fraction must be in (0, 1)");
  std::vector<int> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  std::mt19937_64 rng(seed ^ 0x1a9ac7ULL);
  for (int i = n - 1; i > 0; --i) std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(rng() % static_cast<uint64_t>(i + 1))]);
  const int nt = std::max(1, static_cast<int>(std::lround(test_fraction * n)));
  ImpactSplit s;
  s.test.assign(p.begin(), p.begin() + nt);
  s.train.assign(p.begin() + nt, p.end());
  std::sort(s.test.begin(), s.test.end());
  return s;  // train keeps the shuffled order: its first N are a random subset of size N
}

ImpactSplit impact_split_held_out(int n_train, int n_test, uint64_t seed) {
  if (n_train < 2) throw Error("impact split: need at least 2 training impacts, got " + std::to_string(n_train));
  if (n_test < 1) throw Error("impact split: need at least 1 test impact");
  ImpactSplit s;
  s.train.resize(static_cast<size_t>(n_train));
  std::iota(s.train.begin(), s.train.end(), 0);
  std::mt19937_64 rng(seed ^ 0x1a9ac7ULL);
  for (int i = n_train - 1; i > 0; --i)
    std::swap(s.train[static_cast<size_t>(i)], s.train[static_cast<size_t>(rng() % static_cast<uint64_t>(i + 1))]);
  s.test.resize(static_cast<size_t>(n_test));
  std::iota(s.test.begin(), s.test.end(), n_train);
  return s;
}

ImpactSet join_impacts(const ImpactSet& train, const ImpactSet& test) {
  if (train.mass != test.mass || train.inertia_per_mass != test.inertia_per_mass)
    throw Error(test.source + ": another object (mass, inertia) than " + train.source + "'s");
  std::map<int, size_t> seen;
  for (size_t i = 0; i < train.impacts.size(); ++i)
    if (train.impacts[i].original_index >= 0) seen[train.impacts[i].original_index] = i;
  for (size_t i = 0; i < test.impacts.size(); ++i) {
    const auto it = seen.find(test.impacts[i].original_index);
    if (it != seen.end())
      throw Error(test.source + ": row " + std::to_string(i) + " (original_index " + std::to_string(it->first) +
                  ") is row " + std::to_string(it->second) + " of the training data " + train.source +
                  ": test impacts must be held out from training");
  }
  ImpactSet s = train;
  s.impacts.insert(s.impacts.end(), test.impacts.begin(), test.impacts.end());
  return s;
}

namespace {
double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  const size_t h = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(h), v.end());
  double m = v[h];
  if (v.size() % 2 == 0) m = 0.5 * (m + *std::max_element(v.begin(), v.begin() + static_cast<long>(h)));
  return m;
}
}  // namespace

ErrorStats velocity_errors(const std::vector<ImpactGeometry>& g, const std::vector<Eigen::Vector3d>& v_pred,
                           const std::vector<int>& idx) {
  if (v_pred.size() != idx.size())
    throw Error("velocity_errors: " + std::to_string(v_pred.size()) + " predictions for " + std::to_string(idx.size()) + " impacts");
  ErrorStats s;
  for (size_t k = 0; k < idx.size(); ++k) {
    const ImpactGeometry& G = g[static_cast<size_t>(idx[k])];
    const double e = (v_pred[k] - G.vf).norm();
    s.mean_abs += (v_pred[k] - G.vf).cwiseAbs() / static_cast<double>(idx.size());
    s.raw.push_back(e);
    s.normalized.push_back(e / std::max(1e-12, G.vf.norm()));
  }
  const double n = static_cast<double>(idx.size());
  for (size_t k = 0; k < idx.size(); ++k) {
    s.mean_raw += s.raw[k] / n;
    s.mean_normalized += s.normalized[k] / n;
  }
  s.median_raw = median(s.raw);
  s.median_normalized = median(s.normalized);
  return s;
}

std::vector<Eigen::Vector2d> observed_impulses(const ImpactSet& set, const std::vector<ImpactGeometry>& g, int threads) {
  if (set.has_irb) {
    std::vector<Eigen::Vector2d> out;
    for (const Impact& m : set.impacts) out.emplace_back(m.p_irb[0], m.p_irb[1]);
    return out;
  }
  return irb_impulses(g, threads);
}

Eigen::MatrixXd impact_features(const std::vector<ImpactGeometry>& g, const std::vector<int>& idx, bool x1) {
  Eigen::MatrixXd X(static_cast<Eigen::Index>(idx.size()), x1 ? 5 : 2);
  for (size_t k = 0; k < idx.size(); ++k) {
    const ImpactGeometry& G = g[static_cast<size_t>(idx[k])];
    const Eigen::Matrix2d Mc = G.W.inverse();
    const Eigen::Index r = static_cast<Eigen::Index>(k);
    if (x1)
      X.row(r) << Mc(0, 0), Mc(0, 1), Mc(1, 1), G.vc(0), G.vc(1);
    else
      X.row(r) = (Mc * G.vc).transpose();
  }
  return X;
}

LeverArmCheck lever_arm_check(const std::vector<ImpactGeometry>& g, const std::vector<int>& idx) {
  if (idx.size() < 2) throw Error("lever_arm_check: needs at least 2 impacts");
  Eigen::MatrixXd A(static_cast<Eigen::Index>(idx.size()), 2);
  Eigen::VectorXd b(static_cast<Eigen::Index>(idx.size()));
  LeverArmCheck c;
  for (size_t k = 0; k < idx.size(); ++k) {
    const ImpactGeometry& G = g[static_cast<size_t>(idx[k])];
    const Eigen::Vector3d Mdv = G.Minv.diagonal().cwiseInverse().cwiseProduct(G.vf - G.vi);
    // J's (ẋ, ẏ) columns: (J_xy)ᵀ P = m Δ(ẋ, ẏ)
    const Eigen::Matrix2d Jxy = G.J.leftCols<2>();
    const Eigen::Vector2d P = Jxy.transpose().colPivHouseholderQr().solve(Mdv.head<2>());
    const Eigen::Index r = static_cast<Eigen::Index>(k);
    A(r, 0) = G.J(0, 2) * P(0);
    A(r, 1) = G.J(1, 2) * P(1);
    b(r) = Mdv(2);
    const double I = 1.0 / G.Minv(2, 2);
    c.mean_abs_tau_over_inertia += std::abs(Mdv(2) - A(r, 0) - A(r, 1)) / I / static_cast<double>(idx.size());
    c.mean_abs_tau_over_inertia_flipped += std::abs(Mdv(2) + A(r, 0) - A(r, 1)) / I / static_cast<double>(idx.size());
  }
  const Eigen::Vector2d a = A.colPivHouseholderQr().solve(b);
  c.a_t = a(0);
  c.a_n = a(1);
  const double mean = b.mean();
  const double tot = (b.array() - mean).square().sum();
  c.r2 = tot > 0 ? 1 - (b - A * a).squaredNorm() / tot : 0;
  return c;
}

const std::vector<std::string>& learned_model_names() {
  static const std::vector<std::string> n = {"gp-x1-impulse", "gp-x2-impulse", "gp-x1-wrench",
                                             "residual-impulse", "residual-wrench", "gp-params"};
  return n;
}

std::vector<std::vector<Eigen::Vector3d>> learned_predictions(const std::string& name, const ImpactSet& set,
                                                              const std::vector<ImpactGeometry>& g,
                                                              const std::vector<Eigen::Vector2d>& observed,
                                                              const std::vector<int>& train,
                                                              const std::vector<std::vector<int>>& sets, int base_model,
                                                              ImpactParams base_params, const LearnOptions& opt) {
  if (std::find(learned_model_names().begin(), learned_model_names().end(), name) == learned_model_names().end())
    throw Error("unknown learned impact model '" + name +
                "' (known: gp-x1-impulse, gp-x2-impulse, gp-x1-wrench, residual-impulse, residual-wrench, gp-params)");
  const bool wrench = name.find("wrench") != std::string::npos;
  if (wrench && !set.has_wrench) throw Error(name + ": the data have no wrench impulses (w_data)");
  if (train.size() < 2) throw Error(name + ": needs at least 2 training impacts");
  GpFitOptions fo;
  fo.max_iterations = opt.gp_iterations;
  fo.restarts = opt.gp_restarts;
  fo.seed = opt.seed;
  const bool x1 = name != "gp-x2-impulse";
  const Eigen::MatrixXd Xtr = impact_features(g, train, x1);
  const Eigen::Index ntr = static_cast<Eigen::Index>(train.size());
  auto obs_wrench = [&](int i) {
    const Impact& m = set.impacts[static_cast<size_t>(i)];
    return Eigen::Vector3d(m.w_data[0], m.w_data[1], m.w_data[2]);
  };
  auto geometry = [&](const std::vector<int>& idx) {
    std::vector<ImpactGeometry> out;
    for (int i : idx) out.push_back(g[static_cast<size_t>(i)]);
    return out;
  };
  // each set predicted on its own (its own batch of analytical solves), so a set's
  // predictions do not depend on the other sets
  std::vector<std::vector<Eigen::Vector3d>> out(sets.size());
  if (name == "gp-params") {
    // each training impact's own best (μ, ε), then a GP from X₁ to them
    std::vector<Eigen::Vector2d> tt;
    for (int i : train) tt.push_back(observed[static_cast<size_t>(i)]);
    IdentifyOptions io = opt.identify;
    io.threads = opt.threads;
    io.backend = opt.backend;
    const std::vector<Identified> each = identify_each(base_model, geometry(train), tt, io);
    Eigen::MatrixXd Y(ntr, 2);
    for (Eigen::Index r = 0; r < ntr; ++r) Y.row(r) << each[static_cast<size_t>(r)].params.mu, each[static_cast<size_t>(r)].params.eps;
    MultiGp gp;
    gp.fit(Xtr, Y, fo);
    for (size_t s = 0; s < sets.size(); ++s) {
      const Eigen::MatrixXd pr = gp.predict(impact_features(g, sets[s], x1));
      const std::vector<ImpactGeometry> teg = geometry(sets[s]);
      std::vector<ImpactParams> pp;
      for (size_t k = 0; k < teg.size(); ++k) {
        const Eigen::Index r = static_cast<Eigen::Index>(k);
        pp.push_back({std::max(0.0, pr(r, 0)), std::clamp(pr(r, 1), 0.0, 1.0)});
      }
      const std::vector<ImpactPrediction> P = predict_impacts(base_model, teg, pp, opt.threads, opt.backend);
      for (size_t k = 0; k < teg.size(); ++k) out[s].push_back(teg[k].post_velocity(P[k].P));
    }
    return out;
  }
  const int k_out = wrench ? 3 : 2;
  Eigen::MatrixXd Y(ntr, k_out);
  const bool residual = name.rfind("residual", 0) == 0;
  std::vector<ImpactPrediction> base_tr;
  if (residual) base_tr = predict_impacts(base_model, geometry(train), {base_params}, opt.threads, opt.backend);
  for (Eigen::Index r = 0; r < ntr; ++r) {
    const int i = train[static_cast<size_t>(r)];
    Eigen::Vector3d y = wrench ? obs_wrench(i) : Eigen::Vector3d(observed[static_cast<size_t>(i)](0), observed[static_cast<size_t>(i)](1), 0);
    if (residual) y.head<2>() -= base_tr[static_cast<size_t>(r)].P;
    Y.row(r) = y.head(k_out).transpose();
  }
  MultiGp gp;
  gp.fit(Xtr, Y, fo);
  for (size_t s = 0; s < sets.size(); ++s) {
    const std::vector<int>& test = sets[s];
    const Eigen::MatrixXd pr = gp.predict(impact_features(g, test, x1));
    std::vector<ImpactPrediction> base_te;
    if (residual) base_te = predict_impacts(base_model, geometry(test), {base_params}, opt.threads, opt.backend);
    for (size_t k = 0; k < test.size(); ++k) {
      const Eigen::Index r = static_cast<Eigen::Index>(k);
      Eigen::Vector3d w(pr(r, 0), pr(r, 1), wrench ? pr(r, 2) : 0.0);
      if (residual) w.head<2>() += base_te[k].P;
      out[s].push_back(g[static_cast<size_t>(test[k])].post_velocity_wrench(w));
    }
  }
  return out;
}

std::vector<Eigen::Vector3d> learned_predictions(const std::string& name, const ImpactSet& set,
                                                 const std::vector<ImpactGeometry>& g,
                                                 const std::vector<Eigen::Vector2d>& observed,
                                                 const std::vector<int>& train, const std::vector<int>& test,
                                                 int base_model, ImpactParams base_params, const LearnOptions& opt) {
  return learned_predictions(name, set, g, observed, train, std::vector<std::vector<int>>{test}, base_model,
                             base_params, opt)[0];
}

}  // namespace impulse
