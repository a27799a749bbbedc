// impulse: the command-line front end.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include <fstream>

#include "host/evaluate.h"
#include "host/generate.h"
#include "host/mpc_demo.h"
#include "host/synthetic.h"
#include "host/trainer.h"
#include "io/zip.h"
#include "host/qp_batch.h"
#include "host/qp_file.h"
#include "solvers/lanes.h"

using namespace impulse;

namespace {

std::string capabilities() {
  const cuda::DeviceInfo d = cuda::device_info();
  std::string s = std::string("cuda kernels: ") + (d.built ? "built (sm_80, sm_90)" : "not built");
  if (d.built) {
    if (d.count > 0)
      s += "\ncuda device: " + d.name + " (" + std::to_string(d.count) + " present)";
    else
      s += "\ncuda device: none (" + d.reason + ")";
  }
  s += "\ncpu threads: " + std::to_string(resolve_threads(0));
  s += "\ncpu lanes: " + std::to_string(Lanes<double>::W) + " doubles / " +
       std::to_string(Lanes<float>::W) + " floats per vector";
  return s;
}

// the built-in data set: data/synthetic_cube.npz of the source tree (or of the
// working directory when the binary has moved).
std::string default_data_path() {
#ifdef IMPULSE_SOURCE_DIR
  const std::string p = std::string(IMPULSE_SOURCE_DIR) + "/data/synthetic_cube.npz";
  if (std::ifstream(p).good()) return p;
#endif
  return "data/synthetic_cube.npz";
}

struct SolveArgs {
  std::string in, out, backend = "cpu", precision = "double", lanes = "on";
  int threads = 0, max_iter = 4000;
  double eps = 1e-5;
  bool time_each = false;
};

template <class T>
int run_solve(const SolveArgs& a) {
  QpFile f = read_qp_file(a.in);
  QpBatch<T> batch = f.batch.template cast<T>();
  QpSettings<T> st;
  st.eps_abs = static_cast<T>(a.eps);
  st.eps_rel = static_cast<T>(a.eps);
  st.max_iter = a.max_iter;
  BatchOptions opt;
  opt.backend = parse_backend(a.backend);
  opt.threads = a.threads;
  opt.time_each = a.time_each;
  opt.lanes = a.lanes == "on";
  QpSolutions<T> sol;
  if (f.has_warm_start) {
    sol.resize(batch.size, batch.n, batch.m());
    sol.x.assign(f.x0.begin(), f.x0.end());
    sol.y.assign(f.y0.begin(), f.y0.end());
    opt.warm_start = true;
  }
  const auto t0 = std::chrono::steady_clock::now();
  solve_batch(batch, st, opt, sol);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_solution_file(a.out, sol);
  long iters = 0;
  for (int k : sol.iterations) iters += k;
  std::printf("solved %d problems (n=%d, m=%d) on %s in %.3f s: %.0f problems/s, mean %.1f iterations\n",
              batch.size, batch.n, batch.m(), a.backend.c_str(), s, batch.size / s,
              double(iters) / batch.size);
  std::printf("status: solved %d, inaccurate %d, max_iter %d, infeasible %d/%d, invalid %d, numerical %d\n",
              sol.count(SolveStatus::kSolved), sol.count(SolveStatus::kSolvedInaccurate),
              sol.count(SolveStatus::kMaxIterations), sol.count(SolveStatus::kPrimalInfeasible),
              sol.count(SolveStatus::kDualInfeasible), sol.count(SolveStatus::kInvalidInput),
              sol.count(SolveStatus::kNumericalError));
  const auto bad = sol.problems_not_solved();
  for (size_t i = 0; i < bad.size() && i < 20; ++i) std::fprintf(stderr, "%s\n", bad[i].c_str());
  if (bad.size() > 20) std::fprintf(stderr, "... and %zu more\n", bad.size() - 20);
  std::printf("wrote %s\n", a.out.c_str());
  return 0;
}

GeneratedQps generate(const std::string& kind, int count, uint64_t seed) {
  if (kind == "cube-loss") return cube_loss_batch(count, FrictionModel::kCone, seed);
  if (kind == "cube-loss-octagon") return cube_loss_batch(count, FrictionModel::kOctagon, seed);
  if (kind == "anitescu") return anitescu_step_batch(count, seed);
  if (kind == "random") {
    ConeSpec c;
    c.n_zero = 2;
    c.n_nonneg = 10;
    c.n_soc = 2;
    return random_qp_batch(count, 12, c, seed);
  }
  throw Error("unknown kind '" + kind + "': expected cube-loss, cube-loss-octagon, anitescu, random");
}

// solve generated batches of each shape on the CPU and print throughput
int run_bench(int count, int threads, const std::string& backend, uint64_t seed) {
  std::printf("%-20s %6s %8s %12s %14s %10s %8s\n", "problem", "prec", "batch", "backend",
              "problems/s", "us/problem", "iters");
  for (const std::string kind : {"cube-loss", "cube-loss-octagon", "anitescu"}) {
    const GeneratedQps g = generate(kind, count, seed);
    auto one = [&](auto tag, bool lanes) {
      using T = decltype(tag);
      const QpBatch<T> b = g.batch.template cast<T>();
      QpSettings<T> st;
      BatchOptions opt;
      opt.threads = threads;
      opt.backend = parse_backend(backend);
      opt.lanes = lanes;
      QpSolutions<T> sol;
      solve_batch(b, st, opt, sol);  // warm-up
      const auto t0 = std::chrono::steady_clock::now();
      solve_batch(b, st, opt, sol);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      long it = 0;
      for (int k : sol.iterations) it += k;
      const std::string path =
          opt.backend == Backend::kCpu ? (lanes ? "cpu-lanes" : "cpu-one") : backend;
      std::printf("%-20s %6s %8d %12s %14.0f %10.2f %8.1f\n", kind.c_str(),
                  sizeof(T) == 4 ? "float" : "double", count, path.c_str(), count / s,
                  1e6 * s / count * (opt.backend == Backend::kCpu ? resolve_threads(threads) : 1),
                  double(it) / count);
    };
    for (bool lanes : {true, false}) {
      if (!lanes && parse_backend(backend) != Backend::kCpu) continue;
      one(double{}, lanes);
      one(float{}, lanes);
    }
  }
  std::printf("(us/problem is per thread: wall time x threads / batch; cpu-lanes: groups of\n"
              " %d doubles or %d floats in the lanes of one vector, cpu-one: one problem at a time)\n",
              Lanes<double>::W, Lanes<float>::W);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"impulse: batched conic-QP and LCP solvers for learning contact dynamics"};
  app.require_subcommand(0, 1);
  bool version = false;
  app.add_flag("--version", version, "print the version and this build's capabilities");

  SolveArgs sa;
  auto* solve = app.add_subcommand("solve-batch", "solve a batch file (.npz) and write the solutions (.npz)");
  solve->add_option("--in", sa.in, "problem batch file")->required();
  solve->add_option("--out", sa.out, "solution file to write")->required();
  solve->add_option("--backend", sa.backend, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  solve->add_option("--threads", sa.threads, "CPU threads (0 = all cores)");
  solve->add_option("--precision", sa.precision, "double or float")->check(CLI::IsMember({"double", "float"}));
  solve->add_option("--eps", sa.eps, "absolute and relative tolerance");
  solve->add_option("--max-iter", sa.max_iter, "iteration budget per problem");
  solve->add_flag("--time-each", sa.time_each,
                  "record per-problem solve time (CPU; with lanes, each problem's share of its group's)");
  solve->add_option("--lanes", sa.lanes,
                    "CPU: on = groups of problems in the lanes of one SIMD vector, off = one at a time")
      ->check(CLI::IsMember({"on", "off"}));

  std::string kind = "cube-loss", gen_out;
  int count = 1000;
  uint64_t seed = 0;
  auto* gen = app.add_subcommand("generate", "write a generated batch file");
  gen->add_option("--kind", kind, "cube-loss | cube-loss-octagon | anitescu | random");
  gen->add_option("--count", count, "problems");
  gen->add_option("--seed", seed, "random seed");
  gen->add_option("--out", gen_out, "file to write")->required();

  int b_count = 20000, b_threads = 0;
  std::string b_backend = "cpu";
  auto* bench = app.add_subcommand("bench-solvers", "throughput on generated batches of each problem shape");
  bench->add_option("--count", b_count, "problems per batch");
  bench->add_option("--threads", b_threads, "CPU threads (0 = all cores)");
  bench->add_option("--backend", b_backend, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  bench->add_option("--seed", seed, "random seed");

  TrainConfig tc;
  tc.data = default_data_path();
  auto* tr = app.add_subcommand("train", "learn a contact model from cube tosses (resumes RUN_DIR if it holds a checkpoint)");
  tr->add_option("--method", tc.method, "contactnets-polytope | contactnets-deep | end-to-end")
      ->check(CLI::IsMember({"contactnets-polytope", "contactnets-deep", "end-to-end"}));
  tr->add_option("--data", tc.data, "data set: a ContactNets or CCN folder, or an impulse .npz (default: the built-in synthetic set)");
  tr->add_option("--tosses", tc.tosses, "training tosses N (0 = the whole 50% training split)");
  tr->add_option("--seed", tc.seed, "seed of the split, initialization and batch order");
  tr->add_option("--out", tc.out, "run directory")->required();
  tr->add_option("--epochs", tc.max_epochs, "most epochs");
  tr->add_option("--patience", tc.patience, "early stop after this many epochs without a better validation loss");
  tr->add_option("--batch", tc.batch_size, "transitions per Adam step");
  tr->add_option("--lr", tc.lr, "learning rate (0 = the method's default)");
  tr->add_option("--weight-decay", tc.weight_decay, "AdamW weight decay (< 0 = the method's default)");
  tr->add_option("--init-noise", tc.init_noise, "ContactNets: initial error, fraction of the true values");
  tr->add_option("--friction", tc.friction, "cone (exact) | octagon (reference implementation)")
      ->check(CLI::IsMember({"cone", "octagon"}));
  tr->add_option("--eps", tc.eps, "QP tolerance");
  tr->add_option("--threads", tc.threads, "CPU threads (0 = all cores)");
  tr->add_option("--backend", tc.backend, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  tr->add_option("--max-seconds", tc.max_seconds, "stop after this long (checkpointed; the same command resumes)");

  EvalOptions eo;
  std::string eval_out = "metrics.json";
  auto* ev = app.add_subcommand("eval", "roll out tosses with a trained run and write the paper's metrics");
  ev->add_option("--run", eo.run_dir, "run directory")->required();
  ev->add_option("--data", eo.data, "data set (default: the run's)");
  ev->add_option("--tosses", eo.tosses, "test (the run's test split) | all | a list 3,17,42");
  ev->add_option("--params", eo.params, "parameter file of the run (params.json, init_params.json)");
  ev->add_option("--threads", eo.threads, "CPU threads (0 = all cores)");
  ev->add_option("--out", eval_out, "metrics file to write (JSON)");

  EvalOptions ro;
  int r_toss = 0;
  std::string r_out;
  auto* ru = app.add_subcommand("rollout", "roll out one toss with a trained run and write a CSV for plotting");
  ru->add_option("--run", ro.run_dir, "run directory")->required();
  ru->add_option("--data", ro.data, "data set (default: the run's)");
  ru->add_option("--toss", r_toss, "toss index")->required();
  ru->add_option("--params", ro.params, "parameter file of the run");
  ru->add_option("--out", r_out, "CSV file to write")->required();

  SyntheticConfig sc;
  std::string s_out;
  auto* gt = app.add_subcommand("generate-tosses", "simulate synthetic cube tosses with known geometry, friction and inertia");
  gt->add_option("--count", sc.n_tosses, "tosses");
  gt->add_option("--seed", sc.seed, "random seed");
  gt->add_option("--mu", sc.mu, "friction coefficient");
  gt->add_option("--half-width", sc.half_width, "cube half-width (m)");
  gt->add_option("--noise", sc.position_noise_std, "std of position noise added after simulating (m)");
  gt->add_option("--threads", sc.threads, "CPU threads (0 = all cores)");
  gt->add_option("--out", s_out, "file to write (.npz)")->required();

  std::string mpc_task = "cartpole", mpc_adapt = "on", mpc_out;
  auto* mpc = app.add_subcommand("mpc-demo", "closed-loop C3 MPC with online residual learning, in simulation");
  mpc->add_option("--task", mpc_task, "cartpole | ball-rolling")->check(CLI::IsMember({"cartpole", "ball-rolling"}));
  mpc->add_option("--adapt", mpc_adapt, "on | off: learn the contact residual online")->check(CLI::IsMember({"on", "off"}));
  mpc->add_option("--out", mpc_out, "CSV file to write (trajectory, residual, loss history)")->required();

  CLI11_PARSE(app, argc, argv);
  try {
    if (version) {
      std::printf("impulse %s\n%s\n", IMPULSE_VERSION, capabilities().c_str());
      return 0;
    }
    if (*solve) return sa.precision == "float" ? run_solve<float>(sa) : run_solve<double>(sa);
    if (*gen) {
      const GeneratedQps g = generate(kind, count, seed);
      write_qp_file(gen_out, g.batch);
      std::printf("wrote %d %s problems (n=%d, m=%d) to %s\n", count, kind.c_str(), g.batch.n,
                  g.batch.m(), gen_out.c_str());
      return 0;
    }
    if (*bench) return run_bench(b_count, b_threads, b_backend, seed);
    if (*tr) {
      const TrainResult r = train(tc, std::cout);
      std::printf("best epoch %d, validation loss %.6g; learned parameters: %s/params.json\n",
                  r.best_epoch, r.best_valid, tc.out.c_str());
      return 0;
    }
    if (*ev) {
      const nlohmann::json m = evaluate_run(eo);
      write_text_atomic(eval_out, m.dump(2) + "\n");
      std::printf("%s on %d tosses: position error %.4f m (%.1f%% of width), rotation error %.2f deg, "
                  "penetration %.5f m (%.2f%% of width); wrote %s\n",
                  m["method"].get<std::string>().c_str(), m["n_tosses"].get<int>(),
                  m["position_error_m"].get<double>(), m["position_error_pct_width"].get<double>(),
                  m["rotation_error_deg"].get<double>(), m["penetration_m"].get<double>(),
                  m["penetration_pct_width"].get<double>(), eval_out.c_str());
      return 0;
    }
    if (*ru) {
      rollout_run(ro, r_toss, r_out);
      std::printf("wrote %s\n", r_out.c_str());
      return 0;
    }
    if (*mpc) return run_mpc_demo(mpc_task, mpc_adapt == "on", mpc_out, std::cerr);
    if (*gt) {
      const TossSet set = generate_synthetic_tosses(sc);
      write_tosses(s_out, set);
      std::printf("wrote %zu tosses (%zu rows, mu %.3g, half-width %.4g m) to %s\n", set.tosses.size(),
                  set.rows(), sc.mu, sc.half_width, s_out.c_str());
      return 0;
    }
    std::cout << app.help();
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "impulse: error: %s\n", e.what());
    return 2;
  }
}
