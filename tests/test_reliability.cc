// Issue 50's defects, each replayed: runs and sweeps that reported a wrong result
// without a word, and errors that hid their cause. Every test failed before its fix.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "host/batch/parallel.h"
#include "host/dynamics/synthetic.h"
#include "host/learning/trainer.h"
#include "host/sweep/sweep.h"
#include "io/toss_data.h"
#include "solvers/error.h"
#include "tests/test_util.h"

namespace impulse {
namespace {
namespace fs = std::filesystem;
using testing::read_text_file;

std::string temp_dir(const std::string& name) { return testing::fresh_dir("impulse_rel_", name); }

const std::string& data_file() {
  static const std::string path = [] {
    SyntheticConfig sc;
    sc.n_tosses = 12;
    sc.seed = 5;
    sc.threads = 1;
    const std::string p = temp_dir("data") + "/syn12.npz";
    write_tosses(p, generate_synthetic_tosses(sc));
    return p;
  }();
  return path;
}

TrainConfig config(const std::string& out) {
  TrainConfig c;
  c.data = data_file();
  c.out = out;
  c.max_epochs = 2;
  c.batch_size = 32;
  c.progress = false;
  c.threads = 1;
  return c;
}

std::string error_of(const TrainConfig& c) {
  std::ostringstream log;
  try {
    train(c, log);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

// the CLI's output and exit status
struct Cli {
  int status = -1;
  std::string out;
};
Cli cli(const std::string& args) {
  const std::string file = temp_dir("cli") + "/out.txt";
  const std::string cmd = std::string(IMPULSE_BINARY) + " " + args + " > " + file + " 2>&1";
  const int rc = std::system(cmd.c_str());
  Cli c;
  c.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  c.out = read_text_file(file);
  return c;
}

int count_lines_with(const std::string& text, const std::string& what) {
  int n = 0;
  std::istringstream s(text);
  std::string line;
  while (std::getline(s, line)) n += line.find(what) != std::string::npos;
  return n;
}

SweepOptions sweep_options(const std::string& config, const std::string& out) {
  SweepOptions o;
  o.config = config;
  o.out = out;
  o.exe = IMPULSE_BINARY;
  o.jobs = 1;
  o.threads_per_run = 1;
  o.progress = false;
  o.use_mpi = false;
  return o;
}

std::string sweep_config(const std::string& dir, const std::string& train, const std::string& grid) {
  const std::string p = dir + "/sweep.json";
  std::ofstream(p) << R"({"train": {"data": ")" << data_file() << "\", " << train << R"(}, "grid": )" << grid << "}";
  return p;
}

// ---- 1. a run stopped by its time budget is finished ---------------------------------

TEST(Reliability, ARunThatSpentItsTimeBudgetIsFinishedAndNeverRetrained) {
  const std::string dir = temp_dir("budget");
  const std::string cfg = sweep_config(
      dir, R"("tosses": 4, "epochs": 400, "patience": 1000, "max-seconds": 1, "method": "contactnets-polytope")",
      R"({"seed": [0]})");
  std::ostringstream l1, l2, l3;
  const SweepResult a = run_sweep(sweep_options(cfg, dir + "/ms"), l1);
  ASSERT_EQ(a.done, 1) << l1.str();
  const std::string run = dir + "/ms/runs/seed-0";
  const RunCheck k = check_run(run);
  EXPECT_TRUE(k.ok());
  EXPECT_TRUE(k.finished);
  EXPECT_NE(k.finished_by.find("time budget"), std::string::npos) << k.finished_by;
  EXPECT_LT(k.epochs_done, 400);
  const std::string metrics = read_text_file(run + "/metrics.json"), params = read_text_file(run + "/params.json");
  // the same command twice more: nothing is trained again, nothing is replaced
  run_sweep(sweep_options(cfg, dir + "/ms"), l2);
  run_sweep(sweep_options(cfg, dir + "/ms"), l3);
  EXPECT_EQ(count_lines_with(l2.str(), "] start "), 0) << l2.str();
  EXPECT_EQ(count_lines_with(l3.str(), "] start "), 0) << l3.str();
  EXPECT_EQ(read_text_file(run + "/metrics.json"), metrics);
  EXPECT_EQ(read_text_file(run + "/params.json"), params);
  EXPECT_EQ(check_run(run).epochs_done, k.epochs_done);
  // --list agrees
  SweepOptions lo = sweep_options(cfg, dir + "/ms");
  lo.list_only = true;
  std::ostringstream ll;
  run_sweep(lo, ll);
  EXPECT_NE(ll.str().find("[done]"), std::string::npos) << ll.str();
  // the same train command by hand trains nothing either; a larger budget continues it
  TrainConfig c;
  c.out = run;
  c.progress = false;
  c.threads = 1;
  c.data = data_file();
  c.tosses = 4;
  c.max_epochs = 400;
  c.patience = 1000;
  c.max_seconds = 1;
  std::ostringstream tl;
  train(c, tl);
  EXPECT_EQ(check_run(run).epochs_done, k.epochs_done) << tl.str();
  EXPECT_NE(tl.str().find("time budget is spent"), std::string::npos) << tl.str();
  c.max_seconds = 1e6;
  c.max_epochs = k.epochs_done + 1;
  train(c, tl);
  EXPECT_EQ(check_run(run).epochs_done, k.epochs_done + 1);
}

// the sweep's rule "done = metrics + check finished": an unfinished run that has a
// metrics.json is run again, once (a run_done that accepted it passed every other test)
TEST(Reliability, AnUnfinishedRunWithMetricsIsRedoneOnce) {
  const std::string dir = temp_dir("redo");
  const std::string cfg = sweep_config(dir, R"("tosses": 4, "epochs": 2, "method": "contactnets-polytope")",
                                       R"({"seed": [0, 1]})");
  std::ostringstream l1;
  ASSERT_EQ(run_sweep(sweep_options(cfg, dir + "/s"), l1).done, 2) << l1.str();
  // run seed-1 made unfinished: its config asks for more epochs than its checkpoint has
  const std::string run = dir + "/s/runs/seed-1";
  nlohmann::json cj = nlohmann::json::parse(read_text_file(run + "/config.json"));
  cj["max_epochs"] = 3;
  std::ofstream(run + "/config.json", std::ios::trunc) << cj.dump(2);
  ASSERT_TRUE(fs::exists(run + "/metrics.json"));
  ASSERT_FALSE(check_run(run).finished);
  SweepOptions lo = sweep_options(cfg, dir + "/s");
  lo.list_only = true;
  std::ostringstream ll;
  run_sweep(lo, ll);
  EXPECT_NE(ll.str().find("seed-1 [pending]"), std::string::npos) << "--list agrees with the sweep: " << ll.str();
  std::ostringstream l2, l3;
  run_sweep(sweep_options(cfg, dir + "/s"), l2);
  EXPECT_EQ(count_lines_with(l2.str(), "] start "), 1) << l2.str();
  EXPECT_NE(l2.str().find("start seed-1"), std::string::npos) << l2.str();
  run_sweep(sweep_options(cfg, dir + "/s"), l3);
  EXPECT_EQ(count_lines_with(l3.str(), "] start "), 0) << l3.str();
}

// ---- 2. a resume must prove its configuration ---------------------------------------

TEST(Reliability, WithConfigJsonDeletedAnotherSeedIsRefusedAndNothingIsRewritten) {
  const std::string out = temp_dir("noconfig");
  TrainConfig c = config(out);
  c.method = "end-to-end";
  std::ostringstream log;
  train(c, log);
  fs::remove(out + "/config.json");
  const std::string ck = read_text_file(out + "/checkpoint.json"), params = read_text_file(out + "/params.json"),
                    hist = read_text_file(out + "/history.csv");
  c.seed = 7;
  const std::string e = error_of(c);
  EXPECT_NE(e.find("different configuration"), std::string::npos) << e;
  EXPECT_NE(e.find("seed"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(out + "/config.json")) << "a refused resume rewrites nothing";
  EXPECT_EQ(read_text_file(out + "/checkpoint.json"), ck);
  EXPECT_EQ(read_text_file(out + "/params.json"), params);
  EXPECT_EQ(read_text_file(out + "/history.csv"), hist);
  // the same seed resumes and restores config.json; an edited config.json is a problem for check
  c.seed = 0;
  EXPECT_EQ(error_of(c), "(accepted)");
  ASSERT_TRUE(fs::exists(out + "/config.json"));
  EXPECT_TRUE(check_run(out).ok());
  nlohmann::json cj = nlohmann::json::parse(read_text_file(out + "/config.json"));
  cj["seed"] = 7;
  std::ofstream(out + "/config.json", std::ios::trunc) << cj.dump(2);
  const RunCheck k = check_run(out);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.problems[0].find("differs from the checkpoint's configuration (seed)"), std::string::npos)
      << k.problems[0];
}

// ---- 4. contactnets-deep resumes bit for bit ------------------------------------------

// 3 epochs straight against 1 + a resume to 3: the same parameters and Adam state to
// the last bit (a few network biases differed in the 13th digit: their sum's order
// depended on the scratch buffers' history)
TEST(Reliability, DeepResumesBitForBit) {
  for (int threads : {1, 2}) {
    const std::string a = temp_dir("deep_a" + std::to_string(threads)), b = temp_dir("deep_b" + std::to_string(threads));
    TrainConfig c = config(a);
    c.method = "contactnets-deep";
    c.threads = threads;
    c.max_epochs = 3;
    std::ostringstream log;
    train(c, log);
    c.out = b;
    c.max_epochs = 1;
    train(c, log);
    c.max_epochs = 3;
    train(c, log);
    const nlohmann::json ja = nlohmann::json::parse(read_text_file(a + "/checkpoint.json"));
    const nlohmann::json jb = nlohmann::json::parse(read_text_file(b + "/checkpoint.json"));
    EXPECT_TRUE(ja.at("theta") == jb.at("theta")) << threads << " thread(s)";
    EXPECT_TRUE(ja.at("adam") == jb.at("adam")) << threads << " thread(s)";
    EXPECT_EQ(read_text_file(a + "/params.json"), read_text_file(b + "/params.json"));
  }
}

// ---- 5. a sweep's run options are checked when the config is read -------------------

TEST(Reliability, BadRunOptionsInASweepAreRefusedWithTheReason) {
  const std::string dir = temp_dir("badopts");
  for (const auto& [train, want] : std::vector<std::pair<std::string, std::string>>{
           {R"("method": "rm -rf /")", "--method"},
           {R"("method": "end-to-end", "patience": 5.0)", "--patience"},
           {R"("method": "end-to-end", "epochs": true)", "--epochs"},
           {R"("method": "end-to-end", "seed": -1)", "seed"},
           {R"("method": "end-to-end", "lr": 1e308, "friction": "octagon", "known": "friction")", "--known"}}) {
    const std::string cfg = sweep_config(dir, train, R"({"tosses": [4]})");
    const Cli r = cli("sweep --config " + cfg + " --out " + dir + "/s");
    EXPECT_EQ(r.status, 2) << train << ": " << r.out;
    EXPECT_NE(r.out.find("run tosses-4"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(want), std::string::npos) << train << ": " << r.out;
    EXPECT_EQ(r.out.find("Run with --help"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir + "/s/runs")) << "nothing is started or written";
  }
}

// a run killed by a signal names the signal, not its last epoch line
TEST(Reliability, ARunKilledByASignalSaysSo) {
  const std::string dir = temp_dir("signal");
  const std::string exe = dir + "/fake_impulse.sh";
  std::ofstream(exe) << "#!/bin/sh\necho 'epoch 1: train loss 0.5, valid loss 0.4'\nkill -9 $$\n";
  ::chmod(exe.c_str(), 0755);
  const std::string cfg = sweep_config(dir, R"("method": "end-to-end")", R"({"seed": [0]})");
  SweepOptions o = sweep_options(cfg, dir + "/s");
  o.exe = exe;
  std::ostringstream l;
  const SweepResult r = run_sweep(o, l);
  ASSERT_EQ(r.failed, 1) << l.str();
  EXPECT_NE(r.rows[0].error.find("killed by signal 9"), std::string::npos) << r.rows[0].error;
  EXPECT_NE(r.rows[0].error.find("its last output: epoch 1"), std::string::npos) << r.rows[0].error;
}

// ---- 6. numbers out of range ---------------------------------------------------------

TEST(Reliability, SeedsThreadsAndHugeNumbersAreRefusedByName) {
  const std::string out = temp_dir("range");
  for (const std::string bad : {"--seed -1", "--seed 18446744073709551616", "--seed 1.5"}) {
    const Cli r = cli("train --method end-to-end --epochs 1 --data " + data_file() + " --out " + out + "/a " + bad);
    EXPECT_NE(r.status, 0) << bad;
    EXPECT_NE(r.out.find("--seed"), std::string::npos) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("a seed is an integer from 0 to 18446744073709551615"), std::string::npos) << r.out;
  }
  const Cli big = cli("train --method end-to-end --epochs 1 --data " + data_file() + " --out " + out + "/b --lr 1e400");
  EXPECT_NE(big.status, 0);
  EXPECT_NE(big.out.find("--lr"), std::string::npos) << big.out;
  EXPECT_LT(big.out.size(), 400u) << "no 300-digit numbers: " << big.out;
  TrainConfig c = config(out + "/c");
  c.threads = 100000;
  const std::string e = error_of(c);
  EXPECT_NE(e.find("--threads 100000"), std::string::npos) << e;
  EXPECT_THROW(resolve_threads(100000), Error);
  EXPECT_EQ(resolve_threads(max_threads()), max_threads());
}

// a learning rate that makes the parameters diverge: the error names --lr, check says
// the run failed, and the same command is refused with the reason instead of retried
TEST(Reliability, ADivergingRunNamesTheLearningRateAndIsNotRetried) {
  const std::string out = temp_dir("diverge");
  TrainConfig c = config(out);
  c.lr = 1e308;
  const std::string e = error_of(c);
  EXPECT_NE(e.find("--lr"), std::string::npos) << e;
  EXPECT_NE(e.find("diverged"), std::string::npos) << e;
  const RunCheck k = check_run(out);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.problems.front().find("the training failed"), std::string::npos) << k.problems.front();
  const std::string again = error_of(c);
  EXPECT_NE(again.find("failed before with this configuration"), std::string::npos) << again;
  EXPECT_NE(again.find("--lr"), std::string::npos) << again;
}

// ---- 7. huge grids ---------------------------------------------------------------------

TEST(Reliability, AHugeGridIsRefusedBeforeItIsExpanded) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(R"({"train": {"method": "end-to-end"}, "grid": {}})");
  std::vector<int> thousand(1000);
  for (int i = 0; i < 1000; ++i) thousand[static_cast<size_t>(i)] = i;
  j["grid"]["seed"] = thousand;
  j["grid"]["tosses"] = thousand;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    parse_sweep_config(j, "/base");
    ADD_FAILURE() << "a grid of a million runs was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expands to 1000000 runs, more than --max-runs 10000"), std::string::npos)
        << e.what();
  }
  // refused before it is expanded (expanding it took seconds and gigabytes); a
  // bound, not a benchmark: two orders of magnitude above what it takes
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  j["grid"]["tosses"] = std::vector<int>{1, 2, 3};
  EXPECT_EQ(parse_sweep_config(j, "/base").runs.size(), 3000u);
  j["grid"]["tosses"] = std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  EXPECT_THROW(parse_sweep_config(j, "/base"), Error);
  EXPECT_EQ(parse_sweep_config(j, "/base", 11000).runs.size(), 11000u) << "a larger grid, confirmed";
}

// ---- 8. the summary's epochs, --list's commands ---------------------------------------

TEST(Reliability, CommandsArePrintedQuotedForAShell) {
  const std::vector<std::string> args = {"train", "--data", "a b/$(touch pwned)'x", "--seed", "3", "--note", ""};
  const std::string cmd = shell_command("impulse", args);
  EXPECT_EQ(cmd, "impulse train --data 'a b/$(touch pwned)'\\''x' --seed 3 --note ''");
  // a shell reads it back as the same arguments and runs nothing inside them
  const std::string dir = temp_dir("quote");
  const std::string file = dir + "/args.txt";
  const std::string sh = "cd " + dir + " && printf '%s\\n' " + cmd.substr(std::string("impulse ").size()) + " > " + file;
  ASSERT_EQ(std::system(sh.c_str()), 0);
  std::string want;
  for (const std::string& a : args) want += a + "\n";
  EXPECT_EQ(read_text_file(file), want);
  EXPECT_FALSE(fs::exists(dir + "/pwned"));
}

TEST(Reliability, SummaryEpochsCountTrainedEpochsAndAGarbageCheckpointKeepsItsMetrics) {
  const std::string dir = temp_dir("summary");
  const std::string cfg = sweep_config(dir, R"("tosses": 4, "epochs": 3, "patience": 100, "method": "end-to-end")",
                                       R"({"seed": [0, 1]})");
  std::ostringstream l1;
  const SweepResult a = run_sweep(sweep_options(cfg, dir + "/s"), l1);
  ASSERT_EQ(a.done, 2) << l1.str();
  for (const SweepRow& r : a.rows) EXPECT_EQ(r.epochs, 3) << r.name << ": the epoch-0 row is not an epoch";
  EXPECT_NE(read_text_file(dir + "/s/summary.csv").find(",3,"), std::string::npos);
  // 9. a garbage checkpoint: the run fails with advice and its metrics stay
  const std::string run = dir + "/s/runs/seed-1";
  const std::string metrics = read_text_file(run + "/metrics.json");
  std::ofstream(run + "/checkpoint.json", std::ios::trunc) << "garbage{";
  std::ostringstream l2;
  const SweepResult b = run_sweep(sweep_options(cfg, dir + "/s"), l2);
  EXPECT_EQ(b.failed, 1) << l2.str();
  EXPECT_EQ(read_text_file(run + "/metrics.json"), metrics) << "nothing the user had is lost";
  const std::string status = read_text_file(dir + "/s/status/seed-1.json");
  EXPECT_NE(status.find("move"), std::string::npos) << status;
  EXPECT_NE(status.find("aside"), std::string::npos) << status;
  // train itself says the same
  TrainConfig c;
  c.out = run;
  c.progress = false;
  c.data = data_file();
  c.method = "end-to-end";
  c.tosses = 4;
  c.seed = 1;
  c.max_epochs = 3;
  c.patience = 100;
  const std::string e = error_of(c);
  EXPECT_NE(e.find("move " + run + " aside"), std::string::npos) << e;
}

// ---- 3. one sweep directory, one sweep; the shards of one layout together -----------

pid_t spawn_sweep(const std::string& cfg, const std::string& out, const std::string& shard, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl(IMPULSE_BINARY, IMPULSE_BINARY, "sweep", "--config", cfg.c_str(), "--out", out.c_str(), "--jobs", "1",
            "--threads-per-run", "1", "--shard", shard.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

TEST(Reliability, OneSweepDirectoryTakesOneSweepOrTheShardsOfOneLayout) {
  const std::string dir = temp_dir("dirlock");
  // runs that take a few seconds each: their time budget ends them
  const std::string cfg = sweep_config(
      dir, R"("tosses": 4, "epochs": 100000, "patience": 100000, "max-seconds": 3, "method": "contactnets-polytope")",
      R"({"seed": [0, 1]})");
  const std::string out = dir + "/s";
  const pid_t p0 = spawn_sweep(cfg, out, "0/2", dir + "/p0.log");
  // wait until shard 0 holds the directory
  for (int i = 0; i < 400 && count_lines_with(read_text_file(out + "/sweep.log"), "start seed-0") == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_EQ(count_lines_with(read_text_file(out + "/sweep.log"), "start seed-0"), 1) << read_text_file(dir + "/p0.log");
  auto refusal = [&](int shard, int shards) {
    SweepOptions o = sweep_options(cfg, out);
    o.shard = shard;
    o.shards = shards;
    std::ostringstream l;
    try {
      run_sweep(o, l);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(ran)");
  };
  EXPECT_NE(refusal(0, 1).find("in use by a sweep in 2 shards"), std::string::npos) << "a plain sweep";
  EXPECT_NE(refusal(1, 3).find("in use by a sweep in 2 shards (this one is in 3)"), std::string::npos);
  EXPECT_NE(refusal(0, 2).find("another sweep of the same shard"), std::string::npos);
  // the other shard of the layout runs beside it, and neither fails the other's runs
  const pid_t p1 = spawn_sweep(cfg, out, "1/2", dir + "/p1.log");
  int s0 = 0, s1 = 0;
  ::waitpid(p0, &s0, 0);
  ::waitpid(p1, &s1, 0);
  EXPECT_TRUE(WIFEXITED(s0) && WEXITSTATUS(s0) == 0) << read_text_file(dir + "/p0.log");
  EXPECT_TRUE(WIFEXITED(s1) && WEXITSTATUS(s1) == 0) << read_text_file(dir + "/p1.log");
  EXPECT_EQ(count_lines_with(read_text_file(out + "/sweep.log"), "FAILED"), 0) << read_text_file(out + "/sweep.log");
  // and once both are gone a plain sweep may take the directory (nothing left to run)
  EXPECT_EQ(refusal(0, 1), "(ran)");
}

// ---- 11. an orphaned warm-start file is removed on resume ---------------------------

TEST(Reliability, AnOrphanedWarmStartFileIsRemovedOnResume) {
  const std::string out = temp_dir("orphan");
  TrainConfig c = config(out);
  std::ostringstream log;
  train(c, log);
  ASSERT_TRUE(fs::exists(out + "/warm_starts_2.npz"));
  // what a checkpoint write that failed (ENOSPC) after its warm starts left
  std::ofstream(out + "/warm_starts_3.npz") << "partial";
  c.max_epochs = 3;
  train(c, log);
  EXPECT_FALSE(fs::exists(out + "/warm_starts_2.npz"));
  EXPECT_TRUE(fs::exists(out + "/warm_starts_3.npz"));
  EXPECT_TRUE(check_run(out).ok());
  std::ofstream(out + "/warm_starts_9.npz") << "partial";
  train(c, log);  // finished: nothing trained, the orphan still goes
  EXPECT_FALSE(fs::exists(out + "/warm_starts_9.npz"));
}

// ---- threads: the pool ------------------------------------------------------------------

TEST(Reliability, ThePoolRunsEveryChunkOnceNestedAndConcurrentLoopsIncluded) {
  for (int threads : {1, 2, 3, 8}) {
    std::vector<int> hits(1000, 0);
    parallel_for(1000, threads, [&](int worker, int b, int e) {
      EXPECT_GE(worker, 0);
      EXPECT_LT(worker, threads);
      for (int i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
      // a nested loop runs on its caller, worker 0
      parallel_for(3, 2, [&](int w, int, int) { EXPECT_EQ(w, 0); });
    });
    for (int h : hits) ASSERT_EQ(h, 1) << threads;
  }
  // two threads starting loops at once: both complete, every element once
  std::vector<int> a(5000, 0), b(5000, 0);
  std::thread other([&] {
    for (int k = 0; k < 50; ++k) parallel_for(100, 2, [&](int, int s, int e) { for (int i = s; i < e; ++i) ++a[static_cast<size_t>(k * 100 + i)]; });
  });
  for (int k = 0; k < 50; ++k) parallel_for(100, 2, [&](int, int s, int e) { for (int i = s; i < e; ++i) ++b[static_cast<size_t>(k * 100 + i)]; });
  other.join();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_TRUE(a[i] == 1 && b[i] == 1) << i;
  // a count near INT_MAX: every element once, no overflow of the chunk arithmetic
  for (int threads : {1, 2}) {
    std::atomic<long long> covered{0};
    std::atomic<int> last{0};
    parallel_for(std::numeric_limits<int>::max(), threads, [&](int, int s, int e) {
      ASSERT_LE(s, e);
      covered += e - s;
      if (e == std::numeric_limits<int>::max()) last = e;
    });
    EXPECT_EQ(covered.load(), std::numeric_limits<int>::max()) << threads;
    EXPECT_EQ(last.load(), std::numeric_limits<int>::max()) << threads;
  }
  // the first exception comes back on the caller, after every worker stopped
  EXPECT_THROW(parallel_for(100, 2, [](int, int s, int) {
                 if (s >= 50) throw Error("chunk");
               }),
               Error);
}

TEST(Reliability, ALoopWhoseThreadsDoNotPayRunsAloneAndTriesThemAgainLater) {
  ThreadChoice c;
  EXPECT_TRUE(c.next_parallel());  // a new loop starts on its threads
  c.record(1.8);
  c.record(1.6);
  EXPECT_TRUE(c.parallel());
  // a busy machine: the threads cost more than they give; the mean gain falls below 1
  int calls = 0;
  while (c.parallel() && calls < 20) {
    ASSERT_TRUE(c.next_parallel());
    c.record(0.6);
    ++calls;
  }
  ASSERT_FALSE(c.parallel());
  EXPECT_GT(calls, 1);  // one bad call does not undo a good mean
  // alone for 8 calls, then one probe on the threads; a bad probe doubles the wait
  for (int wait : {ThreadChoice::kFirstBackoff, 2 * ThreadChoice::kFirstBackoff, 4 * ThreadChoice::kFirstBackoff}) {
    for (int k = 0; k < wait; ++k) ASSERT_FALSE(c.next_parallel()) << wait << " " << k;
    ASSERT_TRUE(c.next_parallel()) << wait;
    c.record(0.95);
    ASSERT_FALSE(c.parallel());
  }
  // the wait never passes kMaxBackoff
  for (int probe = 0; probe < 10; ++probe) {
    int alone = 0;
    while (!c.next_parallel()) ++alone;
    ASSERT_LE(alone, ThreadChoice::kMaxBackoff);
    c.record(0.9);
  }
  // a good probe brings the threads back, and the wait starts again from 8
  while (!c.next_parallel()) {
  }
  c.record(1.7);
  EXPECT_TRUE(c.parallel());
  EXPECT_TRUE(c.next_parallel());
  c.record(1.7);
  while (c.parallel()) {
    ASSERT_TRUE(c.next_parallel());
    c.record(0.5);
  }
  int alone = 0;
  while (!c.next_parallel()) ++alone;
  EXPECT_EQ(alone, ThreadChoice::kFirstBackoff);
}

TEST(Reliability, LoopsThatRunAloneOrOnThreadsGiveTheSameResults) {
  // many small loops (the pool's choice changes between them): each element once, every time
  std::vector<double> one(300), two(300);
  for (int call = 0; call < 400; ++call) {
    const int n = 1 + call % 300;
    for (auto* out : {&one, &two}) {
      std::fill(out->begin(), out->end(), 0.0);
      parallel_for(n, out == &one ? 1 : 2, [&](int, int b, int e) {
        for (int i = b; i < e; ++i) (*out)[static_cast<size_t>(i)] += std::sqrt(double(i + call));
      });
    }
    ASSERT_EQ(one, two) << call;
  }
}

}  // namespace
}  // namespace impulse
