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
//   final object within 1 cm of the target in both replays (and in the plan);
//   every active contact (c > 0.5) within 2 mm of the object's surface and of its hand
//   point (the ground's plane for a ground contact);
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

struct PlanCheck {
  double plan_final_error = 0;       // m
  ReplayResult forces, hand;         // replay 1, replay 2 (replayed: at the cost's samples)
  ReplayResult hand_forces_only;     // replay 1, strict (replay.h): reported, not a criterion
  double worst_object_gap = 0;       // m, over active contacts and samples
  double worst_hand_gap = 0;         // m
  double worst_cone_violation = 0;   // N, max(‖f_t‖ − μ f_n, −f_n) over forces
  double worst_residual_force = 0;   // N, the inner QPs' unexplained force ‖ρ_F‖ (reported)
  double worst_residual_moment = 0;  // N m, ‖ρ_M‖
  double worst_dense_residual_force = 0;  // N, ‖ρ_F‖ at the replay's steps between the samples
  int active = 0;                    // (sample, contact) pairs with c > 0.5
  bool final_ok = false, contacts_ok = false, cones_ok = false, success = false;
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
  HandReplayOptions hand;
  std::string out, figure_script, python = "python3";
  bool figures = true;
};

struct PlanRun {
  CioResult result;
  std::vector<CioSample> plan;
  PlanCheck check;
  std::vector<std::string> files;  // every file written into the folder (CSVs, summary.json, figures)
};

PlanRun run_plan(const PlanRunOptions& options, std::ostream& log);

}  // namespace impulse
