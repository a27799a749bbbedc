// host/diff/qp_adjoint.h: the conic QP adjoint against the full (n + m) system it
// reduces, and against central differences of re-solved problems.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include <Eigen/Dense>

#include "host/batch/generate.h"
#include "host/batch/qp_batch.h"
#include "host/diff/qp_adjoint.h"

namespace impulse {
namespace {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// A batch of problems built around a known primal-dual solution: per row kind,
// a choice of (s, y) that is complementary, so x and y are exact. n = 5, cones
// (1 zero, 4 nonneg, 3 SOC): nonneg rows two active, two inactive; the cones one
// inside, one on its boundary (s and y on opposite rays), one at the polar (s = 0,
// y inside the cone).
struct Built {
  int B = 0, n = 8;  // more than the 7 rows that bind (the polar cone binds 3)
  ConeSpec cones{1, 4, 3};
  std::vector<double> P, q, A, b, x, y;
};

Built build(int B, uint64_t seed) {
  Built t;
  t.B = B;
  const int n = t.n, m = t.cones.rows();
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> N01;
  t.P.resize(size_t(B) * n * n);
  t.q.resize(size_t(B) * n);
  t.A.resize(size_t(B) * m * n);
  t.b.resize(size_t(B) * m);
  t.x.resize(size_t(B) * n);
  t.y.resize(size_t(B) * m);
  for (int k = 0; k < B; ++k) {
    Mat M(n, n), A(m, n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) M(i, j) = N01(rng);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) A(i, j) = N01(rng);
    Mat P = M * M.transpose() / n + 0.5 * Mat::Identity(n, n);
    Eigen::VectorXd x(n), s(m), y(m);
    for (int j = 0; j < n; ++j) x[j] = N01(rng);
    s.setZero();
    y.setZero();
    y[0] = N01(rng);  // the equality row
    for (int i = 1; i <= 4; ++i) {
      const double a = 0.5 + std::abs(N01(rng));
      if (i <= 2) y[i] = a; else s[i] = a;  // two active, two inactive
    }
    const int c0 = 5;
    // inside: s strictly in the cone, y = 0
    s[c0] = 2.0, s[c0 + 1] = 0.3, s[c0 + 2] = -0.4;
    // boundary: s = a (1, w), y = c (1, -w) with |w| = 1
    const double ang = N01(rng), a = 0.7 + std::abs(N01(rng)), c = 0.4 + std::abs(N01(rng));
    s[c0 + 3] = a, s[c0 + 4] = a * std::cos(ang), s[c0 + 5] = a * std::sin(ang);
    y[c0 + 3] = c, y[c0 + 4] = -c * std::cos(ang), y[c0 + 5] = -c * std::sin(ang);
    // polar: s = 0, y strictly inside
    y[c0 + 6] = 1.5, y[c0 + 7] = -0.2, y[c0 + 8] = 0.5;
    const Eigen::VectorXd q = -P * x - A.transpose() * y;
    const Eigen::VectorXd b = A * x + s;
    std::copy(P.data(), P.data() + n * n, t.P.begin() + size_t(k) * n * n);
    std::copy(A.data(), A.data() + m * n, t.A.begin() + size_t(k) * m * n);
    for (int i = 0; i < n; ++i) t.q[size_t(k) * n + i] = q[i], t.x[size_t(k) * n + i] = x[i];
    for (int i = 0; i < m; ++i) t.b[size_t(k) * m + i] = b[i], t.y[size_t(k) * m + i] = y[i];
  }
  return t;
}

// D = dPi/du for the full system, written from the definition (cone by cone)
Mat projection_derivative(const Eigen::VectorXd& u, const ConeSpec& c) {
  const int m = c.rows();
  Mat D = Mat::Zero(m, m);
  for (int i = c.n_zero; i < c.n_zero + c.n_nonneg; ++i) D(i, i) = u[i] > 0 ? 1 : 0;
  for (int k = 0; k < c.n_soc; ++k) {
    const int r = c.soc_begin() + 3 * k;
    const double t = u[r];
    const Eigen::Vector2d z(u[r + 1], u[r + 2]);
    if (z.norm() <= t) {
      D.block(r, r, 3, 3).setIdentity();
    } else if (z.norm() > -t) {
      const Eigen::Vector2d w = z / z.norm();
      const double rr = t / z.norm();
      Mat Dc(3, 3);
      Dc(0, 0) = 1;
      Dc.block(0, 1, 1, 2) = w.transpose();
      Dc.block(1, 0, 2, 1) = w;
      Dc.block(1, 1, 2, 2) = (1 + rr) * Eigen::Matrix2d::Identity() - rr * w * w.transpose();
      D.block(r, r, 3, 3) = 0.5 * Dc;
    }
  }
  return D;
}

struct Grads {
  std::vector<double> P, q, A, b;
};

Grads adjoint(const Built& t, const std::vector<double>& gx, const std::vector<double>& gy,
              const std::vector<double>& gv, int threads = 1, QpAdjointInfo* info = nullptr) {
  const int m = t.cones.rows();
  QpAdjointBatch<double> in;
  in.size = t.B, in.n = t.n, in.cones = t.cones, in.eps = 1e-9;
  in.P = t.P.data(), in.A = t.A.data(), in.b = t.b.data(), in.x = t.x.data(), in.y = t.y.data();
  in.gx = gx.empty() ? nullptr : gx.data();
  in.gy = gy.empty() ? nullptr : gy.data();
  in.gv = gv.empty() ? nullptr : gv.data();
  Grads g;
  g.P.resize(t.P.size());
  g.q.resize(t.q.size());
  g.A.resize(t.A.size());
  g.b.resize(size_t(t.B) * m);
  const QpAdjointInfo i = qp_adjoint_batch(in, QpAdjointOut<double>{g.P.data(), g.q.data(), g.A.data(), g.b.data()},
                                           threads);
  if (info) *info = i;
  return g;
}

TEST(QpAdjoint, EqualsTheFullSystemItReduces) {
  const Built t = build(6, 11);
  const int n = t.n, m = t.cones.rows();
  std::mt19937_64 rng(3);
  std::normal_distribution<double> N01;
  std::vector<double> gx(size_t(t.B) * n), gy(size_t(t.B) * m);
  for (double& v : gx) v = N01(rng);
  for (double& v : gy) v = N01(rng);
  QpAdjointInfo info;
  const Grads g = adjoint(t, gx, gy, {}, 1, &info);
  EXPECT_EQ(info.least_squares, 0);
  EXPECT_EQ(info.largest_system, n + 1 + 2 + 3 + 3);  // equality, 2 active, boundary cone, polar cone
  for (int k = 0; k < t.B; ++k) {
    Eigen::Map<const Mat> P(&t.P[size_t(k) * n * n], n, n), A(&t.A[size_t(k) * m * n], m, n);
    Eigen::Map<const Eigen::VectorXd> b(&t.b[size_t(k) * m], m), x(&t.x[size_t(k) * n], n),
        y(&t.y[size_t(k) * m], m), gxk(&gx[size_t(k) * n], n), gyk(&gy[size_t(k) * m], m);
    const Eigen::VectorXd u = b - A * x - y;
    const Mat D = projection_derivative(u, t.cones);
    const Mat DmI = D - Mat::Identity(m, m);
    Mat J = Mat::Zero(n + m, n + m);
    J.block(0, 0, n, n) = P;
    J.block(0, n, n, m) = A.transpose() * DmI;
    J.block(n, 0, m, n) = A;
    J.block(n, n, m, m) = D;
    Eigen::VectorXd rhs(n + m);
    rhs << gxk, DmI.transpose() * gyk;
    const Eigen::VectorXd lam = J.transpose().fullPivLu().solve(rhs);
    const Eigen::VectorXd lx = lam.head(n), lu = lam.tail(m);
    for (int i = 0; i < n; ++i) EXPECT_NEAR(g.q[size_t(k) * n + i], -lx[i], 1e-9) << "problem " << k;
    for (int i = 0; i < m; ++i) EXPECT_NEAR(g.b[size_t(k) * m + i], lu[i], 1e-9) << "problem " << k;
    const Mat gA = -y * lx.transpose() - lu * x.transpose();
    const Mat gP0 = -lx * x.transpose();
    const Mat gP = 0.5 * (gP0 + gP0.transpose());
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) EXPECT_NEAR(g.A[size_t(k) * m * n + i * n + j], gA(i, j), 1e-9);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) EXPECT_NEAR(g.P[size_t(k) * n * n + i * n + j], gP(i, j), 1e-9);
  }
}

// The cube's loss QPs with the octagon friction model are degenerate in most
// problems: a contact that does not touch has all eight friction rows at their
// bound around two tangential variables, so the reduced system's rows are
// dependent and it is singular. Its minimum-norm least-squares solution is the
// documented answer (LU once returned one of the solutions with entries up to
// 1e37 along the null space): checked against an SVD of the reduced system
// assembled here from the definitions, and bounded. With a gradient of y the
// system may be inconsistent (the null-space solve); without one (a loss of x
// alone, the common case) it is consistent and P definite: the Cholesky path,
// its rank-revealing branch W⁺h where the rows are dependent.
void check_minimum_norm(FrictionModel friction, bool with_gy) {
  const GeneratedQps g = cube_loss_batch(40, friction, 5);
  const QpBatch<double>& bt = g.batch;
  const int B = bt.size, n = bt.n, m = bt.m();
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-9;
  st.max_iter = 100000;
  BatchOptions opt;
  opt.threads = 1;
  QpSolutions<double> sol;
  solve_batch(bt, st, opt, sol);
  std::vector<double> A;
  for (int k = 0; k < B; ++k) {
    ASSERT_EQ(sol.status[k], SolveStatus::kSolved) << k;
    const std::vector<double> d = bt.A_dense(k);
    A.insert(A.end(), d.begin(), d.end());
  }
  std::mt19937_64 rng(9);
  std::normal_distribution<double> N01;
  std::vector<double> gx(size_t(B) * n), gy(size_t(B) * m);
  for (double& v : gx) v = N01(rng);
  for (double& v : gy) v = with_gy ? N01(rng) : 0.0;
  QpAdjointBatch<double> in;
  in.size = B, in.n = n, in.cones = bt.cones, in.eps = 1e-9;
  in.P = bt.P.data(), in.A = A.data(), in.b = bt.b.data(), in.x = sol.x.data(), in.y = sol.y.data();
  in.gx = gx.data(), in.gy = with_gy ? gy.data() : nullptr;
  std::vector<double> gP(bt.P.size()), gq(size_t(B) * n), gA(A.size()), gb(size_t(B) * m);
  const QpAdjointInfo info = qp_adjoint_batch(in, QpAdjointOut<double>{gP.data(), gq.data(), gA.data(), gb.data()}, 1);
  EXPECT_GE(info.least_squares, B / 4) << "the batch is meant to hold degenerate problems";
  int singular = 0, boundary = 0;
  const ConeSpec& c = bt.cones;
  for (int k = 0; k < B; ++k) {
    Eigen::Map<const Mat> P(&bt.P[size_t(k) * n * n], n, n), Ak(&A[size_t(k) * m * n], m, n);
    Eigen::Map<const Eigen::VectorXd> b(&bt.b[size_t(k) * m], m), x(&sol.x[size_t(k) * n], n),
        y(&sol.y[size_t(k) * m], m), gyk(&gy[size_t(k) * m], m);
    const Eigen::VectorXd u = b - Ak * x - y;
    const double tol = 10 * in.eps * std::max(1.0, y.cwiseAbs().maxCoeff());
    const Mat D = projection_derivative(u, c);
    // the rows that stay: D = 0 (zero rows, nonnegative rows at their bound, cones at
    // the polar cone) and the cones on their boundary with their D block
    std::vector<int> rows;
    std::vector<bool> on_boundary;
    for (int i = 0; i < c.n_zero + c.n_nonneg; ++i)
      if (i < c.n_zero || !(u[i] > -tol)) rows.push_back(i), on_boundary.push_back(false);
    for (int q = 0; q < c.n_soc; ++q) {
      const int r0 = c.soc_begin() + 3 * q;
      const double nz = std::hypot(u[r0 + 1], u[r0 + 2]);
      if (nz <= u[r0]) continue;
      const bool bd = !(nz <= -u[r0]);
      boundary += bd;
      for (int a = 0; a < 3; ++a) rows.push_back(r0 + a), on_boundary.push_back(bd);
    }
    const int kk = int(rows.size()), N = n + kk;
    Mat K = Mat::Zero(N, N);
    Eigen::VectorXd r(N);
    K.topLeftCorner(n, n) = P;
    for (int i = 0; i < n; ++i) r[i] = gx[size_t(k) * n + i];
    const Mat DmI = D - Mat::Identity(m, m);
    for (int a = 0; a < kk; ++a) {
      K.block(0, n + a, n, 1) = Ak.row(rows[a]).transpose();
      if (!on_boundary[a]) {
        K.block(n + a, 0, 1, n) = -Ak.row(rows[a]);
        r[n + a] = -gyk[rows[a]];
        continue;
      }
      K.block(n + a, 0, 1, n) = DmI.row(rows[a]) * Ak;
      for (int bb = 0; bb < kk; ++bb) K(n + a, n + bb) = D(rows[a], rows[bb]);
      r[n + a] = DmI.row(rows[a]).dot(gyk);
    }
    Eigen::JacobiSVD<Mat> svd(K, Eigen::ComputeThinU | Eigen::ComputeThinV);
    svd.setThreshold(1e-10);
    singular += svd.rank() < N;
    const Eigen::VectorXd z = svd.solve(r);
    const double scale = 1 + z.cwiseAbs().maxCoeff();
    for (int i = 0; i < n; ++i) EXPECT_NEAR(gq[size_t(k) * n + i], -z[i], 1e-6 * scale) << "problem " << k;
    Eigen::VectorXd lu = Eigen::VectorXd::Zero(m);
    for (int a = 0; a < kk; ++a) lu[rows[a]] = z[n + a];
    for (int i = 0; i < m; ++i) EXPECT_NEAR(gb[size_t(k) * m + i], lu[i], 1e-6 * scale) << "problem " << k << " row " << i;
    double largest = 0;
    for (size_t i = 0; i < size_t(m) * n; ++i) largest = std::max(largest, std::abs(gA[size_t(k) * m * n + i]));
    EXPECT_LT(largest, 1e4) << "problem " << k;
  }
  EXPECT_EQ(singular, info.least_squares);
  if (c.n_soc > 0) {
    EXPECT_GT(boundary, B) << "the exact-cone batch is meant to have cones on their boundary";
  }
}

TEST(QpAdjoint, DegenerateProblemsGetTheReducedSystemsMinimumNormSolution) {
  check_minimum_norm(FrictionModel::kOctagon, true);  // nonnegative rows only
  check_minimum_norm(FrictionModel::kOctagon, false);
}

// the same with the exact friction cones, many of them on their boundary (their
// projection derivative's eigen-directions in the null-space solve)
TEST(QpAdjoint, DegenerateConeProblemsGetTheMinimumNormSolutionToo) {
  check_minimum_norm(FrictionModel::kCone, true);
  check_minimum_norm(FrictionModel::kCone, false);
}

// x and y of the batch solved at a tight tolerance
void solve_tight(const Built& t, std::vector<double>& x, std::vector<double>& y) {
  QpBatch<double> bt = QpBatch<double>::dense(t.B, t.n, t.cones);
  bt.P = t.P, bt.q = t.q, bt.A = t.A, bt.b = t.b;
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-11;
  st.max_iter = 200000;
  BatchOptions opt;
  opt.threads = 1;
  QpSolutions<double> sol;
  solve_batch(bt, st, opt, sol);
  for (int k = 0; k < t.B; ++k) ASSERT_EQ(sol.status[k], SolveStatus::kSolved) << "problem " << k;
  x = sol.x, y = sol.y;
}

TEST(QpAdjoint, MatchesCentralDifferencesOfResolvedProblems) {
  Built t = build(1, 5);
  const int n = t.n, m = t.cones.rows();
  // the loss L = c_x . x + c_y . y + value
  std::mt19937_64 rng(9);
  std::normal_distribution<double> N01;
  std::vector<double> cx(n), cy(m), one(1, 1.0);
  for (double& v : cx) v = N01(rng);
  for (double& v : cy) v = N01(rng);
  const Grads g = adjoint(t, cx, cy, one);
  auto loss = [&](const Built& p) {
    std::vector<double> x, y;
    solve_tight(p, x, y);
    double L = 0;
    for (int i = 0; i < n; ++i) L += cx[i] * x[i];
    for (int i = 0; i < m; ++i) L += cy[i] * y[i];
    double v = 0;  // the value 1/2 x'Px + q'x
    for (int i = 0; i < n; ++i) {
      v += p.q[i] * x[i];
      for (int j = 0; j < n; ++j) v += 0.5 * x[i] * p.P[i * n + j] * x[j];
    }
    return L + v;
  };
  const double h = 1e-6;
  auto check = [&](std::vector<double> Built::*field, const std::vector<double>& grad, const char* name, bool sym) {
    for (size_t i = 0; i < grad.size(); ++i) {
      Built up = t, dn = t;
      (up.*field)[i] += h;
      (dn.*field)[i] -= h;
      if (sym) {  // P stays symmetric: move (i, j) and (j, i) together, the gradient counts both
        const size_t r = i / n, c = i % n, tr = c * n + r;
        if (tr != i) {
          (up.*field)[tr] += h;
          (dn.*field)[tr] -= h;
        }
        const double fd = (loss(up) - loss(dn)) / (2 * h);
        const double want = tr != i ? grad[i] + grad[tr] : grad[i];
        EXPECT_NEAR(want, fd, 1e-5 * (1 + std::abs(fd))) << name << " entry " << i;
      } else {
        const double fd = (loss(up) - loss(dn)) / (2 * h);
        EXPECT_NEAR(grad[i], fd, 1e-5 * (1 + std::abs(fd))) << name << " entry " << i;
      }
    }
  };
  check(&Built::q, g.q, "q", false);
  check(&Built::b, g.b, "b", false);
  check(&Built::A, g.A, "A", false);
  check(&Built::P, g.P, "P", true);
}

TEST(QpAdjoint, SameResultOnAnyThreadCountAndNaNsStayInTheirProblem) {
  Built t = build(40, 21);
  const int n = t.n, m = t.cones.rows();
  std::vector<double> gx(size_t(t.B) * n, 0.3), gy(size_t(t.B) * m, -0.2), gv(t.B, 1.0);
  const Grads one = adjoint(t, gx, gy, gv, 1), two = adjoint(t, gx, gy, gv, 2);
  EXPECT_EQ(one.P, two.P);
  EXPECT_EQ(one.A, two.A);
  EXPECT_EQ(one.q, two.q);
  EXPECT_EQ(one.b, two.b);
  t.x[size_t(7) * n + 2] = NAN;  // problem 7's forward solve failed
  QpAdjointInfo info;
  const Grads bad = adjoint(t, gx, gy, gv, 2, &info);
  EXPECT_EQ(info.not_finite, 1);
  for (int i = 0; i < n; ++i) EXPECT_TRUE(std::isnan(bad.q[size_t(7) * n + i]));
  for (size_t i = 0; i < bad.q.size(); ++i) {
    if (i / n != 7) {
      EXPECT_EQ(bad.q[i], one.q[i]) << i;
    }
  }
}

// a null output is not computed; the others are as with every output
TEST(QpAdjoint, OnlyTheGradientsAskedForAreWritten) {
  const Built t = build(3, 21);
  const int n = t.n, m = t.cones.rows();
  std::vector<double> gx(size_t(t.B) * n, 0.5), gy(size_t(t.B) * m, -0.25), gv(size_t(t.B), 2.0);
  const Grads all = adjoint(t, gx, gy, gv);
  QpAdjointBatch<double> in;
  in.size = t.B, in.n = n, in.cones = t.cones, in.eps = 1e-9;
  in.P = t.P.data(), in.A = t.A.data(), in.b = t.b.data(), in.x = t.x.data(), in.y = t.y.data();
  in.gx = gx.data(), in.gy = gy.data(), in.gv = gv.data();
  std::vector<double> gq(all.q.size()), gb(all.b.size());
  QpAdjointOut<double> out;
  out.gq = gq.data();
  out.gb = gb.data();
  qp_adjoint_batch(in, out, 1);
  EXPECT_EQ(gq, all.q);
  EXPECT_EQ(gb, all.b);
}

TEST(QpAdjoint, RefusesWhatDoesNotFit) {
  QpAdjointBatch<double> in;
  in.size = 1, in.n = 0;
  std::vector<double> g(4);
  QpAdjointOut<double> out{g.data(), g.data(), g.data(), g.data()};
  EXPECT_THROW(qp_adjoint_batch(in, out), Error);
  in.n = 2;
  EXPECT_THROW(qp_adjoint_batch(in, out), Error);  // P, A, ... missing
}

}  // namespace
}  // namespace impulse
