// Evaluation of runs of the CCN family (ccn, ccn-r, diffsim, diffsim-r,
// end-to-end on a multibody system): every selected toss is rolled out from
// its first state only (structured models by the Anitescu step of
// host/dynamics/multibody_sim.h with the learned inertia, geometry, friction
// and residual; End-to-end by its predicted next velocity), and compared with
// the recorded toss.
//
// Metrics (CCN Sec. 5, Eq. 13), in metrics.json:
//   position_error_m       mean over tosses of the mean over steps of the base
//                          link origin's position error
//   rotation_error_deg     likewise, the angle between base orientations
//   penetration_m          mean over steps of max(0, −min φ) of the system's
//                          nominal (true) vertices at the predicted state
//   diverged_tosses        tosses whose simulation blew up (a state not valid
//                          by rollout_state_is_valid, host/dynamics/multibody_sim.h;
//                          per toss diverged_at_step): from there on they hold
//                          their last valid state, and are scored so
//   volume_error           (13a) mean over links of the symmetric difference of
//                          learned and true convex hulls over the true volume
//                          (structured methods; the truth is the system's
//                          nominal geometry: the real cube and elbow are boxes)
//   friction_error         (13b) |μ_learned − μ_true| (synthetic data only: the
//                          real objects' friction is not known)
//   inertia_error          (13c) ‖s ⊙ 𝓘_learned − s ⊙ 𝓘_true‖ over links with
//                          𝓘 = [m, c (3), I_c xx yy zz xy xz yz] and, since the
//                          paper's text breaks off before its s, our s =
//                          [1/m_true, 1/0.035 m (×3, the paper's "reasonable
//                          centre of mass distance"), 1/Ī_true (×6)], Ī_true the
//                          mean true principal moment (synthetic data only)
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "host/dynamics/multibody.h"
#include "host/learning/evaluate.h"
#include "io/system_tosses.h"

namespace impulse {

// true when RUN_DIR/config.json names a multibody system
bool is_multibody_run(const std::string& run_dir);

nlohmann::json evaluate_multibody_run(const EvalOptions& opt);

// The position_error_m above of one model (a params.json object, method as in
// the run) on the given tosses of data: the figure `train --select rollout`
// picks the best epoch by. Deterministic for every thread count.
double multibody_rollout_position_error(const MultibodySystem& sys, const std::string& method,
                                        const nlohmann::json& params, const SystemTossSet& data,
                                        const std::vector<int>& tosses, int threads);

// CSV of one toss: step, t, then predicted and recorded base position (3),
// quaternion (4) and joint angles, position error (m), rotation error (deg),
// penetration (m).
void rollout_multibody_run(const EvalOptions& opt, int toss, const std::string& csv_path);

}  // namespace impulse
