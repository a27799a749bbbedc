// The CPU lane solver (solvers/lanes.h, solvers/qp_admm_lanes.h): its lane
// primitives lane by lane against the scalar code, and whole groups in which
// every lane meets a different fate (solved, infeasible, unbounded, bad
// data, a failed factorization) against the one-problem-at-a-time path.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "host/batch/generate.h"
#include "host/batch/lane_kernels.h"
#include "host/batch/qp_batch.h"
#include "solvers/qp_admm_lanes.h"
#include "tests/test_util.h"

namespace impulse {
namespace {

template <class T>
class LanePrimitives : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(LanePrimitives, Precisions);

// every lane of the lane projection is the scalar projection, in
// each of its three cases (inside, polar, on the boundary ray) and at u = 0
TYPED_TEST(LanePrimitives, SocProjectionIsTheScalarOnePerLane) {
  using T = TypeParam;
  using L = Lanes<T>;
  std::mt19937 rng(3);
  std::normal_distribution<double> nd;
  int cases[3] = {0, 0, 0};
  for (int trial = 0; trial < 200; ++trial) {
    L t, u1, u2;
    for (int l = 0; l < L::W; ++l) {
      t.set(l, T(nd(rng)));
      u1.set(l, T(trial % 17 == 0 ? 0.0 : nd(rng)));
      u2.set(l, T(trial % 17 == 0 ? 0.0 : nd(rng)));
    }
    L pt = t, p1 = u1, p2 = u2;
    project_soc3(pt, p1, p2);
    for (int l = 0; l < L::W; ++l) {
      T st = t[l], s1 = u1[l], s2 = u2[l];
      const T size = std::abs(st) + std::abs(s1) + std::abs(s2);
      const T nu = std::sqrt(s1 * s1 + s2 * s2);
      cases[nu <= st ? 0 : nu <= -st ? 1 : 2]++;
      project_soc3(st, s1, s2);
      // the same formulas; the compiler may fuse a multiply-add differently
      // in the scalar and the vector code, so equal to a few units in the
      // last place of the input (t + ‖u‖ cancels on the boundary case)
      const T ulp = std::numeric_limits<T>::epsilon() * T(4) * size;
      EXPECT_NEAR(st, pt[l], ulp) << "trial " << trial << " lane " << l;
      EXPECT_NEAR(s1, p1[l], ulp);
      EXPECT_NEAR(s2, p2[l], ulp);
      EXPECT_EQ(st == T(0), pt[l] == T(0));  // the polar case is exactly zero in both
      // independently of the formula: the Moreau decomposition v = p + d with p in
      // the cone K, d in the polar cone −K (K is self-dual) and p ⟂ d
      const T vt = t[l], v1 = u1[l], v2 = u2[l];
      const T dt = vt - pt[l], d1 = v1 - p1[l], d2 = v2 - p2[l];
      const T tol = std::numeric_limits<T>::epsilon() * T(16) * (T(1) + size);
      EXPECT_LE(std::hypot(p1[l], p2[l]), pt[l] + tol) << "trial " << trial << " lane " << l;
      EXPECT_LE(std::hypot(d1, d2), -dt + tol) << "trial " << trial << " lane " << l;
      EXPECT_NEAR(pt[l] * dt + p1[l] * d1 + p2[l] * d2, T(0), tol * size) << "trial " << trial << " lane " << l;
    }
  }
  for (int c : cases) EXPECT_GT(c, 50);  // all three cases were exercised
}

// random SPD matrices, one per lane, with lane `bad` made indefinite
template <class T>
std::vector<Lanes<T>> spd_lanes(int n, int bad, uint64_t seed) {
  using L = Lanes<T>;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd;
  std::vector<L> K(size_t(n) * n);
  for (int l = 0; l < L::W; ++l) {
    Eigen::MatrixXd G = Eigen::MatrixXd::NullaryExpr(n, n, [&] { return nd(rng); });
    Eigen::MatrixXd S = G * G.transpose() + 0.5 * Eigen::MatrixXd::Identity(n, n);
    if (l == bad) S(n / 2, n / 2) = -1.0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) K[size_t(i) * n + j].set(l, T(S(i, j)));
  }
  return K;
}

// the lane Cholesky flags exactly the indefinite lane, and in every other
// lane solves K x = r to rounding; its factor matches the scalar one
TYPED_TEST(LanePrimitives, CholeskyFlagsTheBadLaneAndSolvesTheOthers) {
  using T = TypeParam;
  using L = Lanes<T>;
  const double tol = sizeof(T) == 4 ? 2e-4 : 1e-11;
  for (int n : {1, 3, 4, 7, 32}) {
    const int bad = n > 1 ? 2 : -1;
    std::vector<L> K = spd_lanes<T>(n, bad, 10 + n);
    const std::vector<L> K0 = K;
    const LaneMask<T> failed = cholesky_lanes(n, lane_view(K.data()));
    std::vector<L> x(n);
    for (int i = 0; i < n; ++i)
      for (int l = 0; l < L::W; ++l) x[i].set(l, T(1 + i + l));
    cholesky_solve_in_place(n, View<const L, LaneStride>{K.data(), {}}, lane_view(x.data()));
    for (int l = 0; l < L::W; ++l) {
      SCOPED_TRACE("n " + std::to_string(n) + " lane " + std::to_string(l));
      EXPECT_EQ(failed[l], l == bad);
      if (l == bad) continue;
      std::vector<T> S(size_t(n) * n);
      for (size_t e = 0; e < S.size(); ++e) S[e] = K0[e][l];
      ASSERT_TRUE(cholesky_in_place(n, unit_view(S.data())));
      double scale = 0, res = 0;
      for (size_t e = 0; e < S.size(); ++e) {
        EXPECT_NEAR(K[e][l], S[e], tol * (1 + std::abs(S[e])));
        scale = std::max(scale, std::abs(double(K0[e][l])));
      }
      for (int i = 0; i < n; ++i) {
        double acc = 0;
        for (int j = 0; j < n; ++j) acc += double(K0[size_t(i) * n + j][l]) * double(x[j][l]);
        res = std::max(res, std::abs(acc - double(1 + i + l)));
      }
      EXPECT_LT(res, tol * 10 * scale * n);
    }
  }
}

// the dot-form products: M v and the scaled column norms, per lane, against
// plain loops
TYPED_TEST(LanePrimitives, SymmetricProductAndColumnNormsMatchPlainLoops) {
  using T = TypeParam;
  using L = Lanes<T>;
  const double tol = sizeof(T) == 4 ? 1e-5 : 1e-13;
  for (int n : {1, 5, 8, 33}) {
    const std::vector<L> M = spd_lanes<T>(n, -1, 50 + n);
    std::vector<L> v(n), D(n), out(n), norms(n);
    for (int i = 0; i < n; ++i)
      for (int l = 0; l < L::W; ++l) {
        v[i].set(l, T(std::sin(1.0 + i + 3 * l)));
        D[i].set(l, T(0.5 + 0.1 * ((i + l) % 7)));
      }
    const View<const L, LaneStride> Mv{M.data(), {}}, vv{v.data(), {}}, Dv{D.data(), {}};
    dense_symv(n, Mv, vv, lane_view(out.data()));
    dense_col_absmax_scaled(n, Mv, Dv, L(T(0.25)), lane_view(norms.data()));
    for (int l = 0; l < L::W; ++l)
      for (int j = 0; j < n; ++j) {
        double acc = 0, mx = 0, scale = 0;
        for (int i = 0; i < n; ++i) {
          acc += double(M[size_t(j) * n + i][l]) * double(v[i][l]);
          scale += std::abs(double(M[size_t(j) * n + i][l]));
          mx = std::max(mx, std::abs(double(M[size_t(i) * n + j][l])) * double(D[i][l]));
        }
        EXPECT_NEAR(out[j][l], acc, tol * (1 + scale)) << "n " << n << " lane " << l << " row " << j;
        EXPECT_NEAR(norms[j][l], 0.25 * double(D[j][l]) * mx, tol * mx) << "n " << n;
      }
  }
}

TYPED_TEST(LanePrimitives, ApproximateReciprocalSquareRoot) {
  using T = TypeParam;
  using L = Lanes<T>;
  for (double a : {1e-4, 0.37, 1.0, 2.0, 1234.5, 1e4}) {
    const L r = rsqrt_approx(L(T(a)));
    for (int l = 0; l < L::W; ++l)
      EXPECT_NEAR(r[l], 1 / std::sqrt(a), (sizeof(T) == 4 ? 1e-6 : 1e-8) / std::sqrt(a)) << a;
  }
}

// K = P + diag(σ) + Aᵀdiag(ρ)A summed over AᵀA's pattern (qp_lanes_form_K)
// equals the generic scatter (detail::qp_form_K) to rounding, on a sparse A
// (the cube QP's long and short rows) and on a dense A with nnz > n² (the
// generic fallback)
TEST(QpLanes, KOverThePairPatternMatchesTheScatter) {
  using L = Lanes<double>;
  const GeneratedQps sets[] = {cube_loss_batch(L::W, FrictionModel::kOctagon, 71),
                               random_qp_batch(L::W, 3, [] {
                                 ConeSpec c;
                                 c.n_nonneg = 12;
                                 return c;
                               }(), 72)};
  for (const GeneratedQps& g : sets) {
    const QpBatch<double>& bt = g.batch;
    const QpShape sh = bt.shape();
    const int n = bt.n, m = bt.m(), nnz = bt.nnz();
    const QpColumns cols(sh.a);
    std::vector<L> P(size_t(n) * n), q(n), A(nnz), b(m);
    for (int l = 0; l < L::W; ++l) {
      for (int e = 0; e < n * n; ++e) P[e].set(l, bt.P[size_t(l) * n * n + e]);
      for (int e = 0; e < nnz; ++e) A[e].set(l, bt.A[size_t(l) * nnz + e]);
    }
    const QpData<L, LaneStride> d{{P.data(), {}}, {q.data(), {}}, {A.data(), {}}, {b.data(), {}}};
    std::vector<L> base(qp_work_size(n, m), L(0.0)), base2 = base;
    auto w = QpWork<L, LaneStride>::carve(lane_view(base.data()), n, m);
    auto w2 = QpWork<L, LaneStride>::carve(lane_view(base2.data()), n, m);
    for (int i = 0; i < n; ++i)
      for (int l = 0; l < L::W; ++l) w.sig.p[i].set(l, 1e-3 * (1 + i + l)), w2.sig.p[i] = w.sig.p[i];
    for (int r = 0; r < m; ++r)
      for (int l = 0; l < L::W; ++l) w.rho.p[r].set(l, 0.5 + 0.25 * ((r + l) % 5)), w2.rho.p[r] = w.rho.p[r];
    detail::qp_lanes_form_K(sh, cols, d, w);
    detail::qp_form_K(sh, d, w2);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j <= i; ++j)
        for (int l = 0; l < L::W; ++l)
          EXPECT_NEAR(w.L[i * n + j][l], w2.L[i * n + j][l], 1e-12 * (1 + std::abs(w2.L[i * n + j][l])))
              << "n " << n << " entry " << i << "," << j << " lane " << l;
  }
}

// A one-variable, two-row problem per lane (same shape, different fate):
//   kind 0: min ½x² − 5x, x ≤ 1, −x ≤ 1          solved, x = 1
//   kind 1: x ≤ −1, −x ≤ −1                      primal infeasible
//   kind 2: min −x, −x ≤ 0 (second row empty)     dual infeasible
//   kind 3: as 0 with q = NaN                     invalid input
//   kind 4: as 0 with P = −1                      invalid input (not PSD)
//   kind 5: min ½x² + x, x ≤ 1, −x ≤ 1           solved, x = −1
QpBatch<double> fates(const std::vector<int>& kinds) {
  ConeSpec c;
  c.n_nonneg = 2;
  QpBatch<double> bt = QpBatch<double>::dense(static_cast<int>(kinds.size()), 1, c);
  for (size_t k = 0; k < kinds.size(); ++k) {
    double P = 1, q = -5, a[2] = {1, -1}, b[2] = {1, 1};
    switch (kinds[k]) {
      case 1: P = 1, q = 0, b[0] = -1, b[1] = -1; break;
      case 2: P = 0, q = -1, a[0] = -1, a[1] = 0, b[0] = 0, b[1] = 1; break;
      case 3: q = std::numeric_limits<double>::quiet_NaN(); break;
      case 4: P = -1; break;
      case 5: q = 1; break;
      default: break;
    }
    bt.P[k] = P;
    bt.q[k] = q;
    bt.set_A_dense(static_cast<int>(k), a);
    bt.b[2 * k] = b[0];
    bt.b[2 * k + 1] = b[1];
  }
  return bt;
}

SolveStatus fate_status(int kind) {
  switch (kind) {
    case 1: return SolveStatus::kPrimalInfeasible;
    case 2: return SolveStatus::kDualInfeasible;
    case 3:
    case 4: return SolveStatus::kInvalidInput;
    default: return SolveStatus::kSolved;
  }
}

// every lane of a group stops for its own reason; the other lanes are not
// disturbed, and both CPU paths agree on every status
TEST(QpLanes, EveryLaneMeetsItsOwnFate) {
  std::vector<int> kinds;
  for (int k = 0; k < 3 * Lanes<double>::W + 3; ++k) kinds.push_back((k * 7 + k / 5) % 6);
  const QpBatch<double> bt = fates(kinds);
  for (const BatchOptions& opt : testing::both_cpu_paths()) {
    SCOPED_TRACE(testing::path_name(opt));
    BatchOptions o = opt;
    o.time_each = true;
    QpSolutions<double> sol;
    solve_batch(bt, QpSettings<double>{}, o, sol);
    for (size_t k = 0; k < kinds.size(); ++k) {
      SCOPED_TRACE("problem " + std::to_string(k) + " kind " + std::to_string(kinds[k]));
      EXPECT_EQ(sol.status[k], fate_status(kinds[k])) << to_string(sol.status[k]);
      EXPECT_GT(sol.solve_us[k], 0.0);
      if (kinds[k] == 0 || kinds[k] == 5) {
        EXPECT_NEAR(sol.x[k], kinds[k] == 0 ? 1.0 : -1.0, 1e-4);
        EXPECT_NEAR(sol.objective[k], kinds[k] == 0 ? -4.5 : -0.5, 1e-4);
      }
      if (kinds[k] == 3 || kinds[k] == 4) {
        EXPECT_EQ(sol.fault[k], kinds[k] == 3 ? InputFault::kNonFiniteQ : InputFault::kNotPsdP);
        EXPECT_EQ(sol.x[k], 0.0);
      }
    }
  }
}

// with the input check off, an indefinite P makes its lane's iteration
// diverge (or its factorization fail): that lane reports a numerical error,
// on both CPU paths, and the others solve. (Until the iterate itself was
// tested for NaN, a NaN could vanish from the residuals' maximum and such a
// problem was reported solved with x = NaN.)
TEST(QpLanes, ADivergingLaneStopsAloneWithANumericalError) {
  const std::vector<int> kinds = {0, 5, 4, 0, 5, 0, 0, 5, 0, 4, 5};
  QpBatch<double> bt = fates(kinds);
  for (size_t k = 0; k < kinds.size(); ++k)
    if (kinds[k] == 4) bt.P[k] = -100.0;
  QpSettings<double> st;
  st.check_input = false;
  // the plain iteration, which diverges here (accelerated, it can settle
  // on a stationary point of the nonconvex problem instead)
  st.anderson = 0;
  for (const BatchOptions& opt : testing::both_cpu_paths()) {
  SCOPED_TRACE(testing::path_name(opt));
  QpSolutions<double> sol;
  solve_batch(bt, st, opt, sol);
  for (size_t k = 0; k < kinds.size(); ++k) {
    if (kinds[k] == 4) {
      EXPECT_EQ(sol.status[k], SolveStatus::kNumericalError) << "problem " << k;
    } else {
      EXPECT_EQ(sol.status[k], SolveStatus::kSolved) << "problem " << k;
      EXPECT_NEAR(sol.x[k], kinds[k] == 0 ? 1.0 : -1.0, 1e-4) << "problem " << k;
    }
  }
  }
}

// At the iteration budget every lane reports it (or "inaccurate" when within
// 10× of the tolerance), with the budget as its iteration count
TEST(QpLanes, BudgetStopsEveryLaneAtIt) {
  const GeneratedQps g = cube_loss_batch(Lanes<double>::W + 5, FrictionModel::kCone, 8);
  QpSettings<double> st;
  st.max_iter = 4;
  QpSolutions<double> sol;
  solve_batch(g.batch, st, BatchOptions{}, sol);
  for (int k = 0; k < g.batch.size; ++k) {
    EXPECT_TRUE(sol.status[k] == SolveStatus::kMaxIterations ||
                sol.status[k] == SolveStatus::kSolvedInaccurate)
        << "problem " << k << ": " << to_string(sol.status[k]);
    EXPECT_EQ(sol.iterations[k], 4);
    for (int i = 0; i < g.batch.n; ++i) EXPECT_TRUE(std::isfinite(sol.x[size_t(k) * g.batch.n + i]));
  }
}

// Anderson acceleration in lanes is the one-problem solver's (every
// iteration, for the first max_iter/8), so that a lane follows the one-problem
// iteration: a full group of copies of a problem stops within a check's
// spacing of the one-problem solve (slack 2·check_every: the lanes' Cholesky
// and approximate equilibration round differently from the one-problem
// path's explicit K⁻¹, which moves the stop by a check or so on a problem
// whose iteration is stable; this one takes 153-160 iterations one at a time
// whatever 1e-9 perturbation of ρ or σ) and needs no interior point where
// that solve needs none. The problem, random_qp_batch(57, 20, 2 zero and 40
// nonnegative rows, seed 1) #56, took 512 iterations in lanes while their
// acceleration stepped every second iteration (its map two ADMM steps): it
// did not converge within acceleration's budget, stalled there, and went to
// the interior point.
TEST(QpLanes, AcceleratedGroupStopsWhereTheOneProblemSolverStops) {
  ConeSpec cones;
  cones.n_zero = 2;
  cones.n_nonneg = 40;
  const GeneratedQps g = random_qp_batch(57, 20, cones, 1);
  QpBatch<double> one = QpBatch<double>::with_pattern(1, g.batch.n, cones, g.batch.a_row_ptr, g.batch.a_col);
  const int n = g.batch.n, m = g.batch.m(), nnz = g.batch.nnz(), k = 56;
  std::copy(g.batch.P.begin() + size_t(k) * n * n, g.batch.P.begin() + size_t(k + 1) * n * n, one.P.begin());
  std::copy(g.batch.q.begin() + size_t(k) * n, g.batch.q.begin() + size_t(k + 1) * n, one.q.begin());
  std::copy(g.batch.A.begin() + size_t(k) * nnz, g.batch.A.begin() + size_t(k + 1) * nnz, one.A.begin());
  std::copy(g.batch.b.begin() + size_t(k) * m, g.batch.b.begin() + size_t(k + 1) * m, one.b.begin());
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-6;
  st.ipm_switch = 0;  // (acceleration in lanes, not the early switch to the interior point)
  ASSERT_GT(st.anderson, 0);
  QpSolutions<double> alone, grp;
  solve_batch(one, st, testing::cpu_path(false), alone);
  const QpBatch<double> group = testing::copies(one, Lanes<double>::W);
  solve_batch(group, st, testing::cpu_path(true), grp);
  ASSERT_EQ(alone.status[0], SolveStatus::kSolved);
  ASSERT_EQ(alone.ipm_iterations[0], 0);
  ASSERT_LT(alone.iterations[0], st.max_iter / 8);  // accelerated to the end
  for (int l = 0; l < group.size; ++l) {
    SCOPED_TRACE("lane " + std::to_string(l));
    EXPECT_EQ(grp.status[l], SolveStatus::kSolved);
    EXPECT_EQ(grp.ipm_iterations[l], 0);
    EXPECT_LE(grp.iterations[l], alone.iterations[0] + 2 * st.check_every)
        << "alone " << alone.iterations[0];
    EXPECT_NEAR(grp.objective[l], g.obj_opt[k], 1e-5 * (1 + std::abs(g.obj_opt[k])));
  }
}

// the ratios R of "at Rx its tolerance" in a fault text
std::vector<double> tolerance_ratios(const std::string& t) {
  std::vector<double> out;
  const std::string tail = "x its tolerance";
  for (size_t p = t.find(tail); p != std::string::npos; p = t.find(tail, p + 1)) {
    const size_t at = t.rfind(" at ", p);
    if (at == std::string::npos) continue;
    out.push_back(std::strtod(t.c_str() + at + 4, nullptr));
  }
  return out;
}

// Every problem that is not solved says why in its fault text, on both CPU
// paths: its input fault; the infeasibility certificate and its iteration;
// at the budget, the residuals above their tolerances, and what was tried
// (a stall, the interior point, the restart). A budget of 4 iterations on
// the cube QPs; the fates above; and random QPs at eps 1e-14 (beyond
// double's reach from these iterates): with acceleration off and a cone of
// the second order (no interior point), the budget runs out; without cones
// of the second order, acceleration's budget runs out, then the interior
// point's, then the restart's.
TEST(QpLanes, EveryUnsolvedProblemSaysWhy) {
  for (const BatchOptions& opt : testing::both_cpu_paths()) {
    SCOPED_TRACE(testing::path_name(opt));
    {  // the budget
      const GeneratedQps g = cube_loss_batch(Lanes<double>::W + 5, FrictionModel::kCone, 8);
      QpSettings<double> st;
      st.max_iter = 4;
      QpSolutions<double> sol;
      solve_batch(g.batch, st, opt, sol);
      for (int k = 0; k < g.batch.size; ++k) {
        SCOPED_TRACE("cube problem " + std::to_string(k));
        ASSERT_NE(sol.status[k], SolveStatus::kSolved);
        const std::string& t = sol.fault_text[k];
        EXPECT_EQ(t.rfind("the budget of 4 iterations ran out", 0), 0u) << t;
        // every residual named is above its tolerance ("at 31.6x its tolerance")
        const std::vector<double> ratios = tolerance_ratios(t);
        EXPECT_FALSE(ratios.empty()) << t;
        for (double r : ratios) EXPECT_GT(r, 1.0) << t;
      }
      const std::vector<std::string> lines = sol.problems_not_solved();
      ASSERT_EQ(lines.size(), size_t(g.batch.size));
      EXPECT_NE(lines[0].find(" (the budget of 4 iterations ran out"), std::string::npos) << lines[0];
    }
    {  // certificates and input faults
      std::vector<int> kinds;
      for (int k = 0; k < 2 * Lanes<double>::W + 3; ++k) kinds.push_back((k * 7 + k / 5) % 6);
      QpSolutions<double> sol;
      solve_batch(fates(kinds), QpSettings<double>{}, opt, sol);
      for (size_t k = 0; k < kinds.size(); ++k) {
        SCOPED_TRACE("fate problem " + std::to_string(k) + " kind " + std::to_string(kinds[k]));
        const std::string& t = sol.fault_text[k];
        ASSERT_EQ(sol.status[k], fate_status(kinds[k]));
        switch (kinds[k]) {
          case 1: EXPECT_EQ(t.rfind("primal infeasible: a certificate", 0), 0u) << t; break;
          case 2: EXPECT_EQ(t.rfind("dual infeasible", 0), 0u) << t; break;
          case 3: EXPECT_EQ(t, to_string(InputFault::kNonFiniteQ)); break;
          case 4: EXPECT_EQ(t, to_string(InputFault::kNotPsdP)); break;
          default: EXPECT_EQ(t, ""); break;
        }
      }
    }
    {  // no stall, the budget ran out
      ConeSpec cones;
      cones.n_nonneg = 4;
      cones.n_soc = 1;
      const GeneratedQps g = random_qp_batch(8, 6, cones, 3);
      QpSettings<double> st;
      st.eps_abs = st.eps_rel = 1e-14;
      st.max_iter = 800;
      QpSolutions<double> sol;
      solve_batch(g.batch, st, opt, sol);
      int unsolved = 0;
      for (int k = 0; k < g.batch.size; ++k) {
        if (sol.status[k] == SolveStatus::kSolved) continue;
        ++unsolved;
        const std::string& t = sol.fault_text[k];
        EXPECT_EQ(t.rfind("the budget of 800 iterations ran out", 0), 0u) << t;
        EXPECT_TRUE(t.find("; no stall") != std::string::npos ||
                    t.find("the interior point does not take second-order cones") != std::string::npos)
            << t;
      }
      EXPECT_GT(unsolved, 0);
    }
    {  // acceleration's budget, the interior point and the restart
      ConeSpec cones;
      cones.n_nonneg = 8;
      const GeneratedQps g = random_qp_batch(8, 6, cones, 3);
      QpSettings<double> st;
      st.eps_abs = st.eps_rel = 1e-14;
      st.max_iter = 800;
      {  // with the early switch, it is what handed the problem over
        QpSettings<double> early = st;
        early.ipm_switch = 250;
        early.anderson = 0;  // (acceleration's budget, max_iter/8 = 100, could come first)
        QpSolutions<double> sw;
        solve_batch(g.batch, early, opt, sw);
        ASSERT_EQ(sw.status[5], SolveStatus::kMaxIterations);
        ASSERT_GT(sw.ipm_iterations[5], 0);
        const std::string& t = sw.fault_text[5];
        EXPECT_NE(t.find("ADMM's residuals extrapolated to"), std::string::npos) << t;
        EXPECT_NE(t.find("(ipm_switch 250), the interior point did not solve it in " +
                         std::to_string(sw.ipm_iterations[5]) + " iterations"),
                  std::string::npos)
            << t;
      }
      st.ipm_switch = 0;
      QpSolutions<double> sol;
      solve_batch(g.batch, st, opt, sol);
      ASSERT_EQ(sol.status[5], SolveStatus::kMaxIterations);
      ASSERT_GT(sol.ipm_iterations[5], 0);
      const std::string& t = sol.fault_text[5];
      EXPECT_EQ(t.rfind("the budget of 800 iterations ran out with the primal residual", 0), 0u) << t;
      EXPECT_NE(t.find("Anderson acceleration's budget (max_iter/8, 100 iterations) ran out unsolved, "
                       "the interior point did not solve it in " +
                       std::to_string(sol.ipm_iterations[5]) +
                       " iterations, and ADMM restarted with the fallback settings at iteration " +
                       std::to_string(100 + sol.ipm_iterations[5])),
                std::string::npos)
          << t;
    }
  }
}

// The two CPU paths reach the same optimum on the cube QPs and the Anitescu
// step, in double and in float, and every lane's answer meets the tolerance
// by the KKT residuals recomputed from the data
TEST(QpLanes, AgreesWithOneAtATimeOnTheCubeShapes) {
  const GeneratedQps sets[] = {cube_loss_batch(37, FrictionModel::kCone, 61),
                               cube_loss_batch(37, FrictionModel::kOctagon, 62),
                               anitescu_step_batch(37, 63)};
  BatchOptions scalar;
  scalar.lanes = false;
  for (const GeneratedQps& g : sets) {
    const QpBatch<double>& bt = g.batch;
    QpSettings<double> st;
    st.eps_abs = st.eps_rel = 1e-7;
    QpSolutions<double> a, b;
    solve_batch(bt, st, BatchOptions{}, a);
    solve_batch(bt, st, scalar, b);
    QpSettings<float> sf;
    sf.eps_abs = sf.eps_rel = 1e-5f;
    QpSolutions<float> fa, fb;
    const QpBatch<float> btf = bt.cast<float>();
    solve_batch(btf, sf, BatchOptions{}, fa);
    solve_batch(btf, sf, scalar, fb);
    for (int k = 0; k < bt.size; ++k) {
      SCOPED_TRACE("n " + std::to_string(bt.n) + " problem " + std::to_string(k));
      ASSERT_EQ(a.status[k], SolveStatus::kSolved);
      ASSERT_EQ(b.status[k], SolveStatus::kSolved);
      ASSERT_TRUE(is_solved(fa.status[k])) << to_string(fa.status[k]);
      ASSERT_TRUE(is_solved(fb.status[k])) << to_string(fb.status[k]);
      const double scale = 1.0 + std::abs(b.value[k]);
      EXPECT_NEAR(a.value[k], b.value[k], 1e-5 * scale);
      EXPECT_NEAR(fa.value[k], b.value[k], 1e-3 * scale);
      EXPECT_NEAR(fa.value[k], fb.value[k], 1e-3 * scale);
      const auto r = testing::kkt_residuals(bt, k, &a.x[size_t(k) * bt.n], &a.y[size_t(k) * bt.m()]);
      EXPECT_LT(r.stationarity, 1e-5);
      EXPECT_LT(r.primal, 1e-5);
      EXPECT_LT(r.dual, 1e-5);
    }
  }
}


// Every instruction set of the lane kernels this CPU and build run
// (host/batch/lane_kernels.h): each solves the cube QPs to the tolerance the
// one-at-a-time path reaches, in double and float, and gives the same answers
// bit for bit again, on one thread or two; a set it lacks, or a name it does not
// know, is an Error naming what there is.
TEST(QpLanes, EveryInstructionSetSolvesAndRepeatsItself) {
  const LaneIsa before = lane_isa();
  const std::vector<LaneIsa> sets = supported_lane_isas();
  ASSERT_FALSE(sets.empty());
  EXPECT_EQ(sets.front(), LaneIsa::kSse2) << "every x86-64 runs the baseline set";
  EXPECT_THROW(parse_lane_isa("avx3"), Error);
  for (LaneIsa isa : {LaneIsa::kSse2, LaneIsa::kAvx2, LaneIsa::kAvx512}) {
    if (!lane_isa_supported(isa)) {
      EXPECT_THROW(set_lane_isa(isa), Error) << to_string(isa);
    }
  }
  const GeneratedQps sets_qp[] = {cube_loss_batch(45, FrictionModel::kCone, 71),
                                  cube_loss_batch(45, FrictionModel::kOctagon, 72)};
  BatchOptions scalar;
  scalar.lanes = false;
  for (LaneIsa isa : sets) {
    set_lane_isa(isa);
    ASSERT_EQ(lane_isa(), isa);
    const int bytes = lane_bytes();
    EXPECT_EQ(bytes, isa == LaneIsa::kAvx512 ? 64 : isa == LaneIsa::kAvx2 ? 32 : 16);
    for (const GeneratedQps& g : sets_qp) {
      const QpBatch<double>& bt = g.batch;
      SCOPED_TRACE(std::string(to_string(isa)) + " n " + std::to_string(bt.n));
      QpSettings<double> st;
      st.eps_abs = st.eps_rel = 1e-7;
      QpSolutions<double> a, again, two, ref;
      BatchOptions one_thread, two_threads;
      one_thread.threads = 1;
      two_threads.threads = 2;
      solve_batch(bt, st, one_thread, a);
      solve_batch(bt, st, one_thread, again);
      solve_batch(bt, st, two_threads, two);
      solve_batch(bt, st, scalar, ref);
      QpSettings<float> sf;
      sf.eps_abs = sf.eps_rel = 1e-5f;
      QpSolutions<float> fa, fagain;
      const QpBatch<float> btf = bt.cast<float>();
      solve_batch(btf, sf, one_thread, fa);
      solve_batch(btf, sf, two_threads, fagain);
      for (const QpSolutions<double>* o : {&again, &two}) {
        EXPECT_EQ(0, std::memcmp(a.x.data(), o->x.data(), a.x.size() * sizeof(double)));
        EXPECT_EQ(0, std::memcmp(a.y.data(), o->y.data(), a.y.size() * sizeof(double)));
        EXPECT_EQ(a.iterations, o->iterations);
      }
      EXPECT_EQ(0, std::memcmp(fa.x.data(), fagain.x.data(), fa.x.size() * sizeof(float)));
      for (int k = 0; k < bt.size; ++k) {
        SCOPED_TRACE("problem " + std::to_string(k));
        ASSERT_EQ(a.status[k], SolveStatus::kSolved);
        ASSERT_TRUE(is_solved(fa.status[k])) << to_string(fa.status[k]);
        const double scale = 1.0 + std::abs(ref.value[k]);
        EXPECT_NEAR(a.value[k], ref.value[k], 1e-5 * scale);
        EXPECT_NEAR(fa.value[k], ref.value[k], 1e-3 * scale);
        const auto r = testing::kkt_residuals(bt, k, &a.x[size_t(k) * bt.n], &a.y[size_t(k) * bt.m()]);
        EXPECT_LT(r.stationarity, 1e-5);
        EXPECT_LT(r.primal, 1e-5);
        EXPECT_LT(r.dual, 1e-5);
      }
    }
  }
  set_lane_isa(before);
}

}  // namespace
}  // namespace impulse
