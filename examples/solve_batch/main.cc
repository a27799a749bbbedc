// Solves a batch of the user's own QPs, from plain arrays, through impulse's C++
// batch API: B projections of points onto a box intersected with a cone,
//
//   minimize ½‖x − p_k‖²  subject to  0 ≤ x_i ≤ 1 (i = 0, 1, 2),  ‖(x1, x2)‖ ≤ x0,
//
// on the CPU lanes, and on the GPU when impulse was built with CUDA and a device is
// present, at the default tolerances (1e-5). Each answer is checked against the
// problem's optimality conditions (a primal residual, a dual residual,
// complementarity); the program exits 1 if any is off by more than ten times the
// tolerance at the problem's scale.
#include <impulse/batch/qp_batch.h>
#include <impulse/version.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

// the worst optimality residual of problem k: Px + q + Aᵀy = 0, Ax + s = b with
// s ∈ K, y ∈ K*, sᵀy = 0 (the signs of impulse's QP form, solvers/qp_admm.h)
double kkt_residual(const impulse::QpBatch<double>& b, const impulse::QpSolutions<double>& s, int k) {
  const int n = b.n, m = b.m();
  const std::vector<double> A = b.A_dense(k);
  const double* P = &b.P[size_t(k) * n * n];
  const double* q = &b.q[size_t(k) * n];
  const double* x = &s.x[size_t(k) * n];
  const double* y = &s.y[size_t(k) * m];
  double worst = 0;
  for (int i = 0; i < n; ++i) {  // stationarity
    double r = q[i];
    for (int j = 0; j < n; ++j) r += P[i * n + j] * x[j];
    for (int r_ = 0; r_ < m; ++r_) r += A[size_t(r_) * n + i] * y[r_];
    worst = std::max(worst, std::abs(r));
  }
  std::vector<double> slack(m);
  for (int r = 0; r < m; ++r) {
    double ax = 0;
    for (int j = 0; j < n; ++j) ax += A[size_t(r) * n + j] * x[j];
    slack[r] = b.b[size_t(k) * m + r] - ax;
  }
  const int nn = b.cones.n_nonneg;
  double gap = 0;
  for (int r = 0; r < nn; ++r) {  // nonnegative rows: s ≥ 0, y ≥ 0
    worst = std::max({worst, -slack[r], -y[r]});
    gap += slack[r] * y[r];
  }
  const int c = b.cones.soc_begin();  // the cone: ‖(s1, s2)‖ ≤ s0, and the same for y
  worst = std::max(worst, std::hypot(slack[c + 1], slack[c + 2]) - slack[c]);
  worst = std::max(worst, std::hypot(y[c + 1], y[c + 2]) - y[c]);
  gap += slack[c] * y[c] + slack[c + 1] * y[c + 1] + slack[c + 2] * y[c + 2];
  return std::max(worst, std::abs(gap));
}

int solve_and_check(impulse::QpBatch<double>& batch, impulse::Backend backend) {
  impulse::QpSettings<double> settings;
  impulse::BatchOptions options;
  options.backend = backend;
  impulse::QpSolutions<double> sol;
  impulse::solve_batch(batch, settings, options, sol);
  double worst = 0;
  int solved = sol.count(impulse::SolveStatus::kSolved);
  double scale = 1;  // the residuals are met to eps_abs + eps_rel x the size of their terms
  for (int k = 0; k < batch.size; ++k) {
    worst = std::max(worst, kkt_residual(batch, sol, k));
    for (int i = 0; i < batch.n; ++i) scale = std::max(scale, 1 + std::abs(batch.q[size_t(k) * batch.n + i]));
  }
  std::printf("%-4s: %d of %d solved, worst optimality residual %.2e; problem 0: x = (%.4f, %.4f, %.4f)\n",
              impulse::to_string(backend), solved, batch.size, worst, sol.x[0], sol.x[1], sol.x[2]);
  for (const std::string& line : sol.problems_not_solved()) std::printf("  %s\n", line.c_str());
  return solved == batch.size && worst < 10 * settings.eps_abs * scale ? 0 : 1;
}

}  // namespace

int main() {
  std::printf("impulse %s\n", impulse::version());
  const int B = 1000, n = 3;
  // rows: 6 nonnegative (x ≥ 0 as −x + s = 0; x ≤ 1 as x + s = 1), then one 3-row cone
  // (−x + s = 0, s ∈ SOC)
  impulse::ConeSpec cones;
  cones.n_nonneg = 6;
  cones.n_soc = 1;
  const int m = cones.rows();
  std::vector<double> P(size_t(B) * n * n, 0.0), q(size_t(B) * n), A(size_t(B) * m * n, 0.0), b(size_t(B) * m, 0.0);
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0.5, 1.0);
  for (int k = 0; k < B; ++k) {
    for (int i = 0; i < n; ++i) {
      P[size_t(k) * n * n + i * n + i] = 1.0;
      q[size_t(k) * n + i] = -normal(rng);  // ½‖x − p‖² = ½xᵀx − pᵀx + const
    }
    double* a = &A[size_t(k) * m * n];
    for (int i = 0; i < n; ++i) {
      a[i * n + i] = -1.0;           // −x_i + s = 0
      a[(3 + i) * n + i] = 1.0;      // x_i + s = 1
      b[size_t(k) * m + 3 + i] = 1.0;
      a[(6 + i) * n + i] = -1.0;     // −x + s = 0, s in the cone
    }
  }
  impulse::QpBatch<double> batch = impulse::QpBatch<double>::from_dense(B, n, cones, P, q, A, b);
  int rc = solve_and_check(batch, impulse::Backend::kCpu);
  // impulse built without CUDA, or no device: available() is false
  if (impulse::cuda::available()) rc |= solve_and_check(batch, impulse::Backend::kCuda);
  else std::printf("cuda: not available here (no CUDA build or no device), the GPU solve is skipped\n");
  return rc;
}
