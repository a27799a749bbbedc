// Sweeps and reports (host/sweep): the grid, the runner's restart after kill -9,
// failures recorded while the rest finish, shards and MPI ranks giving the same
// table as one process, the lock, and the report's numbers against the run folders.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "host/dynamics/synthetic.h"
#include "host/sweep/report.h"
#include "host/sweep/sweep.h"
#include "io/figure_script.h"
#include "io/file_lock.h"
#include "io/toss_data.h"
#include "solvers/error.h"
#include "tests/figure_description.h"
#include "test_util.h"

namespace fs = std::filesystem;
using impulse::testing::fresh_dir;
using impulse::testing::read_text_file;

namespace impulse {
namespace {

std::string error_of(const nlohmann::ordered_json& j) {
  try {
    parse_sweep_config(j, "/base");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SweepConfig, ExpandsTheGridFirstKeySlowest) {
  const auto j = nlohmann::ordered_json::parse(R"({
    "train": {"data": "d/set.npz", "epochs": 3, "weight_decay": 0.01},
    "grid": {"method": ["contactnets-polytope", "end-to-end"], "tosses": [4, 8], "seed": [0, 1]},
    "runs": [{"method": "end-to-end", "tosses": 16, "seed": 5}]})");
  const SweepSpec s = parse_sweep_config(j, "/base");
  ASSERT_EQ(s.runs.size(), 9u);
  EXPECT_EQ(s.grid_keys, (std::vector<std::string>{"method", "tosses", "seed"}));
  EXPECT_EQ(s.runs[0].name, "method-contactnets-polytope_tosses-4_seed-0");
  EXPECT_EQ(s.runs[1].name, "method-contactnets-polytope_tosses-4_seed-1");
  EXPECT_EQ(s.runs[2].name, "method-contactnets-polytope_tosses-8_seed-0");
  EXPECT_EQ(s.runs[7].name, "method-end-to-end_tosses-8_seed-1");
  EXPECT_EQ(s.runs[8].name, "method-end-to-end_tosses-16_seed-5");
  for (const SweepRun& r : s.runs) {
    EXPECT_EQ(r.options["data"], "/base/d/set.npz") << "relative to the config's folder";
    EXPECT_EQ(r.options["epochs"], 3);
    EXPECT_EQ(r.options["weight-decay"], 0.01) << "underscores mean dashes";
  }
  EXPECT_EQ(s.runs[8].grid["tosses"], 16);
  const std::vector<std::string> a = train_arguments(s.runs[3], "/o/r", 2);
  const std::vector<std::string> want = {"train", "--data", "/base/d/set.npz", "--epochs", "3", "--weight-decay", "0.01",
                                         "--method", "contactnets-polytope", "--tosses", "8", "--seed", "1",
                                         "--out", "/o/r", "--threads", "2"};
  EXPECT_EQ(a, want);
}

TEST(SweepConfig, BadItemsAreNamed) {
  using J = nlohmann::ordered_json;
  EXPECT_NE(error_of(J::parse(R"({"grid": {"toses": [1]}, "train": {"method": "end-to-end"}})")).find("\"toses\" is not an option"),
            std::string::npos);
  EXPECT_NE(error_of(J::parse(R"({"train": {"method": "end-to-end", "threads": 2}})")).find("\"threads\" is the sweep's own"),
            std::string::npos);
  EXPECT_NE(error_of(J::parse(R"({"train": {"method": "end-to-end"}, "grid": {"seed": 3}})")).find("grid.seed: must be a non-empty list"),
            std::string::npos);
  EXPECT_NE(error_of(J::parse(R"({"train": {"method": "end-to-end"}, "grid": {"seed": []}})")).find("grid.seed"),
            std::string::npos);
  EXPECT_NE(error_of(J::parse(R"({"train": {"method": "end-to-end"}, "grid": {"lr": [0.1, [2]]}})")).find("grid.lr[1]: must be a string"),
            std::string::npos);
  EXPECT_NE(error_of(J::parse(R"({"train": {"method": "end-to-end"}, "gird": {}})")).find("unknown entry \"gird\""),
            std::string::npos);
  EXPECT_NE(error_of(J::parse(R"({"grid": {"seed": [1]}})")).find("has no method"), std::string::npos);
  EXPECT_NE(error_of(J::parse(R"({"train": {"method": "end-to-end"}, "grid": {"seed": [1, 1]}})")).find("two runs are both named seed-1"),
            std::string::npos);
  EXPECT_NE(error_of(J::parse(R"({"train": {"method": "end-to-end"}, "threads_per_run": 0})")).find("threads_per_run"),
            std::string::npos);
  EXPECT_EQ(error_of(J::parse(R"({"train": {"method": "end-to-end"}, "grid": {"seed": [1, 2]}})")), "");
}

TEST(SweepDevices, CudaRunsGoToTheLeastLoadedGpuWithRoom) {
  EXPECT_EQ(pick_device({}, 2), -1);
  EXPECT_EQ(pick_device({0, 0}, 2), 0);
  EXPECT_EQ(pick_device({1, 0}, 2), 1);
  EXPECT_EQ(pick_device({2, 1}, 2), 1);
  EXPECT_EQ(pick_device({2, 2}, 2), -1);
}

TEST(SweepReport, StudentQuantilesAndLogNormalIntervals) {
  EXPECT_NEAR(t_quantile_975(1), 12.706, 1e-3);
  EXPECT_NEAR(t_quantile_975(3), 3.182, 1e-3);
  EXPECT_NEAR(t_quantile_975(8), 2.306, 1e-3);
  EXPECT_NEAR(t_quantile_975(100000), 1.960, 1e-3);
  std::vector<SweepRow> rows(4);
  const double pos[4] = {0.01, 0.04, 0.02, 0.0};
  for (int i = 0; i < 4; ++i) {
    rows[static_cast<size_t>(i)].name = "r" + std::to_string(i);
    rows[static_cast<size_t>(i)].status = "done";
    rows[static_cast<size_t>(i)].grid = {{"method", i < 2 ? "a" : "b"}, {"seed", i % 2}};
    rows[static_cast<size_t>(i)].metrics = {{"position_error_m", pos[i]}};
  }
  const auto cells = sweep_table(rows, {"method", "seed"});
  ASSERT_EQ(cells.size(), 2u);
  // group a: logs of 0.01 and 0.04: geometric mean 0.02, half-width 12.706 * |ln 4| / 2
  EXPECT_EQ(cells[0].interval, "log-normal");
  EXPECT_NEAR(cells[0].center, 0.02, 1e-12);
  const double hw = 12.706 * std::log(4.0) / std::sqrt(2.0) / std::sqrt(2.0);
  EXPECT_NEAR(std::log(cells[0].hi / 0.02), hw, 1e-9);
  EXPECT_NEAR(std::log(0.02 / cells[0].lo), hw, 1e-9);
  // group b has a zero: arithmetic mean, said so
  EXPECT_EQ(cells[1].interval, "normal");
  EXPECT_NEAR(cells[1].center, 0.01, 1e-12);
}

// ---- a tiny sweep on synthetic data, through the impulse binary --------------------

struct TinySweep {
  std::string dir, config;
};

TinySweep tiny_sweep(const std::string& name) {
  TinySweep t;
  t.dir = fresh_dir("sweep", name);
  SyntheticConfig sc;
  sc.n_tosses = 20;
  sc.seed = 11;
  sc.threads = 1;
  write_tosses(t.dir + "/tiny.npz", generate_synthetic_tosses(sc));
  t.config = t.dir + "/sweep.json";
  std::ofstream(t.config) << R"({
    "train": {"data": "tiny.npz", "epochs": 3},
    "grid": {"method": ["contactnets-polytope", "end-to-end"], "tosses": [4, 8], "seed": [0, 1]},
    "runs": [{"method": "contactnets-polytope", "data": "missing.npz", "seed": 0}]
  })";
  return t;
}

SweepOptions options_for(const TinySweep& t, const std::string& out) {
  SweepOptions o;
  o.config = t.config;
  o.out = out;
  o.exe = IMPULSE_BINARY;
  o.jobs = 2;
  o.threads_per_run = 1;
  o.progress = false;
  o.use_mpi = false;
  return o;
}

std::string run_file(const std::string& sweep, const std::string& run, const std::string& file) {
  return read_text_file(sweep + "/runs/" + run + "/" + file);
}

int count_lines_with(const std::string& text, const std::string& what) {
  int n = 0;
  std::istringstream s(text);
  std::string line;
  while (std::getline(s, line)) n += line.find(what) != std::string::npos;
  return n;
}

TEST(Sweep, KilledMidwayAndRestartedEqualsUninterrupted) {
  const TinySweep t = tiny_sweep("kill");
  std::ostringstream log_a;
  const SweepResult a = run_sweep(options_for(t, t.dir + "/a"), log_a);
  EXPECT_EQ(a.total, 9);
  EXPECT_EQ(a.done, 8) << log_a.str();
  EXPECT_EQ(a.failed, 1);
  EXPECT_FALSE(a.interrupted);
  // the failing run is recorded with its error; the others finished
  const std::string summary_a = read_text_file(t.dir + "/a/summary.csv");
  EXPECT_EQ(count_lines_with(summary_a, ",done,"), 8) << summary_a;
  EXPECT_EQ(count_lines_with(summary_a, ",failed,"), 1);
  EXPECT_NE(summary_a.find("missing.npz: no such file"), std::string::npos) << summary_a;
  EXPECT_NE(log_a.str().find("FAILED method-contactnets-polytope_data-missing.npz_seed-0 (train)"), std::string::npos);

  // the same sweep as a process, killed with SIGKILL once two runs are done
  const std::string b = t.dir + "/b";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string out = t.dir + "/b.out";
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl(IMPULSE_BINARY, IMPULSE_BINARY, "sweep", "--config", t.config.c_str(), "--out", b.c_str(), "--jobs", "2",
            "--threads-per-run", "1", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto t0 = std::chrono::steady_clock::now();
  bool killed = false;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120)) {
    if (count_lines_with(read_text_file(b + "/sweep.log"), "] done ") >= 2) {
      ::kill(pid, SIGKILL);
      killed = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_TRUE(killed) << read_text_file(t.dir + "/b.out");
  ASSERT_TRUE(WIFSIGNALED(st));
  // its runs died with it: no run directory stays locked
  for (int i = 0; i < 100; ++i) {
    bool any = false;
    for (const auto& e : fs::directory_iterator(b + "/runs")) any = any || FileLock::held_elsewhere((e.path() / ".lock").string());
    if (!any) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_LT(i, 99) << "a run of the killed sweep is still running";
  }
  const int done_before = count_lines_with(read_text_file(b + "/sweep.log"), "] done ");
  ASSERT_LT(done_before, 8) << "the sweep finished before it could be killed";

  std::ostringstream log_b;
  const SweepResult rb = run_sweep(options_for(t, b), log_b);
  EXPECT_EQ(rb.done, 8) << log_b.str();
  EXPECT_EQ(rb.failed, 1);
  EXPECT_NE(log_b.str().find(std::to_string(done_before) + " done, "), std::string::npos)
      << "finished runs are kept: " << log_b.str();
  EXPECT_EQ(count_lines_with(log_b.str(), "] start "), 9 - done_before) << "nothing finished is run twice";
  // results identical to the uninterrupted sweep's
  EXPECT_EQ(read_text_file(b + "/summary.csv"), summary_a);
  for (const SweepRow& r : a.rows) {
    if (r.status != "done") continue;
    EXPECT_EQ(run_file(b, r.name, "params.json"), run_file(t.dir + "/a", r.name, "params.json")) << r.name;
  }
  // and a third start does nothing
  std::ostringstream log_c;
  const SweepResult rc = run_sweep(options_for(t, b), log_c);
  EXPECT_EQ(rc.done, 8);
  EXPECT_EQ(count_lines_with(log_c.str(), "] start "), 1) << "only the failing run is tried again: " << log_c.str();
}

TEST(Sweep, ShardsTogetherGiveTheSameSummary) {
  const TinySweep t = tiny_sweep("shard");
  std::ostringstream l;
  run_sweep(options_for(t, t.dir + "/one"), l);
  SweepOptions s0 = options_for(t, t.dir + "/sharded"), s1 = s0;
  s0.shard = 0;
  s0.shards = 2;
  s1.shard = 1;
  s1.shards = 2;
  const SweepResult r0 = run_sweep(s0, l);
  EXPECT_EQ(r0.mine, 5);
  EXPECT_EQ(r0.pending, 4) << "shard 1's runs are not touched by shard 0";
  const SweepResult r1 = run_sweep(s1, l);
  EXPECT_EQ(r1.mine, 4);
  EXPECT_EQ(r1.done, 8);
  EXPECT_EQ(read_text_file(t.dir + "/sharded/summary.csv"), read_text_file(t.dir + "/one/summary.csv"));
}

TEST(Sweep, TwoMpiRanksGiveTheSameSummary) {
#ifndef IMPULSE_WITH_MPI
  GTEST_SKIP() << "this build has no MPI (Debian's libopenmpi-dev); the sweep divides by --shard only";
#else
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun not found (Debian's openmpi-bin)";
  const TinySweep t = tiny_sweep("mpi");
  std::ostringstream l;
  run_sweep(options_for(t, t.dir + "/one"), l);
  const std::string cmd = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
                          "mpirun -n 2 --oversubscribe " + std::string(IMPULSE_BINARY) + " sweep --config " + t.config +
                          " --out " + t.dir + "/mpi --jobs 1 --threads-per-run 1 > " + t.dir + "/mpi.out 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string out = read_text_file(t.dir + "/mpi.out");
  ASSERT_TRUE(WIFEXITED(rc)) << out;
  EXPECT_EQ(WEXITSTATUS(rc), 4) << "one run fails on purpose: " << out;
  EXPECT_NE(out.find("shard 0/2"), std::string::npos) << out;
  EXPECT_NE(out.find("shard 1/2"), std::string::npos) << out;
  EXPECT_EQ(out.find("\033["), std::string::npos) << "mpirun gives its ranks a terminal: no live line, no escape codes";
  EXPECT_EQ(read_text_file(t.dir + "/mpi/summary.csv"), read_text_file(t.dir + "/one/summary.csv")) << out;
#endif
}

TEST(Sweep, ASecondSweepOrAnotherConfigurationIsRefused) {
  const TinySweep t = tiny_sweep("lock");
  const std::string out = t.dir + "/s";
  fs::create_directories(out);
  {
    const FileLock held(out + "/.sweep.lock", "test", "test", "");
    try {
      std::ostringstream l;
      run_sweep(options_for(t, out), l);
      ADD_FAILURE() << "a second sweep on the same directory ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("in use by another sweep"), std::string::npos) << e.what();
    }
  }
  // a finished sweep's directory with another grid
  SweepOptions o = options_for(t, out);
  std::ofstream(t.dir + "/other.json") << R"({"train": {"data": "tiny.npz", "epochs": 1, "method": "end-to-end"},
                                             "grid": {"seed": [0]}})";
  std::ostringstream l;
  o.config = t.dir + "/other.json";
  run_sweep(o, l);
  o.config = t.config;
  try {
    run_sweep(o, l);
    ADD_FAILURE() << "a sweep ran over another configuration's directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds a sweep with another configuration"), std::string::npos) << e.what();
  }
}

TEST(SweepReport, TableAgreesWithTheRunFolders) {
  const TinySweep t = tiny_sweep("report");
  std::ostringstream l;
  run_sweep(options_for(t, t.dir + "/s"), l);
  ReportOptions ro;
  ro.sweep_dir = t.dir + "/s";
  ro.out = t.dir + "/report";
  ro.figure_script = std::string(IMPULSE_SOURCE_DIR) + "/host/sweep/report_figures.py";
  ro.threads = 1;
  const ReportResult rr = make_report(ro, l);
  // the table, read back, against metrics.json of the runs themselves
  std::ifstream f(ro.out + "/table.csv");
  std::string line;
  std::getline(f, line);
  ASSERT_EQ(line, "method,tosses,metric,n,mean,ci_low,ci_high,interval");
  int checked = 0;
  while (std::getline(f, line)) {
    std::vector<std::string> c;
    std::stringstream ss(line);
    std::string x;
    while (std::getline(ss, x, ',')) c.push_back(x);
    ASSERT_EQ(c.size(), 8u) << line;
    if (c[1].empty()) {  // the failing run's group: no finished run
      EXPECT_EQ(c[3], "0");
      continue;
    }
    std::vector<double> v;
    for (int seed : {0, 1}) {
      const std::string m = run_file(ro.sweep_dir, "method-" + c[0] + "_tosses-" + c[1] + "_seed-" + std::to_string(seed),
                                     "metrics.json");
      v.push_back(nlohmann::json::parse(m).at(c[2]).get<double>());
    }
    EXPECT_EQ(c[3], "2");
    double want = std::sqrt(v[0] * v[1]);
    if (v[0] <= 0 || v[1] <= 0) {
      want = (v[0] + v[1]) / 2;
      EXPECT_EQ(c[7], "normal");
    } else {
      EXPECT_EQ(c[7], "log-normal");
    }
    EXPECT_NEAR(std::stod(c[4]), want, 1e-5 * std::abs(want) + 1e-12) << line;
    EXPECT_LE(std::stod(c[5]), std::stod(c[4]));
    EXPECT_GE(std::stod(c[6]), std::stod(c[4]));
    ++checked;
  }
  EXPECT_EQ(checked, 4 * 5) << "4 groups × 5 metrics";
  EXPECT_NE(read_text_file(ro.out + "/table.md").find("| contactnets-polytope | 8 | 2 |"), std::string::npos);
  // rollouts of each method's largest-data run
  EXPECT_TRUE(fs::exists(ro.out + "/rollout_method-end-to-end_tosses-8_seed-0_toss" +
                         std::to_string(nlohmann::json::parse(run_file(ro.sweep_dir, "method-end-to-end_tosses-8_seed-0",
                                                                       "config.json"))["split"]["test"][0].get<int>()) +
                         ".csv"));
  if (!python_with_matplotlib("python3").empty()) {  // python3, or Debian's beside a pyenv one
    EXPECT_TRUE(rr.figures) << rr.note;
    for (const char* fig : {"fig_position_error_m.png", "fig_rotation_error_deg.svg", "training_curves.png"})
      EXPECT_GT(fs::file_size(ro.out + "/" + fig), 1000u) << fig;
    // the training curves (issue 45): one axes per method's loss, train and validation on
    // it for every run, each run's best epoch (its params.json) marked on its validation
    const nlohmann::json d = testing::png_description(ro.out + "/training_curves.png");
    ASSERT_TRUE(d.is_object()) << "no Description in training_curves.png";
    EXPECT_EQ(d["axes"].size(), 2u) << d.dump();
    for (const std::string m : {"contactnets-polytope", "end-to-end"}) {
      const nlohmann::json ax = testing::axes_titled(d, m + ": training and validation loss, 4 runs");
      ASSERT_TRUE(ax.is_object()) << m << ": " << d.dump();
      EXPECT_NE(std::find(ax["legend"].begin(), ax["legend"].end(), m + ": validation"), ax["legend"].end())
          << ax["legend"].dump();
      for (const char* tosses : {"4", "8"})
        for (const char* seed : {"0", "1"}) {
          const std::string name = "method-" + m + "_tosses-" + tosses + "_seed-" + seed;
          const std::string hist = run_file(ro.sweep_dir, name, "history.csv");
          const int epochs = static_cast<int>(std::count(hist.begin(), hist.end(), '\n')) - 1;  // 0..3
          EXPECT_EQ(testing::line_labelled(ax, name + ": train").value("points", 0), epochs - 1) << name;
          EXPECT_EQ(testing::line_labelled(ax, name + ": validation").value("points", 0), epochs) << name;
          const int best = nlohmann::json::parse(run_file(ro.sweep_dir, name, "params.json")).at("best_epoch");
          EXPECT_EQ(testing::line_labelled(ax, "best epoch " + std::to_string(best) + ": " + name).value("x", nlohmann::json()),
                    nlohmann::json({double(best), double(best)}))
              << name << ": " << ax.dump();
        }
    }
    // the rollout (issue 45): position and, beside it, rotation, true against predicted
    const std::string rollout = ro.out + "/rollout_method-end-to-end_tosses-8_seed-0_toss" +
                                std::to_string(nlohmann::json::parse(run_file(ro.sweep_dir, "method-end-to-end_tosses-8_seed-0",
                                                                              "config.json"))["split"]["test"][0].get<int>());
    const std::string rcsv = read_text_file(rollout + ".csv");
    const int steps = static_cast<int>(std::count(rcsv.begin(), rcsv.end(), '\n')) - 1;
    const nlohmann::json rd = testing::png_description(rollout + ".png");
    ASSERT_TRUE(rd.is_object()) << "no Description in " << rollout << ".png";
    ASSERT_EQ(rd["axes"].size(), 4u) << rd.dump();
    EXPECT_EQ(rd["axes"][0].value("title", "").rfind("position", 0), 0u) << rd.dump();
    EXPECT_EQ(rd["axes"][1].value("title", "").rfind("rotation", 0), 0u) << "rotation beside position: " << rd.dump();
    for (const char* curve : {"true (data)", "predicted"})
      EXPECT_EQ(testing::line_labelled(rd["axes"][1], curve).value("points", 0), steps) << curve;
    EXPECT_EQ(testing::line_labelled(rd["axes"][3], "rotation error").value("points", 0), steps);
  } else {
    EXPECT_FALSE(rr.figures);
    EXPECT_NE(rr.note.find("matplotlib"), std::string::npos);
  }
}

}  // namespace
}  // namespace impulse
