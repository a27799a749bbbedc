// Training runs: ContactNets (Polytope, Deep) and the End-to-end baseline on a
// cube-toss data set, with AdamW over shuffled mini-batches, early stopping on
// the validation loss (or, for the CCN family, optionally on validation
// rollouts: TrainConfig::select), an atomic checkpoint every epoch and resume
// after a kill.
//
// A run directory holds:
//   config.json      the run's settings, the data set and the toss split
//   checkpoint.json  everything needed to continue (written atomically each epoch)
//   params.json      the best (lowest validation figure) learned model, readable, SI
//   history.csv      per epoch: train loss, validation loss, time, QP iterations
//                    (and valid_position_error_m under --select rollout)
//   log.txt          the log lines
// Every run is reproducible from its seed: the split, the initialization and the
// mini-batch order are drawn from it (portable generators), and the CPU solves are
// deterministic; a resumed CPU run continues bit for bit (the QP warm starts are
// checkpointed too).
//
// Backends. cpu: everything on the CPU threads. cuda: for ContactNets Polytope the
// transitions stay on the device and each step sends θ and the mini-batch indices,
// the device assembles, solves and differentiates (kernels/contactnets_device.h);
// its warm starts stay on the device and are checkpointed from there (x, y and ρ
// per transition, as the CPU's), so a resumed GPU run continues bit for bit. For the Deep
// model the CPU assembles and the device solves each mini-batch.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/dynamics/contact_model.h"
#include "host/dynamics/multibody.h"
#include "host/dynamics/rigid_body.h"
#include "io/toss_data.h"

namespace impulse {

struct TrainConfig {
  std::string method = "contactnets-polytope";  // | contactnets-deep | end-to-end
  std::string data;           // data set path (any format load_tosses reads)
  double dt = 0;              // the data's time step in s (0 = the data's own: experiment.json, meta, CCN's 0.0068)
  int tosses = 0;             // training tosses N (0 = the whole training split)
  uint64_t seed = 0;
  std::string out;            // run directory
  int max_epochs = 100;
  int patience = 12;          // stop after this many epochs without a better validation loss
  int batch_size = 64;        // transitions per Adam step
  double lr = 0;              // 0 = the method's default (5e-3 ContactNets, 3e-4 End-to-end: ten times the paper's, for 64-transition steps)
  double weight_decay = -1;   // < 0 = the method's default (0 ContactNets, 1e-3 End-to-end)
  double init_noise = 0.4;    // ContactNets: std of the initial error, fraction of the true values
  std::string friction = "cone";  // cone | octagon (the reference implementation's)
  // QP tolerance (absolute and relative). 1e-4 needs about half the ADMM
  // iterations of 1e-5 on the real tosses (38 vs 73 per transition, warm); the
  // reference implementation effectively ran OSQP at its default 1e-3.
  double eps = 1e-4;
  int threads = 0;            // CPU threads (0 = all)
  std::string backend = "cpu";
  // with backend cuda: the device layout of the loss QPs (auto | thread | warp;
  // kernels/qp_kernels.h); auto is a warp per transition's QP
  std::string layout = "auto";
  double max_seconds = 0;     // stop (with a checkpoint) after this long; 0 = no limit
  bool progress = true;       // live progress line on a terminal
  // Multibody systems (CCN's family): "" = the ContactNets cube path above;
  // cube | asymmetric | elbow with the methods ccn, ccn-r, end-to-end.
  std::string system;
  double w_res = -1, w_res_w = -1;  // CCN-R residual norm / weight penalties (< 0: Table 2's, real or sim by the data)
  int residual_layers = 2, residual_width = 128;  // ccn-r, diffsim-r: the residual network's hidden layers (1-8) and width (1-1024)
  // CCN and DiffSim: parameter groups given rather than learned, a comma list
  // of geometry, friction, inertia. They start at the system's published
  // values (not the random initialization) and are never changed by training.
  std::string known;
  // --system data: the training and validation transitions' velocities
  // averaged over 2h+1 rows (smooth_velocities, io/system_tosses.h); 0 = as
  // recorded; -1 (the default) = the documented choice for the data: 3 for
  // recorded tosses (a CCN or ContactNets folder), whose finite-difference
  // velocities are noisy (on the real elbow CCN's position error 6.4 cm against
  // 9.4 cm as recorded), 0 for an impulse .npz (impulse's own simulated tosses). The value used is written to config.json
  // and the log. Evaluation (and --select rollout) always rolls out from, and
  // compares with, the data as recorded: the first row of a toss and every
  // position are unchanged by the average.
  int smooth_velocities = -1;
  // --system data: what picks the best epoch (and stops early): "loss", the
  // method's validation loss; or "rollout", the mean base position error of
  // rollouts of the validation tosses from their first recorded states (the
  // metric eval reports, on the validation split; older versions of the CCN
  // authors' code selected by a validation rollout error, newer ones by the
  // one-step prediction error).
  std::string select = "loss";
  nlohmann::json to_json() const;
  static TrainConfig from_json(const nlohmann::json& j);
};

struct EpochRecord {
  int epoch = 0;
  double train_loss = 0, valid_loss = 0, seconds = 0, mean_qp_iterations = 0;
  double train_seconds = 0;  // the training pass alone (seconds also counts validation)
  // of the training steps' mini-batches, the slowest QP's iterations and the most ρ
  // updates of a QP, each averaged over the steps (ContactNets; 0 where not counted): a
  // device step, a QP per warp, waits for its slowest (bench/gpu_model.py)
  double slowest_qp_iterations = 0, slowest_qp_rho_updates = 0;
  double valid_rollout_m = NAN;  // --select rollout: the validation rollouts' mean position error
  int not_solved = 0;
};

struct TrainResult {
  std::vector<EpochRecord> history;
  int best_epoch = -1;
  double best_valid = 0;
  bool early_stopped = false, resumed = false;
};

// Throws Error naming the first option of cfg that is out of range or does not
// fit the others (train runs it first; a sweep runs it on every run's options
// before it starts any).
void validate_train_config(const TrainConfig& cfg);

// Trains (or resumes the run in cfg.out when its checkpoint exists and its
// config matches). Log lines go to `log` and to RUN_DIR/log.txt.
TrainResult train(const TrainConfig& cfg, std::ostream& log);

// The system of a run: for a system file, the run's own copy (run_dir/system.json, written
// when the run began, so the run outlives a moved or edited file), else load_system(system).
MultibodySystem run_system(const std::string& run_dir, const std::string& system);

// A trained model from a run directory, able to step a state forward.
class TrainedModel {
 public:
  virtual ~TrainedModel() = default;
  virtual std::string method() const = 0;
  // the contact model (ContactNets methods) for Stewart-Trinkle rollouts, or null
  virtual const ContactModel* contact_model() const = 0;
  // End-to-end: the predicted contact impulse (ν coordinates, SI) at x.
  virtual Vec6 contact_impulse(const State& x) const;
};

struct RunInfo {
  TrainConfig config;
  TossMeta meta;           // of the training data
  TossSplit split;         // of the training data
  std::unique_ptr<TrainedModel> model;
};

// Loads RUN_DIR/config.json and a parameter file of the run (params.json: the
// best model; init_params.json: the initial guess).
RunInfo load_run(const std::string& run_dir, const std::string& params_file = "params.json");

// Verifies a run directory: config and checkpoint readable, params.json and
// history.csv exactly what the checkpoint derives, no interrupted writes.
// finished: stopped early, all epochs done, or the time budget (--max-seconds,
// counted over every session of the run) spent. Throws Error only when run_dir
// is not a directory.
struct RunCheck {
  bool finished = false;
  std::string finished_by;  // "early stop", "all epochs done", "time budget spent (...)"; "" when not finished
  int epochs_done = 0;
  std::vector<std::string> problems, notes;
  bool ok() const { return problems.empty(); }
};
RunCheck check_run(const std::string& run_dir);

// The true cube of a data set (vertices ±half_width, friction mu, normal e_z).
std::vector<double> true_polytope_parameters(const TossMeta& meta);

}  // namespace impulse
