// The batch API: misuse errors, per-problem input faults and batch files (the
// GPU backend: test_gpu.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

#include "host/batch/generate.h"
#include "host/batch/qp_batch.h"
#include "host/batch/qp_file.h"
#include "host/batch/qp_ipm.h"
#include "tests/test_util.h"

namespace impulse {
namespace {

using testing::mixed;

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(QpBatch, BadProblemsAreReportedAndTheRestSolve) {
  GeneratedQps g = random_qp_batch(10, 6, mixed(), 5);
  QpBatch<double>& bt = g.batch;
  const int n = bt.n, m = bt.m();
  bt.P[size_t(2) * n * n + 7] = std::numeric_limits<double>::quiet_NaN();
  bt.q[size_t(3) * n + 1] = std::numeric_limits<double>::infinity();
  bt.A[size_t(4) * bt.nnz() + 5] = std::numeric_limits<double>::quiet_NaN();
  bt.b[size_t(5) * m + 2] = -std::numeric_limits<double>::infinity();
  bt.P[size_t(6) * n * n + 0] = -10.0;  // negative diagonal: not PSD
  bt.P[size_t(7) * n * n + 1] += 1.0;   // asymmetric
  for (const BatchOptions& opt : testing::both_cpu_paths()) {
  SCOPED_TRACE(testing::path_name(opt));
  QpSolutions<double> sol;
  solve_batch(bt, QpSettings<double>{}, opt, sol);
  const InputFault want[] = {InputFault::kNone,        InputFault::kNone,
                             InputFault::kNonFiniteP,  InputFault::kNonFiniteQ,
                             InputFault::kNonFiniteA,  InputFault::kNonFiniteB,
                             InputFault::kNotPsdP,     InputFault::kAsymmetricP,
                             InputFault::kNone,        InputFault::kNone};
  for (int k = 0; k < 10; ++k) {
    EXPECT_EQ(sol.fault[k], want[k]) << "problem " << k;
    if (want[k] == InputFault::kNone) {
      EXPECT_EQ(sol.status[k], SolveStatus::kSolved) << "problem " << k;
      EXPECT_NEAR(sol.objective[k], g.obj_opt[k], 1e-3 * (1 + std::abs(g.obj_opt[k])));
    } else {
      EXPECT_EQ(sol.status[k], SolveStatus::kInvalidInput) << "problem " << k;
    }
  }
  const auto lines = sol.problems_not_solved();
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0], "problem 2: invalid_input (P has a NaN or Inf entry)");
  EXPECT_EQ(lines[4], "problem 6: invalid_input (P is not positive semidefinite)");
  }
}

TEST(QpBatch, MisuseThrowsClearErrors) {
  QpSolutions<double> sol;
  QpBatch<double> empty = QpBatch<double>::dense(0, 3, mixed());
  EXPECT_NE(error_of([&] { solve_batch(empty, QpSettings<double>{}, BatchOptions{}, sol); })
                .find("empty batch"),
            std::string::npos);

  GeneratedQps g = random_qp_batch(4, 5, mixed(), 1);
  g.batch.q.pop_back();
  EXPECT_EQ(error_of([&] { solve_batch(g.batch, QpSettings<double>{}, BatchOptions{}, sol); }),
            "q: expected 20 entries (4 x 5), got 19");

  g = random_qp_batch(4, 5, mixed(), 1);
  QpSettings<double> bad;
  bad.alpha = 2.5;
  EXPECT_NE(error_of([&] { solve_batch(g.batch, bad, BatchOptions{}, sol); }).find("alpha"),
            std::string::npos);

  BatchOptions warm;
  warm.warm_start = true;
  QpSolutions<double> wrong;
  wrong.x.assign(3, 0.0);
  EXPECT_NE(error_of([&] { solve_batch(g.batch, QpSettings<double>{}, warm, wrong); })
                .find("warm start: expected x of 20"),
            std::string::npos);

  // an entry outside the pattern
  QpBatch<double> sparse = QpBatch<double>::with_pattern(1, 2, ConeSpec{0, 1, 0}, {0, 1}, {0});
  const double dense_row[] = {1.0, 2.0};
  EXPECT_NE(error_of([&] { sparse.set_A_dense(0, dense_row); }).find("outside the batch's pattern"),
            std::string::npos);
}

// BatchOptions::warm_rho: each solve reports its final ρ, and a warm start with
// warm_rho starts each problem at the ρ in the solutions (0: the settings'), in
// either CPU path and whatever the neighbours' ρ in a lane group
TEST(QpBatch, WarmRhoStartsEachProblemAtItsOwnRho) {
  const GeneratedQps g = random_qp_batch(13, 8, mixed(), 21);
  const QpBatch<double>& bt = g.batch;
  QpSettings<double> st;
  st.rho = 0.1;
  for (const BatchOptions& path : testing::both_cpu_paths()) {
    SCOPED_TRACE(testing::path_name(path));
    QpSolutions<double> cold;
    solve_batch(bt, st, path, cold);
    ASSERT_EQ(cold.rho.size(), size_t(bt.size));
    int adapted = 0;
    for (int k = 0; k < bt.size; ++k) {
      ASSERT_EQ(cold.status[k], SolveStatus::kSolved) << "problem " << k;
      if (cold.rho_updates[k] == 0) EXPECT_EQ(cold.rho[k], st.rho) << "problem " << k;
      else adapted += cold.rho[k] != st.rho;
      EXPECT_GE(cold.rho[k], st.rho_min);
      EXPECT_LE(cold.rho[k], st.rho_max);
    }
    EXPECT_GT(adapted, 0) << "no problem's rho moved: the test would not see it carried";

    // without adaptation a solve ends at the ρ it started at: its own, or the settings' for 0
    QpSettings<double> fixed = st;
    fixed.adaptive_rho = false;
    fixed.fallback = false;  // (a stall's restart takes the fallback settings' ρ)
    BatchOptions warm = path;
    warm.warm_start = warm.warm_rho = true;
    QpSolutions<double> own = cold;
    for (int k = 0; k < bt.size; ++k) own.rho[k] = k % 4 == 0 ? 0.0 : 0.01 * (1 + k);
    const std::vector<double> given = own.rho;
    QpBatch<double> moved = bt;
    for (double& v : moved.q) v *= 1.01;
    solve_batch(moved, fixed, warm, own);
    for (int k = 0; k < bt.size; ++k) {
      EXPECT_EQ(own.status[k], SolveStatus::kSolved) << "problem " << k;
      EXPECT_EQ(own.rho[k], given[k] > 0 ? given[k] : fixed.rho) << "problem " << k;
    }

    // every problem at the same carried ρ: the solve with that ρ in the settings, bit for bit
    QpSolutions<double> a = cold, b = cold;
    for (int k = 0; k < bt.size; ++k) a.rho[k] = 0.37;
    solve_batch(moved, st, warm, a);
    QpSettings<double> at = st;
    at.rho = 0.37;
    BatchOptions plain = path;
    plain.warm_start = true;
    solve_batch(moved, at, plain, b);
    EXPECT_EQ(a.x, b.x);
    EXPECT_EQ(a.y, b.y);
    EXPECT_EQ(a.iterations, b.iterations);
    EXPECT_EQ(a.rho, b.rho);
    // and not what the settings' ρ gives (the carried ρ changed the solves)
    QpSolutions<double> c = cold;
    solve_batch(moved, st, plain, c);
    EXPECT_NE(a.iterations, c.iterations);
  }
  // a carried ρ that is not a ρ is refused, naming the problem
  QpSolutions<double> bad;
  solve_batch(bt, st, BatchOptions{}, bad);
  BatchOptions warm;
  warm.warm_start = warm.warm_rho = true;
  bad.rho[3] = std::numeric_limits<double>::quiet_NaN();
  testing::expect_error([&] { solve_batch(bt, st, warm, bad); }, {"warm start", "rho of problem 3"});
  bad.rho[3] = -1.0;
  testing::expect_error([&] { solve_batch(bt, st, warm, bad); }, {"rho of problem 3", "rho_min"});
  bad.rho[3] = 10 * st.rho_max;
  testing::expect_error([&] { solve_batch(bt, st, warm, bad); }, {"rho of problem 3"});
  bad.rho.pop_back();
  testing::expect_error([&] { solve_batch(bt, st, warm, bad); }, {"warm start", "rho of 13 entries, got 12"});
}

// QpSettings::check_psd = false skips the PSD test only: an indefinite P is no longer
// reported as not PSD, every other fault still is, and PSD problems solve as before
TEST(QpBatch, PsdTestCanBeSkipped) {
  GeneratedQps g = random_qp_batch(8, 6, mixed(), 5);
  QpBatch<double>& bt = g.batch;
  const int n = bt.n;
  bt.P[size_t(2) * n * n + 7] = std::numeric_limits<double>::quiet_NaN();
  for (int i = 0; i < n; ++i) bt.P[size_t(6) * n * n + i * n + i] -= 50.0;  // indefinite
  bt.P[size_t(5) * n * n + 1] += 1.0;                                       // asymmetric
  for (const BatchOptions& opt : testing::both_cpu_paths()) {
    SCOPED_TRACE(testing::path_name(opt));
    QpSettings<double> with, without;
    without.check_psd = false;
    QpSolutions<double> a, b;
    solve_batch(bt, with, opt, a);
    solve_batch(bt, without, opt, b);
    EXPECT_EQ(a.fault[6], InputFault::kNotPsdP);
    EXPECT_NE(b.fault[6], InputFault::kNotPsdP);
    EXPECT_NE(b.status[6], SolveStatus::kSolved) << "an indefinite QP has no optimum here to solve for";
    EXPECT_EQ(b.fault[2], InputFault::kNonFiniteP);
    EXPECT_EQ(b.fault[5], InputFault::kAsymmetricP);
    // (in lanes the indefinite problem now runs in its group, whose checks follow the
    // group's: the neighbours' iterations may move, not their answers)
    for (int k : {0, 1, 3, 4, 7}) {
      EXPECT_EQ(b.status[k], SolveStatus::kSolved) << "problem " << k;
      EXPECT_NEAR(b.objective[k], g.obj_opt[k], 1e-3 * (1 + std::abs(g.obj_opt[k]))) << "problem " << k;
      if (!opt.lanes) {
        EXPECT_EQ(b.iterations[k], a.iterations[k]) << "problem " << k;
        EXPECT_EQ(b.objective[k], a.objective[k]) << "problem " << k;
      }
    }
  }
}

TEST(QpBatch, CudaBackendIsAnErrorWithoutDevice) {
  if (cuda::available()) GTEST_SKIP() << "a CUDA device is present; covered by the GPU tests";
  GeneratedQps g = random_qp_batch(4, 5, mixed(), 1);
  BatchOptions opt;
  opt.backend = Backend::kCuda;
  QpSolutions<double> sol;
  EXPECT_NE(error_of([&] { solve_batch(g.batch, QpSettings<double>{}, opt, sol); })
                .find("CUDA not available"),
            std::string::npos);
}

// which kernel a device batch runs in: the rule, its refusals and the names
TEST(QpBatch, DeviceLayoutRule) {
  using cuda::DeviceLayout;
  // auto: a warp per problem for 16 <= n <= 32 (the cube loss QP: n = 32, m = 48), a thread otherwise
  EXPECT_EQ(cuda::resolve_layout(DeviceLayout::kAuto, 32, 48, 240, 4), DeviceLayout::kWarp);
  EXPECT_EQ(cuda::resolve_layout(DeviceLayout::kAuto, 16, 48, 240, 8), DeviceLayout::kWarp);
  EXPECT_EQ(cuda::resolve_layout(DeviceLayout::kAuto, 15, 48, 240, 8), DeviceLayout::kThread);
  EXPECT_EQ(cuda::resolve_layout(DeviceLayout::kAuto, 33, 48, 240, 4), DeviceLayout::kThread);
  // shared memory: the warp's rows of one problem (A's nonzeros among them) must fit 48 KB
  EXPECT_EQ(cuda::warp_shared_bytes(48, 240, 4), size_t(240 + 128 + 9 * 48 + 32 * 33) * 4);
  // A dense as well (the stagnation-restart variants, when it fits): the broadcast row and m
  // rows of warp_dense_ld in place of the 32 x 33 block, and P; the ContactNets QP (m = 32, nnz = 224) fits
  // (the dense A's rows: 34 doubles or 36 floats, four banks apart; warp_dense_ld)
  EXPECT_EQ(cuda::warp_shared_bytes_dense(32, 224, 8), size_t(224 + 128 + 9 * 32 + 32 + 32 * 34 + 32 * 32) * 8);
  EXPECT_EQ(cuda::warp_shared_bytes_dense(32, 224, 4), size_t(224 + 128 + 9 * 32 + 32 + 32 * 36 + 32 * 32) * 4);
  // the nonzeros and each m-sized row padded to a multiple of 4 elements (warp_pad4), so
  // every row starts 16-byte aligned
  EXPECT_EQ(cuda::warp_shared_bytes(47, 241, 4), size_t(244 + 128 + 9 * 48 + 32 * 33) * 4);
  EXPECT_EQ(cuda::warp_shared_bytes_dense(45, 222, 8), size_t(224 + 128 + 9 * 48 + 32 + 45 * 34 + 32 * 32) * 8);
  EXPECT_LE(cuda::warp_shared_bytes_dense(32, 224, 8), cuda::kWarpSharedLimit);
  EXPECT_GT(cuda::warp_shared_bytes_dense(130, 300, 8), cuda::kWarpSharedLimit);
  EXPECT_LE(cuda::warp_shared_bytes(130, 300, 8), cuda::kWarpSharedLimit);
  EXPECT_EQ(cuda::resolve_layout(DeviceLayout::kAuto, 32, 600, 6000, 8), DeviceLayout::kThread);
  EXPECT_EQ(cuda::resolve_layout(DeviceLayout::kThread, 24, 24, 96, 4), DeviceLayout::kThread);
  EXPECT_EQ(cuda::resolve_layout(DeviceLayout::kWarp, 3, 4, 12, 8), DeviceLayout::kWarp);
  testing::expect_error([] { cuda::resolve_layout(DeviceLayout::kWarp, 40, 48, 240, 4); },
                        {"device layout warp", "n <= 32", "n = 40"});
  testing::expect_error([] { cuda::resolve_layout(DeviceLayout::kWarp, 32, 2000, 6000, 8); },
                        {"device layout warp", "m = 2000", "bytes"});
  // the batch's shape decides, in float and in double (the warp kernel has the fallback restart and
  // unbounded rows: tests/test_gpu.cc GpuQpWarp)
  const QpBatch<double> cube = cube_loss_batch(2, FrictionModel::kCone, 1).batch;
  BatchOptions o;
  o.backend = Backend::kCuda;
  EXPECT_EQ(device_layout_for(cube, o), DeviceLayout::kWarp);
  EXPECT_EQ(device_layout_for(cube.cast<float>(), o), DeviceLayout::kWarp);
  o.device_layout = DeviceLayout::kThread;
  EXPECT_EQ(device_layout_for(cube, o), DeviceLayout::kThread);
  EXPECT_EQ(cuda::parse_device_layout("warp"), DeviceLayout::kWarp);
  EXPECT_EQ(std::string(cuda::to_string(cuda::parse_device_layout("thread"))), "thread");
  testing::expect_error([] { cuda::parse_device_layout("block"); }, {"'block'", "auto, thread or warp"});
}

// solve-batch --layout: a nonsense value is refused naming the option; on the CPU the
// layout changes nothing
TEST(QpBatch, SolveBatchLayoutOption) {
  const std::string dir = testing::fresh_dir("impulse_layout_", "cli");
  const std::string in = dir + "/cube.npz";
  write_qp_file(in, cube_loss_batch(8, FrictionModel::kCone, 3).batch);
  const auto run = [&](const std::string& opts, const std::string& out) {
    return testing::run_cli("solve-batch --in \"" + in + "\" --out \"" + dir + "/" + out + "\" --threads 1 " + opts,
                            dir + "/log.txt");
  };
  EXPECT_NE(run("--layout block", "bad.npz"), 0);
  const std::string text = testing::read_text_file(dir + "/log.txt");
  EXPECT_NE(text.find("--layout"), std::string::npos) << text;
  EXPECT_NE(text.find("block"), std::string::npos) << text;
  ASSERT_EQ(run("--layout thread", "t.npz"), 0);
  ASSERT_EQ(run("--layout warp", "w.npz"), 0);
  EXPECT_EQ(read_solution_file(dir + "/t.npz").x, read_solution_file(dir + "/w.npz").x);
}

std::string temp_path(const char* name) {
  return ::testing::TempDir() + "/impulse_" + std::to_string(::getpid()) + "_" + name;
}

TEST(QpFile, RoundTripsProblemsAndSolutions) {
  const GeneratedQps g = cube_loss_batch(5, FrictionModel::kOctagon, 2);
  const std::string p = temp_path("batch.npz"), s = temp_path("sol.npz");
  write_qp_file(p, g.batch);
  const QpFile f = read_qp_file(p);
  EXPECT_EQ(f.batch.size, 5);
  EXPECT_EQ(f.batch.cones.n_nonneg, g.batch.cones.n_nonneg);
  EXPECT_EQ(f.batch.P, g.batch.P);
  EXPECT_EQ(f.batch.b, g.batch.b);
  for (int k = 0; k < 5; ++k) EXPECT_EQ(f.batch.A_dense(k), g.batch.A_dense(k));
  QpSolutions<double> sol;
  solve_batch(f.batch, QpSettings<double>{}, BatchOptions{}, sol);
  write_solution_file(s, sol);
  const QpSolutions<double> back = read_solution_file(s);
  EXPECT_EQ(back.x, sol.x);
  EXPECT_EQ(back.y, sol.y);
  EXPECT_EQ(back.objective, sol.objective);
  EXPECT_EQ(back.value, sol.value);
  EXPECT_EQ(back.rho, sol.rho);
  EXPECT_GT(back.rho[0], 0.0);
  EXPECT_EQ(back.status, sol.status);
  EXPECT_EQ(back.iterations, sol.iterations);
  std::remove(p.c_str());
  std::remove(s.c_str());
}

TEST(QpFile, CorruptFilesAreRejectedWithTheirName) {
  const std::string p = temp_path("corrupt.npz");
  {
    std::ofstream o(p, std::ios::binary);
    o << "PK\x03\x04 this is not really a zip archive";
  }
  const std::string e = error_of([&] { read_qp_file(p); });
  EXPECT_NE(e.find(p), std::string::npos) << e;
  std::remove(p.c_str());
  EXPECT_NE(error_of([&] { read_qp_file(temp_path("missing.npz")); }).find("missing.npz"),
            std::string::npos);
}

// `impulse generate --kind random`'s set (n 12, 2 zero rows, 10 nonnegative,
// 2 cones of the second order; 1,000 problems, seed 0) at solve-batch's
// defaults (eps 1e-5, 4,000 iterations, double): the lanes solve every
// problem one at a time solves. Problem 737 did not: its group handed it
// over at iteration 130 as its last slow lane, and the one-problem solver
// went on from there with a fresh stall record and budget, where alone the
// stall rule finds at iteration 1,000 that its best residual ratio (9.8, at
// iteration 50) was never bettered and restarts it with the fallback
// settings (solved at 1,050); handed over, it crawled to the budget
// (solved_inaccurate). The solve that goes on with a lane now resumes its
// stall record and count (QpResume). What neither path solves (problem 979:
// P of rank 1, both cones' slacks at their apex) says why.
TEST(QpBatch, LanesSolveWhatOneAtATimeSolvesOnTheRandomSet) {
  ConeSpec cones;  // host/cli/solve_commands.cc's "random"
  cones.n_zero = 2;
  cones.n_nonneg = 10;
  cones.n_soc = 2;
  const GeneratedQps g = random_qp_batch(1000, 12, cones, 0);
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-5;
  QpSolutions<double> one, grp;
  solve_batch(g.batch, st, testing::cpu_path(false), one);
  solve_batch(g.batch, st, testing::cpu_path(true), grp);
  int solved_one = 0;
  for (int k = 0; k < g.batch.size; ++k) {
    if (one.status[k] != SolveStatus::kSolved) continue;
    ++solved_one;
    EXPECT_EQ(grp.status[k], SolveStatus::kSolved)
        << "problem " << k << ": " << to_string(grp.status[k]) << " in lanes (" << grp.fault_text[k]
        << "), solved alone in " << one.iterations[k];
  }
  EXPECT_GE(solved_one, 995);
  EXPECT_GE(grp.count(SolveStatus::kSolved), solved_one);
  ASSERT_EQ(one.status[737], SolveStatus::kSolved);
  EXPECT_GT(one.iterations[737], st.max_iter / 4);  // after the stall and the restart
  EXPECT_LE(grp.iterations[737], one.iterations[737] + 2 * st.check_every);
  for (const QpSolutions<double>* s : {&one, &grp})
    for (int k = 0; k < g.batch.size; ++k) {
      if (s->status[k] == SolveStatus::kSolved) {
        EXPECT_EQ(s->fault_text[k], "");
      } else {
        EXPECT_EQ(s->fault_text[k].rfind("the budget of 4000 iterations ran out", 0), 0u)
            << "problem " << k << ": " << s->fault_text[k];
      }
    }
}

// solve-batch lists every problem it did not solve with why (on stderr, the
// first 20): a generated random set with a budget too small for most.
TEST(QpCli, SolveBatchSaysWhyEachProblemIsNotSolved) {
  const std::string dir = testing::fresh_dir("impulse_why_", "cli");
  const std::string in = dir + "/in.npz", out = dir + "/out.npz", log = dir + "/log.txt";
  ASSERT_EQ(testing::run_cli("generate --kind random --count 50 --seed 4 --out \"" + in + "\""), 0);
  ASSERT_EQ(testing::run_cli("solve-batch --in \"" + in + "\" --out \"" + out + "\" --max-iter 30 --threads 1",
                             log),
            0);
  const std::string text = "\n" + testing::read_text_file(log);  // (stderr may come first)
  int listed = 0;
  for (size_t p = text.find("\nproblem "); p != std::string::npos; p = text.find("\nproblem ", p + 1)) {
    const std::string line = text.substr(p + 1, text.find('\n', p + 1) - p - 1);
    ++listed;
    EXPECT_TRUE(line.find(": max_iterations (the budget of 30 iterations ran out with the ") != std::string::npos ||
                line.find(": solved_inaccurate (the budget of 30 iterations ran out within 10x of the "
                          "tolerances with the ") != std::string::npos)
        << line;
    EXPECT_NE(line.find("x its tolerance"), std::string::npos) << line;
  }
  EXPECT_GT(listed, 0) << text;
  const QpSolutions<double> sol = read_solution_file(out);
  const int unsolved = sol.size - sol.count(SolveStatus::kSolved);
  EXPECT_EQ(listed, std::min(unsolved, 20)) << text;
}

// The solver benchmarks' random QPs (generate --kind random --n N): the known optimum is
// one (KKT from the data, checked independently), the solver finds its objective, the
// pattern has the density asked for, and sizes out of range are refused by name.
// Re-solves on kept factorizations (QpFactorStore): only q and b change between
// calls, as in OSQP's update of q and bounds and a layer trained on q and b.
std::vector<double> perturbed(const std::vector<double>& v, double scale, uint64_t seed) {
  std::vector<double> out = v;
  uint64_t s = seed;
  for (double& e : out) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    e += scale * (double((s >> 11) & 0xffff) / 65535.0 - 0.5);
  }
  return out;
}

TEST(QpFactorStore, ResolvesWhenOnlyQAndBChange) {
  // 19 problems: full lane groups and a tail solved one at a time, with every set's width
  const GeneratedQps dense = random_benchmark_batch(19, RandomQpShape{12, 20, 2, 1.0}, 5);
  const GeneratedQps cones = random_qp_batch(19, 8, ConeSpec{1, 6, 2}, 7);
  for (const QpBatch<double>* bt : {&dense.batch, &cones.batch})
    for (bool lanes : {true, false}) {
      SCOPED_TRACE(std::string(bt == &dense.batch ? "random benchmark QPs" : "QPs with cones") +
                   (lanes ? ", lanes" : ", one at a time"));
      QpSettings<double> st;
      st.eps_abs = st.eps_rel = 1e-7;
      BatchOptions opt;
      opt.threads = 1;
      opt.lanes = lanes;
      QpBatch<double> next = *bt;  // the same P and A, new q and b
      next.q = perturbed(bt->q, 0.2, 11);
      next.b = perturbed(bt->b, 0.02, 12);
      QpSolutions<double> fresh;
      solve_batch(next, st, opt, fresh);

      QpFactorStore store;
      BatchOptions keep = opt;
      keep.factors = &store;
      QpSolutions<double> first, kept;
      solve_batch(*bt, st, keep, first);
      EXPECT_GT(store.bytes(), 0u);
      keep.reuse_factors = true;
      solve_batch(next, st, keep, kept);
      for (int k = 0; k < bt->size; ++k) {
        ASSERT_EQ(fresh.status[k], SolveStatus::kSolved) << "problem " << k;
        ASSERT_EQ(kept.status[k], SolveStatus::kSolved) << "problem " << k;
        EXPECT_NEAR(kept.objective[k], fresh.objective[k], 1e-5 * (1 + std::abs(fresh.objective[k])))
            << "problem " << k;
        for (int i = 0; i < bt->n; ++i)
          EXPECT_NEAR(kept.x[size_t(k) * bt->n + i], fresh.x[size_t(k) * bt->n + i], 1e-4) << "problem " << k;
      }

      // the factorization really is the kept one: told P is unchanged when it
      // doubled, the re-solve iterates with the old K (no ρ update refactors it)
      // and ends at the old P's optimum, not the new one's
      QpBatch<double> lie = next;
      for (double& p : lie.P) p *= 2;
      QpSettings<double> strict = st;
      strict.adaptive_rho = false;
      strict.fallback = false;
      strict.max_iter = 400;
      QpSolutions<double> honest, lied;
      solve_batch(lie, strict, opt, honest);
      solve_batch(lie, strict, keep, lied);  // (the store now holds `next`'s factorizations)
      int differ = 0;
      for (int k = 0; k < bt->size; ++k) {
        double gap = lied.status[k] == honest.status[k] ? 0 : 1;
        for (int i = 0; i < bt->n; ++i)
          gap = std::max(gap, std::abs(lied.x[size_t(k) * bt->n + i] - honest.x[size_t(k) * bt->n + i]));
        differ += gap > 1e-3;
      }
      // (without the kept factorization the two solves are the same solve, bitwise;
      // in lanes fewer differ: a lane left far behind goes on alone, set up in full)
      EXPECT_GE(differ, lanes ? 1 : bt->size / 2);

      // after clear(), a re-solve sets up in full: bitwise the solve without a store
      store.clear();
      QpSolutions<double> cleared;
      solve_batch(next, st, keep, cleared);
      EXPECT_EQ(cleared.x, fresh.x);
      EXPECT_EQ(cleared.y, fresh.y);
      // another batch size is another layout: set up in full
      QpBatch<double> fewer = next;
      fewer.size = next.size - 1;
      fewer.P.resize(size_t(fewer.size) * fewer.n * fewer.n);
      fewer.q.resize(size_t(fewer.size) * fewer.n);
      fewer.A.resize(size_t(fewer.size) * fewer.nnz());
      fewer.b.resize(size_t(fewer.size) * fewer.m());
      QpSolutions<double> fewer_fresh, fewer_kept;
      solve_batch(fewer, st, opt, fewer_fresh);
      solve_batch(fewer, st, keep, fewer_kept);
      EXPECT_EQ(fewer_kept.x, fewer_fresh.x);

      // a NaN in q under reuse: that problem is refused by name, the rest solve on
      QpSolutions<double> warmup, bad;
      solve_batch(next, st, keep, warmup);  // (the store holds `next`'s again)
      QpBatch<double> nan_q = next;
      nan_q.q[size_t(3) * next.n + 1] = std::numeric_limits<double>::quiet_NaN();
      solve_batch(nan_q, st, keep, bad);
      for (int k = 0; k < bt->size; ++k) {
        EXPECT_EQ(bad.status[k], k == 3 ? SolveStatus::kInvalidInput : SolveStatus::kSolved) << "problem " << k;
        if (k == 3) {
          EXPECT_EQ(bad.fault[k], InputFault::kNonFiniteQ);
        }
      }
    }
}

TEST(QpFactorStore, SameAnswersOnAnyThreadCount) {
  const GeneratedQps g = random_benchmark_batch(37, RandomQpShape{10, 16, 0, 1.0}, 9);
  QpBatch<double> next = g.batch;
  next.q = perturbed(g.batch.q, 0.2, 3);
  QpSettings<double> st;
  std::vector<double> x[2];
  for (int t = 0; t < 2; ++t) {
    QpFactorStore store;
    BatchOptions opt;
    opt.threads = t + 1;
    opt.factors = &store;
    QpSolutions<double> a, b;
    solve_batch(g.batch, st, opt, a);
    opt.reuse_factors = true;
    solve_batch(next, st, opt, b);
    x[t] = b.x;
  }
  EXPECT_EQ(x[0], x[1]);
}

TEST(QpFactorStore, RefusedOnTheDevice) {
  const GeneratedQps g = random_benchmark_batch(4, RandomQpShape{6, 8, 0, 1.0}, 1);
  QpFactorStore store;
  BatchOptions opt;
  opt.backend = Backend::kCuda;
  opt.factors = &store;
  QpSolutions<double> sol;
  EXPECT_NE(error_of([&] { solve_batch(g.batch, QpSettings<double>{}, opt, sol); }).find("keep_factors"),
            std::string::npos);
}

// QpSettings::ipm_switch: problems whose residuals extrapolate far go to the
// interior point early; the others stay with ADMM; answers are the same optimum
TEST(QpBatch, SlowProblemsSwitchToTheInteriorPoint) {
  const GeneratedQps g = random_benchmark_batch(40, RandomQpShape{32, 64, 0, 1.0}, 2);
  const int n = g.batch.n;
  for (bool lanes : {true, false}) {
    SCOPED_TRACE(lanes ? "lanes" : "one at a time");
    QpSettings<double> st;
    st.eps_abs = st.eps_rel = 1e-6;
    EXPECT_EQ(st.ipm_switch, kQpIpmSwitchAuto);  // (the batch path chooses it: below)
    st.ipm_switch = 250;
    QpSettings<double> off = st;
    off.ipm_switch = 0;
    BatchOptions opt;
    opt.threads = 1;
    opt.lanes = lanes;
    QpSolutions<double> on, admm;
    solve_batch(g.batch, st, opt, on);
    solve_batch(g.batch, off, opt, admm);
    int switched = 0, total_on = 0, total_off = 0;
    for (int k = 0; k < g.batch.size; ++k) {
      ASSERT_EQ(on.status[k], SolveStatus::kSolved) << "problem " << k;
      ASSERT_EQ(admm.status[k], SolveStatus::kSolved) << "problem " << k;
      switched += on.ipm_iterations[k] > 0 && admm.ipm_iterations[k] == 0;
      // the switch comes at a check from ipm_switch/4 on, never before
      if (on.ipm_iterations[k] > 0) {
        EXPECT_GE(on.iterations[k] - on.ipm_iterations[k], st.ipm_switch / 4);
      }
      total_on += on.iterations[k];
      total_off += admm.iterations[k];
      const double ref = g.obj_opt[k];
      EXPECT_NEAR(on.objective[k], ref, 1e-5 * (1 + std::abs(ref))) << "problem " << k;
      for (int i = 0; i < n; ++i)
        EXPECT_NEAR(on.x[size_t(k) * n + i], g.x_opt[size_t(k) * n + i], 1e-4) << "problem " << k;
    }
    // these QPs (half their rows active) take ADMM hundreds of iterations: some switch,
    // and the batch's iterations (the interior point's counted) fall
    EXPECT_GE(switched, 4);
    EXPECT_LT(total_on, total_off);
  }
  // not where the interior point does not apply (second-order cones), nor in float
  const GeneratedQps c = random_qp_batch(24, 16, ConeSpec{0, 8, 4}, 3);
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-7;
  st.ipm_switch = 1;  // (every check from iteration 0 would switch, were it to apply)
  BatchOptions opt;
  QpSolutions<double> sol;
  solve_batch(c.batch, st, opt, sol);
  for (int k = 0; k < c.batch.size; ++k) EXPECT_EQ(sol.ipm_iterations[k], 0) << "problem " << k;
  QpSettings<float> fl;
  fl.ipm_switch = 1;  // float: fallback is off, so is the switch
  QpSolutions<float> fs;
  solve_batch(g.batch.cast<float>(), fl, opt, fs);
  for (int k = 0; k < g.batch.size; ++k) EXPECT_EQ(fs.ipm_iterations[k], 0) << "problem " << k;
  QpSettings<double> bad;
  bad.ipm_switch = -2;
  EXPECT_NE(bad.validate(), nullptr);
  bad.ipm_switch = kQpIpmSwitchAuto;
  EXPECT_EQ(bad.validate(), nullptr);
}

// The default switch (kQpIpmSwitchAuto) is qp_ipm_switch_auto's threshold for
// the batch's shape: on a fixed seed set of dense random QPs of each size
// (half their rows active) every problem is solved to its known optimum, and
// the interior point's share grows with n as ADMM's iterations do; the contact
// QPs (sparse rows, ADMM's home) never switch. The rates are recorded here
// (they are the method's, not timings: bench/solver_sizes.py measures speed).
TEST(QpBatch, AutomaticSwitchByShape) {
  struct Size {
    int n, threshold, min_ipm, max_ipm;  // of 32 problems
  };
  // thresholds: the operation-count model (host/batch/qp_ipm.h); rates measured
  // on these seeds (lanes, eps 1e-6) with a margin
  for (const Size sz : {Size{4, 1823, 0, 4}, Size{8, 632, 0, 16}, Size{16, 280, 8, 32}, Size{32, 229, 28, 32},
                        Size{64, 313, 28, 32}}) {
    SCOPED_TRACE("n " + std::to_string(sz.n));
    const GeneratedQps g = random_benchmark_batch(32, RandomQpShape{sz.n, 2 * sz.n, 0, 1.0}, 5);
    EXPECT_EQ(qp_ipm_switch_auto(g.batch.shape()), sz.threshold);
    QpSettings<double> st;
    st.eps_abs = st.eps_rel = 1e-6;
    QpSettings<double> fixed = st;
    fixed.ipm_switch = sz.threshold;
    QpSettings<double> off = st;
    off.ipm_switch = 0;
    for (bool lanes : {true, false}) {
      SCOPED_TRACE(lanes ? "lanes" : "one at a time");
      BatchOptions opt;
      opt.threads = 1;
      opt.lanes = lanes;
      QpSolutions<double> sol, same, admm;
      solve_batch(g.batch, st, opt, sol);
      solve_batch(g.batch, fixed, opt, same);
      solve_batch(g.batch, off, opt, admm);
      int ipm = 0;
      long total = 0, total_off = 0;
      for (int k = 0; k < g.batch.size; ++k) {
        ASSERT_EQ(sol.status[k], SolveStatus::kSolved) << "problem " << k;
        const double ref = g.obj_opt[k];
        // (ADMM's objective is first order in its residuals: 1e-6 to 6e-6 off at eps 1e-6
        // on the few n = 4 and 8 ones it finishes; the interior point's is 1e-9 off)
        EXPECT_NEAR(sol.objective[k], ref, (sol.ipm_iterations[k] > 0 ? 1e-8 : 1e-5) * (1 + std::abs(ref)))
            << "problem " << k;
        ipm += sol.ipm_iterations[k] > 0;
        total += sol.iterations[k];
        total_off += admm.iterations[k];
        // auto is that number, bit for bit
        EXPECT_EQ(sol.iterations[k], same.iterations[k]);
        for (int i = 0; i < g.batch.n; ++i)
          EXPECT_EQ(sol.x[size_t(k) * g.batch.n + i], same.x[size_t(k) * g.batch.n + i]) << "problem " << k;
      }
      std::printf("[ rate     ] n %d, %s: %d of %d finished by the interior point (threshold %d)\n", sz.n,
                  lanes ? "lanes" : "one at a time", ipm, g.batch.size, sz.threshold);
      EXPECT_GE(ipm, sz.min_ipm);
      EXPECT_LE(ipm, sz.max_ipm);
      // where problems switch, the batch takes fewer iterations than with the switch off
      if (sz.min_ipm > 0) {
        EXPECT_LT(total, total_off);
      }
    }
  }
  // the cube-loss QPs (octagon friction: sparse rows) stay with ADMM
  const GeneratedQps c = cube_loss_batch(64, FrictionModel::kOctagon, 4);
  EXPECT_GT(qp_ipm_switch_auto(c.batch.shape()), 500);
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-6;
  QpSolutions<double> sol;
  solve_batch(c.batch, st, BatchOptions{}, sol);
  for (int k = 0; k < c.batch.size; ++k) {
    EXPECT_EQ(sol.status[k], SolveStatus::kSolved) << "problem " << k;
    EXPECT_EQ(sol.ipm_iterations[k], 0) << "problem " << k;
  }
}

TEST(RandomBenchmarkQps, KnownOptimumIsOneAndTheSolverFindsIt) {
  for (const RandomQpShape sh : {RandomQpShape{8, 16, 0, 1.0}, RandomQpShape{24, 40, 4, 0.1}}) {
    SCOPED_TRACE("n " + std::to_string(sh.n) + ", density " + std::to_string(sh.density));
    const GeneratedQps g = random_benchmark_batch(20, sh, 3);
    const QpBatch<double>& bt = g.batch;
    const int n = bt.n, m = bt.m();
    ASSERT_EQ(m, sh.inequalities + sh.equalities);
    ASSERT_EQ(bt.cones.n_zero, sh.equalities);
    const double share = double(bt.nnz()) / (double(m) * n);
    if (sh.density < 1) {
      EXPECT_GT(share, 0.5 * sh.density);
      EXPECT_LT(share, 2.0 * sh.density);
    } else {
      EXPECT_EQ(bt.nnz(), m * n);
    }
    QpSettings<double> st;
    st.eps_abs = st.eps_rel = 1e-9;
    st.max_iter = 50000;
    BatchOptions opt;
    opt.threads = 1;
    QpSolutions<double> sol;
    solve_batch(bt, st, opt, sol);
    for (int k = 0; k < bt.size; ++k) {
      // KKT at the known optimum, from the data alone: Px + q + A'y = 0, s = b - Ax in K, y in K*, s'y = 0
      const double* x = &g.x_opt[size_t(k) * n];
      const double* y = &g.y_opt[size_t(k) * m];
      std::vector<double> r(n, 0.0), ax(m, 0.0);
      for (int i = 0; i < n; ++i) {
        r[i] = bt.q[size_t(k) * n + i];
        for (int j = 0; j < n; ++j) r[i] += bt.P[size_t(k) * n * n + i * n + j] * x[j];
      }
      for (int row = 0; row < m; ++row)
        for (int e = bt.a_row_ptr[row]; e < bt.a_row_ptr[row + 1]; ++e) {
          const double a = bt.A[size_t(k) * bt.nnz() + e];
          r[bt.a_col[e]] += a * y[row];
          ax[row] += a * x[bt.a_col[e]];
        }
      for (int i = 0; i < n; ++i) EXPECT_NEAR(r[i], 0.0, 1e-10) << "stationarity, problem " << k;
      int active = 0;
      for (int row = 0; row < m; ++row) {
        const double sr = bt.b[size_t(k) * m + row] - ax[row];
        if (row < sh.equalities) {
          EXPECT_NEAR(sr, 0.0, 1e-10);
          continue;
        }
        EXPECT_GE(sr, -1e-10);
        EXPECT_GE(y[row], 0.0);
        EXPECT_NEAR(sr * y[row], 0.0, 1e-10);
        active += y[row] > 0;
      }
      EXPECT_EQ(active, (sh.inequalities + 1) / 2);
      ASSERT_EQ(sol.status[k], SolveStatus::kSolved) << "problem " << k;
      EXPECT_NEAR(sol.objective[k], g.obj_opt[k], 1e-6 * std::max(1.0, std::abs(g.obj_opt[k]))) << "problem " << k;
    }
  }
  EXPECT_THROW(random_benchmark_batch(4, RandomQpShape{0, 4, 0, 1.0}, 1), Error);
  EXPECT_THROW(random_benchmark_batch(4, RandomQpShape{4, 4, 0, 0.0}, 1), Error);
  EXPECT_THROW(random_benchmark_batch(4, RandomQpShape{4, -1, 0, 1.0}, 1), Error);
  EXPECT_THROW(random_benchmark_batch(4, RandomQpShape{4, 4, 5, 1.0}, 1), Error);
}

}  // namespace
}  // namespace impulse
