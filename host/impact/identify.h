// Identification of an impact model's (μ, ε) (Fazeli et al. 2017, Eq. 6):
//   argmin_{μ, ε} Σ_n ‖P_n − P̂_n(μ, ε)‖₂
// over k training impacts, with P_n the observed impulse (the IRB fit of each impact).
// The cost is only piecewise smooth in (μ, ε) (models switch between sticking and
// sliding). Both methods start from a grid over μ ∈ [0, mu_max], ε ∈ [0, 1] (every
// grid point evaluates all impacts in one batch) and refine from its best point:
// - gradient (the four models with derivatives, impact_model_has_gradient): iteratively
//   reweighted Gauss-Newton on Σ‖r_n‖, r_n = P̂_n − P_n: the step solves
//   (Σ J_nᵀJ_n/‖r_n‖) δ = −∇ (the weighted curvature majorizes the sum of norms'),
//   projected on μ >= 0, ε ∈ [0, 1] (a coordinate at its bound with the gradient pushing
//   out is held), with backtracking until the cost decreases (Armijo); it stops when no
//   step decreases the cost (an optimum, or a kink where the active sets switch) or
//   the step is below refine_tol / 100. Each trial step is one pass over the k
//   impacts with their derivatives, which the next iteration uses when the step is
//   accepted (predict_impacts_derivative, on CPU threads: Drumwright-Shell's QPs by
//   active-set enumeration there, so `backend` serves only the grid and the final
//   cost). Every accepted step lowers the cost;
// - search (derivative-free, every model): a pattern search with halving steps (each
//   candidate one batch of the k impacts).
// method "auto" takes gradient where the model has derivatives, else search.
// identify_each (one (μ, ε) per impact) uses the search for every model and refuses
// method "gradient".
// Resampled identification (Table 1): k impacts drawn without replacement, m times
// (seeded), the per-impact costs of the grid computed once for the whole pool.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "host/impact/impact_models.h"

namespace impulse {

struct IdentifyOptions {
  int k = 120;               // training impacts per identification
  int resamples = 100;       // m
  uint64_t seed = 0;
  double mu_max = 0.5;       // grid μ ∈ [0, mu_max]
  int grid_mu = 26, grid_eps = 26;
  int refine_steps = 30;     // pattern-search iterations (each halves or moves)
  double refine_tol = 1e-4;  // stop when the step is below this
  std::string method = "auto";  // auto | gradient | search (see above)
  int gradient_steps = 50;      // Gauss-Newton iterations at most
  int threads = 0;
  Backend backend = Backend::kCpu;  // where the Drumwright-Shell QPs are solved
  std::function<void(int done, int total)> progress;  // called after each resample
  // identify() only: fit the authors' form of the model (predict_impact_authors:
  // ap-poisson and mirtich), to check it against the predictions stored in the data
  bool authors_form = false;
};

struct Identified {
  ImpactParams params;
  double cost = 0;  // Σ ‖P − P̂‖ over the impacts used (mean per impact: cost / k)
};

// The cost of one (μ, ε) over the given impacts.
double identification_cost(int model, const std::vector<ImpactGeometry>& g, const std::vector<Eigen::Vector2d>& target,
                           ImpactParams p, int threads = 0, Backend backend = Backend::kCpu);

// The method options' "method" resolves to for this model: "gradient" or "search"
// (Error for an unknown method, or gradient asked of a model without derivatives).
std::string identify_method(int model, const IdentifyOptions& opt);

// Grid + refinement (gradient or pattern search) over all impacts of g.
Identified identify(int model, const std::vector<ImpactGeometry>& g, const std::vector<Eigen::Vector2d>& target,
                    const IdentifyOptions& opt);

struct ResampledFit {
  std::vector<Identified> each;  // one per resample
  double mu_mean = 0, mu_std = 0, eps_mean = 0, eps_std = 0;
};

// m identifications from k impacts each, drawn from `pool` (indices into g).
ResampledFit identify_resampled(int model, const std::vector<ImpactGeometry>& g,
                                const std::vector<Eigen::Vector2d>& target, const std::vector<int>& pool,
                                const IdentifyOptions& opt);

// Per impact, the (μ, ε) that best explains it alone (Class II's targets, Fig. 6).
std::vector<Identified> identify_each(int model, const std::vector<ImpactGeometry>& g,
                                      const std::vector<Eigen::Vector2d>& target, const IdentifyOptions& opt);

}  // namespace impulse
