// The forms users hold QPs in: QPS files (io/qps.h) and OSQP's two-sided rows
// (host/batch/qp_forms.h), read, converted to the conic batch, solved, and the
// multipliers mapped back; checked against hand-derived optima, the KKT
// conditions of the user's form, and a round trip of the Maros–Meszaros batch
// files through QPS text.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/batch/qp_batch.h"
#include "host/batch/qp_file.h"
#include "host/batch/qp_forms.h"
#include "io/npz.h"
#include "io/qps.h"
#include "solvers/error.h"
#include "tests/test_util.h"

namespace impulse {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string write_text(const std::string& name, const std::string& text) {
  const std::string dir = testing::fresh_dir("qps_", name);
  const std::string path = dir + "/" + name + ".qps";
  std::ofstream(path) << text;
  return path;
}

// a QPS file of tests/qps/ (tests/check_forms.py reads the same ones)
std::string fixture(const std::string& name) { return std::string(IMPULSE_SOURCE_DIR) + "/tests/qps/" + name; }

// the message read_qps throws for this text ("" when it reads)
std::string qps_error(const std::string& name, const std::string& text) {
  try {
    read_qps(write_text(name, text));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

QpSolutions<double> solve(const QpBatch<double>& b, double eps = 1e-9) {
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = eps;
  st.max_iter = 20000;
  BatchOptions opt;
  opt.threads = 1;
  QpSolutions<double> sol;
  solve_batch(b, st, opt, sol);
  return sol;
}

// Every section and convention of qps.h at once, in free format (data lines in
// column 1 too, the set names left out in places), against the arrays by hand.
TEST(Qps, ReadsEverySectionAsDocumented) {
  const std::string path = write_text("all", R"(* a comment
NAME demo
ROWS
 N cost
 E e1
 E e2
 L l1
 G g1
 N spare
COLUMNS
 x e1 1 e2 2
 x cost 3 spare 9
 y l1 -1.5
 y g1 4
 z e1 1
 w g1 1
RHS
 rhs cost 6.5
 rhs e1 1 e2 2
 l1 7
 g1 -1
RANGES
 rng e1 3
 rng e2 -4
 rng l1 2
 rng g1 -5
BOUNDS
 UP bnd x 10
 MI bnd y
 FR bnd z
 UP bnd w -2
QUADOBJ
 x x 2
 x y 0.5
 y y 1e30
ENDATA
)");
  // y y 1e30 is infinite: refused
  try {
    read_qps(path);
    FAIL() << "an infinite Q entry was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("all.qps:35: Q entry (y, y) is infinite"), std::string::npos) << e.what();
  }
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  text.replace(text.find(" y y 1e30"), 9, " y y 3");
  const std::string ok = write_text("all_ok", text);
  const QpsProblem p = read_qps(ok);
  EXPECT_EQ(p.name, "demo");
  ASSERT_EQ(p.n, 4);
  ASSERT_EQ(p.m, 4);  // both N rows dropped
  EXPECT_EQ(p.var_names, (std::vector<std::string>{"x", "y", "z", "w"}));
  EXPECT_EQ(p.row_names, (std::vector<std::string>{"e1", "e2", "l1", "g1"}));
  EXPECT_EQ(p.c, (std::vector<double>{3, 0, 0, 0}));
  EXPECT_EQ(p.c0, -6.5);
  EXPECT_EQ(p.Q, (std::vector<double>{2, 0.5, 0, 0, 0.5, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(p.A, (std::vector<double>{1, 0, 1, 0, 2, 0, 0, 0, 0, -1.5, 0, 0, 0, 4, 0, 1}));
  // E with R > 0: [rhs, rhs + R]; E with R < 0: [rhs + R, rhs]; L: [rhs - |R|, rhs]; G: [rhs, rhs + |R|]
  EXPECT_EQ(p.row_lower, (std::vector<double>{1, -2, 5, -1}));
  EXPECT_EQ(p.row_upper, (std::vector<double>{4, 2, 7, 4}));
  // x: [0, 10]; y: MI; z: FR; w: UP -2 on the default lower bound makes it -inf
  EXPECT_EQ(p.col_lower, (std::vector<double>{0, -kInf, -kInf, -kInf}));
  EXPECT_EQ(p.col_upper, (std::vector<double>{10, kInf, kInf, -2}));
}

// HS21 in fixed format: min 0.01 x1² + x2² − 100 s.t. 10 x1 − x2 ≥ 10,
// 2 ≤ x1 ≤ 50, −50 ≤ x2 ≤ 50; the optimum is x = (2, 0), −99.96, and the
// lower bound of x1 holds with multiplier −0.04 (OSQP's sign: a lower bound
// binding is negative; P x + q + Aᵀy = 0 gives 0.02·2 + y = 0).
TEST(Qps, Hs21SolvesToItsKnownOptimum) {
  const std::string path = fixture("hs21.qps");
  const QpsAsBounds q = read_qps_problem(path);
  EXPECT_EQ(q.name, "HS21");
  EXPECT_EQ(q.constant, -100.0);
  EXPECT_EQ(q.constraint_rows, 1);
  EXPECT_EQ(q.bound_vars, (std::vector<int>{0, 1}));
  const ConicBatch c = conic_from_bounds(q.qps, path);
  EXPECT_EQ(c.batch.cones.n_zero, 0);
  EXPECT_EQ(c.batch.cones.n_nonneg, 5);  // R1's lower; x1, x2 upper; x1, x2 lower
  const QpSolutions<double> sol = solve(c.batch);
  ASSERT_EQ(sol.status[0], SolveStatus::kSolved);
  EXPECT_NEAR(sol.x[0], 2.0, 1e-7);
  EXPECT_NEAR(sol.x[1], 0.0, 1e-7);
  EXPECT_NEAR(sol.objective[0] + q.constant, -99.96, 1e-7);
  const std::vector<double> y = bounds_multipliers(c.rows, 1, sol.y);
  ASSERT_EQ(y.size(), 3u);
  EXPECT_NEAR(y[0], 0.0, 1e-7);    // 10 x1 − x2 = 20 > 10: inactive
  EXPECT_NEAR(y[1], -0.04, 1e-7);  // x1 ≥ 2 binds
  EXPECT_NEAR(y[2], 0.0, 1e-7);
}

// The example of the free-format QMATRIX description (both triangles; data in
// column 1): min x² + 4(y − 4)² s.t. x + y ≤ 7, −x + 2y ≤ 4, x, y ≥ 0, y ≤ 4.
// On −x + 2y = 4 the objective is x² + (x − 4)², least at x = 2: (2, 3), 8.
TEST(Qps, FreeFormatQmatrixExample) {
  const std::string path = fixture("first_qp.qps");
  const QpsAsBounds q = read_qps_problem(path);
  EXPECT_EQ(q.constant, 64.0);
  const QpSolutions<double> sol = solve(conic_from_bounds(q.qps, path).batch);
  ASSERT_EQ(sol.status[0], SolveStatus::kSolved);
  EXPECT_NEAR(sol.x[0], 2.0, 1e-6);
  EXPECT_NEAR(sol.x[1], 3.0, 1e-6);
  EXPECT_NEAR(sol.objective[0] + q.constant, 8.0, 1e-6);
}

// Every refusal names the file, the line and what is wrong; none crashes.
TEST(Qps, BadFilesAreRefusedByName) {
  const std::string head = "NAME t\nROWS\n N obj\n L r\nCOLUMNS\n x r 1\n x obj 1\n";
  struct Case {
    const char* name;
    std::string text;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"truncated", head, "truncated.qps: no ENDATA: the file is truncated"},
      {"marker", head + " M1 'MARKER' 'INTORG'\nENDATA\n", "marker.qps:8: integer markers"},
      {"bv", head + "BOUNDS\n BV b x\nENDATA\n", "bv.qps:9: bound type BV: integer"},
      {"max", "NAME t\nOBJSENSE\n MAX\nROWS\n N obj\nENDATA\n", "max.qps:3: OBJSENSE MAX"},
      {"qc", head + "QCMATRIX r\n x x 1\nENDATA\n", "qc.qps:8: QCMATRIX: quadratic constraints"},
      {"twice", head + " x r 2\nENDATA\n", "twice.qps:8: coefficient of 'x' in row 'r' given twice"},
      {"norow", head + " x nope 2\nENDATA\n", "norow.qps:8: row 'nope' is not in ROWS"},
      {"novar", head + "BOUNDS\n UP b y 1\nENDATA\n", "novar.qps:9: variable 'y' is not in COLUMNS"},
      {"number", head + "RHS\n rhs r 1.2.3\nENDATA\n", "number.qps:9: '1.2.3' is not a number"},
      {"nan", head + "RHS\n rhs r nan\nENDATA\n", "nan.qps:9: 'nan' is not a number"},
      {"crossed", head + "BOUNDS\n LO b x 3\n UP b x 1\nENDATA\n",
       "crossed.qps: variable 'x' has lower bound 3"},
      {"asym", head + "QMATRIX\n x x 1\nENDATA\n", ""},  // a diagonal entry alone is symmetric
      {"quadtwice", head + "QUADOBJ\n x x 1\n x x 2\nENDATA\n", "quadtwice.qps:10: Q entry (x, x) given twice"},
      {"noobj", "NAME t\nROWS\n L r\nCOLUMNS\n x r 1\nENDATA\n", "noobj.qps: no objective row"},
      {"rowtype", "NAME t\nROWS\n N obj\n X r\nENDATA\n", "rowtype.qps:4: row type 'X'"},
      {"fields", head + " x\nENDATA\n", "fields.qps:8: a COLUMNS line is COLUMN ROW VALUE"},
      {"outside", "NAME t\nfoo bar\nENDATA\n", "outside.qps:2: 'foo' outside a section"},
  };
  for (const Case& c : cases) {
    const std::string e = qps_error(c.name, c.text);
    if (std::string(c.expect).empty()) {
      EXPECT_EQ(e, "") << c.name;
      continue;
    }
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.name << ": " << e;
  }
  // two triangles that disagree
  const std::string e = qps_error("qmat", head + "QMATRIX\n x x 1\nENDATA\n");
  EXPECT_EQ(e, "");
  const std::string two = "NAME t\nROWS\n N obj\nCOLUMNS\n x obj 1\n y obj 1\nQMATRIX\n x y 1\n y x 2\nENDATA\n";
  EXPECT_NE(qps_error("qasym", two).find("QMATRIX is not symmetric"), std::string::npos) << qps_error("qasym", two);
  EXPECT_NE(qps_error("none", "").find("no ENDATA"), std::string::npos);
  try {
    read_qps(testing::fresh_dir("qps_", "missing") + "/absent.qps");
    FAIL();
  } catch (const Error& ex) {
    EXPECT_NE(std::string(ex.what()).find("absent.qps: cannot open"), std::string::npos) << ex.what();
  }
}

// OSQP's rows to the conic form: each kind of row, the order, the signs, and y
// back; then a random batch solved, checked by the KKT conditions of l ≤ Ax ≤ u.
TEST(BoundsForm, EveryKindOfRowAndTheKktOfTheUsersForm) {
  const int B = 6, n = 5, m = 7;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> g(0.0, 1.0);
  BoundedQps in;
  in.size = B;
  in.n = n;
  in.m = m;
  for (int k = 0; k < B; ++k) {
    std::vector<double> M(size_t(n) * n);
    for (double& v : M) v = g(rng);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double s = i == j ? 0.5 : 0.0;
        for (int t = 0; t < n; ++t) s += M[size_t(i) * n + t] * M[size_t(j) * n + t] / n;
        in.P.push_back(s);
      }
    for (int j = 0; j < n; ++j) in.q.push_back(3 * g(rng));
    for (int i = 0; i < m * n; ++i) in.A.push_back(g(rng));
    // rows: equality, upper, lower, both, free, both, equality
    const double lo[m] = {0.3, -kInf, -1.0, -0.5, -kInf, -0.2, -0.1};
    const double up[m] = {0.3, 0.4, kInf, 0.5, kInf, 0.2, -0.1};
    for (int i = 0; i < m; ++i) {
      in.l.push_back(lo[i]);
      in.u.push_back(up[i]);
    }
  }
  const ConicBatch c = conic_from_bounds(in, "test");
  EXPECT_EQ(c.rows.equality, (std::vector<int>{0, 6}));
  EXPECT_EQ(c.rows.upper, (std::vector<int>{1, 3, 5}));
  EXPECT_EQ(c.rows.lower, (std::vector<int>{2, 3, 5}));
  EXPECT_EQ(c.batch.cones.n_zero, 2);
  EXPECT_EQ(c.batch.cones.n_nonneg, 6);
  // the lower-bound rows are −a_i, −l_i
  const std::vector<double> A0 = c.batch.A_dense(0);
  for (int j = 0; j < n; ++j) EXPECT_EQ(A0[size_t(5) * n + j], -in.A[size_t(2) * n + j]);
  EXPECT_EQ(c.batch.b[5], 1.0);
  const QpSolutions<double> sol = solve(c.batch);
  const std::vector<double> y = bounds_multipliers(c.rows, B, sol.y);
  for (int k = 0; k < B; ++k) {
    ASSERT_EQ(sol.status[k], SolveStatus::kSolved) << k;
    const double* x = &sol.x[size_t(k) * n];
    const double* yk = &y[size_t(k) * m];
    for (int j = 0; j < n; ++j) {  // P x + q + Aᵀ y = 0
      double r = in.q[size_t(k) * n + j];
      for (int t = 0; t < n; ++t) r += in.P[(size_t(k) * n + j) * n + t] * x[t];
      for (int i = 0; i < m; ++i) r += in.A[(size_t(k) * m + i) * n + j] * yk[i];
      EXPECT_NEAR(r, 0.0, 1e-7) << "problem " << k << ", variable " << j;
    }
    for (int i = 0; i < m; ++i) {
      double ax = 0;
      for (int j = 0; j < n; ++j) ax += in.A[(size_t(k) * m + i) * n + j] * x[j];
      const double l = in.l[size_t(k) * m + i], u = in.u[size_t(k) * m + i];
      EXPECT_GE(ax, l - 1e-7);
      EXPECT_LE(ax, u + 1e-7);
      if (yk[i] > 1e-6) {
        EXPECT_NEAR(ax, u, 1e-6) << "y > 0 but the upper bound does not bind";
      }
      if (yk[i] < -1e-6) {
        EXPECT_NEAR(ax, l, 1e-6) << "y < 0 but the lower bound does not bind";
      }
      if (i == 4) {
        EXPECT_EQ(yk[i], 0.0) << "a free row has no multiplier";
      }
    }
  }
}

TEST(BoundsForm, BadRowsAreRefusedByName) {
  BoundedQps in;
  in.size = 2;
  in.n = 1;
  in.m = 1;
  in.P = {1, 1};
  in.q = {0, 0};
  in.A = {1, 1};
  auto err = [&](std::vector<double> l, std::vector<double> u) -> std::string {
    in.l = std::move(l);
    in.u = std::move(u);
    try {
      conic_from_bounds(in, "f.npz");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(err({0, 0}, {1, 1}), "");
  EXPECT_NE(err({0, 2}, {1, 1}).find("f.npz: l > u at problem 1, row 0: 2 > 1"), std::string::npos);
  EXPECT_NE(err({0, NAN}, {1, 1}).find("f.npz: l is NaN at problem 1, row 0"), std::string::npos);
  EXPECT_NE(err({0, 0}, {1, kInf}).find("row 0: two bounds in problem 0 but a lower bound in problem 1"),
            std::string::npos);
  EXPECT_NE(err({kInf, kInf}, {kInf, kInf}).find("l is +inf at problem 0, row 0"), std::string::npos);
  EXPECT_NE(err({-kInf, -kInf}, {-kInf, -kInf}).find("u is -inf at problem 0, row 0"), std::string::npos);
  in.l = {0, 0};
  in.u = {1};
  try {
    conic_from_bounds(in, "f.npz");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("f.npz: u has 1 values, expected 2 (B, m)"), std::string::npos) << e.what();
  }
}

// read_bounded_file: one problem (2-d) or a batch (3-d), an .npz or a folder of
// .npy, float32 too; a wrong shape is named.
TEST(BoundsForm, ReadsNpzAndFoldersOfOneProblemOrABatch) {
  const std::string dir = testing::fresh_dir("bounds_", "files");
  NpzArchive one;
  one["P"] = make_npy({2, 2}, std::vector<double>{2, 0, 0, 2});
  one["q"] = make_npy({2}, std::vector<double>{-2, -4});
  one["A"] = make_npy({1, 2}, std::vector<float>{1, 1});
  one["l"] = make_npy({1}, std::vector<double>{-kInf});
  one["u"] = make_npy({1}, std::vector<double>{1});
  write_npz(dir + "/one.npz", one);
  const BoundedQps a = read_bounded_file(dir + "/one.npz");
  EXPECT_EQ(a.size, 1);
  EXPECT_EQ(a.n, 2);
  EXPECT_EQ(a.m, 1);
  EXPECT_EQ(a.A, (std::vector<double>{1, 1}));
  // min (x1 − 1)² + (x2 − 2)² s.t. x1 + x2 ≤ 1: x = (0, 1), y = 2
  const ConicBatch c = conic_from_bounds(a, "one");
  const QpSolutions<double> sol = solve(c.batch);
  EXPECT_NEAR(sol.x[0], 0.0, 1e-7);
  EXPECT_NEAR(sol.x[1], 1.0, 1e-7);
  EXPECT_NEAR(bounds_multipliers(c.rows, 1, sol.y)[0], 2.0, 1e-7);
  std::filesystem::create_directories(dir + "/folder");
  for (const auto& [key, arr] : one) {
    NpyArray b = arr;
    b.shape.insert(b.shape.begin(), 1);  // a batch of one
    write_npy(dir + "/folder/" + key + ".npy", b);
  }
  const BoundedQps f = read_bounded_file(dir + "/folder");
  EXPECT_EQ(f.size, 1);
  EXPECT_EQ(f.P, a.P);
  EXPECT_EQ(f.u, a.u);
  std::filesystem::remove(dir + "/folder/l.npy");
  try {
    read_bounded_file(dir + "/folder");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no l.npy"), std::string::npos) << e.what();
  }
  one["u"] = make_npy({2}, std::vector<double>{1, 1});
  write_npz(dir + "/bad.npz", one);
  try {
    read_bounded_file(dir + "/bad.npz");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("array 'u': expected shape (1,), got (2,)"), std::string::npos) << e.what();
  }
}

// The Maros–Meszaros batch files written as QPS text (zero rows as E, the
// others as L, every variable free) read back to the very same batch, and the
// smallest solves to its reference objective.
TEST(Qps, MarosMeszarosBatchesRoundTripThroughQpsText) {
  const std::string suite = testing::shared_data("maros_meszaros_small");
  if (!std::filesystem::exists(suite + "/refs.json"))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("the Maros-Meszaros QPs", suite, "mm"));
  std::ifstream rf(suite + "/refs.json");
  const nlohmann::json refs = nlohmann::json::parse(rf);
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(suite)) {
    if (entry.path().extension() != ".npz") continue;
    const std::string name = entry.path().stem().string();
    const QpBatch<double> b = read_qp_file(entry.path().string()).batch;
    const int n = b.n, m = b.m();
    const std::vector<double> A = b.A_dense(0);
    std::ostringstream t;
    t.precision(17);
    t << "NAME " << name << "\nROWS\n N obj\n";
    for (int i = 0; i < m; ++i) t << (i < b.cones.n_zero ? " E r" : " L r") << i << "\n";
    t << "COLUMNS\n";
    for (int j = 0; j < n; ++j) {
      t << " x" << j << " obj " << b.q[size_t(j)] << "\n";  // every variable in COLUMNS
      for (int i = 0; i < m; ++i)
        if (A[size_t(i) * n + j] != 0) t << " x" << j << " r" << i << " " << A[size_t(i) * n + j] << "\n";
    }
    t << "RHS\n";
    for (int i = 0; i < m; ++i)
      if (b.b[size_t(i)] != 0) t << " rhs r" << i << " " << b.b[size_t(i)] << "\n";
    t << "BOUNDS\n";
    for (int j = 0; j < n; ++j) t << " FR bnd x" << j << "\n";
    t << "QUADOBJ\n";
    for (int i = 0; i < n; ++i)
      for (int j = 0; j <= i; ++j)
        if (b.P[size_t(i) * n + j] != 0) t << " x" << i << " x" << j << " " << b.P[size_t(i) * n + j] << "\n";
    t << "ENDATA\n";
    const std::string path = write_text(name, t.str());
    const QpsAsBounds q = read_qps_problem(path);
    ASSERT_TRUE(q.bound_vars.empty()) << name;
    const ConicBatch c = conic_from_bounds(q.qps, path);
    EXPECT_EQ(c.batch.cones.n_zero, b.cones.n_zero) << name;
    EXPECT_EQ(c.batch.cones.n_nonneg, b.cones.n_nonneg) << name;
    EXPECT_EQ(c.batch.P, b.P) << name;
    EXPECT_EQ(c.batch.q, b.q) << name;
    EXPECT_EQ(c.batch.b, b.b) << name;
    EXPECT_EQ(c.batch.A_dense(0), A) << name;
    ++checked;
    if (name == "DUAL1") {  // n 85: solve it and compare with the reference
      const QpSolutions<double> sol = solve(c.batch, 1e-6);
      ASSERT_EQ(sol.status[0], SolveStatus::kSolved);
      const double ref = refs[name]["objective"].get<double>();
      const double f = sol.objective[0] + refs[name]["constant_r"].get<double>();
      EXPECT_LE(std::fabs(f - ref) / std::max(1.0, std::fabs(ref)), 1e-4) << f << " vs " << ref;
    }
  }
  EXPECT_EQ(checked, 13);
}

}  // namespace
}  // namespace impulse
