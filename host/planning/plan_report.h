// `impulse plan`: a contact-invariant plan of the capsule move (host/planning/cio.h),
// proved by both replays (replay.h), checked against issue 19's criteria and written
// to a folder a person can read:
//
//   plan.csv      per sample: object, palm, fingertips, contact points, c_j, forces
//                 (world, c_j F_j from the inner QPs)
//   replay.csv    per sample: the planned object and both replays' objects
//   stages.csv    the cost terms after each continuation stage
//   summary.json  the task, the method, the criteria with their figures and verdicts,
//                 the time
//   plan_path.png, plan_weights.png, plan_stages.png  (host/planning/plan_figures.py)
//
// The last line of the log says how many files it wrote ("plan: wrote N files to OUT").
//
// Criteria (each reported with its figure):
//   final object within 1 cm of the target in both replays (and in the plan); capsule-turn:
//   both ends of its axis within 1 cm of the target's too;
//   every active contact (c > 0.5, or carrying over kPlanActiveForce of the weight) within
//   2 mm of the object's surface and of its hand point (the ground's plane for a ground contact);
//   every force in its friction cone (to 1e-6 m g);
//   the largest deviation of each replay from the plan (reported, no threshold).
// A second writer of the same folder is refused; files are written atomically.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "host/planning/cio.h"
#include "host/planning/replay.h"

namespace impulse {

// how far the capsule may end from the target (its centre; capsule-turn: each end of its
// axis) in the plan and in both replays, m
constexpr double kPlanFinalError = 0.01;

struct PlanCheck {
  double plan_final_error = 0;       // m
  // capsule-turn: the final axis's angle from the target's (rad; the axis as a line, a capsule
  // looking the same turned end for end or rolled about it), and the criterion: both ends of
  // the axis segment within 1 cm of the target's (m; the capsule-move criterion for the whole
  // capsule), in the plan and both replays
  double plan_axis_error = 0, forces_axis_error = 0, hand_axis_error = 0;
  double plan_ends_error = 0, forces_ends_error = 0, hand_ends_error = 0;
  ReplayResult forces, hand;         // replay 1, replay 2 (replayed: at the cost's samples)
  ReplayResult hand_forces_only;     // replay 1, strict (replay.h): reported, not a criterion
  double worst_object_gap = 0;       // m, over active contacts and samples
  double worst_hand_gap = 0;         // m
  double worst_cone_violation = 0;   // N, max(‖f_t‖ − μ f_n, −f_n) over forces
  double worst_residual_force = 0;   // N, the inner QPs' unexplained force ‖ρ_F‖ (reported)
  double worst_residual_moment = 0;  // N m, ‖ρ_M‖
  double worst_dense_residual_force = 0;  // N, ‖ρ_F‖ at the replay's steps between the samples
  int active = 0;                    // active (sample, contact) pairs (cio.h's contact_gaps)
  bool final_ok = false, contacts_ok = false, cones_ok = false, success = false;
  // how far from valid: the largest of each criterion's figure over its bound (<= 1: valid)
  double worst_ratio() const;
};

// the criteria on a plan (the optimized variables theta under weights w): contacts and
// cones on the cost's samples; replay 1 under the inner QPs' forces at every replay step
// (samples every hand.dt), replay 2 along the hand's samples every hand.dt
PlanCheck check_plan(const CioProblem& problem, const Eigen::VectorXd& theta, const CioWeights& w,
                     const HandReplayOptions& hand);

struct PlanRunOptions {
  CioTask task;
  std::string method = "cio";  // cio (the repaired method) | notes (notes_options)
  int notes_iterations = 100;
  // starts (CioProblem::initial_guess(0), (1), ...) tried in turn until a plan is valid by
  // the criteria; the plan kept is the first valid one, else the one nearest to valid
  // (method cio; the notes' method runs once)
  int starts = 8;
  // for studies of sensitivity: every start variable x_i scaled by 1 + perturb·(−1)^i and the
  // cost weights by 1 + perturb (0: none)
  double perturb = 0;
  HandReplayOptions hand;
  std::string out, figure_script, python = "python3";
  bool figures = true;
};

struct PlanRun {
  CioResult result;
  std::vector<CioSample> plan;
  PlanCheck check;
  int start = 0, starts_tried = 0;  // the start of the plan kept, and how many were optimized
  double seconds = 0;               // optimizing, all starts together
  std::vector<std::string> files;  // every file written into the folder (CSVs, summary.json, figures)
  std::string error;  // run_plan_targets: why this target's plan stopped with an error (then not valid)
};

PlanRun run_plan(const PlanRunOptions& options, std::ostream& log);

// The targets capsule-move supports (run_plan refuses others, naming the bound): the
// capsule's final centre at a horizontal distance of kTargetDistance from its start, in any
// direction, at a height of kTargetHeight (m). Tested over a spread of this range.
// capsule-turn (task.turn != 0): the target above the start, at a height of kTargetHeight.
constexpr double kTargetDistance[2] = {0.05, 0.25}, kTargetHeight[2] = {0.04, 0.12};
void check_target(const CioTask& task, const std::string& what);

// A targets file: one target x,y,z (m) per row, an optional header row "x,y,z", '#' comments.
// Errors name the file and the row; `rows` (optional) gets each target's row in the file.
std::vector<Eigen::Vector3d> read_targets(const std::string& path, std::vector<int>* rows = nullptr);

// `impulse plan --targets FILE`: a plan for every target (options.task.target replaced), on
// `threads` threads (0: all cores), the n-th in OUT/target_<n>/ as run_plan writes it (its log
// in log.txt there), and OUT/targets.csv: per target its validity, the criteria's figures,
// the start kept and the seconds. One line of the log per finished plan; the results are the
// same on any number of threads. Every option and target is checked before anything is
// written; `names` (optional, one per target, e.g. "FILE: row 3") name them in errors. A
// plan that stops with an error (the optimizer or a replay throwing) does not stop the
// batch: its row is not valid and its error is in targets.csv (column error), in the log and
// in its folder's log.txt.
std::vector<PlanRun> run_plan_targets(const PlanRunOptions& options, const std::vector<Eigen::Vector3d>& targets, int threads,
                                      std::ostream& log, const std::vector<std::string>& names = {});

}  // namespace impulse
