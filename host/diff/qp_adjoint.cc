#include "host/diff/qp_adjoint.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "host/batch/parallel.h"
#include "solvers/error.h"

namespace impulse {
namespace {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vec = Eigen::VectorXd;

// the reduced system's directions (relative to its largest) that count as null:
// a solution accurate to the forward tolerance carries nothing along them
constexpr double kRankTol = 1e-10;

// One row group of the reduced system: a single row (a zero-cone or active
// nonnegative row, D = 0; or a cone's three rows at the polar cone, D = 0) or a
// cone on its boundary (three rows with their 3x3 D).
struct Group {
  int row = 0, rows = 1;
  bool boundary = false;
  double D[3][3] = {};
};

// the derivative of the projection onto {(t, z): ||z|| <= t} at u on the cone's
// boundary region (neither inside nor in the polar cone)
void soc_derivative(const double* u, double D[3][3]) {
  const double nz = std::hypot(u[1], u[2]);
  const double w[2] = {u[1] / nz, u[2] / nz};
  const double r = u[0] / nz;
  D[0][0] = 0.5;
  for (int i = 0; i < 2; ++i) {
    D[0][i + 1] = D[i + 1][0] = 0.5 * w[i];
    for (int j = 0; j < 2; ++j) D[i + 1][j + 1] = 0.5 * ((i == j ? 1 + r : 0) - r * w[i] * w[j]);
  }
}

// The reduced system when every group has D = 0 (no cone on its boundary):
//     [P  A'; -A  0] (lx, lu) = (r1, r2),   A = the groups' rows (k x n)
// whose minimum-norm least-squares solution is, where P is definite on A's null
// space (then the system's null space is {(0, v) : A'v = 0} and its range
// R^n x range(A)): A lx = c, the projection of c = -r2 onto range(A); then
// P lx + A' lu = r1 with lu in range(A). With A'Π = Q R (rank-revealing QR,
// Q = [Q1 Q2], rank ρ) and M = R's first ρ rows transposed (k x ρ, = U T):
//     lx = Q1 w1 + Q2 w2,  w1 = T⁻¹ U' Π'c,  (Q2'P Q2) w2 = Q2'(r1 - P Q1 w1),
//     lu = Π U T'⁻¹ Q1'(r1 - P lx).
// O(n k²) against O((n + k)³) for a factorization of the whole: the contact
// QPs' unused contacts make A's rows dependent in most problems. Returns false
// where P is not definite on the null space (the caller solves the whole).
bool solve_null_space(const Mat& P, const Mat& A, const Vec& r1, const Vec& r2, Vec& lx, Vec& lu, int& rank) {
  const int n = int(P.rows()), k = int(A.rows());
  Mat Q1, Q2, U, T;
  Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic> perm;
  int rho = 0;
  if (k > 0) {
    Eigen::ColPivHouseholderQR<Mat> qr;
    qr.setThreshold(kRankTol);
    qr.compute(A.transpose());
    rho = int(qr.rank());
    const Mat Q = qr.householderQ();
    Q1 = Q.leftCols(rho);
    Q2 = Q.rightCols(n - rho);
    perm = qr.colsPermutation();
    const Mat M = qr.matrixQR().topRows(rho).template triangularView<Eigen::Upper>().toDenseMatrix().transpose();
    Eigen::HouseholderQR<Mat> mq(M);
    U = mq.householderQ() * Mat::Identity(k, rho);
    T = mq.matrixQR().topRows(rho).template triangularView<Eigen::Upper>();
  } else {
    Q2 = Mat::Identity(n, n);
  }
  rank = rho;
  Vec w1 = Vec::Zero(rho);
  if (rho > 0) {
    const Vec t = U.transpose() * (perm.transpose() * (-r2));
    w1 = T.topLeftCorner(rho, rho).triangularView<Eigen::Upper>().solve(t);
  }
  Vec w2 = Vec::Zero(n - rho);
  const Vec Pq1w1 = rho > 0 ? Vec(P * (Q1 * w1)) : Vec::Zero(n);
  if (n - rho > 0) {
    const Mat H = Q2.transpose() * P * Q2;
    Eigen::LLT<Mat> llt(H);
    if (llt.info() != Eigen::Success || !(llt.rcond() > kRankTol)) return false;
    w2 = llt.solve(Q2.transpose() * (r1 - Pq1w1));
  }
  lx = (rho > 0 ? Vec(Q1 * w1) : Vec::Zero(n)) + Q2 * w2;
  lu = Vec::Zero(k);
  if (rho > 0) {
    const Vec h = Q1.transpose() * (r1 - P * lx);
    const Vec sv = T.topLeftCorner(rho, rho).transpose().triangularView<Eigen::Lower>().solve(h);
    lu = perm * (U * sv);
  }
  return lx.allFinite() && lu.allFinite();
}

// The same system where it is regular and well conditioned (the common case: P
// definite, the active rows independent), by Cholesky factors instead of the
// rank-revealing QRs: with P = L L', W = L⁻¹A' (n x k) and h = L⁻¹r1,
//     (W'W) lu = W'h + r2,   lx = L'⁻¹(h - W lu),
// O(n³/3 + n²k + nk²/2 + k³/3) with no orthogonal factor formed (a quarter of
// solve_null_space's work on the random QPs, n 32). The solution is then unique,
// so both solves give it up to rounding. Returns false, leaving the work to
// solve_null_space, where P is not definite or W'W's reciprocal condition is below
// kSchurTol (W's singular values spread over 1e4: the active rows dependent or
// nearly so, as at the contact QPs' unused contacts), where rank decisions and the
// minimum-norm choice matter.
constexpr double kSchurTol = 1e-8;

struct SchurWork {
  Eigen::LLT<Mat> llt_p, llt_s;
  Eigen::CompleteOrthogonalDecomposition<Mat> cod;
  Mat W, S;
  Vec h, t;
};

bool solve_schur(const Mat& P, const Mat& A, const Vec& r1, const Vec& r2, Vec& lx, Vec& lu, int& rank,
                 SchurWork& w) {
  const int k = int(A.rows());
  w.llt_p.compute(P);
  if (w.llt_p.info() != Eigen::Success || !(w.llt_p.rcond() > kRankTol)) return false;
  const auto L = w.llt_p.matrixL();
  w.h = L.solve(r1);
  if (k == 0) {
    rank = 0;
    lx = w.llt_p.matrixU().solve(w.h);
    lu.resize(0);
    return lx.allFinite();
  }
  w.W = A.transpose();
  L.solveInPlace(w.W);
  w.S.resize(k, k);
  w.S.setZero();
  w.S.selfadjointView<Eigen::Lower>().rankUpdate(w.W.transpose());
  w.t.noalias() = w.W.transpose() * w.h;
  w.t += r2;
  w.llt_s.compute(w.S);
  rank = k;
  if (w.llt_s.info() == Eigen::Success && w.llt_s.rcond() > kSchurTol) {
    lu = w.llt_s.solve(w.t);
  } else {
    // dependent rows: lx is still unique (P definite) and lu the minimum-norm
    // solution, (W'W)⁺ t, which lies in range(W') = range(A). With r2 = 0 (no
    // gradient of y on the rows that stay) that is W⁺h, the minimum-norm least-
    // squares solution of W lu = h; otherwise the least-squares sense of an
    // inconsistent system is solve_null_space's.
    if (!r2.isZero()) return false;
    w.cod.setThreshold(kRankTol);
    w.cod.compute(w.W);
    rank = int(w.cod.rank());
    lu = w.cod.solve(w.h);
  }
  w.h.noalias() -= w.W * lu;
  lx = w.llt_p.matrixU().solve(w.h);
  return lx.allFinite() && lu.allFinite();
}

template <class T>
bool finite(const T* a, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (!std::isfinite(double(a[i]))) return false;
  return true;
}

struct Scratch {
  std::vector<Group> groups;
  std::vector<double> s, u;
  Mat K, Pm, Am;
  Vec r, z, lu;
  SchurWork schur;
};

// One problem's inputs and outputs in the batch (outputs null where not asked).
template <class T>
struct Problem {
  int n, m;
  const T *P, *A, *b, *x, *y, *gx, *gy;
  double gv;
  T *gP, *gq, *gA, *gb;
};

template <class T>
Problem<T> problem_of(const QpAdjointBatch<T>& in, const QpAdjointOut<T>& out, int k) {
  const int n = in.n, m = in.m();
  Problem<T> p{n, m, in.P + size_t(k) * n * n, in.A + size_t(k) * m * n, in.b + size_t(k) * m,
               in.x + size_t(k) * n, in.y + size_t(k) * m,
               in.gx ? in.gx + size_t(k) * n : nullptr, in.gy ? in.gy + size_t(k) * m : nullptr,
               in.gv ? double(in.gv[k]) : 0.0,
               out.gP ? out.gP + size_t(k) * n * n : nullptr, out.gq ? out.gq + size_t(k) * n : nullptr,
               out.gA ? out.gA + size_t(k) * m * n : nullptr, out.gb ? out.gb + size_t(k) * m : nullptr};
  return p;
}

template <class T>
bool finite_inputs(const Problem<T>& p, const T* gv) {
  const int n = p.n, m = p.m;
  return finite(p.P, size_t(n) * n) && finite(p.A, size_t(m) * n) && finite(p.b, size_t(m)) && finite(p.x, size_t(n)) &&
         finite(p.y, size_t(m)) && (!p.gx || finite(p.gx, size_t(n))) && (!p.gy || finite(p.gy, size_t(m))) &&
         (!gv || finite(gv, 1));
}

template <class T>
void fill_nan(const Problem<T>& p) {
  const T nan = T(NAN);
  const int n = p.n, m = p.m;
  if (p.gP) std::fill(p.gP, p.gP + size_t(n) * n, nan);
  if (p.gq) std::fill(p.gq, p.gq + n, nan);
  if (p.gA) std::fill(p.gA, p.gA + size_t(m) * n, nan);
  if (p.gb) std::fill(p.gb, p.gb + m, nan);
}

// u = s − y with s = b − Ax, and the row groups that stay: D = 0 rows and boundary
// cones (D = 1 rows have lu = 0). Returns the reduced system's size, n + their rows.
template <class T>
int active_groups(const Problem<T>& p, const ConeSpec& c, double eps, Scratch& w) {
  const int n = p.n, m = p.m;
  w.s.assign(m, 0.0);
  w.u.assign(m, 0.0);
  double ymax = 1.0;
  for (int i = 0; i < m; ++i) {
    double ax = 0;
    for (int j = 0; j < n; ++j) ax += double(p.A[size_t(i) * n + j]) * double(p.x[j]);
    w.s[i] = double(p.b[i]) - ax;
    w.u[i] = w.s[i] - double(p.y[i]);
    ymax = std::max(ymax, std::abs(double(p.y[i])));
  }
  const double tol = 10 * eps * ymax;
  w.groups.clear();
  for (int i = 0; i < c.n_zero; ++i) w.groups.push_back(Group{i, 1, false, {}});
  for (int i = c.n_zero; i < c.n_zero + c.n_nonneg; ++i)
    if (!(w.u[i] > -tol)) w.groups.push_back(Group{i, 1, false, {}});
  for (int cone = 0; cone < c.n_soc; ++cone) {
    const int r0 = c.soc_begin() + 3 * cone;
    const double* uc = &w.u[r0];
    const double nz = std::hypot(uc[1], uc[2]);
    if (nz <= uc[0]) continue;  // inside: D = I
    Group g{r0, 3, false, {}};
    if (!(nz <= -uc[0])) {
      g.boundary = true;
      soc_derivative(uc, g.D);
    }
    w.groups.push_back(g);
  }
  int extra = 0;
  for (const Group& g : w.groups) extra += g.rows;
  return n + extra;
}

// the whole reduced system, J' restricted to (lx, lu of the groups):
// [P  A_G'; (D - I) A_G  D_G], for the factorizations when the null-space solve does not apply
template <class T>
void assemble_whole(const Problem<T>& p, int N, Scratch& w) {
  const int n = p.n;
  w.K.setZero(N, N);
  w.r.setZero(N);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) w.K(i, j) = double(p.P[size_t(i) * n + j]);
    w.r[i] = p.gx ? double(p.gx[i]) : 0.0;
  }
  int col = n;
  for (const Group& g : w.groups) {
    for (int a = 0; a < g.rows; ++a) {
      const int row = g.row + a, eq = col + a;
      for (int j = 0; j < n; ++j) {
        const double Aij = double(p.A[size_t(row) * n + j]);
        w.K(j, eq) = Aij;  // A_G' in the first block row
        if (!g.boundary) w.K(eq, j) = -Aij;  // (D - I) A with D = 0
      }
      if (g.boundary) {
        for (int j = 0; j < n; ++j) {
          double v = 0;
          for (int bb = 0; bb < 3; ++bb)
            v += (g.D[a][bb] - (a == bb ? 1.0 : 0.0)) * double(p.A[size_t(g.row + bb) * n + j]);
          w.K(eq, j) = v;
        }
        for (int bb = 0; bb < 3; ++bb) w.K(eq, col + bb) = g.D[a][bb];
      }
      // the right side's second block: (D - I) gy on the group's rows
      double rr = 0;
      if (p.gy) {
        if (g.boundary)
          for (int bb = 0; bb < 3; ++bb) rr += (g.D[a][bb] - (a == bb ? 1.0 : 0.0)) * double(p.gy[g.row + bb]);
        else
          rr = -double(p.gy[row]);
      }
      w.r[eq] = rr;
    }
    col += g.rows;
  }
}

// The null-space solve (solve_null_space, or solve_schur where P is definite) on the
// system's symmetric form. A cone on its boundary enters through its projection
// derivative's eigen-directions (D = V diag(0, 1, (1 + r)/2) V', v0 = (1, -w)/√2,
// v1 = (1, w)/√2, v2 = (0, w⊥)): in μ = V'lu_c its rows read (λ - 1) v'A_c lx + λ μ =
// (λ - 1) v'gy, so v0 is an active row (a = v0'A_c), v1 has μ = 0, and v2's μ =
// c (a2 lx - v2'gy) with c = (1 - λ)/λ, which adds c a2'a2 to P and c a2' v2'gy to the
// first right side. lx being unique there (solve_null_space's condition), the
// minimum-norm solution is the one with μ0 minimum-norm. False where neither applies;
// else w.z holds (lx, lu of the groups) and least_squares whether the rows were dependent.
template <class T>
bool solve_reduced(const Problem<T>& p, int N, Scratch& w, bool& least_squares) {
  const int n = p.n;
  int kr = 0;
  for (const Group& g : w.groups) kr += g.boundary ? 1 : g.rows;
  w.Pm.resize(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) w.Pm(i, j) = double(p.P[size_t(i) * n + j]);
  w.Am.resize(kr, n);
  Vec r1(n), r2(kr);
  for (int i = 0; i < n; ++i) r1[i] = p.gx ? double(p.gx[i]) : 0.0;
  struct Dir {
    double v0[3], v2[3], c, a2y;
  };
  std::vector<Dir> dirs;
  int row = 0;
  for (const Group& g : w.groups) {
    if (!g.boundary) {
      for (int a = 0; a < g.rows; ++a, ++row) {
        for (int j = 0; j < n; ++j) w.Am(row, j) = double(p.A[size_t(g.row + a) * n + j]);
        r2[row] = p.gy ? -double(p.gy[g.row + a]) : 0.0;
      }
      continue;
    }
    const double* uc = &w.u[g.row];
    const double nz = std::hypot(uc[1], uc[2]);
    const double wv[2] = {uc[1] / nz, uc[2] / nz};
    const double lam = 0.5 * (1 + uc[0] / nz);
    const double h = std::sqrt(0.5);
    Dir d{{h, -h * wv[0], -h * wv[1]}, {0.0, -wv[1], wv[0]}, (1 - lam) / lam, 0.0};
    Vec a2 = Vec::Zero(n);
    double gy0 = 0, gy2 = 0;
    w.Am.row(row).setZero();
    for (int bb = 0; bb < 3; ++bb) {
      const T* Ar = &p.A[size_t(g.row + bb) * n];
      for (int j = 0; j < n; ++j) {
        w.Am(row, j) += d.v0[bb] * double(Ar[j]);
        a2[j] += d.v2[bb] * double(Ar[j]);
      }
      if (p.gy) {
        gy0 += d.v0[bb] * double(p.gy[g.row + bb]);
        gy2 += d.v2[bb] * double(p.gy[g.row + bb]);
      }
    }
    r2[row] = -gy0;
    w.Pm.noalias() += d.c * a2 * a2.transpose();
    r1 += (d.c * gy2) * a2;
    d.a2y = gy2;
    dirs.push_back(d);
    ++row;
  }
  Vec lx, lu;
  int rank = 0;
  if (!solve_schur(w.Pm, w.Am, r1, r2, lx, lu, rank, w.schur) && !solve_null_space(w.Pm, w.Am, r1, r2, lx, lu, rank))
    return false;
  w.z.resize(N);
  w.z.head(n) = lx;
  int gc = n, r = 0, bi = 0;
  for (const Group& g : w.groups) {
    if (!g.boundary) {
      for (int a = 0; a < g.rows; ++a) w.z[gc + a] = lu[r++];
    } else {
      const Dir& d = dirs[size_t(bi++)];
      double a2lx = 0;
      for (int bb = 0; bb < 3; ++bb) {
        const T* Ar = &p.A[size_t(g.row + bb) * n];
        double t = 0;
        for (int j = 0; j < n; ++j) t += double(Ar[j]) * lx[j];
        a2lx += d.v2[bb] * t;
      }
      const double mu0 = lu[r++], mu2 = d.c * (a2lx - d.a2y);
      for (int bb = 0; bb < 3; ++bb) w.z[gc + bb] = d.v0[bb] * mu0 + d.v2[bb] * mu2;
    }
    gc += g.rows;
  }
  least_squares = rank < kr;
  return true;
}

// The whole reduced system (assemble_whole) by LU where it is well conditioned; where it
// is singular or nearly so (a degenerate solution: more rows at their bound than the
// variables fix, or P singular on the active rows' null space) LU's answer is a solution
// of arbitrary size along the null space (1e37 was seen), so the minimum-norm least-
// squares one is taken, with the directions below kRankTol of the largest treated as null.
// Returns whether it took least squares.
bool solve_whole(Scratch& w) {
  Eigen::PartialPivLU<Mat> lu(w.K);
  w.z = lu.solve(w.r);
  const double scale = w.K.cwiseAbs().rowwise().sum().maxCoeff() * w.z.cwiseAbs().maxCoeff() + w.r.cwiseAbs().maxCoeff();
  const double resid = (w.K * w.z - w.r).cwiseAbs().maxCoeff();
  if (w.z.allFinite() && resid <= 1e-10 * scale && lu.rcond() > kRankTol) return false;
  Eigen::CompleteOrthogonalDecomposition<Mat> cod;
  cod.setThreshold(kRankTol);
  cod.compute(w.K);
  w.z = cod.solve(w.r);
  return true;
}

// the gradients from (lx, lu) = w.z and the value's terms (envelope: gv)
template <class T>
void write_gradients(const Problem<T>& p, Scratch& w) {
  const int n = p.n, m = p.m;
  // lu on every row (0 where D = 1)
  w.lu.setZero(m);
  int col = n;
  for (const Group& g : w.groups) {
    for (int a = 0; a < g.rows; ++a) w.lu[g.row + a] = w.z[col + a];
    col += g.rows;
  }
  const double gv = p.gv;
  if (p.gq)
    for (int i = 0; i < n; ++i) p.gq[i] = T(-w.z[i] + gv * double(p.x[i]));
  if (p.gb)
    for (int i = 0; i < m; ++i) p.gb[i] = T(w.lu[i] - gv * double(p.y[i]));
  for (int i = 0; p.gP && i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const double xi = double(p.x[i]), xj = double(p.x[j]);
      // 1/2 (G + G') of G = -lx x' + 1/2 gv x x'
      p.gP[size_t(i) * n + j] = T(-0.5 * (w.z[i] * xj + w.z[j] * xi) + 0.5 * gv * xi * xj);
    }
  for (int i = 0; p.gA && i < m; ++i)
    for (int j = 0; j < n; ++j)
      p.gA[size_t(i) * n + j] =
          T(-double(p.y[i]) * w.z[j] - w.lu[i] * double(p.x[j]) + gv * double(p.y[i]) * double(p.x[j]));
}

// 0: solved; 1: by least squares; 2: a non-finite input (NaN gradients)
template <class T>
int one_problem(const QpAdjointBatch<T>& in, const QpAdjointOut<T>& out, int k, Scratch& w, int& unknowns) {
  const Problem<T> p = problem_of(in, out, k);
  if (!finite_inputs(p, in.gv ? in.gv + k : nullptr)) {
    fill_nan(p);
    unknowns = 0;
    return 2;
  }
  const int N = active_groups(p, in.cones, in.eps, w);
  unknowns = N;
  bool least_squares = false;
  if (!p.gx && !p.gy) {
    w.z.setZero(N);  // no gradient of x or y: only the value's terms
  } else if (!solve_reduced(p, N, w, least_squares)) {
    assemble_whole(p, N, w);
    least_squares = solve_whole(w);
  }
  write_gradients(p, w);
  return least_squares ? 1 : 0;
}

}  // namespace

template <class T>
QpAdjointInfo qp_adjoint_batch(const QpAdjointBatch<T>& in, const QpAdjointOut<T>& out, int threads) {
  if (in.size < 0) throw Error("qp adjoint: the batch size is negative (" + std::to_string(in.size) + ")");
  if (in.n < 1) throw Error("qp adjoint: n must be at least 1, got " + std::to_string(in.n));
  if (in.cones.n_zero < 0 || in.cones.n_nonneg < 0 || in.cones.n_soc < 0)
    throw Error("qp adjoint: negative cone counts");
  if (!(in.eps > 0)) throw Error("qp adjoint: eps must be positive");
  QpAdjointInfo info;
  if (in.size == 0) return info;
  const struct {
    const void* p;
    const char* name;
  } need[] = {{in.P, "P"}, {in.A, "A"}, {in.b, "b"}, {in.x, "x"}, {in.y, "y"}};
  for (const auto& a : need)
    if (!a.p) throw Error(std::string("qp adjoint: ") + a.name + " is missing");
  const int workers = resolve_threads(threads);
  std::vector<Scratch> scratch(workers);
  std::vector<char> lsq(in.size, 0);
  std::vector<int> unknowns(in.size, 0);
  parallel_for(in.size, workers, [&](int worker, int begin, int end) {
    for (int k = begin; k < end; ++k) lsq[k] = one_problem(in, out, k, scratch[worker], unknowns[k]);
  });
  for (int k = 0; k < in.size; ++k) {
    info.least_squares += lsq[k] == 1;
    info.not_finite += lsq[k] == 2;
    info.largest_system = std::max(info.largest_system, unknowns[k]);
  }
  return info;
}

template QpAdjointInfo qp_adjoint_batch<double>(const QpAdjointBatch<double>&, const QpAdjointOut<double>&, int);
template QpAdjointInfo qp_adjoint_batch<float>(const QpAdjointBatch<float>&, const QpAdjointOut<float>&, int);

}  // namespace impulse
