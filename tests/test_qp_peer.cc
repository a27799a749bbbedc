// The solver core against a public peer suite and its stopping rule:
// - the 13 small Maros-Meszaros QPs of ../shared/data/maros_meszaros_small
//   (verified reference objectives; README there), one at a time and in a
//   lane group of copies;
// - the duality-gap condition (QpSettings::check_gap): an iterate whose
//   residuals pass and whose gap does not is not solved;
// - b = +inf on a nonnegative row is "no bound"; NaN and −inf are errors;
// - problems without an optimum get NaN objective and value; solve-batch
//   exits 3 when any problem is invalid_input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "host/batch/generate.h"
#include "host/batch/qp_batch.h"
#include "host/batch/qp_file.h"
#include "solvers/lanes.h"
#include "solvers/qp_admm.h"
#include "tests/test_util.h"

namespace impulse {
namespace {

std::string suite_dir() {
  return testing::shared_data("maros_meszaros_small");
}

struct PeerProblem {
  std::string name;
  QpBatch<double> batch;  // a batch of one
  double objective = 0, constant_r = 0;  // the reference, and the constant the npz lacks
};

std::vector<PeerProblem> load_suite() {
  std::vector<PeerProblem> out;
  std::ifstream f(suite_dir() + "/refs.json");
  if (!f) return out;
  const nlohmann::json refs = nlohmann::json::parse(f);
  for (const auto& [name, r] : refs.items()) {
    PeerProblem p;
    p.name = name;
    p.batch = read_qp_file(suite_dir() + "/" + name + ".npz").batch;
    p.objective = r.at("objective").get<double>();
    p.constant_r = r.value("constant_r", 0.0);
    out.push_back(std::move(p));
  }
  return out;
}

// |f − f*| / max(1, |f*|), the suite's measure (README there)
double rel_err(const PeerProblem& p, double objective) {
  return std::abs(objective + p.constant_r - p.objective) / std::max(1.0, std::abs(p.objective));
}

// Every problem at eps 1e-6 with the default settings (iteration limit
// 4,000), one at a time and as a full lane group of copies. What holds for
// all 13: a problem reported solved has its objective within 1e-4 of the
// reference, and the lane group solves every problem the one-problem solver
// solves (a stalling lane is handed over in time). All 13 are solved: ADMM
// alone solves 9; QADLITTL, QISRAEL, QSCAGR7 and QSHARE2B stall (OSQP 1.1.3
// reaches the limit on the last three) and are finished by the interior point
// (QpSettings::fallback, host/batch/qp_ipm.h) within the budget.
TEST(PeerSuite, SolvedMeansTheObjectiveIsRightOnBothPaths) {
  const std::vector<PeerProblem> suite = load_suite();
  if (suite.empty())
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("the Maros-Meszaros QPs", suite_dir(), "mm"));
  ASSERT_EQ(suite.size(), 13u);
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-6;
  int good_one = 0, good_lanes = 0;
  for (const PeerProblem& p : suite) {
    SCOPED_TRACE(p.name);
    QpSolutions<double> one, grp;
    solve_batch(p.batch, st, testing::cpu_path(false), one);
    const QpBatch<double> group = testing::copies(p.batch, Lanes<double>::W);
    solve_batch(group, st, testing::cpu_path(true), grp);
    const double e1 = rel_err(p, one.objective[0]);
    if (one.status[0] == SolveStatus::kSolved) {
      EXPECT_LE(e1, 1e-4) << "solved, objective off";
    }
    good_one += one.status[0] == SolveStatus::kSolved && e1 <= 1e-4;
    bool all = true;
    for (int k = 0; k < group.size; ++k) {
      const double e = rel_err(p, grp.objective[k]);
      if (grp.status[k] == SolveStatus::kSolved) {
        EXPECT_LE(e, 1e-4) << "lane " << k << " solved, objective off";
      }
      if (one.status[0] == SolveStatus::kSolved) {
        EXPECT_EQ(grp.status[k], SolveStatus::kSolved) << "lane " << k << ": the one-problem solver solves it";
      }
      all = all && grp.status[k] == SolveStatus::kSolved && e <= 1e-4;
    }
    good_lanes += all;
    std::printf("[ info ] %-9s one: %-18s %5d it (ipm %2d), error %.1e; lanes: %-18s %5d it, error %.1e\n",
                p.name.c_str(), to_string(one.status[0]), one.iterations[0], one.ipm_iterations[0], e1,
                to_string(grp.status[0]), grp.iterations[0], rel_err(p, grp.objective[0]));
  }
  EXPECT_EQ(good_one, 13);
  EXPECT_EQ(good_lanes, 13);
}

// A lane group never does worse than one at a time on DUAL3 (issue 50):
// one at a time it takes 70 iterations at eps 1e-6; a group of copies took
// 512 and the interior point while its Anderson acceleration stepped every
// second iteration (that map drove ρ back and forth through its ten updates,
// and with ρ at 1.8e-5 the primal residual crawled until acceleration's
// budget ran out). Now every lane stops within 2·check_every iterations of
// the one-problem solve (a lane checks on its group's schedule, and its
// Cholesky and equilibration round differently from the one-problem path's
// explicit K⁻¹: a stop moves by a check or so; DUAL3's iteration is stable,
// 70 one at a time whatever 1e-12 perturbation of ρ or 1e-9 of σ), without
// the interior point.
TEST(PeerSuite, LanesSolveDual3AsOneAtATime) {
  const std::vector<PeerProblem> suite = load_suite();
  if (suite.empty())
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("the Maros-Meszaros QPs", suite_dir(), "mm"));
  const PeerProblem* p = nullptr;
  for (const PeerProblem& s : suite)
    if (s.name == "DUAL3") p = &s;
  ASSERT_NE(p, nullptr);
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-6;
  QpSolutions<double> one, grp;
  solve_batch(p->batch, st, testing::cpu_path(false), one);
  const QpBatch<double> group = testing::copies(p->batch, Lanes<double>::W);
  solve_batch(group, st, testing::cpu_path(true), grp);
  ASSERT_EQ(one.status[0], SolveStatus::kSolved);
  ASSERT_EQ(one.ipm_iterations[0], 0);
  EXPECT_LE(one.iterations[0], 100);
  for (int k = 0; k < group.size; ++k) {
    SCOPED_TRACE("lane " + std::to_string(k));
    EXPECT_EQ(grp.status[k], SolveStatus::kSolved);
    EXPECT_EQ(grp.ipm_iterations[k], 0);
    EXPECT_LE(grp.iterations[k], one.iterations[0] + 2 * st.check_every) << "one at a time " << one.iterations[0];
    EXPECT_LE(rel_err(*p, grp.objective[k]), 1e-4);
  }
}

// The duality gap at the returned point, recomputed from the data: x'Px +
// q'x + b'y against eps_abs + eps_rel·max of the three terms' sizes.
struct Gap {
  double gap = 0, tol = 0;
};
Gap gap_of(const QpBatch<double>& bt, int k, const double* x, const double* y, double eps) {
  const int n = bt.n, m = bt.m();
  double xpx = 0, qx = 0, by = 0;
  for (int i = 0; i < n; ++i) {
    double pxi = 0;
    for (int j = 0; j < n; ++j) pxi += bt.P[size_t(k) * n * n + i * n + j] * x[j];
    xpx += x[i] * pxi;
    qx += bt.q[size_t(k) * n + i] * x[i];
  }
  for (int r = 0; r < m; ++r)
    if (y[r] != 0) by += bt.b[size_t(k) * m + r] * y[r];
  return {std::abs(xpx + qx + by), eps + eps * std::max({std::abs(xpx), std::abs(qx), std::abs(by)})};
}

// QSCAGR7 at eps 1e-3: by the residuals alone it is solved at an iterate
// whose objective is 9e-3 off (its relative dual tolerance follows ‖Aᵀy‖,
// large here); with the gap condition the solver goes on until the gap
// passes, and the objective is then within the tolerance.
TEST(PeerSuite, GapKeepsAWrongObjectiveFromBeingSolved) {
  const std::vector<PeerProblem> suite = load_suite();
  if (suite.empty())
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("the Maros-Meszaros QPs", suite_dir(), "mm"));
  const PeerProblem* p = nullptr;
  for (const PeerProblem& s : suite)
    if (s.name == "QSCAGR7") p = &s;
  ASSERT_NE(p, nullptr);
  // (one at a time: in a lane group the iterate differs, and by the
  // residuals alone the group is not solved there by the limit)
  {
    const BatchOptions opt = testing::cpu_path(false);
    const QpBatch<double>& bt = p->batch;
    QpSettings<double> st;
    st.eps_abs = st.eps_rel = 1e-3;
    st.fallback = false;  // the trajectory the construction rests on (no restart,
    st.anderson = 0;      // no acceleration)
    st.check_gap = false;
    QpSolutions<double> off, on;
    solve_batch(bt, st, opt, off);
    st.check_gap = true;
    solve_batch(bt, st, opt, on);
    // the construction: residuals pass, gap and objective do not
    ASSERT_EQ(off.status[0], SolveStatus::kSolved);
    const Gap g_off = gap_of(bt, 0, off.x.data(), off.y.data(), 1e-3);
    EXPECT_GT(g_off.gap, g_off.tol);
    EXPECT_GT(rel_err(*p, off.objective[0]), 3e-3);
    // with the gap condition: solved later, where the gap passes
    ASSERT_EQ(on.status[0], SolveStatus::kSolved);
    EXPECT_GT(on.iterations[0], off.iterations[0]);
    const Gap g_on = gap_of(bt, 0, on.x.data(), on.y.data(), 1e-3);
    EXPECT_LE(g_on.gap, g_on.tol * (1 + 1e-9));
    EXPECT_LE(rel_err(*p, on.objective[0]), 1e-3);
  }
}

// The rule itself on a constructed iterate: minimize ½x² subject to
// 1e6·x ≤ 1e6 and −1e6·x ≤ 1e6 (−1 ≤ x ≤ 1), at x = 0 (optimal), z = Ax, and
// y = (t, t): Aᵀy = 0, so both residuals are 0, but bᵀy = 2e6·t. The check
// passes it with check_gap off, and not with it on until t is small enough.
TEST(QpGap, ResidualsPassGapDoesNot) {
  const int n = 1, m = 2;
  ConeSpec cones;
  cones.n_nonneg = 2;
  const int row_ptr[] = {0, 1, 2}, col[] = {0, 0};
  QpShape sh;
  sh.n = n;
  sh.cones = cones;
  sh.a = CsrPattern{m, n, 2, row_ptr, col};
  const double P[] = {1.0}, q[] = {0.0}, A[] = {1e6, -1e6}, b[] = {1e6, 1e6};
  const QpData<double, UnitStride> d{unit_view(P), unit_view(q), unit_view(A), unit_view(b)};
  std::vector<double> work(qp_work_host_size(n, m));
  auto w = QpWork<double, UnitStride>::carve(unit_view(qp_work_align(work.data())), n, m, true);
  detail::qp_equilibrate(sh, d, w, 0, 1e-6);
  for (double t : {1e-3, 1e-9, 1e-13}) {
    double x[] = {0.0}, y[] = {t, t};
    w.z[0] = w.z[1] = 0.0;
    for (bool gap : {false, true}) {
      QpSettings<double> st;
      st.eps_abs = st.eps_rel = 1e-6;
      st.check_gap = gap;
      detail::QpCheck<double> c;
      const SolveStatus s = detail::qp_check_residuals(sh, d, w, true, unit_view(x), unit_view(y), st, c);
      EXPECT_LE(c.prim_res, 1e-12);  // 0 up to rounding
      EXPECT_LE(c.dual_res, 1e-12);
      const bool gap_passes = 2e6 * t <= 1e-6 + 1e-6 * 2e6 * t;
      EXPECT_EQ(s, !gap || gap_passes ? SolveStatus::kSolved : SolveStatus::kNotRun)
          << "t " << t << ", gap check " << gap;
      if (gap) {
        EXPECT_NEAR(c.gap, 2e6 * t, 1e-12 * 2e6 * t);
      }
    }
  }
}

// +inf in b on a nonnegative row is that row without a bound: the answer is
// the one with the row's b at a large finite value (inactive either way) and
// its y is 0. NaN or −inf there, or +inf on a zero or cone row, is
// kNonFiniteB, with NaN objective and value. Both CPU paths.
TEST(QpInput, InfiniteBoundOnANonnegativeRowIsNoBound) {
  ConeSpec cones;
  cones.n_zero = 1;
  cones.n_nonneg = 6;
  cones.n_soc = 1;
  const GeneratedQps g = random_qp_batch(12, 8, cones, 77);
  QpBatch<double> inf = g.batch, big = g.batch;
  const int m = g.batch.m();
  const double kInf = std::numeric_limits<double>::infinity();
  // problems 0-7: row 3 unbounded (+inf) against a large finite bound
  for (int k = 0; k < 8; ++k) {
    inf.b[size_t(k) * m + 3] = kInf;
    big.b[size_t(k) * m + 3] = 1e9;
  }
  inf.b[size_t(8) * m + 3] = std::numeric_limits<double>::quiet_NaN();
  inf.b[size_t(9) * m + 3] = -kInf;
  inf.b[size_t(10) * m + 0] = kInf;                // zero row
  inf.b[size_t(11) * m + cones.soc_begin()] = kInf;  // cone row
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-8;
  st.max_iter = 20000;
  for (const BatchOptions& opt : testing::both_cpu_paths()) {
    SCOPED_TRACE(testing::path_name(opt));
    QpSolutions<double> a, c;
    solve_batch(inf, st, opt, a);
    solve_batch(big, st, opt, c);
    for (int k = 0; k < 8; ++k) {
      SCOPED_TRACE("problem " + std::to_string(k));
      ASSERT_EQ(a.status[k], SolveStatus::kSolved);
      ASSERT_EQ(c.status[k], SolveStatus::kSolved);
      EXPECT_EQ(a.y[size_t(k) * m + 3], 0.0);
      EXPECT_TRUE(std::isfinite(a.value[k]));
      EXPECT_NEAR(a.objective[k], c.objective[k], 1e-6 * (1 + std::abs(c.objective[k])));
      for (int j = 0; j < g.batch.n; ++j)
        EXPECT_NEAR(a.x[size_t(k) * g.batch.n + j], c.x[size_t(k) * g.batch.n + j], 1e-5);
    }
    for (int k = 8; k < 12; ++k) {
      SCOPED_TRACE("problem " + std::to_string(k));
      EXPECT_EQ(a.status[k], SolveStatus::kInvalidInput);
      EXPECT_EQ(a.fault[k], InputFault::kNonFiniteB);
      EXPECT_TRUE(std::isnan(a.objective[k]));
      EXPECT_TRUE(std::isnan(a.value[k]));
    }
  }
}

// b = +inf with a warm start whose y is not 0 on that row: the row's y is
// set to 0 (a residue of it would make bᵀy infinite: value ±inf, and a gap
// test of inf against inf); and a direction along which only unbounded rows
// grow is a dual infeasibility certificate. Both CPU paths.
TEST(QpInput, InfiniteBoundWithWarmStartAndUnboundedDirection) {
  const double kInf = std::numeric_limits<double>::infinity();
  ConeSpec cones;
  cones.n_nonneg = 2;
  // minimize ½x0² + ½x1² − 2x0 s.t. x0 ≤ 1, x0 + x1 ≤ +inf: x = (1, 0), y = (1, 0)
  QpBatch<double> bt = QpBatch<double>::dense(4, 2, cones);
  for (int k = 0; k < 4; ++k) {
    double* P = &bt.P[size_t(k) * 4];
    P[0] = P[3] = 1.0;
    bt.q[size_t(k) * 2 + 0] = -2.0;
    const double A[] = {1, 0, 1, 1};
    bt.set_A_dense(k, A);
    bt.b[size_t(k) * 2 + 0] = 1.0;
    bt.b[size_t(k) * 2 + 1] = kInf;
  }
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-9;
  for (const BatchOptions& base : testing::both_cpu_paths()) {
    SCOPED_TRACE(testing::path_name(base));
    BatchOptions opt = base;
    opt.warm_start = true;
    QpSolutions<double> sol;
    sol.resize(4, 2, 2);
    for (int k = 0; k < 4; ++k) sol.y[size_t(k) * 2 + 0] = 1.0, sol.y[size_t(k) * 2 + 1] = 0.3 + 2.6 * k;
    solve_batch(bt, st, opt, sol);
    for (int k = 0; k < 4; ++k) {
      SCOPED_TRACE("problem " + std::to_string(k));
      ASSERT_EQ(sol.status[k], SolveStatus::kSolved);
      EXPECT_EQ(sol.y[size_t(k) * 2 + 1], 0.0);
      EXPECT_NEAR(sol.x[size_t(k) * 2 + 0], 1.0, 1e-7);  // −2 + x0 + y0 = 0 with x0 ≤ 1: x0 = 1, y0 = 1
      EXPECT_NEAR(sol.x[size_t(k) * 2 + 1], 0.0, 1e-7);
      EXPECT_NEAR(sol.value[k], -1.5, 1e-7);
      EXPECT_NEAR(sol.objective[k], -1.5, 1e-7);
    }
  }
  // minimize −x0 + x1 s.t. x0 ≤ +inf, −x1 ≤ 0: unbounded along x0
  QpBatch<double> un = QpBatch<double>::dense(4, 2, cones);
  for (int k = 0; k < 4; ++k) {
    un.q[size_t(k) * 2 + 0] = -1.0;
    un.q[size_t(k) * 2 + 1] = 1.0;
    const double A[] = {1, 0, 0, -1};
    un.set_A_dense(k, A);
    un.b[size_t(k) * 2 + 0] = kInf;
    un.b[size_t(k) * 2 + 1] = 0.0;
  }
  for (const BatchOptions& opt : testing::both_cpu_paths()) {
    SCOPED_TRACE(testing::path_name(opt));
    QpSolutions<double> sol;
    solve_batch(un, QpSettings<double>{}, opt, sol);
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(sol.status[k], SolveStatus::kDualInfeasible) << "problem " << k;
      EXPECT_TRUE(std::isnan(sol.objective[k]));
    }
  }
}

// solve-batch on a file with an invalid problem: the solutions are written
// (the invalid one with NaN objective and value), the summary counts each
// status, and the exit code is 3.
TEST(QpCli, SolveBatchExitsThreeOnInvalidProblems) {
  ConeSpec cones;
  cones.n_nonneg = 6;
  GeneratedQps g = random_qp_batch(5, 6, cones, 5);
  g.batch.q[size_t(2) * 6 + 1] = std::numeric_limits<double>::quiet_NaN();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("impulse_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string in = (dir / "in.npz").string(), out = (dir / "out.npz").string(),
                    log = (dir / "log.txt").string();
  write_qp_file(in, g.batch);
  const std::string cmd = std::string(IMPULSE_BINARY) + " solve-batch --in \"" + in + "\" --out \"" +
                          out + "\" > \"" + log + "\" 2>&1";
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 3);
  std::ifstream lf(log);
  const std::string text((std::istreambuf_iterator<char>(lf)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("status: solved 4, solved_inaccurate 0, max_iterations 0, primal_infeasible 0, "
                      "dual_infeasible 0, invalid_input 1, numerical_error 0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("problem 2: invalid_input (q has a NaN or Inf entry)"), std::string::npos) << text;
  const QpSolutions<double> sol = read_solution_file(out);
  ASSERT_EQ(sol.size, 5);
  EXPECT_TRUE(std::isnan(sol.objective[2]));
  EXPECT_TRUE(std::isnan(sol.value[2]));
  for (int k : {0, 1, 3, 4}) EXPECT_NEAR(sol.objective[k], g.obj_opt[k], 1e-3 * (1 + std::abs(g.obj_opt[k])));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace impulse
