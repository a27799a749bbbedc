// Sweeps: a grid of training runs (methods × systems × data sizes × seeds × any
// option of `impulse train`), each run exactly what `impulse train` followed by
// `impulse eval` does, in its own run directory, run as child processes of the
// impulse binary so that a crash or a bad option ends one run, never the sweep.
//
// A sweep directory OUT holds:
//   sweep.json        the configuration and its expanded runs (a restart with another
//                     configuration is refused)
//   runs/NAME/        each run's directory (config.json, checkpoint.json, params.json,
//                     history.csv, metrics.json: see host/learning/trainer.h)
//   logs/NAME.log     each run's train and eval output
//   status/NAME.json  a failed run's stage, exit code and error (removed when it succeeds)
//   summary.csv/json  one row per run: status, grid values, metrics (rewritten as runs end)
//   sweep.log         the sweep's own event lines
// Every state is derived from files: a run is done when its metrics.json exists and
// `impulse check --run` finds it finished (early stop, all epochs, or its time
// budget spent) and consistent; anything else is started again, and a training
// resumes from its checkpoint. --list, the summary and the sweep use that one rule. Stopping at any moment (Ctrl-C,
// kill -9 of the sweep: its children die with it) and restarting loses nothing and
// does nothing twice beyond the epoch in progress.
//
// Configuration (JSON; relative paths in "data" are relative to the file's folder):
//   { "train": { option: value, ... },         every run's options
//     "grid":  { option: [values], ... },      the grid (file order; first key slowest)
//     "runs":  [ { option: value, ... }, ... ], extra single runs (optional)
//     "eval":  { "tosses": "test" },           what `impulse eval` scores (optional)
//     "threads_per_run": 1 }                   optional (default: see SweepOptions)
// Options are `impulse train`'s long options without "--" ("weight-decay" or
// "weight_decay"); --out and --threads are the sweep's. A run's name is its grid
// values, e.g. "method-end-to-end_tosses-8_seed-0".
//
// Sharing the machine: `jobs` runs at once, each with `threads_per_run` CPU threads
// (default one per core: the training steps' short parallel regions scale worse than
// separate runs do). Runs with "backend": "cuda" are spread over the GPUs present,
// `runs_per_gpu` at a time on each (CUDA_VISIBLE_DEVICES per child).
// Beyond one machine: `shard`/`shards` runs only the runs whose index % shards ==
// shard (a batch scheduler's job array: `--shard i/N`); under mpirun (a build with
// MPI) each rank takes its share as a shard, and rank 0 gathers every rank's results
// and writes the summary. One sweep directory, one sweep at a time: the shards of
// one layout (i/N for one N, or the ranks of one mpirun) may run together, each
// shard once; a plain sweep, or shards of another N, are refused while they run.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace impulse {

struct SweepRun {
  int index = 0;
  std::string name;
  nlohmann::ordered_json options;  // train options: canonical key ("weight-decay") -> value
  nlohmann::ordered_json grid;     // the grid keys' values (seed included)
};

struct SweepSpec {
  nlohmann::ordered_json config;   // as given (paths resolved)
  std::vector<std::string> grid_keys;
  std::string eval_tosses = "test";
  int threads_per_run = 0;          // 0: not set in the file
  std::vector<SweepRun> runs;
};

// Parses and expands a configuration; base_dir resolves relative data paths.
// Errors name the item: an unknown option, a non-scalar value, an empty grid list,
// --out/--threads given, two runs with the same name, more than max_runs runs
// (counted before anything is expanded).
SweepSpec parse_sweep_config(const nlohmann::ordered_json& j, const std::string& base_dir, int max_runs = 10000);
SweepSpec load_sweep_config(const std::string& path, int max_runs = 10000);

// A command line as a POSIX shell reads it back: each argument single-quoted
// unless it is plain (letters, digits, -_./=:,+@%).
std::string shell_command(const std::string& exe, const std::vector<std::string>& args);

// The command line of a run's training: {"train", "--method", ..., "--out", dir, "--threads", T}.
std::vector<std::string> train_arguments(const SweepRun& run, const std::string& run_dir, int threads);

struct SweepOptions {
  std::string config;        // SWEEP.json
  std::string out;           // the sweep directory
  std::string exe;           // the impulse binary (default: this process's own)
  int jobs = 0;              // runs at once (0: cores / threads_per_run)
  int threads_per_run = 0;   // 0: the config's, else 1 (or cores / runs when fewer runs than cores)
  int shard = 0, shards = 1; // this process runs index % shards == shard
  int runs_per_gpu = 2;      // concurrent cuda runs per GPU
  bool progress = true;      // the live line on a terminal (plain lines otherwise)
  bool use_mpi = true;       // under mpirun, ranks as shards (when built with MPI)
  bool list_only = false;    // print the runs, their state and commands; run nothing
  // a grid larger than this is refused (the user confirms a larger one by raising it)
  int max_runs = 10000;
  // checks one run's command line ({"train", "--method", ...}) as `impulse train`
  // would, throwing Error with the reason; every run is checked before any starts
  // (the CLI sets it; empty: not checked)
  std::function<void(const std::vector<std::string>&)> check_run_args;
};

struct SweepRow {
  std::string name, status;  // done | failed | pending
  nlohmann::ordered_json grid, metrics;  // metrics: metrics.json's numbers
  std::string error;         // failed: what went wrong
  int best_epoch = -1, epochs = 0;  // epochs: trained (the epoch-0 evaluation is not one)
};

struct SweepResult {
  int total = 0, done = 0, failed = 0, pending = 0;
  int mine = 0;              // runs of this shard / rank
  bool interrupted = false;
  std::vector<SweepRow> rows;
};

// Runs (or continues) the sweep; writes the summary. Throws Error on a bad
// configuration, a sweep directory holding another configuration, or the same
// shard already running there.
SweepResult run_sweep(const SweepOptions& opt, std::ostream& log);

// The rows of a sweep directory as its files say (status, metrics, errors).
std::vector<SweepRow> collect_sweep_rows(const std::string& sweep_dir);
// summary.csv: run, status, the grid keys, best_epoch, epochs, every metric, error.
std::string summary_csv(const std::vector<SweepRow>& rows, const std::vector<std::string>& grid_keys);

// Which device a cuda run goes to: the one with the fewest runs, below
// runs_per_gpu; -1 when every device is full (or there are none).
int pick_device(const std::vector<int>& running_per_device, int runs_per_gpu);

}  // namespace impulse
