// Contact-invariant optimization of a hand moving a capsule (Mordatch, Popović, Todorov,
// SCA 2012; the attempt in ../shared/papers/contact-invariant-optimization-notes-2017.txt),
// repaired as issue 19 asks. This file: the problem (variables, costs, analytic gradient)
// and the optimizer with continuation; the replays and the criteria are in replay.h and
// plan_report.h.
//
// Variables (keyframes k = 0..K−1 at t_k = k T/(K−1), Catmull-Rom between them):
//   x_O,k   object centre (3)           x_P,k   palm point (3)
//   φ_k     object orientation, q_k = exp(φ_k) (3; SLERP between keyframes; φ_0 = 0)
//   p_i,k   fingertip i (3), i < N      r_j,k   contact point j (3), j < J = N + 3
//   c_j,m   contact weight on interval m (piecewise constant, bounds [0, 1])
// Contacts: j < N the fingertips, j = N the palm, j = N+1, N+2 the ground.
// Costs, sampled every dt over [0, T] (each term times dt):
//   contact invariance  Σ c_j (‖e_j^O‖² + ‖ė_j^O‖² + ‖e_j^H‖² + ‖ė_j^H‖²), e^O = π_O(r_j) − r_j
//                       (the capsule), e^H = the hand point (fingertip, palm) or π_ground(r_j),
//                       minus r_j; ė^O, ė^H the velocity of r_j relative to the material
//                       point it touches on the object (ẋ_O + ω × (r_j − x_O) − ṙ_j)
//                       and on the hand (ṗ_i − ṙ_j) or the ground (−ṙ_j), by differences
//                       between samples: an active contact neither separates nor slides
//                       (the notes' ė, the rate of e, let a ground contact slide along
//                       with the object, pushed by a friction force no replay reproduces)
//   physics             the optimal value of the inner conic QP (host/planning/physics_qp.h,
//                       moments weighted by m / I_min there):
//                       forces in friction cones about the capsule's inward normal (hand
//                       contacts) or +z (ground), one batch over the samples, envelope gradient
//   task                ‖x_O(T) − target‖², once (0 when the target is a bound, the default), plus ‖ẋ_O‖² + ‖ω‖² at T and at every
//                       sample of the first interval (not times dt): at the target, from rest
//                       to rest
//   penetration         hand points inside the capsule or below the ground; the capsule's end
//                       spheres below the ground (weight `ground`); the jumps of ω at the knots
//                       count with the physics term (the knot's sample asks its forces for the
//                       angular impulse, CioWeights::knot_forces)
//   reach               (‖p_i − x_P‖ − reach)₊²
//   smoothness          ‖ẍ_P‖² + Σ‖p̈_i‖² (a small regularizer of the hand's motion)
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "host/planning/capsule.h"
#include "host/planning/physics_qp.h"

namespace impulse {

struct CioTask {
  int fingers = 4;
  double radius = 0.03, half_length = 0.06;  // capsule, m
  double density = 600;                      // kg/m³ (mass ~0.2 kg)
  Eigen::Vector3d start{0, 0, 0.03}, target{0.15, 0, 0.08};
  double duration = 1.0, dt = 0.05;
  int keyframes = 5;
  double reach = 0.12;  // fingertip to palm, m
  double mu = 0.8;      // friction of every contact
  bool free_orientation = true;  // false: the capsule keeps its initial orientation (bounds)
  bool target_as_bound = true;   // the last object keyframe fixed at the target (false: the task term only)
  // capsule-turn: the capsule ends turned by this angle (rad) about the vertical, its last
  // orientation keyframe fixed there (a bound, with target_as_bound); 0: capsule-move, the
  // final orientation free
  double turn = 0;
  const char* name() const { return turn != 0 ? "capsule-turn" : "capsule-move"; }
  Eigen::Quaterniond target_orientation() const;
};

struct CioWeights {
  double ci = 1, physics = 1, task = 1e5, penetration = 1e4, reach = 1e4, smooth = 1e-4;
  // the capsule below the ground: a hand may not push it through the floor, and a
  // millimetre of it (free at 1e4) let plans slide the capsule along the floor with no
  // ground force, which no replay follows
  double ground = 1e8;
  double lambda = 1e-3;  // force regularization inside the physics QP
  // the formulation; false for both is the notes' (their ė, the rate of e, lets an
  // active contact slide; their forces are unconstrained)
  bool no_slip = true;   // ė relative to the touched material points (above)
  bool cones = true;     // forces in friction cones
  double weight_bounds = 0;  // > 0: c ∈ [0, 1] as this quadratic penalty (the notes), not bounds
  // > 0: a contact pushes with c γ F, γ = δ² / (δ² + ‖e^O‖² + ‖e^H‖²), δ = gate (m): force
  // only where the contact point touches both the object and its hand point (or the
  // floor). Without it (the notes, gate = 0) a contact 11 mm off the object with c = 0.43
  // carried 13% of the weight in a plan no replay followed; the contact-invariance cost
  // c ‖e‖² alone is cheap at such gaps.
  double gate = 1e-3;
  // SLERP's ω jumps at the knots. true: the sample at a knot asks its contact forces for the
  // angular impulse, L̇ += I_w Δω / dt (what a replay under the planned forces needs to turn
  // the object at all); false: the jump is charged as an unexplained moment only
  bool knot_forces = true;
};

struct CioTerms {
  double ci = 0, physics = 0, task = 0, penetration = 0, reach = 0, smooth = 0, total = 0;
};

// One sample of a plan, for output and checks.
struct CioSample {
  double t = 0;
  Eigen::Vector3d x_obj, velocity = Eigen::Vector3d::Zero(), accel, palm;
  Eigen::Quaterniond q = Eigen::Quaterniond::Identity();  // the object's orientation
  Eigen::Vector3d omega = Eigen::Vector3d::Zero();        // its angular velocity, world
  std::vector<Eigen::Vector3d> fingertips, contacts, forces;  // forces: world, from the inner QP (times c)
  std::vector<double> c;
  std::vector<double> gate;  // γ per contact (1 without the gate): forces are c γ F
  Eigen::Vector3d residual_force = Eigen::Vector3d::Zero(), residual_moment = Eigen::Vector3d::Zero();  // the inner QP's ρ
};

class CioProblem {
 public:
  explicit CioProblem(const CioTask& task);
  const CioTask& task() const { return task_; }
  int contacts() const { return task_.fingers + 3; }
  int size() const;
  double mass() const { return mass_; }
  // hand above the object, fingertips around it, contact points at their hand points
  // (ground ones under the capsule's ends), the object on a straight line to the
  // target, every c = 0.5. bounds(): c in [0, 1], the first object keyframe at the start
  // start > 0: the same with the fingertips turned about the vertical by 0.382 · start of
  // their spacing 360°/N (the planner's further starts, plan_report.h)
  Eigen::VectorXd initial_guess(int start = 0) const;
  void bounds(Eigen::VectorXd& lower, Eigen::VectorXd& upper) const;
  double evaluate(const Eigen::VectorXd& theta, const CioWeights& w, Eigen::VectorXd* grad = nullptr,
                  CioTerms* terms = nullptr) const;
  // the plan at the cost's samples (every task().dt), or every `dt` when dt > 0
  std::vector<CioSample> samples(const Eigen::VectorXd& theta, const CioWeights& w, double dt = 0) const;

  // variable offsets
  int obj(int k) const { return 3 * k; }
  int palm(int k) const { return 3 * (K_ + k); }
  int finger(int i, int k) const { return 3 * (2 * K_ + i * K_ + k); }
  int contact(int j, int k) const { return 3 * (2 * K_ + task_.fingers * K_ + j * K_ + k); }
  int weight(int j, int m) const { return 3 * K_ * (2 + task_.fingers + contacts()) + j * (K_ - 1) + m; }
  int rot(int k) const { return weight(contacts() - 1, K_ - 2) + 1 + 3 * k; }
  // the task's capsule (body axis x) at a pose
  Capsule capsule_at(const Eigen::Vector3d& centre, const Eigen::Quaterniond& q = Eigen::Quaterniond::Identity()) const;
  std::vector<Eigen::Quaterniond> orientations(const Eigen::VectorXd& theta) const;  // exp(φ_k) per keyframe

 private:
  CioTask task_;
  int K_ = 0, S_ = 0;
  double mass_ = 0, moment_weight_ = 1;
  Eigen::Matrix3d inertia_body_ = Eigen::Matrix3d::Identity();
  Eigen::Matrix3d world_inertia(const Eigen::Quaterniond& q) const;
  // the inner QP's sample at a pose: frames about the capsule's inward normal at r_j
  // (fingertips, palm) or +z (ground)
  PhysicsSample physics_sample(const Eigen::Vector3d& xo, const Eigen::Vector3d& ao, const Eigen::Quaterniond& q,
                               const Eigen::Vector3d& omega, const std::vector<Eigen::Vector3d>& r,
                               const std::vector<double>& c, const Eigen::Vector3d& impulse_rate) const;
  PhysicsQpOptions physics_options(const CioWeights& w, int threads) const;
  // evaluate()'s steps (cio.cc): the samples' values (positions, accelerations, contact
  // errors, gates, orientations), each cost's value and its gradient with respect to
  // them, then the chain rule to the variables
  struct Sample;
  std::vector<Sample> sample_values(const Eigen::VectorXd& x, const CioWeights& w) const;
  void add_contact_invariance(std::vector<Sample>& at, const CioWeights& w, bool want_grad, CioTerms& tm) const;
  void add_physics(std::vector<Sample>& at, const CioWeights& w, bool want_grad, CioTerms& tm) const;
  void add_task(std::vector<Sample>& at, const Eigen::VectorXd& x, const CioWeights& w, bool want_grad,
                CioTerms& tm) const;
  void add_knot_jumps(std::vector<Sample>& at, const CioWeights& w, bool want_grad, CioTerms& tm) const;
  void add_penetration_reach_smooth(std::vector<Sample>& at, const CioWeights& w, bool want_grad, CioTerms& tm) const;
  void chain_to_variables(const std::vector<Sample>& at, const Eigen::VectorXd& x, Eigen::VectorXd& G) const;
};

struct CioStage {
  double ci, physics;
  int iterations;
};
struct CioOptions {
  // contact invariance 10× the physics throughout: at equal weights the force
  // regularization inside the physics term outweighs an active contact's slip, and the
  // plan slides the capsule on the ground in ways no replay follows
  std::vector<CioStage> stages = {{0.1, 0.01, 150}, {1, 0.1, 150}, {10, 1, 150}, {100, 10, 200}, {1e3, 100, 300},
                                  {1e4, 1e3, 300}, {1e5, 1e4, 400}};
  CioWeights weights;  // ci and physics are overridden by the stages
  bool finite_differences = false;  // forward differences (step 1e-6) instead of the analytic gradient
  Eigen::VectorXd start;             // where to start (empty: the problem's initial guess)
  std::function<void(int stage, int iteration, const CioTerms&)> progress;
  // after the stages, the last stage again (its iterations each time) while an
  // active contact is more than kPlanContactGap from the object or its hand point,
  // at most this many times
  int polish_rounds = 2;
};
// how far an active contact (contact_gaps below) may lie from the object's surface and
// from its fingertip, palm or the ground in a valid plan (check_plan), m
constexpr double kPlanContactGap = 0.002;
// a contact carrying more than this share of the object's weight is active whatever its
// weight c (with c <= 0.5 it still pushes with c γ F: a force from a contact the criteria
// would otherwise not ask to touch anything)
constexpr double kPlanActiveForce = 0.01;
// the plan's active contacts (c > 0.5, or a force over kPlanActiveForce m g) at its samples:
// how many, and the largest
// distance of one from the object's surface and from its hand point (fingertip,
// palm, ground)
struct CioGaps {
  int active = 0;
  double object = 0, hand = 0;
};
CioGaps contact_gaps(const CioProblem& problem, const Eigen::VectorXd& theta, const CioWeights& w);
CioGaps contact_gaps(const CioProblem& problem, const std::vector<CioSample>& samples);  // of samples(theta, w)
// The notes' method: their formulation (no friction cones, sliding contacts, c's
// bounds as a penalty), forward finite differences, one weight setting (the final
// stage's, no continuation), `iterations` quasi-Newton iterations.
CioOptions notes_options(int iterations);
struct CioResult {
  Eigen::VectorXd theta;
  std::vector<CioTerms> stage_terms;  // after each stage (and each polish round)
  int polish_rounds = 0;              // of CioOptions::polish_rounds, how many ran
  double seconds = 0;
};
CioResult optimize_cio(const CioProblem& problem, const CioOptions& opt);

}  // namespace impulse
