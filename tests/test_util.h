// Helpers shared by the tests: independent KKT checks with Eigen.
#pragma once

#include <Eigen/Dense>
#include <algorithm>
#include <cctype>
#include <cmath>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "host/batch/lcp_batch.h"
#include "host/batch/qp_batch.h"
#include "solvers/error.h"

namespace impulse {

// A public data set is absent (testing::data_absent): on a user's machine the test
// skips with the message; in CI (the CI environment variable set, as .ci/run has
// it) it fails, because part of the suite's independent coverage lives only there.
inline bool running_in_ci() {
  const char* c = std::getenv("CI");
  return c != nullptr && *c != '\0' && std::string(c) != "false" && std::string(c) != "0";
}
#define IMPULSE_SKIP_WITHOUT_DATA(message)                                                    \
  do {                                                                                        \
    if (::impulse::running_in_ci()) {                                                         \
      GTEST_FAIL() << message << " (CI must have ../shared/data)";                            \
    } else {                                                                                  \
      GTEST_SKIP() << message;                                                                \
    }                                                                                         \
  } while (0)

namespace testing {

// `count` copies of problem 0 of `one` (a full lane group of one problem)
inline QpBatch<double> copies(const QpBatch<double>& one, int count) {
  QpBatch<double> b = QpBatch<double>::with_pattern(count, one.n, one.cones, one.a_row_ptr, one.a_col);
  const size_t nn = size_t(one.n) * one.n, n = one.n, nnz = one.nnz(), m = one.m();
  for (int k = 0; k < count; ++k) {
    std::copy(one.P.begin(), one.P.begin() + nn, b.P.begin() + k * nn);
    std::copy(one.q.begin(), one.q.begin() + n, b.q.begin() + k * n);
    std::copy(one.A.begin(), one.A.begin() + nnz, b.A.begin() + k * nnz);
    std::copy(one.b.begin(), one.b.begin() + m, b.b.begin() + k * m);
  }
  return b;
}

// The folder of the public data sets (docs/data.md): the environment variable
// IMPULSE_DATA when set, else the one the build chose (CMake's IMPULSE_DATA_DIR:
// ../shared/data beside the checkout when it exists, as in CI, else data/external/,
// where `bash data/fetch.sh` puts them); ../shared/data relative to the working
// directory in a build without it.
inline std::string data_root() {
  const char* env = std::getenv("IMPULSE_DATA");
  if (env != nullptr && *env != '\0') return env;
#ifdef IMPULSE_SHARED_DATA_DIR
  return IMPULSE_SHARED_DATA_DIR;
#else
  return "../shared/data";
#endif
}

// A folder or file of the public data sets: data_root()/SUB. Tests skip with
// data_absent's message when it is absent (IMPULSE_SKIP_WITHOUT_DATA).
inline std::string shared_data(const std::string& sub) { return data_root() + "/" + sub; }

// The skip message for an absent data set: what, where the test looked, and the
// command that fetches it (SET: cube, elbow, impacts, mm, contactnets_qps; for the
// last three, which are not downloadable as published, the command says where to
// get them).
inline std::string data_absent(const std::string& what, const std::string& looked_in,
                               const std::string& set) {
  const bool downloadable = set == "cube" || set == "elbow";
  return what + " absent (looked in " + looked_in + "): bash data/fetch.sh " + set +
         (downloadable ? "" : " (says where to get them)");
}

// The directories fresh_dir made, removed when the test process that made them
// exits normally (a forked child that exits leaves them to its parent), unless
// IMPULSE_KEEP_TEST_DIRS is set (to look at what a test wrote). ctest runs every
// test in its own process: without this, each suite run left its sweeps, runs
// and figures (hundreds of MB) in the temp dir.
class TestDirs {
 public:
  static TestDirs& get() {
    static TestDirs dirs;
    return dirs;
  }
  void add(const std::string& p) {
    if (std::find(paths_.begin(), paths_.end(), p) == paths_.end()) paths_.push_back(p);
  }
  ~TestDirs() {
    if (::getpid() != owner_ || std::getenv("IMPULSE_KEEP_TEST_DIRS") != nullptr) return;
    std::error_code ec;
    for (const std::string& p : paths_) std::filesystem::remove_all(p, ec);
  }

 private:
  TestDirs() : owner_(::getpid()) {}
  pid_t owner_;
  std::vector<std::string> paths_;
};

// An empty directory under the test temp dir, per process (ctest runs the tests
// of one file in parallel processes): TMP/PREFIX<pid>_NAME, removed at exit
// (TestDirs).
inline std::string fresh_dir(const std::string& prefix, const std::string& name) {
  const std::filesystem::path p =
      std::filesystem::path(::testing::TempDir()) / (prefix + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  TestDirs::get().add(p.string());
  return p.string();
}

#ifdef IMPULSE_BINARY
// Runs the impulse CLI with `args` (paths quoted by the caller), its output into
// the file `log` (discarded when empty); returns std::system's status.
inline int run_cli(const std::string& args, const std::string& log = "") {
  const std::string to = log.empty() ? std::string("/dev/null") : "\"" + log + "\"";
  return std::system(("\"" + std::string(IMPULSE_BINARY) + "\" " + args + " > " + to + " 2>&1").c_str());
}
#endif

// A whole file as text ("" when it cannot be read).
inline std::string read_text_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// the comma-separated cells of one line of a CSV file (no quoting)
inline std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream ss(line);
  std::string c;
  while (std::getline(ss, c, ',')) cells.push_back(c);
  return cells;
}

struct Kkt {
  double stationarity = 0;   // ||Px + q + A^T y||_inf
  double primal = 0;         // distance of s = b - Ax from K (inf-norm style)
  double dual = 0;           // distance of y from K*
  double complementarity = 0;  // |s^T y|
  double objective = 0;
  double lagrangian = 0;       // objective + y^T (Ax - b)
};

// recomputes the KKT residuals of problem k from the data alone.
template <class T>
Kkt kkt_residuals(const QpBatch<T>& bt, int k, const T* x_, const T* y_) {
  const int n = bt.n, m = bt.m();
  using Mat = Eigen::MatrixXd;
  using Vec = Eigen::VectorXd;
  Mat P(n, n), A(m, n);
  Vec q(n), b(m), x(n), y(m);
  const std::vector<T> Ad = bt.A_dense(k);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) P(i, j) = bt.P[size_t(k) * n * n + i * n + j];
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) A(i, j) = Ad[size_t(i) * n + j];
  for (int i = 0; i < n; ++i) q(i) = bt.q[size_t(k) * n + i], x(i) = x_[i];
  for (int i = 0; i < m; ++i) b(i) = bt.b[size_t(k) * m + i], y(i) = y_[i];
  Kkt r;
  r.stationarity = (P * x + q + A.transpose() * y).lpNorm<Eigen::Infinity>();
  const Vec s = b - A * x;
  const ConeSpec& c = bt.cones;
  for (int i = 0; i < c.n_zero; ++i) r.primal = std::max(r.primal, std::abs(s(i)));
  for (int i = c.n_zero; i < c.soc_begin(); ++i) {
    r.primal = std::max(r.primal, -s(i));
    r.dual = std::max(r.dual, -y(i));
  }
  for (int j = 0; j < c.n_soc; ++j) {
    const int o = c.soc_begin() + 3 * j;
    r.primal = std::max(r.primal, std::hypot(s(o + 1), s(o + 2)) - s(o));
    r.dual = std::max(r.dual, std::hypot(y(o + 1), y(o + 2)) - y(o));
  }
  r.complementarity = std::abs(s.dot(y));
  r.objective = 0.5 * x.dot(P * x) + q.dot(x);
  r.lagrangian = r.objective - y.dot(s);
  return r;
}

// the two CPU paths of solve_batch: lane groups (the default) and one
// problem at a time (qp_admm_solve)
inline std::vector<BatchOptions> both_cpu_paths() {
  BatchOptions lanes, scalar;
  lanes.lanes = true;
  scalar.lanes = false;
  return {lanes, scalar};
}
inline const char* path_name(const BatchOptions& o) { return o.lanes ? "lanes" : "one at a time"; }
// one CPU path on one thread: lane groups, or one problem at a time
inline BatchOptions cpu_path(bool lanes) {
  BatchOptions o;
  o.lanes = lanes;
  o.threads = 1;
  return o;
}

// B LCPs with symmetric positive definite M (n x n) and random q
inline LcpBatch<double> random_spd_batch(int B, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd;
  LcpBatch<double> bt;
  bt.size = B;
  bt.n = n;
  bt.M.resize(size_t(B) * n * n);
  bt.q.resize(size_t(B) * n);
  for (int k = 0; k < B; ++k) {
    Eigen::MatrixXd G(n, n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) G(i, j) = nd(rng);
    const Eigen::MatrixXd M = G * G.transpose() + n * Eigen::MatrixXd::Identity(n, n);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) bt.M[size_t(k) * n * n + i * n + j] = M(i, j);
      bt.q[size_t(k) * n + i] = 3 * nd(rng);
    }
  }
  return bt;
}

// one equality, six inequalities and two second-order cones
inline ConeSpec mixed() {
  ConeSpec c;
  c.n_zero = 1;
  c.n_nonneg = 6;
  c.n_soc = 2;
  return c;
}

// Runs f and expects an impulse::Error whose message contains every one of `parts`.
inline void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no impulse::Error thrown";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}
inline void expect_error(const std::function<void()>& f, const char* part) {
  expect_error(f, std::vector<std::string>{part});
}

// qp_admm_solve on the problems of a batch, each with its own workspace (what a kept
// factorization lives in: qp_admm_solve's `reuse`); P and A are bt's, q and b come
// from the `data` of each call.
struct KeptSolver {
  const QpBatch<double>& bt;
  std::vector<std::vector<double>> work;
  explicit KeptSolver(const QpBatch<double>& b)
      : bt(b), work(size_t(b.size), std::vector<double>(qp_work_host_size(b.n, b.m()), 0.0)) {}
  QpWork<double, UnitStride> w(int k) {
    return QpWork<double, UnitStride>::carve(unit_view(qp_work_align(work[size_t(k)].data())), bt.n, bt.m(), true);
  }
  // whether problem k's workspace holds a factorization usable with st
  bool usable(int k, const QpSettings<double>& st) {
    return detail::qp_factor_kept(w(k), st, st.dense_iteration && st.explicit_inverse);
  }
  // problem k's workspace as `o` holds it (aligned contents: the vectors' own
  // alignment may differ)
  void copy_from(KeptSolver& o, int k) {
    const int len = qp_work_host_size(bt.n, bt.m()) - 16;
    std::copy_n(qp_work_align(o.work[size_t(k)].data()), len, qp_work_align(work[size_t(k)].data()));
  }
  // solves problem k of `data`, x and y in `sol` (sized for bt)
  QpInfo<double> solve(const QpBatch<double>& data, int k, const QpSettings<double>& st, QpSolutions<double>& sol,
                       bool warm, bool reuse) {
    const QpInfo<double> info = qp_admm_solve(bt.shape(), data.problem(k), unit_view(sol.x.data() + size_t(k) * bt.n),
                                              unit_view(sol.y.data() + size_t(k) * bt.m()), w(k), st, warm, reuse);
    sol.status[k] = info.status, sol.fault[k] = info.fault, sol.iterations[k] = info.iterations;
    sol.rho_updates[k] = info.rho_updates, sol.objective[k] = info.objective, sol.value[k] = info.value;
    return info;
  }
  // every problem of `data`
  void solve_all(const QpBatch<double>& data, const QpSettings<double>& st, QpSolutions<double>& sol, bool warm,
                 bool reuse) {
    for (int k = 0; k < bt.size; ++k) solve(data, k, st, sol, warm, reuse);
  }
};

// A test name for a system parameter: the built-in's name, or a file's stem
// ("chain3" for .../tests/data/systems/chain3.json), so that test names carry no path.
struct SystemParamName {
  template <class Info>
  std::string operator()(const Info& info) const {
    std::string s = std::filesystem::path(info.param).stem().string();
    for (char& c : s)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return s;
  }
};

}  // namespace testing
}  // namespace impulse
