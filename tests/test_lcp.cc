// LCP solvers: projected Gauss-Seidel (plain and contact-block) and Lemke.
//
// Every check recomputes the LCP / cone conditions from the data; the references
// (brute-force enumeration, an accelerated projected-gradient QP solve, Lemke for
// PGS) are computed independently with Eigen.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "solvers/lcp_pgs.h"
#include "solvers/lemke.h"

namespace impulse {
namespace {

using MatR = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vec = Eigen::VectorXd;

// ---- problem generators ------------------------------------------------------------------

MatR randn(int r, int c, std::mt19937_64& rng) {
  std::normal_distribution<double> nd(0.0, 1.0);
  MatR A(r, c);
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < c; ++j) A(i, j) = nd(rng);
  return A;
}

Vec randn_vec(int n, std::mt19937_64& rng) {
  std::normal_distribution<double> nd(0.0, 1.0);
  Vec v(n);
  for (int i = 0; i < n; ++i) v(i) = nd(rng);
  return v;
}

// Symmetric positive definite, eigenvalues roughly in [0.2, 4.2].
MatR random_spd(int n, std::mt19937_64& rng) {
  const MatR A = randn(n, n, rng);
  MatR M = A * A.transpose() / double(n);
  M.diagonal().array() += 0.2;
  return M;
}

// Contact problem M = J W J' + eps I (J: 3k x 6, W SPD 6 x 6), mu in [0.1, 1].
struct ContactProblem {
  int k;
  MatR M;
  Vec q, mu;
};

ContactProblem random_contact(int k, double eps, std::mt19937_64& rng) {
  ContactProblem p;
  p.k = k;
  const MatR J = randn(3 * k, 6, rng);
  const MatR B = randn(6, 6, rng);
  MatR W = B * B.transpose() / 6.0;
  W.diagonal().array() += 0.1;
  p.M = J * W * J.transpose();
  p.M.diagonal().array() += eps;
  p.q = randn_vec(3 * k, rng);
  std::uniform_real_distribution<double> ud(0.1, 1.0);
  p.mu.resize(k);
  for (int b = 0; b < k; ++b) p.mu(b) = ud(rng);
  return p;
}

// ---- checks recomputed from data -----------------------------------------------------------

struct LcpViolation {
  double neg_z = 0, neg_w = 0, comp = 0;
  double max() const { return std::max(neg_z, std::max(neg_w, comp)); }
};

LcpViolation lcp_violation(const MatR& M, const Vec& q, const Vec& z) {
  const Vec w = M * z + q;
  LcpViolation v;
  for (int i = 0; i < z.size(); ++i) {
    v.neg_z = std::max(v.neg_z, -z(i));
    v.neg_w = std::max(v.neg_w, -w(i));
    v.comp = std::max(v.comp, std::fabs(z(i) * w(i)));
  }
  return v;
}

// Cone conditions per block: lambda in K_mu, w in K_mu*, lambda_b'w_b = 0.
struct CcpViolation {
  double primal = 0, dual = 0, comp = 0;
  double max() const { return std::max(primal, std::max(dual, comp)); }
};

CcpViolation ccp_violation(const ContactProblem& p, const Vec& l) {
  const Vec w = p.M * l + p.q;
  CcpViolation v;
  for (int b = 0; b < p.k; ++b) {
    const double mu = p.mu(b);
    const double ln = l(3 * b), lt = std::hypot(l(3 * b + 1), l(3 * b + 2));
    const double wn = w(3 * b), wt = std::hypot(w(3 * b + 1), w(3 * b + 2));
    v.primal = std::max(v.primal, std::max(lt - mu * ln, -ln));
    v.dual = std::max(v.dual, mu * wt - wn);
    v.comp = std::max(v.comp, std::fabs(l.segment<3>(3 * b).dot(w.segment<3>(3 * b))));
  }
  return v;
}

// ---- thin wrappers over the solvers ------------------------------------------------------------

template <class T>
LcpInfo<T> pgs(const MatR& Md, const Vec& qd, Vec& z_out, const LcpSettings<T>& s,
               const Vec* warm = nullptr) {
  const int n = int(qd.size());
  std::vector<T> M(Md.data(), Md.data() + n * n), q(qd.data(), qd.data() + n), z(n, T(0)),
      w(n);
  if (warm)
    for (int i = 0; i < n; ++i) z[i] = T((*warm)(i));
  const LcpInfo<T> info =
      lcp_pgs_solve(n, unit_view<const T>(M.data()), unit_view<const T>(q.data()),
                    unit_view(z.data()), unit_view(w.data()), s);
  z_out.resize(n);
  for (int i = 0; i < n; ++i) z_out(i) = double(z[i]);
  return info;
}

template <class T>
LcpInfo<T> ccp(const ContactProblem& p, Vec& l_out, const LcpSettings<T>& s,
               const Vec* warm = nullptr) {
  const int n = 3 * p.k;
  std::vector<T> M(p.M.data(), p.M.data() + n * n), q(p.q.data(), p.q.data() + n),
      mu(p.mu.data(), p.mu.data() + p.k), l(n, T(0)), w(n);
  if (warm)
    for (int i = 0; i < n; ++i) l[i] = T((*warm)(i));
  const LcpInfo<T> info = ccp_block_pgs_solve(
      p.k, unit_view<const T>(M.data()), unit_view<const T>(q.data()),
      unit_view<const T>(mu.data()), unit_view(l.data()), unit_view(w.data()), s);
  l_out.resize(n);
  for (int i = 0; i < n; ++i) l_out(i) = double(l[i]);
  return info;
}

LemkeInfo lemke(const MatR& M, const Vec& q, Vec& z, const LemkeSettings& s = {}) {
  const int n = int(q.size());
  z.resize(n);
  Vec w(n);
  const LemkeInfo info = lemke_solve(n, M.data(), q.data(), z.data(), w.data(), s);
  if (info.status != SolveStatus::kInvalidInput) {
    // w must be M z + q for the z returned.
    EXPECT_LE((w - (M * z + q)).lpNorm<Eigen::Infinity>(), 1e-12 * (1 + w.lpNorm<Eigen::Infinity>()));
  }
  return info;
}

// All solutions of a tiny LCP by enumerating complementary index sets.
std::vector<Vec> enumerate_lcp(const MatR& M, const Vec& q, double tol) {
  const int n = int(q.size());
  std::vector<Vec> sols;
  for (unsigned mask = 0; mask < (1u << n); ++mask) {
    std::vector<int> S;
    for (int i = 0; i < n; ++i)
      if (mask & (1u << i)) S.push_back(i);
    Vec z = Vec::Zero(n);
    if (!S.empty()) {
      const int m = int(S.size());
      Eigen::MatrixXd A(m, m);
      Vec b(m);
      for (int a = 0; a < m; ++a) {
        b(a) = -q(S[a]);
        for (int c = 0; c < m; ++c) A(a, c) = M(S[a], S[c]);
      }
      Eigen::FullPivLU<Eigen::MatrixXd> lu(A);
      if (!lu.isInvertible()) continue;
      const Vec zs = lu.solve(b);
      for (int a = 0; a < m; ++a) z(S[a]) = zs(a);
    }
    const Vec w = M * z + q;
    if (z.minCoeff() >= -tol && w.minCoeff() >= -tol) sols.push_back(z);
  }
  return sols;
}

double dist_to_set(const Vec& z, const std::vector<Vec>& set) {
  double best = std::numeric_limits<double>::infinity();
  for (const Vec& s : set) best = std::min(best, (z - s).lpNorm<Eigen::Infinity>());
  return best;
}

// Independent CCP reference for symmetric PD M: min 1/2 l'Ml + q'l over the product of
// friction cones by accelerated projected gradient (FISTA, step 1/lambda_max, with
// gradient restarts).
Vec ccp_reference_apgd(const ContactProblem& p, int iters) {
  const int n = 3 * p.k;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(Eigen::MatrixXd(p.M), Eigen::EigenvaluesOnly);
  const double L = es.eigenvalues().maxCoeff();
  auto proj = [&](Vec& x) {
    for (int b = 0; b < p.k; ++b) project_friction_cone(p.mu(b), x(3 * b), x(3 * b + 1), x(3 * b + 2));
  };
  Vec x = Vec::Zero(n), y = x, x_prev = x;
  double t = 1.0;
  for (int it = 0; it < iters; ++it) {
    Vec xn = y - (p.M * y + p.q) / L;
    proj(xn);
    const double tn = 0.5 * (1.0 + std::sqrt(1.0 + 4.0 * t * t));
    if ((y - xn).dot(xn - x) > 0.0) {  // restart
      y = xn;
      t = 1.0;
    } else {
      y = xn + ((t - 1.0) / tn) * (xn - x);
      t = tn;
    }
    x = xn;
  }
  return x;
}

template <class T>
LcpSettings<T> tight_settings(T tol, int max_iter) {
  LcpSettings<T> s;
  s.tol = tol;
  s.max_iter = max_iter;
  return s;
}

// ---- project_friction_cone (solvers/cones.h; the cone solver depends on it) ----------------------

TEST(ProjectFrictionCone, SpecialCases) {
  double n = 2, t1 = 0.3, t2 = -0.4;  // inside for mu = 1: unchanged bitwise
  project_friction_cone(1.0, n, t1, t2);
  EXPECT_EQ(n, 2.0);
  EXPECT_EQ(t1, 0.3);
  EXPECT_EQ(t2, -0.4);

  n = -1, t1 = 0.1, t2 = 0.1;  // polar cone -> 0
  project_friction_cone(0.5, n, t1, t2);
  EXPECT_EQ(n, 0.0);
  EXPECT_EQ(t1, 0.0);
  EXPECT_EQ(t2, 0.0);

  n = -1, t1 = 0, t2 = 0;  // mu = 0, t = 0, n < 0 -> 0 (not "inside" because 0 <= 0 * n)
  project_friction_cone(0.0, n, t1, t2);
  EXPECT_EQ(n, 0.0);

  n = 3, t1 = 5, t2 = -1;  // mu = 0: drop t, keep n
  project_friction_cone(0.0, n, t1, t2);
  EXPECT_EQ(n, 3.0);
  EXPECT_EQ(t1, 0.0);
  EXPECT_EQ(t2, 0.0);

  n = 0, t1 = 1, t2 = 0;  // mu = 1: onto the boundary (0.5, 0.5, 0)
  project_friction_cone(1.0, n, t1, t2);
  EXPECT_DOUBLE_EQ(n, 0.5);
  EXPECT_DOUBLE_EQ(t1, 0.5);
  EXPECT_EQ(t2, 0.0);

  float nf = -2.f, t1f = 0.f, t2f = 0.f;  // float, s == 0, n < 0
  project_friction_cone(0.7f, nf, t1f, t2f);
  EXPECT_EQ(nf, 0.f);
}

// Moreau: P = Proj_K(x) iff P in K, P - x in K*, P'(x - P) = 0.
TEST(ProjectFrictionCone, MoreauDecompositionRandom) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> nd(0.0, 2.0);
  const double mus[] = {0.0, 0.05, 0.3, 1.0, 4.0, 100.0};
  for (double mu : mus) {
    for (int trial = 0; trial < 2000; ++trial) {
      const double x0 = nd(rng), x1 = nd(rng), x2 = nd(rng);
      double p0 = x0, p1 = x1, p2 = x2;
      project_friction_cone(mu, p0, p1, p2);
      const double scale = 1.0 + std::fabs(x0) + std::fabs(x1) + std::fabs(x2);
      const double tol = 1e-12 * scale * (1.0 + mu);
      EXPECT_LE(std::hypot(p1, p2), mu * p0 + tol);
      EXPECT_GE(p0, -tol);
      const double y0 = p0 - x0, y1 = p1 - x1, y2 = p2 - x2;  // in K* = {mu ||y_t|| <= y_n}
      EXPECT_LE(mu * std::hypot(y1, y2), y0 + tol);
      EXPECT_NEAR(p0 * y0 + p1 * y1 + p2 * y2, 0.0, tol * scale);
    }
  }
}

// ---- PGS vs Lemke ------------------------------------------------------------------------------

TEST(LcpPgs, MatchesLemkeOnRandomSpdDouble) {
  int total_sweeps = 0;
  for (int n = 1; n <= 30; ++n) {
    for (int seed = 0; seed < 4; ++seed) {
      std::mt19937_64 rng(1000 * n + seed);
      const MatR M = random_spd(n, rng);
      const Vec q = randn_vec(n, rng);
      LcpSettings<double> s = tight_settings(1e-11, 100000);
      s.omega = (seed % 2) ? 1.3 : 1.0;
      Vec zp, zl;
      const LcpInfo<double> ip = pgs(M, q, zp, s);
      const LemkeInfo il = lemke(M, q, zl);
      ASSERT_EQ(ip.status, SolveStatus::kSolved) << "n=" << n << " seed=" << seed;
      ASSERT_EQ(il.status, SolveStatus::kSolved) << "n=" << n << " seed=" << seed;
      EXPECT_LE(ip.residual, 1e-11);
      EXPECT_LE(il.residual, 1e-12);
      EXPECT_LE(lcp_violation(M, q, zp).max(), 1e-10);
      EXPECT_LE(lcp_violation(M, q, zl).max(), 1e-12);
      EXPECT_LE((zp - zl).lpNorm<Eigen::Infinity>(), 1e-8) << "n=" << n << " seed=" << seed;
      EXPECT_LE(il.pivots, 2 * n + 2);
      total_sweeps += ip.iterations;
    }
  }
  RecordProperty("total_pgs_sweeps", total_sweeps);
}

TEST(LcpPgs, MatchesLemkeOnRandomSpdFloat) {
  for (int n = 1; n <= 30; ++n) {
    for (int seed = 0; seed < 3; ++seed) {
      std::mt19937_64 rng(77 * n + seed);
      const MatR M = random_spd(n, rng);
      const Vec q = randn_vec(n, rng);
      LcpSettings<float> s = tight_settings(2e-5f, 20000);
      Vec zp, zl;
      const LcpInfo<float> ip = pgs(M, q, zp, s);
      const LemkeInfo il = lemke(M, q, zl);
      ASSERT_EQ(ip.status, SolveStatus::kSolved) << "n=" << n << " seed=" << seed;
      ASSERT_EQ(il.status, SolveStatus::kSolved);
      EXPECT_LE(lcp_violation(M, q, zp).max(), 1e-4) << "n=" << n << " seed=" << seed;
      EXPECT_LE((zp - zl).lpNorm<Eigen::Infinity>(), 1e-3 * (1.0 + zl.lpNorm<Eigen::Infinity>()))
          << "n=" << n << " seed=" << seed;
    }
  }
}

// ---- Lemke -------------------------------------------------------------------------------------

TEST(Lemke, TrivialWhenQNonnegative) {
  MatR M(2, 2);
  M << 1, -3, 2, 0;
  Vec q(2);
  q << 0.0, 2.0;
  Vec z;
  const LemkeInfo info = lemke(M, q, z);
  EXPECT_EQ(info.status, SolveStatus::kSolved);
  EXPECT_EQ(info.pivots, 0);
  EXPECT_EQ(z(0), 0.0);
  EXPECT_EQ(z(1), 0.0);
  EXPECT_EQ(info.residual, 0.0);
}

TEST(Lemke, BruteForceEnumerationTinyProblems) {
  int p_matrix = 0, general_solved = 0, general_ray = 0;
  for (int n = 1; n <= 6; ++n) {
    for (int seed = 0; seed < 40; ++seed) {
      std::mt19937_64 rng(50000 + 100 * n + seed);
      const Vec q = randn_vec(n, rng);
      // P-matrices: SPD, and non-symmetric strictly row diagonally dominant with
      // positive diagonal. Unique solution.
      for (int kind = 0; kind < 2; ++kind) {
        MatR M;
        if (kind == 0) {
          M = random_spd(n, rng);
        } else {
          M = randn(n, n, rng);
          for (int i = 0; i < n; ++i) M(i, i) = M.row(i).cwiseAbs().sum() + 0.1;
        }
        const std::vector<Vec> sols = enumerate_lcp(M, q, 1e-12);
        ASSERT_EQ(sols.size(), 1u) << "n=" << n << " seed=" << seed << " kind=" << kind;
        Vec z;
        const LemkeInfo info = lemke(M, q, z);
        ASSERT_EQ(info.status, SolveStatus::kSolved);
        EXPECT_LE((z - sols[0]).lpNorm<Eigen::Infinity>(), 1e-10);
        ++p_matrix;
      }
      // Strictly copositive (nonnegative, positive diagonal): Lemke must find a
      // solution, one of the enumerated ones.
      {
        std::uniform_real_distribution<double> ud(0.0, 1.0);
        MatR M(n, n);
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j) M(i, j) = (i == j) ? 0.5 + ud(rng) : ud(rng);
        const std::vector<Vec> sols = enumerate_lcp(M, q, 1e-9);
        Vec z;
        const LemkeInfo info = lemke(M, q, z);
        ASSERT_EQ(info.status, SolveStatus::kSolved);
        ASSERT_FALSE(sols.empty());
        EXPECT_LE(dist_to_set(z, sols), 1e-8);
      }
      // General matrices: when Lemke claims a solution it must be a real one; a ray
      // is allowed (Lemke is not complete for arbitrary M).
      {
        const MatR M = randn(n, n, rng);
        const std::vector<Vec> sols = enumerate_lcp(M, q, 1e-9);
        Vec z;
        const LemkeInfo info = lemke(M, q, z);
        ASSERT_TRUE(info.status == SolveStatus::kSolved ||
                    info.status == SolveStatus::kRayTermination)
            << to_string(info.status);
        EXPECT_LE(info.pivots, 50 * (n + 1));
        if (info.status == SolveStatus::kSolved) {
          ++general_solved;
          ASSERT_FALSE(sols.empty());
          EXPECT_LE(dist_to_set(z, sols), 1e-7);
        } else {
          ++general_ray;
        }
      }
    }
  }
  EXPECT_GT(general_solved, 0);
  RecordProperty("general_ray", general_ray);
}

// Heavily degenerate integer problems (ties in every ratio test): must not cycle.
TEST(Lemke, DegenerateIntegerProblemsTerminate) {
  for (int n = 2; n <= 12; ++n) {
    for (int seed = 0; seed < 20; ++seed) {
      std::mt19937_64 rng(900 + 31 * n + seed);
      std::uniform_int_distribution<int> ui(0, 2), uq(-2, 0);
      MatR M(n, n);
      Vec q(n);
      for (int i = 0; i < n; ++i) {
        q(i) = uq(rng);
        for (int j = 0; j < n; ++j) M(i, j) = (i == j) ? 1 + ui(rng) : ui(rng);
      }
      Vec z;
      const LemkeInfo info = lemke(M, q, z);
      ASSERT_EQ(info.status, SolveStatus::kSolved) << "n=" << n << " seed=" << seed;
      EXPECT_LE(lcp_violation(M, q, z).max(), 1e-10);
    }
  }
  // All-ones plus identity with q = -1: every row ties at the start.
  for (int n = 1; n <= 10; ++n) {
    MatR M = MatR::Ones(n, n);
    M.diagonal().array() += 1.0;
    const Vec q = -Vec::Ones(n);
    Vec z;
    const LemkeInfo info = lemke(M, q, z);
    ASSERT_EQ(info.status, SolveStatus::kSolved);
    EXPECT_LE(lcp_violation(M, q, z).max(), 1e-12);
  }
}

// Stewart-Trinkle time-stepping LCP (non-symmetric), one body on the plane z = 0:
//   [Jn Mi Jn'  Jn Mi D  0] [ln]   [Jn v + phi/dt]
//   [D' Mi Jn'  D' Mi D  E] [b ] + [D' v         ]   + 1e-3 I regularization
//   [mu         -E'      0] [g ]   [0            ]
struct StProblem {
  MatR M;
  Vec q;
  int nc, k;
};

StProblem stewart_trinkle(int nc, int k, bool planar, std::mt19937_64& rng) {
  const int dof = planar ? 3 : 6;
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  // Mass matrix: random SPD (mass and rotational inertia).
  const MatR B = randn(dof, dof, rng);
  MatR Mass = B * B.transpose() / dof;
  Mass.diagonal().array() += 0.5;
  const MatR Mi = Mass.inverse();
  MatR Jn(nc, dof), D(dof, nc * k), E = MatR::Zero(nc * k, nc), Mu = MatR::Zero(nc, nc);
  for (int c = 0; c < nc; ++c) {
    Mu(c, c) = 0.1 + 0.9 * (0.5 + 0.5 * u(rng));
    if (planar) {  // generalized velocity (vx, vz, omega); contact point r = (rx, rz)
      const double rx = u(rng), rz = -0.5 + 0.2 * u(rng);
      // row for direction (ux, uz): [ux, uz, rx uz - rz ux]
      Jn.row(c) << 0.0, 1.0, rx;
      for (int j = 0; j < k; ++j) {
        const double ux = (j % 2 == 0) ? 1.0 : -1.0;
        D.col(c * k + j) << ux, 0.0, -rz * ux;
        E(c * k + j, c) = 1.0;
      }
    } else {  // (v, omega) in world frame; row for direction u at r: [u', (r x u)']
      const Eigen::Vector3d r(u(rng), u(rng), -0.5 + 0.2 * u(rng));
      const Eigen::Vector3d nrm(0, 0, 1);
      Jn.row(c).head<3>() = nrm.transpose();
      Jn.row(c).tail<3>() = r.cross(nrm).transpose();
      for (int j = 0; j < k; ++j) {
        const double th = 2.0 * M_PI * j / k;
        const Eigen::Vector3d d(std::cos(th), std::sin(th), 0.0);
        D.col(c * k + j).head<3>() = d;
        D.col(c * k + j).tail<3>() = r.cross(d);
        E(c * k + j, c) = 1.0;
      }
    }
  }
  const int n = nc + nc * k + nc;
  StProblem p;
  p.nc = nc;
  p.k = k;
  p.M = MatR::Zero(n, n);
  p.M.block(0, 0, nc, nc) = Jn * Mi * Jn.transpose();
  p.M.block(0, nc, nc, nc * k) = Jn * Mi * D;
  p.M.block(nc, 0, nc * k, nc) = D.transpose() * Mi * Jn.transpose();
  p.M.block(nc, nc, nc * k, nc * k) = D.transpose() * Mi * D;
  p.M.block(nc, nc + nc * k, nc * k, nc) = E;
  p.M.block(nc + nc * k, 0, nc, nc) = Mu;
  p.M.block(nc + nc * k, nc, nc, nc * k) = -E.transpose();
  p.M.diagonal().array() += 1e-3;
  // Free velocity: falling and sliding; gaps with some penetration.
  Vec v(dof);
  for (int i = 0; i < dof; ++i) v(i) = u(rng);
  v(planar ? 1 : 2) = -1.0 - std::fabs(u(rng));
  const double dt = 0.01;
  Vec phi(nc);
  for (int c = 0; c < nc; ++c) phi(c) = 0.01 * u(rng);
  p.q = Vec::Zero(n);
  p.q.head(nc) = Jn * v + phi / dt;
  p.q.segment(nc, nc * k) = D.transpose() * v;
  return p;
}

TEST(Lemke, StewartTrinkleNonSymmetric) {
  int solved = 0;
  const struct { int k; bool planar; } cases[] = {{2, true}, {4, false}, {8, false}, {16, false}};
  for (const auto& cs : cases) {
    for (int nc = 1; nc <= 4; ++nc) {
      for (int seed = 0; seed < 5; ++seed) {
        std::mt19937_64 rng(4242 + 17 * nc + 1000 * cs.k + seed);
        const StProblem p = stewart_trinkle(nc, cs.k, cs.planar, rng);
        ASSERT_GT((p.M - p.M.transpose()).cwiseAbs().maxCoeff(), 0.5);  // really non-symmetric
        Vec z;
        const LemkeInfo info = lemke(p.M, p.q, z);
        ASSERT_EQ(info.status, SolveStatus::kSolved)
            << "k=" << cs.k << " nc=" << nc << " seed=" << seed << " " << to_string(info.status);
        const LcpViolation v = lcp_violation(p.M, p.q, z);
        const double scale = 1.0 + p.q.lpNorm<Eigen::Infinity>() * (1.0 + z.lpNorm<Eigen::Infinity>());
        EXPECT_LE(v.max(), 1e-10 * scale);
        EXPECT_LE(info.residual, 1e-10 * scale);
        // Friction is bounded by the (regularized) cone:
        // w_gamma = mu_c ln_c - sum_j beta_cj + 1e-3 gamma_c >= 0.
        for (int c = 0; c < nc; ++c) {
          const double bsum = z.segment(nc + c * cs.k, cs.k).sum();
          const double gamma = z(nc + nc * cs.k + c);
          EXPECT_LE(bsum, p.M(nc + nc * cs.k + c, c) * z(c) + 1e-3 * gamma + 1e-9 * scale);
        }
        ++solved;
      }
    }
  }
  EXPECT_EQ(solved, 80);
  // A larger step: 8 contacts x 16 directions (n = 144).
  for (int seed = 0; seed < 2; ++seed) {
    std::mt19937_64 rng(31337 + seed);
    const StProblem p = stewart_trinkle(8, 16, false, rng);
    Vec z;
    const LemkeInfo info = lemke(p.M, p.q, z);
    ASSERT_EQ(info.status, SolveStatus::kSolved);
    EXPECT_LE(lcp_violation(p.M, p.q, z).max(), 1e-10 * (1.0 + p.q.lpNorm<Eigen::Infinity>()));
  }
}

TEST(Lemke, RayTerminationIsDetected) {
  {
    MatR M(1, 1);
    M << -1;
    Vec q(1);
    q << -1;
    Vec z;
    const LemkeInfo info = lemke(M, q, z);
    EXPECT_EQ(info.status, SolveStatus::kRayTermination);
    EXPECT_LE(info.pivots, 2);
  }
  {
    // PSD (so copositive-plus): a ray proves infeasibility. w1 + w2 = -2 < 0 always.
    MatR M(2, 2);
    M << 1, -1, -1, 1;
    Vec q(2);
    q << -1, -1;
    Vec z;
    const LemkeInfo info = lemke(M, q, z);
    EXPECT_EQ(info.status, SolveStatus::kRayTermination);
    EXPECT_LE(info.pivots, 6);
  }
  {
    // Infeasible because row 0 of M is <= 0 with q_0 < 0, embedded in a larger problem.
    std::mt19937_64 rng(3);
    MatR M = random_spd(8, rng);
    M.row(0) = -M.row(0).cwiseAbs();
    Vec q = randn_vec(8, rng);
    q(0) = -1.0;
    Vec z;
    LemkeSettings s;
    s.max_pivots = 10000;
    const LemkeInfo info = lemke(M, q, z, s);
    // w_0 = M_0 z + q_0 <= -1 for every z >= 0: no solution, and Lemke must say so by a ray
    // (not by a numerical error, an input fault or the pivot cap)
    EXPECT_EQ(info.status, SolveStatus::kRayTermination);
    EXPECT_LE(info.pivots, 2 * 8 + 2);
  }
}

TEST(Lemke, PivotCapAndBadInput) {
  std::mt19937_64 rng(11);
  const MatR M = random_spd(10, rng);
  const Vec q = -Vec::Ones(10) - randn_vec(10, rng).cwiseAbs();
  Vec z;
  LemkeSettings s;
  s.max_pivots = 1;
  const LemkeInfo capped = lemke(M, q, z, s);
  EXPECT_EQ(capped.status, SolveStatus::kMaxIterations);
  EXPECT_EQ(capped.pivots, 1);

  // Workspace reuse gives the same answer as a fresh workspace, bitwise.
  LemkeWorkspace ws;
  Vec z1(10), w1(10), z2(10), w2(10), z3(10), w3(10);
  const LemkeInfo a = lemke_solve(10, M.data(), q.data(), z1.data(), w1.data(), LemkeSettings{}, ws);
  const LemkeInfo b = lemke_solve(10, M.data(), q.data(), z2.data(), w2.data(), LemkeSettings{}, ws);
  const LemkeInfo c = lemke_solve(10, M.data(), q.data(), z3.data(), w3.data());
  EXPECT_EQ(a.status, SolveStatus::kSolved);
  EXPECT_EQ(a.pivots, b.pivots);
  EXPECT_EQ(0, std::memcmp(z1.data(), z2.data(), 10 * sizeof(double)));
  EXPECT_EQ(0, std::memcmp(z1.data(), z3.data(), 10 * sizeof(double)));
  EXPECT_EQ(0, std::memcmp(w1.data(), w3.data(), 10 * sizeof(double)));
  EXPECT_EQ(a.residual, c.residual);

  MatR Mbad = M;
  Mbad(3, 4) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(lemke(Mbad, q, z).status, SolveStatus::kInvalidInput);
  Vec qbad = q;
  qbad(2) = std::numeric_limits<double>::infinity();
  EXPECT_EQ(lemke(M, qbad, z).status, SolveStatus::kInvalidInput);

  LemkeSettings bad;
  EXPECT_EQ(bad.validate(), nullptr);
  bad.pivot_tol = 0.0;
  ASSERT_NE(bad.validate(), nullptr);
  EXPECT_NE(std::string(bad.validate()).find("pivot_tol"), std::string::npos);
  bad = LemkeSettings{};
  bad.max_pivots = -3;
  ASSERT_NE(bad.validate(), nullptr);
  EXPECT_NE(std::string(bad.validate()).find("max_pivots"), std::string::npos);
  EXPECT_EQ(lemke(M, q, z, bad).status, SolveStatus::kInvalidInput);
}

// ---- contact block PGS -------------------------------------------------------------------------

TEST(CcpBlockPgs, RandomContactProblemsSatisfyConeConditions) {
  long sweeps = 0;
  for (int k = 1; k <= 8; ++k) {
    for (int seed = 0; seed < 6; ++seed) {
      std::mt19937_64 rng(7000 + 10 * k + seed);
      const ContactProblem p = random_contact(k, 1e-2, rng);
      LcpSettings<double> s = tight_settings(1e-9, 200000);
      s.omega = (seed % 3 == 2) ? 1.5 : 1.0;
      Vec l;
      const LcpInfo<double> info = ccp(p, l, s);
      ASSERT_EQ(info.status, SolveStatus::kSolved) << "k=" << k << " seed=" << seed
                                                   << " res=" << info.residual;
      sweeps += info.iterations;
      const CcpViolation v = ccp_violation(p, l);
      const double scale = 1.0 + l.lpNorm<Eigen::Infinity>();
      EXPECT_LE(v.primal, 1e-12 * scale);
      EXPECT_LE(v.dual, 1e-8 * scale) << "k=" << k << " seed=" << seed;
      EXPECT_LE(v.comp, 1e-8 * scale * scale) << "k=" << k << " seed=" << seed;

      // Independent reference (accelerated projected gradient on the QP). M is PD,
      // so the minimizer is unique; w = M l + q is well determined, l up to ~res/eps.
      const Vec ref = ccp_reference_apgd(p, 20000);
      const Vec w = p.M * l + p.q, wref = p.M * ref + p.q;
      EXPECT_LE((w - wref).lpNorm<Eigen::Infinity>(), 1e-7 * scale) << "k=" << k << " seed=" << seed;
      EXPECT_LE((l - ref).lpNorm<Eigen::Infinity>(), 1e-5 * scale) << "k=" << k << " seed=" << seed;
    }
  }
  RecordProperty("total_sweeps", int(sweeps));
}

// Nearly singular M (6 body DOFs, up to 24 contact rows, eps = 1e-3): PGS is slow on
// the near-null space, but reaches a moderate tolerance and the cone conditions hold.
TEST(CcpBlockPgs, NearlySingularContactProblems) {
  for (int k = 3; k <= 8; ++k) {
    std::mt19937_64 rng(7500 + k);
    const ContactProblem p = random_contact(k, 1e-3, rng);
    Vec l;
    const LcpInfo<double> info = ccp(p, l, tight_settings(1e-6, 200000));
    ASSERT_EQ(info.status, SolveStatus::kSolved) << "k=" << k << " res=" << info.residual;
    const double scale = 1.0 + l.lpNorm<Eigen::Infinity>();
    EXPECT_LE(ccp_violation(p, l).max(), 1e-5 * scale * scale) << "k=" << k;
  }
}

// Float: the attainable residual is ~ float eps * |M| |lambda|, so the tolerance is 1e-4.
TEST(CcpBlockPgs, FloatConeConditions) {
  for (int k = 1; k <= 6; ++k) {
    std::mt19937_64 rng(8100 + k);
    const ContactProblem p = random_contact(k, 1e-1, rng);
    Vec l;
    const LcpInfo<float> info = ccp(p, l, tight_settings(1e-4f, 20000));
    ASSERT_EQ(info.status, SolveStatus::kSolved) << "k=" << k << " res=" << info.residual;
    const CcpViolation v = ccp_violation(p, l);
    const double scale = 1.0 + l.lpNorm<Eigen::Infinity>();
    EXPECT_LE(v.max(), 1e-3 * scale * scale) << "k=" << k;
  }
}

// mu = 0: the tangential impulses vanish and the normals solve the plain LCP
// (M_nn, q_n), whose Lemke solution is the reference.
TEST(CcpBlockPgs, MuZeroMatchesLemkeOnNormals) {
  for (int k = 1; k <= 8; ++k) {
    for (int seed = 0; seed < 4; ++seed) {
      std::mt19937_64 rng(9100 + 10 * k + seed);
      ContactProblem p = random_contact(k, 1e-2, rng);
      p.mu.setZero();
      Vec l;
      const LcpInfo<double> info = ccp(p, l, tight_settings(1e-11, 200000));
      ASSERT_EQ(info.status, SolveStatus::kSolved) << "k=" << k << " seed=" << seed;
      MatR Mn(k, k);
      Vec qn(k);
      for (int a = 0; a < k; ++a) {
        qn(a) = p.q(3 * a);
        for (int b = 0; b < k; ++b) Mn(a, b) = p.M(3 * a, 3 * b);
      }
      Vec zn;
      ASSERT_EQ(lemke(Mn, qn, zn).status, SolveStatus::kSolved);
      for (int a = 0; a < k; ++a) {
        EXPECT_EQ(l(3 * a + 1), 0.0);
        EXPECT_EQ(l(3 * a + 2), 0.0);
        EXPECT_NEAR(l(3 * a), zn(a), 1e-7 * (1.0 + zn.lpNorm<Eigen::Infinity>()));
      }
    }
  }
}

// Very large mu: the cone is (almost) the half-space lambda_n >= 0, so at the solution
// the tangential relative velocity of every contact carrying load is ~0 (sticking).
TEST(CcpBlockPgs, HugeMuSticks) {
  std::mt19937_64 rng(123);
  ContactProblem p = random_contact(2, 0.5, rng);
  p.mu.setConstant(1e6);
  Vec l;
  const LcpInfo<double> info = ccp(p, l, tight_settings(1e-12, 200000));
  ASSERT_EQ(info.status, SolveStatus::kSolved);
  const Vec w = p.M * l + p.q;
  for (int b = 0; b < p.k; ++b) {
    if (l(3 * b) > 1e-6) {
      EXPECT_NEAR(w(3 * b + 1), 0.0, 1e-9);
      EXPECT_NEAR(w(3 * b + 2), 0.0, 1e-9);
    }
  }
  const CcpViolation v = ccp_violation(p, l);  // (the dual check scales with mu)
  EXPECT_LE(std::max(v.primal, v.comp), 1e-9 * (1.0 + l.lpNorm<Eigen::Infinity>()));
  EXPECT_LE(v.dual, 1e6 * 1e-9);
}

// ---- input faults, settings --------------------------------------------------------------------

TEST(LcpPgs, BadInputIsReported) {
  std::mt19937_64 rng(5);
  const MatR M = random_spd(4, rng);
  const Vec q = randn_vec(4, rng);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  LcpSettings<double> s;
  Vec z;
  {
    MatR Mb = M;
    Mb(1, 2) = nan;
    const LcpInfo<double> info = pgs(Mb, q, z, s);
    EXPECT_EQ(info.status, SolveStatus::kInvalidInput);
    EXPECT_EQ(info.fault, InputFault::kNonFiniteM);
  }
  {
    Vec qb = q;
    qb(3) = -inf;
    const LcpInfo<double> info = pgs(M, qb, z, s);
    EXPECT_EQ(info.status, SolveStatus::kInvalidInput);
    EXPECT_EQ(info.fault, InputFault::kNonFiniteM);
  }
  {
    MatR Mb = M;
    Mb(2, 2) = 0.0;
    const LcpInfo<double> info = pgs(Mb, q, z, s);
    EXPECT_EQ(info.status, SolveStatus::kInvalidInput);
    EXPECT_EQ(info.fault, InputFault::kNonPositiveDiagonal);
    EXPECT_EQ(info.iterations, 0);
  }
  {
    MatR Mb = M;
    Mb(0, 0) = -1.0;
    EXPECT_EQ(pgs(Mb, q, z, LcpSettings<float>{}).fault, InputFault::kNonPositiveDiagonal);
  }
  // Contact variant.
  ContactProblem p = random_contact(3, 1e-3, rng);
  Vec l;
  {
    ContactProblem b = p;
    b.mu(1) = nan;
    const LcpInfo<double> info = ccp(b, l, s);
    EXPECT_EQ(info.status, SolveStatus::kInvalidInput);
    EXPECT_EQ(info.fault, InputFault::kNonFiniteMu);
  }
  {
    ContactProblem b = p;
    b.mu(2) = -0.1;
    EXPECT_EQ(ccp(b, l, s).fault, InputFault::kNegativeMu);
  }
  {
    ContactProblem b = p;
    b.M(4, 5) = inf;
    EXPECT_EQ(ccp(b, l, s).fault, InputFault::kNonFiniteM);
  }
  {
    ContactProblem b = p;  // zero tangential diagonal: rejected when mu > 0 ...
    b.M(4, 4) = 0.0;
    EXPECT_EQ(ccp(b, l, s).fault, InputFault::kNonPositiveDiagonal);
    b.mu(1) = 0.0;  // ... accepted when that contact is frictionless
    EXPECT_EQ(ccp(b, l, s).status, SolveStatus::kSolved);
    b.M(3, 3) = 0.0;  // the normal diagonal is always required
    EXPECT_EQ(ccp(b, l, s).fault, InputFault::kNonPositiveDiagonal);
  }
}

TEST(LcpPgs, SettingsValidate) {
  LcpSettings<double> s;
  EXPECT_EQ(s.validate(), nullptr);
  s.omega = 2.5;
  ASSERT_NE(s.validate(), nullptr);
  EXPECT_EQ(std::string(s.validate()), "omega must be in (0, 2), got 2.5");
  s.omega = 0.0;
  EXPECT_NE(s.validate(), nullptr);
  s.omega = 2.0;
  EXPECT_NE(s.validate(), nullptr);
  s.omega = 1.9;
  EXPECT_EQ(s.validate(), nullptr);
  s.tol = std::numeric_limits<double>::quiet_NaN();
  ASSERT_NE(s.validate(), nullptr);
  EXPECT_NE(std::string(s.validate()).find("tol"), std::string::npos);
  s = LcpSettings<double>{};
  s.check_every = 0;
  ASSERT_NE(s.validate(), nullptr);
  EXPECT_NE(std::string(s.validate()).find("check_every"), std::string::npos);
  s = LcpSettings<double>{};
  s.max_iter = -1;
  ASSERT_NE(s.validate(), nullptr);
  EXPECT_NE(std::string(s.validate()).find("max_iter"), std::string::npos);
  LcpSettings<float> sf;
  EXPECT_EQ(sf.validate(), nullptr);
  sf.omega = -1.f;
  EXPECT_NE(sf.validate(), nullptr);
}

// ---- budget, blow-up, determinism, warm start, strides -----------------------------------------

TEST(LcpPgs, BudgetAndBlowUp) {
  std::mt19937_64 rng(21);
  const MatR M = random_spd(12, rng);
  const Vec q = randn_vec(12, rng);
  Vec z;
  const LcpInfo<double> one = pgs(M, q, z, tight_settings(1e-12, 1));
  EXPECT_EQ(one.status, SolveStatus::kMaxIterations);
  EXPECT_EQ(one.iterations, 1);
  EXPECT_GE(z.minCoeff(), 0.0);
  // residual reported is that of the returned iterate
  const Vec w = M * z + q;
  double r = 0;
  for (int i = 0; i < 12; ++i) r = std::max(r, std::fabs(std::min(z(i), w(i))));
  EXPECT_NEAR(one.residual, r, 1e-14);

  // check_every > 1: same answer quality, iterations a multiple of check_every (or budget).
  LcpSettings<double> s = tight_settings(1e-10, 10000);
  s.check_every = 7;
  const LcpInfo<double> sparse_checks = pgs(M, q, z, s);
  EXPECT_EQ(sparse_checks.status, SolveStatus::kSolved);
  EXPECT_EQ(sparse_checks.iterations % 7, 0);
  EXPECT_LE(lcp_violation(M, q, z).max(), 1e-9);

  // Not PSD: PGS diverges; the blow-up is reported, not returned as an answer.
  MatR Mbad(2, 2);
  Mbad << 1, -10, -10, 1;
  Vec qbad(2);
  qbad << -1, -1;
  const LcpInfo<double> bad = pgs(Mbad, qbad, z, tight_settings(1e-8, 1000));
  EXPECT_EQ(bad.status, SolveStatus::kNumericalError);
  const LcpInfo<float> badf = pgs(Mbad, qbad, z, tight_settings(1e-5f, 1000));
  EXPECT_EQ(badf.status, SolveStatus::kNumericalError);
}

TEST(LcpPgs, DeterministicBitwise) {
  std::mt19937_64 rng(31);
  const MatR M = random_spd(20, rng);
  const Vec q = randn_vec(20, rng);
  LcpSettings<double> s = tight_settings(1e-10, 5000);
  s.omega = 1.2;
  Vec z1, z2;
  const LcpInfo<double> a = pgs(M, q, z1, s), b = pgs(M, q, z2, s);
  EXPECT_EQ(a.iterations, b.iterations);
  EXPECT_EQ(0, std::memcmp(&a.residual, &b.residual, sizeof(double)));
  EXPECT_EQ(0, std::memcmp(z1.data(), z2.data(), 20 * sizeof(double)));

  const ContactProblem p = random_contact(5, 1e-3, rng);
  Vec l1, l2;
  const LcpInfo<float> c = ccp(p, l1, tight_settings(1e-5f, 3000));
  const LcpInfo<float> d = ccp(p, l2, tight_settings(1e-5f, 3000));
  EXPECT_EQ(c.iterations, d.iterations);
  EXPECT_EQ(0, std::memcmp(l1.data(), l2.data(), 15 * sizeof(double)));
}

TEST(LcpPgs, WarmStartFromSolutionIsImmediate) {
  for (int seed = 0; seed < 5; ++seed) {
    std::mt19937_64 rng(41 + seed);
    const MatR M = random_spd(15, rng);
    const Vec q = randn_vec(15, rng);
    const LcpSettings<double> s = tight_settings(1e-10, 10000);
    Vec z, z2;
    const LcpInfo<double> cold = pgs(M, q, z, s);
    ASSERT_EQ(cold.status, SolveStatus::kSolved);
    const LcpInfo<double> warm = pgs(M, q, z2, s, &z);
    EXPECT_EQ(warm.status, SolveStatus::kSolved);
    EXPECT_LE(warm.iterations, 2);
    EXPECT_GT(cold.iterations, warm.iterations);

    // Small perturbation of q: the warm start beats the cold start.
    const Vec q2 = q + 1e-3 * randn_vec(15, rng);
    Vec z3, z4;
    const LcpInfo<double> c2 = pgs(M, q2, z3, s);
    const LcpInfo<double> w2 = pgs(M, q2, z4, s, &z);
    EXPECT_EQ(w2.status, SolveStatus::kSolved);
    EXPECT_LT(w2.iterations, c2.iterations);

    const ContactProblem p = random_contact(4, 1e-2, rng);
    Vec l, l2;
    const LcpSettings<double> sc = tight_settings(1e-9, 200000);
    ASSERT_EQ(ccp(p, l, sc).status, SolveStatus::kSolved);
    const LcpInfo<double> wc = ccp(p, l2, sc, &l);
    EXPECT_EQ(wc.status, SolveStatus::kSolved);
    EXPECT_LE(wc.iterations, 2);
  }
}

// Batch-fastest layout: B = 3 problems interleaved (element e of problem b at e*3 + b).
// Problem 1 solved through a RunStride view must equal the UnitStride solve bitwise.
template <class T>
void check_run_stride_matches_unit() {
  const int B = 3, n = 12, k = 4, nk = 3 * k;
  std::vector<MatR> Ms;
  std::vector<Vec> qs;
  std::vector<ContactProblem> cps;
  for (int b = 0; b < B; ++b) {
    std::mt19937_64 rng(600 + b);
    Ms.push_back(random_spd(n, rng));
    qs.push_back(randn_vec(n, rng));
    cps.push_back(random_contact(k, 1e-2, rng));
  }
  std::vector<T> M3(B * n * n), q3(B * n), z3(B * n, T(0)), w3(B * n);
  std::vector<T> C3(B * nk * nk), c3(B * nk), mu3(B * k), l3(B * nk, T(0)), v3(B * nk);
  for (int b = 0; b < B; ++b) {
    for (int e = 0; e < n * n; ++e) M3[e * B + b] = T(Ms[b].data()[e]);
    for (int e = 0; e < n; ++e) q3[e * B + b] = T(qs[b](e));
    for (int e = 0; e < nk * nk; ++e) C3[e * B + b] = T(cps[b].M.data()[e]);
    for (int e = 0; e < nk; ++e) c3[e * B + b] = T(cps[b].q(e));
    for (int e = 0; e < k; ++e) mu3[e * B + b] = T(cps[b].mu(e));
  }
  LcpSettings<T> s;
  s.tol = T(1e-5);
  s.max_iter = 300;  // a budget that may or may not be reached: either way, equal bits
  s.omega = T(1.1);
  LcpInfo<T> strided[B], cstrided[B];
  for (int b = 0; b < B; ++b) {
    strided[b] = lcp_pgs_solve(n, strided_view<const T>(M3.data() + b, B),
                               strided_view<const T>(q3.data() + b, B),
                               strided_view(z3.data() + b, B), strided_view(w3.data() + b, B), s);
    cstrided[b] = ccp_block_pgs_solve(
        k, strided_view<const T>(C3.data() + b, B), strided_view<const T>(c3.data() + b, B),
        strided_view<const T>(mu3.data() + b, B), strided_view(l3.data() + b, B),
        strided_view(v3.data() + b, B), s);
  }
  for (int b = 0; b < B; ++b) {
    std::vector<T> M(n * n), q(n), z(n, T(0)), w(n);
    for (int e = 0; e < n * n; ++e) M[e] = M3[e * B + b];
    for (int e = 0; e < n; ++e) q[e] = q3[e * B + b];
    const LcpInfo<T> u = lcp_pgs_solve(n, unit_view<const T>(M.data()), unit_view<const T>(q.data()),
                                       unit_view(z.data()), unit_view(w.data()), s);
    EXPECT_EQ(u.status, strided[b].status);
    EXPECT_EQ(u.iterations, strided[b].iterations);
    // z must match bit for bit; w = Mz + q and the residual are recomputed by a
    // dot product that the compiler vectorizes for unit stride only (another
    // summation order), so they match to rounding
    const T wt = std::numeric_limits<T>::epsilon() * T(64);
    EXPECT_NEAR(u.residual, strided[b].residual, wt * (T(1) + std::abs(u.residual)));
    for (int e = 0; e < n; ++e) {
      EXPECT_EQ(0, std::memcmp(&z[e], &z3[e * B + b], sizeof(T))) << "b=" << b << " e=" << e;
      EXPECT_NEAR(w[e], w3[e * B + b], wt * (T(1) + std::abs(w[e]))) << "b=" << b << " e=" << e;
    }

    std::vector<T> C(nk * nk), c(nk), mu(k), l(nk, T(0)), v(nk);
    for (int e = 0; e < nk * nk; ++e) C[e] = C3[e * B + b];
    for (int e = 0; e < nk; ++e) c[e] = c3[e * B + b];
    for (int e = 0; e < k; ++e) mu[e] = mu3[e * B + b];
    const LcpInfo<T> cu = ccp_block_pgs_solve(
        k, unit_view<const T>(C.data()), unit_view<const T>(c.data()), unit_view<const T>(mu.data()),
        unit_view(l.data()), unit_view(v.data()), s);
    EXPECT_EQ(cu.status, cstrided[b].status);
    EXPECT_EQ(cu.iterations, cstrided[b].iterations);
    for (int e = 0; e < nk; ++e) {
      EXPECT_EQ(0, std::memcmp(&l[e], &l3[e * B + b], sizeof(T))) << "b=" << b << " e=" << e;
      EXPECT_EQ(0, std::memcmp(&v[e], &v3[e * B + b], sizeof(T))) << "b=" << b << " e=" << e;
    }
  }
}

TEST(LcpPgs, RunStrideMatchesUnitStrideBitwiseDouble) { check_run_stride_matches_unit<double>(); }
TEST(LcpPgs, RunStrideMatchesUnitStrideBitwiseFloat) { check_run_stride_matches_unit<float>(); }

TEST(LcpPgs, EmptyProblem) {
  LcpSettings<double> s;
  double dummy = 0;
  const LcpInfo<double> info =
      lcp_pgs_solve(0, unit_view<const double>(&dummy), unit_view<const double>(&dummy),
                    unit_view(&dummy), unit_view(&dummy), s);
  EXPECT_EQ(info.status, SolveStatus::kSolved);
  EXPECT_EQ(info.iterations, 0);
  double z = 1, w = 1;
  const LemkeInfo li = lemke_solve(0, &dummy, &dummy, &z, &w);
  EXPECT_EQ(li.status, SolveStatus::kSolved);
}

}  // namespace
}  // namespace impulse
