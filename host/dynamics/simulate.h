// Rollouts with a contact model: the Stewart-Trinkle velocity-level LCP time
// step the ContactNets paper evaluates with (Sec. 5.1, App. A.3; reference [22]),
// rollouts of tosses from their first state, and the paper's rollout metrics
// (eq. 18-19).
//
// One step from x = [q; ν] with contacts (φ, J_n, J_t) = model.evaluate(x):
//   ν_free = ν + M⁻¹ F_s dt             (F_s: gravity and −ω × Iω, smooth_impulse)
//   D_i    = rows d_jᵀ J_t,i, d_j = (cos θ_j, sin θ_j), θ_j = 2πj / nd   (nd = 16)
//   ν'     = ν_free + M⁻¹ (J_nᵀ λ_n + J_Dᵀ β)
//   0 ≤ λ_n ⊥ w_n = φ/dt + J_n ν'              ≥ 0
//   0 ≤ β_i ⊥ w_β = D_i ν' + γ_i e              ≥ 0
//   0 ≤ γ   ⊥ w_γ = μ λ_n − Σ_j β_ij            ≥ 0     (μ = 1: friction lives in J_t)
// i.e. the LCP in z = [λ_n (k); β (nd k, contact-major); γ (k)]
//   M = [J_n M⁻¹ J_nᵀ   J_n M⁻¹ J_Dᵀ   0 ]       q = [φ/dt + J_n ν_free]
//       [J_D M⁻¹ J_nᵀ   J_D M⁻¹ J_Dᵀ   E ]           [J_D ν_free        ]
//       [I              −Eᵀ            0 ] + r I     [0                 ]
// (r = regularization, 0.001 as in the reference implementation), solved by
// Lemke's method; then x' = integrate(x, ν', dt). A moving kinematic obstacle
// (ContactFrame::vn, vt, zero for a static environment) adds its share of the gap
// and slip rates: q_n += v_n, q_β += D_i v_t (w_n = φ/dt + J_n ν' + v_n, ...).
//
// Separated contacts (options.drop_separated, on by default). A contact i enters
// the LCP only if free flight would close it within the step,
// φ_i + dt J_n,i ν_free ≤ 0. After the solve every left-out contact is checked
// against the answer: if φ_i/dt + J_n,i ν' < 0 (the other contacts' impulses
// drive it into the table) it is added and the LCP is solved again (at most k
// rounds; a contact, once in, stays in). The answer is then an exact solution of
// the full LCP with λ_n,i = β_i = 0 for every left-out contact, except that the
// r·γ_i term is not applied to left-out contacts. That exception is deliberate:
// with r on every diagonal entry, a separated contact whose point slides
// tangentially has no solution with β_i = 0 (w_γ = r γ_i > 0 forces γ_i = 0,
// then w_β < 0), and the regularized LCP hands it a phantom friction impulse
// β_i ≈ r |J_t,i ν| per step — in free flight, for the cube at 1 m/s, 0.10 m/s² of
// deceleration (and 1.7 rad/s² of spin decay at 6 rad/s). Leaving the contact out removes the artifact (free flight is then
// exact) and makes the LCP smaller. drop_separated = false keeps every contact in
// the LCP, as the reference implementation did.
//
// Failed solves. If Lemke does not solve an LCP (secondary ray, pivot cap,
// numerical error), the solve is retried with the regularization multiplied by
// 10, up to `regularization_retries` times. If every attempt fails, the step uses
// the attempt's iterate with the smallest residual (Lemke's last iterate is a
// complementary solution of the problem relaxed by its artificial variable, so it
// is the nearest thing to an answer it has), or λ = 0 (free flight) when no attempt
// gave a finite iterate; StepInfo::status reports the failure either way.
//
// Allocation and determinism. A Simulator sizes its buffers on its first step
// with a model of k contacts (or at reserve(k)); later steps with at most that
// many contacts allocate nothing (provided the model's evaluate does not). A step
// is a pure function of (model, x, body, options): the buffers hold no state that
// carries over, so results are bit-identical whichever Simulator (or thread) runs
// them. The batched helpers call model.evaluate concurrently from several threads,
// so a model's evaluate must be safe to call concurrently (PolytopeModel is).
#pragma once

#include <string>
#include <vector>

#include <Eigen/Dense>

#include "host/dynamics/contact_model.h"
#include "host/dynamics/rigid_body.h"
#include "io/toss_data.h"
#include "solvers/lemke.h"
#include "solvers/status.h"

namespace impulse {

struct SimOptions {
  double dt = 1.0 / 148.0;          // s
  int friction_directions = 16;     // nd, evenly spaced directions in each contact's J_t plane
  double regularization = 1e-3;     // r, added to every diagonal entry of the LCP matrix
  double restitution = 0.0;         // not modelled; must be 0
  bool drop_separated = true;       // leave separated contacts out of the LCP (see above)
  int regularization_retries = 2;   // re-solves with 10x, 100x r after a failed Lemke solve
  LemkeSettings lemke;

  // nullptr when usable, else a message (thread-local buffer).
  const char* validate() const;
};

// Outcome of one step.
struct StepInfo {
  // kSolved (also when no LCP was needed); Lemke's failure statuses (see above);
  // kInvalidInput when the state or the contact frame has a NaN or Inf entry,
  // kNumericalError when the new velocity is not finite.
  SolveStatus status = SolveStatus::kNotRun;
  int contacts = 0;        // k, the model's contact count
  int active = 0;          // contacts in the final LCP
  int lcp_size = 0;        // (nd + 2) * active
  int solves = 0;          // Lemke calls (verification rounds and retries included)
  int pivots = 0;          // Lemke pivots over all calls
  double residual = 0.0;   // Lemke residual of the LCP whose answer was used
  double regularization = 0.0;  // r of that LCP
};

// Row-major view of the last LCP a Simulator solved (the one whose answer the
// step used); valid until the next step.
struct LcpView {
  int n = 0;
  const double* M = nullptr;  // n x n, row-major, regularization included
  const double* q = nullptr;  // n
  const double* z = nullptr;  // n, [λ_n; β; γ] of the active contacts
  const double* w = nullptr;  // n, M z + q
};

// One Stewart-Trinkle stepper; owns the scratch. Not thread-safe: one per thread.
class Simulator {
 public:
  // throws Error if options fail validate().
  explicit Simulator(const BodyParams& body, const SimOptions& options = {});

  const BodyParams& body() const { return body_; }
  const SimOptions& options() const { return options_; }

  // sizes the scratch for models of up to k contacts.
  void reserve(int k);

  // one step from x. Throws Error when the model's frame has inconsistent sizes.
  State step(const ContactModel& model, const State& x, StepInfo* info = nullptr);
  // an impulse applied in every following step's free flight besides gravity, in ν
  // coordinates ([linear world; angular body], N s): external forces times dt (a
  // planner's replay pushes its planned hand forces this way). Zero by default.
  void set_external_impulse(const Vec6& impulse) { external_ = impulse; }

  // ---- what the last step computed (full length k; zero for left-out contacts)
  const Eigen::VectorXd& normal_impulses() const { return lambda_n_; }   // λ_n (k), N s
  const Eigen::VectorXd& tangent_impulses() const { return lambda_t_; }  // λ_t (2k): Σ_j β_ij d_j
  const Vec6& free_velocity() const { return nu_free_; }
  const Vec6& next_velocity() const { return nu_next_; }
  const ContactFrame& frame() const { return frame_; }  // contacts at x
  const std::vector<int>& active_contacts() const { return active_; }
  LcpView last_lcp() const;

 private:
  void build_lcp(double reg);
  SolveStatus solve_lcp(StepInfo& info);
  void apply_impulses();

  BodyParams body_;
  SimOptions options_;
  Mat6 mass_inv_;
  std::vector<double> dir_cos_, dir_sin_;
  int capacity_ = -1;  // contacts the scratch is sized for

  ContactFrame frame_;
  Vec6 nu_free_ = Vec6::Zero(), nu_next_ = Vec6::Zero();
  Vec6 external_ = Vec6::Zero();
  std::vector<int> active_;
  std::vector<char> in_lcp_;
  Eigen::VectorXd lambda_n_, lambda_t_;
  int n_ = 0;                   // LCP size
  std::vector<double> J_;       // rows (1 + nd) * active, 6 columns: [J_n; J_D]
  std::vector<double> Y_;       // J M⁻¹, same shape
  std::vector<double> M_, q_, z_, w_, z_best_;
  LemkeWorkspace lemke_ws_;
};

// ---- rollouts -------------------------------------------------------------------

State to_state(const StateRow& r);
StateRow to_row(const State& x);

// Body parameters and step options of a data set (inertia diagonal, principal).
BodyParams body_from_meta(const TossMeta& meta);
SimOptions sim_options_from_meta(const TossMeta& meta);  // defaults, meta's dt

struct RolloutResult {
  std::vector<StateRow> states;  // n_states rows; states[0] is the initial state
  int failed_steps = 0;          // steps whose LCP was not solved
  int max_active = 0;            // most contacts in one step's LCP
  long long pivots = 0;          // Lemke pivots over the rollout
};

// Simulates n_states − 1 steps from x0 (n_states ≥ 1) into out (its storage reused).
void rollout(Simulator& sim, const ContactModel& model, const StateRow& x0, int n_states,
             RolloutResult& out);
RolloutResult rollout(Simulator& sim, const ContactModel& model, const StateRow& x0, int n_states);

// Rolls out tosses[i] for each i in `indices` (all tosses when empty) from its
// first state for as many states as it has, on `threads` threads (0 = all cores),
// one Simulator per thread. Result j belongs to indices[j]. Deterministic and
// independent of the thread count. Throws Error for an index out of range or an
// empty toss.
std::vector<RolloutResult> rollout_tosses(const ContactModel& model, const BodyParams& body,
                                          const SimOptions& options,
                                          const std::vector<Toss>& tosses,
                                          const std::vector<int>& indices = {}, int threads = 0);

// ---- metrics (paper eq. 18-19) ---------------------------------------------------

// Penetration of the true cube (vertices (±h, ±h, ±h)) at pose x into the true
// table z = 0: max(0, −min_i z-coordinate of the world vertices), m.
double cube_penetration(const StateRow& x, double half_width);

// Means over the aligned states j = 0 .. N−1 (the initial one included, as in
// eq. 18) of ‖p̂_j − p*_j‖ (m), angle(R*_j, R̂_j) (degrees) and the penetration of
// the predicted pose (m).
struct TrajectoryErrors {
  double position_m = 0.0;
  double rotation_deg = 0.0;
  double penetration_m = 0.0;
  int states = 0;
};
// Throws Error unless predicted and truth have the same, nonzero length.
TrajectoryErrors trajectory_errors(const std::vector<StateRow>& predicted,
                                   const std::vector<StateRow>& truth, double half_width);

// Means over tosses of the per-toss means; "pct_width" figures are relative to the
// full block width 2h (100 · e / 2h).
struct RolloutMetrics {
  double position_error_m = 0.0;
  double position_error_pct_width = 0.0;
  double rotation_error_deg = 0.0;
  double penetration_m = 0.0;
  double penetration_pct_width = 0.0;
  int n_tosses = 0;
};
RolloutMetrics aggregate_metrics(const std::vector<TrajectoryErrors>& per_toss, double half_width);

// Rolls out the tosses (as rollout_tosses) and scores them against their data
// with the true cube of half-width meta.half_width. per_toss / rollouts, when
// given, receive the per-toss errors and the predicted trajectories.
RolloutMetrics evaluate_rollouts(const ContactModel& model, const TossSet& set,
                                 const std::vector<int>& indices, const SimOptions& options,
                                 int threads = 0, std::vector<TrajectoryErrors>* per_toss = nullptr,
                                 std::vector<RolloutResult>* rollouts = nullptr);

// Writes one row per aligned state, atomically (temporary file + rename):
//   t, px, py, pz, qw, qx, qy, qz, px_true, py_true, pz_true, qw_true, qx_true,
//   qy_true, qz_true, position_error_m, angle_error_deg, penetration_m
// (t = j dt). Throws Error on a length mismatch or an I/O failure.
void write_rollout_csv(const std::string& path, const std::vector<StateRow>& predicted,
                       const std::vector<StateRow>& truth, double half_width, double dt);

}  // namespace impulse
