// The solver group: solve-batch, generate, bench-solvers.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "host/batch/generate.h"
#include "host/batch/qp_batch.h"
#include "host/batch/qp_file.h"
#include "host/batch/qp_forms.h"
#include "io/files.h"
#include "io/npz.h"
#include "host/cli/commands.h"
#include "solvers/error.h"
#include "host/batch/lane_kernels.h"

namespace impulse::cli {
namespace {

// solve-batch's exit code when any problem is invalid_input (the file is
// still written, every other problem solved): 2 is an error that stopped the
// whole command (main.cc)
constexpr int kExitInvalidProblems = 3;

struct SolveArgs {
  std::string in, out, form = "conic", backend = "cpu", precision = "double", lanes = "on", gap = "on",
                       layout = "auto";
  int threads = 0, max_iter = 4000, anderson = -1;  // anderson < 0: the precision's default
  std::string ipm_switch = "auto";  // "auto" or a number of iterations (0 = off)
  double eps = 1e-5;
  bool time_each = false, json = false;
};

template <class T>
struct Solved {
  QpSolutions<T> sol;
  double seconds = 0;
  std::string where;  // the backend, in words
};

// solves a conic batch with the command's settings (a warm start from the file when it has one)
template <class T>
Solved<T> solve(const SolveArgs& a, const QpBatch<double>& b64, const QpFile* warm = nullptr) {
  QpBatch<T> batch = b64.template cast<T>();
  QpSettings<T> st;
  st.eps_abs = static_cast<T>(a.eps);
  st.eps_rel = static_cast<T>(a.eps);
  st.max_iter = a.max_iter;
  st.check_gap = a.gap == "on";
  if (a.anderson >= 0) st.anderson = a.anderson;
  st.ipm_switch = a.ipm_switch == "auto" ? kQpIpmSwitchAuto : std::stoi(a.ipm_switch);
  BatchOptions opt;
  opt.backend = parse_backend(a.backend);
  opt.threads = a.threads;
  opt.time_each = a.time_each;
  opt.lanes = a.lanes == "on";
  opt.device_layout = cuda::parse_device_layout(a.layout);
  Solved<T> r;
  if (warm && warm->has_warm_start) {
    r.sol.resize(batch.size, batch.n, batch.m());
    r.sol.x.assign(warm->x0.begin(), warm->x0.end());
    r.sol.y.assign(warm->y0.begin(), warm->y0.end());
    opt.warm_start = true;
  }
  const auto t0 = std::chrono::steady_clock::now();
  solve_batch(batch, st, opt, r.sol);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.where = opt.backend == Backend::kCuda
                ? a.backend + " (a " + cuda::to_string(device_layout_for(batch, opt)) + " per problem)"
                : a.backend;
  return r;
}

// the summary of one solved batch (text, or --json's object), the problems not
// solved on stderr; returns the exit code
template <class T>
int report(const SolveArgs& a, const Solved<T>& r) {
  const QpSolutions<T>& sol = r.sol;
  const int B = sol.size;
  long iters = 0;
  for (int k : sol.iterations) iters += k;
  const int invalid = sol.count(SolveStatus::kInvalidInput);
  int finished_ipm = 0;
  for (int k : sol.ipm_iterations) finished_ipm += k > 0;
  const auto bad = sol.problems_not_solved();
  for (size_t i = 0; i < bad.size() && i < 20; ++i) std::fprintf(stderr, "%s\n", bad[i].c_str());
  if (bad.size() > 20) std::fprintf(stderr, "... and %zu more\n", bad.size() - 20);
  const int code = invalid > 0 ? kExitInvalidProblems : 0;
  if (a.json) {  // one summary object on stdout
    nlohmann::ordered_json j;
    j["command"] = "solve-batch";
    j["form"] = a.form;
    j["problems"] = B;
    j["n"] = sol.n;
    j["m"] = sol.m;
    j["backend"] = r.where;
    j["precision"] = a.precision;
    j["seconds"] = r.seconds;
    j["problems_per_second"] = B / r.seconds;
    j["mean_iterations"] = double(iters) / B;
    nlohmann::ordered_json counts;
    for (int c = 0; c <= int(SolveStatus::kInvalidInput); ++c)
      counts[to_string(SolveStatus(c))] = sol.count(SolveStatus(c));
    j["status"] = counts;
    j["interior_point"] = finished_ipm;
    j["not_solved"] = bad.size();
    j["out"] = a.out;
    j["exit_code"] = code;
    std::printf("%s\n", j.dump().c_str());
    return code;
  }
  std::printf("finished %d problems (n=%d, m=%d) on %s in %.3f s: %.0f problems/s, mean %.1f iterations\n",
              B, sol.n, sol.m, r.where.c_str(), r.seconds, B / r.seconds, double(iters) / B);
  std::printf("status: solved %d, solved_inaccurate %d, max_iterations %d, primal_infeasible %d, "
              "dual_infeasible %d, invalid_input %d, numerical_error %d\n",
              sol.count(SolveStatus::kSolved), sol.count(SolveStatus::kSolvedInaccurate),
              sol.count(SolveStatus::kMaxIterations), sol.count(SolveStatus::kPrimalInfeasible),
              sol.count(SolveStatus::kDualInfeasible), invalid,
              sol.count(SolveStatus::kNumericalError));
  if (finished_ipm > 0)
    std::printf("%d problems went from ADMM to the interior point (a stall, or --ipm-switch; "
                "ipm_iterations in the output)\n", finished_ipm);
  std::printf("wrote %s\n", a.out.c_str());
  if (invalid > 0)
    std::fprintf(stderr, "impulse: %d of %d problems are invalid_input (listed above); exit code %d\n",
                 invalid, B, kExitInvalidProblems);
  return code;
}

// --form osqp: y back in the user's rows (OSQP's sign), m the user's
template <class T>
int run_solve_osqp(const SolveArgs& a) {
  const ConicBatch c = conic_from_bounds(read_bounded_file(a.in), a.in);
  Solved<T> r = solve<T>(a, c.batch);
  r.sol.y = bounds_multipliers(c.rows, r.sol.size, r.sol.y);
  r.sol.m = c.rows.m;  // y in the file's rows
  write_solution_file(a.out, r.sol);
  return report(a, r);
}

bool is_qps_file(const std::filesystem::path& p) {
  std::string e = p.extension().string();
  for (char& ch : e) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return e == ".qps" || e == ".sif" || e == ".mps";
}

// one QPS problem: solved, written (y of the file's rows, y_bounds of the
// variables' bounds, the objective with the file's constant); its status
template <class T>
SolveStatus solve_qps_file(const SolveArgs& a, const std::string& in, const std::string& out,
                           Solved<T>* solved, nlohmann::ordered_json* row) {
  const QpsAsBounds p = read_qps_problem(in);
  const ConicBatch c = conic_from_bounds(p.qps, in);
  Solved<T> r = solve<T>(a, c.batch);
  const std::vector<T> y = bounds_multipliers(c.rows, 1, r.sol.y);
  const int mr = p.constraint_rows, n = p.qps.n;
  std::vector<double> y_bounds(size_t(n), 0.0);
  for (size_t k = 0; k < p.bound_vars.size(); ++k) y_bounds[size_t(p.bound_vars[k])] = double(y[size_t(mr) + k]);
  r.sol.y.assign(y.begin(), y.begin() + mr);
  r.sol.m = mr;
  r.sol.objective[0] += static_cast<T>(p.constant);
  r.sol.value[0] += static_cast<T>(p.constant);
  NpzArchive ar = solution_arrays(r.sol);
  ar["y_bounds"] = make_npy({1, n}, y_bounds);
  ar["constant"] = make_npy({1}, std::vector<double>{p.constant});
  write_npz(out, ar);
  if (row) {
    *row = {{"problem", p.name.empty() ? std::filesystem::path(in).stem().string() : p.name},
            {"n", n}, {"m", mr}, {"status", to_string(r.sol.status[0])},
            {"objective", double(r.sol.objective[0])}, {"iterations", r.sol.iterations[0]},
            {"seconds", r.seconds}, {"out", out}};
  }
  const SolveStatus st = r.sol.status[0];
  if (solved) *solved = std::move(r);
  return st;
}

// --form qps: a file (like a batch of one), or a folder of them (a solution file
// each in the --out folder, a summary line each, and summary.csv)
template <class T>
int run_solve_qps(const SolveArgs& a) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(a.in)) {
    Solved<T> r;
    solve_qps_file<T>(a, a.in, a.out, &r, nullptr);
    return report(a, r);
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(a.in))
    if (e.is_regular_file() && is_qps_file(e.path())) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw Error(a.in + ": no .qps, .sif or .mps files");
  if (fs::exists(a.out) && !fs::is_directory(a.out))
    throw Error("--out " + a.out + ": with a folder of QPS files, --out is a folder (a solution file each)");
  fs::create_directories(a.out);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::string csv = "problem,n,m,status,objective,iterations,seconds,file\n";
  int failed = 0, solved = 0;
  if (!a.json) std::printf("%-12s %6s %6s %-18s %22s %8s\n", "problem", "n", "m", "status", "objective", "iters");
  for (const fs::path& f : files) {
    const std::string out = (fs::path(a.out) / (f.stem().string() + ".npz")).string();
    nlohmann::ordered_json row;
    try {
      const SolveStatus st = solve_qps_file<T>(a, f.string(), out, nullptr, &row);
      solved += st == SolveStatus::kSolved;
      failed += st == SolveStatus::kInvalidInput;
    } catch (const Error& e) {  // this file is unreadable; the others go on
      ++failed;
      std::fprintf(stderr, "%s\n", e.what());
      row = {{"problem", f.stem().string()}, {"n", 0}, {"m", 0}, {"status", "unreadable"},
             {"objective", nullptr}, {"iterations", 0}, {"seconds", 0.0}, {"out", ""}};
    }
    rows.push_back(row);
    char objective[64] = "";
    if (!row["objective"].is_null()) std::snprintf(objective, sizeof objective, "%.12g", row["objective"].get<double>());
    char line[512];
    std::snprintf(line, sizeof line, "%s,%d,%d,%s,%s,%d,%.6f,%s\n", row["problem"].get<std::string>().c_str(),
                  row["n"].get<int>(), row["m"].get<int>(), row["status"].get<std::string>().c_str(),
                  objective, row["iterations"].get<int>(), row["seconds"].get<double>(),
                  row["out"].get<std::string>().c_str());
    csv += line;
    if (!a.json)
      std::printf("%-12s %6d %6d %-18s %22s %8d\n", row["problem"].get<std::string>().c_str(), row["n"].get<int>(),
                  row["m"].get<int>(), row["status"].get<std::string>().c_str(),
                  row["objective"].is_null() ? "-" : objective,
                  row["iterations"].get<int>());
  }
  const std::string summary = (fs::path(a.out) / "summary.csv").string();
  write_text_atomic(summary, csv);
  const int code = failed > 0 ? kExitInvalidProblems : 0;
  if (a.json) {
    nlohmann::ordered_json j;
    j["command"] = "solve-batch";
    j["form"] = "qps";
    j["problems"] = files.size();
    j["solved"] = solved;
    j["rows"] = rows;
    j["out"] = a.out;
    j["exit_code"] = code;
    std::printf("%s\n", j.dump().c_str());
    return code;
  }
  std::printf("solved %d of %zu problems; wrote %zu solution files and %s\n", solved, files.size(),
              files.size() - size_t(failed), summary.c_str());
  return code;
}

template <class T>
int run_solve(const SolveArgs& a) {
  if (a.form == "osqp") return run_solve_osqp<T>(a);
  if (a.form == "qps") return run_solve_qps<T>(a);
  QpFile f = read_qp_file(a.in);
  Solved<T> r = solve<T>(a, f.batch, &f);
  write_solution_file(a.out, r.sol);
  return report(a, r);
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

// solve generated batches of each shape and print throughput
int run_bench(int count, int threads, const std::string& backend, uint64_t seed, bool json) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  if (!json)
    std::printf("%-20s %6s %8s %12s %14s %10s %8s\n", "problem", "prec", "batch", "backend",
                "problems/s", "us/problem", "iters");
  for (const std::string kind : {"cube-loss", "cube-loss-octagon", "anitescu"}) {
    const GeneratedQps g = generate(kind, count, seed);
    auto one = [&](auto tag, bool lanes, cuda::DeviceLayout layout) {
      using T = decltype(tag);
      const QpBatch<T> b = g.batch.template cast<T>();
      QpSettings<T> st;
      BatchOptions opt;
      opt.threads = threads;
      opt.backend = parse_backend(backend);
      opt.lanes = lanes;
      opt.device_layout = layout;
      QpSolutions<T> sol;
      solve_batch(b, st, opt, sol);  // warm-up
      const auto t0 = std::chrono::steady_clock::now();
      solve_batch(b, st, opt, sol);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      long it = 0;
      for (int k : sol.iterations) it += k;
      const std::string path =
          opt.backend == Backend::kCpu
              ? (lanes ? "cpu-lanes" : "cpu-one")
              : backend + "-" + cuda::to_string(device_layout_for(b, opt));
      const double us = 1e6 * s / count * (opt.backend == Backend::kCpu ? resolve_threads(threads) : 1);
      if (json) {
        rows.push_back({{"problem", kind}, {"precision", sizeof(T) == 4 ? "float" : "double"}, {"batch", count},
                        {"backend", path}, {"problems_per_second", count / s}, {"us_per_problem", us},
                        {"mean_iterations", double(it) / count}});
        return;
      }
      std::printf("%-20s %6s %8d %12s %14.0f %10.2f %8.1f\n", kind.c_str(),
                  sizeof(T) == 4 ? "float" : "double", count, path.c_str(), count / s, us, double(it) / count);
    };
    if (parse_backend(backend) == Backend::kCpu) {
      for (bool lanes : {true, false}) {
        one(double{}, lanes, cuda::DeviceLayout::kAuto);
        one(float{}, lanes, cuda::DeviceLayout::kAuto);
      }
    } else {  // both device layouts, the warp where the shape fits it
      for (const cuda::DeviceLayout layout : {cuda::DeviceLayout::kThread, cuda::DeviceLayout::kWarp}) {
        if (layout == cuda::DeviceLayout::kWarp) {
          try {
            cuda::resolve_layout(layout, g.batch.n, g.batch.m(), g.batch.nnz(), sizeof(double));
          } catch (const Error&) {
            continue;
          }
        }
        one(double{}, true, layout);
        one(float{}, true, layout);
      }
    }
  }
  if (json) {
    nlohmann::ordered_json j;
    j["command"] = "bench-solvers";
    j["threads"] = resolve_threads(threads);
    j["lanes"] = {{"double", lane_bytes() / 8}, {"float", lane_bytes() / 4}};
    j["rows"] = rows;
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("(us/problem is per thread: wall time x threads / batch; cpu-lanes: groups of\n"
              " %d doubles or %d floats in the lanes of one vector, cpu-one: one problem at a time)\n",
              lane_bytes() / 8, lane_bytes() / 4);
  return 0;
}

}  // namespace

void add_solve_commands(CLI::App& app, Commands& out) {
  auto sa = std::make_shared<SolveArgs>();
  auto* solve = app.add_subcommand(
      "solve-batch",
      "solve a batch file (.npz), or QPs in OSQP's form or QPS files (--form), and write the solutions (.npz)");
  solve->add_option("--in", sa->in,
                    "problem file: a batch (.npz); with --form osqp an .npz or a folder of .npy; with --form qps "
                    "a QPS file or a folder of them")->required();
  solve->add_option("--out", sa->out, "solution file to write (--form qps with a folder: a folder)")->required();
  solve->add_option("--form", sa->form,
                    "conic: impulse's batch file (cones, P, q, A, b); osqp: P, q, A, l, u with l <= Ax <= u, y "
                    "as OSQP reports it; qps: the QPS (MPS) format of the Maros-Meszaros set")
      ->check(CLI::IsMember({"conic", "osqp", "qps"}));
  solve->add_option("--backend", sa->backend, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  solve->add_option("--threads", sa->threads, "CPU threads (0 = all cores)");
  solve->add_option("--precision", sa->precision, "double or float")->check(CLI::IsMember({"double", "float"}));
  solve->add_option("--eps", sa->eps, "absolute and relative tolerance");
  solve->add_option("--max-iter", sa->max_iter, "iteration budget per problem");
  solve->add_flag("--json", sa->json,
                  "print one JSON summary object on stdout instead of the text (the problems not solved still "
                  "go to stderr)");
  solve->add_flag("--time-each", sa->time_each,
                  "record per-problem solve time (CPU; with lanes, each problem's share of its group's)");
  solve->add_option("--gap", sa->gap,
                    "on (default): solved also needs the duality gap within tolerance; off: residuals only")
      ->check(CLI::IsMember({"on", "off"}));
  solve->add_option("--anderson", sa->anderson,
                    "CPU: Anderson acceleration's memory, 0 = off, at most 8 (default: 3 in double, off in "
                    "float; problems without second-order cones; the GPU runs without it)");
  solve->add_option("--ipm-switch", sa->ipm_switch,
                    "CPU, double: hand a problem to the interior point once ADMM's residuals extrapolate to more "
                    "than this many further iterations (0 = off; auto = one interior-point solve's cost in ADMM "
                    "iterations, from the batch's shape; problems without second-order cones)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v == "auto") return "";
            // digits only (std::stoi alone would take a sign and leading blanks)
            bool ok = !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
            try {
              if (ok) (void)std::stoi(v);
            } catch (const std::exception&) {
              ok = false;  // out of int's range
            }
            return ok ? "" : "expected auto or a number of iterations >= 0, got '" + v + "'";
          },
          "auto|N"));
  solve->add_option("--layout", sa->layout,
                    "CUDA: thread = a thread per problem, warp = a warp per problem (n <= 32, its shared memory "
                    "within 48 KB), auto (default) = warp for 16 <= n <= 32 where it fits")
      ->check(CLI::IsMember({"auto", "thread", "warp"}));
  solve->add_option("--lanes", sa->lanes,
                    "CPU: on = groups of problems in the lanes of one SIMD vector, off = one at a time")
      ->check(CLI::IsMember({"on", "off"}));
  out.push_back({solve, [sa] { return sa->precision == "float" ? run_solve<float>(*sa) : run_solve<double>(*sa); },
                 "; 3 a problem of the batch is invalid_input (listed; the others are solved and written)"});

  struct GenArgs {
    std::string kind = "cube-loss", out;
    int count = 1000;
    uint64_t seed = 0;
    RandomQpShape shape{0, -1, 0, 1.0};  // n 0: not the benchmark class
  };
  auto ga = std::make_shared<GenArgs>();
  auto* gen = app.add_subcommand("generate", "write a generated batch file");
  gen->add_option("--kind", ga->kind, "cube-loss | cube-loss-octagon | anitescu | random");
  gen->add_option("--count", ga->count, "problems");
  gen->add_option("--seed", ga->seed, "random seed");
  gen->add_option("--out", ga->out, "file to write")->required();
  auto* gn = gen->add_option("--n", ga->shape.n,
                             "random: N variables, the solver benchmarks' class (P = MM'/n + 0.1 I, Gaussian A, half "
                             "the inequality rows active at a known optimum); 0: a mixed-cone test batch (n 12)");
  auto* gm = gen->add_option("--m", ga->shape.inequalities, "random with --n: inequality rows (-1: 2n)");
  auto* gd = gen->add_option("--density", ga->shape.density,
                             "random with --n: the share of nonzero entries in A (one pattern for the batch) and M");
  auto* ge = gen->add_option("--equalities", ga->shape.equalities,
                             "random with --n: equality rows, before the inequality rows");
  out.push_back({gen, [ga, gn, gm, gd, ge] {
                   const bool shaped = ga->shape.n > 0;
                   for (const CLI::Option* o : {gn, gm, gd, ge})
                     if (o->count() > 0 && (ga->kind != "random" || (!shaped && o != gn)))
                       throw Error(o->get_name() + " goes with --kind random" +
                                   std::string(ga->kind == "random" ? " --n N" : ""));
                   if (shaped && ga->shape.inequalities < 0) ga->shape.inequalities = 2 * ga->shape.n;
                   const GeneratedQps g = shaped ? random_benchmark_batch(ga->count, ga->shape, ga->seed)
                                                 : generate(ga->kind, ga->count, ga->seed);
                   write_qp_file(ga->out, g.batch);
                   std::printf("wrote %d %s problems (n=%d, m=%d) to %s\n", ga->count, ga->kind.c_str(),
                               g.batch.n, g.batch.m(), ga->out.c_str());
                   return 0;
                 }});

  struct BenchArgs {
    int count = 20000, threads = 0;
    std::string backend = "cpu";
    uint64_t seed = 0;
    bool json = false;
  };
  auto ba = std::make_shared<BenchArgs>();
  auto* bench = app.add_subcommand("bench-solvers", "throughput on generated batches of each problem shape");
  bench->add_option("--count", ba->count, "problems per batch");
  bench->add_option("--threads", ba->threads, "CPU threads (0 = all cores)");
  bench->add_option("--backend", ba->backend, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  bench->add_option("--seed", ba->seed, "random seed");
  bench->add_flag("--json", ba->json, "print one JSON object (the rows) on stdout instead of the table");
  out.push_back({bench, [ba] { return run_bench(ba->count, ba->threads, ba->backend, ba->seed, ba->json); }});
}

}  // namespace impulse::cli
