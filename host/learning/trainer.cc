// GCC 12 with AVX-512: false bounds warnings on a fixed-size Eigen vector copied
// with a 512-bit load
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#include "host/learning/trainer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <tuple>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>

#include "host/optim/adam.h"
#include "host/learning/mlp.h"
#include "host/learning/train_method.h"
#include "host/learning/ccn.h"
#include "host/learning/multibody_eval.h"
#include "host/learning/multibody_methods.h"
#include "host/learning/run_dir.h"
#include "host/learning/cube_methods.h"
#include "kernels/contactnets_device.h"
#include "host/learning/contactnets_loss.h"
#include "host/learning/contactnets_model.h"
#include "host/batch/qp_batch.h"
#include "host/dynamics/simulate.h"
#include "solvers/error.h"
#include "io/npz.h"
#include "host/systems/system_file.h"
#include "io/system_tosses.h"
#include "io/file_lock.h"
#include "io/json_file.h"
#include "io/files.h"

namespace impulse {
namespace fs = std::filesystem;

// ---- config -----------------------------------------------------------------

nlohmann::json TrainConfig::to_json() const {
  return {{"method", method},   {"data", data},         {"tosses", tosses},
          {"seed", seed},       {"max_epochs", max_epochs}, {"patience", patience},
          {"batch_size", batch_size}, {"lr", lr},       {"weight_decay", weight_decay},
          {"init_noise", init_noise}, {"friction", friction}, {"eps", eps},
          {"backend", backend}};
}

namespace {
nlohmann::json config_json_of(const TrainConfig& c) {
  nlohmann::json j = c.to_json();
  if (c.layout != "auto") j["layout"] = c.layout;
  if (c.max_seconds > 0) j["max_seconds"] = c.max_seconds;  // the time budget (check_run's "finished")
  if (c.dt > 0) j["dt"] = c.dt;  // a time step given (--dt) instead of the data's
  if (!c.system.empty()) {
    j["system"] = c.system;
    j["w_res"] = c.w_res;
    j["w_res_w"] = c.w_res_w;
    if (c.residual_layers != 2) j["residual_layers"] = c.residual_layers;  // (absent: the paper's 2 x 128)
    if (c.residual_width != 128) j["residual_width"] = c.residual_width;
    if (!c.known.empty()) j["known"] = c.known;
    if (c.smooth_velocities != 0) j["smooth_velocities"] = c.smooth_velocities;
    if (c.select != "loss") j["select"] = c.select;
    if (c.method == "ccn" || c.method == "ccn-r") j["ccn_loss_form"] = kCcnLossForm;
  }
  return j;
}
}  // namespace

TrainConfig TrainConfig::from_json(const nlohmann::json& j) {
  TrainConfig c;
  try {
    c.method = j.at("method").get<std::string>();
    c.data = j.at("data").get<std::string>();
    c.tosses = j.at("tosses").get<int>();
    c.seed = j.at("seed").get<uint64_t>();
    c.max_epochs = j.at("max_epochs").get<int>();
    c.patience = j.at("patience").get<int>();
    c.batch_size = j.at("batch_size").get<int>();
    c.lr = j.at("lr").get<double>();
    c.weight_decay = j.at("weight_decay").get<double>();
    c.init_noise = j.at("init_noise").get<double>();
    c.friction = j.at("friction").get<std::string>();
    c.eps = j.at("eps").get<double>();
    c.backend = j.at("backend").get<std::string>();
    c.layout = j.value("layout", std::string("auto"));
    c.system = j.value("system", std::string());
    c.w_res = j.value("w_res", -1.0);
    c.w_res_w = j.value("w_res_w", -1.0);
    c.residual_layers = j.value("residual_layers", 2);
    c.residual_width = j.value("residual_width", 128);
    c.known = j.value("known", std::string());
    c.smooth_velocities = j.value("smooth_velocities", 0);
    c.select = j.value("select", std::string("loss"));
    c.max_seconds = j.value("max_seconds", 0.0);
    c.dt = j.value("dt", 0.0);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("run config: ") + e.what());
  }
  return c;
}


void validate_train_config(const TrainConfig& c) {
  if (!c.system.empty()) {
    load_system(c.system);  // throws for an unknown system or a bad file, naming the item
    if (!is_multibody_method(c.method))
      throw Error("unknown method '" + c.method + "' for --system " + c.system + ": expected ccn, ccn-r, diffsim, diffsim-r or end-to-end");
  } else if (c.method == "ccn" || c.method == "ccn-r" || c.method == "diffsim" || c.method == "diffsim-r") {
    throw Error("method '" + c.method + "' needs --system (cube | asymmetric | elbow | FILE.json | FILE.urdf)");
  } else if (c.method != "contactnets-polytope" && c.method != "contactnets-deep" && c.method != "end-to-end") {
    throw Error("unknown method '" + c.method +
                "': expected contactnets-polytope, contactnets-deep or end-to-end (or ccn, ccn-r with --system)");
  }
  if (!std::isfinite(c.w_res) || !std::isfinite(c.w_res_w)) throw Error("train: residual weights must be finite");
  if (c.residual_layers < 1 || c.residual_layers > 8)
    throw Error("train: --residual-layers must be 1-8, got " + std::to_string(c.residual_layers));
  if (c.residual_width < 1 || c.residual_width > 1024)
    throw Error("train: --residual-width must be 1-1024, got " + std::to_string(c.residual_width));
  if ((c.residual_layers != 2 || c.residual_width != 128) && c.method != "ccn-r" && c.method != "diffsim-r")
    throw Error("train: --residual-layers and --residual-width apply to ccn-r and diffsim-r (a residual network), not to method '" +
                c.method + "'");
  if (!(c.dt >= 0) || !std::isfinite(c.dt) || c.dt > 1)
    throw Error("train: --dt must be a time step in seconds, > 0 and at most 1 (0: the data's own), got " +
                std::to_string(c.dt));
  if (!c.known.empty()) {
    if (c.system.empty() || c.method == "end-to-end")
      throw Error("train: --known applies to ccn, ccn-r, diffsim and diffsim-r with --system, not to method '" +
                  c.method + "'");
    known_groups(c.known);  // throws naming an unknown or repeated group
  }
  if (c.smooth_velocities > 0 && c.system.empty())
    throw Error("train: --smooth-velocities applies to --system data (the CCN family), not to method '" + c.method + "'");
  if (c.select != "loss" && c.select != "rollout")
    throw Error("train: --select '" + c.select + "': expected loss or rollout");
  if (c.select == "rollout" && c.system.empty())
    throw Error("train: --select rollout applies to --system data (the CCN family), not to method '" + c.method + "'");
  if (c.smooth_velocities < -1 || c.smooth_velocities > 10)
    throw Error("train: --smooth-velocities must be a half width of 0 .. 10 rows (-1: the data's default), got " +
                std::to_string(c.smooth_velocities));
  if (!(c.lr >= 0) || !std::isfinite(c.lr)) throw Error("train: --lr must be a finite number >= 0 (0 = the method's default)");
  if (!std::isfinite(c.weight_decay)) throw Error("train: --weight-decay must be finite");
  if (c.out.empty()) throw Error("train: an output run directory is required (--out)");
  if (c.tosses < 0) throw Error("train: --tosses must be >= 0");
  if (c.max_epochs < 1) throw Error("train: max_epochs must be >= 1");
  if (c.patience < 1) throw Error("train: patience must be >= 1");
  if (c.batch_size < 1) throw Error("train: batch_size must be >= 1");
  if (c.friction != "cone" && c.friction != "octagon")
    throw Error("unknown friction model '" + c.friction + "': expected cone or octagon");
  if (!(c.eps > 0) || !std::isfinite(c.eps)) throw Error("train: --eps must be a finite number > 0");
  if (!(c.init_noise >= 0) || !std::isfinite(c.init_noise))
    throw Error("train: --init-noise must be a finite number >= 0");
  if (!(c.max_seconds >= 0) || std::isnan(c.max_seconds)) throw Error("train: --max-seconds must be >= 0 (0 = no limit)");
  if (c.threads < 0 || c.threads > max_threads())
    throw Error("train: --threads " + std::to_string(c.threads) + ": must be 0 (all cores) .. " +
                std::to_string(max_threads()) + " (four times this machine's cores, or 64)");
  cuda::parse_device_layout(c.layout);  // names a bad value
  if (c.layout != "auto" && !(c.method == "contactnets-polytope" && c.backend == "cuda"))
    throw Error("train: --layout " + c.layout + " applies to contactnets-polytope with --backend cuda");
}

namespace {

Transitions transitions_of(const TossSet& set, const std::vector<int>& tosses) {
  Transitions t;
  for (int i : tosses) {
    const auto& s = set.tosses[i].states;
    for (size_t j = 0; j + 1 < s.size(); ++j) {
      t.x.push_back(to_state(s[j]));
      t.xn.push_back(to_state(s[j + 1]));
    }
  }
  return t;
}

// A portable shuffle (identical on every standard library).
std::vector<int> permutation(int n, uint64_t seed) {
  std::vector<int> p(n);
  for (int i = 0; i < n; ++i) p[i] = i;
  std::mt19937_64 rng(seed);
  for (int i = n - 1; i > 0; --i) {
    const int j = static_cast<int>(rng() % uint64_t(i + 1));
    std::swap(p[i], p[j]);
  }
  return p;
}

}  // namespace

NpyArray warm_rows(const std::vector<std::vector<double>>& w) {
  size_t width = 0;
  for (const auto& v : w) width = std::max(width, v.size());
  std::vector<double> flat(w.size() * width, std::nan(""));
  for (size_t i = 0; i < w.size(); ++i)
    if (w[i].size() == width) std::copy(w[i].begin(), w[i].end(), flat.begin() + i * width);
  return make_npy({int64_t(w.size()), int64_t(width)}, flat);
}

std::vector<std::vector<double>> warm_from_rows(const NpyArray& a, int64_t rows) {
  if (a.shape.size() != 2 || (rows >= 0 && a.shape[0] != rows))
    throw Error("checkpoint warm starts: expected " + (rows >= 0 ? std::to_string(rows) + " rows" : std::string("2-D")) +
                ", got " + shape_string(a.shape));
  const std::vector<double> flat = a.as<double>();
  const size_t width = size_t(a.shape[1]);
  std::vector<std::vector<double>> w(size_t(a.shape[0]));
  for (size_t i = 0; i < w.size(); ++i) {
    const auto row = flat.begin() + std::ptrdiff_t(i * width);
    // a NaN row was never solved; a row with any other non-finite number is a failed
    // solve's, which starts cold (the device refuses it as a warm start)
    if (width > 0 && std::all_of(row, row + std::ptrdiff_t(width), [](double v) { return std::isfinite(v); }))
      w[i].assign(row, row + std::ptrdiff_t(width));
  }
  return w;
}

std::vector<double> true_polytope_parameters(const TossMeta& meta) {
  return PolytopeParams::cube(meta.half_width, meta.mu).pack();
}

Vec6 TrainedModel::contact_impulse(const State&) const { return Vec6::Zero(); }

namespace {

constexpr const char* kSystemCopy = "system.json";

// A system file's run keeps the system as it read it (run/system.json, written with
// system_json: the vertices of meshes, the layout, 17 digits), so that eval, rollout and
// report find it when the file has moved, and a resume (a checkpoint there) refuses a file
// that changed since; a fresh start rewrites it.
void keep_system_copy(const std::string& out, const std::string& system, const MultibodySystem& sys, bool resuming) {
  if (!is_system_file(system)) return;
  const fs::path copy = fs::path(out) / kSystemCopy;
  const std::string text = system_json(sys);
  std::error_code ec;
  if (resuming && fs::exists(copy, ec)) {  // a fresh start (no checkpoint) takes the file as it is now
    if (read_text_file(copy.string()) == text) return;
    throw Error("--system " + system + ": the system differs from the one this run began with (" + copy.string() +
                "); a run resumes with its own system: restore the file, or train into another --out");
  }
  write_text_atomic(copy.string(), text);
}

}  // namespace

MultibodySystem run_system(const std::string& run_dir, const std::string& system) {
  const fs::path copy = fs::path(run_dir) / kSystemCopy;
  std::error_code ec;
  if (!is_system_file(system) || !fs::is_regular_file(copy, ec)) return load_system(system);
  return system_from_json(read_text_file(copy.string()), copy.string());
}

namespace {

// The data a run trains on: cube tosses (the ContactNets path) or a multibody system's
// (the CCN family), split into training, validation and test tosses, and the
// transitions of the first two.
struct TrainingData {
  TossSet cube;
  SystemTossSet tosses;
  MultibodyData mb;
  std::string format;
  int count = 0;
  TossSplit split;
  Transitions train, valid;
};

// Reads the data (resolving cfg.smooth_velocities' default from it), splits and cuts
// them into transitions.
TrainingData load_training_data(TrainConfig& cfg, RunDir& dir) {
  TrainingData d;
  if (cfg.system.empty()) {
    d.cube = load_tosses(cfg.data, cfg.dt);
    d.count = static_cast<int>(d.cube.tosses.size());
    d.format = d.cube.format;
  } else {
    d.mb.system = load_system(cfg.system);
    d.tosses = load_system_tosses(cfg.data, d.mb.system.width(), cfg.dt, d.mb.system.layout);
    d.mb.dt = d.tosses.dt;
    d.mb.synthetic = is_synthetic(d.tosses, d.mb.system.layout);
    // the transitions' velocities only: a toss's first row (its window is that
    // row alone) and every position stay as recorded, which is all a rollout uses
    if (cfg.smooth_velocities < 0) {
      cfg.smooth_velocities = d.mb.synthetic ? 0 : 3;
      dir.log(std::string("smoothing velocities over 2H+1 rows, H = ") + std::to_string(cfg.smooth_velocities) +
              (d.mb.synthetic ? " (the default for simulated tosses)"
                              : " (the default for recorded tosses; --smooth-velocities 0 trains on them as recorded)"));
    }
    smooth_velocities(d.tosses, cfg.smooth_velocities);
    d.count = static_cast<int>(d.tosses.tosses.size());
    d.format = d.tosses.format;
  }
  if (d.count < 3) throw Error(cfg.data + ": need at least 3 tosses to split, found " + std::to_string(d.count));
  d.split = split_tosses(d.count, cfg.seed, {0.5, 0.3, 0.2}, cfg.tosses);
  if (cfg.tosses > 0 && static_cast<int>(d.split.train.size()) < cfg.tosses)
    dir.log("note: --tosses " + std::to_string(cfg.tosses) + " asked, the training split has " +
            std::to_string(d.split.train.size()));
  const auto multibody_transitions = [&](const std::vector<int>& tosses) {
    Transitions t;
    const int W = d.mb.system.width();
    for (int i : tosses) {
      const SystemToss& s = d.tosses.tosses[static_cast<size_t>(i)];
      for (int k = 0; k + 1 < s.steps(W); ++k) {
        t.mx.push_back(Eigen::Map<const Eigen::VectorXd>(s.rows.data() + static_cast<size_t>(W) * k, W));
        t.mxn.push_back(Eigen::Map<const Eigen::VectorXd>(s.rows.data() + static_cast<size_t>(W) * (k + 1), W));
      }
    }
    return t;
  };
  d.train = cfg.system.empty() ? transitions_of(d.cube, d.split.train) : multibody_transitions(d.split.train);
  d.valid = cfg.system.empty() ? transitions_of(d.cube, d.split.valid) : multibody_transitions(d.split.valid);
  return d;
}

// config.json: the settings, the data's format and constants, the split
nlohmann::json run_config_json(const TrainConfig& cfg, const TrainingData& d) {
  nlohmann::json j = config_json_of(cfg);
  j["data_format"] = d.format;
  if (cfg.system.empty()) {
    j["meta"] = {{"dt", d.cube.meta.dt},           {"mass", d.cube.meta.mass},
                 {"inertia", d.cube.meta.inertia}, {"gravity", d.cube.meta.gravity},
                 {"half_width", d.cube.meta.half_width}, {"mu", d.cube.meta.mu}};
  } else {
    j["meta"] = {{"dt", d.mb.dt}, {"width", d.mb.system.width()}};
  }
  j["split"] = {{"train", d.split.train}, {"valid", d.split.valid}, {"test", d.split.test}};
  return j;
}

// One epoch's training pass: the mini-batches in the epoch's order, an AdamW step on each
// (a diverged step recorded as the run's failure); the record's training figures.
EpochRecord train_pass(const TrainConfig& cfg, int epoch, double lr, const Transitions& train_set, Method& method,
                       AdamW& adam, std::vector<double>& theta, RunDir& dir, BatchStats& st) {
  const bool tty = cfg.progress && isatty(fileno(stderr));
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int> order = permutation(train_set.size(), cfg.seed * 1000003ULL + epoch);
  const int n_batches = (train_set.size() + cfg.batch_size - 1) / cfg.batch_size;
  double train_sum = 0;
  std::vector<int> idx;
  GradVector grad(theta.size());
  for (int b = 0; b < n_batches; ++b) {
    idx.assign(order.begin() + size_t(b) * cfg.batch_size,
               order.begin() + std::min<size_t>(order.size(), size_t(b + 1) * cfg.batch_size));
    std::fill(grad.begin(), grad.end(), 0.0);
    train_sum += method.loss(train_set, idx, 0, &grad, st);
    for (double& g : grad) g /= static_cast<double>(idx.size());
    adam.step(Eigen::Map<Eigen::VectorXd>(theta.data(), Eigen::Index(theta.size())),
              Eigen::Map<const Eigen::VectorXd>(grad.data(), Eigen::Index(grad.size())));
    for (size_t i = 0; i < theta.size(); ++i)
      if (!std::isfinite(theta[i]) || std::abs(theta[i]) > 1e150) {
        char lr_text[96];
        std::snprintf(lr_text, sizeof lr_text, "%.3g", lr);
        dir.fail(epoch, "epoch " + std::to_string(epoch) + ", step " + std::to_string(b + 1) +
                            ": the parameters diverged (parameter " + std::to_string(i) + " is " +
                            std::to_string(theta[i]) + " after an AdamW step with learning rate " + lr_text +
                            "); a smaller --lr (" + (cfg.lr > 0 ? "given" : "the method's default") + ": " + lr_text + ")");
      }
    method.set_variables(theta);
    if (tty && (b % 20 == 0 || b + 1 == n_batches)) {
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double eta = el / (b + 1) * (n_batches - b - 1);
      std::fprintf(stderr, "\repoch %d/%d  batch %d/%d  train loss %.4g  epoch ETA %s   ", epoch, cfg.max_epochs,
                   b + 1, n_batches, train_sum / ((b + 1.0) * cfg.batch_size), format_seconds(eta).c_str());
    }
  }
  EpochRecord r;
  r.epoch = epoch;
  r.train_loss = train_sum / std::max(1, train_set.size());
  r.train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.mean_qp_iterations = st.qp_count ? double(st.qp_iterations) / st.qp_count : 0;
  if (st.slowest_calls) {
    r.slowest_qp_iterations = double(st.slowest_iterations) / st.slowest_calls;
    r.slowest_qp_rho_updates = double(st.slowest_rho_updates) / st.slowest_calls;
  }
  r.not_solved = st.not_solved;
  return r;
}

// the log line of an epoch
std::string epoch_line(const EpochRecord& r, bool by_rollout, bool best) {
  char line[320], slowest[64] = "";
  if (r.slowest_qp_iterations > 0)
    std::snprintf(slowest, sizeof slowest, " (a step's slowest: %.1f)", r.slowest_qp_iterations);
  std::snprintf(line, sizeof line,
                "epoch %d: train loss %.5g, valid loss %.5g%s%s, %.2fs (training %.2fs), %.1f QP iterations/transition%s%s",
                r.epoch, r.train_loss, r.valid_loss,
                by_rollout ? (", valid rollouts " + std::to_string(r.valid_rollout_m) + " m").c_str() : "",
                best ? " (best)" : "", r.seconds, r.train_seconds, r.mean_qp_iterations, slowest,
                r.not_solved ? (", " + std::to_string(r.not_solved) + " QPs at the iteration cap").c_str() : "");
  return line;
}

}  // namespace

TrainResult train(const TrainConfig& cfg_in, std::ostream& log_out) {
  validate_train_config(cfg_in);
  TrainConfig cfg = cfg_in;  // with the data's defaults resolved (smooth_velocities)
  if (cfg.system.empty()) cfg.smooth_velocities = 0;
  // Eigen would parallelize the networks' large products with OpenMP on its own,
  // with a blocking that depends on the team it gets (the machine's cores, and
  // under OMP_DYNAMIC the load): the Deep and End-to-end results then changed
  // from run to run and machine to machine. Our parallelism is parallel_for's;
  // Eigen's products run on one thread, so every run is reproducible.
  Eigen::setNbThreads(1);
  RunDir dir(cfg.out, log_out);
  const TrainingData d = load_training_data(cfg, dir);
  const nlohmann::json config = run_config_json(cfg, d);
  std::unique_ptr<Method> method = cfg.system.empty() ? make_cube_method(cfg, d.cube.meta, d.train, d.valid.size())
                                                      : make_multibody_method(cfg, d.mb, d.train);
  const double lr = cfg.lr > 0 ? cfg.lr : method->default_lr();
  RunState st;
  st.theta = method->variables();
  AdamWSettings as;
  as.lr = lr;
  as.weight_decay = cfg.weight_decay >= 0 ? cfg.weight_decay : method->default_weight_decay();
  AdamW adam(static_cast<Eigen::Index>(st.theta.size()), as);

  // resume the run in the folder, or begin it
  const nlohmann::json saved = dir.open_checkpoint(config);
  if (!cfg.system.empty()) keep_system_copy(cfg.out, cfg.system, d.mb.system, saved.is_object());
  if (saved.is_object()) {
    dir.restore(saved, config, *method, adam, d.train.size(), d.valid.size(), st);
    st.res.early_stopped = st.res.early_stopped && st.since_best >= cfg.patience;
    if (cfg.max_seconds > 0 && st.seconds_before >= cfg.max_seconds)
      dir.log(cfg.out + " is finished: its time budget is spent (" + format_seconds(st.seconds_before) +
              " of --max-seconds " + format_seconds(cfg.max_seconds) + "); a larger --max-seconds continues it");
    else
      dir.log("resuming " + cfg.out + " after epoch " + std::to_string(st.epochs_done));
    // a resumed run's readable outputs are derived from its checkpoint: written
    // again, so that a kill between checkpoint and outputs, or a damaged file,
    // leaves nothing stale
    dir.write_outputs(st, cfg);
  } else {
    dir.begin(config, method->params_json(), cfg.method);
    dir.log("run " + cfg.out + ": " + cfg.method + (cfg.system.empty() ? "" : " (" + cfg.system + ")") + " on " +
            cfg.data + " (" + d.format + ", " + std::to_string(d.count) + " tosses), train " +
            std::to_string(d.split.train.size()) + " tosses / " + std::to_string(d.train.size()) +
            " transitions, valid " + std::to_string(d.split.valid.size()) + " / " + std::to_string(d.valid.size()) +
            ", seed " + std::to_string(cfg.seed));
  }

  std::vector<int> valid_idx(d.valid.size());
  for (int i = 0; i < d.valid.size(); ++i) valid_idx[i] = i;
  // --select rollout: the validation tosses rolled out from their first states
  // and compared with their positions (both as recorded, smoothed or not)
  const bool by_rollout = cfg.select == "rollout";
  const auto valid_rollout = [&](const nlohmann::json& params) {
    return multibody_rollout_position_error(d.mb.system, cfg.method, params, d.tosses, d.split.valid, cfg.threads);
  };
  const auto validation_loss = [&](BatchStats& vs) {
    return method->loss(d.valid, valid_idx, 1, nullptr, vs) / std::max(1, d.valid.size());
  };
  const auto t_run = std::chrono::steady_clock::now();
  const auto seconds_used = [&] {
    return st.seconds_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - t_run).count();
  };
  const auto out_of_time = [&] { return cfg.max_seconds > 0 && seconds_used() >= cfg.max_seconds; };

  // epoch 0 is the initial model's validation loss (no training step)
  if (st.epochs_done == 0 && st.res.history.empty()) {
    BatchStats vs;
    EpochRecord r;
    r.valid_loss = validation_loss(vs);
    r.mean_qp_iterations = vs.qp_count ? double(vs.qp_iterations) / vs.qp_count : 0;
    r.not_solved = vs.not_solved;
    st.best_params = method->params_json();
    if (by_rollout) r.valid_rollout_m = valid_rollout(st.best_params);
    st.res.history.push_back(r);
    st.res.best_valid = by_rollout ? r.valid_rollout_m : r.valid_loss;
    st.res.best_epoch = 0;
    dir.log("epoch 0: valid loss " + std::to_string(r.valid_loss) +
            (by_rollout ? ", valid rollouts' position error " + std::to_string(r.valid_rollout_m) + " m" : ""));
  }

  bool stop_for_time = st.res.resumed && out_of_time();
  for (int epoch = st.epochs_done + 1; epoch <= cfg.max_epochs && !st.res.early_stopped && !stop_for_time; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    BatchStats ts, vs;
    EpochRecord r = train_pass(cfg, epoch, lr, d.train, *method, adam, st.theta, dir, ts);
    r.valid_loss = validation_loss(vs);
    nlohmann::json params;  // the readable model: needed for rollouts, else only when best
    if (by_rollout) {
      params = method->params_json();
      r.valid_rollout_m = valid_rollout(params);
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    st.res.history.push_back(r);
    const double figure = by_rollout ? r.valid_rollout_m : r.valid_loss;
    if (figure < st.res.best_valid) {
      st.res.best_valid = figure;
      st.res.best_epoch = epoch;
      st.best_params = by_rollout ? std::move(params) : method->params_json();
      st.since_best = 0;
    } else {
      ++st.since_best;
    }
    if (st.since_best >= cfg.patience) st.res.early_stopped = true;
    if (cfg.progress && isatty(fileno(stderr))) std::fprintf(stderr, "\r%*s\r", 90, "");
    dir.log(epoch_line(r, by_rollout, st.res.best_epoch == epoch));
    if (st.res.early_stopped)
      dir.log(std::string("early stop: no better validation ") + (by_rollout ? "rollout error" : "loss") + " for " +
              std::to_string(cfg.patience) + " epochs");
    // checkpoint (atomic), then the readable outputs
    stop_for_time = out_of_time();
    dir.write_checkpoint(checkpoint_json(st, adam, epoch, config, seconds_used(), stop_for_time && !st.res.early_stopped),
                         *method, epoch);
    dir.write_outputs(st, cfg);
    if (stop_for_time && !st.res.early_stopped)
      dir.log("time budget spent after epoch " + std::to_string(epoch) + " (" + format_seconds(seconds_used()) +
              " of --max-seconds " + format_seconds(cfg.max_seconds) + "): the run is finished; a larger --max-seconds "
              "or more --epochs continues it");
  }
  if (!std::filesystem::exists(dir.path("params.json"))) dir.write_outputs(st, cfg);
  return st.res;
}

namespace {
// a trained ContactNets model (Polytope or Deep), rolled out by Stewart-Trinkle
template <class Model>
class ContactTrained : public TrainedModel {
 public:
  ContactTrained(std::string method, Model model) : method_(std::move(method)), model_(std::move(model)) {}
  std::string method() const override { return method_; }
  const ContactModel* contact_model() const override { return &model_; }

 private:
  std::string method_;
  Model model_;
};

class EndToEndTrained : public TrainedModel {
 public:
  EndToEndTrained(Mlp net, double L) : net_(std::move(net)), L_(L) {}
  std::string method() const override { return "end-to-end"; }
  const ContactModel* contact_model() const override { return nullptr; }
  Vec6 contact_impulse(const State& x) const override {
    Vec6 F = net_(e2e_features(x));
    F.head<3>() *= L_;
    F.tail<3>() *= L_ * L_;
    return F;
  }

 private:
  Mlp net_;
  double L_;
};
}  // namespace

RunInfo load_run(const std::string& run_dir, const std::string& params_file) {
  RunInfo info;
  const nlohmann::json cj = read_json_file((fs::path(run_dir) / "config.json").string());
  info.config = TrainConfig::from_json(cj);
  info.config.out = run_dir;
  try {
    const auto& m = cj.at("meta");
    info.meta.dt = m.at("dt");
    info.meta.mass = m.at("mass");
    info.meta.inertia = m.at("inertia").get<std::array<double, 3>>();
    info.meta.gravity = m.at("gravity");
    info.meta.half_width = m.at("half_width");
    info.meta.mu = m.at("mu");
    const auto& s = cj.at("split");
    info.split.train = s.at("train").get<std::vector<int>>();
    info.split.valid = s.at("valid").get<std::vector<int>>();
    info.split.test = s.at("test").get<std::vector<int>>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(run_dir + "/config.json: " + e.what());
  }
  const nlohmann::json pj = read_json_file((fs::path(run_dir) / params_file).string());
  const std::string method = pj.value("method", info.config.method);
  if (method == "contactnets-polytope")
    info.model = std::make_unique<ContactTrained<PolytopeModel>>(method, PolytopeModel(polytope_from_json(pj)));
  else if (method == "contactnets-deep")
    info.model = std::make_unique<ContactTrained<DeepContactModel>>(
        method, DeepContactModel(polytope_from_json(pj), pj.at("length_unit").get<double>(),
                                 Mlp::from_json(pj.at("network"))));
  else if (method == "end-to-end")
    info.model = std::make_unique<EndToEndTrained>(Mlp::from_json(pj.at("network")),
                                                   pj.at("length_unit").get<double>());
  else
    throw Error(run_dir + "/" + params_file + ": method '" + method + "' cannot be loaded by this build");
  return info;
}

RunCheck check_run(const std::string& run_dir) {
  RunCheck c;
  const fs::path dir(run_dir);
  if (!fs::is_directory(dir)) throw Error(run_dir + ": not a directory");
  const auto problem = [&](const std::string& p) { c.problems.push_back(p); };
  if (fs::exists(dir / "failure.json")) {
    std::string why = "see log.txt";
    try {
      why = read_json_file((dir / "failure.json").string()).value("error", why);
    } catch (const Error&) {
    }
    problem("the training failed: " + why + " (the same command fails the same way)");
  }
  TrainConfig cfg;
  try {
    cfg = TrainConfig::from_json(read_json_file((dir / "config.json").string()));
  } catch (const Error& e) {
    problem(std::string("config.json: ") + e.what());
    return c;
  }
  nlohmann::json ck;
  try {
    ck = read_json_file((dir / "checkpoint.json").string());
  } catch (const Error& e) {
    problem(std::string("checkpoint.json: ") + e.what() + " (the run cannot be resumed or verified)");
    return c;
  }
  try {
    c.epochs_done = ck.at("epochs_done").get<int>();
    const bool stopped = ck.at("stopped").get<bool>();
    const double used = ck.value("seconds_used", 0.0);
    if (stopped)
      c.finished_by = "early stop";
    else if (c.epochs_done >= cfg.max_epochs)
      c.finished_by = "all epochs done";
    else if (cfg.max_seconds > 0 && used >= cfg.max_seconds)
      c.finished_by = "time budget spent (--max-seconds " + format_seconds(cfg.max_seconds) + ")";
    c.finished = !c.finished_by.empty();
    if (ck.contains("config")) {
      if (const std::string diff = config_difference(ck["config"], read_json_file((dir / "config.json").string()));
          !diff.empty())
        problem("config.json differs from the checkpoint's configuration (" + diff + ")");
    }
    const std::vector<EpochRecord> hist = history_from_json(ck.at("history"));
    const nlohmann::json want = params_json_of(ck.at("best_params"), cfg, ck.at("best_epoch").get<int>(),
                                               ck.at("best_valid").get<double>());
    nlohmann::json have;
    bool readable = true;
    try {
      have = read_json_file((dir / "params.json").string());
    } catch (const Error& e) {
      readable = false;
      problem(std::string("params.json: ") + e.what());
    }
    if (readable && have != want) problem("params.json differs from the checkpoint's best model");
    const fs::path hp = dir / "history.csv";
    if (!fs::exists(hp))
      problem("history.csv is missing");
    else if (read_text_file(hp.string()) != history_csv(hist))
      problem("history.csv differs from the checkpoint's history");
  } catch (const nlohmann::json::exception& e) {
    problem(std::string("checkpoint.json: corrupt (") + e.what() + ")");
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp.") != std::string::npos)
      problem(name + ": an interrupted write (a rerun of the training removes it)");
  }
  if (!fs::exists(cfg.data)) c.notes.push_back("its data " + cfg.data + " is not here (eval needs it)");
  if (FileLock::held_elsewhere((dir / ".lock").string())) c.notes.push_back("a training is writing it now");
  return c;
}

}  // namespace impulse
