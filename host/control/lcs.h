// Linear complementarity systems (LCS) over a horizon of N steps
// (papers/adaptive-c3-residual-learning-2024.txt, Sec. III-C and eq. 12):
//
//   x_{k+1} = A_k x_k + B_k u_k + D_k λ_k + d_k
//   0 ≤ λ_k ⊥ E_k x_k + F_k λ_k + H_k u_k + c_k + r ≥ 0
//
// r is the learned complementarity residual (r_comp in the paper), one vector shared by
// every step. Matrices may differ per step (time-varying); Lcs::time_invariant copies
// one set N times. Sizes: x nx, u nu, λ nl (the LCP size).
//
// One step of the system (lcs_step) solves LCP(E x + H u + c + r, F) with Lemke's
// method (solvers/lemke.h) and integrates the dynamics. With an LcsStepWork sized by
// reserve(), lcs_step allocates nothing; it is deterministic and never throws.
#pragma once

#include <Eigen/Dense>
#include <vector>

#include "solvers/lemke.h"
#include "solvers/status.h"

namespace impulse {

using RowMatrixXd = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Lcs {
  int nx = 0, nu = 0, nl = 0;
  std::vector<Eigen::MatrixXd> A, B, D, E, F, H;  // N each
  std::vector<Eigen::VectorXd> d, c;              // N each
  Eigen::VectorXd r;                              // nl, the learned residual (zero by default)

  int horizon() const { return static_cast<int>(A.size()); }

  // the same matrices at every one of N steps; r = 0.
  static Lcs time_invariant(int N, const Eigen::MatrixXd& A, const Eigen::MatrixXd& B,
                            const Eigen::MatrixXd& D, const Eigen::VectorXd& d,
                            const Eigen::MatrixXd& E, const Eigen::MatrixXd& F,
                            const Eigen::MatrixXd& H, const Eigen::VectorXd& c);

  // copy the matrices of step `from` of `src` into step `to` of this (same sizes: no
  // allocation); r is not touched.
  void copy_step(const Lcs& src, int from, int to);

  // throws Error naming the first inconsistency ("D[3]: expected 4 x 2, got 4 x 3") or a
  // non-finite entry.
  void validate() const;
};

// Scratch for lcs_step; reserve(nl) once, then lcs_step allocates nothing.
struct LcsStepWork {
  LemkeWorkspace lemke;
  RowMatrixXd F;          // row-major copy of F_k for Lemke
  Eigen::VectorXd q, w;   // LCP offset E x + H u + c + r, and slack
  void reserve(int nl);
};

struct LcsStepInfo {
  SolveStatus status = SolveStatus::kNotRun;  // Lemke's status
  int pivots = 0;
  double residual = 0.0;  // complementarity residual of λ
};

// x_next and lambda for step k of `lcs` (k < horizon) from state x and input u. On a
// Lemke failure lambda holds Lemke's last iterate and x_next is integrated with it.
LcsStepInfo lcs_step(const Lcs& lcs, int k, const Eigen::Ref<const Eigen::VectorXd>& x,
                     const Eigen::Ref<const Eigen::VectorXd>& u, Eigen::Ref<Eigen::VectorXd> x_next,
                     Eigen::Ref<Eigen::VectorXd> lambda, LcsStepWork& work);

}  // namespace impulse
