// The 1,000 real ContactNets loss QPs (../shared/data/contactnets_qps): every
// one solves, and the optimal value matches the independent interior-point
// reference. Skips with a message when the data are absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <tuple>

#include "host/batch/golden.h"
#include "tests/test_util.h"

namespace impulse {
namespace {

std::string golden_dir() {
  return testing::shared_data("contactnets_qps");
}

// relative error of an optimal value; values below 1e-3 in magnitude (a loss
// whose constant term, not stored here, dominates) are compared absolutely
// at that scale
double rel_err(double v, double ref) { return std::abs(v - ref) / std::max(std::abs(ref), 1e-3); }

// the whole set solved in precision T at eps_abs = eps_rel = eps
template <class T>
QpSolutions<T> solve_all(const QpBatch<double>& batch, double eps, bool lanes) {
  QpSettings<T> st;
  st.eps_abs = st.eps_rel = T(eps);
  st.max_iter = 50000;
  QpSolutions<T> sol;
  BatchOptions opt;
  opt.lanes = lanes;
  solve_batch(batch.cast<T>(), st, opt, sol);
  return sol;
}

// (set, CPU path: lane groups or one problem at a time)
class RealQps : public ::testing::TestWithParam<std::tuple<const char*, bool>> {
 protected:
  const char* set() const { return std::get<0>(GetParam()); }
  bool lanes() const { return std::get<1>(GetParam()); }
  void SetUp() override {
    if (!std::filesystem::exists(golden_dir() + "/train_P.npy"))
      IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("real ContactNets QPs", golden_dir(), "contactnets_qps"));
  }
};

TEST_P(RealQps, DoubleWithin1e6OfReference) {
  const GoldenQps g = load_golden_qps(golden_dir(), set());
  const QpSolutions<double> sol = solve_all<double>(g.batch, 1e-9, lanes());
  double worst = 0;
  for (int k = 0; k < g.batch.size; ++k) {
    ASSERT_TRUE(is_solved(sol.status[k])) << "problem " << k << ": " << to_string(sol.status[k]) << " ("
                                          << sol.fault_text[k] << ")";
    const double e = rel_err(sol.objective[k], g.ref_obj[k]);
    worst = std::max(worst, e);
    EXPECT_LT(e, 1e-6) << "problem " << k << ": " << sol.objective[k] << " vs " << g.ref_obj[k];
    EXPECT_LT(rel_err(sol.value[k], g.ref_obj[k]), 1e-6) << "problem " << k;
    const auto r = testing::kkt_residuals(g.batch, k, &sol.x[size_t(k) * g.batch.n],
                                          &sol.y[size_t(k) * g.batch.m()]);
    EXPECT_LT(r.primal, 1e-6) << "problem " << k;
  }
  std::printf("[ info ] %s: worst relative objective error %.2e (double)\n", set(), worst);
}

// At eps 1e-6 the value is within 1e-6 of the reference while the objective
// at the same x is off by up to ~1.3e-4 (gt #13, optimum ~0).
TEST_P(RealQps, DoubleValueWithin1e6OfReferenceAtEps1e6) {
  const GoldenQps g = load_golden_qps(golden_dir(), set());
  const QpSolutions<double> sol = solve_all<double>(g.batch, 1e-6, lanes());
  double worst_value = 0, worst_obj = 0;
  for (int k = 0; k < g.batch.size; ++k) {
    ASSERT_TRUE(is_solved(sol.status[k])) << "problem " << k << ": " << to_string(sol.status[k]);
    worst_value = std::max(worst_value, rel_err(sol.value[k], g.ref_obj[k]));
    worst_obj = std::max(worst_obj, rel_err(sol.objective[k], g.ref_obj[k]));
  }
  EXPECT_LT(worst_value, 1e-6);
  std::printf("[ info ] %s, eps 1e-6: worst relative error of value %.2e, of objective %.2e\n",
              set(), worst_value, worst_obj);
}

// Float: the optimal value (QpInfo::value, the Lagrangian) within 1e-4 of the
// reference at eps 1e-5. The objective ½xᵀPx + qᵀx at the same x is not: a
// float or double x that meets eps 1e-5 undercuts the optimum by up to
// ~1.5e-3 (relative, floor 1e-3) on these problems, so this is a test of the
// value estimate as much as of float arithmetic.
TEST_P(RealQps, FloatValueWithin1e4OfReference) {
  const GoldenQps g = load_golden_qps(golden_dir(), set());
  const QpSolutions<float> sol = solve_all<float>(g.batch, 1e-5, lanes());
  double worst = 0;
  for (int k = 0; k < g.batch.size; ++k) {
    ASSERT_TRUE(is_solved(sol.status[k])) << "problem " << k << ": " << to_string(sol.status[k]) << " ("
                                          << sol.fault_text[k] << ")";
    const double e = rel_err(sol.value[k], g.ref_obj[k]);
    worst = std::max(worst, e);
    EXPECT_LT(e, 1e-4) << "problem " << k << ": " << sol.value[k] << " vs " << g.ref_obj[k];
  }
  std::printf("[ info ] %s: worst relative value error %.2e (float, eps 1e-5)\n", set(), worst);
}

// A lane group never ends at the budget a problem the one-problem solver
// solves within it. Found on these QPs: train #451 at eps 1e-6 alone takes
// 291 iterations; in its group (#448-451, the others stop by iteration 75)
// it was handed over as the last slow lane with its ρ updates used up, and
// the one-problem solver, left no ρ update, ended at the 1,000-iteration
// budget. A handed-over lane now gets its own budget of ρ updates (436
// iterations in all). The whole set, both precisions' default settings, a
// 1,000-iteration budget: every problem solved alone is solved in lanes.
TEST(RealQpsLanes, GroupSolvesWhatTheOneProblemSolverSolves) {
  if (!std::filesystem::exists(golden_dir() + "/train_P.npy"))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("real ContactNets QPs", golden_dir(), "contactnets_qps"));
  const GoldenQps g = load_golden_qps(golden_dir(), "train");
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-6;
  st.max_iter = 1000;
  QpSolutions<double> one, grp;
  solve_batch(g.batch, st, testing::cpu_path(false), one);
  solve_batch(g.batch, st, testing::cpu_path(true), grp);
  int compared = 0;
  for (int k = 0; k < g.batch.size; ++k) {
    if (one.status[k] != SolveStatus::kSolved) continue;
    ++compared;
    EXPECT_EQ(grp.status[k], SolveStatus::kSolved) << "problem " << k << ": " << to_string(grp.status[k])
                                                   << " in lanes at " << grp.iterations[k]
                                                   << ", solved alone in " << one.iterations[k];
  }
  EXPECT_GE(compared, g.batch.size * 9 / 10);
  ASSERT_GT(g.batch.size, 451);
  EXPECT_EQ(one.status[451], SolveStatus::kSolved);
}

INSTANTIATE_TEST_SUITE_P(Golden, RealQps,
                         ::testing::Combine(::testing::Values("train", "gt"), ::testing::Bool()),
                         [](const auto& param_info) {
                           return std::string(std::get<0>(param_info.param)) +
                                  (std::get<1>(param_info.param) ? "_lanes" : "_one_at_a_time");
                         });

}  // namespace
}  // namespace impulse
