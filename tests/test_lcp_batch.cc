// The LCP batch API: every problem matches Lemke's answer, a bad problem is
// reported alone, and the GPU path matches the CPU (skipped without a device).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <limits>
#include <random>

#include "host/batch/lcp_batch.h"
#include "solvers/lemke.h"

namespace impulse {
namespace {

LcpBatch<double> random_spd_batch(int B, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd;
  LcpBatch<double> bt;
  bt.size = B;
  bt.n = n;
  bt.M.resize(size_t(B) * n * n);
  bt.q.resize(size_t(B) * n);
  for (int k = 0; k < B; ++k) {
    Eigen::MatrixXd G(n, n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) G(i, j) = nd(rng);
    const Eigen::MatrixXd M = G * G.transpose() + n * Eigen::MatrixXd::Identity(n, n);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) bt.M[size_t(k) * n * n + i * n + j] = M(i, j);
      bt.q[size_t(k) * n + i] = 3 * nd(rng);
    }
  }
  return bt;
}

TEST(LcpBatch, EveryProblemMatchesLemke) {
  LcpBatch<double> bt = random_spd_batch(64, 9, 3);
  bt.M[size_t(5) * 81 + 3] = std::numeric_limits<double>::quiet_NaN();
  LcpSettings<double> st;
  st.tol = 1e-10;
  st.max_iter = 5000;
  LcpSolutions<double> sol;
  BatchOptions opt;
  opt.threads = 2;
  solve_lcp_batch(bt, st, opt, sol);
  for (int k = 0; k < bt.size; ++k) {
    if (k == 5) {
      EXPECT_EQ(sol.status[k], SolveStatus::kInvalidInput);
      EXPECT_EQ(sol.fault[k], InputFault::kNonFiniteM);
      continue;
    }
    ASSERT_EQ(sol.status[k], SolveStatus::kSolved) << "problem " << k;
    std::vector<double> z(9), w(9);
    const LemkeInfo li = lemke_solve(9, &bt.M[size_t(k) * 81], &bt.q[size_t(k) * 9], z.data(), w.data());
    ASSERT_EQ(li.status, SolveStatus::kSolved);
    for (int i = 0; i < 9; ++i) EXPECT_NEAR(sol.z[size_t(k) * 9 + i], z[i], 1e-8) << "problem " << k;
  }
}

TEST(LcpBatch, MisuseThrows) {
  LcpBatch<double> bt = random_spd_batch(2, 3, 1);
  bt.q.pop_back();
  LcpSolutions<double> sol;
  EXPECT_THROW(solve_lcp_batch(bt, LcpSettings<double>{}, BatchOptions{}, sol), Error);
  LcpBatch<double> empty;
  empty.n = 3;
  EXPECT_THROW(solve_lcp_batch(empty, LcpSettings<double>{}, BatchOptions{}, sol), Error);
}

TEST(LcpBatchGpu, MatchesCpu) {
  const cuda::DeviceInfo d = cuda::device_info();
  if (d.count == 0) GTEST_SKIP() << "no CUDA device: " << d.reason;
  LcpBatch<double> bt = random_spd_batch(300, 12, 4);
  bt.mu.assign(size_t(300) * 4, 0.3);
  LcpSettings<double> st;
  st.tol = 1e-9;
  st.max_iter = 5000;
  LcpSolutions<double> cpu, gpu;
  solve_lcp_batch(bt, st, BatchOptions{}, cpu);
  BatchOptions g;
  g.backend = Backend::kCuda;
  solve_lcp_batch(bt, st, g, gpu);
  for (int k = 0; k < bt.size; ++k) {
    ASSERT_EQ(cpu.status[k], gpu.status[k]) << "problem " << k;
    for (int i = 0; i < 12; ++i) EXPECT_NEAR(cpu.z[size_t(k) * 12 + i], gpu.z[size_t(k) * 12 + i], 1e-7);
  }
}

}  // namespace
}  // namespace impulse
