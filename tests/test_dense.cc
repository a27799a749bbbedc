// The small dense kernels under the QP solver, against Eigen: the SPD inverse
// (Gauss-Jordan on contiguous storage, Cholesky + inverse on batch-strided
// views), the Cholesky factor, the finite-value scan, and the products of the
// dense ADMM iteration (column-major matrix-vector product, row combination).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "solvers/dense.h"

namespace impulse {
namespace {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// a random SPD matrix with condition number about 1e4
Mat random_spd(int n, std::mt19937_64& rng) {
  std::normal_distribution<double> g;
  Mat Q = Mat::NullaryExpr(n, n, [&]() { return g(rng); });
  Eigen::HouseholderQR<Mat> qr(Q);
  const Mat U = qr.householderQ();
  Eigen::VectorXd ev(n);
  for (int i = 0; i < n; ++i) ev(i) = std::pow(1e4, double(i) / std::max(1, n - 1)) * 1e-2;
  return U * ev.asDiagonal() * U.transpose();
}

// every size with a fixed-size copy (8, 16, 24, 32, 48, 64) and some without
TEST(DenseKernels, SpdInverseMatchesEigenOnContiguousAndStridedStorage) {
  std::mt19937_64 rng(7);
  for (int n : {1, 3, 8, 13, 16, 24, 31, 32, 33, 48, 64}) {
    const Mat K = random_spd(n, rng);
    const Mat ref = K.inverse();
    // contiguous: only the lower triangle is read (garbage above it)
    std::vector<double> a(size_t(n) * n), scratch(size_t(n) * n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) a[size_t(i) * n + j] = j <= i ? K(i, j) : 1e300;
    ASSERT_TRUE(spd_inverse_in_place(n, unit_view(a.data()), unit_view(scratch.data()))) << n;
    // batch-strided (the GPU's layout): problem 1 of a batch of 3
    const int B = 3;
    std::vector<double> s(size_t(n) * n * B, 0.0), ss(size_t(n) * n * B);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j <= i; ++j) s[size_t(i * n + j) * B + 1] = K(i, j);
    ASSERT_TRUE(spd_inverse_in_place(n, strided_view(s.data() + 1, B), strided_view(ss.data() + 1, B)));
    const double tol = 1e-10 * ref.cwiseAbs().maxCoeff();
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        EXPECT_NEAR(a[size_t(i) * n + j], ref(i, j), tol) << "n " << n << " (" << i << "," << j << ")";
        EXPECT_NEAR(s[size_t(i * n + j) * B + 1], ref(i, j), tol) << "n " << n << " strided";
      }
  }
}

TEST(DenseKernels, SpdInverseAndCholeskyRejectIndefiniteMatrices) {
  std::mt19937_64 rng(8);
  for (int n : {2, 8, 32, 33}) {
    Mat K = random_spd(n, rng);
    K(n - 1, n - 1) = -1.0;  // the last pivot goes negative
    std::vector<double> a(K.data(), K.data() + size_t(n) * n), b = a, scratch(size_t(n) * n);
    EXPECT_FALSE(spd_inverse_in_place(n, unit_view(a.data()), unit_view(scratch.data()))) << n;
    EXPECT_FALSE(cholesky_in_place(n, unit_view(b.data()))) << n;
    std::vector<double> c(K.data(), K.data() + size_t(n) * n);
    c[0] = std::numeric_limits<double>::quiet_NaN();
    EXPECT_FALSE(cholesky_in_place(n, unit_view(c.data()))) << n;
  }
}

// factor layout: L below the diagonal, Lᵀ above, 1/L_ii on the diagonal
TEST(DenseKernels, CholeskyMatchesEigenAndSolves) {
  std::mt19937_64 rng(9);
  for (int n : {1, 5, 8, 17, 32, 40}) {
    const Mat K = random_spd(n, rng);
    const Mat L = K.llt().matrixL();
    std::vector<double> a(K.data(), K.data() + size_t(n) * n);
    ASSERT_TRUE(cholesky_in_place(n, unit_view(a.data())));
    const double tol = 1e-12 * L.cwiseAbs().maxCoeff();
    for (int i = 0; i < n; ++i) {
      EXPECT_NEAR(a[size_t(i) * n + i], 1.0 / L(i, i), 1e-12 / L(i, i)) << n;
      for (int j = 0; j < i; ++j) {
        EXPECT_NEAR(a[size_t(i) * n + j], L(i, j), tol) << n;
        EXPECT_NEAR(a[size_t(j) * n + i], L(i, j), tol) << n;
      }
    }
    Eigen::VectorXd r = Eigen::VectorXd::LinSpaced(n, -1.0, 2.0), x = r;
    cholesky_solve_in_place(n, unit_view<const double>(a.data()), unit_view(x.data()));
    EXPECT_LT((K * x - r).lpNorm<Eigen::Infinity>(), 1e-9 * (1.0 + r.lpNorm<Eigen::Infinity>()));
  }
}

// The PSD test of the input check: a matrix with eigenvalue −s is accepted
// exactly when the shift exceeds s (a rank-deficient PSD matrix with any
// positive shift), on contiguous storage (full copy, no mirrors) and on
// strided views alike, for every fixed-size copy and odd sizes.
TEST(DenseKernels, PsdTestSeparatesAtTheShift) {
  std::mt19937_64 rng(17);
  std::normal_distribution<double> g;
  for (int n : {1, 3, 8, 13, 16, 24, 31, 32, 33, 48, 64}) {
    Mat Q = Mat::NullaryExpr(n, n, [&]() { return g(rng); });
    const Mat U = Eigen::HouseholderQR<Mat>(Q).householderQ();
    for (double low : {1e-3, 0.0, -1e-3, -0.5}) {  // the smallest eigenvalue
      Eigen::VectorXd ev(n);
      for (int i = 0; i < n; ++i) ev(i) = i == 0 ? low : 1.0 + i;
      Mat M = U * ev.asDiagonal() * U.transpose();
      M = 0.5 * (M + M.transpose()).eval();
      std::vector<double> m(M.data(), M.data() + size_t(n) * n), scratch(size_t(n) * n);
      for (double shift : {1e-6, 1e-2}) {
        const bool expect = low + shift > 1e-9 * n;  // clear of rounding either way
        if (std::abs(low + shift) < 1e-7) continue;
        EXPECT_EQ(psd_up_to(n, unit_view<const double>(m.data()), shift, unit_view(scratch.data())),
                  expect)
            << "n " << n << " lowest eigenvalue " << low << " shift " << shift;
        EXPECT_EQ(psd_up_to(n, strided_view<const double>(m.data(), 1), shift,
                            strided_view(scratch.data(), 1)),
                  expect)
            << "strided, n " << n << " lowest eigenvalue " << low << " shift " << shift;
      }
      EXPECT_EQ(m, std::vector<double>(M.data(), M.data() + size_t(n) * n));  // input untouched
    }
  }
}

// max |M_ij| and max |M_ij − M_ji| on contiguous storage (fixed-size copies
// included) equal a plain double loop, wherever the largest entry and the
// asymmetry are put
TEST(DenseKernels, AbsmaxAndAsymmetryMatchAPlainLoop) {
  std::mt19937_64 rng(19);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int n : {1, 2, 5, 8, 16, 24, 31, 32, 33, 48, 64}) {
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<double> m(size_t(n) * n);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j <= i; ++j) m[size_t(i) * n + j] = m[size_t(j) * n + i] = u(rng);
      std::uniform_int_distribution<int> pick(0, n - 1);
      const int i = pick(rng), j = pick(rng);
      m[size_t(i) * n + j] += trial * 0.25;  // asymmetric unless i == j or trial 0
      m[size_t(pick(rng)) * n + pick(rng)] = -3.0 * trial;
      double amax = 0, asym = 0;
      for (int r = 0; r < n; ++r)
        for (int c = 0; c < n; ++c) {
          amax = std::max(amax, std::abs(m[size_t(r) * n + c]));
          asym = std::max(asym, std::abs(m[size_t(r) * n + c] - m[size_t(c) * n + r]));
        }
      double a = -1, s = -1;
      absmax_and_asymmetry(n, unit_view<const double>(m.data()), a, s);
      EXPECT_EQ(a, amax) << "n " << n;
      EXPECT_EQ(s, asym) << "n " << n;
      absmax_and_asymmetry(n, strided_view<const double>(m.data(), 1), a, s);
      EXPECT_EQ(a, amax) << "strided, n " << n;
      EXPECT_EQ(s, asym) << "strided, n " << n;
    }
  }
}

TEST(DenseKernels, AllFiniteFindsNanAndInfAnywhere) {
  const double bad[] = {std::numeric_limits<double>::quiet_NaN(),
                        std::numeric_limits<double>::infinity(),
                        -std::numeric_limits<double>::infinity()};
  for (int len : {1, 7, 8, 9, 33, 100}) {
    std::vector<double> v(size_t(len), 1.5e300);  // large but finite
    EXPECT_TRUE(all_finite(len, unit_view<const double>(v.data())));
    EXPECT_TRUE(all_finite(len, strided_view<const double>(v.data(), 1)));
    for (int pos : {0, len / 2, len - 1})
      for (double b : bad) {
        std::vector<double> w = v;
        w[size_t(pos)] = b;
        EXPECT_FALSE(all_finite(len, unit_view<const double>(w.data()))) << len << " at " << pos;
        EXPECT_FALSE(all_finite(len, strided_view<const double>(w.data(), 1))) << len << " at " << pos;
      }
  }
  std::vector<float> f(21, 3e38f);
  EXPECT_TRUE(all_finite(21, unit_view<const float>(f.data())));
  f[20] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(all_finite(21, unit_view<const float>(f.data())));
}

// every chunk path (32-row and 16-row chunks, column counts not multiples of
// the accumulator groups), in both precisions
TEST(DenseKernels, ColumnMajorProductMatchesEigen) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> g;
  for (int rows : {1, 5, 16, 20, 32, 33, 48, 88, 96}) {
    for (int cols : {1, 2, 3, 7, 32, 121}) {
      const int ld = (rows + 15) / 16 * 16;
      Eigen::MatrixXd M = Eigen::MatrixXd::NullaryExpr(rows, cols, [&]() { return g(rng); });
      Eigen::VectorXd u = Eigen::VectorXd::NullaryExpr(cols, [&]() { return g(rng); });
      std::vector<double> Md(size_t(ld) * cols, 0.0), ud(u.data(), u.data() + cols), out(ld, 7.0);
      std::vector<float> Mf(size_t(ld) * cols, 0.0f), uf(cols), outf(ld, 7.0f);
      for (int j = 0; j < cols; ++j) {
        uf[j] = float(u(j));
        for (int i = 0; i < rows; ++i) Md[size_t(j) * ld + i] = M(i, j), Mf[size_t(j) * ld + i] = float(M(i, j));
      }
      gemv_colmajor(rows, ld, cols, Md.data(), ud.data(), out.data());
      gemv_colmajor(rows, ld, cols, Mf.data(), uf.data(), outf.data());
      const Eigen::VectorXd ref = M * u;
      const double scale = M.cwiseAbs().maxCoeff() * u.cwiseAbs().sum();
      for (int i = 0; i < rows; ++i) {
        EXPECT_NEAR(out[i], ref(i), 1e-14 * scale) << rows << "x" << cols << " row " << i;
        EXPECT_NEAR(outf[i], ref(i), 1e-6 * scale) << rows << "x" << cols << " row " << i;
      }
      for (int i = rows; i < ld; ++i) EXPECT_EQ(out[i], 0.0) << "padding row " << i;
    }
  }
}

TEST(DenseKernels, RowCombinationMatchesEigen) {
  std::mt19937_64 rng(12);
  std::normal_distribution<double> g;
  for (int n : {1, 3, 16, 20, 32, 64}) {
    Mat M = Mat::NullaryExpr(n, n, [&]() { return g(rng); });
    for (int cnt : {0, 1, 2, 3, 4, 5, 8, 9, 25}) {
      std::vector<int> idx(cnt);
      std::vector<double> vals(cnt);
      Eigen::VectorXd ref = Eigen::VectorXd::Zero(n), ref_first = Eigen::VectorXd::Zero(n);
      for (int k = 0; k < cnt; ++k) {
        idx[k] = int(rng() % unsigned(n));
        vals[k] = g(rng);
        ref += vals[k] * M.row(idx[k]).transpose();
        if (k < n) ref_first += vals[k] * M.row(k).transpose();
      }
      std::vector<double> out(n, 7.0), out_first(n, 7.0);
      combine_rows(n, idx.data(), vals.data(), cnt, M.data(), out.data());
      const int first = std::min(cnt, n);  // idx == nullptr: rows 0 .. cnt-1
      combine_rows(n, static_cast<const int*>(nullptr), vals.data(), first, M.data(), out_first.data());
      for (int i = 0; i < n; ++i) {
        EXPECT_NEAR(out[i], ref(i), 1e-13 * (1.0 + cnt)) << "n " << n << " cnt " << cnt;
        EXPECT_NEAR(out_first[i], ref_first(i), 1e-13 * (1.0 + cnt)) << "n " << n << " cnt " << cnt;
      }
    }
  }
}

// the column norms of c·D M D that the Ruiz passes take: the contiguous
// version (four rows per pass) against a plain loop; maxima are exact, so
// the two agree bitwise
TEST(DenseKernels, ScaledColumnNormsMatchAPlainLoop) {
  std::mt19937_64 rng(13);
  std::normal_distribution<double> g;
  for (int n : {1, 3, 4, 7, 32, 33}) {
    std::vector<double> M(size_t(n) * n), D(n), out(n);
    for (double& v : M) v = g(rng);
    for (double& v : D) v = std::exp(g(rng));
    const double c = 0.37;
    dense_col_absmax_scaled(n, unit_view<const double>(M.data()), unit_view<const double>(D.data()),
                            c, unit_view(out.data()));
    for (int j = 0; j < n; ++j) {
      double mx = 0.0;
      for (int i = 0; i < n; ++i) mx = std::max(mx, std::abs(M[size_t(i) * n + j]) * D[i]);
      EXPECT_EQ(out[j], mx * (c * D[j])) << "n " << n << " column " << j;
    }
  }
}

}  // namespace
}  // namespace impulse
