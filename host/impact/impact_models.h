// Planar rigid-body impact models (Fazeli, Zapolsky, Drumwright, Rodriguez, CoRL
// 2017, Sec. 2): a planar object hits a fixed surface at one point; a model maps
// the pre-impact state and its parameters (friction μ, restitution ε) to the
// impulse P = (P_t, P_n), and v_f = v_i + M⁻¹JᵀP (Eq. 2).
//
// Notation per impact: M = diag(m, m, I), J = [d; n] (the data's tangent and normal
// rows, acting on (ẋ, ẏ, θ̇)), W = J M⁻¹ Jᵀ = M_c⁻¹ (the inverse effective inertia at
// the contact), v_c = J v_i = (v_t, v_n) with v_n < 0 approaching; after the impulse
// the contact velocity is v_c + W P (Eq. 3).
//
// The six models, as implemented here (the paper defers to Fazeli et al. ICRA 2017
// and the original papers; these are the standard published forms):
// - Whittaker (Whittaker 1944; Newton restitution with the friction-cone clamp): the
//   sticking impulse (v_t^f = 0, v_n^f = −ε v_n) with its tangential part clamped into
//   the cone |P_t| ≤ μ P_n and P_n kept. This is the form the authors' predictions in
//   the data follow (they agree to 4e-4; with P_n re-solved after the clamp they differ
//   by 4%); without friction it differs from the other five when W_tn ≠ 0. Where the
//   sticking impulse would pull (P_n < 0), sliding against v_t with v_n^f = −ε v_n.
// - Anitescu-Potra, Newton (Anitescu & Potra 1997): the impulse LCP with the
//   friction cone's two planar directions, 0 ≤ P_n ⊥ v_n^f + ε v_n ≥ 0,
//   0 ≤ β± ⊥ λ ± v_t^f ≥ 0, 0 ≤ λ ⊥ μP_n − β₊ − β₋ ≥ 0 (P_t = β₊ − β₋), by Lemke.
// - Anitescu-Potra, Poisson: the same LCP with ε = 0 (compression, impulse P_c), then
//   a restitution impulse ε P_c,n along the normal only. (The authors' AP Poisson
//   predictions differ from this by 0.7% on average: see predict_impact_authors.)
// - Drumwright-Shell (Drumwright & Shell 2010; maximum dissipation): compression as the
//   convex QP min ½PᵀWP + Pᵀv_c (the contact's kinetic energy after the impulse) s.t.
//   v_n + (WP)_n ≥ 0, |P_t| ≤ μP_n, solved by the batched conic-QP solver; restitution
//   as in AP Poisson (ε P_c,n along the normal). Agrees with the authors' to 6e-4.
// - Wang-Mason (Wang & Mason 1992; Routh's impulse-space integration): integrate along
//   P_n with dP_t/dP_n = −μ sgn(v_t) while sliding; when v_t reaches 0, stick
//   (dP_t/dP_n = −W_tn/W_tt) if |W_tn/W_tt| ≤ μ, else slide on in direction sgn(W_tn);
//   compression ends at v_n = 0 (P_n = P_c), restitution at P_n = (1 + ε) P_c (Poisson).
// - Mirtich (Mirtich 1996, Stronge's energetic restitution): the same integration; the
//   restitution phase ends when the normal impulse's work in it equals ε² times the
//   work lost in compression (work ∫ v_n dP_n, exact on the linear segments). (The
//   authors' Mirtich predictions differ from this by 1.4%: see predict_impact_authors.)
// A sliding phase in which v_n would not increase (a jam) sticks instead; the
// prediction's status says so.
//
// IRB bound (Eq. 7): the impulse in the admissible set (the Energy Ellipse with α ≤ 1,
// i.e. the contact's kinetic energy not increased, and v_n^f ≥ 0) that best explains
// the observed velocity change, min ½‖v_f − v_i − M⁻¹JᵀP‖² — a conic QP with one
// second-order cone and one nonnegative row per impact, solved in one batch.
#pragma once

#include <string>
#include <vector>

#include <Eigen/Dense>

#include "host/batch/qp_batch.h"
#include "io/impact_data.h"

namespace impulse {

struct ImpactGeometry {
  Eigen::Matrix3d Minv = Eigen::Matrix3d::Identity();
  Eigen::Matrix<double, 2, 3> J = Eigen::Matrix<double, 2, 3>::Zero();  // rows: tangent d, normal n
  Eigen::Matrix2d W = Eigen::Matrix2d::Identity();                     // J M⁻¹ Jᵀ
  Eigen::Vector2d vc = Eigen::Vector2d::Zero();                        // (v_t, v_n) before
  Eigen::Vector3d vi = Eigen::Vector3d::Zero(), vf = Eigen::Vector3d::Zero();

  static ImpactGeometry of(const Impact& m, double mass, double inertia);
  Eigen::Vector3d post_velocity(const Eigen::Vector2d& P) const { return vi + Minv * J.transpose() * P; }
  // a wrench impulse (P_t, P_n, τ): τ acts on θ directly
  Eigen::Vector3d post_velocity_wrench(const Eigen::Vector3d& w) const;
  // (v_c^f)ᵀ M_c v_c^f / v_cᵀ M_c v_c: the α of Eq. 4 an impulse gives
  double energy_ratio(const Eigen::Vector2d& P) const;
  // the Energy Ellipse of Eq. 5 for a given α: `points` impulses on its boundary
  std::vector<Eigen::Vector2d> energy_ellipse(double alpha, int points) const;
};

std::vector<ImpactGeometry> impact_geometry(const ImpactSet& set);

struct ImpactParams {
  double mu = 0.1, eps = 0.5;
};

enum ImpactStatus { kImpactOk = 0, kImpactJam = 1, kImpactFailed = 2 };

struct ImpactPrediction {
  Eigen::Vector2d P = Eigen::Vector2d::Zero();
  int status = kImpactOk;
};

// One impact, one model (index in the data's order: impact_model_name). The
// Drumwright-Shell QP is solved alone here; batches solve it with the batched solver.
ImpactPrediction predict_impact(int model, const ImpactGeometry& g, ImpactParams p);

// Every impact of `g` (params: one for all, or one per impact), on `threads` CPU
// threads, deterministic on each backend and for any thread count. On `backend`
// (the CPU's lanes, or the GPU):
// - the Drumwright-Shell compression QPs, as one batch of the conic QP solver;
// - the AP LCPs, by their complementary pieces (solvers/impact_lcp.h), a lane or a
//   GPU thread an impact; Lemke for an impact where no piece holds.
// Whittaker, Wang-Mason and Mirtich run an impact a thread on the CPU whatever the
// backend: the integrations switch between stick and slip a different number of
// times per impact, and the three together take a few ms for 1,200 impacts.
// lemke_fallbacks (AP models): how many impacts Lemke solved because no piece held.
std::vector<ImpactPrediction> predict_impacts(int model, const std::vector<ImpactGeometry>& g,
                                              const std::vector<ImpactParams>& params, int threads = 0,
                                              Backend backend = Backend::kCpu, int* lemke_fallbacks = nullptr);

// AP Newton or AP Poisson (model 2 or 1) for one impact by Lemke's pivoting on the
// 4 x 4 LCP: the reference the batched pieces are checked against (Error for
// other models).
ImpactPrediction predict_impact_lemke(int model, const ImpactGeometry& g, ImpactParams p);

// The authors' own forms of two models, as the predictions stored in the data
// (p_models) follow them; for checks against the data, not for the study. Found by
// comparing variants with the stored predictions (bench/results/impact_2026-11-24.md):
// - both add gravity over an impact window h = 1/250 s: the contact velocity the model
//   sees is J (v_i + h g), g = (0, −9.81, 0), and the impulse returned is the data's
//   M_c J (v_f − v_i), i.e. the contact impulse plus M_c J h g;
// - AP Poisson: otherwise as above (compression LCP, (1 + ε) on P_n). The authors' LCP
//   solves stopped after a fixed, small number of iterations and did not converge on
//   ~10% of the impacts (near the ellipse's vertices); there their stored predictions
//   differ from the exact LCP's, and no converged form reproduces them;
// - Mirtich: friction proportional to the slip, dP_t/dP_n = −μ v_t (not −μ sgn v_t:
//   μ is then per m/s, which is why Table 1's Mirtich μ is small), integrated by
//   explicit Euler in P_n with step 1e-4 N s, the work summed on the same steps, until
//   v_n ≥ 0 and the restitution work reaches ε² times the compression's.
// Models other than ap-poisson and mirtich: Error.
constexpr double kAuthorsGravity = 9.81, kAuthorsWindow = 1.0 / 250, kAuthorsMirtichStep = 1e-4;
ImpactPrediction predict_impact_authors(int model, const ImpactGeometry& g, ImpactParams p);

// Derivatives of a prediction in its parameters, for identification by gradients
// (identify.h). Four models are piecewise smooth in (μ, ε): a closed form (Whittaker)
// or the solution of a fixed active set (the AP LCPs, Drumwright-Shell's QP), and
// differentiable wherever the active set does not change:
// - whittaker: the closed form's derivative, branch by branch (clamped or not);
// - ap-newton, ap-poisson: implicit differentiation of the LCP on its active set;
// - drumwright-shell: the compression QP solved exactly by enumerating its active sets
//   (2 unknowns, 3 rows), its KKT system differentiated; Poisson restitution on top.
//   (This exact solution also checks the batched solver's, to its tolerance.)
// mirtich and wang-mason integrate in impulse space with stick/slip switching inside
// one impact: impact_model_has_gradient is false and a derivative is refused (Error).
// The AP derivatives take Lemke's solution and its active set, an impact at a time
// (not the batched pieces of predict_impacts; the two agree to rounding).
struct ImpactDerivative {
  ImpactPrediction pred;
  Eigen::Matrix2d dP = Eigen::Matrix2d::Zero();  // columns: dP/dμ, dP/dε
};
bool impact_model_has_gradient(int model);
ImpactDerivative predict_impact_derivative(int model, const ImpactGeometry& g, ImpactParams p);
std::vector<ImpactDerivative> predict_impacts_derivative(int model, const std::vector<ImpactGeometry>& g,
                                                         const std::vector<ImpactParams>& params, int threads = 0);

// The IRB impulses of every impact (one batch of conic QPs). `solved` counts the
// QPs that reached their tolerance.
std::vector<Eigen::Vector2d> irb_impulses(const std::vector<ImpactGeometry>& g, int threads = 0, int* solved = nullptr,
                                          Backend backend = Backend::kCpu);

}  // namespace impulse
