// A training run's directory (docs/formats.md "Run directories", docs/learning.md):
// one writer at a time (a lock), a resume only of the same run (its configuration
// checked against the checkpoint's copy), the checkpoint and its warm-start file
// written atomically after each epoch, and the readable outputs (params.json,
// history.csv) derived from the checkpoint. train() (trainer.h) is a loop of epochs
// over a RunDir; check_run reads what it wrote.
#pragma once

#include <fstream>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/learning/train_method.h"
#include "host/learning/trainer.h"
#include "host/optim/adam.h"
#include "io/file_lock.h"

namespace impulse {

// Where a run stands: what its checkpoint holds and each epoch updates.
struct RunState {
  std::vector<double> theta;  // the method's variables
  int epochs_done = 0, since_best = 0;
  nlohmann::json best_params;  // the best epoch's readable model
  TrainResult res;             // history, best epoch and figure, stopped, resumed
  double seconds_before = 0;   // the time budget spent by the run's earlier sessions
};

class RunDir {
 public:
  // Creates the folder, takes its lock (a second writer is refused, naming the holder),
  // removes temporaries a killed writer left, opens log.txt (appending).
  RunDir(const std::string& out, std::ostream& echo);
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  // a line to the caller's stream and to log.txt
  void log(const std::string& line);
  const std::string& out() const { return out_; }
  std::string path(const std::string& name) const;

  // The checkpoint to resume from (null: the run starts fresh), after refusing what
  // cannot be resumed: results without a checkpoint, a damaged checkpoint, a checkpoint of
  // another configuration than `config` (config_difference; the checkpoint's own copy of
  // it, else config.json for an older impulse's), a run that failed before (failure.json).
  // Writes nothing.
  nlohmann::json open_checkpoint(const nlohmann::json& config) const;

  // A fresh run: config.json and init_params.json (the method's, with cfg.method).
  void begin(const nlohmann::json& config, nlohmann::json init_params, const std::string& method_name);

  // A resumed run: config.json rewritten; the state, the optimizer and the method's
  // variables and warm starts from the checkpoint (a warm-start file it does not name is
  // an orphan of an interrupted write, and goes). Errors name the checkpoint.
  void restore(const nlohmann::json& ck, const nlohmann::json& config, Method& method, AdamW& adam,
               int n_train, int n_valid, RunState& st);

  // failure.json (the epoch and the reason), then throws Error(why): a rerun of the same
  // command is refused (open_checkpoint) rather than failing the same way again.
  [[noreturn]] void fail(int epoch, const std::string& why) const;

  // After an epoch: the method's warm starts in their own file (named by the epoch), then
  // the checkpoint that points at them, then the previous warm-start file goes. On a failed
  // write (a full disk) the previous checkpoint stands with its own warm starts.
  void write_checkpoint(nlohmann::json ck, const Method& method, int epoch);

  // params.json (the best model) and history.csv, as derived from the state.
  void write_outputs(const RunState& st, const TrainConfig& cfg) const;

 private:
  std::string out_;
  std::ostream& echo_;
  FileLock lock_;
  std::ofstream log_;
};

// The checkpoint of a state after `epoch` (history, best model, optimizer, time spent).
nlohmann::json checkpoint_json(const RunState& st, const AdamW& adam, int epoch, const nlohmann::json& config,
                               double seconds_used, bool time_limited);

// One epoch's record as a checkpoint's history holds it, and a history back.
nlohmann::json epoch_record_json(const EpochRecord& r);
std::vector<EpochRecord> history_from_json(const nlohmann::json& history);
// history.csv's text (a last column valid_position_error_m when the run selects by rollouts)
std::string history_csv(const std::vector<EpochRecord>& history);
// params.json: the best model with the method, the best epoch and its figure
nlohmann::json params_json_of(nlohmann::json best_params, const TrainConfig& cfg, int best_epoch, double best_valid);
// The keys in which two run configurations differ ("" when they are the same run): a run
// may be continued for more epochs, more patience or a longer time budget, and its data
// path is compared as the same folder however it is written.
std::string config_difference(nlohmann::json a, nlohmann::json b);
// "45s", "12.5min", "3.2h": for the time budget's messages
std::string format_seconds(double s);

}  // namespace impulse
