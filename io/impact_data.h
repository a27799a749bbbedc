// Planar impact data (Fazeli et al. 2017): one row per impact of a planar object
// with a fixed surface, as in ../shared/data/planar_impact/ellipse_impacts.npz.
//
// Per impact: pre- and post-contact configuration and velocity (x, y, θ, ẋ, ẏ, θ̇);
// the contact Jacobian's tangent row d and normal row n (acting on (ẋ, ẏ, θ̇)); and,
// when the file has them, the authors' own predicted impulses (P_t, P_n) and
// post-impact velocities of six analytical models (Drumwright-Shell, AP Poisson,
// AP Newton, Mirtich, Wang-Mason, Whittaker), the IRB-fit impulse, the wrench
// impulse (P_t, P_n, τ) and the GP features.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace impulse {

struct Impact {
  std::array<double, 6> state_i{}, state_f{};  // x, y, θ, ẋ, ẏ, θ̇ (m, rad, m/s, rad/s)
  std::array<double, 3> n{}, d{};              // Jacobian rows (normal, tangent)
  std::array<double, 12> p_models{};           // 6 × (P_t, P_n), N·s (NaN when absent)
  std::array<double, 18> v_models{};           // 6 × (ẋ, ẏ, θ̇)
  std::array<double, 2> p_irb{};               // (P_t, P_n)
  std::array<double, 3> w_data{};              // (P_t, P_n, τ)
  std::array<double, 5> feature5{};
  std::array<double, 2> feature2{};
  int original_index = -1;
};

struct ImpactSet {
  std::vector<Impact> impacts;
  bool has_models = false, has_irb = false, has_wrench = false;
  // the object (the data set's README): mass (kg) and I / m (m²). The authors'
  // predictions use I = 3.70e-4 m (their θ̇ changes imply it on every impact), the
  // README's k_g = 0.0192 m gives 3.686e-4; we use theirs.
  double mass = 0.0364, inertia_per_mass = 3.70e-4;
  std::string source;
};

// The six analytical models in the order of the data's p_models / v_models.
constexpr int kImpactModels = 6;
const char* impact_model_name(int k);  // "drumwright-shell", "ap-poisson", "ap-newton", "mirtich", "wang-mason", "whittaker"
int impact_model_index(const std::string& name);  // throws Error for an unknown name

// Reads an .npz with at least states_i, states_f, n, d (one row per impact).
// Errors name the file, the array and the row: a wrong shape, a NaN, a zero normal.
ImpactSet load_impacts(const std::string& path);

// Writes the same format (atomically): states, Jacobian rows and whatever else the set has.
void write_impacts(const std::string& path, const ImpactSet& set);

}  // namespace impulse
