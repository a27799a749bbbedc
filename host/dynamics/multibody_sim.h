// Simulation of multibody systems (host/dynamics/multibody.h): the Anitescu
// convex time step CCN simulates with (Anitescu 2006; Bianchini, Halm, Posa,
// CoRL 2023), batched across states, rollouts, and synthetic toss data for the
// cube, asymmetric and elbow systems with the CCN paper's two model-gap
// scenarios (a vortex force field, a wrong gravity).
//
// ---- The step ----------------------------------------------------------------
// From x = [q; v] (layout of multibody.h) with parameters (π stacked as
// stacked_inertial, vertices per link, μ, gravity g) and an optional external
// generalized acceleration a_ext (nv):
//   v*  = v + dt (M⁻¹(−h(q, v)) + a_ext)                      (free velocity)
//   J̃   = per contact i the rows [J_n,i; μ J_t,i] (3 x nv, μ folded into J_t)
//   b̃_i = [φ_i/dt, 0, 0]
//   λ   = argmin ½ λᵀ J̃ M⁻¹ J̃ᵀ λ + λᵀ (J̃ v* + b̃)   s.t. λ_i ∈ K (3-D SOC)   (D)
//   v'  = v* + M⁻¹ J̃ᵀ λ,   q' = integrate_configuration(q, v', dt)
// λ_i = [λ_n, λ_t/μ] (N s): the physical friction impulse is μ λ̃_t, and λ ∈ K
// says ‖λ_t‖ ≤ μ λ_n. In the batch solver's convention (Ax + s = b, s ∈ K)
// the constraint is A = −I, b = 0 (n_soc = k cones of 3 rows).
//
// (D) is the Lagrange dual of the primal
//   min_v' ½ ‖v' − v*‖²_M   s.t.  J_n,i v' + φ_i/dt ≥ μ ‖J_t,i v'‖  ∀i     (P)
// i.e. J̃ v' + b̃ ∈ K: with multiplier λ ∈ K* = K (the SOC is self-dual) the
// Lagrangian ½‖v'−v*‖²_M − λᵀ(J̃ v' + b̃) is minimized at M(v' − v*) = J̃ᵀ λ, and
// substituting gives −(D)'s objective. At the optimum w = J̃ v' + b̃ (= the
// gradient of (D)) satisfies λ ∈ K, w ∈ K, λᵀw = 0.
//
// Why (Anitescu's relaxation): Coulomb friction with the exact normal
// complementarity (0 ≤ λ_n ⊥ J_n v' + φ/dt ≥ 0, maximal dissipation
// tangentially) is a nonconvex complementarity problem. Anitescu relaxes the
// normal constraint to the cone J_n v' + φ/dt ≥ μ‖J_t v'‖, which makes the step
// the convex QP (P) — unique v', always solvable, and its friction impulse
// the maximally dissipative one. The price: a sliding contact separates with
// normal velocity μ‖J_t v'‖ ("hovering" about dt μ ‖v_t‖ above the ground while
// it slides); sticking and resting contacts are exact.
//
// Free flight is exact: λ = 0 is optimal for (D) iff c = J̃ v* + b̃ ∈ K* = K
// (the gradient at 0 lies in the dual cone). A state whose every contact has
// c_i ∈ K is stepped with λ = 0 and no QP (v' = v* bit for bit); only the
// other states go to the batched solver.
//
// The solver (host/batch, ADMM) returns λ within its tolerances; λ is then
// projected onto K (so the cone constraints hold exactly) before v' is formed.
// A problem the solver leaves unsolved (max iterations, numerical error: ADMM
// is slow on the degenerate, many-contact resting QPs) is re-solved in the
// other form (options.fallback; the strongly convex velocity form); if that
// fails too, the first form's projected last iterate is used when finite,
// else λ = 0. MultibodyStepResult counts fallbacks, failures and
// kSolvedInaccurate answers (residuals within 10x the tolerances).
// Regularization: none by default. P = J̃ M⁻¹ J̃ᵀ is only PSD (3k ≥ nv rows: a
// cube flat on the ground has 12 impulse unknowns and 6 velocities); ADMM's σ
// handles that, and the tests pass without a shift. options.regularization = r
// adds r I to the QP's P (changes the answer by O(r λ)); keep it 0 (1e-6 ..
// 1e-3 were tried on the impulse form: no fewer iterations or failures).
//
// Cost (256 elbow states, 60 generator steps, 1 thread, lanes off / on): the
// impulse form 1,700 / 2,300 state-steps/s (mean ~1,000 ADMM iterations, 1 in
// 150 QPs needs the fallback), the velocity form 7,200 / 10,400 (~300
// iterations, no fallbacks). The default is therefore the velocity form (the
// same step: both pass the KKT test), with the impulse form as its fallback.
//
// Determinism: the step is a pure function of (system, parameters, options,
// states). With options.batch.lanes = false (the default here) each state's QP
// is solved on its own by qp_admm_solve, so a state's step does not depend on
// which other states share its batch, nor on the thread count. (lanes = true
// is faster but a lane's stopping iteration depends on its group.)
//
// ---- Synthetic tosses -----------------------------------------------------------
// generate_system_tosses: seeded random initial states, rolled out with the
// true system (nominal π, vertices, μ), written as a SystemTossSet
// (io/system_tosses.h) with joint angles wrapped to (−π, π] (the data
// convention; the simulation itself runs on the unwrapped angle). Initial
// state ranges, chosen from the 271 real elbow tosses' first rows
// (/work/shared/data/articulated_elbow; percentiles 5–95 in brackets):
//   orientation    uniform on SO(3) (Shoemake), quaternion with w ≥ 0
//   base x, y      uniform ±0.10 m                      [±0.08]
//   height         the lowest vertex uniform 0.05–0.20 m above the ground
//                  (real base heights 0.19–0.29 m, the lowest vertex of an
//                  elbow lies up to 0.09 m below its base)
//   v_x, v_y       uniform ±0.6 m/s                     [vx −0.02..0.59, vy ±0.85]
//   v_z            uniform −1.0 .. +0.3 m/s             [−1.02 .. −0.07]
//   ω (body)       uniform ±3 rad/s per axis            [about ±3]
//   θ              uniform (−π, π]                      [−2.1 .. 2.5, all of (−π, π] occurs]
//   θ̇              uniform ±4 rad/s                     [±4.1]
// Landing: v_z is redrawn until the lowest vertex, as a point falling with
// the simulation's gravity from its clearance, reaches the ground within
// options.landing_fraction of the toss (default 0.5; needs v_z < 0 when
// g_sim = 0). Random numbers: std::mt19937_64 with uniforms formed as
// (r >> 11) 2⁻⁵³ (portable, unlike std::uniform_real_distribution).
//
// Model gaps (the CCN paper's synthetic experiments), options of the generator:
//  (a) vortex: every link's centre of mass at p feels the acceleration
//        a(p) = −k_r (p_x, p_y, 0) + k_t (−p_y, p_x, 0)
//      (a pull toward the vertical line x = y = 0 and a counter-clockwise swirl
//      about it, seen from above), applied as the generalized force
//      τ = Σ_l J_com,lᵀ m_l a(p_com,l) (J_com = J_o − [R c]× J_ω), i.e.
//      a_ext = M⁻¹ τ. Defaults k_r = 10 s⁻², k_t = 20 s⁻²: at r = 0.1 m a pull
//      of 1 m/s² and a swirl of 2 m/s² (= 0.7 g μ of the elbow), which moves a
//      toss by several cm against the plain simulation (the tests check ≥ 2 cm
//      median final-position change on 16 elbow tosses).
//  (b) gravity: the simulation uses g_sim = f · 9.81, f ∈ [0, 2] (a model that
//      keeps 9.81 then has the gap).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "host/batch/qp_batch.h"
#include "host/dynamics/multibody.h"
#include "io/system_tosses.h"
#include "solvers/qp_admm.h"
#include "solvers/status.h"

namespace impulse {

// What the step simulates: inertia, geometry, friction and gravity.
struct MultibodyParams {
  Eigen::VectorXd pi;                                  // stacked_inertial layout, 10 per link
  std::vector<std::vector<Eigen::Vector3d>> vertices;  // per link, link frame, m
  double mu = 0.3;
  double gravity = 9.81;  // m/s², along −z
  // the system's own numbers (stacked_inertial, its vertices, μ and gravity)
  static MultibodyParams nominal(const MultibodySystem& sys);
  // throws Error naming the item when sizes or values do not fit sys.
  void validate(const MultibodySystem& sys) const;
};

// QP settings of the step: the library's defaults with tolerances 1e-8 (eps_abs
// and eps_rel) and a budget of 20,000 iterations. At 1e-8 about 1 in 300 of the
// synthetic tosses' QPs stops as kSolvedInaccurate (residuals within 10x); at
// 1e-9 one in 30 does, at 1e-7 none, for half the iterations.
QpSettings<double> multibody_qp_settings();

// Which of the two equivalent QPs goes to the solver (the same λ and v' up to
// solver tolerance; see the header comment):
//  kImpulses:  (D) over λ (n = 3k, P = J̃ M⁻¹ J̃ᵀ, A = −I, b = 0) — the form of
//              the CCN loss (host/learning/ccn.cc);
//  kVelocities: (P) over v' (n = nv, P = M, q = −M v*, A = −J̃, b = b̃); λ is
//              the solver's dual y of the cone rows.
enum class MultibodyQpForm { kImpulses, kVelocities };

struct MultibodyStepOptions {
  double dt = 0.0068;           // s (the CCN data's)
  MultibodyQpForm form = MultibodyQpForm::kVelocities;
  // re-solve the problems the first form left unsolved (max iterations,
  // numerical error; not kSolvedInaccurate) in the other form
  bool fallback = true;
  double regularization = 0.0;  // r: P + r I (see the header comment)
  QpSettings<double> qp = multibody_qp_settings();
  BatchOptions batch = [] {
    BatchOptions b;
    b.lanes = false;
    return b;
  }();
  // throws Error naming the bad field.
  void validate() const;
};

// What one batched step computed (sized by multibody_step).
struct MultibodyStepResult {
  Eigen::MatrixXd lambda;            // 3k x B: per contact [λ_n, λ_t,x/μ, λ_t,y/μ] (N s), in K
  Eigen::MatrixXd v_free;            // nv x B: v*
  std::vector<SolveStatus> status;   // per state; kSolved also when no QP was needed
  std::vector<char> used_qp;         // per state: 1 when it went to the solver
  int qp_count = 0;                  // states that went to the solver
  int not_solved = 0;                // of those, neither kSolved nor kSolvedInaccurate
  int inaccurate = 0;                // of those, kSolvedInaccurate (within 10x the tolerances)
  int fallbacks = 0;                 // problems re-solved in the other form
  long long iterations = 0;          // ADMM iterations over the batch
};

// Steps every column of X (width x B, one state per column) by one dt into
// X_next (resized). a_ext, when given, is nv x B (one external generalized
// acceleration per state). Throws Error on wrong sizes (naming X, a_ext or the
// parameter) or non-finite states (naming the column).
void multibody_step(const MultibodySystem& sys, const MultibodyParams& params,
                    const MultibodyStepOptions& options, const Eigen::MatrixXd& X,
                    const Eigen::MatrixXd* a_ext, Eigen::MatrixXd& X_next,
                    MultibodyStepResult* result = nullptr);

// An external generalized acceleration as a function of the state: fills
// a (nv, zeroed before the call) for state `index` of the batch at step
// `step`. Called concurrently from several threads: must be thread-safe.
using ExternalAcceleration =
    std::function<void(int index, int step, const Eigen::VectorXd& x, Eigen::Ref<Eigen::VectorXd> a)>;

struct MultibodyRollout {
  using Trajectory = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  std::vector<Trajectory> trajectories;  // per initial state: n_states x width, row 0 = x0
  int steps = 0;                         // n_states − 1
  long long qp_states = 0;               // state-steps that needed the solver
  long long not_solved = 0;              // of those, not solved (nor inaccurate)
  long long inaccurate = 0;              // of those, kSolvedInaccurate
  long long fallbacks = 0;               // re-solved in the other form
  long long iterations = 0;              // ADMM iterations in all
  // per initial state: the first row whose simulated state was not valid
  // (rollout_state_is_valid: a model whose step blew up, e.g. a learned link of
  // tiny inertia), −1 if none. From that row on the trajectory holds its last
  // valid state, and the rest of the batch goes on.
  std::vector<int> diverged_at;
};

// A simulated state a rollout goes on from: finite, a unit quaternion (a
// velocity near overflow leaves a finite state whose normalized quaternion is
// 0) and every speed below kDivergedSpeed (m/s, rad/s: far beyond any toss; a
// step that reaches it has blown up).
constexpr double kDivergedSpeed = 1e3;
bool rollout_state_is_valid(const MultibodySystem& sys, const Eigen::Ref<const Eigen::VectorXd>& x);

// Simulates each column of X0 (width x B) for n_states − 1 steps (n_states ≥ 1),
// all states batched per step.
MultibodyRollout multibody_rollout(const MultibodySystem& sys, const MultibodyParams& params,
                                   const MultibodyStepOptions& options, const Eigen::MatrixXd& X0,
                                   int n_states, const ExternalAcceleration& external = nullptr);

// ---- model-gap scenarios -------------------------------------------------------

// τ = Σ_l J_com,lᵀ m_l a(p_com,l) of the vortex field above (nv), masses and
// centres of mass from π, at the kinematics k.
void vortex_generalized_force(const Kinematics& k, const Eigen::VectorXd& pi, double k_r, double k_t,
                              Eigen::VectorXd& tau);
// a_ext = M⁻¹ τ at state x (width), for MultibodyRollout's callback.
ExternalAcceleration vortex_acceleration(const MultibodySystem& sys, const Eigen::VectorXd& pi, double k_r,
                                         double k_t);

enum class ModelGap { kNone, kVortex, kGravity };
ModelGap parse_model_gap(const std::string& s);  // "none" | "vortex" | "gravity"
const char* to_string(ModelGap g);

struct SyntheticSystemOptions {
  std::string system = "elbow";  // cube | asymmetric | elbow (or the name of `described`)
  MultibodySystem described;     // a system from a file (host/systems/system_file.h): used when it has links
  MultibodySystem resolved() const;  // `described`, or the built-in named `system`
  int tosses = 64;
  int states = 121;              // rows per toss (the real files': 121 rows = 120 steps)
  double dt = 0.0068;
  std::uint64_t seed = 1;
  ModelGap gap = ModelGap::kNone;
  double vortex_k_r = 10.0;      // s⁻², radial pull
  double vortex_k_t = 20.0;      // s⁻², swirl (counter-clockwise from above)
  double gravity_factor = 1.0;   // f ∈ [0, 2] (gap kGravity only; kNone/kVortex use 9.81)
  double landing_fraction = 0.5; // the lowest vertex lands within this share of the toss
  // initial-state ranges (see the header comment)
  double xy_range = 0.10, clearance_min = 0.05, clearance_max = 0.20;
  double vxy_range = 0.6, vz_min = -1.0, vz_max = 0.3;
  double omega_range = 3.0, joint_rate_range = 4.0;
  MultibodyStepOptions step;     // step.dt is replaced by dt
  void validate() const;         // throws Error naming the field
};

struct SyntheticSystemReport {
  long long qp_states = 0, not_solved = 0, inaccurate = 0, fallbacks = 0, iterations = 0;
  double seconds = 0.0;
};

// The initial states (width x tosses) the generator draws for these options.
Eigen::MatrixXd synthetic_initial_states(const SyntheticSystemOptions& options);
// Generates the tosses (format "impulse-multibody", names "0", "1", ...).
SystemTossSet generate_system_tosses(const SyntheticSystemOptions& options,
                                     SyntheticSystemReport* report = nullptr);

}  // namespace impulse
