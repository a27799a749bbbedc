#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
// C3 (host/control/c3.h) and the LCS (host/control/lcs.h): the Riccati QP step against a dense KKT
// solve, the exact projection against brute force, determinism, no heap allocation in
// step(), bad input, and cart-pole stabilization.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <atomic>
#include <cstdlib>
#include <new>
#include <random>

#include "host/control/c3.h"
#include "host/control/lcs.h"
#include "host/control/mpc_tasks.h"
#include "host/control/residual_learner.h"
#include "solvers/error.h"

// ---- allocation counting (program-wide replacement; counts only between markers) ----
namespace {
thread_local bool g_count_allocs = false;
std::atomic<long> g_allocs{0};
}  // namespace

void* operator new(std::size_t n) {
  if (g_count_allocs) g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace impulse {
namespace {

struct AllocCounter {
  AllocCounter() {
    g_allocs = 0;
    g_count_allocs = true;
  }
  long stop() {
    g_count_allocs = false;
    return g_allocs.load();
  }
};

Eigen::MatrixXd randn(std::mt19937_64& rng, int r, int c) {
  std::normal_distribution<double> nd;
  Eigen::MatrixXd m(r, c);
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < c; ++j) m(i, j) = nd(rng);
  return m;
}

TEST(Lcs, StepSolvesTheLcp) {
  std::mt19937_64 rng(3);
  const int nx = 4, nu = 2, nl = 3;
  Eigen::MatrixXd F = randn(rng, nl, nl);
  F = F * F.transpose() + 0.5 * Eigen::MatrixXd::Identity(nl, nl);
  Lcs l = Lcs::time_invariant(2, randn(rng, nx, nx), randn(rng, nx, nu), randn(rng, nx, nl),
                              randn(rng, nx, 1), randn(rng, nl, nx), F, randn(rng, nl, nu),
                              randn(rng, nl, 1));
  l.r = randn(rng, nl, 1);
  LcsStepWork work;
  work.reserve(nl);
  for (int t = 0; t < 20; ++t) {
    const Eigen::VectorXd x = randn(rng, nx, 1), u = randn(rng, nu, 1);
    Eigen::VectorXd xn(nx), lam(nl);
    const LcsStepInfo info = lcs_step(l, 1, x, u, xn, lam, work);
    ASSERT_EQ(info.status, SolveStatus::kSolved);
    const Eigen::VectorXd s = l.E[1] * x + l.F[1] * lam + l.H[1] * u + l.c[1] + l.r;
    EXPECT_GE(lam.minCoeff(), -1e-12);
    EXPECT_GE(s.minCoeff(), -1e-9);
    EXPECT_LT(std::abs(lam.dot(s)), 1e-9);
    const Eigen::VectorXd want = l.A[1] * x + l.B[1] * u + l.D[1] * lam + l.d[1];
    EXPECT_LT((xn - want).cwiseAbs().maxCoeff(), 1e-12);
  }
  Lcs bad = l;
  bad.D[1].resize(nx, nl + 1);
  EXPECT_THROW(bad.validate(), Error);
}

// the structured Riccati solve equals a dense KKT solve of the same equality QP
TEST(C3, HorizonQpMatchesDenseKkt) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 12; ++trial) {
    const int nx = 2 + trial % 4, nl = 1 + trial % 3, nu = 1 + trial % 2, N = 1 + trial % 6;
    const int nv = nl + nu, nz = nx + nv;
    Lcs l;
    l.nx = nx, l.nl = nl, l.nu = nu;
    for (int k = 0; k < N; ++k) {
      l.A.push_back(randn(rng, nx, nx) * 0.5);
      l.B.push_back(randn(rng, nx, nu));
      l.D.push_back(randn(rng, nx, nl));
      l.d.push_back(randn(rng, nx, 1));
      l.E.push_back(randn(rng, nl, nx));
      l.F.push_back(Eigen::MatrixXd::Identity(nl, nl));
      l.H.push_back(randn(rng, nl, nu));
      l.c.push_back(randn(rng, nl, 1));
    }
    l.r = Eigen::VectorXd::Zero(nl);
    l.validate();
    std::vector<Eigen::MatrixXd> W(N);
    for (int k = 0; k < N; ++k) {
      const Eigen::MatrixXd M = randn(rng, nz, nz);
      W[k] = M * M.transpose() / nz;
      W[k].bottomRightCorner(nv, nv) += 0.1 * Eigen::MatrixXd::Identity(nv, nv);
    }
    const Eigen::MatrixXd MN = randn(rng, nx, nx);
    const Eigen::MatrixXd WN = MN * MN.transpose();
    const Eigen::MatrixXd g = randn(rng, nz, N);
    const Eigen::VectorXd gN = randn(rng, nx, 1), x0 = randn(rng, nx, 1);

    HorizonQp qp;
    qp.resize(N, nx, nl, nu);
    ASSERT_TRUE(qp.factor(l, W, WN));
    Eigen::MatrixXd z(nz, N);
    Eigen::VectorXd xN(nx);
    qp.solve(l, x0, g, gN, z, xN);

    // dense KKT: variables [z_0 .. z_{N-1}, x_N]
    const int nvar = N * nz + nx, ncon = (N + 1) * nx;
    Eigen::MatrixXd H = Eigen::MatrixXd::Zero(nvar, nvar), C = Eigen::MatrixXd::Zero(ncon, nvar);
    Eigen::VectorXd q(nvar), e(ncon);
    for (int k = 0; k < N; ++k) {
      H.block(k * nz, k * nz, nz, nz) = W[k];
      q.segment(k * nz, nz) = g.col(k);
    }
    H.bottomRightCorner(nx, nx) = WN;
    q.tail(nx) = gN;
    C.block(0, 0, nx, nx).setIdentity();
    e.head(nx) = x0;
    for (int k = 0; k < N; ++k) {
      const int row = (k + 1) * nx, nxt = (k + 1) * nz;
      C.block(row, nxt, nx, nx).setIdentity();  // x_{k+1} (x_N at the end)
      C.block(row, k * nz, nx, nx) = -l.A[k];
      C.block(row, k * nz + nx, nx, nl) = -l.D[k];
      C.block(row, k * nz + nx + nl, nx, nu) = -l.B[k];
      e.segment(row, nx) = l.d[k];
    }
    Eigen::MatrixXd K = Eigen::MatrixXd::Zero(nvar + ncon, nvar + ncon);
    K.topLeftCorner(nvar, nvar) = H;
    K.topRightCorner(nvar, ncon) = C.transpose();
    K.bottomLeftCorner(ncon, nvar) = C;
    Eigen::VectorXd rhs(nvar + ncon);
    rhs << -q, e;
    const Eigen::VectorXd sol = K.fullPivLu().solve(rhs);
    double err = 0, scale = 1;
    for (int k = 0; k < N; ++k) {
      err = std::max(err, (z.col(k) - sol.segment(k * nz, nz)).cwiseAbs().maxCoeff());
      scale = std::max(scale, sol.segment(k * nz, nz).cwiseAbs().maxCoeff());
    }
    err = std::max(err, (xN - sol.segment(N * nz, nx)).cwiseAbs().maxCoeff());
    EXPECT_LT(err, 1e-8 * scale) << "trial " << trial;
  }
}

// brute force: every (mode, active inequality subset) as an equality-constrained dense
// KKT; the best candidate inside the complementarity set
double brute_projection(const Eigen::MatrixXd& E, const Eigen::MatrixXd& F,
                        const Eigen::MatrixXd& H, const Eigen::VectorXd& G,
                        const Eigen::VectorXd& p, const Eigen::VectorXd& o, Eigen::VectorXd* best) {
  const int nx = static_cast<int>(E.cols()), m = static_cast<int>(F.rows()),
            nu = static_cast<int>(H.cols());
  const int nz = nx + m + nu;
  Eigen::MatrixXd S(m, nz);
  S << E, F, H;
  double best_cost = INFINITY;
  for (int mode = 0; mode < (1 << m); ++mode)
    for (int act = 0; act < (1 << m); ++act) {
      std::vector<Eigen::RowVectorXd> rows;
      std::vector<double> rhs;
      for (int i = 0; i < m; ++i) {
        const bool contact = (mode >> i) & 1, tight = (act >> i) & 1;
        Eigen::RowVectorXd lam_row = Eigen::RowVectorXd::Zero(nz);
        lam_row(nx + i) = 1;
        // mode: contact ⇒ s_i = 0 (λ_i ≥ 0 tight if `tight`), else λ_i = 0 (s_i tight)
        if (contact || tight) rows.push_back(S.row(i)), rhs.push_back(-o(i));
        if (!contact || tight) rows.push_back(lam_row), rhs.push_back(0.0);
      }
      const int k = static_cast<int>(rows.size());
      Eigen::MatrixXd C(k, nz);
      Eigen::VectorXd e(k);
      for (int a = 0; a < k; ++a) C.row(a) = rows[a], e(a) = rhs[a];
      Eigen::MatrixXd K = Eigen::MatrixXd::Zero(nz + k, nz + k);
      K.topLeftCorner(nz, nz) = G.asDiagonal();
      K.topRightCorner(nz, k) = C.transpose();
      K.bottomLeftCorner(k, nz) = C;
      Eigen::VectorXd r(nz + k);
      r << G.cwiseProduct(p), e;
      Eigen::FullPivLU<Eigen::MatrixXd> lu(K);
      if (lu.rank() < nz + k) continue;
      const Eigen::VectorXd d = lu.solve(r).head(nz);
      const Eigen::VectorXd lam = d.segment(nx, m), s = S * d + o;
      if (lam.minCoeff() < -1e-9 || s.minCoeff() < -1e-9 ||
          lam.cwiseProduct(s).cwiseAbs().maxCoeff() > 1e-9)
        continue;
      const double cost = (d - p).cwiseProduct(G).dot(d - p);
      if (cost < best_cost) best_cost = cost, *best = d;
    }
  return best_cost;
}

TEST(C3, ProjectionMatchesBruteForce) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> ud(0.2, 3.0);
  for (int trial = 0; trial < 60; ++trial) {
    const int nx = 1 + trial % 3, m = 1 + trial % 3, nu = trial % 2;
    const int nz = nx + m + nu;
    Eigen::MatrixXd F = randn(rng, m, m);
    if (trial % 2) F = F * F.transpose() + 0.1 * Eigen::MatrixXd::Identity(m, m);
    const Eigen::MatrixXd E = randn(rng, m, nx), H = randn(rng, m, nu);
    Eigen::VectorXd G(nz);
    for (int i = 0; i < nz; ++i) G(i) = ud(rng);
    const Eigen::VectorXd p = randn(rng, nz, 1), o = randn(rng, m, 1);
    ComplementarityProjector proj(nx, m, nu);
    proj.set(E, F, H, G);
    Eigen::VectorXd d(nz), ref(nz);
    ASSERT_TRUE(proj.project(p, o, d));
    const double cost = (d - p).cwiseProduct(G).dot(d - p);
    const double want = brute_projection(E, F, H, G, p, o, &ref);
    EXPECT_NEAR(cost, want, 1e-8 * (1 + want)) << "trial " << trial;
    EXPECT_NEAR(proj.last_cost(), cost, 1e-8 * (1 + cost));
    // in the set
    Eigen::MatrixXd S(m, nz);
    S << E, F, H;
    const Eigen::VectorXd lam = d.segment(nx, m), s = S * d + o;
    EXPECT_GE(lam.minCoeff(), 0.0);
    EXPECT_GE(s.minCoeff(), -1e-8);
    EXPECT_LT(lam.cwiseProduct(s).cwiseAbs().maxCoeff(), 1e-8);
  }
}

struct CartPoleFixture {
  CartPoleParams params;
  Lcs model = cartpole_lcs(params, 10);
  C3Costs costs = cartpole_costs(params);
};

TEST(C3, DeterministicCommands) {
  CartPoleFixture f;
  C3Controller a(f.model, f.costs, cartpole_settings()), b(f.model, f.costs, cartpole_settings());
  std::mt19937_64 rng(9);
  Eigen::VectorXd ua(1), ub(1);
  for (int t = 0; t < 40; ++t) {
    const Eigen::VectorXd x = 0.2 * randn(rng, 4, 1);
    const C3Status sa = a.step(x, 0.01 * t, ua), sb = b.step(x, 0.01 * t, ub);
    ASSERT_EQ(sa, sb);
    ASSERT_EQ(ua(0), ub(0)) << "step " << t;  // bitwise
  }
}

TEST(C3, StepDoesNotAllocate) {
  CartPoleFixture f;
  C3Controller c(f.model, f.costs, cartpole_settings());
  ResidualChannel ch(2);
  SampleRing ring(16, 4, 1);
  c.attach_residual(&ch);
  c.attach_samples(&ring);
  Lcs other = cartpole_lcs(f.params, 10, Eigen::Vector2d(0.01, -0.02));
  Eigen::VectorXd x = Eigen::Vector4d(0.1, 0.1, 0, 0), u(1), xn(4), lam(2);
  LcsStepWork work;
  work.reserve(2);
  c.step(x, 0, u);  // warm-up
  AllocCounter counter;
  for (int t = 0; t < 100; ++t) {
    if (t == 50) c.set_model(other);  // refactors lazily, still no allocation
    if (t % 10 == 0) ch.publish(Eigen::Vector2d(0.001 * t, -0.001 * t));
    c.step(x, 0.01 * t, u);
    lcs_step(f.model, 0, x, u, xn, lam, work);
    c.observe(x, u, xn);
    x = xn;
  }
  Eigen::VectorXd bad = x;
  bad(1) = std::nan("");
  c.step(bad, 1.0, u);
  const long allocs = counter.stop();
  EXPECT_EQ(allocs, 0);
  EXPECT_EQ(c.residual_version(), 10);
}

// The learner's update (10 sample QPs, envelope gradient, Adam step, publishing
// r) and add_sample allocate nothing once the learner is built and its buffer full.
TEST(ResidualLearnerRt, UpdateDoesNotAllocate) {
  CartPoleParams p;
  const Lcs model = cartpole_lcs(p, 10);
  const Lcs truth = cartpole_lcs(p, 1, Eigen::Vector2d(-0.15, 0.15));
  ResidualLearner learner(model);
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> th(-0.8, 0.8), v(-1, 1);
  LcsStepWork work;
  work.reserve(2);
  Eigen::VectorXd xn(4), lam(2), u(1), x(4);
  auto sample = [&]() {
    x << 0.1 * v(rng), th(rng), v(rng), v(rng);
    u(0) = v(rng);
    lcs_step(truth, 0, x, u, xn, lam, work);
    learner.add_sample(x, u, xn);
  };
  for (int i = 0; i < 12; ++i) sample();
  learner.update();  // warm-up
  AllocCounter counter;
  for (int t = 0; t < 20; ++t) {
    sample();
    learner.update();
  }
  const long allocs = counter.stop();
  EXPECT_EQ(allocs, 0);
  EXPECT_EQ(learner.stats().samples, 10);
}

TEST(C3, RejectsBadInputWithLastSafeCommand) {
  CartPoleFixture f;
  C3Controller c(f.model, f.costs, cartpole_settings());
  Eigen::VectorXd u(1);
  const Eigen::VectorXd x = Eigen::Vector4d(0.05, 0.1, 0, 0);
  EXPECT_NE(c.step(x, 0, u), C3Status::kBadInput);
  const double safe = u(0);
  Eigen::VectorXd bad = x;
  bad(2) = std::nan("");
  u(0) = 123;
  EXPECT_EQ(c.step(bad, 0.01, u), C3Status::kBadInput);
  EXPECT_EQ(u(0), safe);
  bad = x;
  bad(0) = 100;  // beyond the 5 m bound
  EXPECT_EQ(c.step(bad, 0.02, u), C3Status::kBadInput);
  EXPECT_EQ(u(0), safe);
  Eigen::VectorXd wrong(3);
  EXPECT_EQ(c.step(wrong, 0.03, u), C3Status::kBadInput);
  EXPECT_EQ(u(0), safe);
}

// with an exact model, C3 brings the cart-pole back to upright from perturbed states,
// including ones where the pole must use the walls
TEST(C3, StabilizesCartPoleWithExactModel) {
  CartPoleFixture f;
  // the last two need the walls (max wall force > 0)
  const Eigen::Vector4d starts[] = {{0.1, 0.0, 0.0, 0.0}, {0.1, -0.2, 0.5, 1.0},
                                    {0.0, 0.3, 0.0, 0.0}, {0.0, 0.5, 0.0, 0.0}};
  const bool needs_walls[] = {false, false, true, true};
  for (int i = 0; i < 4; ++i) {
    const Eigen::Vector4d& x0 = starts[i];
    C3Controller c(f.model, f.costs, cartpole_settings());
    LcsStepWork work;
    Eigen::VectorXd x = x0, u(1), xn(4), lam(2);
    double max_force = 0;
    for (int t = 0; t < 800; ++t) {
      const C3Status s = c.step(x, 0.01 * t, u);
      ASSERT_NE(s, C3Status::kBadInput) << "t " << t;
      lcs_step(f.model, 0, x, u, xn, lam, work);
      max_force = std::max(max_force, lam.maxCoeff());
      x = xn;
    }
    EXPECT_LT(x.cwiseAbs().maxCoeff(), 0.03) << "from " << x0.transpose() << " ended at "
                                             << x.transpose() << " (max wall force "
                                             << max_force << ")";
    // the controller that plans through contact used the walls where they are needed
    // (and only there: near upright the pole never reaches them)
    if (needs_walls[i])
      EXPECT_GT(max_force, 1e-3) << "from " << x0.transpose() << ": the walls were never used";
    else
      EXPECT_EQ(max_force, 0.0) << "from " << x0.transpose();
  }
}

}  // namespace
}  // namespace impulse
