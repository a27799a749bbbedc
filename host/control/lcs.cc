#include "host/control/lcs.h"

#include <string>

#include "solvers/error.h"

namespace impulse {

Lcs Lcs::time_invariant(int N, const Eigen::MatrixXd& A, const Eigen::MatrixXd& B,
                        const Eigen::MatrixXd& D, const Eigen::VectorXd& d,
                        const Eigen::MatrixXd& E, const Eigen::MatrixXd& F,
                        const Eigen::MatrixXd& H, const Eigen::VectorXd& c) {
  if (N < 1) throw Error("Lcs: horizon must be >= 1, got " + std::to_string(N));
  Lcs s;
  s.nx = static_cast<int>(A.rows());
  s.nu = static_cast<int>(B.cols());
  s.nl = static_cast<int>(D.cols());
  s.A.assign(N, A);
  s.B.assign(N, B);
  s.D.assign(N, D);
  s.d.assign(N, d);
  s.E.assign(N, E);
  s.F.assign(N, F);
  s.H.assign(N, H);
  s.c.assign(N, c);
  s.r = Eigen::VectorXd::Zero(s.nl);
  s.validate();
  return s;
}

namespace {

void expect_shape(const char* name, int k, Eigen::Index rows, Eigen::Index cols, Eigen::Index want_r,
                  Eigen::Index want_c) {
  if (rows != want_r || cols != want_c)
    throw Error(std::string("Lcs: ") + name + "[" + std::to_string(k) + "]: expected " +
                std::to_string(want_r) + " x " + std::to_string(want_c) + ", got " +
                std::to_string(rows) + " x " + std::to_string(cols));
}

template <class M>
void expect_finite(const char* name, int k, const M& m) {
  if (!m.allFinite())
    throw Error(std::string("Lcs: ") + name + "[" + std::to_string(k) + "] has a NaN or Inf entry");
}

}  // namespace

void Lcs::copy_step(const Lcs& s, int from, int to) {
  A[to] = s.A[from];
  B[to] = s.B[from];
  D[to] = s.D[from];
  d[to] = s.d[from];
  E[to] = s.E[from];
  F[to] = s.F[from];
  H[to] = s.H[from];
  c[to] = s.c[from];
}

void Lcs::validate() const {
  if (nx < 1 || nu < 0 || nl < 0)
    throw Error("Lcs: need nx >= 1, nu >= 0, nl >= 0; got nx " + std::to_string(nx) + ", nu " +
                std::to_string(nu) + ", nl " + std::to_string(nl));
  const size_t N = A.size();
  if (N < 1) throw Error("Lcs: horizon must be >= 1 (A is empty)");
  auto same = [&](const char* name, size_t n) {
    if (n != N)
      throw Error(std::string("Lcs: ") + name + ": expected " + std::to_string(N) +
                  " per-step entries (the size of A), got " + std::to_string(n));
  };
  same("B", B.size());
  same("D", D.size());
  same("d", d.size());
  same("E", E.size());
  same("F", F.size());
  same("H", H.size());
  same("c", c.size());
  for (size_t i = 0; i < N; ++i) {
    const int k = static_cast<int>(i);
    expect_shape("A", k, A[i].rows(), A[i].cols(), nx, nx);
    expect_shape("B", k, B[i].rows(), B[i].cols(), nx, nu);
    expect_shape("D", k, D[i].rows(), D[i].cols(), nx, nl);
    expect_shape("d", k, d[i].rows(), d[i].cols(), nx, 1);
    expect_shape("E", k, E[i].rows(), E[i].cols(), nl, nx);
    expect_shape("F", k, F[i].rows(), F[i].cols(), nl, nl);
    expect_shape("H", k, H[i].rows(), H[i].cols(), nl, nu);
    expect_shape("c", k, c[i].rows(), c[i].cols(), nl, 1);
    expect_finite("A", k, A[i]);
    expect_finite("B", k, B[i]);
    expect_finite("D", k, D[i]);
    expect_finite("d", k, d[i]);
    expect_finite("E", k, E[i]);
    expect_finite("F", k, F[i]);
    expect_finite("H", k, H[i]);
    expect_finite("c", k, c[i]);
  }
  if (r.size() != nl)
    throw Error("Lcs: r: expected " + std::to_string(nl) + " entries, got " +
                std::to_string(r.size()));
  if (!r.allFinite()) throw Error("Lcs: r has a NaN or Inf entry");
}

void LcsStepWork::reserve(int nl) {
  lemke.reserve(nl);
  F.resize(nl, nl);
  q.resize(nl);
  w.resize(nl);
}

LcsStepInfo lcs_step(const Lcs& lcs, int k, const Eigen::Ref<const Eigen::VectorXd>& x,
                     const Eigen::Ref<const Eigen::VectorXd>& u, Eigen::Ref<Eigen::VectorXd> x_next,
                     Eigen::Ref<Eigen::VectorXd> lambda, LcsStepWork& work) {
  LcsStepInfo info;
  const int nl = lcs.nl;
  if (work.q.size() != nl) work.reserve(nl);  // first use only
  // LCP offset q = E x + H u + c + r
  work.q.noalias() = lcs.E[k] * x;
  work.q.noalias() += lcs.H[k] * u;
  work.q += lcs.c[k] + lcs.r;
  work.F = lcs.F[k];
  if (nl > 0) {
    const LemkeInfo li = lemke_solve(nl, work.F.data(), work.q.data(), lambda.data(),
                                     work.w.data(), LemkeSettings{}, work.lemke);
    info.status = li.status;
    info.pivots = li.pivots;
    info.residual = li.residual;
  } else {
    info.status = SolveStatus::kSolved;
  }
  // dynamics
  x_next.noalias() = lcs.A[k] * x;
  x_next.noalias() += lcs.B[k] * u;
  x_next.noalias() += lcs.D[k] * lambda;
  x_next += lcs.d[k];
  return info;
}

}  // namespace impulse
