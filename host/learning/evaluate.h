// Evaluation of a trained run: rollouts of tosses from their first state only
// (ContactNets models by the Stewart-Trinkle step, End-to-end by its predicted
// impulse), the paper's metrics as a readable JSON file, and per-step CSVs.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/dynamics/simulate.h"
#include "host/learning/trainer.h"

namespace impulse {

struct EvalOptions {
  std::string run_dir;
  std::string data;          // empty = the run's training data
  std::string tosses = "";   // "test" (the run's test split; default for its own data),
                             // "all" (default for other data), or "3,17,42"
  std::string params = "params.json";  // which parameter file of the run (init_params.json: the start)
  int threads = 0;
  double dt = 0;             // the data's time step (0 = the run's --dt if it had one, else the data's own)
};

// Which toss indices `spec` names in a set of n tosses ("test" needs the run's split).
std::vector<int> select_tosses(const std::string& spec, int n, const TossSplit& split,
                               bool same_data);

// Rollouts + metrics; the JSON has position_error_m, position_error_pct_width,
// rotation_error_deg, penetration_m, penetration_pct_width, n_tosses, plus the
// method, data, failed LCP steps and per-toss figures.
nlohmann::json evaluate_run(const EvalOptions& opt);

// Rolls out toss k of the data and writes the per-step CSV (host/dynamics/simulate.h's columns).
void rollout_run(const EvalOptions& opt, int toss, const std::string& csv_path);

}  // namespace impulse
