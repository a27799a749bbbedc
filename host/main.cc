// impulse: the command-line front end.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "host/generate.h"
#include "host/qp_batch.h"
#include "host/qp_file.h"

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
  return s;
}

struct SolveArgs {
  std::string in, out, backend = "cpu", precision = "double";
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
  std::printf("%-20s %6s %8s %10s %14s %10s %8s\n", "problem", "prec", "batch", "backend",
              "problems/s", "us/problem", "iters");
  for (const std::string kind : {"cube-loss", "cube-loss-octagon", "anitescu"}) {
    const GeneratedQps g = generate(kind, count, seed);
    auto one = [&](auto tag) {
      using T = decltype(tag);
      const QpBatch<T> b = g.batch.template cast<T>();
      QpSettings<T> st;
      BatchOptions opt;
      opt.threads = threads;
      opt.backend = parse_backend(backend);
      QpSolutions<T> sol;
      solve_batch(b, st, opt, sol);  // warm-up
      const auto t0 = std::chrono::steady_clock::now();
      solve_batch(b, st, opt, sol);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      long it = 0;
      for (int k : sol.iterations) it += k;
      std::printf("%-20s %6s %8d %10s %14.0f %10.2f %8.1f\n", kind.c_str(),
                  sizeof(T) == 4 ? "float" : "double", count, backend.c_str(), count / s,
                  1e6 * s / count * (opt.backend == Backend::kCpu ? resolve_threads(threads) : 1),
                  double(it) / count);
    };
    one(double{});
    one(float{});
  }
  std::printf("(us/problem is per thread: wall time x threads / batch)\n");
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
  solve->add_flag("--time-each", sa.time_each, "record per-problem solve time (CPU)");

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
    std::cout << app.help();
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "impulse: error: %s\n", e.what());
    return 2;
  }
}
