// Evaluation of impact models on held-out impacts (Fazeli et al. 2017, Secs. 3.2, 4):
// the paper's metric, the post hoc references, and the learned (GP) models.
//
// Metric: the error of the predicted post-impact velocity v = (ẋ, ẏ, θ̇),
//   raw:        ‖v̂_f − v_f‖₂ in the data's units (m/s and rad/s mixed, as the paper's ℓ2);
//   normalized: ‖v̂_f − v_f‖₂ / ‖v_f‖₂, relative to the observed post-impact velocity.
//               A scalar per impact, so the per-impact ranking (best post hoc) and the
//               IRB bound's optimality (Eq. 7, plain ℓ2) are the same under both. θ̇
//               dominates both (~97% of the raw error on the real impacts). The paper
//               does not state its normalization; this is ours.
// Split: a seeded permutation of the impacts, `test_fraction` held out (default 30%);
// everything is trained and identified on the rest. Or held out in a file of its own
// (impulse impact ... --test-data): everything is trained and identified on every
// impact of the training file and scored on every impact of the test file
// (join_impacts, impact_split_held_out).
//
// Learned models (each a GP with an ARD squared-exponential kernel per output, host/impact/gp.h):
//   Class I   gp-x1-impulse  X₁ (M_c entries, contact velocity) → (P_t, P_n)   data-driven rigid
//             gp-x2-impulse  X₂ (M_c v_c)                       → (P_t, P_n)   data-driven rigid
//             gp-x1-wrench   X₁ → (P_t, P_n, τ)                                data-driven contact
//   Class II  residual-impulse  an analytical model + a GP on X₁ of its impulse residual
//             residual-wrench   an analytical model + a GP on X₁ of its wrench residual
//             gp-params         an analytical model with (μ, ε) per impact from a GP on X₁
//             trained on each impact's own best (μ, ε)
// The Class II base model is the analytical model with the lowest training error.
// Targets: the observed impulse is the data's IRB fit (p_irb; ours when absent), the
// observed wrench the data's w_data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "host/impact/identify.h"
#include "host/impact/impact_models.h"

namespace impulse {

struct ImpactSplit {
  std::vector<int> train, test;
};
ImpactSplit impact_split(int n, uint64_t seed, double test_fraction = 0.3);
// The split of join_impacts(train, test) with n_train and n_test impacts: train = all of
// 0 .. n_train − 1 in a seeded order (its first N a random subset, as impact_split's),
// test = n_train .. n_train + n_test − 1 in order.
ImpactSplit impact_split_held_out(int n_train, int n_test, uint64_t seed);
// train's impacts followed by test's, with train's object (mass, inertia) and flags
// (what training reads: has_irb, has_wrench, has_models). Errors name the files: test's
// object differs from train's, or an impact of test is one of train's (the same
// original_index, where both files have it).
ImpactSet join_impacts(const ImpactSet& train, const ImpactSet& test);

// Also per component: the mean |v̂ − v| of ẋ, ẏ (m/s) and θ̇ (rad/s), which says
// where a model's error lies (θ̇ dominates the ℓ2 norm; a point impulse that fits θ̇
// can miss ẋ by more than ẋ's own spread, as the IRB bound does on the real impacts).
struct ErrorStats {
  std::vector<double> raw, normalized;  // per impact
  double mean_raw = 0, mean_normalized = 0, median_raw = 0, median_normalized = 0;
  Eigen::Vector3d mean_abs = Eigen::Vector3d::Zero();  // per component (ẋ, ẏ, θ̇)
};
ErrorStats velocity_errors(const std::vector<ImpactGeometry>& g, const std::vector<Eigen::Vector3d>& v_pred,
                           const std::vector<int>& idx);

// observed impulses: the data's IRB fits, else ours
std::vector<Eigen::Vector2d> observed_impulses(const ImpactSet& set, const std::vector<ImpactGeometry>& g, int threads);

// X₁ = (M_c,11, M_c,12, M_c,22, v_t, v_n); X₂ = M_c v_c
Eigen::MatrixXd impact_features(const std::vector<ImpactGeometry>& g, const std::vector<int>& idx, bool x1);

// How the observed rotation answers the observed linear impulse, a check of the data's
// frames (the sign of the Jacobian's lever arms against the measured (ẋ, ẏ, θ̇)). Per
// impact the linear impulse P = (P_t, P_n) is the one whose (ẋ, ẏ) part gives the
// observed linear momentum change (J's first two columns), and the torque it implies
// about the centre of mass is d_θ P_t + n_θ P_n; least squares over `idx` of
//   I Δθ̇ ≈ a_t d_θ P_t + a_n n_θ P_n.
// For a point impulse with J and (x, y, θ) in one right-handed frame a_t = a_n = 1
// (r2 = 1); what a point impulse cannot explain is the wrench's τ (mean |τ|/I, rad/s).
// A negative a_t means the measured rotation turns the other way from the one the
// tangent row's lever arm predicts. On the real ellipse impacts: a_t ≈ −0.89,
// a_n ≈ 0.92 (bench/results/impact_2026-11-24.md, 2026-11-26).
struct LeverArmCheck {
  double a_t = 0, a_n = 0, r2 = 0;
  double mean_abs_tau_over_inertia = 0;       // of the data's frame, rad/s
  double mean_abs_tau_over_inertia_flipped = 0;  // the same with d_θ negated
};
LeverArmCheck lever_arm_check(const std::vector<ImpactGeometry>& g, const std::vector<int>& idx);

const std::vector<std::string>& learned_model_names();

struct LearnOptions {
  int threads = 0;
  Backend backend = Backend::kCpu;
  uint64_t seed = 0;
  int gp_iterations = 100, gp_restarts = 1;
  IdentifyOptions identify;  // for the per-impact (μ, ε) of gp-params
};

// Trains learned model `name` on `train` and predicts the post-impact velocities of
// `test`. base_model / base_params: the Class II analytical model.
std::vector<Eigen::Vector3d> learned_predictions(const std::string& name, const ImpactSet& set,
                                                 const std::vector<ImpactGeometry>& g,
                                                 const std::vector<Eigen::Vector2d>& observed,
                                                 const std::vector<int>& train, const std::vector<int>& test,
                                                 int base_model, ImpactParams base_params, const LearnOptions& opt);
// the same model trained once, predicting each of `sets` as its own batch (a set's
// predictions do not depend on the others: impact learn's test and in-sample tables)
std::vector<std::vector<Eigen::Vector3d>> learned_predictions(const std::string& name, const ImpactSet& set,
                                                              const std::vector<ImpactGeometry>& g,
                                                              const std::vector<Eigen::Vector2d>& observed,
                                                              const std::vector<int>& train,
                                                              const std::vector<std::vector<int>>& sets, int base_model,
                                                              ImpactParams base_params, const LearnOptions& opt);

}  // namespace impulse
