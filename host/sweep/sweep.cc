#include "host/sweep/sweep.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#ifdef IMPULSE_WITH_MPI
#include <mpi.h>
#endif

#include "host/batch/qp_batch.h"
#include "host/learning/trainer.h"
#include "io/file_lock.h"
#include "io/json_file.h"
#include "io/files.h"
#include "solvers/error.h"

namespace fs = std::filesystem;

namespace impulse {
namespace {

// `impulse train`'s options a sweep may set (--out and --threads are its own)
const std::set<std::string>& train_option_names() {
  static const std::set<std::string> names = {
      "method", "system", "data",     "dt",          "tosses",      "seed",       "epochs",   "patience",
      "batch",  "lr",     "weight-decay", "init-noise", "friction", "eps",      "backend",
      "max-seconds", "w-res", "w-res-w", "known", "smooth-velocities", "select"};
  return names;
}

std::string canonical_key(std::string k, const std::string& where) {
  std::replace(k.begin(), k.end(), '_', '-');
  if (k.rfind("--", 0) == 0) k = k.substr(2);
  if (k == "out" || k == "threads")
    throw Error(where + ": option \"" + k + "\" is the sweep's own (--out DIR, --threads-per-run), not a run's");
  if (!train_option_names().count(k)) {
    std::string known;
    for (const auto& n : train_option_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error(where + ": \"" + k + "\" is not an option of impulse train (known: " + known + ")");
  }
  return k;
}

std::string value_text(const nlohmann::ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();  // numbers as JSON writes them (shortest round trip)
}

void check_scalar(const nlohmann::ordered_json& v, const std::string& where) {
  if (!(v.is_string() || v.is_number() || v.is_boolean()))
    throw Error(where + ": must be a string, a number or true/false, not " + v.dump());
  if (v.is_number_float() && !std::isfinite(v.get<double>())) throw Error(where + ": not a finite number");
}

// a file-name-safe form of a value (a data path: its last component)
std::string name_part(const std::string& key, const nlohmann::ordered_json& v) {
  std::string s = value_text(v);
  if (key == "data") s = fs::path(s).filename().string();
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+')) c = '_';
  return key + "-" + s;
}

nlohmann::ordered_json resolve_options(const nlohmann::ordered_json& in, const std::string& where,
                                       const std::string& base_dir) {
  if (!in.is_object()) throw Error(where + ": must be an object of options");
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (auto it = in.begin(); it != in.end(); ++it) {
    const std::string k = canonical_key(it.key(), where);
    check_scalar(it.value(), where + "." + it.key());
    nlohmann::ordered_json v = it.value();
    if (k == "data" && v.is_string() && !v.get<std::string>().empty() && fs::path(v.get<std::string>()).is_relative())
      v = (fs::path(base_dir) / v.get<std::string>()).lexically_normal().string();
    out[k] = v;
  }
  return out;
}

}  // namespace

SweepSpec parse_sweep_config(const nlohmann::ordered_json& j, const std::string& base_dir, int max_runs) {
  if (!j.is_object()) throw Error("sweep config: must be a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "train" && it.key() != "grid" && it.key() != "runs" && it.key() != "eval" &&
        it.key() != "threads_per_run" && it.key() != "description" && it.key() != "expected_time")
      throw Error("sweep config: unknown entry \"" + it.key() +
                  "\" (known: train, grid, runs, eval, threads_per_run, description, expected_time)");
  SweepSpec s;
  s.config = j;
  const nlohmann::ordered_json base =
      j.contains("train") ? resolve_options(j["train"], "sweep config: train", base_dir) : nlohmann::ordered_json::object();
  // the grid, in file order
  std::vector<std::vector<nlohmann::ordered_json>> values;
  if (j.contains("grid")) {
    const auto& g = j["grid"];
    if (!g.is_object()) throw Error("sweep config: grid must be an object of option: [values]");
    for (auto it = g.begin(); it != g.end(); ++it) {
      const std::string where = "sweep config: grid." + it.key();
      const std::string k = canonical_key(it.key(), where);
      if (!it.value().is_array() || it.value().empty()) throw Error(where + ": must be a non-empty list of values");
      std::vector<nlohmann::ordered_json> vs;
      for (size_t i = 0; i < it.value().size(); ++i) {
        check_scalar(it.value()[i], where + "[" + std::to_string(i) + "]");
        nlohmann::ordered_json one = nlohmann::ordered_json::object();
        one[k] = it.value()[i];
        vs.push_back(resolve_options(one, where, base_dir)[k]);
      }
      s.grid_keys.push_back(k);
      values.push_back(std::move(vs));
    }
  }
  if (j.contains("eval")) {
    const auto& e = j["eval"];
    if (!e.is_object()) throw Error("sweep config: eval must be an object");
    for (auto it = e.begin(); it != e.end(); ++it) {
      if (it.key() != "tosses") throw Error("sweep config: eval." + it.key() + " is not known (known: tosses)");
      if (!it.value().is_string()) throw Error("sweep config: eval.tosses must be a string (test, all, 3,17,42)");
      s.eval_tosses = it.value().get<std::string>();
    }
  }
  if (j.contains("threads_per_run")) {
    if (!j["threads_per_run"].is_number_integer() || j["threads_per_run"].get<int>() < 1)
      throw Error("sweep config: threads_per_run must be an integer >= 1");
    s.threads_per_run = j["threads_per_run"].get<int>();
  }
  // the size first: a grid is refused before anything of it is expanded
  {
    double count = (!values.empty() || !j.contains("runs")) ? 1.0 : 0.0;
    for (const auto& v : values) count *= static_cast<double>(v.size());
    if (j.contains("runs") && j["runs"].is_array()) count += static_cast<double>(j["runs"].size());
    if (count > max_runs) {
      char b[64];
      std::snprintf(b, sizeof b, "%.0f", count);
      throw Error(std::string("sweep config: the grid expands to ") + b + " runs, more than --max-runs " +
                  std::to_string(max_runs) + "; check the grid, or confirm a sweep this large with --max-runs " + b);
    }
  }
  // the cartesian product, first key slowest
  if (!values.empty() || !j.contains("runs")) {
    std::vector<size_t> at(values.size(), 0);
    while (true) {
      SweepRun r;
      r.options = base;
      r.grid = nlohmann::ordered_json::object();
      std::string name;
      for (size_t k = 0; k < values.size(); ++k) {
        r.options[s.grid_keys[k]] = values[k][at[k]];
        r.grid[s.grid_keys[k]] = values[k][at[k]];
        name += (name.empty() ? "" : "_") + name_part(s.grid_keys[k], values[k][at[k]]);
      }
      r.name = name.empty() ? "run" : name;
      s.runs.push_back(std::move(r));
      // the next combination: the last key fastest
      bool wrapped = true;
      for (size_t k = values.size(); k-- > 0;) {
        if (++at[k] < values[k].size()) {
          wrapped = false;
          break;
        }
        at[k] = 0;
      }
      if (wrapped) break;
    }
  }
  if (j.contains("runs")) {
    if (!j["runs"].is_array()) throw Error("sweep config: runs must be a list of option objects");
    for (size_t i = 0; i < j["runs"].size(); ++i) {
      const std::string where = "sweep config: runs[" + std::to_string(i) + "]";
      SweepRun r;
      r.options = base;
      const nlohmann::ordered_json extra = resolve_options(j["runs"][i], where, base_dir);
      r.grid = nlohmann::ordered_json::object();
      std::string name;
      for (auto it = extra.begin(); it != extra.end(); ++it) {
        r.options[it.key()] = it.value();
        name += (name.empty() ? "" : "_") + name_part(it.key(), it.value());
      }
      for (const std::string& k : s.grid_keys)
        if (r.options.contains(k)) r.grid[k] = r.options[k];
      r.name = name.empty() ? "run" : name;
      s.runs.push_back(std::move(r));
    }
  }
  std::map<std::string, int> seen;
  for (size_t i = 0; i < s.runs.size(); ++i) {
    s.runs[i].index = static_cast<int>(i);
    if (!s.runs[i].options.contains("method"))
      throw Error("sweep config: run " + s.runs[i].name + " has no method (set train.method, a grid or runs entry)");
    const auto [it, fresh] = seen.emplace(s.runs[i].name, static_cast<int>(i));
    if (!fresh)
      throw Error("sweep config: two runs are both named " + s.runs[i].name + " (runs " + std::to_string(it->second) +
                  " and " + std::to_string(i) + "): every run needs its own grid values");
  }
  return s;
}

SweepSpec load_sweep_config(const std::string& path, int max_runs) {
  const nlohmann::ordered_json j = read_ordered_json_file(path);
  try {
    return parse_sweep_config(j, fs::absolute(fs::path(path)).parent_path().string(), max_runs);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

std::vector<std::string> train_arguments(const SweepRun& run, const std::string& run_dir, int threads) {
  std::vector<std::string> a = {"train"};
  for (auto it = run.options.begin(); it != run.options.end(); ++it) {
    a.push_back("--" + it.key());
    a.push_back(value_text(it.value()));
  }
  a.insert(a.end(), {"--out", run_dir, "--threads", std::to_string(threads)});
  return a;
}

std::string shell_command(const std::string& exe, const std::vector<std::string>& args) {
  auto quote = [](const std::string& a) {
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "0123456789-_./=:,+@%") == std::string::npos;
    if (plain) return a;
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  std::string s = quote(exe);
  for (const std::string& a : args) s += " " + quote(a);
  return s;
}

int pick_device(const std::vector<int>& running, int runs_per_gpu) {
  int best = -1;
  for (size_t d = 0; d < running.size(); ++d)
    if (running[d] < runs_per_gpu && (best < 0 || running[d] < running[static_cast<size_t>(best)]))
      best = static_cast<int>(d);
  return best;
}

// ---- files of a sweep directory ---------------------------------------------------

namespace {

struct SweepPaths {
  fs::path root;
  fs::path run(const std::string& n) const { return root / "runs" / n; }
  fs::path log(const std::string& n) const { return root / "logs" / (n + ".log"); }
  fs::path status(const std::string& n) const { return root / "status" / (n + ".json"); }
};

nlohmann::ordered_json sweep_record(const SweepSpec& s) {
  nlohmann::ordered_json j;
  j["config"] = s.config;
  j["grid_keys"] = s.grid_keys;
  j["eval_tosses"] = s.eval_tosses;
  j["runs"] = nlohmann::ordered_json::array();
  for (const SweepRun& r : s.runs)
    j["runs"].push_back({{"name", r.name}, {"options", r.options}, {"grid", r.grid}});
  return j;
}

// a run is done when its metrics exist and its directory checks finished and
// consistent (the one rule of the sweep, its --list and its summary); epochs: how
// many it trained
bool run_done(const fs::path& dir, int* epochs = nullptr) {
  std::error_code ec;
  if (!fs::exists(dir / "metrics.json", ec)) return false;
  try {
    read_json_file((dir / "metrics.json").string());
    const RunCheck c = check_run(dir.string());
    if (epochs != nullptr) *epochs = c.epochs_done;
    return c.ok() && c.finished;
  } catch (const std::exception&) {
    return false;
  }
}

SweepRow row_of(const SweepPaths& P, const std::string& name, const nlohmann::ordered_json& grid) {
  SweepRow r;
  r.name = name;
  r.grid = grid;
  r.metrics = nlohmann::ordered_json::object();
  const fs::path dir = P.run(name);
  std::error_code ec;
  int epochs = 0;
  if (run_done(dir, &epochs)) {
    try {
      const nlohmann::json m = read_json_file((dir / "metrics.json").string());
      for (auto it = m.begin(); it != m.end(); ++it)
        if (it.value().is_number()) r.metrics[it.key()] = it.value();
      r.status = "done";
      r.epochs = epochs;
    } catch (const std::exception& e) {
      r.status = "pending";
    }
  }
  if (r.status.empty() && fs::exists(P.status(name), ec)) {
    try {
      const nlohmann::json s = read_json_file(P.status(name).string());
      r.status = "failed";
      r.error = s.value("error", std::string());
    } catch (const std::exception&) {
      r.status = "pending";
    }
  }
  if (r.status.empty()) r.status = "pending";
  if (r.status == "done") {
    try {
      const nlohmann::json p = read_json_file((dir / "params.json").string());
      r.best_epoch = p.value("best_epoch", -1);
    } catch (const std::exception&) {
    }
  }
  return r;
}

nlohmann::json row_json(const SweepRow& r) {
  nlohmann::json j = {{"name", r.name},   {"status", r.status},         {"grid", r.grid}, {"metrics", r.metrics},
                      {"error", r.error}, {"best_epoch", r.best_epoch}, {"epochs", r.epochs}};
  return j;
}

SweepRow row_from_json(const nlohmann::json& j) {
  SweepRow r;
  r.name = j.at("name");
  r.status = j.at("status");
  r.grid = j.at("grid");
  r.metrics = j.at("metrics");
  r.error = j.at("error");
  r.best_epoch = j.at("best_epoch");
  r.epochs = j.at("epochs");
  return r;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += (c == '\n' ? ' ' : c);
  }
  return o + "\"";
}

std::string number_text(const nlohmann::ordered_json& v) {
  if (v.is_number_float()) {
    char b[40];
    std::snprintf(b, sizeof b, "%.9g", v.get<double>());
    return b;
  }
  return value_text(v);
}

void write_summary(const SweepPaths& P, const std::vector<SweepRow>& rows, const std::vector<std::string>& keys) {
  write_text_atomic((P.root / "summary.csv").string(), summary_csv(rows, keys));
  nlohmann::json j = nlohmann::json::array();
  for (const SweepRow& r : rows) j.push_back(row_json(r));
  write_text_atomic((P.root / "summary.json").string(), j.dump(2) + "\n");
}

}  // namespace

std::vector<SweepRow> collect_sweep_rows(const std::string& sweep_dir) {
  const SweepPaths P{fs::path(sweep_dir)};
  if (!fs::exists(P.root / "sweep.json"))
    throw Error(sweep_dir + ": not a sweep directory (no sweep.json; `impulse sweep --config C --out DIR` makes one)");
  const nlohmann::json rec = read_json_file((P.root / "sweep.json").string());
  std::vector<SweepRow> rows;
  try {
    for (const auto& r : rec.at("runs")) rows.push_back(row_of(P, r.at("name"), r.at("grid")));
  } catch (const nlohmann::json::exception& e) {
    throw Error(sweep_dir + "/sweep.json: " + e.what());
  }
  return rows;
}

std::string summary_csv(const std::vector<SweepRow>& rows, const std::vector<std::string>& keys) {
  std::set<std::string> metric_set;
  for (const SweepRow& r : rows)
    for (auto it = r.metrics.begin(); it != r.metrics.end(); ++it) metric_set.insert(it.key());
  std::ostringstream s;
  s << "run,status";
  for (const std::string& k : keys) s << "," << k;
  s << ",best_epoch,epochs";
  for (const std::string& m : metric_set) s << "," << m;
  s << ",error\n";
  for (const SweepRow& r : rows) {
    s << csv_field(r.name) << "," << r.status;
    for (const std::string& k : keys) s << "," << (r.grid.contains(k) ? csv_field(value_text(r.grid[k])) : "");
    s << "," << (r.status == "done" ? std::to_string(r.best_epoch) : "") << ","
      << (r.status == "done" ? std::to_string(r.epochs) : "");
    for (const std::string& m : metric_set) s << "," << (r.metrics.contains(m) ? number_text(r.metrics[m]) : "");
    s << "," << csv_field(r.error) << "\n";
  }
  return s.str();
}

// ---- the runner ---------------------------------------------------------------------

namespace {

std::atomic<int> g_stop{0};
extern "C" void on_stop_signal(int sig) { g_stop.store(sig); }

struct SignalGuard {
  struct sigaction old_int {}, old_term {};
  SignalGuard() {
    g_stop.store(0);
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
  }
  ~SignalGuard() {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
  }
};

std::string self_exe() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find this program's own path (/proc/self/exe); give --exe");
  return p.string();
}

// Starts exe with args, output appended to log_path; the child dies with its parent.
pid_t spawn(const std::string& exe, const std::vector<std::string>& args, const std::string& log_path,
            const std::vector<std::pair<std::string, std::string>>& env) {
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot open " + log_path + " (" + std::strerror(errno) + ")");
  std::vector<std::string> all = {exe};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  std::cout.flush();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    throw Error(std::string("fork failed (") + std::strerror(errno) + ")");
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the sweep killed (even by -9): its runs stop too
    if (::getppid() != parent) ::_exit(126);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    ::execv(exe.c_str(), argv.data());
    const std::string msg = "impulse sweep: cannot run " + exe + " (" + std::strerror(errno) + ")\n";
    if (::write(2, msg.data(), msg.size()) < 0) {
    }
    ::_exit(127);
  }
  ::close(fd);
  return pid;
}

// the error a failed child left: its "error:" line, else its last line; a child
// killed by a signal names the signal (its last line is only what it had printed)
std::string error_from_log(const std::string& log_path, std::streamoff from, int status) {
  if (WIFSIGNALED(status)) {
    std::ifstream f(log_path);
    f.seekg(from);
    std::string line, last;
    while (std::getline(f, line))
      if (!line.empty()) last = line;
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")" +
           (last.empty() ? std::string() : "; its last output: " + last);
  }
  std::ifstream f(log_path);
  f.seekg(from);
  std::string line, last, err;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    last = line;
    if (line.find("error") != std::string::npos) err = line;
  }
  return err.empty() ? last : err;
}

std::string duration_text(double s) {
  char b[32];
  if (s < 90)
    std::snprintf(b, sizeof b, "%.0fs", s);
  else if (s < 5400)
    std::snprintf(b, sizeof b, "%.0fm%02.0fs", std::floor(s / 60), std::fmod(s, 60));
  else
    std::snprintf(b, sizeof b, "%.0fh%02.0fm", std::floor(s / 3600), std::fmod(s / 60, 60));
  return b;
}

std::string now_text() {
  const std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return b;
}

struct Mpi {
  int rank = 0, size = 1;
  bool active = false;
  static bool launched() {
    for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
      if (std::getenv(v) != nullptr) return true;
    return false;
  }
  explicit Mpi(bool want) {
    if (!want || !launched()) return;
#ifdef IMPULSE_WITH_MPI
    ::setenv("OMPI_MCA_mpi_warn_on_fork", "0", 0);  // each run is fork + exec, nothing shared
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    active = true;
#else
    const char* n = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (n != nullptr && std::atoi(n) > 1)
      throw Error("started under mpirun, but this impulse was built without MPI (install libopenmpi-dev and "
                  "rebuild), or run each process with --shard i/N");
#endif
  }
  ~Mpi() {
#ifdef IMPULSE_WITH_MPI
    if (active) MPI_Finalize();
#endif
  }
  [[noreturn]] void abort_all(const std::string& msg) const {
    std::fprintf(stderr, "impulse: error (rank %d): %s\n", rank, msg.c_str());
#ifdef IMPULSE_WITH_MPI
    MPI_Abort(MPI_COMM_WORLD, 2);
#endif
    std::exit(2);
  }
  // every rank's string, on rank 0 (others get an empty list)
  std::vector<std::string> gather(const std::string& mine) const {
    std::vector<std::string> out;
#ifdef IMPULSE_WITH_MPI
    if (active) {
      int n = static_cast<int>(mine.size());
      std::vector<int> sizes(static_cast<size_t>(size)), offs(static_cast<size_t>(size), 0);
      MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
      std::vector<char> buf;
      if (rank == 0) {
        int tot = 0;
        for (int r = 0; r < size; ++r) {
          offs[static_cast<size_t>(r)] = tot;
          tot += sizes[static_cast<size_t>(r)];
        }
        buf.resize(static_cast<size_t>(std::max(tot, 1)));
      }
      MPI_Gatherv(mine.data(), n, MPI_CHAR, buf.data(), sizes.data(), offs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
      if (rank == 0)
        for (int r = 0; r < size; ++r)
          out.emplace_back(buf.data() + offs[static_cast<size_t>(r)], static_cast<size_t>(sizes[static_cast<size_t>(r)]));
      return out;
    }
#endif
    out.push_back(mine);
    return out;
  }
};

// One sweep directory, one sweep: a plain sweep holds OUT/.sweep.lock alone
// (exclusive); the shards of one layout (N shards: a job array's --shard i/N or
// mpirun's N ranks) share it, the file naming N, and each holds its own shard's
// lock. Every step is taken under a short exclusive gate lock, so two processes
// never decide on the same state at once. The kernel drops every lock when a
// process ends, however it ends.
class SweepDirLock {
 public:
  SweepDirLock(const fs::path& root, int shard, int shards, const std::string& out) {
    const std::string gate_path = (root / ".sweep-gate.lock").string(), dir_path = (root / ".sweep.lock").string();
    const int gate = ::open(gate_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (gate < 0) throw Error(out + ": cannot create its lock file " + gate_path + " (" + std::strerror(errno) + ")");
    while (::flock(gate, LOCK_EX) != 0 && errno == EINTR) {
    }
    struct Gate {
      int fd;
      ~Gate() { ::close(fd); }
    } gate_guard{gate};
    fd_ = ::open(dir_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) throw Error(out + ": cannot create its lock file " + dir_path + " (" + std::strerror(errno) + ")");
    const std::string layout = std::to_string(shards);
    auto refuse = [&](const std::string& who) {
      ::close(fd_);
      fd_ = -1;
      throw Error(out + " is in use by " + who + "; one sweep directory takes one sweep at a time (the shards of "
                  "one --shard i/N layout or one mpirun together): wait for it to finish, or stop it (a restart "
                  "continues where it stopped)");
    };
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) {
      // nobody else: this process sets the layout
      const std::string text = layout + " " + std::to_string(::getpid()) + "\n";
      if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) < 0) {
        // the text is for the messages only
      }
      if (shards > 1) ::flock(fd_, LOCK_SH);  // a conversion: under the gate nobody can come between
    } else {
      char buf[64] = {0};
      const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
      // "N PID" (a bare PID: a plain sweep of an older impulse)
      std::istringstream held(n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string());
      std::string a, b;
      held >> a >> b;
      const std::string held_layout = b.empty() ? "1" : a, pid = b.empty() ? a : b;
      if (shards == 1 || held_layout != layout || ::flock(fd_, LOCK_SH | LOCK_NB) != 0)
        refuse(held_layout == "1" ? "another sweep" + (pid.empty() ? std::string() : " (process " + pid + ")")
                                  : "a sweep in " + held_layout + " shards" +
                                        (shards > 1 ? " (this one is in " + layout + ")" : std::string()));
    }
    if (shards > 1) {
      try {
        shard_lock_ = std::make_unique<FileLock>(
            (root / (".sweep-shard-" + std::to_string(shard) + "-of-" + layout + ".lock")).string(),
            out + " (shard " + std::to_string(shard) + "/" + layout + ")", "another sweep of the same shard",
            "wait for it to finish, or stop it (a restart continues where it stopped)");
      } catch (...) {
        ::close(fd_);  // (no destructor runs for a constructor that throws)
        fd_ = -1;
        throw;
      }
    }
  }
  ~SweepDirLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  SweepDirLock(const SweepDirLock&) = delete;
  SweepDirLock& operator=(const SweepDirLock&) = delete;

 private:
  int fd_ = -1;
  std::unique_ptr<FileLock> shard_lock_;
};

struct Child {
  pid_t pid = -1;
  int run = -1;        // index into spec.runs
  int stage = 0;       // 0 train, 1 eval
  int device = -1;
  std::streamoff log_from = 0;
  std::chrono::steady_clock::time_point started;
};

// The shard this process runs (--shard i/N, or MPI's rank of its size), after the
// options' own checks.
std::pair<int, int> checked_shard(const SweepOptions& opt, const Mpi& mpi) {
  if (opt.out.empty()) throw Error("sweep: --out is required");
  if (opt.jobs < 0) throw Error("sweep: --jobs must be >= 0");
  if (opt.threads_per_run < 0) throw Error("sweep: --threads-per-run must be >= 0");
  if (opt.runs_per_gpu < 1) throw Error("sweep: --runs-per-gpu must be >= 1");
  int shard = opt.shard, shards = opt.shards;
  if (shards < 1 || shard < 0 || shard >= shards)
    throw Error("sweep: --shard " + std::to_string(shard) + "/" + std::to_string(shards) + " is not i/N with 0 <= i < N");
  if (mpi.active && mpi.size > 1) {
    if (shards > 1) throw Error("sweep: --shard and mpirun both divide the grid; use one of them");
    shard = mpi.rank;
    shards = mpi.size;
  }
  return {shard, shards};
}

// --list: every run's state and command, nothing written or started
SweepResult list_sweep(const SweepSpec& spec, const SweepPaths& P, const SweepOptions& opt, int shard, int shards,
                       std::ostream& log) {
  SweepResult res;
  int threads = opt.threads_per_run > 0 ? opt.threads_per_run : std::max(1, spec.threads_per_run);
  for (const SweepRun& r : spec.runs) {
    const SweepRow row = row_of(P, r.name, r.grid);
    const bool mine = r.index % shards == shard;
    res.mine += mine;
    ++res.total;
    res.done += row.status == "done";
    res.failed += row.status == "failed";
    res.pending += row.status == "pending";
    log << r.index << " " << r.name << " [" << row.status << (mine ? "" : ", another shard's") << "]: "
        << shell_command("impulse", train_arguments(r, P.run(r.name).string(), threads)) << "\n";
    res.rows.push_back(row);
  }
  log << spec.runs.size() << " runs: " << res.done << " done, " << res.failed << " failed, " << res.pending
      << " to run\n";
  return res;
}

void make_sweep_folders(const SweepOptions& opt, const SweepPaths& P) {
  std::error_code ec;
  for (const char* d : {"runs", "logs", "status"}) {
    fs::create_directories(P.root / d, ec);
    if (ec) throw Error("--out " + opt.out + ": cannot create " + (P.root / d).string() + " (" + ec.message() + ")");
  }
}

// one configuration per sweep directory: its record (sweep.json) written, or checked
void check_or_write_record(const SweepOptions& opt, const SweepPaths& P, const SweepSpec& spec) {
  const nlohmann::ordered_json rec = sweep_record(spec);
  const fs::path rec_path = P.root / "sweep.json";
  if (!fs::exists(rec_path)) {
    write_text_atomic(rec_path.string(), rec.dump(2) + "\n");
    return;
  }
  nlohmann::ordered_json old;
  try {
    old = nlohmann::ordered_json::parse(read_text_file(rec_path.string()));
  } catch (const nlohmann::json::exception& e) {
    throw Error(rec_path.string() + ": damaged (" + e.what() + "); move the sweep directory aside to start over");
  }
  if (old.value("runs", nlohmann::ordered_json()) != rec["runs"] || old.value("eval_tosses", std::string()) != spec.eval_tosses) {
    std::string first = "the number of runs";
    const auto& oruns = old.value("runs", nlohmann::ordered_json::array());
    for (size_t i = 0; i < std::min(oruns.size(), spec.runs.size()); ++i)
      if (oruns[i] != rec["runs"][i]) {
        first = "run " + std::to_string(i) + " (" + spec.runs[i].name + ")";
        break;
      }
    throw Error(opt.out + " holds a sweep with another configuration (first difference: " + first +
                "); choose another --out, or the same configuration to continue it");
  }
}

// Runs a shard's runs as child processes (`impulse train`, then `impulse eval`), so many
// at a time, each cuda run on a GPU with a free slot; keeps the event log, the live line
// and the summary; a signal stops the children, which resume from their checkpoints.
class SweepScheduler {
 public:
  SweepScheduler(const SweepSpec& spec, const SweepPaths& P, const SweepOptions& opt, std::ostream& log,
                 const Mpi& mpi, int shard, int shards, std::vector<int> mine, std::string exe)
      : spec_(spec), P_(P), opt_(opt), log_(log), mpi_(mpi), shard_(shard), shards_(shards), mine_(std::move(mine)),
        exe_(std::move(exe)) {
    share_machine();
    event_log_.open(P_.root / "sweep.log", std::ios::app);
    // (mpirun gives its ranks a pseudo-terminal even when its own output is a file:
    // no live line there, where the ranks' lines would interleave)
    live_ = opt_.progress && ::isatty(::fileno(stdout)) && &log_ == &std::cout && !mpi_.active;
    queue_what_is_left();
    // the summary's rows, kept here: a run that ends updates its own row, and the
    // files are rewritten at most every few seconds (never more than about a tenth
    // of the time), so a large grid costs its summary no more per run than a small one
    rows_ = collect_sweep_rows(opt_.out);
  }

  void run() {
    t_start_ = std::chrono::steady_clock::now();
    auto last_live = t_start_ - std::chrono::seconds(10);
    while (!queue_.empty() || !running_.empty()) {
      if (g_stop.load() != 0 && !interrupted_) stop_all();
      start_what_fits();
      int st = 0;
      const pid_t pid = ::waitpid(-1, &st, WNOHANG);
      if (pid > 0) {
        reap(pid, st);
        continue;
      }
      if (pid < 0 && errno == ECHILD) {
        running_.clear();  // nothing of ours is alive (should not happen)
        continue;
      }
      const auto now = std::chrono::steady_clock::now();
      if (live_ && now - last_live > std::chrono::milliseconds(500)) {
        last_live = now;
        show_live(now);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (live_) log_ << "\r\033[K";
  }

  // the summary: every rank's rows gathered on rank 0 (or this shard's view of the files)
  SweepResult finish() {
    SweepResult res;
    res.interrupted = interrupted_;
    res.mine = static_cast<int>(mine_.size());
    rows_ = collect_sweep_rows(opt_.out);
    if (mpi_.active && mpi_.size > 1) {
      nlohmann::json part = nlohmann::json::array();
      for (const SweepRow& r : rows_)
        if (spec_.runs[static_cast<size_t>(&r - rows_.data())].index % shards_ == shard_) part.push_back(row_json(r));
      const std::vector<std::string> all = mpi_.gather(part.dump());
      if (mpi_.rank == 0) {
        std::map<std::string, SweepRow> by_name;
        for (const std::string& s : all)
          for (const auto& j : nlohmann::json::parse(s)) by_name[j.at("name").get<std::string>()] = row_from_json(j);
        for (SweepRow& r : rows_) r = by_name.at(r.name);
      }
    }
    if (!(mpi_.active && mpi_.size > 1 && mpi_.rank != 0)) write_summary(P_, rows_, spec_.grid_keys);
    for (const SweepRow& r : rows_) {
      ++res.total;
      if (r.status == "done") ++res.done;
      else if (r.status == "failed") ++res.failed;
      else ++res.pending;
    }
    res.rows = std::move(rows_);
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start_).count();
    if (!(mpi_.active && mpi_.rank != 0)) {
      event(std::string(interrupted_ ? "stopped" : "finished") + " after " + duration_text(el) + ": " +
            std::to_string(res.done) + " done, " + std::to_string(res.failed) + " failed, " +
            std::to_string(res.pending) + " not run, of " + std::to_string(res.total) + "; " +
            (P_.root / "summary.csv").string());
      for (const SweepRow& r : res.rows)
        if (r.status == "failed") event("  failed: " + r.name + ": " + r.error);
    }
    return res;
  }

 private:
  // machine shares: threads per run, runs at a time, the GPUs
  void share_machine() {
    int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (const char* l = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"); l != nullptr && mpi_.active)
      cores = std::max(1, cores / std::max(1, std::atoi(l)));
    threads_ = opt_.threads_per_run > 0 ? opt_.threads_per_run : spec_.threads_per_run;
    if (threads_ <= 0) threads_ = mine_.empty() ? 1 : std::max(1, cores / static_cast<int>(mine_.size()));
    jobs_ = opt_.jobs > 0 ? opt_.jobs : std::max(1, cores / threads_);
    gpus_ = cuda::device_info().count;
    on_device_.assign(static_cast<size_t>(std::max(gpus_, 0)), 0);
  }

  // what is left: runs without a finished run directory (failed ones tried again)
  void queue_what_is_left() {
    std::error_code ec;
    int retried = 0;
    for (int i : mine_) {
      const SweepRun& r = spec_.runs[static_cast<size_t>(i)];
      if (run_done(P_.run(r.name))) {
        ++done_;
        fs::remove(P_.status(r.name), ec);
        continue;
      }
      if (fs::exists(P_.status(r.name))) ++retried;
      queue_.push_back(i);
    }
    event("sweep " + opt_.out + ": " + std::to_string(spec_.runs.size()) + " runs" +
          (shards_ > 1 ? ", " + std::to_string(mine_.size()) + " in this shard" : std::string()) + "; " +
          std::to_string(done_) + " done, " + std::to_string(queue_.size()) + " to run" +
          (retried > 0 ? " (" + std::to_string(retried) + " failed before, tried again)" : std::string()) + "; " +
          std::to_string(jobs_) + " at a time, " + std::to_string(threads_) + " thread(s) each" +
          (gpus_ > 0 ? ", " + std::to_string(gpus_) + " GPU(s)" : std::string()));
  }

  void event(const std::string& s) {
    const std::string line = "[" + now_text() + "] " +
                             (shards_ > 1 ? "shard " + std::to_string(shard_) + "/" + std::to_string(shards_) + ": " : "") + s;
    event_log_ << line << "\n";
    event_log_.flush();
    if (live_) log_ << "\r\033[K";
    log_ << line << "\n";
    if (live_) log_ << live_line_;
    log_.flush();
  }

  void update_summary(int run, bool force) {
    if (run >= 0) {
      const SweepRun& r = spec_.runs[static_cast<size_t>(run)];
      rows_[static_cast<size_t>(run)] = row_of(P_, r.name, r.grid);
    }
    const auto now = std::chrono::steady_clock::now();
    if (!force && std::chrono::duration<double>(now - last_summary_).count() < std::max(2.0, 10 * summary_cost_)) return;
    write_summary(P_, rows_, spec_.grid_keys);
    last_summary_ = std::chrono::steady_clock::now();
    summary_cost_ = std::chrono::duration<double>(last_summary_ - now).count();
  }

  void record_failure(int run, const std::string& stage, nlohmann::json s) {
    const SweepRun& r = spec_.runs[static_cast<size_t>(run)];
    ++failed_;
    s["stage"] = stage;
    s["log"] = P_.log(r.name).string();
    s["when"] = now_text();
    write_text_atomic(P_.status(r.name).string(), s.dump(2) + "\n");
    event("FAILED " + r.name + " (" + stage + "): " + s["error"].get<std::string>());
  }

  bool uses_cuda(int i) const {
    const auto& o = spec_.runs[static_cast<size_t>(i)].options;
    return o.contains("backend") && o["backend"] == "cuda";
  }

  // a run's stage as a child process: 0 train (a damaged checkpoint fails the run with
  // the advice, keeping what it had), 1 eval
  void start_stage(Child c) {
    std::error_code ec;
    const SweepRun& r = spec_.runs[static_cast<size_t>(c.run)];
    const std::string dir = P_.run(r.name).string();
    std::vector<std::string> args;
    if (c.stage == 0) {
      fs::create_directories(dir, ec);
      const fs::path ckpt = fs::path(dir) / "checkpoint.json";
      if (fs::exists(ckpt, ec)) {
        try {
          read_json_file(ckpt.string());
        } catch (const Error& e) {
          record_failure(c.run, "train",
                         {{"error", std::string(e.what()) + "; the run cannot be resumed: move " + dir +
                                        " aside (or remove it) and run the sweep again to train it anew"}});
          if (c.device >= 0) --on_device_[static_cast<size_t>(c.device)];
          update_summary(c.run, false);
          return;
        }
      }
      fs::remove(fs::path(dir) / "metrics.json", ec);  // never a stale score beside a newer model
      args = train_arguments(r, dir, threads_);
    } else {
      args = {"eval", "--run", dir, "--out", (fs::path(dir) / "metrics.json").string(), "--threads",
              std::to_string(threads_)};
      if (!spec_.eval_tosses.empty()) args.insert(args.end(), {"--subset", spec_.eval_tosses});
    }
    const std::string lp = P_.log(r.name).string();
    {
      std::ofstream l(lp, std::ios::app);
      l << "== " << now_text() << " " << shell_command("impulse", args) << "\n";
      c.log_from = l.tellp();
    }
    std::vector<std::pair<std::string, std::string>> env;
    if (c.device >= 0) env.emplace_back("CUDA_VISIBLE_DEVICES", std::to_string(c.device));
    c.pid = spawn(exe_, args, lp, env);
    if (c.stage == 0) c.started = std::chrono::steady_clock::now();
    running_.push_back(c);
  }

  void stop_all() {
    interrupted_ = true;
    event("stopping (signal " + std::to_string(g_stop.load()) + "): the runs in progress are stopped and resume from "
          "their checkpoints when the same command is given again");
    for (const Child& c : running_) ::kill(c.pid, SIGTERM);
    queue_.clear();
  }

  // the first queued runs that have a slot (a cuda run needs a free GPU)
  void start_what_fits() {
    while (!interrupted_ && !queue_.empty() && static_cast<int>(running_.size()) < jobs_) {
      bool started = false;
      for (auto it = queue_.begin(); it != queue_.end(); ++it) {
        Child c;
        c.run = *it;
        if (uses_cuda(c.run) && gpus_ > 0) {
          c.device = pick_device(on_device_, opt_.runs_per_gpu);
          if (c.device < 0) continue;
          ++on_device_[static_cast<size_t>(c.device)];
        }
        queue_.erase(it);
        event("start " + spec_.runs[static_cast<size_t>(c.run)].name);
        start_stage(c);
        started = true;
        break;
      }
      if (!started) break;
    }
  }

  // a child that ended: its next stage, or the run done or failed
  void reap(pid_t pid, int st) {
    std::error_code ec;
    auto it = std::find_if(running_.begin(), running_.end(), [&](const Child& c) { return c.pid == pid; });
    if (it == running_.end()) return;
    Child c = *it;
    running_.erase(it);
    const SweepRun& r = spec_.runs[static_cast<size_t>(c.run)];
    const bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (ok && c.stage == 0 && !interrupted_) {
      c.stage = 1;
      start_stage(c);
      return;
    }
    if (c.device >= 0) --on_device_[static_cast<size_t>(c.device)];
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - c.started).count();
    if (ok && c.stage == 1) {
      ++done_;
      durations_.push_back(secs);
      fs::remove(P_.status(r.name), ec);
      std::string m;
      try {
        const nlohmann::json mj = read_json_file((P_.run(r.name) / "metrics.json").string());
        char b[160];
        std::snprintf(b, sizeof b, ": position error %.4g m, rotation error %.3g deg",
                      mj.value("position_error_m", NAN), mj.value("rotation_error_deg", NAN));
        m = b;
      } catch (const std::exception&) {
      }
      event("done " + r.name + " in " + duration_text(secs) + m);
    } else if (!interrupted_) {
      nlohmann::json s = {{"error", error_from_log(P_.log(r.name).string(), c.log_from, st)}};
      if (WIFEXITED(st))
        s["exit_code"] = WEXITSTATUS(st);
      else if (WIFSIGNALED(st))
        s["signal"] = WTERMSIG(st);
      record_failure(c.run, c.stage == 0 ? "train" : "eval", s);
    }
    if (!interrupted_) update_summary(c.run, false);
  }

  void show_live(std::chrono::steady_clock::time_point now) {
    const int left = static_cast<int>(queue_.size() + running_.size());
    std::string eta = "ETA -";
    if (!durations_.empty()) {
      double mean = 0;
      for (double d : durations_) mean += d;
      mean /= static_cast<double>(durations_.size());
      eta = "ETA " + duration_text(mean * left / jobs_);
    }
    live_line_ = "sweep: " + std::to_string(done_) + "/" + std::to_string(mine_.size()) + " done, " +
                 std::to_string(running_.size()) + " running, " + std::to_string(failed_) + " failed, " +
                 std::to_string(queue_.size()) + " queued, " +
                 duration_text(std::chrono::duration<double>(now - t_start_).count()) + " elapsed, " + eta;
    log_ << "\r\033[K" << live_line_;
    log_.flush();
  }

  const SweepSpec& spec_;
  const SweepPaths& P_;
  const SweepOptions& opt_;
  std::ostream& log_;
  const Mpi& mpi_;
  const int shard_, shards_;
  const std::vector<int> mine_;
  const std::string exe_;
  int threads_ = 1, jobs_ = 1, gpus_ = 0;
  std::vector<int> on_device_;
  std::ofstream event_log_;
  bool live_ = false;
  std::string live_line_;
  std::deque<int> queue_;
  int done_ = 0, failed_ = 0;
  std::vector<SweepRow> rows_;
  std::chrono::steady_clock::time_point last_summary_ = std::chrono::steady_clock::now() - std::chrono::hours(1);
  double summary_cost_ = 0;
  SignalGuard signals_;
  std::vector<Child> running_;
  std::vector<double> durations_;
  std::chrono::steady_clock::time_point t_start_ = std::chrono::steady_clock::now();
  bool interrupted_ = false;
};

SweepResult run_sweep_impl(const SweepOptions& opt, std::ostream& log, const Mpi& mpi) {
  const auto [shard, shards] = checked_shard(opt, mpi);
  const SweepSpec spec = load_sweep_config(opt.config, opt.max_runs);
  const std::string exe = opt.exe.empty() ? self_exe() : opt.exe;
  if (::access(exe.c_str(), X_OK) != 0) throw Error("sweep: " + exe + " is not an executable impulse binary");
  const SweepPaths P{fs::path(opt.out)};
  // every run's options as `impulse train` reads them, before anything is written or started
  if (opt.check_run_args)
    for (const SweepRun& r : spec.runs) {
      try {
        opt.check_run_args(train_arguments(r, P.run(r.name).string(), 1));
      } catch (const Error& e) {
        throw Error(opt.config + ": run " + r.name + ": " + e.what());
      }
    }
  if (opt.list_only) return list_sweep(spec, P, opt, shard, shards, log);
  make_sweep_folders(opt, P);
  const SweepDirLock lock(P.root, shard, shards, opt.out);
  check_or_write_record(opt, P, spec);
  std::vector<int> mine;
  for (const SweepRun& r : spec.runs)
    if (r.index % shards == shard) mine.push_back(r.index);
  SweepScheduler scheduler(spec, P, opt, log, mpi, shard, shards, std::move(mine), exe);
  scheduler.run();
  return scheduler.finish();
}

}  // namespace

SweepResult run_sweep(const SweepOptions& opt, std::ostream& log) {
  const Mpi mpi(opt.use_mpi);
  if (!mpi.active || mpi.size == 1) return run_sweep_impl(opt, log, mpi);
  try {
    return run_sweep_impl(opt, log, mpi);
  } catch (const std::exception& e) {
    mpi.abort_all(e.what());  // the other ranks would wait for this one's results forever
  }
}

}  // namespace impulse
