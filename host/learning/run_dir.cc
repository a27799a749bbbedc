#include "host/learning/run_dir.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <tuple>

#include "io/json_file.h"
#include "io/npz.h"
#include "io/files.h"
#include "solvers/error.h"

namespace impulse {
namespace fs = std::filesystem;

namespace {

std::string canonical_path(const std::string& p) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(fs::path(p), ec);
  return ec ? p : c.lexically_normal().string();
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

// the warm-start files of a run folder but `keep` (a checkpoint names the one it uses;
// the others are orphans of an interrupted write or the previous epoch's)
void remove_warm_starts_except(const std::string& dir, const std::string& keep) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("warm_starts_", 0) == 0 && name != keep) fs::remove(e.path(), ec);
  }
}

// the folder, created before the lock file in it is taken
const std::string& made(const std::string& out) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw Error("--out " + out + ": cannot create the run directory (" + ec.message() + ")");
  return out;
}

}  // namespace

RunDir::RunDir(const std::string& out, std::ostream& echo)
    : out_(made(out)),
      echo_(echo),
      // one writer per run directory: a second training into it is refused
      lock_((fs::path(out) / ".lock").string(), out, "another training",
            "wait for it to finish or choose another --out") {
  remove_stale_temporaries(out_);
  log_.open(fs::path(out_) / "log.txt", std::ios::app);
  if (!log_) throw Error("--out " + out_ + ": cannot write log.txt there");
}

void RunDir::log(const std::string& line) {
  echo_ << line << std::endl;
  log_ << line << std::endl;
}

std::string RunDir::path(const std::string& name) const { return (fs::path(out_) / name).string(); }

nlohmann::json RunDir::open_checkpoint(const nlohmann::json& config) const {
  const fs::path ckpt_path = path("checkpoint.json"), config_path = path("config.json");
  // a run directory with results but no checkpoint cannot be continued, and is
  // never trained over (its results would be lost)
  if (!fs::exists(ckpt_path)) {
    for (const char* f : {"params.json", "history.csv"})
      if (fs::exists(fs::path(out_) / f))
        throw Error(out_ + " holds results (" + f + ") but no checkpoint.json, so it cannot be resumed; "
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
      throw Error(std::string(e.what()) + "; the run cannot be resumed from a damaged checkpoint: move " + out_ +
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
    throw Error(out_ + " holds a checkpoint but no config.json, and the checkpoint (of an older impulse) does not "
                "record the configuration, so a resume cannot be proven to be the same run; restore config.json, or "
                "remove the directory to start over");
  }
  if (!reference.is_null()) {
    if (const std::string diff = config_difference(reference, config); !diff.empty())
      throw Error(out_ + " holds a run with a different configuration (" + diff + " differ from " + reference_name +
                  "); choose another --out or the same settings to resume");
  }
  // a run that failed for a reason the same command meets again is not retried
  const fs::path failure_path = path("failure.json");
  if (fs::exists(failure_path)) {
    std::string why = "see its log.txt";
    try {
      why = read_json_file(failure_path.string()).value("error", why);
    } catch (const Error&) {
    }
    throw Error(out_ + " failed before with this configuration (" + why +
                "); the same command fails the same way: change the option it names, with another --out");
  }
  return saved;
}

void RunDir::begin(const nlohmann::json& config, nlohmann::json init_params, const std::string& method_name) {
  write_text_atomic(path("config.json"), config.dump(2) + "\n");
  init_params["method"] = method_name;
  write_text_atomic(path("init_params.json"), init_params.dump(2) + "\n");
}

void RunDir::restore(const nlohmann::json& ck, const nlohmann::json& config, Method& method, AdamW& adam,
                     int n_train, int n_valid, RunState& st) {
  const std::string ckpt_path = path("checkpoint.json");
  write_text_atomic(path("config.json"), config.dump(2) + "\n");
  try {
    st.theta = ck.at("theta").get<std::vector<double>>();
    adam = AdamW::from_json(ck.at("adam"));
    st.epochs_done = ck.at("epochs_done").get<int>();
    st.since_best = ck.at("since_best").get<int>();
    st.res.best_epoch = ck.at("best_epoch").get<int>();
    st.res.best_valid = ck.at("best_valid").get<double>();
    st.best_params = ck.at("best_params");
    st.res.early_stopped = ck.at("stopped").get<bool>();
    st.res.history = history_from_json(ck.at("history"));
    st.seconds_before = ck.value("seconds_used", 0.0);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ckpt_path + ": corrupt checkpoint (" + e.what() + "); move " + out_ +
                " aside (or remove it) to train this run again");
  }
  if (st.theta.size() != method.variables().size())
    throw Error(ckpt_path + ": parameter count differs from the method's");
  method.set_variables(st.theta);
  // a warm-start file the checkpoint does not name is an orphan of an interrupted write
  remove_warm_starts_except(out_, ck.value("warm_file", std::string()));
  if (ck.contains("warm_file")) {
    const fs::path wf = fs::path(out_) / ck["warm_file"].get<std::string>();
    if (fs::exists(wf)) {
      const NpzArchive wa = read_npz(wf.string());
      const NpyArray& wt = npz_get(wa, "train", wf.string());
      const NpyArray& wv = npz_get(wa, "valid", wf.string());
      for (const auto& [a, n, name] : {std::tuple<const NpyArray&, int, const char*>{wt, n_train, "train"},
                                       {wv, n_valid, "valid"}})
        if (a.shape.size() != 2 || (a.shape[0] != n && a.shape[0] != 0))  // (0 rows: none kept)
          throw Error(wf.string() + ": '" + name + "' holds " + shape_string(a.shape) + " warm starts for " +
                      std::to_string(n) + " transitions");
      if (wt.shape[0] > 0) method.set_warm_starts(0, wt);
      if (wv.shape[0] > 0) method.set_warm_starts(1, wv);
    } else {
      log("note: " + wf.string() + " is missing; the QPs start cold (results may differ in rounding)");
    }
  }
  st.res.resumed = true;
}

void RunDir::fail(int epoch, const std::string& why) const {
  write_text_atomic(path("failure.json"), nlohmann::json{{"epoch", epoch}, {"error", why}}.dump(2) + "\n");
  throw Error(why);
}

void RunDir::write_checkpoint(nlohmann::json ck, const Method& method, int epoch) {
  // warm starts first (their own file, named by epoch), then the checkpoint
  // that points at them, then the previous warm-start file goes
  const std::string warm_name = "warm_starts_" + std::to_string(epoch) + ".npz";
  {
    NpzArchive wa;
    wa["train"] = method.warm_starts(0);
    wa["valid"] = method.warm_starts(1);
    if (!wa["train"].shape.empty()) {
      write_npz(path(warm_name), wa);
      ck["warm_file"] = warm_name;
    }
  }
  try {
    write_text_atomic(path("checkpoint.json"), ck.dump() + "\n");
  } catch (...) {
    // (a full disk) the previous checkpoint stands, pointing at its own warm starts
    std::error_code ec;
    if (ck.contains("warm_file")) fs::remove(path(warm_name), ec);
    throw;
  }
  remove_warm_starts_except(out_, warm_name);
}

void RunDir::write_outputs(const RunState& st, const TrainConfig& cfg) const {
  write_text_atomic(path("params.json"),
                    params_json_of(st.best_params, cfg, st.res.best_epoch, st.res.best_valid).dump(2) + "\n");
  write_text_atomic(path("history.csv"), history_csv(st.res.history));
}

nlohmann::json checkpoint_json(const RunState& st, const AdamW& adam, int epoch, const nlohmann::json& config,
                               double seconds_used, bool time_limited) {
  nlohmann::json ck;
  ck["epochs_done"] = epoch;
  ck["theta"] = st.theta;
  ck["adam"] = adam.to_json();
  ck["since_best"] = st.since_best;
  ck["best_epoch"] = st.res.best_epoch;
  ck["best_valid"] = st.res.best_valid;
  ck["best_params"] = st.best_params;
  ck["stopped"] = st.res.early_stopped;
  // the time budget: spent over every session of the run, checked after each
  // epoch; a run that spent it is finished (check_run) until given a larger one
  ck["seconds_used"] = seconds_used;
  ck["time_limited"] = time_limited;
  ck["config"] = config;
  ck["history"] = nlohmann::json::array();
  for (const EpochRecord& h : st.res.history) ck["history"].push_back(epoch_record_json(h));
  return ck;
}

nlohmann::json epoch_record_json(const EpochRecord& h) {
  nlohmann::json e = {{"epoch", h.epoch},
                      {"train_loss", h.train_loss},
                      {"valid_loss", h.valid_loss},
                      {"seconds", h.seconds},
                      {"train_seconds", h.train_seconds},
                      {"mean_qp_iterations", h.mean_qp_iterations},
                      {"slowest_qp_iterations", h.slowest_qp_iterations},
                      {"slowest_qp_rho_updates", h.slowest_qp_rho_updates},
                      {"not_solved", h.not_solved}};
  if (std::isfinite(h.valid_rollout_m)) e["valid_position_error_m"] = h.valid_rollout_m;
  return e;
}

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

std::string format_seconds(double s) {
  char buf[32];
  if (s < 120) std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 7200) std::snprintf(buf, sizeof buf, "%.1fmin", s / 60);
  else std::snprintf(buf, sizeof buf, "%.1fh", s / 3600);
  return buf;
}

}  // namespace impulse
