// The baseline side of the interior point (host/batch/qp_ipm.h): which problems
// it takes, when the batch hands a problem to it, and the call into the
// instruction set in use (the method itself: host/batch/qp_ipm.cc, compiled
// once per set).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "host/batch/lane_kernels.h"
#include "host/batch/qp_ipm.h"

namespace impulse {

bool qp_ipm_eligible(const QpShape& sh) { return sh.cones.n_soc == 0; }

int qp_ipm_switch_auto(const QpShape& sh) {
  const double n = sh.n, m = sh.m(), nnz = sh.a.nnz, eq = sh.cones.n_zero, in = m - eq;
  // one ADMM iteration of one problem: the x-step's two triangular solves,
  // A x and Aᵀv over A's entries, the row and variable updates
  const double admm = n * n + 2 * nnz + 4 * m + 4 * n;
  // one interior-point iteration: P + A_inᵀ W A_in (dense, its lower
  // triangle), its Cholesky factor, the equality rows' Schur complement,
  // the dense products of the direction, its refinement and the check; and a
  // fixed cost per iteration (the small dense operations' overhead), which
  // the measurements put at about 15,000 of these operations (at n = 8 the
  // interior point is dearer than its operation count says)
  const double ipm = in * n * n / 2 + n * n * n / 6 + eq * n * n + eq * eq * n / 2 + eq * eq * eq / 6 +
                     10 * (n * n + m * n) + 15000;
  const double iterations = 15;  // 8-13 on dense random QPs at eps 1e-6 (solved to a thousandth of it), more elsewhere
  const double ratio = iterations * ipm / std::max(admm, 1.0);
  return int(std::lround(std::min(std::max(ratio, 1.0), 1e9)));
}

template <class T>
QpInfo<T> qp_ipm_solve(const QpShape& sh, const T* P, const T* q, const T* A, const T* b, T* x, T* y,
                       const QpSettings<T>& st, int max_iter) {
  lanes::IpmJob<T> j;
  j.shape = &sh;
  j.P = P;
  j.q = q;
  j.A = A;
  j.b = b;
  j.x = x;
  j.y = y;
  j.settings = &st;
  j.max_iter = max_iter;
  QpInfo<T> info;
  j.info = &info;
  const lanes::Kernels& k = lanes::kernels();
  if constexpr (std::is_same<T, float>::value)
    k.ipm_float(j);
  else
    k.ipm_double(j);
  return info;
}

template QpInfo<float> qp_ipm_solve(const QpShape&, const float*, const float*, const float*, const float*,
                                    float*, float*, const QpSettings<float>&, int);
template QpInfo<double> qp_ipm_solve(const QpShape&, const double*, const double*, const double*,
                                     const double*, double*, double*, const QpSettings<double>&, int);

}  // namespace impulse
