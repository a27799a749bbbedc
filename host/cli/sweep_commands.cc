// The sweep group: sweep (host/sweep/sweep.h) and report (host/sweep/report.h).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "host/cli/commands.h"
#include "host/sweep/report.h"
#include "host/sweep/sweep.h"
#include "solvers/error.h"

namespace impulse::cli {
namespace {

std::string figure_script_path() { return source_file("host/sweep/report_figures.py"); }

}  // namespace

void add_sweep_commands(CLI::App& app, Commands& out) {
  struct SweepArgs {
    SweepOptions opt;
    std::string shard;
  };
  auto sa = std::make_shared<SweepArgs>();
  auto* sw = app.add_subcommand(
      "sweep", "run a grid of trainings and evaluations (restart the same command to continue a stopped sweep)");
  sw->add_option("--config", sa->opt.config, "sweep configuration (JSON; host/sweep/sweep.h, bench/sweeps/)")->required();
  sw->add_option("--out", sa->opt.out, "sweep directory")->required();
  sw->add_option("--jobs", sa->opt.jobs, "runs at once (0 = cores / threads per run)");
  sw->add_option("--threads-per-run", sa->opt.threads_per_run, "CPU threads of each run (0 = the config's, else 1)");
  sw->add_option("--shard", sa->shard, "i/N: run only the runs with index % N == i (job arrays; 0-based)");
  sw->add_option("--runs-per-gpu", sa->opt.runs_per_gpu, "concurrent --backend cuda runs on each GPU");
  sw->add_option("--exe", sa->opt.exe, "the impulse binary each run executes (default: this one)");
  sw->add_flag("--list", sa->opt.list_only, "print the runs, their state and command lines; run nothing");
  sw->add_option("--max-runs", sa->opt.max_runs,
                 "refuse a grid of more runs than this (a larger sweep is confirmed by raising it)")
      ->check(CLI::Range(1, 100000000));
  sa->opt.check_run_args = check_train_arguments;
  out.push_back({sw, [sa] {
                   if (!sa->shard.empty()) {
                     const auto slash = sa->shard.find('/');
                     try {
                       size_t a = 0, b = 0;
                       if (slash == std::string::npos) throw std::invalid_argument("");
                       sa->opt.shard = std::stoi(sa->shard.substr(0, slash), &a);
                       sa->opt.shards = std::stoi(sa->shard.substr(slash + 1), &b);
                       if (a != slash || b != sa->shard.size() - slash - 1) throw std::invalid_argument("");
                     } catch (const std::exception&) {
                       throw Error("--shard " + sa->shard + ": expected i/N, e.g. 0/4");
                     }
                   }
                   const SweepResult r = run_sweep(sa->opt, std::cout);
                   if (sa->opt.list_only) return 0;
                   if (r.interrupted) return 130;
                   return r.failed > 0 ? 4 : 0;
                 },
                 "; 4 a run of the grid failed (the others are done); 130 interrupted (the same command resumes)"});

  auto ra = std::make_shared<ReportOptions>();
  ra->figure_script = figure_script_path();
  auto* rp = app.add_subcommand("report", "tables and figures of a sweep, or a run's training curve and rollout");
  rp->add_option("--sweep", ra->sweep_dir, "sweep directory");
  rp->add_option("--run", ra->run_dir, "one run directory");
  rp->add_option("--out", ra->out, "folder for the tables and figures")->required();
  rp->add_option("--subset", ra->tosses, "the tosses to roll out, a list 3,17 (default: the first test toss)");
  rp->add_option("--threads", ra->threads, "CPU threads for the rollouts (0 = all cores)");
  rp->add_option("--python", ra->python, "python with matplotlib for the figures");
  out.push_back({rp, [ra] {
                   const ReportResult r = make_report(*ra, std::cout);
                   std::printf("wrote %zu files to %s%s\n", r.files.size(), ra->out.c_str(),
                               r.figures ? " (tables, CSVs and figures)" : " (tables and CSVs; no figures)");
                   return 0;
                 }});
}

}  // namespace impulse::cli
