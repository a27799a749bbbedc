// The learning group: train, eval, rollout (host/learning) and generate-tosses
// (host/dynamics' synthetic cube tosses, the built-in data set's generator).
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "host/cli/commands.h"
#include "host/dynamics/synthetic.h"
#include "host/learning/evaluate.h"
#include "host/dynamics/multibody_sim.h"
#include "io/system_tosses.h"
#include "host/learning/trainer.h"
#include "host/systems/system_file.h"
#include "io/toss_data.h"
#include "io/files.h"

namespace impulse::cli {
namespace {

// --system: a built-in name or a system file, loaded here so that a bad file is refused
// before anything runs, its error naming the file and the item
CLI::Validator system_check() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        if (!is_system_file(v) && v != "cube" && v != "asymmetric" && v != "elbow")
          return "expected cube | asymmetric | elbow | FILE.json | FILE.urdf, got '" + v + "'";
        try {
          load_system(v);
        } catch (const std::exception& e) {
          return e.what();
        }
        return std::string();
      },
      "{cube,asymmetric,elbow,FILE.json,FILE.urdf}");
}

// the built-in data set: data/synthetic_cube.npz of the source tree (or of the
// working directory when the binary has moved).
std::string default_data_path() { return source_file("data/synthetic_cube.npz"); }

// a seed: an integer 0 .. 2^64 - 1, as written (CLI11 would wrap -1 and saturate
// a larger number to 2^64 - 1)
const CLI::Validator kSeed(
    [](std::string& v) -> std::string {
      errno = 0;
      char* end = nullptr;
      const bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
      if (digits) std::strtoull(v.c_str(), &end, 10);
      if (!digits || errno == ERANGE)
        return "a seed is an integer from 0 to 18446744073709551615, not " + (v.size() > 40 ? v.substr(0, 40) + "..." : v);
      return "";
    },
    "SEED", "seed");

// the number options' values: finite, and in plain words when out of range
const CLI::Validator kFinite(
    [](std::string& v) -> std::string {
      char* end = nullptr;
      errno = 0;
      const double d = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0') return "";  // not a number: the conversion names it
      if (errno == ERANGE || !std::isfinite(d)) return (v.size() > 40 ? v.substr(0, 40) + "..." : v) + " is out of range";
      return "";
    },
    "NUMBER", "finite");

}  // namespace

void add_train_options(CLI::App* tr, TrainConfig& tc) {
  tr->add_option("--method", tc.method,
                 "contactnets-polytope | contactnets-deep | end-to-end; with --system: ccn | ccn-r | diffsim | diffsim-r | end-to-end")
      ->check(CLI::IsMember({"contactnets-polytope", "contactnets-deep", "end-to-end", "ccn", "ccn-r", "diffsim", "diffsim-r"}));
  tr->add_option("--system", tc.system,
                 "a multibody system for the CCN family: cube | asymmetric | elbow | FILE.json | FILE.urdf (docs/systems.md; its data: "
                 "a CCN folder of width 13 + 2 joints, e.g. the real elbow tosses, or an impulse-multibody .npz)")
      ->check(system_check());
  tr->add_option("--w-res", tc.w_res, "residual norm weight (< 0: Table 2's: CCN-R 1 real / 0.001 synthetic, DiffSim-R 1000 / 1; CCN applies "
                  "it doubled against its unhalved prediction term, as every weight: host/learning/ccn.h)");
  tr->add_option("--w-res-w", tc.w_res_w, "residual weight penalty (< 0: Table 2's: CCN-R 0.1 / 0, DiffSim-R 1 / 0)");
  tr->add_option("--residual-layers", tc.residual_layers, "ccn-r, diffsim-r: the residual network's hidden layers, 1-8 (the paper's 2)");
  tr->add_option("--residual-width", tc.residual_width, "ccn-r, diffsim-r: the width of each hidden layer, 1-1024 (the paper's 128)");
  tr->add_option("--known", tc.known,
                 "CCN/DiffSim: parameter groups given, not learned (comma list of geometry, friction, inertia): "
                 "the system's published values, never trained");
  tr->add_option("--select", tc.select,
                 "--system data: what picks the best epoch and stops early: loss (the method's validation loss) or "
                 "rollout (the validation tosses' mean base position error over rollouts, as eval reports it)")
      ->check(CLI::IsMember({"loss", "rollout"}));
  tr->add_option("--smooth-velocities", tc.smooth_velocities,
                 "--system data: train on velocities averaged over 2H+1 rows (H = 0: as recorded; default -1: H = 3 "
                 "for recorded tosses, 0 for impulse's simulated ones; eval always uses the data as recorded)");
  tr->add_option("--data", tc.data, "data set: a ContactNets or CCN folder, or an impulse .npz (default: the built-in synthetic set)");
  tr->add_option("--dt", tc.dt,
                 "the data's time step in seconds, where it differs from what the data say (0 = the data's own: "
                 "experiment.json, the .npz's meta, 0.0068 for CCN folders)")
      ->check(kFinite);
  tr->add_option("--tosses", tc.tosses, "training tosses N (0 = the whole 50% training split)");
  tr->add_option("--seed", tc.seed, "seed of the split, initialization and batch order")->check(kSeed);
  tr->add_option("--out", tc.out, "run directory")->required();
  tr->add_option("--epochs", tc.max_epochs, "most epochs");
  tr->add_option("--patience", tc.patience,
                 "early stop after this many epochs without a better validation figure (the loss, or rollouts: --select)");
  tr->add_option("--batch", tc.batch_size, "transitions per Adam step");
  tr->add_option("--lr", tc.lr, "learning rate (0 = the method's default)")->check(kFinite);
  tr->add_option("--weight-decay", tc.weight_decay, "AdamW weight decay (< 0 = the method's default)")->check(kFinite);
  tr->add_option("--init-noise", tc.init_noise, "ContactNets: initial error, fraction of the true values")->check(kFinite);
  tr->add_option("--friction", tc.friction, "cone (exact) | octagon (reference implementation)")
      ->check(CLI::IsMember({"cone", "octagon"}));
  tr->add_option("--eps", tc.eps, "QP tolerance")->check(kFinite);
  tr->add_option("--threads", tc.threads, "CPU threads (0 = all cores)");
  tr->add_option("--backend", tc.backend, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  tr->add_option("--layout", tc.layout, "with --backend cuda: auto, thread or warp (the loss QPs' device layout)")
      ->check(CLI::IsMember({"auto", "thread", "warp"}));
  tr->add_option("--max-seconds", tc.max_seconds,
                 "time budget: stop after this much training, counted over every session of the run (a kill and "
                 "resume included); a run that spent it is finished, a larger value continues it")
      ->check(kFinite);
}

void check_train_arguments(const std::vector<std::string>& args) {
  if (args.empty() || args.front() != "train") throw Error("not a train command line");
  CLI::App app{"impulse train"};
  TrainConfig tc;
  add_train_options(&app, tc);
  std::vector<std::string> rev(args.rbegin(), args.rend() - 1);  // CLI11 takes them last first
  try {
    app.parse(rev);
  } catch (const CLI::ParseError& e) {
    throw Error(e.what());
  }
  validate_train_config(tc);
}

void add_learn_commands(CLI::App& app, Commands& out) {
  auto tc = std::make_shared<TrainConfig>();
  tc->data = default_data_path();
  auto* tr = app.add_subcommand("train", "learn a contact model from cube tosses (resumes RUN_DIR if it holds a checkpoint)");
  add_train_options(tr, *tc);
  out.push_back({tr, [tc] {
                   const TrainResult r = train(*tc, std::cout);
                   std::printf("best epoch %d, %s %.6g; learned parameters: %s/params.json\n", r.best_epoch,
                               tc->select == "rollout" ? "validation rollouts' position error (m)" : "validation loss",
                               r.best_valid, tc->out.c_str());
                   return 0;
                 }});

  struct EvalArgs {
    EvalOptions opt;
    std::string out = "metrics.json";
    bool json = false;
  };
  auto ea = std::make_shared<EvalArgs>();
  auto* ev = app.add_subcommand("eval", "roll out tosses with a trained run and write the paper's metrics");
  ev->add_option("--run", ea->opt.run_dir, "run directory")->required();
  ev->add_option("--data", ea->opt.data, "data set (default: the run's)");
  ev->add_option("--dt", ea->opt.dt, "the data's time step in seconds (0 = the run's --dt, else the data's own)")
      ->check(kFinite);
  ev->add_option("--subset", ea->opt.tosses, "which tosses: test (the run's test split; the default for its own data) | all (the default for other data) | a list 3,17,42");
  ev->add_option("--params", ea->opt.params, "parameter file of the run (params.json, init_params.json)");
  ev->add_option("--threads", ea->opt.threads, "CPU threads (0 = all cores)");
  ev->add_option("--out", ea->out, "metrics file to write (JSON)");
  ev->add_flag("--json", ea->json, "print the metrics as one JSON object on stdout instead of the summary line");
  out.push_back({ev, [ea] {
                   const nlohmann::json m = evaluate_run(ea->opt);
                   write_text_atomic(ea->out, m.dump(2) + "\n");
                   if (ea->json) {
                     nlohmann::json j = m;
                     j["out"] = ea->out;
                     std::printf("%s\n", j.dump().c_str());
                     return 0;
                   }
                   if (m.contains("system")) {
                     std::printf("%s (%s) on %d tosses: position error %.4f m, rotation error %.2f deg, penetration %.5f m",
                                 m["method"].get<std::string>().c_str(), m["system"].get<std::string>().c_str(),
                                 m["n_tosses"].get<int>(), m["position_error_m"].get<double>(),
                                 m["rotation_error_deg"].get<double>(), m["penetration_m"].get<double>());
                     for (const char* k : {"volume_error", "friction_error", "inertia_error"})
                       if (m.contains(k)) std::printf(", %s %.4f", k, m[k].get<double>());
                     if (m.value("diverged_tosses", 0) > 0)
                       std::printf(" (%d tosses diverged: held at their last valid state)", m["diverged_tosses"].get<int>());
                     std::printf("; wrote %s\n", ea->out.c_str());
                     return 0;
                   }
                   std::printf("%s on %d tosses: position error %.4f m (%.1f%% of width), rotation error %.2f deg, "
                               "penetration %.5f m (%.2f%% of width); wrote %s\n",
                               m["method"].get<std::string>().c_str(), m["n_tosses"].get<int>(),
                               m["position_error_m"].get<double>(), m["position_error_pct_width"].get<double>(),
                               m["rotation_error_deg"].get<double>(), m["penetration_m"].get<double>(),
                               m["penetration_pct_width"].get<double>(), ea->out.c_str());
                   return 0;
                 }});

  auto check_dir = std::make_shared<std::string>();
  auto check_json = std::make_shared<bool>(false);
  auto* ck = app.add_subcommand("check", "verify a run directory (exit 0: finished and consistent; 1: not)");
  ck->add_option("--run", *check_dir, "run directory")->required();
  ck->add_flag("--json", *check_json, "print one JSON object on stdout instead of the lines");
  out.push_back({ck, [check_dir, check_json] {
                   const RunCheck c = check_run(*check_dir);
                   const int code = c.ok() && c.finished ? 0 : 1;
                   if (*check_json) {
                     nlohmann::ordered_json j;
                     j["run"] = *check_dir;
                     j["consistent"] = c.ok();
                     j["finished"] = c.finished;
                     j["finished_by"] = c.finished_by;
                     j["epochs_done"] = c.epochs_done;
                     j["problems"] = c.problems;
                     j["notes"] = c.notes;
                     j["exit_code"] = code;
                     std::printf("%s\n", j.dump().c_str());
                     return code;
                   }
                   for (const std::string& p : c.problems) std::printf("problem: %s\n", p.c_str());
                   for (const std::string& n : c.notes) std::printf("note: %s\n", n.c_str());
                   std::printf("%s: %s, %d epoch(s) done, %s\n", check_dir->c_str(),
                               c.ok() ? "consistent" : "NOT consistent", c.epochs_done,
                               c.finished ? ("finished (" + c.finished_by + ")").c_str()
                                          : "not finished (the same train command resumes it)");
                   return code;
                 },
                 "; 1 the run is not finished or not consistent (the problems are printed)"});

  struct RolloutArgs {
    EvalOptions opt;
    int toss = 0;
    std::string out;
  };
  auto ra = std::make_shared<RolloutArgs>();
  auto* ru = app.add_subcommand("rollout", "roll out one toss with a trained run and write a CSV for plotting");
  ru->add_option("--run", ra->opt.run_dir, "run directory")->required();
  ru->add_option("--data", ra->opt.data, "data set (default: the run's)");
  ru->add_option("--dt", ra->opt.dt, "the data's time step in seconds (0 = the run's --dt, else the data's own)")
      ->check(kFinite);
  ru->add_option("--toss", ra->toss, "toss index")->required();
  ru->add_option("--params", ra->opt.params, "parameter file of the run");
  ru->add_option("--out", ra->out, "CSV file to write")->required();
  out.push_back({ru, [ra] {
                   rollout_run(ra->opt, ra->toss, ra->out);
                   std::printf("wrote %s\n", ra->out.c_str());
                   return 0;
                 }});

  struct TossArgs {
    SyntheticConfig config;
    std::string out;
    std::string system, gap = "none";
    double gravity_factor = 1.0;
    int states = 121;
  };
  auto ta = std::make_shared<TossArgs>();
  auto* gt = app.add_subcommand("generate-tosses", "simulate synthetic cube tosses with known geometry, friction and inertia");
  gt->add_option("--count", ta->config.n_tosses, "tosses");
  gt->add_option("--seed", ta->config.seed, "random seed");
  gt->add_option("--mu", ta->config.mu, "friction coefficient");
  gt->add_option("--half-width", ta->config.half_width, "cube half-width (m)");
  gt->add_option("--noise", ta->config.position_noise_std, "std of position noise added after simulating (m)");
  gt->add_option("--threads", ta->config.threads, "CPU threads (0 = all cores)");
  gt->add_option("--out", ta->out, "file to write (.npz)")->required();
  gt->add_option("--system", ta->system,
                 "a multibody system: cube | asymmetric | elbow | FILE.json | FILE.urdf (docs/systems.md); writes an impulse-multibody .npz")
      ->check(system_check());
  gt->add_option("--model-gap", ta->gap, "with --system: the model gap none | vortex | gravity (CCN's scenarios)")
      ->check(CLI::IsMember({"none", "vortex", "gravity"}));
  gt->add_option("--gravity-factor", ta->gravity_factor, "with --model-gap gravity: the simulated gravity is f * 9.81, f in [0, 2]");
  gt->add_option("--states", ta->states, "with --system: rows per toss (121 as the real elbow files)");
  out.push_back({gt, [ta] {
                   if (!ta->system.empty()) {
                     SyntheticSystemOptions o;
                     o.system = ta->system;
                     if (is_system_file(ta->system)) o.described = load_system(ta->system);
                     o.tosses = ta->config.n_tosses;
                     o.seed = ta->config.seed;
                     o.states = ta->states;
                     o.gap = parse_model_gap(ta->gap);
                     o.gravity_factor = ta->gravity_factor;
                     o.step.batch.threads = ta->config.threads;
                     SyntheticSystemReport rep;
                     const SystemTossSet set = generate_system_tosses(o, &rep);
                     write_system_tosses(ta->out, set);
                     std::printf("wrote %zu %s tosses (%d rows each, gap %s) to %s in %.1f s\n", set.tosses.size(),
                                 ta->system.c_str(), o.states, ta->gap.c_str(), ta->out.c_str(), rep.seconds);
                     return 0;
                   }
                   if (ta->gap != "none") throw Error("--model-gap needs --system");
                   const TossSet set = generate_synthetic_tosses(ta->config);
                   write_tosses(ta->out, set);
                   std::printf("wrote %zu tosses (%zu rows, mu %.3g, half-width %.4g m) to %s\n",
                               set.tosses.size(), set.rows(), ta->config.mu, ta->config.half_width,
                               ta->out.c_str());
                   return 0;
                 }});
}

}  // namespace impulse::cli
