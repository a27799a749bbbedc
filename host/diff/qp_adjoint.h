// Derivatives of conic QP solutions: the backward pass of a differentiable QP
// layer (impulse.torch.ConicQP), for a batch of dense problems.
//
// Problem (solvers/cones.h's row order): minimize 1/2 x'Px + q'x subject to
// Ax + s = b, s in K = {0}^nz x R+^nn x SOC^ns. With u = s - y and Pi the
// projection onto K, a solution is a zero of
//     F(x, u) = [P x + q + A'(Pi(u) - u);  A x + Pi(u) - b]
// (s = Pi(u), y = Pi(u) - u: Moreau's decomposition). Given the gradients gx, gy
// of a scalar loss with respect to x and y, the adjoint (lx, lu) solves
//     J' (lx, lu) = (gx, (D - I) gy),   J = dF/d(x, u) = [P  A'(D - I); A  D]
// with D = dPi/du (0 on the zero cone's rows; 0 or 1 on a nonnegative row; the
// second-order cone's projection derivative on each cone's three rows, as diffcp
// and cvxpylayers use). Then, with F's derivatives in the data,
//     dL/dq = -lx,  dL/db = lu,  dL/dP = -lx x' (symmetrized),  dL/dA = -y lx' - lu x'.
// The value's gradient gv adds the envelope theorem's terms (dv/dq = x, dv/db = -y,
// dv/dP = 1/2 xx', dv/dA = yx').
//
// The system is solved in a reduced form that is exact, not an approximation: a
// row with D = 1 (an inactive nonnegative row, a cone strictly inside) has lu = 0
// (its equation reads lu_i = ((D - I) gy)_i = 0), so only the rows with D = 0 and
// the cones on their boundary stay, n + (active rows) unknowns instead of n + m.
// A multiplier within 10 eps max(1, max|y|) of zero marks a nonnegative row
// inactive (at a degenerate solution, s = y = 0, Pi has no derivative; this side
// keeps the system regular where more rows touch their bound than there are
// variables, as the contact QPs' unused contacts do). Where P is definite (after a
// boundary cone's terms) the system is solved by Cholesky factors of P and of the
// Schur complement of the rows that stay; where those rows are dependent and no
// gradient of y falls on them, the minimum-norm solution comes from a complete
// orthogonal decomposition of L⁻¹A' (P = LL'), the same answer as below at a
// fraction of its work (bench/bench_adjoint.cc). Otherwise, where the reduced system is
// still singular or nearly so (directions below 1e-10 of its largest), its
// minimum-norm least-squares solution is used (as torch.linalg.lstsq's gelsd
// would), and the problem is counted: by a null-space solve (a rank-revealing QR
// of the active rows, then P on their null space; O(n k²) for k active rows; a cone
// on its boundary enters by its projection derivative's eigen-directions), or,
// where P is not definite on that null space, a complete orthogonal decomposition
// of the whole. (A plain LU of a singular system returns one of its solutions, of
// any size along the null space: 1e37 was seen on the octagon loss QPs.)
//
// The work runs in double whatever T is; problems are independent, so the result
// does not depend on the thread count.
#pragma once

#include "solvers/cones.h"

namespace impulse {

template <class T>
struct QpAdjointBatch {
  int size = 0, n = 0;
  ConeSpec cones;
  double eps = 1e-8;  // the forward solve's tolerance (it sets which rows count as active)
  // row-major, problem after problem: P (size, n, n), A (size, m, n) dense, b (size, m),
  // the solution x (size, n), y (size, m)
  const T *P = nullptr, *A = nullptr, *b = nullptr, *x = nullptr, *y = nullptr;
  // the loss's gradients; any may be null (zero): gx (size, n), gy (size, m), gv (size)
  const T *gx = nullptr, *gy = nullptr, *gv = nullptr;
  int m() const { return cones.rows(); }
};

// Where the data's gradients go (the caller's storage, same shapes as P, q, A, b);
// a null one is not computed (a layer whose P or A needs no gradient skips the
// largest two).
template <class T>
struct QpAdjointOut {
  T *gP = nullptr, *gq = nullptr, *gA = nullptr, *gb = nullptr;
};

struct QpAdjointInfo {
  int least_squares = 0;  // problems whose reduced system was singular
  int not_finite = 0;      // problems with a non-finite input: their gradients are NaN
  int largest_system = 0; // the most unknowns of one problem's reduced system
};

// Fills out for every problem of the batch. A problem with a non-finite input (a
// NaN solution of a problem the forward pass did not solve) gets NaN gradients and
// is counted; the others are unaffected. Throws Error on sizes that do not fit
// (n < 1, size < 0, a required input missing), naming what is wrong.
template <class T>
QpAdjointInfo qp_adjoint_batch(const QpAdjointBatch<T>& in, const QpAdjointOut<T>& out, int threads = 0);

}  // namespace impulse
