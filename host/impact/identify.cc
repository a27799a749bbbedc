#include "host/impact/identify.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "solvers/error.h"

namespace impulse {

namespace {

void check(const std::vector<ImpactGeometry>& g, const std::vector<Eigen::Vector2d>& target, const IdentifyOptions& o) {
  if (g.size() != target.size())
    throw Error("identify: " + std::to_string(target.size()) + " target impulses for " + std::to_string(g.size()) + " impacts");
  if (g.empty()) throw Error("identify: no impacts");
  if (o.grid_mu < 2 || o.grid_eps < 2) throw Error("identify: the grid needs at least 2 points per parameter");
  if (!(o.mu_max > 0)) throw Error("identify: mu_max must be > 0");
  if (o.method != "auto" && o.method != "gradient" && o.method != "search")
    throw Error("identify: unknown method '" + o.method + "' (auto | gradient | search)");
  for (size_t i = 0; i < target.size(); ++i)
    if (!target[i].allFinite()) throw Error("identify: target impulse " + std::to_string(i) + " is not finite");
}

ImpactParams grid_point(const IdentifyOptions& o, int a, int b) {
  return {o.mu_max * a / (o.grid_mu - 1), 1.0 * b / (o.grid_eps - 1)};
}

// per-impact errors ‖P − P̂‖ of every grid point: err[(a * grid_eps + b) * n + i]
std::vector<double> grid_errors(int model, const std::vector<ImpactGeometry>& g, const std::vector<Eigen::Vector2d>& t,
                                const IdentifyOptions& o) {
  const size_t n = g.size();
  std::vector<double> err(static_cast<size_t>(o.grid_mu * o.grid_eps) * n);
  for (int a = 0; a < o.grid_mu; ++a)
    for (int b = 0; b < o.grid_eps; ++b) {
      const std::vector<ImpactPrediction> p = predict_impacts(model, g, {grid_point(o, a, b)}, o.threads, o.backend);
      double* e = &err[static_cast<size_t>(a * o.grid_eps + b) * n];
      for (size_t i = 0; i < n; ++i) e[i] = (p[i].P - t[i]).norm();
    }
  return err;
}

// the cost under the options' form of the model
double cost_of(int model, const std::vector<ImpactGeometry>& g, const std::vector<Eigen::Vector2d>& t, ImpactParams p,
               const IdentifyOptions& o) {
  if (!o.authors_form) return identification_cost(model, g, t, p, o.threads, o.backend);
  double c = 0;
  for (size_t i = 0; i < g.size(); ++i) c += (predict_impact_authors(model, g[i], p).P - t[i]).norm();
  return c;
}

ImpactParams project(ImpactParams p) {
  p.mu = std::max(0.0, p.mu);
  p.eps = std::clamp(p.eps, 0.0, 1.0);
  return p;
}

// Σ‖P̂ − P‖ with the derivative path's predictions (the same values the gradient sees)
double derivative_cost(int model, const std::vector<ImpactGeometry>& g, const std::vector<Eigen::Vector2d>& t,
                       ImpactParams p, const IdentifyOptions& o, Eigen::Vector2d* grad = nullptr,
                       Eigen::Matrix2d* H = nullptr) {
  const std::vector<ImpactDerivative> d = predict_impacts_derivative(model, g, {p}, o.threads);
  double c = 0;
  if (grad != nullptr) grad->setZero();
  if (H != nullptr) H->setZero();
  for (size_t i = 0; i < g.size(); ++i) {
    const Eigen::Vector2d r = d[i].pred.P - t[i];
    const double n = r.norm();
    c += n;
    if (n < 1e-12) continue;  // the norm's kink: no direction to prefer
    if (grad != nullptr) *grad += d[i].dP.transpose() * r / n;
    if (H != nullptr) *H += d[i].dP.transpose() * d[i].dP / n;
  }
  return c;
}

// iteratively reweighted Gauss-Newton from p0 (see identify.h)
Identified refine_gradient(int model, const std::vector<ImpactGeometry>& g, const std::vector<Eigen::Vector2d>& t,
                           ImpactParams p0, const IdentifyOptions& o) {
  ImpactParams p = project(p0);
  Eigen::Vector2d grad;
  Eigen::Matrix2d H;
  double c = derivative_cost(model, g, t, p, o, &grad, &H);
  for (int it = 0; it < o.gradient_steps; ++it) {
    // hold a coordinate at its bound when the descent direction leaves the box
    bool free_mu = !(p.mu <= 0 && grad(0) > 0);
    bool free_eps = !((p.eps <= 0 && grad(1) > 0) || (p.eps >= 1 && grad(1) < 0));
    Eigen::Vector2d delta = Eigen::Vector2d::Zero();
    const double reg = 1e-12 * (H.trace() + 1e-300);
    if (free_mu && free_eps) {
      delta = -(H + reg * Eigen::Matrix2d::Identity()).ldlt().solve(grad);
    } else if (free_mu) {
      delta(0) = -grad(0) / (H(0, 0) + reg);
    } else if (free_eps) {
      delta(1) = -grad(1) / (H(1, 1) + reg);
    }
    if (!delta.allFinite() || delta.norm() == 0) break;
    double step = 1;
    bool accepted = false;
    ImpactParams next = p;
    double cn = c;
    Eigen::Vector2d gn;  // a trial's gradient and curvature: the next iteration's when accepted
    Eigen::Matrix2d Hn;
    for (int tries = 0; tries < 40; ++tries, step *= 0.5) {
      next = project({p.mu + step * delta(0), p.eps + step * delta(1)});
      const Eigen::Vector2d moved(next.mu - p.mu, next.eps - p.eps);
      cn = derivative_cost(model, g, t, next, o, &gn, &Hn);
      // a strict decrease, and Armijo's on the projected step (which a bound may turn
      // uphill: then only the strict decrease counts)
      if (cn < c && cn <= c + 1e-4 * std::min(0.0, grad.dot(moved))) {
        accepted = true;
        break;
      }
    }
    if (!accepted) break;
    const double moved = std::hypot(next.mu - p.mu, next.eps - p.eps);
    p = next;
    c = cn;
    grad = gn;
    H = Hn;
    if (moved < o.refine_tol * 1e-2) break;
  }
  return {p, cost_of(model, g, t, p, o)};
}

// pattern search from p0 over the impacts `idx`
Identified refine_search(int model, const std::vector<ImpactGeometry>& g, const std::vector<Eigen::Vector2d>& t,
                  ImpactParams p0, double c0, const IdentifyOptions& o) {
  Identified best{p0, c0};
  double hm = o.mu_max / (o.grid_mu - 1), he = 1.0 / (o.grid_eps - 1);
  for (int it = 0; it < o.refine_steps && (hm > o.refine_tol || he > o.refine_tol); ++it) {
    bool moved = false;
    const ImpactParams cand[4] = {{best.params.mu + hm, best.params.eps},
                                  {best.params.mu - hm, best.params.eps},
                                  {best.params.mu, best.params.eps + he},
                                  {best.params.mu, best.params.eps - he}};
    for (ImpactParams c : cand) {
      c = project(c);
      const double cost = cost_of(model, g, t, c, o);
      if (cost < best.cost) {
        best = {c, cost};
        moved = true;
      }
    }
    if (!moved) {
      hm *= 0.5;
      he *= 0.5;
    }
  }
  return best;
}

Identified refine(int model, const std::vector<ImpactGeometry>& g, const std::vector<Eigen::Vector2d>& t,
                  ImpactParams p0, double c0, const IdentifyOptions& o) {
  if (identify_method(model, o) == "gradient") {
    const Identified r = refine_gradient(model, g, t, p0, o);
    return r.cost <= c0 ? r : Identified{p0, c0};  // never worse than the grid's best
  }
  return refine_search(model, g, t, p0, c0, o);
}

}  // namespace

std::string identify_method(int model, const IdentifyOptions& o) {
  const bool has = impact_model_has_gradient(model) && !o.authors_form;
  if (o.method == "auto") return has ? "gradient" : "search";
  if (o.method == "search") return "search";
  if (o.method == "gradient") {
    if (!has)
      throw Error(std::string("identify: method gradient: ") + impact_model_name(model) +
                  (o.authors_form ? " in the authors' form" : "") +
                  " has no derivatives in (mu, eps) (use search or auto)");
    return "gradient";
  }
  throw Error("identify: unknown method '" + o.method + "' (auto | gradient | search)");
}

double identification_cost(int model, const std::vector<ImpactGeometry>& g, const std::vector<Eigen::Vector2d>& target,
                           ImpactParams p, int threads, Backend backend) {
  const std::vector<ImpactPrediction> pr = predict_impacts(model, g, {p}, threads, backend);
  double c = 0;
  for (size_t i = 0; i < g.size(); ++i) c += (pr[i].P - target[i]).norm();
  return c;
}

Identified identify(int model, const std::vector<ImpactGeometry>& g, const std::vector<Eigen::Vector2d>& target,
                    const IdentifyOptions& o) {
  check(g, target, o);
  identify_method(model, o);  // refused before any work
  Identified best{{0, 0}, INFINITY};
  for (int a = 0; a < o.grid_mu; ++a)
    for (int b = 0; b < o.grid_eps; ++b) {
      const ImpactParams p = grid_point(o, a, b);
      const double c = cost_of(model, g, target, p, o);
      if (c < best.cost) best = {p, c};
    }
  return refine(model, g, target, best.params, best.cost, o);
}

ResampledFit identify_resampled(int model, const std::vector<ImpactGeometry>& g,
                                const std::vector<Eigen::Vector2d>& target, const std::vector<int>& pool,
                                const IdentifyOptions& o) {
  check(g, target, o);
  if (o.authors_form) throw Error("identify: the authors' forms are fitted by identify() only");
  identify_method(model, o);  // refused before any work
  if (o.k < 1 || o.k > static_cast<int>(pool.size()))
    throw Error("identify: k = " + std::to_string(o.k) + " training impacts from a pool of " + std::to_string(pool.size()));
  if (o.resamples < 1) throw Error("identify: resamples must be >= 1");
  std::vector<ImpactGeometry> pg;
  std::vector<Eigen::Vector2d> pt;
  for (int i : pool) {
    if (i < 0 || i >= static_cast<int>(g.size())) throw Error("identify: pool index " + std::to_string(i) + " out of range");
    pg.push_back(g[static_cast<size_t>(i)]);
    pt.push_back(target[static_cast<size_t>(i)]);
  }
  const std::vector<double> err = grid_errors(model, pg, pt, o);
  const size_t n = pg.size();
  std::mt19937_64 rng(o.seed);
  ResampledFit out;
  for (int r = 0; r < o.resamples; ++r) {
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    // a partial Fisher-Yates with the portable generator: the first k are the sample
    for (int i = 0; i < o.k; ++i) {
      const uint64_t span = n - static_cast<size_t>(i);
      const size_t j = static_cast<size_t>(i) + static_cast<size_t>(rng() % span);
      std::swap(order[static_cast<size_t>(i)], order[j]);
    }
    std::vector<ImpactGeometry> sg;
    std::vector<Eigen::Vector2d> st;
    for (int i = 0; i < o.k; ++i) {
      sg.push_back(pg[static_cast<size_t>(order[static_cast<size_t>(i)])]);
      st.push_back(pt[static_cast<size_t>(order[static_cast<size_t>(i)])]);
    }
    Identified best{{0, 0}, INFINITY};
    for (int a = 0; a < o.grid_mu; ++a)
      for (int b = 0; b < o.grid_eps; ++b) {
        const double* e = &err[static_cast<size_t>(a * o.grid_eps + b) * n];
        double c = 0;
        for (int i = 0; i < o.k; ++i) c += e[order[static_cast<size_t>(i)]];
        if (c < best.cost) best = {grid_point(o, a, b), c};
      }
    out.each.push_back(refine(model, sg, st, best.params, best.cost, o));
    if (o.progress) o.progress(r + 1, o.resamples);
  }
  const double m = static_cast<double>(out.each.size());
  for (const Identified& f : out.each) {
    out.mu_mean += f.params.mu / m;
    out.eps_mean += f.params.eps / m;
  }
  for (const Identified& f : out.each) {
    out.mu_std += (f.params.mu - out.mu_mean) * (f.params.mu - out.mu_mean);
    out.eps_std += (f.params.eps - out.eps_mean) * (f.params.eps - out.eps_mean);
  }
  out.mu_std = m > 1 ? std::sqrt(out.mu_std / (m - 1)) : 0;
  out.eps_std = m > 1 ? std::sqrt(out.eps_std / (m - 1)) : 0;
  return out;
}

std::vector<Identified> identify_each(int model, const std::vector<ImpactGeometry>& g,
                                      const std::vector<Eigen::Vector2d>& target, const IdentifyOptions& o) {
  check(g, target, o);
  if (o.method == "gradient")
    throw Error("identify: one (mu, eps) per impact is found by the search only (method auto or search, not gradient)");
  const std::vector<double> err = grid_errors(model, g, target, o);
  const size_t n = g.size();
  std::vector<Identified> out(n, Identified{{0, 0}, INFINITY});
  for (int a = 0; a < o.grid_mu; ++a)
    for (int b = 0; b < o.grid_eps; ++b) {
      const double* e = &err[static_cast<size_t>(a * o.grid_eps + b) * n];
      for (size_t i = 0; i < n; ++i)
        if (e[i] < out[i].cost) out[i] = {grid_point(o, a, b), e[i]};
    }
  // refine all impacts together: one batch per candidate, each impact its own (μ, ε)
  double hm = o.mu_max / (o.grid_mu - 1), he = 1.0 / (o.grid_eps - 1);
  for (int it = 0; it < o.refine_steps && (hm > o.refine_tol || he > o.refine_tol); ++it) {
    std::vector<char> moved(n, 0);
    for (int c = 0; c < 4; ++c) {
      std::vector<ImpactParams> cand(n);
      for (size_t i = 0; i < n; ++i) {
        ImpactParams p = out[i].params;
        if (c == 0) p.mu += hm;
        if (c == 1) p.mu -= hm;
        if (c == 2) p.eps += he;
        if (c == 3) p.eps -= he;
        cand[i] = project(p);
      }
      const std::vector<ImpactPrediction> pr = predict_impacts(model, g, cand, o.threads, o.backend);
      for (size_t i = 0; i < n; ++i) {
        const double e = (pr[i].P - target[i]).norm();
        if (e < out[i].cost) {
          out[i] = {cand[i], e};
          moved[i] = 1;
        }
      }
    }
    // one step size for all (halved when most impacts stopped moving)
    const size_t nm = static_cast<size_t>(std::count(moved.begin(), moved.end(), 1));
    if (nm * 4 < n) {
      hm *= 0.5;
      he *= 0.5;
    }
  }
  return out;
}

}  // namespace impulse
