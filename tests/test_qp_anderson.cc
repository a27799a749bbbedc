// Anderson acceleration of the ADMM iteration (solvers/qp_anderson.h,
// QpSettings::anderson): with it, problems solve to the same tolerance with
// KKT residuals recomputed from the data, in fewer iterations; one at a time
// and in lane groups alike; it stays off where it must (second-order cones,
// the GPU reference path, anderson = 0: bitwise the plain iteration); and the
// accelerated iterate never reaches the answer (the answer is a step's own
// output). The recorded ContactNets QPs are read from ../shared (skipped with
// a message when absent).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "host/batch/qp_file.h"

#include "host/batch/generate.h"
#include "host/batch/golden.h"
#include "tests/test_util.h"

namespace impulse {
namespace {

QpSolutions<double> solve(const QpBatch<double>& b, int anderson, bool lanes, double eps = 1e-6) {
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = eps;
  st.anderson = anderson;
  st.ipm_switch = 0;  // (acceleration's own effect, without the early switch to the interior point)
  QpSolutions<double> sol;
  solve_batch(b, st, testing::cpu_path(lanes), sol);
  return sol;
}

double mean_iterations(const QpSolutions<double>& s) {
  double t = 0;
  for (int it : s.iterations) t += it;
  return t / double(s.iterations.size());
}

// every problem solved, its objective the plain solve's to the tolerance's
// scale, and its KKT residuals recomputed from the data within it
void expect_same_answers(const QpBatch<double>& b, const QpSolutions<double>& plain,
                         const QpSolutions<double>& acc, double tol, const char* what) {
  for (int k = 0; k < b.size; ++k) {
    ASSERT_EQ(acc.status[k], SolveStatus::kSolved) << what << " problem " << k;
    ASSERT_EQ(plain.status[k], SolveStatus::kSolved) << what << " problem " << k;
    EXPECT_NEAR(acc.objective[k], plain.objective[k], tol * (1 + std::abs(plain.objective[k])))
        << what << " problem " << k;
    const auto r = testing::kkt_residuals(b, k, &acc.x[size_t(k) * b.n], &acc.y[size_t(k) * b.m()]);
    const double scale = 1 + std::abs(r.objective);
    EXPECT_LT(r.primal, 10 * tol * scale) << what << " problem " << k;
    EXPECT_LT(r.dual, 1e-12) << what << " problem " << k;
  }
}

// The cube's loss QP with the reference implementation's octagon (no cones):
// the same answers in fewer iterations, on both CPU paths, and the lane
// groups agree with the one-at-a-time solves.
TEST(QpAnderson, OctagonCubeQpsSameAnswersFewerIterations) {
  const QpBatch<double> b = cube_loss_batch(64, FrictionModel::kOctagon, 3).batch;
  for (bool lanes : {false, true}) {
    const QpSolutions<double> plain = solve(b, 0, lanes), acc = solve(b, QpSettings<double>{}.anderson, lanes);
    expect_same_answers(b, plain, acc, 1e-5, lanes ? "lanes" : "one at a time");
    EXPECT_LT(mean_iterations(acc), 0.8 * mean_iterations(plain)) << (lanes ? "lanes" : "one at a time");
    std::printf("[ info ] octagon, %s: mean iterations %.1f plain, %.1f accelerated\n",
                lanes ? "lanes" : "one at a time", mean_iterations(plain), mean_iterations(acc));
  }
}

// Random QPs with zero and nonnegative rows built around a known optimum
// (generate.h), at eps 1e-8: the optimum reached, accelerated, with memories
// 3 to 8. (The plain iteration leaves problem 10 at the budget one at a
// time, and so does a memory of 1; from 3 on all 24 solve.)
TEST(QpAnderson, KnownOptimumReachedWithEveryMemory) {
  ConeSpec cones;
  cones.n_zero = 3;
  cones.n_nonneg = 20;
  const GeneratedQps g = random_qp_batch(24, 12, cones, 8);
  for (int mem : {3, 5, 8}) {
    for (bool lanes : {false, true}) {
      const QpSolutions<double> s = solve(g.batch, mem, lanes, 1e-8);
      for (int k = 0; k < g.batch.size; ++k) {
        ASSERT_EQ(s.status[k], SolveStatus::kSolved) << "memory " << mem << " problem " << k;
        EXPECT_NEAR(s.objective[k], g.obj_opt[k], 1e-6 * (1 + std::abs(g.obj_opt[k])))
            << "memory " << mem << " lanes " << lanes << " problem " << k;
      }
    }
  }
}

// With second-order cones acceleration is off: the results are bitwise the
// plain iteration's (it made Anitescu QPs fail); so with anderson = 0.
TEST(QpAnderson, OffWithConesAndAtZero) {
  const QpBatch<double> cone = cube_loss_batch(16, FrictionModel::kCone, 5).batch;
  for (bool lanes : {false, true}) {
    const QpSolutions<double> a = solve(cone, 0, lanes), b = solve(cone, 5, lanes);
    EXPECT_EQ(a.x, b.x);
    EXPECT_EQ(a.y, b.y);
    EXPECT_EQ(a.iterations, b.iterations);
  }
  // anderson = 0 on a problem without cones: the plain iteration (the one
  // the GPU tests' CPU reference runs, whose sparse x-step never accelerates)
  const QpBatch<double> oct = cube_loss_batch(8, FrictionModel::kOctagon, 6).batch;
  QpSettings<double> st;
  st.anderson = 5;
  st.dense_iteration = false;  // the device's algorithm: no dense workspace, no acceleration
  QpSolutions<double> sparse5, sparse0;
  solve_batch(oct, st, testing::cpu_path(false), sparse5);
  st.anderson = 0;
  solve_batch(oct, st, testing::cpu_path(false), sparse0);
  EXPECT_EQ(sparse5.x, sparse0.x);
  EXPECT_EQ(sparse5.iterations, sparse0.iterations);
  QpSettings<double> bad;
  bad.anderson = kQpAndersonMax + 1;
  ASSERT_NE(bad.validate(), nullptr);
  EXPECT_NE(std::string(bad.validate()).find("anderson"), std::string::npos);
  bad.anderson = -1;
  EXPECT_NE(bad.validate(), nullptr);
}

// The CLI: in float acceleration is off unless asked for (a float train QP
// ended in a numerical error with it); in double it is on; --anderson is
// honoured and a memory out of range is refused.
TEST(QpAnderson, SolveBatchDefaultsPerPrecision) {
  const std::string dir = testing::fresh_dir("impulse_anderson_", "cli");
  const std::string in = dir + "/oct.npz";
  write_qp_file(in, cube_loss_batch(16, FrictionModel::kOctagon, 12).batch);
  const auto run = [&](const std::string& opts, const std::string& out) {
    return testing::run_cli("solve-batch --in \"" + in + "\" --out \"" + dir + "/" + out +
                            "\" --threads 1 --lanes off " + opts);
  };
  ASSERT_EQ(run("--precision float", "f_default.npz"), 0);
  ASSERT_EQ(run("--precision float --anderson 0", "f_off.npz"), 0);
  ASSERT_EQ(run("--precision float --anderson 3", "f_on.npz"), 0);
  ASSERT_EQ(run("", "d_default.npz"), 0);
  ASSERT_EQ(run("--anderson 0", "d_off.npz"), 0);
  const auto its = [&](const std::string& f) { return read_solution_file(dir + "/" + f).iterations; };
  EXPECT_EQ(its("f_default.npz"), its("f_off.npz"));
  EXPECT_NE(its("f_on.npz"), its("f_off.npz"));
  EXPECT_NE(its("d_default.npz"), its("d_off.npz"));
  EXPECT_NE(run("--anderson 9", "bad.npz"), 0);
}

// Same input, same output: twice, and on 1 and 2 threads.
TEST(QpAnderson, Deterministic) {
  const QpBatch<double> b = cube_loss_batch(40, FrictionModel::kOctagon, 9).batch;
  QpSettings<double> st;
  for (bool lanes : {false, true}) {
    QpSolutions<double> s1, s2, s3;
    BatchOptions o = testing::cpu_path(lanes);
    solve_batch(b, st, o, s1);
    solve_batch(b, st, o, s2);
    o.threads = 2;
    solve_batch(b, st, o, s3);
    EXPECT_EQ(s1.x, s2.x);
    EXPECT_EQ(s1.x, s3.x);
    EXPECT_EQ(s1.iterations, s3.iterations);
  }
}

// The recorded ContactNets QPs at eps 1e-6: every one solved, the optimal
// value within 1e-6 of the independent reference, and far fewer iterations
// (the issue-15 figure: the mean falls at least 2x on gt, 1.5x on train).
TEST(QpAnderson, RecordedContactNetsQps) {
  const std::string dir = testing::shared_data("contactnets_qps");
  if (!std::filesystem::exists(dir + "/gt_P.npy"))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("real ContactNets QPs", dir, "contactnets_qps"));
  for (const char* set : {"gt", "train"}) {
    const GoldenQps g = load_golden_qps(dir, set);
    // the first 200 problems
    const int count = std::min(g.batch.size, 200), n = g.batch.n, m = g.batch.m(), nnz = g.batch.nnz();
    QpBatch<double> b = g.batch;
    b.size = count;
    b.P.resize(size_t(count) * n * n);
    b.q.resize(size_t(count) * n);
    b.A.resize(size_t(count) * nnz);
    b.b.resize(size_t(count) * m);
    for (bool lanes : {false, true}) {
      const QpSolutions<double> plain = solve(b, 0, lanes), acc = solve(b, QpSettings<double>{}.anderson, lanes);
      for (int k = 0; k < count; ++k) {
        ASSERT_EQ(acc.status[k], SolveStatus::kSolved) << set << " problem " << k;
        EXPECT_LT(std::abs(acc.value[k] - g.ref_obj[k]) / std::max(std::abs(g.ref_obj[k]), 1e-3), 1e-6)
            << set << " problem " << k;
      }
      const double ratio = mean_iterations(plain) / mean_iterations(acc);
      std::printf("[ info ] %s, %s: mean iterations %.1f plain, %.1f accelerated (%.2fx)\n", set,
                  lanes ? "lanes" : "one at a time", mean_iterations(plain), mean_iterations(acc), ratio);
      EXPECT_GT(ratio, std::string(set) == "gt" ? 2.0 : 1.5) << set << (lanes ? " lanes" : " one at a time");
    }
  }
}

}  // namespace
}  // namespace impulse
