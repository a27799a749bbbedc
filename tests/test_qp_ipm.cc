// The interior-point finish (host/batch/qp_ipm.h) against independent
// references:
// - brute-force enumeration of active sets on tiny strictly convex QPs;
// - random QPs built around a known optimal pair (host/batch/generate.h),
//   singular P included, with a KKT check of the answer;
// - the 13 small Maros-Meszaros QPs (verified reference objectives), at eps
//   1e-8, with a KKT check recomputed from the data;
// - degenerate data it must survive: a duplicated equality row, an LP,
//   "no bound" rows (b = +inf), an infeasible problem (never `solved`);
// - through solve_batch: a stalled ADMM solve ends in the interior point
//   within the budget, on both CPU paths.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "host/batch/generate.h"
#include "host/batch/qp_batch.h"
#include "host/batch/qp_file.h"
#include "host/batch/qp_ipm.h"
#include "solvers/lanes.h"
#include "tests/test_util.h"

namespace impulse {
namespace {

// The KKT conditions of problem k at (x, y), recomputed from the data, each
// as a maximum: primal infeasibility, dual residual, dual cone violation,
// complementarity |y_r (Ax − b)_r|.
struct Kkt {
  double prim = 0, dual = 0, cone = 0, comp = 0;
};
Kkt kkt_of(const QpBatch<double>& bt, int k, const std::vector<double>& x, const std::vector<double>& y) {
  const int n = bt.n, m = bt.m();
  const std::vector<double> A = bt.A_dense(k);
  Kkt r;
  std::vector<double> g(n);
  for (int i = 0; i < n; ++i) {
    g[i] = bt.q[size_t(k) * n + i];
    for (int j = 0; j < n; ++j) g[i] += bt.P[size_t(k) * n * n + i * n + j] * x[j];
  }
  for (int row = 0; row < m; ++row) {
    double ax = 0;
    for (int j = 0; j < n; ++j) ax += A[size_t(row) * n + j] * x[j];
    for (int j = 0; j < n; ++j) g[j] += A[size_t(row) * n + j] * y[row];
    const double b = bt.b[size_t(k) * m + row];
    if (row < bt.cones.n_zero) {
      r.prim = std::max(r.prim, std::abs(ax - b));
    } else {
      r.prim = std::max(r.prim, std::max(ax - b, 0.0));
      r.cone = std::max(r.cone, -y[row]);
      if (std::isfinite(b)) r.comp = std::max(r.comp, std::abs(y[row] * (ax - b)));
      else r.cone = std::max(r.cone, std::abs(y[row]));  // no bound: y must be 0
    }
  }
  for (int i = 0; i < n; ++i) r.dual = std::max(r.dual, std::abs(g[i]));
  return r;
}

// every KKT condition within its bound (the dual cone exactly)
void expect_kkt(const Kkt& c, double prim, double dual, double comp) {
  EXPECT_LE(c.prim, prim);
  EXPECT_LE(c.dual, dual);
  EXPECT_LE(c.cone, 0.0);
  EXPECT_LE(c.comp, comp);
}

QpInfo<double> ipm(const QpBatch<double>& bt, int k, std::vector<double>& x, std::vector<double>& y,
                   double eps, int max_iter = 100) {
  const int n = bt.n, m = bt.m();
  x.assign(n, 0.0);
  y.assign(m, 0.0);
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = eps;
  return qp_ipm_solve(bt.shape(), bt.P.data() + size_t(k) * n * n, bt.q.data() + size_t(k) * n,
                      bt.A.data() + size_t(k) * bt.nnz(), bt.b.data() + size_t(k) * m, x.data(),
                      y.data(), st, max_iter);
}

// The optimum of a strictly convex QP with zero and nonnegative rows by
// enumeration: for every subset of active inequality rows, the KKT system of
// the equality-constrained problem; the best point that is feasible with
// y ≥ 0 on the active rows (strict convexity: it is the unique optimum).
double brute_force(const QpBatch<double>& bt, int k) {
  const int n = bt.n, m = bt.m(), ne = bt.cones.n_zero, ni = m - ne;
  const std::vector<double> Ad = bt.A_dense(k);
  Eigen::MatrixXd P = Eigen::Map<const Eigen::MatrixXd>(bt.P.data() + size_t(k) * n * n, n, n);
  Eigen::Map<const Eigen::VectorXd> q(bt.q.data() + size_t(k) * n, n);
  Eigen::MatrixXd A(m, n);
  for (int r = 0; r < m; ++r)
    for (int j = 0; j < n; ++j) A(r, j) = Ad[size_t(r) * n + j];
  Eigen::Map<const Eigen::VectorXd> b(bt.b.data() + size_t(k) * m, m);
  double best = std::numeric_limits<double>::infinity();
  for (int mask = 0; mask < (1 << ni); ++mask) {
    std::vector<int> rows;
    for (int r = 0; r < ne; ++r) rows.push_back(r);
    bool finite = true;
    for (int i = 0; i < ni; ++i)
      if (mask >> i & 1) {
        rows.push_back(ne + i);
        finite = finite && std::isfinite(b[ne + i]);
      }
    if (!finite) continue;
    const int a = int(rows.size());
    if (a > n) continue;
    Eigen::MatrixXd K = Eigen::MatrixXd::Zero(n + a, n + a);
    Eigen::VectorXd rhs(n + a);
    K.topLeftCorner(n, n) = P;
    rhs.head(n) = -q;
    for (int i = 0; i < a; ++i) {
      K.block(0, n + i, n, 1) = A.row(rows[i]).transpose();
      K.block(n + i, 0, 1, n) = A.row(rows[i]);
      rhs[n + i] = b[rows[i]];
    }
    Eigen::FullPivLU<Eigen::MatrixXd> lu(K);
    if (lu.rank() < n + a) continue;
    const Eigen::VectorXd sol = lu.solve(rhs);
    const Eigen::VectorXd x = sol.head(n);
    bool ok = true;
    for (int i = ne; i < a; ++i) ok = ok && sol[n + i] >= -1e-9;  // y of an active row
    for (int r = ne; r < m; ++r) ok = ok && A.row(r).dot(x) <= b[r] + 1e-9;
    if (ok) best = std::min(best, 0.5 * x.dot(P * x) + q.dot(x));
  }
  return best;
}

// tiny strictly convex QPs: n = 3, one equality row, six inequality rows
// (one of them with b = +inf), random data with a nonempty interior
TEST(QpIpm, TinyQpsMatchBruteForceEnumeration) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> N(0, 1);
  const int n = 3, ne = 1, ni = 6, m = ne + ni, count = 40;
  ConeSpec cones;
  cones.n_zero = ne;
  cones.n_nonneg = ni;
  QpBatch<double> bt = QpBatch<double>::dense(count, n, cones);
  for (int k = 0; k < count; ++k) {
    Eigen::MatrixXd G = Eigen::MatrixXd::NullaryExpr(n, n, [&] { return N(rng); });
    Eigen::MatrixXd P = G.transpose() * G + 0.1 * Eigen::MatrixXd::Identity(n, n);
    Eigen::VectorXd x0 = Eigen::VectorXd::NullaryExpr(n, [&] { return N(rng); });
    std::vector<double> A(size_t(m) * n);
    for (double& v : A) v = N(rng);
    bt.set_A_dense(k, A.data());
    for (int i = 0; i < n; ++i) {
      bt.q[size_t(k) * n + i] = 3 * N(rng);
      for (int j = 0; j < n; ++j) bt.P[size_t(k) * n * n + i * n + j] = P(i, j);
    }
    for (int r = 0; r < m; ++r) {  // x0 strictly feasible; row ne + 2 unbounded
      double ax = 0;
      for (int j = 0; j < n; ++j) ax += A[size_t(r) * n + j] * x0[j];
      bt.b[size_t(k) * m + r] = r < ne ? ax : ax + std::abs(N(rng)) + 0.05;
    }
    bt.b[size_t(k) * m + ne + 2] = std::numeric_limits<double>::infinity();
  }
  int active_somewhere = 0;
  for (int k = 0; k < count; ++k) {
    SCOPED_TRACE("problem " + std::to_string(k));
    std::vector<double> x, y;
    const QpInfo<double> info = ipm(bt, k, x, y, 1e-10);
    ASSERT_EQ(info.status, SolveStatus::kSolved);
    const double ref = brute_force(bt, k);
    ASSERT_TRUE(std::isfinite(ref));
    EXPECT_NEAR(info.objective, ref, 1e-7 * std::max(1.0, std::abs(ref)));
    expect_kkt(kkt_of(bt, k, x, y), 1e-8, 1e-8, 1e-8);
    EXPECT_EQ(y[ne + 2], 0.0);  // the unbounded row
    for (int r = ne; r < m; ++r) active_somewhere += y[r] > 1e-6;
  }
  EXPECT_GT(active_somewhere, count / 2);  // the bounds matter, not only the equality
}

// random QPs around a known optimum, P of random rank (singular included)
TEST(QpIpm, RandomQpsReachTheirKnownOptimum) {
  ConeSpec cones;
  cones.n_zero = 3;
  cones.n_nonneg = 20;
  const GeneratedQps g = random_qp_batch(12, 10, cones, 11);
  for (int k = 0; k < g.batch.size; ++k) {
    SCOPED_TRACE("problem " + std::to_string(k));
    std::vector<double> x, y;
    const QpInfo<double> info = ipm(g.batch, k, x, y, 1e-9);
    ASSERT_EQ(info.status, SolveStatus::kSolved);
    EXPECT_NEAR(info.objective, g.obj_opt[k], 1e-7 * std::max(1.0, std::abs(g.obj_opt[k])));
    expect_kkt(kkt_of(g.batch, k, x, y), 1e-7, 1e-7, 1e-6);
  }
}

// An LP (P = 0) with its equality row written twice: max x₁ + x₂ over
// x₁ + x₂ + x₃ = 1, 0 ≤ x ≤ 0.7 (optimum −1). The duplicated row makes the
// Schur complement singular; the regularization and refinement carry it.
TEST(QpIpm, LpWithADuplicatedEqualityRow) {
  const int n = 3;
  ConeSpec cones;
  cones.n_zero = 2;
  cones.n_nonneg = 6;
  QpBatch<double> bt = QpBatch<double>::dense(1, n, cones);
  std::vector<double> A(8 * n, 0.0);
  for (int j = 0; j < n; ++j) A[0 * n + j] = A[1 * n + j] = 1;
  for (int j = 0; j < n; ++j) {
    A[size_t(2 + j) * n + j] = 1;    // x_j ≤ 0.7
    A[size_t(5 + j) * n + j] = -1;   // −x_j ≤ 0
  }
  bt.set_A_dense(0, A.data());
  bt.q = {-1, -1, 0};
  bt.b = {1, 1, 0.7, 0.7, 0.7, 0, 0, 0};
  std::vector<double> x, y;
  const QpInfo<double> info = ipm(bt, 0, x, y, 1e-9);
  ASSERT_EQ(info.status, SolveStatus::kSolved);
  EXPECT_NEAR(info.objective, -1.0, 1e-8);
  EXPECT_NEAR(x[2], 0.0, 1e-7);
  expect_kkt(kkt_of(bt, 0, x, y), 1e-8, 1e-8, 1e-8);
}

// Degenerate shapes: equality rows only (one Newton system), every
// inequality row without a bound (b = +inf: the unconstrained minimum), and
// more equality rows than variables (consistent, so dependent)
TEST(QpIpm, EqualityOnlyUnboundedRowsAndMoreRowsThanVariables) {
  const int n = 2;
  std::vector<double> x, y;
  {  // min ½‖x‖² − x₁ s.t. x₁ + x₂ = 1: x = (1, 0)
    ConeSpec c;
    c.n_zero = 1;
    QpBatch<double> bt = QpBatch<double>::dense(1, n, c);
    const double A[] = {1, 1};
    bt.set_A_dense(0, A);
    bt.P = {1, 0, 0, 1};
    bt.q = {-1, 0};
    bt.b = {1};
    const QpInfo<double> info = ipm(bt, 0, x, y, 1e-10);
    ASSERT_EQ(info.status, SolveStatus::kSolved);
    EXPECT_NEAR(x[0], 1.0, 1e-9);
    EXPECT_NEAR(x[1], 0.0, 1e-9);
    EXPECT_NEAR(y[0], 0.0, 1e-9);
  }
  {  // min ½‖x‖² − x₁ − 2x₂ with two rows of b = +inf: x = (1, 2), y = 0
    ConeSpec c;
    c.n_nonneg = 2;
    QpBatch<double> bt = QpBatch<double>::dense(1, n, c);
    const double A[] = {1, 0, 0, 1};
    bt.set_A_dense(0, A);
    bt.P = {1, 0, 0, 1};
    bt.q = {-1, -2};
    bt.b = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
    const QpInfo<double> info = ipm(bt, 0, x, y, 1e-10);
    ASSERT_EQ(info.status, SolveStatus::kSolved);
    EXPECT_NEAR(x[0], 1.0, 1e-9);
    EXPECT_NEAR(x[1], 2.0, 1e-9);
    EXPECT_EQ(y[0], 0.0);
    EXPECT_EQ(y[1], 0.0);
  }
  {  // three equality rows on two variables (x₁ = 1, x₂ = 2, x₁ + x₂ = 3), one bound
    ConeSpec c;
    c.n_zero = 3;
    c.n_nonneg = 1;
    QpBatch<double> bt = QpBatch<double>::dense(1, n, c);
    const double A[] = {1, 0, 0, 1, 1, 1, -1, 0};
    bt.set_A_dense(0, A);
    bt.P = {1, 0, 0, 1};
    bt.q = {5, -7};
    bt.b = {1, 2, 3, 0};
    const QpInfo<double> info = ipm(bt, 0, x, y, 1e-9);
    ASSERT_EQ(info.status, SolveStatus::kSolved);
    EXPECT_NEAR(x[0], 1.0, 1e-8);
    EXPECT_NEAR(x[1], 2.0, 1e-8);
    EXPECT_NEAR(info.objective, 0.5 * 5 + 5 - 14, 1e-7);
    EXPECT_LE(kkt_of(bt, 0, x, y).dual, 1e-8);
  }
}

// The gap is always tested here (check_gap off included): ADMM's y is
// complementary by construction, the interior point's only in the limit, so
// residuals alone would stop it early with a wrong objective. And NaN or −inf
// in b (the input check off upstream) is an error, not a dropped row.
TEST(QpIpm, GapAlwaysTestedAndBadBoundsRefused) {
  ConeSpec cones;
  cones.n_zero = 3;
  cones.n_nonneg = 20;
  const GeneratedQps g = random_qp_batch(20, 10, cones, 3);
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-6;
  st.check_gap = false;
  const int n = g.batch.n, m = g.batch.m(), nnz = g.batch.nnz();
  for (int k = 0; k < g.batch.size; ++k) {
    std::vector<double> x(n), y(m);
    const QpInfo<double> info =
        qp_ipm_solve(g.batch.shape(), g.batch.P.data() + size_t(k) * n * n, g.batch.q.data() + size_t(k) * n,
                     g.batch.A.data() + size_t(k) * nnz, g.batch.b.data() + size_t(k) * m, x.data(),
                     y.data(), st, 100);
    ASSERT_EQ(info.status, SolveStatus::kSolved) << "problem " << k;
    EXPECT_LE(std::abs(info.objective - g.obj_opt[k]), 1e-5 * std::max(1.0, std::abs(g.obj_opt[k])))
        << "problem " << k;
    EXPECT_LE(kkt_of(g.batch, k, x, y).comp, 1e-5) << "problem " << k;
  }
  QpBatch<double> bt = g.batch;
  std::vector<double> x, y;
  for (double bad : {std::nan(""), -std::numeric_limits<double>::infinity()}) {
    bt.b[size_t(cones.n_zero) + 4] = bad;
    EXPECT_EQ(ipm(bt, 0, x, y, 1e-6).status, SolveStatus::kNumericalError);
  }
}

// x ≤ −1 and −x ≤ −1 (x ≥ 1): no feasible point, never reported solved; a
// nonconvex P is refused; a budget too small is max_iterations, not a guess
TEST(QpIpm, InfeasibleOrOutOfBudgetIsNotSolved) {
  ConeSpec cones;
  cones.n_nonneg = 2;
  QpBatch<double> bt = QpBatch<double>::dense(1, 1, cones);
  const double A[] = {1, -1};
  bt.set_A_dense(0, A);
  bt.P = {1};
  bt.q = {0};
  bt.b = {-1, -1};
  std::vector<double> x, y;
  const QpInfo<double> info = ipm(bt, 0, x, y, 1e-6);
  EXPECT_NE(info.status, SolveStatus::kSolved);
  // a concave objective (P = −100, the input check off upstream): its KKT
  // point on [−1, 1] is a maximum, never reported as solved
  bt.b = {1, 1};
  bt.P = {-100};
  bt.q = {0.5};
  EXPECT_EQ(ipm(bt, 0, x, y, 1e-6).status, SolveStatus::kNumericalError);
  ConeSpec c2;
  c2.n_zero = 3;
  c2.n_nonneg = 20;
  const GeneratedQps g = random_qp_batch(1, 10, c2, 5);
  const QpInfo<double> short_run = ipm(g.batch, 0, x, y, 1e-9, 2);
  EXPECT_EQ(short_run.status, SolveStatus::kMaxIterations);
  EXPECT_EQ(short_run.iterations, 2);
  EXPECT_TRUE(qp_ipm_eligible(g.batch.shape()));
  ConeSpec soc;
  soc.n_soc = 1;
  EXPECT_FALSE(qp_ipm_eligible(QpBatch<double>::dense(1, 3, soc).shape()));
}

std::string suite_dir() {
  return testing::shared_data("maros_meszaros_small");
}

// the 13 Maros-Meszaros problems straight into the interior point at eps
// 1e-8: the reference objective to 1e-6 and the KKT conditions
// recomputed from the data (relative to the data's size)
TEST(QpIpm, MarosMeszarosToTheirReferences) {
  std::ifstream f(suite_dir() + "/refs.json");
  if (!f)
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("the Maros-Meszaros QPs", suite_dir(), "mm"));
  const nlohmann::json refs = nlohmann::json::parse(f);
  ASSERT_EQ(refs.size(), 13u);
  for (const auto& [name, r] : refs.items()) {
    SCOPED_TRACE(name);
    const QpBatch<double> bt = read_qp_file(suite_dir() + "/" + name + ".npz").batch;
    std::vector<double> x, y;
    const QpInfo<double> info = ipm(bt, 0, x, y, 1e-8);
    ASSERT_EQ(info.status, SolveStatus::kSolved);
    const double ref = r.at("objective").get<double>() - r.value("constant_r", 0.0);
    EXPECT_LE(std::abs(info.objective - ref) / std::max(1.0, std::abs(ref)), 1e-6);
    double scale = 1;
    for (double v : bt.q) scale = std::max(scale, std::abs(v));
    for (double v : bt.b)
      if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
    expect_kkt(kkt_of(bt, 0, x, y), 1e-6 * scale, 1e-6 * scale, 1e-6 * scale * scale);
    std::printf("[ info ] %-9s %2d iterations, error %.1e\n", name.c_str(), info.iterations,
                std::abs(info.objective - ref) / std::max(1.0, std::abs(ref)));
  }
}

// Through solve_batch, where ADMM stalls (QSHARE2B: from 1,000 iterations on)
// and the interior point finishes: solved within the default budget, on both
// CPU paths, with the same answer; with the fallback off it is not solved.
TEST(QpIpm, StalledBatchSolveEndsInTheInteriorPoint) {
  const std::string path = suite_dir() + "/QSHARE2B.npz";
  if (!std::ifstream(path))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("the Maros-Meszaros QPs", suite_dir(), "mm"));
  const QpBatch<double> bt = read_qp_file(path).batch;
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-6;
  st.ipm_switch = 0;  // the stall rule's hand-over (the early switch: QpBatch.SlowProblemsSwitchToTheInteriorPoint)
  QpSolutions<double> one, lanes;
  solve_batch(bt, st, testing::cpu_path(false), one);
  // a full lane group of copies (a group at most half full is solved one at a time)
  solve_batch(testing::copies(bt, Lanes<double>::W), st, testing::cpu_path(true), lanes);
  for (const QpSolutions<double>* s : {&one, &lanes}) {
    for (int k = 0; k < s->size; ++k) {
      EXPECT_EQ(s->status[k], SolveStatus::kSolved);
      EXPECT_GT(s->ipm_iterations[k], 0);
      EXPECT_LE(s->iterations[k], st.max_iter);
      // the stall: Anderson acceleration's budget (max_iter / 8) spent, or the
      // stall rule's start (max_iter / 4) without it
      EXPECT_GE(s->iterations[k] - s->ipm_iterations[k], st.max_iter / 8);
      // the interior point starts cold from the same data: the same answer
      EXPECT_EQ(s->objective[k], one.objective[0]);
    }
  }
  // without acceleration the stall rule itself hands it over, from max_iter / 4 on
  QpSettings<double> plain = st;
  plain.anderson = 0;
  QpSolutions<double> p;
  solve_batch(bt, plain, testing::cpu_path(false), p);
  EXPECT_EQ(p.status[0], SolveStatus::kSolved);
  EXPECT_GT(p.ipm_iterations[0], 0);
  EXPECT_GE(p.iterations[0] - p.ipm_iterations[0], st.max_iter / 4);
  st.fallback = false;
  QpSolutions<double> off;
  solve_batch(bt, st, testing::cpu_path(false), off);
  EXPECT_NE(off.status[0], SolveStatus::kSolved);
  EXPECT_EQ(off.ipm_iterations[0], 0);
}

}  // namespace
}  // namespace impulse
