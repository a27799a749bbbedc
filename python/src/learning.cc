// impulse's Python extension, the learning half: toss data, training runs and
// their evaluation (python/impulse/learning.py documents and checks the options).
// Runs and their files are the CLI's own: the same run directories (lock,
// checkpoint and resume, log.txt, params.json), the same metrics.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cmath>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/dynamics/multibody.h"
#include "host/learning/evaluate.h"
#include "host/learning/trainer.h"
#include "io/system_tosses.h"
#include "io/toss_data.h"
#include "solvers/error.h"

namespace nb = nanobind;

namespace {

// a NumPy array (rows, cols) that owns a copy of `values`
nb::ndarray<nb::numpy, double> rows_array(const double* values, size_t rows, size_t cols) {
  auto* owned = new std::vector<double>(values, values + rows * cols);
  if (owned->empty()) owned->resize(1);
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  const size_t shape[2] = {rows, cols};
  return nb::ndarray<nb::numpy, double>(owned->data(), 2, shape, owner);
}

// Cube tosses (ContactNets, CCN, impulse formats): io/toss_data.h's load_tosses.
nb::dict load_cube_tosses(const std::string& path) {
  impulse::TossSet set;
  {
    nb::gil_scoped_release release;
    set = impulse::load_tosses(path);
  }
  nb::dict r;
  r["format"] = set.format;
  r["width"] = 13;
  r["dt"] = set.meta.dt;
  nb::dict meta;
  meta["dt"] = set.meta.dt;
  meta["mass"] = set.meta.mass;
  meta["inertia"] = nb::make_tuple(set.meta.inertia[0], set.meta.inertia[1], set.meta.inertia[2]);
  meta["gravity"] = set.meta.gravity;
  meta["half_width"] = set.meta.half_width;
  meta["mu"] = set.meta.mu;
  meta["restitution"] = set.meta.restitution;
  r["meta"] = meta;
  nb::list names, states;
  for (const impulse::Toss& t : set.tosses) {
    names.append(t.name);
    states.append(rows_array(t.states.empty() ? nullptr : t.states.front().data(), t.states.size(), 13));
  }
  r["names"] = names;
  r["states"] = states;
  return r;
}

// Multibody tosses of a named system (io/system_tosses.h), of that system's width.
nb::dict load_system_tosses(const std::string& path, const std::string& system) {
  const impulse::MultibodySystem sys = impulse::system_by_name(system);
  impulse::SystemTossSet set;
  {
    nb::gil_scoped_release release;
    set = impulse::load_system_tosses(path, sys.width());
  }
  nb::dict r;
  r["format"] = set.format;
  r["width"] = set.width;
  r["dt"] = set.dt;
  r["system"] = system;
  nb::list names, states;
  for (const impulse::SystemToss& t : set.tosses) {
    names.append(t.name);
    states.append(rows_array(t.rows.data(), size_t(t.steps(set.width)), size_t(set.width)));
  }
  r["names"] = names;
  r["states"] = states;
  return r;
}

template <class T>
T option(const nlohmann::json& j, const char* key, const char* type) {
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw impulse::Error(std::string(key) + ": expected " + type + ", got " + j.at(key).dump());
  }
}

// A TrainConfig from the options given (a JSON object of the Python keywords): the
// defaults are TrainConfig's (the CLI's), an unknown option is an Error naming it,
// and the whole is checked as the CLI checks it (validate_train_config).
impulse::TrainConfig train_config(const std::string& options_json) {
  const nlohmann::json j = nlohmann::json::parse(options_json);
  impulse::TrainConfig c;
  for (const auto& kv : j.items()) {
    const std::string& k = kv.key();
    if (k == "method") c.method = option<std::string>(j, "method", "a string");
    else if (k == "data") c.data = option<std::string>(j, "data", "a path");
    else if (k == "out") c.out = option<std::string>(j, "out", "a path");
    else if (k == "tosses") c.tosses = option<int>(j, "tosses", "a count");
    else if (k == "seed") c.seed = option<uint64_t>(j, "seed", "an integer >= 0");
    else if (k == "max_epochs") c.max_epochs = option<int>(j, "max_epochs", "an integer");
    else if (k == "patience") c.patience = option<int>(j, "patience", "an integer");
    else if (k == "batch_size") c.batch_size = option<int>(j, "batch_size", "an integer");
    else if (k == "lr") c.lr = option<double>(j, "lr", "a number");
    else if (k == "weight_decay") c.weight_decay = option<double>(j, "weight_decay", "a number");
    else if (k == "init_noise") c.init_noise = option<double>(j, "init_noise", "a number");
    else if (k == "friction") c.friction = option<std::string>(j, "friction", "a string");
    else if (k == "eps") c.eps = option<double>(j, "eps", "a number");
    else if (k == "threads") c.threads = option<int>(j, "threads", "an integer");
    else if (k == "backend") c.backend = option<std::string>(j, "backend", "a string");
    else if (k == "layout") c.layout = option<std::string>(j, "layout", "a string");
    else if (k == "max_seconds") c.max_seconds = option<double>(j, "max_seconds", "a number");
    else if (k == "progress") c.progress = option<bool>(j, "progress", "True or False");
    else if (k == "system") c.system = option<std::string>(j, "system", "a system name");
    else if (k == "w_res") c.w_res = option<double>(j, "w_res", "a number");
    else if (k == "w_res_w") c.w_res_w = option<double>(j, "w_res_w", "a number");
    else if (k == "known") c.known = option<std::string>(j, "known", "a comma list");
    else if (k == "smooth_velocities") c.smooth_velocities = option<int>(j, "smooth_velocities", "an integer");
    else if (k == "select") c.select = option<std::string>(j, "select", "'loss' or 'rollout'");
    else throw impulse::Error("unknown option '" + k + "'");
  }
  if (c.data.empty()) throw impulse::Error("data: the tosses to learn from are required (a path)");
  if (c.out.empty()) throw impulse::Error("out: the run directory is required (a path)");
  impulse::validate_train_config(c);
  return c;
}

// Trains (or resumes) the run; log lines go to stdout (verbose) and RUN_DIR/log.txt.
std::string train(const std::string& options_json, bool verbose) {
  const impulse::TrainConfig c = train_config(options_json);
  impulse::TrainResult r;
  {
    nb::gil_scoped_release release;
    std::ostringstream quiet;
    r = impulse::train(c, verbose ? std::cout : static_cast<std::ostream&>(quiet));
    std::cout.flush();
  }
  nlohmann::json out;
  out["best_epoch"] = r.best_epoch;
  out["best_valid"] = r.best_valid;
  out["early_stopped"] = r.early_stopped;
  out["resumed"] = r.resumed;
  out["out"] = c.out;
  nlohmann::json hist = nlohmann::json::array();
  for (const impulse::EpochRecord& e : r.history) {
    nlohmann::json h = {{"epoch", e.epoch},         {"train_loss", e.train_loss},
                        {"valid_loss", e.valid_loss}, {"seconds", e.seconds},
                        {"train_seconds", e.train_seconds}, {"mean_qp_iterations", e.mean_qp_iterations},
                        {"not_solved", e.not_solved}};
    if (std::isfinite(e.valid_rollout_m)) h["valid_rollout_m"] = e.valid_rollout_m;
    hist.push_back(h);
  }
  out["history"] = hist;
  return out.dump();
}

std::string evaluate(const std::string& run, const std::string& data, const std::string& tosses,
                     const std::string& params, int threads) {
  impulse::EvalOptions o;
  o.run_dir = run;
  o.data = data;
  o.tosses = tosses;
  o.params = params;
  o.threads = threads;
  nlohmann::json m;
  {
    nb::gil_scoped_release release;
    m = impulse::evaluate_run(o);
  }
  return m.dump();
}

}  // namespace

void bind_learning(nb::module_& m) {
  m.def("load_cube_tosses", &load_cube_tosses, nb::arg("path"));
  m.def("load_system_tosses", &load_system_tosses, nb::arg("path"), nb::arg("system"));
  m.def("train", &train, nb::arg("options_json"), nb::arg("verbose"));
  m.def("evaluate", &evaluate, nb::arg("run"), nb::arg("data"), nb::arg("tosses"), nb::arg("params"),
        nb::arg("threads"));
}
