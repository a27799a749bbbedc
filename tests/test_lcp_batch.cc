// The LCP batch API: every problem matches Lemke's answer, a bad problem is
// reported alone (the GPU path: test_gpu.cc).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <limits>
#include <random>

#include "host/batch/lcp_batch.h"
#include "tests/test_util.h"
#include "solvers/lemke.h"

namespace impulse {
namespace {

using testing::random_spd_batch;

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

}  // namespace
}  // namespace impulse
