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
#include "io/zip.h"

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

namespace {

std::vector<EpochRecord> history_from_json(const nlohmann::json& hist) {
  std::vector<EpochRecord> out;
  for (const auto& h : hist) {
    EpochRecord r;
    r.epoch = h.at("epoch");
    r.train_loss = h.at("train_loss");
    r.valid_loss = h.at("valid_loss");
    r.seconds = h.at("seconds");
    r.train_seconds = h.value("train_seconds", 0.0);
    r.valid_rollout_m = h.contains("valid_position_error_m") ? h["valid_position_error_m"].get<double>() : NAN;
    r.mean_qp_iterations = h.at("mean_qp_iterations");
    r.slowest_qp_iterations = h.value("slowest_qp_iterations", 0.0);
    r.slowest_qp_rho_updates = h.value("slowest_qp_rho_updates", 0.0);
    r.not_solved = h.at("not_solved");
    out.push_back(r);
  }
  return out;
}

// history.csv and params.json as derived from a checkpoint (train writes them,
// check_run verifies them)
// (a last column valid_position_error_m when the run selects by rollouts)
std::string history_csv(const std::vector<EpochRecord>& history) {
  bool rollout = false;
  for (const auto& r : history) rollout = rollout || std::isfinite(r.valid_rollout_m);
  std::ostringstream h;
  h << "epoch,train_loss,valid_loss,seconds,train_seconds,mean_qp_iterations,slowest_qp_iterations,"
       "slowest_qp_rho_updates,not_solved"
    << (rollout ? ",valid_position_error_m" : "") << '\n';
  h << std::setprecision(10);
  for (const auto& r : history) {
    h << r.epoch << ',' << r.train_loss << ',' << r.valid_loss << ',' << r.seconds << ',' << r.train_seconds << ','
      << r.mean_qp_iterations << ',' << r.slowest_qp_iterations << ',' << r.slowest_qp_rho_updates << ','
      << r.not_solved;
    if (rollout) h << ',' << r.valid_rollout_m;
    h << '\n';
  }
  return h.str();
}

nlohmann::json params_json_of(nlohmann::json best_params, const TrainConfig& cfg, int best_epoch, double best_valid) {
  best_params["method"] = cfg.method;
  best_params["best_epoch"] = best_epoch;
  best_params[cfg.select == "rollout" ? "best_valid_position_error_m" : "best_valid_loss"] = best_valid;
  return best_params;
}

std::string canonical_path(const std::string& p) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(fs::path(p), ec);
  return ec ? p : c.lexically_normal().string();
}

// The keys in which two run configurations differ ("" when they are the same
// run): a run may be continued for more epochs, more patience or a longer time
// budget, and its data path is compared as the same folder however it is written.
std::string config_difference(nlohmann::json a, nlohmann::json b) {
  for (nlohmann::json* j : {&a, &b}) {
    for (const char* key : {"max_epochs", "patience", "max_seconds"}) j->erase(key);
    if (j->contains("data") && (*j)["data"].is_string()) (*j)["data"] = canonical_path((*j)["data"].get<std::string>());
  }
  if (a == b) return "";
  std::string diff;
  for (auto it = b.begin(); it != b.end(); ++it)
    if (!a.contains(it.key()) || a[it.key()] != it.value()) diff += (diff.empty() ? "" : ", ") + it.key();
  for (auto it = a.begin(); it != a.end(); ++it)
    if (!b.contains(it.key())) diff += (diff.empty() ? "" : ", ") + it.key();
  return diff.empty() ? "fields" : diff;
}

// temporaries of atomic writes (NAME.tmp.PID) left by a killed process: with
// the run's lock held nobody else writes here
void remove_stale_temporaries(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp.") != std::string::npos) fs::remove(e.path(), ec);
  }
}

}  // namespace

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

namespace {

// ---- methods ------------------------------------------------------------------

class ContactNetsMethod : public Method {
 public:
  // device_assembly: keep the transitions on the GPU and assemble, solve and
  // differentiate there (the Polytope model); otherwise assemble on the CPU and
  // solve on the backend of `opt`.
  ContactNetsMethod(std::unique_ptr<LearnableContactModel> model, ContactNetsLossConfig cfg,
                    QpSettings<double> st, BatchOptions opt, int n_train, int n_valid,
                    bool device_assembly = false)
      : model_(std::move(model)), loss_(cfg, st, opt),
        scale_(model_->parameter_scale(cfg.length_unit)) {
    warm_[0].resize(n_train);
    warm_[1].resize(n_valid);
    if (device_assembly)
      device_ = std::make_unique<cuda::DeviceContactNets<double>>(loss_consts(cfg), st, opt.device_layout);
  }
  std::vector<double> variables() const override {
    std::vector<double> v = model_->parameters();
    for (size_t i = 0; i < v.size(); ++i) v[i] /= scale_[i];
    return v;
  }
  void set_variables(const std::vector<double>& v) override {
    std::vector<double> th(v.size());
    for (size_t i = 0; i < v.size(); ++i) th[i] = v[i] * scale_[i];
    model_->set_parameters(th);
  }
  double loss(const Transitions& t, const std::vector<int>& idx, int set,
              GradVector* grad, BatchStats& stats) override {
    const int B = static_cast<int>(idx.size());
    if (device_) return device_loss(t, idx, set, grad, stats);
    frames_.resize(B);
    warm_batch_.resize(B);
    for (int i = 0; i < B; ++i) {
      frames_[i].x = t.x[idx[i]];
      frames_[i].x_next = t.xn[idx[i]];
    }
    model_->frames(frames_, loss_.options().threads);
    for (int i = 0; i < B; ++i) warm_batch_[i].swap(warm_[set][idx[i]]);
    LossBatchResult r;
    loss_.evaluate(frames_, grad != nullptr, r, &warm_batch_);
    for (int i = 0; i < B; ++i) warm_[set][idx[i]].swap(warm_batch_[i]);
    stats.qp_iterations += r.iterations;
    stats.qp_count += B;
    stats.not_solved += r.not_solved;
    stats.slowest_iterations += r.max_iterations, stats.slowest_rho_updates += r.max_rho_updates;
    ++stats.slowest_calls;
    double sum = 0;
    for (int i = 0; i < B; ++i) sum += r.qp_loss[i] + r.reg_loss[i];
    if (grad) {
      std::vector<double> g(model_->parameter_count(), 0.0);
      model_->backprop_batch(frames_, r.grad, g.data());
      for (size_t j = 0; j < g.size(); ++j) (*grad)[j] += g[j] * scale_[j];
    }
    return sum;
  }
  nlohmann::json params_json() const override { return model_->to_json(); }
  double device_loss(const Transitions& t, const std::vector<int>& idx, int set,
                     GradVector* grad, BatchStats& stats) {
    if (uploaded_[set] != &t) {
      std::vector<double> xs(size_t(t.size()) * 13), xns(size_t(t.size()) * 13);
      for (int i = 0; i < t.size(); ++i)
        for (int e = 0; e < 13; ++e) xs[size_t(i) * 13 + e] = t.x[i](e), xns[size_t(i) * 13 + e] = t.xn[i](e);
      device_->upload_transitions(set, xs.data(), xns.data(), t.size());
      uploaded_[set] = &t;
      device_warm_.uploaded(*device_, set);
    }
    const std::vector<double> theta = model_->parameters();
    std::vector<double> loss(idx.size()), g(theta.size());
    const cuda::DeviceLossStats st = device_->evaluate(set, theta.data(), idx.data(),
                                                       static_cast<int>(idx.size()), loss.data(),
                                                       grad ? g.data() : nullptr);
    stats.qp_iterations += st.iterations;
    stats.qp_count += static_cast<int>(idx.size());
    stats.not_solved += st.not_solved;
    stats.slowest_iterations += st.max_iterations, stats.slowest_rho_updates += st.max_rho_updates;
    ++stats.slowest_calls;
    if (grad)
      for (size_t j = 0; j < g.size(); ++j) (*grad)[j] += g[j] * scale_[j];
    double sum = 0;
    for (double v : loss) sum += v;
    return sum;
  }
  // with the device, they live there (a checkpoint of a GPU run holds them as a CPU
  // run's: a resumed run continues bit for bit)
  NpyArray warm_starts(int set) const override {
    return device_ ? device_warm_.rows(*device_, set, uploaded_[set] != nullptr) : warm_rows(warm_[set]);
  }
  void set_warm_starts(int set, const NpyArray& a) override {
    std::vector<std::vector<double>> w = warm_from_rows(a, int64_t(warm_[set].size()));
    if (device_) device_warm_.put(*device_, set, uploaded_[set] != nullptr, std::move(w));
    else warm_[set] = std::move(w);
  }
  // the paper used 5e-4 with one transition per step; with 64 per step 5e-3
  // reaches the same validation loss in far fewer epochs (checked on the
  // synthetic and real tosses)
  double default_lr() const override { return 5e-3; }
  double default_weight_decay() const override { return 0.0; }

 private:
  std::unique_ptr<LearnableContactModel> model_;
  ContactNetsLoss loss_;
  std::vector<double> scale_;
  std::vector<std::vector<double>> warm_[2];
  std::vector<std::vector<double>> warm_batch_;
  std::vector<TransitionFrame> frames_;
  std::unique_ptr<cuda::DeviceContactNets<double>> device_;
  const Transitions* uploaded_[2] = {nullptr, nullptr};
  DeviceWarmStarts<cuda::DeviceContactNets<double>> device_warm_;
};


// End-to-end baseline (paper Sec. 5.2.3): an MLP on [p, vec R, v, ω] predicting
// the contact impulse F_c (ν coordinates, in the loss's length unit), trained on
// ‖F_data − F̂‖² per transition; inputs normalized by the training set.
Eigen::VectorXd e2e_features(const State& x) {
  Eigen::VectorXd f(18);
  f.head<3>() = x.segment<3>(0);
  const Eigen::Matrix3d R = rotation(x);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) f(3 + 3 * r + c) = R(r, c);
  f.segment<6>(12) = x.segment<6>(7);
  return f;
}

// F_data = M(ν' − ν) − F_s in units of `L` (linear /L, angular /L²).
Vec6 observed_impulse(const State& x, const State& xn, const BodyParams& body, double dt, double L) {
  Vec6 F = body.mass_matrix() * (velocity(xn) - velocity(x)) - smooth_impulse(x, body, dt);
  F.head<3>() /= L;
  F.tail<3>() /= L * L;
  return F;
}

MlpConfig e2e_config() {
  MlpConfig c;
  c.input_size = 18;
  c.hidden_sizes = {256, 256, 256, 256};
  c.output_size = 6;
  c.activation = Activation::kRelu;
  return c;
}

class EndToEndMethod : public Method {
 public:
  EndToEndMethod(const Transitions& train, const BodyParams& body, double dt, double L, uint64_t seed)
      : body_(body), dt_(dt), L_(L) {
    MlpConfig c = e2e_config();
    // input normalization from the training transitions
    Eigen::VectorXd mean = Eigen::VectorXd::Zero(18), sq = Eigen::VectorXd::Zero(18);
    for (int i = 0; i < train.size(); ++i) {
      const Eigen::VectorXd f = e2e_features(train.x[i]);
      mean += f;
      sq += f.cwiseProduct(f);
    }
    const double n = std::max(1, train.size());
    mean /= n;
    Eigen::VectorXd sd = (sq / n - mean.cwiseProduct(mean)).cwiseMax(0.0).cwiseSqrt();
    for (int i = 0; i < 18; ++i) sd(i) = std::max(sd(i), 1e-6);
    c.input_mean = mean;
    c.input_std = sd;
    MlpInit init;
    init.seed = seed;
    net_ = Mlp(c, init);
  }
  std::vector<double> variables() const override {
    return std::vector<double>(net_.params().data(), net_.params().data() + net_.params().size());
  }
  void set_variables(const std::vector<double>& v) override {
    net_.params() = Eigen::Map<const Eigen::VectorXd>(v.data(), Eigen::Index(v.size()));
  }
  double loss(const Transitions& t, const std::vector<int>& idx, int, GradVector* grad,
              BatchStats&) override {
    const int B = static_cast<int>(idx.size());
    X_.resize(18, B);
    F_.resize(6, B);
    Y_.resize(6, B);
    for (int i = 0; i < B; ++i) {
      X_.col(i) = e2e_features(t.x[idx[i]]);
      F_.col(i) = observed_impulse(t.x[idx[i]], t.xn[idx[i]], body_, dt_, L_);
    }
    net_.forward(X_, Y_, ws_);
    const Eigen::MatrixXd r = Y_ - F_;
    if (grad) {
      Eigen::Map<Eigen::VectorXd> g(grad->data(), Eigen::Index(grad->size()));
      const Eigen::MatrixXd dY = 2.0 * r;
      net_.backward(ws_, dY, g);
    }
    return r.squaredNorm();
  }
  nlohmann::json params_json() const override {
    nlohmann::json j;
    j["network"] = net_.to_json();
    j["length_unit"] = L_;
    j["output"] = "contact impulse in nu coordinates; linear / length_unit, angular / length_unit^2";
    return j;
  }
  // ten times the paper's 3e-5, as for ContactNets, for 64-transition steps
  double default_lr() const override { return 3e-4; }
  double default_weight_decay() const override { return 1e-3; }

 private:
  BodyParams body_;
  double dt_, L_;
  Mlp net_;
  MlpWorkspace ws_;
  Eigen::MatrixXd X_, F_, Y_;
};

std::unique_ptr<Method> make_method(const TrainConfig& c, const TossMeta& meta,
                                    const Transitions& train, int n_valid) {
  const int n_train = train.size();
  if (c.method == "end-to-end")
    return std::make_unique<EndToEndMethod>(train, body_from_meta(meta), meta.dt, meta.half_width,
                                            c.seed * 7919 + 2);
  ContactNetsLossConfig lc;
  lc.friction = c.friction == "octagon" ? FrictionModel::kOctagon : FrictionModel::kCone;
  lc.length_unit = meta.half_width;
  lc.dt = meta.dt;
  lc.body = body_from_meta(meta);
  QpSettings<double> st;
  st.eps_abs = c.eps;
  st.eps_rel = c.eps;
  // the loss QP's P is PSD by construction (QpSettings::check_psd; tested in
  // ContactNetsLoss.AssembledPIsPositiveSemidefinite): no factorization of it per solve
  st.check_psd = false;
  BatchOptions opt;
  opt.threads = c.threads;
  opt.backend = parse_backend(c.backend);
  opt.device_layout = cuda::parse_device_layout(c.layout);
  const std::vector<double> truth = true_polytope_parameters(meta);
  const PolytopeParams init =
      perturb_polytope(PolytopeParams::unpack(truth.data()), c.init_noise, c.seed * 7919 + 1);
  if (c.method == "contactnets-polytope")
    return std::make_unique<ContactNetsMethod>(std::make_unique<PolytopeContactModel>(init), lc,
                                               st, opt, n_train, n_valid,
                                               opt.backend == Backend::kCuda);
  return std::make_unique<ContactNetsMethod>(
      std::make_unique<DeepContactModel>(init, meta.half_width, c.seed * 7919 + 3), lc, st, opt,
      n_train, n_valid);
}

std::string format_seconds(double s) {
  char buf[32];
  if (s < 120) std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 7200) std::snprintf(buf, sizeof buf, "%.1fmin", s / 60);
  else std::snprintf(buf, sizeof buf, "%.1fh", s / 3600);
  return buf;
}

}  // namespace

std::vector<double> true_polytope_parameters(const TossMeta& meta) {
  return PolytopeParams::cube(meta.half_width, meta.mu).pack();
}

Vec6 TrainedModel::contact_impulse(const State&) const { return Vec6::Zero(); }

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
  {
    std::error_code ec;
    fs::create_directories(cfg.out, ec);
    if (ec) throw Error("--out " + cfg.out + ": cannot create the run directory (" + ec.message() + ")");
  }
  // one writer per run directory: a second training into it is refused
  const FileLock lock((fs::path(cfg.out) / ".lock").string(), cfg.out, "another training",
                      "wait for it to finish or choose another --out");
  remove_stale_temporaries(cfg.out);
  std::ofstream logf(fs::path(cfg.out) / "log.txt", std::ios::app);
  if (!logf) throw Error("--out " + cfg.out + ": cannot write log.txt there");
  auto log = [&](const std::string& line) {
    log_out << line << std::endl;
    logf << line << std::endl;
  };
  const bool tty = cfg.progress && isatty(fileno(stderr));

  // the data: cube tosses (ContactNets path) or multibody tosses (CCN family)
  TossSet data;
  SystemTossSet mdata;
  MultibodyData mb;
  int n_tosses = 0;
  std::string data_format;
  if (cfg.system.empty()) {
    data = load_tosses(cfg.data, cfg.dt);
    n_tosses = static_cast<int>(data.tosses.size());
    data_format = data.format;
  } else {
    mb.system = load_system(cfg.system);
    mdata = load_system_tosses(cfg.data, mb.system.width(), cfg.dt);
    mb.dt = mdata.dt;
    mb.synthetic = mdata.format == "impulse-multibody";
    // the transitions' velocities only: a toss's first row (its window is that
    // row alone) and every position stay as recorded, which is all a rollout uses
    if (cfg.smooth_velocities < 0) {
      cfg.smooth_velocities = mb.synthetic ? 0 : 3;
      log(std::string("smoothing velocities over 2H+1 rows, H = ") + std::to_string(cfg.smooth_velocities) +
          (mb.synthetic ? " (the default for simulated tosses)" : " (the default for recorded tosses; --smooth-velocities 0 trains on them as recorded)"));
    }
    smooth_velocities(mdata, cfg.smooth_velocities);
    n_tosses = static_cast<int>(mdata.tosses.size());
    data_format = mdata.format;
  }
  if (n_tosses < 3)
    throw Error(cfg.data + ": need at least 3 tosses to split, found " + std::to_string(n_tosses));
  const TossSplit split = split_tosses(n_tosses, cfg.seed, {0.5, 0.3, 0.2}, cfg.tosses);
  if (cfg.tosses > 0 && static_cast<int>(split.train.size()) < cfg.tosses)
    log("note: --tosses " + std::to_string(cfg.tosses) + " asked, the training split has " +
        std::to_string(split.train.size()));
  const auto multibody_transitions = [&](const std::vector<int>& tosses) {
    Transitions t;
    const int W = mb.system.width();
    for (int i : tosses) {
      const SystemToss& s = mdata.tosses[static_cast<size_t>(i)];
      for (int k = 0; k + 1 < s.steps(W); ++k) {
        t.mx.push_back(Eigen::Map<const Eigen::VectorXd>(s.rows.data() + static_cast<size_t>(W) * k, W));
        t.mxn.push_back(Eigen::Map<const Eigen::VectorXd>(s.rows.data() + static_cast<size_t>(W) * (k + 1), W));
      }
    }
    return t;
  };
  const Transitions train_set = cfg.system.empty() ? transitions_of(data, split.train) : multibody_transitions(split.train);
  const Transitions valid_set = cfg.system.empty() ? transitions_of(data, split.valid) : multibody_transitions(split.valid);

  nlohmann::json config_json = config_json_of(cfg);
  config_json["data_format"] = data_format;
  if (cfg.system.empty()) {
    config_json["meta"] = {{"dt", data.meta.dt},           {"mass", data.meta.mass},
                           {"inertia", data.meta.inertia}, {"gravity", data.meta.gravity},
                           {"half_width", data.meta.half_width}, {"mu", data.meta.mu}};
  } else {
    config_json["meta"] = {{"dt", mb.dt}, {"width", mb.system.width()}};
  }
  config_json["split"] = {{"train", split.train}, {"valid", split.valid}, {"test", split.test}};
  const fs::path config_path = fs::path(cfg.out) / "config.json";
  const fs::path ckpt_path = fs::path(cfg.out) / "checkpoint.json";

  std::unique_ptr<Method> method = cfg.system.empty() ? make_method(cfg, data.meta, train_set, valid_set.size())
                                                      : make_multibody_method(cfg, mb, train_set);
  const double lr = cfg.lr > 0 ? cfg.lr : method->default_lr();
  const double wd = cfg.weight_decay >= 0 ? cfg.weight_decay : method->default_weight_decay();
  std::vector<double> theta = method->variables();
  AdamWSettings as;
  as.lr = lr;
  as.weight_decay = wd;
  AdamW adam(static_cast<Eigen::Index>(theta.size()), as);

  TrainResult res;
  int start_epoch = 0, since_best = 0;
  nlohmann::json best_params;
  // a run directory with results but no checkpoint cannot be continued, and is
  // never trained over (its results would be lost)
  if (!fs::exists(ckpt_path)) {
    for (const char* f : {"params.json", "history.csv"})
      if (fs::exists(fs::path(cfg.out) / f))
        throw Error(cfg.out + " holds results (" + f + ") but no checkpoint.json, so it cannot be resumed; "
                    "choose another --out, or remove the directory to start over");
  }
  // The configuration a resume must match: the checkpoint's own copy (a deleted or
  // edited config.json proves nothing), else, for a checkpoint of an older impulse,
  // config.json. Nothing is written before this check passes.
  nlohmann::json saved;
  if (fs::exists(ckpt_path)) {
    try {
      saved = read_json_file(ckpt_path.string());
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + "; the run cannot be resumed from a damaged checkpoint: move " + cfg.out +
                  " aside (or remove it) to train this run again");
    }
  }
  nlohmann::json reference;
  std::string reference_name;
  if (saved.is_object() && saved.contains("config")) {
    reference = saved["config"];
    reference_name = "its checkpoint";
  } else if (fs::exists(config_path)) {
    reference = read_json_file(config_path.string());
    reference_name = "config.json";
  } else if (saved.is_object()) {
    throw Error(cfg.out + " holds a checkpoint but no config.json, and the checkpoint (of an older impulse) does not "
                "record the configuration, so a resume cannot be proven to be the same run; restore config.json, or "
                "remove the directory to start over");
  }
  if (!reference.is_null()) {
    if (const std::string diff = config_difference(reference, config_json); !diff.empty())
      throw Error(cfg.out + " holds a run with a different configuration (" + diff + " differ from " + reference_name +
                  "); choose another --out or the same settings to resume");
  }
  // a run that failed for a reason the same command meets again is not retried
  const fs::path failure_path = fs::path(cfg.out) / "failure.json";
  if (fs::exists(failure_path)) {
    std::string why = "see its log.txt";
    try {
      why = read_json_file(failure_path.string()).value("error", why);
    } catch (const Error&) {
    }
    throw Error(cfg.out + " failed before with this configuration (" + why +
                "); the same command fails the same way: change the option it names, with another --out");
  }
  double seconds_before = 0;  // the time budget already spent, over every session of the run
  if (saved.is_object()) {
    const nlohmann::json& ck = saved;
    write_text_atomic(config_path.string(), config_json.dump(2) + "\n");
    try {
      theta = ck.at("theta").get<std::vector<double>>();
      adam = AdamW::from_json(ck.at("adam"));
      start_epoch = ck.at("epochs_done").get<int>();
      since_best = ck.at("since_best").get<int>();
      res.best_epoch = ck.at("best_epoch").get<int>();
      res.best_valid = ck.at("best_valid").get<double>();
      best_params = ck.at("best_params");
      res.early_stopped = ck.at("stopped").get<bool>();
      res.history = history_from_json(ck.at("history"));
      seconds_before = ck.value("seconds_used", 0.0);
    } catch (const nlohmann::json::exception& e) {
      throw Error(ckpt_path.string() + ": corrupt checkpoint (" + e.what() + "); move " + cfg.out +
                  " aside (or remove it) to train this run again");
    }
    if (theta.size() != method->variables().size())
      throw Error(ckpt_path.string() + ": parameter count differs from the method's");
    method->set_variables(theta);
    // a warm-start file the checkpoint does not name is an orphan of an interrupted write
    for (const auto& e : fs::directory_iterator(cfg.out)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("warm_starts_", 0) == 0 && name != ck.value("warm_file", std::string())) {
        std::error_code ec;
        fs::remove(e.path(), ec);
      }
    }
    if (ck.contains("warm_file")) {
      const fs::path wf = fs::path(cfg.out) / ck["warm_file"].get<std::string>();
      if (fs::exists(wf)) {
        const NpzArchive wa = read_npz(wf.string());
        const NpyArray& wt = npz_get(wa, "train", wf.string());
        const NpyArray& wv = npz_get(wa, "valid", wf.string());
        for (const auto& [a, n, name] : {std::tuple<const NpyArray&, int, const char*>{wt, train_set.size(), "train"},
                                         {wv, valid_set.size(), "valid"}})
          if (a.shape.size() != 2 || (a.shape[0] != n && a.shape[0] != 0))  // (0 rows: none kept)
            throw Error(wf.string() + ": '" + name + "' holds " + shape_string(a.shape) + " warm starts for " +
                        std::to_string(n) + " transitions");
        if (wt.shape[0] > 0) method->set_warm_starts(0, wt);
        if (wv.shape[0] > 0) method->set_warm_starts(1, wv);
      } else {
        log("note: " + wf.string() + " is missing; the QPs start cold (results may differ in rounding)");
      }
    }
    res.early_stopped = res.early_stopped && since_best >= cfg.patience;
    res.resumed = true;
    if (cfg.max_seconds > 0 && seconds_before >= cfg.max_seconds)
      log(cfg.out + " is finished: its time budget is spent (" + format_seconds(seconds_before) + " of --max-seconds " +
          format_seconds(cfg.max_seconds) + "); a larger --max-seconds continues it");
    else
      log("resuming " + cfg.out + " after epoch " + std::to_string(start_epoch));
  } else {
    write_text_atomic(config_path.string(), config_json.dump(2) + "\n");
    nlohmann::json ij = method->params_json();
    ij["method"] = cfg.method;
    write_text_atomic((fs::path(cfg.out) / "init_params.json").string(), ij.dump(2) + "\n");
    log("run " + cfg.out + ": " + cfg.method + (cfg.system.empty() ? "" : " (" + cfg.system + ")") + " on " +
        cfg.data + " (" + data_format + ", " + std::to_string(n_tosses) + " tosses), train " + std::to_string(split.train.size()) +
        " tosses / " + std::to_string(train_set.size()) + " transitions, valid " +
        std::to_string(split.valid.size()) + " / " + std::to_string(valid_set.size()) + ", seed " +
        std::to_string(cfg.seed));
  }

  std::vector<int> valid_idx(valid_set.size());
  for (int i = 0; i < valid_set.size(); ++i) valid_idx[i] = i;
  // --select rollout: the validation tosses rolled out from their first states
  // and compared with their positions (both as recorded, smoothed or not)
  const bool by_rollout = cfg.select == "rollout";
  const auto valid_rollout = [&](const nlohmann::json& params) {
    return multibody_rollout_position_error(mb.system, cfg.method, params, mdata, split.valid, cfg.threads);
  };
  const auto t_run = std::chrono::steady_clock::now();
  std::ofstream hist;
  const fs::path hist_path = fs::path(cfg.out) / "history.csv";
  auto write_history = [&]() { write_text_atomic(hist_path.string(), history_csv(res.history)); };
  // the readable outputs: the best model so far and the history
  auto write_outputs = [&]() {
    write_text_atomic((fs::path(cfg.out) / "params.json").string(),
                      params_json_of(best_params, cfg, res.best_epoch, res.best_valid).dump(2) + "\n");
    write_history();
  };

  // a resumed run's readable outputs are derived from its checkpoint: written
  // again, so that a kill between checkpoint and outputs, or a damaged file,
  // leaves nothing stale
  if (res.resumed) write_outputs();

  // epoch 0 is the initial model's validation loss (no training step)
  if (start_epoch == 0 && res.history.empty()) {
    BatchStats st;
    const double v = method->loss(valid_set, valid_idx, 1, nullptr, st) / std::max(1, valid_set.size());
    EpochRecord r;
    r.valid_loss = v;
    r.mean_qp_iterations = st.qp_count ? double(st.qp_iterations) / st.qp_count : 0;
    r.not_solved = st.not_solved;
    best_params = method->params_json();
    if (by_rollout) r.valid_rollout_m = valid_rollout(best_params);
    res.history.push_back(r);
    res.best_valid = by_rollout ? r.valid_rollout_m : v;
    res.best_epoch = 0;
    log("epoch 0: valid loss " + std::to_string(v) +
        (by_rollout ? ", valid rollouts' position error " + std::to_string(r.valid_rollout_m) + " m" : ""));
  }

  const auto seconds_used = [&] {
    return seconds_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - t_run).count();
  };
  const auto out_of_time = [&] { return cfg.max_seconds > 0 && seconds_used() >= cfg.max_seconds; };
  // a training that diverged is recorded (failure.json) and refused on a rerun
  const auto fail = [&](int epoch, const std::string& why) {
    write_text_atomic(failure_path.string(), nlohmann::json{{"epoch", epoch}, {"error", why}}.dump(2) + "\n");
    throw Error(why);
  };
  const auto check_finite = [&](int epoch, int step) {
    for (size_t i = 0; i < theta.size(); ++i)
      if (!std::isfinite(theta[i]) || std::abs(theta[i]) > 1e150) {
        char b[96];
        std::snprintf(b, sizeof b, "%.3g", lr);
        fail(epoch, "epoch " + std::to_string(epoch) + ", step " + std::to_string(step + 1) +
                        ": the parameters diverged (parameter " + std::to_string(i) + " is " +
                        std::to_string(theta[i]) + " after an AdamW step with learning rate " + b +
                        "); a smaller --lr (" + (cfg.lr > 0 ? "given" : "the method's default") + ": " + b + ")");
      }
  };
  bool stop_for_time = res.resumed && out_of_time();
  for (int epoch = start_epoch + 1; epoch <= cfg.max_epochs && !res.early_stopped && !stop_for_time; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<int> order = permutation(train_set.size(), cfg.seed * 1000003ULL + epoch);
    const int n_batches = (train_set.size() + cfg.batch_size - 1) / cfg.batch_size;
    BatchStats st;
    double train_sum = 0;
    std::vector<int> idx;
    GradVector grad(theta.size());
    for (int b = 0; b < n_batches; ++b) {
      idx.assign(order.begin() + size_t(b) * cfg.batch_size,
                 order.begin() + std::min<size_t>(order.size(), size_t(b + 1) * cfg.batch_size));
      std::fill(grad.begin(), grad.end(), 0.0);
      train_sum += method->loss(train_set, idx, 0, &grad, st);
      for (double& g : grad) g /= static_cast<double>(idx.size());
      adam.step(Eigen::Map<Eigen::VectorXd>(theta.data(), Eigen::Index(theta.size())),
                Eigen::Map<const Eigen::VectorXd>(grad.data(), Eigen::Index(grad.size())));
      check_finite(epoch, b);
      method->set_variables(theta);
      if (tty && (b % 20 == 0 || b + 1 == n_batches)) {
        const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double eta = el / (b + 1) * (n_batches - b - 1);
        std::fprintf(stderr, "\repoch %d/%d  batch %d/%d  train loss %.4g  epoch ETA %s   ", epoch,
                     cfg.max_epochs, b + 1, n_batches, train_sum / ((b + 1.0) * cfg.batch_size),
                     format_seconds(eta).c_str());
      }
    }
    const double train_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    BatchStats vs;
    const double valid = method->loss(valid_set, valid_idx, 1, nullptr, vs) / std::max(1, valid_set.size());
    EpochRecord r;
    r.epoch = epoch;
    r.train_loss = train_sum / std::max(1, train_set.size());
    r.valid_loss = valid;
    r.mean_qp_iterations = st.qp_count ? double(st.qp_iterations) / st.qp_count : 0;
    if (st.slowest_calls) {
      r.slowest_qp_iterations = double(st.slowest_iterations) / st.slowest_calls;
      r.slowest_qp_rho_updates = double(st.slowest_rho_updates) / st.slowest_calls;
    }
    r.not_solved = st.not_solved;
    nlohmann::json params;  // the readable model: needed for rollouts, else only when best
    if (by_rollout) {
      params = method->params_json();
      r.valid_rollout_m = valid_rollout(params);
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.train_seconds = train_seconds;
    res.history.push_back(r);
    const double figure = by_rollout ? r.valid_rollout_m : valid;
    if (figure < res.best_valid) {
      res.best_valid = figure;
      res.best_epoch = epoch;
      best_params = by_rollout ? std::move(params) : method->params_json();
      since_best = 0;
    } else {
      ++since_best;
    }
    if (since_best >= cfg.patience) res.early_stopped = true;
    if (tty) std::fprintf(stderr, "\r%*s\r", 90, "");
    char line[320], slowest[64] = "";
    if (r.slowest_qp_iterations > 0)
      std::snprintf(slowest, sizeof slowest, " (a step's slowest: %.1f)", r.slowest_qp_iterations);
    std::snprintf(line, sizeof line,
                  "epoch %d: train loss %.5g, valid loss %.5g%s%s, %.2fs (training %.2fs), %.1f QP iterations/transition%s%s",
                  epoch, r.train_loss, valid,
                  by_rollout ? (", valid rollouts " + std::to_string(r.valid_rollout_m) + " m").c_str() : "",
                  res.best_epoch == epoch ? " (best)" : "", r.seconds,
                  r.train_seconds,
                  r.mean_qp_iterations, slowest,
                  r.not_solved ? (", " + std::to_string(r.not_solved) + " QPs at the iteration cap").c_str() : "");
    log(line);
    if (res.early_stopped)
      log(std::string("early stop: no better validation ") + (by_rollout ? "rollout error" : "loss") + " for " +
          std::to_string(cfg.patience) + " epochs");
    // checkpoint (atomic), then the readable outputs
    nlohmann::json ck;
    ck["epochs_done"] = epoch;
    ck["theta"] = theta;
    ck["adam"] = adam.to_json();
    ck["since_best"] = since_best;
    ck["best_epoch"] = res.best_epoch;
    ck["best_valid"] = res.best_valid;
    ck["best_params"] = best_params;
    ck["stopped"] = res.early_stopped;
    // the time budget: spent over every session of the run, checked after each
    // epoch; a run that spent it is finished (check_run) until given a larger one
    stop_for_time = out_of_time();
    ck["seconds_used"] = seconds_used();
    ck["time_limited"] = stop_for_time && !res.early_stopped;
    ck["config"] = config_json;
    ck["history"] = nlohmann::json::array();
    for (const auto& h : res.history) {
      nlohmann::json e = {{"epoch", h.epoch}, {"train_loss", h.train_loss},
                          {"valid_loss", h.valid_loss}, {"seconds", h.seconds},
                          {"train_seconds", h.train_seconds},
                          {"mean_qp_iterations", h.mean_qp_iterations},
                          {"slowest_qp_iterations", h.slowest_qp_iterations},
                          {"slowest_qp_rho_updates", h.slowest_qp_rho_updates},
                          {"not_solved", h.not_solved}};
      if (std::isfinite(h.valid_rollout_m)) e["valid_position_error_m"] = h.valid_rollout_m;
      ck["history"].push_back(std::move(e));
    }
    // warm starts first (their own file, named by epoch), then the checkpoint
    // that points at them, then the previous warm-start file goes
    const std::string warm_name = "warm_starts_" + std::to_string(epoch) + ".npz";
    {
      NpzArchive wa;
      wa["train"] = method->warm_starts(0);
      wa["valid"] = method->warm_starts(1);
      if (!wa["train"].shape.empty()) {
        write_npz((fs::path(cfg.out) / warm_name).string(), wa);
        ck["warm_file"] = warm_name;
      }
    }
    try {
      write_text_atomic(ckpt_path.string(), ck.dump() + "\n");
    } catch (...) {
      // (a full disk) the previous checkpoint stands, pointing at its own warm starts
      std::error_code ec;
      if (ck.contains("warm_file")) fs::remove(fs::path(cfg.out) / warm_name, ec);
      throw;
    }
    for (const auto& e : fs::directory_iterator(cfg.out)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("warm_starts_", 0) == 0 && name != warm_name) fs::remove(e.path());
    }
    write_outputs();
    if (stop_for_time && !res.early_stopped)
      log("time budget spent after epoch " + std::to_string(epoch) + " (" + format_seconds(seconds_used()) +
          " of --max-seconds " + format_seconds(cfg.max_seconds) + "): the run is finished; a larger --max-seconds "
          "or more --epochs continues it");
  }
  if (!fs::exists(fs::path(cfg.out) / "params.json")) write_outputs();
  return res;
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
