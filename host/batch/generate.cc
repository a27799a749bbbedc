#include "host/batch/generate.h"

#include <Eigen/Dense>
#include <algorithm>
#include <string>
#include <cmath>
#include <random>

namespace impulse {

namespace {

using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;

void put_problem(QpBatch<double>& bt, int k, const Mat& P, const Vec& q, const Mat& A,
                 const Vec& b) {
  const int n = bt.n, m = bt.m();
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> Pr = P, Ar = A;
  std::copy(Pr.data(), Pr.data() + n * n, bt.P.begin() + size_t(k) * n * n);
  std::copy(q.data(), q.data() + n, bt.q.begin() + size_t(k) * n);
  bt.set_A_dense(k, Ar.data());
  std::copy(b.data(), b.data() + m, bt.b.begin() + size_t(k) * m);
}

// problem k of g built around the optimum (x, y) with slack s: b = Ax + s and
// q = -Px - A'y make it optimal (s in K, y in K*, s'y = 0 are the caller's)
void put_known_optimum(GeneratedQps& g, int k, const Mat& P, const Mat& A, const Vec& x, const Vec& s,
                       const Vec& y) {
  const int n = g.batch.n, m = g.batch.m();
  const Vec b = A * x + s;
  const Vec q = -P * x - A.transpose() * y;
  put_problem(g.batch, k, P, q, A, b);
  std::copy(x.data(), x.data() + n, g.x_opt.begin() + size_t(k) * n);
  std::copy(y.data(), y.data() + m, g.y_opt.begin() + size_t(k) * m);
  g.obj_opt[k] = 0.5 * x.dot(P * x) + q.dot(x);
}

// dense pattern from the union of a few sample matrices' nonzeros
QpBatch<double> batch_with_union_pattern(int size, int n, ConeSpec cones,
                                         const std::vector<Mat>& samples) {
  const int m = cones.rows();
  std::vector<int> row_ptr(m + 1, 0), col;
  for (int r = 0; r < m; ++r) {
    for (int j = 0; j < n; ++j) {
      bool used = false;
      for (const Mat& s : samples) used = used || s(r, j) != 0.0;
      if (used) col.push_back(j);
    }
    row_ptr[r + 1] = static_cast<int>(col.size());
  }
  return QpBatch<double>::with_pattern(size, n, cones, std::move(row_ptr), std::move(col));
}

Eigen::Matrix3d skew(const Eigen::Vector3d& a) {
  Eigen::Matrix3d s;
  s << 0, -a.z(), a.y(), a.z(), 0, -a.x(), -a.y(), a.x(), 0;
  return s;
}

// a random cube state near the table and the contact quantities ContactNets uses
struct CubeContact {
  Eigen::Matrix<double, 24, 6> J;  // rows per contact: normal, tangent x, tangent y (μ folded)
  Eigen::Matrix<double, 6, 6> Minv;
  Eigen::Matrix<double, 8, 1> phi, phi_next;
  Eigen::Matrix<double, 6, 1> v, v_next, F;
};

CubeContact random_cube(std::mt19937_64& rng) {
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_real_distribution<double> ud(0.0, 1.0);
  const double h = 0.0524, mass = 0.37, mu = 0.18, dt = 1.0 / 148.0, g = 9.81;
  const double inertia = mass * (2 * h) * (2 * h) / 6.0;
  Eigen::Quaterniond quat(nd(rng), nd(rng), nd(rng), nd(rng));
  quat.normalize();
  const Eigen::Matrix3d R = quat.toRotationMatrix();
  // corners in the body frame; lowest corner within a few mm of the table
  std::vector<Eigen::Vector3d> corners;
  for (int i = 0; i < 8; ++i)
    corners.emplace_back((i & 1 ? h : -h), (i & 2 ? h : -h), (i & 4 ? h : -h));
  double lowest = 1e9;
  for (const auto& a : corners) lowest = std::min(lowest, (R * a).z());
  const double pz = -lowest + 0.004 * (ud(rng) - 0.3);
  CubeContact c;
  c.Minv.setZero();
  c.Minv.diagonal() << 1 / mass, 1 / mass, 1 / mass, 1 / inertia, 1 / inertia, 1 / inertia;
  for (int i = 0; i < 6; ++i) c.v(i) = (i < 3 ? 0.5 : 5.0) * nd(rng);
  // velocities change as if an impulse acted at the contacts, plus noise
  for (int i = 0; i < 8; ++i) {
    const Eigen::Vector3d& a = corners[i];
    Eigen::Matrix<double, 3, 6> Ji;
    Ji.leftCols<3>().setIdentity();
    Ji.rightCols<3>() = -R * skew(a);
    c.J.row(3 * i) = Ji.row(2);
    c.J.row(3 * i + 1) = mu * Ji.row(0);
    c.J.row(3 * i + 2) = mu * Ji.row(1);
    c.phi(i) = pz + (R * a).z();
  }
  Eigen::Matrix<double, 24, 1> lam;
  for (int i = 0; i < 8; ++i) {
    const double ln = c.phi(i) < 0.002 ? 0.05 * ud(rng) : 0.0;
    lam(3 * i) = ln;
    lam(3 * i + 1) = 0.7 * ln * nd(rng) / 1.5;
    lam(3 * i + 2) = 0.7 * ln * nd(rng) / 1.5;
  }
  Eigen::Matrix<double, 6, 1> grav = Eigen::Matrix<double, 6, 1>::Zero();
  grav(2) = -mass * g * dt;
  c.F = c.J.transpose() * lam;
  for (int i = 0; i < 6; ++i) c.F(i) += 0.01 * nd(rng);
  c.v_next = c.v + c.Minv * (c.F + grav);
  for (int i = 0; i < 8; ++i) c.phi_next(i) = c.phi(i) + dt * c.J.row(3 * i).dot(c.v_next);
  return c;
}

}  // namespace

GeneratedQps random_qp_batch(int size, int n, ConeSpec cones, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_real_distribution<double> ud(0.0, 1.0);
  const int m = cones.rows();
  GeneratedQps g;
  g.batch = QpBatch<double>::dense(size, n, cones);
  g.x_opt.resize(size_t(size) * n);
  g.y_opt.resize(size_t(size) * m);
  g.obj_opt.resize(size);
  for (int k = 0; k < size; ++k) {
    const int rank = 1 + static_cast<int>(ud(rng) * n);
    Mat G(rank, n), A(m, n);
    for (int i = 0; i < rank; ++i)
      for (int j = 0; j < n; ++j) G(i, j) = nd(rng);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) A(i, j) = nd(rng);
    Mat P = G.transpose() * G / double(n);
    P = 0.5 * (P + P.transpose());
    Vec x(n), s(m), y(m);
    for (int j = 0; j < n; ++j) x(j) = nd(rng);
    for (int i = 0; i < cones.n_zero; ++i) s(i) = 0, y(i) = nd(rng);
    for (int i = cones.n_zero; i < cones.soc_begin(); ++i) {
      if (ud(rng) < 0.5) {
        s(i) = 0, y(i) = ud(rng) + 0.1;  // active
      } else {
        s(i) = ud(rng) + 0.1, y(i) = 0;  // inactive
      }
    }
    for (int c = 0; c < cones.n_soc; ++c) {
      const int r = cones.soc_begin() + 3 * c;
      const double th = 2 * M_PI * ud(rng), a = ud(rng) + 0.1, bb = ud(rng) + 0.1;
      const double kind = ud(rng);
      if (kind < 0.4) {  // both on the boundary, opposite rays
        s(r) = a, s(r + 1) = a * std::cos(th), s(r + 2) = a * std::sin(th);
        y(r) = bb, y(r + 1) = -bb * std::cos(th), y(r + 2) = -bb * std::sin(th);
      } else if (kind < 0.7) {  // slack interior, dual zero
        s(r) = a + 0.5, s(r + 1) = a * std::cos(th), s(r + 2) = a * std::sin(th);
        y(r) = y(r + 1) = y(r + 2) = 0;
      } else {  // slack zero, dual interior
        s(r) = s(r + 1) = s(r + 2) = 0;
        y(r) = bb + 0.5, y(r + 1) = bb * std::cos(th), y(r + 2) = bb * std::sin(th);
      }
    }
    put_known_optimum(g, k, P, A, x, s, y);
  }
  return g;
}

GeneratedQps random_benchmark_batch(int size, const RandomQpShape& sh, uint64_t seed) {
  if (size < 1) throw Error("random QPs: the count must be at least 1, got " + std::to_string(size));
  if (sh.n < 1) throw Error("random QPs: n must be at least 1, got " + std::to_string(sh.n));
  if (sh.inequalities < 0 || sh.equalities < 0)
    throw Error("random QPs: the row counts must be >= 0, got " + std::to_string(sh.inequalities) + " and " +
                std::to_string(sh.equalities));
  if (sh.equalities > sh.n)
    throw Error("random QPs: " + std::to_string(sh.equalities) + " equality rows are more than n = " +
                std::to_string(sh.n) + " (they would rarely be consistent)");
  if (!(sh.density > 0 && sh.density <= 1))
    throw Error("random QPs: the density must be in (0, 1], got " + std::to_string(sh.density));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_real_distribution<double> ud(0.0, 1.0);
  const int n = sh.n, k = std::max(1, n / 2);
  ConeSpec cones;
  cones.n_zero = sh.equalities;
  cones.n_nonneg = sh.inequalities;
  const int m = cones.rows();
  // the pattern, shared by the batch: each entry with probability density, one per row at least
  std::vector<int> row_ptr(m + 1, 0), col;
  for (int r = 0; r < m; ++r) {
    const size_t first = col.size();
    for (int j = 0; j < n; ++j)
      if (sh.density >= 1 || ud(rng) < sh.density) col.push_back(j);
    if (col.size() == first) col.push_back(static_cast<int>(ud(rng) * n) % n);
    row_ptr[r + 1] = static_cast<int>(col.size());
  }
  GeneratedQps g;
  g.batch = QpBatch<double>::with_pattern(size, n, cones, row_ptr, col);
  g.x_opt.resize(size_t(size) * n);
  g.y_opt.resize(size_t(size) * m);
  g.obj_opt.resize(size);
  for (int p = 0; p < size; ++p) {
    Mat M = Mat::Zero(n, k), A = Mat::Zero(m, n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < k; ++j)
        if (sh.density >= 1 || ud(rng) < sh.density) M(i, j) = nd(rng);
    for (int r = 0; r < m; ++r)
      for (int e = row_ptr[r]; e < row_ptr[r + 1]; ++e) A(r, col[e]) = nd(rng);
    Mat P = M * M.transpose() / double(n) + 0.1 * Mat::Identity(n, n);
    P = 0.5 * (P + P.transpose());
    Vec x(n), s = Vec::Zero(m), y = Vec::Zero(m);
    for (int j = 0; j < n; ++j) x(j) = nd(rng);
    for (int i = 0; i < cones.n_zero; ++i) y(i) = nd(rng);
    for (int i = cones.n_zero; i < m; ++i) {
      if ((i - cones.n_zero) % 2 == 0)
        y(i) = ud(rng) + 0.1;  // active: s = 0
      else
        s(i) = ud(rng) + 0.1;  // inactive: y = 0
    }
    put_known_optimum(g, p, P, A, x, s, y);
  }
  return g;
}

GeneratedQps cube_loss_batch(int size, FrictionModel friction, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const double dt = 1.0 / 148.0, w_pred = 0.1, w_pen = 1.0;
  const int n = 32;
  ConeSpec cones;
  cones.n_nonneg = 24 + (friction == FrictionModel::kOctagon ? 64 : 0);
  cones.n_soc = friction == FrictionModel::kCone ? 8 : 0;
  const int m = cones.rows();
  // variable index of λ_n,i, λ_t,i (x, y) and slack_i
  auto in = [](int i) { return i; };
  auto it = [](int i, int d) { return 8 + 2 * i + d; };
  auto is = [](int i) { return 24 + i; };
  std::vector<Mat> Ps, As;
  std::vector<Vec> qs, bs;
  for (int k = 0; k < size; ++k) {
    const CubeContact c = random_cube(rng);
    // map from x to the 24 contact impulses in J's row order
    Mat S = Mat::Zero(24, n);
    for (int i = 0; i < 8; ++i) {
      S(3 * i, in(i)) = 1;
      S(3 * i + 1, it(i, 0)) = 1;
      S(3 * i + 2, it(i, 1)) = 1;
    }
    const Mat JS = c.J.transpose() * S;  // 6 x n: generalized impulse of x
    Mat P = Mat::Zero(n, n);
    Vec q = Vec::Zero(n);
    // prediction: w ‖M^{-1/2}(JSx − F)‖²
    const Mat Mih = c.Minv.cwiseSqrt();
    const Mat G = Mih * JS;
    P += 2 * w_pred * G.transpose() * G;
    q += -2 * w_pred * G.transpose() * (Mih * c.F);
    for (int i = 0; i < 8; ++i) {
      // activation φ(q')² ‖λ_i‖²
      const double a = c.phi_next(i) * c.phi_next(i) * 1e4;
      P(in(i), in(i)) += 2 * a;
      P(it(i, 0), it(i, 0)) += 2 * a;
      P(it(i, 1), it(i, 1)) += 2 * a;
      // dissipation ‖ ‖g‖ λ_t + λ_n g ‖² with g the tangential velocity
      const Eigen::Vector2d gv(c.J.row(3 * i + 1).dot(c.v_next), c.J.row(3 * i + 2).dot(c.v_next));
      Mat Bi = Mat::Zero(2, n);
      Bi(0, in(i)) = gv(0), Bi(1, in(i)) = gv(1);
      Bi(0, it(i, 0)) = gv.norm(), Bi(1, it(i, 1)) = gv.norm();
      P += 2 * Bi.transpose() * Bi;
      // penetration slack penalty
      P(is(i), is(i)) += 2 * w_pen;
    }
    Mat A = Mat::Zero(m, n);
    Vec b = Vec::Zero(m);
    int r = 0;
    for (int i = 0; i < 8; ++i, ++r) A(r, in(i)) = -1;  // λ_n ≥ 0
    for (int i = 0; i < 8; ++i, ++r) A(r, is(i)) = -1;  // slack ≥ 0
    const Mat JnMJ = c.J * c.Minv * JS;                  // 24 x n
    for (int i = 0; i < 8; ++i, ++r) {  // φ + dt J_n (v + M⁻¹ J S x) + slack ≥ 0
      A.row(r) = -dt * JnMJ.row(3 * i);
      A(r, is(i)) -= 1;
      b(r) = c.phi(i) + dt * c.J.row(3 * i).dot(c.v);
    }
    if (friction == FrictionModel::kOctagon) {
      for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j, ++r) {  // d_jᵀλ_t ≤ λ_n
          const double th = 2 * M_PI * j / 8;
          A(r, in(i)) = -1;
          A(r, it(i, 0)) = std::cos(th);
          A(r, it(i, 1)) = std::sin(th);
        }
    } else {
      for (int i = 0; i < 8; ++i) {  // (λ_n, λ_t) ∈ SOC
        A(r++, in(i)) = -1;
        A(r++, it(i, 0)) = -1;
        A(r++, it(i, 1)) = -1;
      }
    }
    P = 0.5 * (P + P.transpose());
    Ps.push_back(P), qs.push_back(q), As.push_back(A), bs.push_back(b);
  }
  GeneratedQps g;
  g.batch = batch_with_union_pattern(size, n, cones, As);
  for (int k = 0; k < size; ++k) put_problem(g.batch, k, Ps[k], qs[k], As[k], bs[k]);
  return g;
}

GeneratedQps anitescu_step_batch(int size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const double dt = 1.0 / 148.0, eps = 1e-6;
  const int n = 24;
  ConeSpec cones;
  cones.n_soc = 8;
  std::vector<Mat> Ps, As;
  std::vector<Vec> qs, bs;
  for (int k = 0; k < size; ++k) {
    const CubeContact c = random_cube(rng);
    // min ½λᵀ(J M⁻¹ Jᵀ + εI)λ + λᵀ(J v_free + [φ/dt; 0; 0])  s.t. λ_i ∈ SOC
    Eigen::Matrix<double, 6, 1> v_free = c.v;
    v_free(2) -= 9.81 * dt;
    Mat P = c.J * c.Minv * c.J.transpose() + eps * Mat::Identity(n, n);
    P = 0.5 * (P + P.transpose());
    Vec q = c.J * v_free;
    for (int i = 0; i < 8; ++i) q(3 * i) += c.phi(i) / dt;
    Mat A = -Mat::Identity(n, n);
    Ps.push_back(P), qs.push_back(q), As.push_back(A), bs.push_back(Vec::Zero(n));
  }
  GeneratedQps g;
  g.batch = batch_with_union_pattern(size, n, cones, As);
  for (int k = 0; k < size; ++k) put_problem(g.batch, k, Ps[k], qs[k], As[k], bs[k]);
  return g;
}

}  // namespace impulse
