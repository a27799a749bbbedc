#include "host/learning/evaluate.h"

#include <filesystem>
#include <sstream>

#include "host/batch/qp_batch.h"
#include "host/learning/multibody_eval.h"
#include "solvers/error.h"

namespace impulse {
namespace fs = std::filesystem;

std::vector<int> select_tosses(const std::string& spec, int n, const TossSplit& split,
                               bool same_data) {
  std::string s = spec.empty() ? (same_data ? "test" : "all") : spec;
  std::vector<int> out;
  if (s == "all") {
    for (int i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  if (s == "test") {
    if (!same_data)
      throw Error("--subset test names the run's test split, which belongs to its own data set; "
                  "use all or a list for other data");
    return split.test;
  }
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const int k = std::stoi(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      if (k < 0 || k >= n)
        throw Error("toss " + std::to_string(k) + " is out of range (the data have " +
                    std::to_string(n) + " tosses)");
      out.push_back(k);
    } catch (const std::logic_error&) {
      throw Error("--subset: expected all, test or a comma-separated list of indices, got '" + s + "'");
    }
  }
  if (out.empty()) throw Error("--subset: no toss selected");
  return out;
}

namespace {

struct Loaded {
  RunInfo run;
  TossSet data;
  bool same_data = false;
};

Loaded load(const EvalOptions& opt) {
  Loaded L;
  L.run = load_run(opt.run_dir, opt.params);
  const std::string path = opt.data.empty() ? L.run.config.data : opt.data;
  L.same_data = opt.data.empty() ||
                fs::weakly_canonical(opt.data) == fs::weakly_canonical(L.run.config.data);
  L.data = load_tosses(path, opt.dt > 0 ? opt.dt : L.run.config.dt);
  return L;
}

// End-to-end rollout: ν' = ν + M⁻¹(F_s + F̂(x)), no contact solve.
RolloutResult impulse_rollout(const TrainedModel& m, const BodyParams& body, double dt,
                              const std::vector<StateRow>& truth) {
  RolloutResult r;
  r.states.push_back(truth[0]);
  State x = to_state(truth[0]);
  const Mat6 Mi = body.mass_matrix_inverse();
  for (size_t j = 1; j < truth.size(); ++j) {
    const Vec6 nu = velocity(x) + Mi * (smooth_impulse(x, body, dt) + m.contact_impulse(x));
    x = integrate(x, nu, dt);
    r.states.push_back(to_row(x));
  }
  return r;
}

void rollouts_of(const Loaded& L, const std::vector<int>& idx, int threads,
                 std::vector<RolloutResult>& rollouts, std::vector<TrajectoryErrors>& errors) {
  const TossMeta& meta = L.data.meta;
  const SimOptions so = sim_options_from_meta(meta);
  const BodyParams body = body_from_meta(meta);
  if (const ContactModel* cm = L.run.model->contact_model()) {
    rollouts = rollout_tosses(*cm, body, so, L.data.tosses, idx, threads);
  } else {
    rollouts.resize(idx.size());
    parallel_for(static_cast<int>(idx.size()), threads, [&](int, int b, int e) {
      for (int i = b; i < e; ++i)
        rollouts[i] = impulse_rollout(*L.run.model, body, meta.dt, L.data.tosses[idx[i]].states);
    });
  }
  errors.resize(idx.size());
  for (size_t i = 0; i < idx.size(); ++i)
    errors[i] = trajectory_errors(rollouts[i].states, L.data.tosses[idx[i]].states, meta.half_width);
}

}  // namespace

nlohmann::json evaluate_run(const EvalOptions& opt) {
  if (is_multibody_run(opt.run_dir)) return evaluate_multibody_run(opt);
  const Loaded L = load(opt);
  const std::vector<int> idx =
      select_tosses(opt.tosses, static_cast<int>(L.data.tosses.size()), L.run.split, L.same_data);
  std::vector<RolloutResult> rollouts;
  std::vector<TrajectoryErrors> errors;
  rollouts_of(L, idx, opt.threads, rollouts, errors);
  const RolloutMetrics m = aggregate_metrics(errors, L.data.meta.half_width);
  nlohmann::json j;
  j["method"] = L.run.model->method();
  j["run"] = opt.run_dir;
  j["params"] = opt.params;
  j["data"] = opt.data.empty() ? L.run.config.data : opt.data;
  j["position_error_m"] = m.position_error_m;
  j["position_error_pct_width"] = m.position_error_pct_width;
  j["rotation_error_deg"] = m.rotation_error_deg;
  j["penetration_m"] = m.penetration_m;
  j["penetration_pct_width"] = m.penetration_pct_width;
  j["n_tosses"] = m.n_tosses;
  long failed = 0;
  for (const auto& r : rollouts) failed += r.failed_steps;
  j["failed_lcp_steps"] = failed;
  j["per_toss"] = nlohmann::json::array();
  for (size_t i = 0; i < idx.size(); ++i)
    j["per_toss"].push_back({{"toss", idx[i]},
                             {"name", L.data.tosses[idx[i]].name},
                             {"states", errors[i].states},
                             {"position_error_m", errors[i].position_m},
                             {"rotation_error_deg", errors[i].rotation_deg},
                             {"penetration_m", errors[i].penetration_m}});
  return j;
}

void rollout_run(const EvalOptions& opt, int toss, const std::string& csv_path) {
  if (is_multibody_run(opt.run_dir)) return rollout_multibody_run(opt, toss, csv_path);
  const Loaded L = load(opt);
  if (toss < 0 || toss >= static_cast<int>(L.data.tosses.size()))
    throw Error("--toss " + std::to_string(toss) + " is out of range (the data have " +
                std::to_string(L.data.tosses.size()) + " tosses)");
  std::vector<RolloutResult> rollouts;
  std::vector<TrajectoryErrors> errors;
  rollouts_of(L, {toss}, 1, rollouts, errors);
  write_rollout_csv(csv_path, rollouts[0].states, L.data.tosses[toss].states, L.data.meta.half_width,
                    L.data.meta.dt);
}

}  // namespace impulse
