// The interior point (host/batch/qp_ipm.h), compiled once per instruction set
// with the CPU lanes (CMakeLists.txt: the impulse_lanes_<set> object libraries,
// IMPULSE_ISA naming the set) and run through the set's table
// (host/batch/lane_kernels.h, lanes::IpmJob): its dense products (Eigen's
// blocked kernels: the Newton matrix's rank-m update, the Cholesky factor, the
// triangular solves) take the widest vectors this CPU has. Eigen's namespace is
// renamed for each set (the compile definition Eigen=impulse_eigen_<set>), so
// that no Eigen template instance compiled for AVX-512 can stand in for the
// baseline's at link time (tests/check_portable.py).
#if !defined(IMPULSE_ISA)
#error "host/batch/qp_ipm.cc is compiled once per instruction set with IMPULSE_ISA defined (CMakeLists.txt)"
#endif

#include <cstring>
#include <type_traits>

#include "host/batch/lane_kernels.h"
#include "host/batch/qp_ipm.h"
#include "solvers/lanes.h"

// small dense products, one problem per worker thread: no OpenMP teams inside
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

IMPULSE_NAMESPACE_BEGIN

namespace {

// vectors of this set's own instance (std::vector<T> would be a template
// instance shared with the baseline's: tests/check_portable.py)
template <class T>
using IsaVector = std::vector<T, LaneAllocator<T>>;

using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;

// The reduced Newton system [H0 + δI, Eᵀ; E, −δI] of one iteration, with H0 =
// P + A_inᵀ W A_in, E = A_eq; solves with iterative refinement against δ = 0.
// H0 is formed as a symmetric rank-m update of P (its lower triangle: half a
// general product's work); the matrices keep their storage between iterations.
class NewtonSystem {
 public:
  // false when no regularization up to 1e-2 makes the factors exist
  bool factor(const Mat& P, const Mat& Ain, const Vec& w, const Mat& Aeq) {
    H0_ = P;
    if (Ain.rows() > 0) {
      Bt_ = Ain.transpose() * w.cwiseSqrt().asDiagonal();
      H0_.selfadjointView<Eigen::Lower>().rankUpdate(Bt_);
    }
    Aeq_ = &Aeq;
    // absolute (the data are equilibrated): relative to H0's diagonal, which
    // grows as 1/s on the active rows, δ would swamp the other directions
    for (delta_ = 1e-10; delta_ <= 1e-2; delta_ *= 100) {
      H_ = H0_;
      H_.diagonal().array() += delta_;
      llt_h_.compute(H_);  // reads the lower triangle
      if (llt_h_.info() != Eigen::Success) continue;
      if (Aeq.rows() == 0) return true;
      HinvEt_ = llt_h_.solve(Aeq.transpose());
      S_.noalias() = Aeq * HinvEt_;
      S_.diagonal().array() += delta_;
      llt_s_.compute(S_);
      if (llt_s_.info() == Eigen::Success) return true;
    }
    return false;
  }

  void solve(const Vec& g1, const Vec& g2, Vec& dx, Vec& dy) {
    solve_regularized(g1, g2, dx, dy);
    for (int pass = 0; pass < 3; ++pass) {  // refinement against the unregularized system
      r1_ = g1;
      r1_.noalias() -= H0_.selfadjointView<Eigen::Lower>() * dx;
      r2_ = g2;
      if (Aeq_->rows() > 0) {
        r1_.noalias() -= Aeq_->transpose() * dy;
        r2_.noalias() -= *Aeq_ * dx;
      }
      solve_regularized(r1_, r2_, cx_, cy_);
      dx += cx_;
      dy += cy_;
    }
  }

 private:
  void solve_regularized(const Vec& g1, const Vec& g2, Vec& dx, Vec& dy) {
    if (Aeq_->rows() == 0) {
      dx = llt_h_.solve(g1);
      dy.resize(0);
      return;
    }
    // (E H⁻¹ Eᵀ + δI) dy = E H⁻¹ g₁ − g₂, then H dx = g₁ − Eᵀ dy
    hg_ = llt_h_.solve(g1);
    dy = llt_s_.solve(*Aeq_ * hg_ - g2);
    dx = llt_h_.solve(g1 - Aeq_->transpose() * dy);
  }

  Mat H0_, H_, Bt_, HinvEt_, S_;
  Vec r1_, r2_, cx_, cy_, hg_;
  const Mat* Aeq_ = nullptr;
  double delta_ = 0;
  Eigen::LLT<Mat, Eigen::Lower> llt_h_, llt_s_;
};

// the largest step in (0, 1] keeping v + α dv ≥ 0
double max_step(const Vec& v, const Vec& dv) {
  double a = 1.0;
  for (Eigen::Index i = 0; i < v.size(); ++i)
    if (dv[i] < 0) a = std::min(a, -v[i] / dv[i]);
  return a;
}

template <class T>
QpInfo<T> ipm_solve(const QpShape& sh, const T* P_, const T* q_, const T* A_, const T* b_, T* x_out,
                       T* y_out, const QpSettings<T>& st, int max_iter) {
  const int n = sh.n, m = sh.m(), n_eq = sh.cones.n_zero;
  QpInfo<T> info;
  // the original data, dense
  Mat P(n, n), A = Mat::Zero(m, n);
  Vec q(n), b(m);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) P(i, j) = double(P_[i * n + j]);
  for (int i = 0; i < n; ++i) q[i] = double(q_[i]);
  for (int r = 0; r < m; ++r) {
    b[r] = double(b_[r]);
    for (int k = sh.a.row_ptr[r]; k < sh.a.row_ptr[r + 1]; ++k) A(r, sh.a.col[k]) = double(A_[k]);
  }
  // a nonconvex P (possible when the caller turned the input check off) has
  // KKT points that are not minima: not this method's business
  {
    Mat Pr = P;
    Pr.diagonal().array() += double(st.psd_tol) * std::max(1.0, P.diagonal().cwiseAbs().maxCoeff());
    if (!P.allFinite() || Eigen::LLT<Mat>(Pr).info() != Eigen::Success) {
      info.status = SolveStatus::kNumericalError;
      return info;
    }
  }
  // data the input check would refuse (a caller may have turned it off)
  bool bad_b = false;
  for (int r = 0; r < m; ++r)
    bad_b = bad_b || std::isnan(b[r]) || b[r] == -std::numeric_limits<double>::infinity() ||
            (r < n_eq && !std::isfinite(b[r]));
  if (bad_b || !q.allFinite() || !A.allFinite()) {
    info.status = SolveStatus::kNumericalError;
    return info;
  }
  // the rows kept: zero cones, then the nonnegative rows with a bound (b < +inf)
  IsaVector<int> in_rows;
  for (int r = n_eq; r < m; ++r)
    if (std::isfinite(b[r])) in_rows.push_back(r);
  const int n_in = int(in_rows.size());

  // Ruiz equilibration of [P Aᵀ; A 0] (OSQP's bounds on a pass's factors)
  Vec D = Vec::Ones(n), E = Vec::Ones(m);
  Mat Ps = P, As = A;
  for (int pass = 0; pass < 25; ++pass) {
    Vec dcol(n), erow(m);
    for (int j = 0; j < n; ++j) {
      double v = Ps.col(j).cwiseAbs().maxCoeff();
      if (m > 0) v = std::max(v, As.col(j).cwiseAbs().maxCoeff());
      dcol[j] = v < 1e-4 ? 1.0 : 1.0 / std::sqrt(std::min(v, 1e4));
    }
    // the rows' maxima by columns (A is stored by columns)
    const Vec rmax = n > 0 ? Vec(As.cwiseAbs().rowwise().maxCoeff()) : Vec::Zero(m);
    for (int r = 0; r < m; ++r) {
      const double v = rmax[r];
      erow[r] = v < 1e-4 ? 1.0 : 1.0 / std::sqrt(std::min(v, 1e4));
    }
    Ps = dcol.asDiagonal() * Ps * dcol.asDiagonal();
    As = erow.asDiagonal() * As * dcol.asDiagonal();
    D = D.cwiseProduct(dcol);
    E = E.cwiseProduct(erow);
  }
  Vec qs = D.cwiseProduct(q);
  double cost = 1.0;
  {
    double mean_col = 0;
    for (int j = 0; j < n; ++j) mean_col += Ps.col(j).cwiseAbs().maxCoeff();
    mean_col /= std::max(n, 1);
    const double v = std::max(mean_col, qs.cwiseAbs().maxCoeff());
    if (v > 1e-4) cost = 1.0 / std::min(v, 1e4);
  }
  Ps *= cost;
  qs *= cost;
  // the scaled blocks: x = D x̄, y = E ȳ / c, s = s̄ / E
  Mat Aeq = As.topRows(n_eq), Ain(n_in, n);
  Vec beq = E.head(n_eq).cwiseProduct(b.head(n_eq)), bin(n_in);
  for (int i = 0; i < n_in; ++i) {
    Ain.row(i) = As.row(in_rows[i]);
    bin[i] = E[in_rows[i]] * b[in_rows[i]];
  }

  NewtonSystem sys;
  Vec x(n), yeq(n_eq), z(n_in), s(n_in);
  // start: min ½x̄ᵀP̄x̄ + q̄ᵀx̄ + ½‖Āᵢₙx̄ − b̄ᵢₙ‖² s.t. Āₑ x̄ = b̄ₑ, then s and z
  // shifted into the interior (Mehrotra's heuristic)
  if (!sys.factor(Ps, Ain, Vec::Ones(n_in), Aeq)) {
    info.status = SolveStatus::kNumericalError;
    return info;
  }
  sys.solve(-qs + Ain.transpose() * bin, beq, x, yeq);
  if (n_in > 0) {
    s = bin - Ain * x;
    z = -s;
    const double ds = std::max(-1.5 * s.minCoeff(), 0.0), dz = std::max(-1.5 * z.minCoeff(), 0.0);
    s.array() += ds;
    z.array() += dz;
    const double sz = s.dot(z);
    s.array() += 0.5 * sz / std::max(z.sum(), 1e-300);
    z.array() += 0.5 * sz / std::max(s.sum(), 1e-300);
    if (!(s.minCoeff() > 0)) s.array() += 1.0;
    if (!(z.minCoeff() > 0)) z.array() += 1.0;
  }

  // the stopping test in the original units: the ADMM solver's check on the
  // original data, with the gap always (ADMM's y is complementary to its slack
  // by construction, the interior point's only in the limit: its residuals can
  // vanish while sᵀz is still large, so check_gap = false does not switch it
  // off here); fills info's residuals
  const IsaVector<double> Pv(P_, P_ + size_t(n) * n), Av(A_, A_ + sh.a.nnz);
  const QpData<double, UnitStride> d{unit_view(static_cast<const double*>(Pv.data())),
                                     unit_view(static_cast<const double*>(q.data())),
                                     unit_view(Av.data()), unit_view(static_cast<const double*>(b.data()))};
  IsaVector<double> work(qp_work_host_size(n, m));
  auto w = QpWork<double, UnitStride>::carve(unit_view(qp_work_align(work.data())), n, m);
  detail::qp_equilibrate(sh, d, w, 0, 1.0);  // D = E = c = 1
  QpSettings<double> check_st;
  check_st.eps_abs = double(st.eps_abs);
  check_st.eps_rel = double(st.eps_rel);
  check_st.check_gap = true;
  detail::QpCheck<double> check;
  Vec xo = Vec::Zero(n), yo = Vec::Zero(m), Px = Vec::Zero(n), Ax = Vec::Zero(m);
  auto converged = [&]() {
    xo = D.cwiseProduct(x);
    yo.setZero();
    for (int r = 0; r < n_eq; ++r) yo[r] = E[r] * yeq[r] / cost;
    for (int i = 0; i < n_in; ++i) yo[in_rows[i]] = E[in_rows[i]] * z[i] / cost;
    Px.noalias() = P * xo;
    Ax.noalias() = A * xo;
    // ADMM's own check (solvers/qp_admm.h) at z = Π_C(Ax), scales 1
    for (int r = 0; r < m; ++r) w.z[r] = r < n_eq ? b[r] : std::min(Ax[r], b[r]);
    const SolveStatus verdict = detail::qp_check_residuals(sh, d, w, false, unit_view(xo.data()),
                                                           unit_view(yo.data()), check_st, check);
    info.prim_res = T(check.prim_res);
    info.dual_res = T(check.dual_res);
    return verdict == SolveStatus::kSolved;
  };


  SolveStatus status = SolveStatus::kMaxIterations;
  int it = 0;
  Vec dx, dy, dz, ds, adx;
  for (;; ++it) {
    if (!x.allFinite() || !yeq.allFinite() || !z.allFinite() || !s.allFinite()) {
      status = SolveStatus::kNumericalError;
      break;
    }
    if (converged()) {
      status = SolveStatus::kSolved;
      break;
    }
    if (it + 1 >= max_iter) break;
    // residuals of the scaled problem
    const Vec rd = Ps * x + qs + Aeq.transpose() * yeq + Ain.transpose() * z;
    const Vec re = Aeq * x - beq;
    const Vec ri = Ain * x + s - bin;
    const double mu = n_in > 0 ? s.dot(z) / n_in : 0.0;
    const Vec zs = z.cwiseQuotient(s);  // the barrier's weights z ⊘ s
    if (!sys.factor(Ps, Ain, zs, Aeq)) {
      status = SolveStatus::kNumericalError;
      break;
    }
    // one Newton direction for the complementarity right-hand side rsz
    auto direction = [&](const Vec& rsz) {
      const Vec g1 = -rd - Ain.transpose() * (zs.cwiseProduct(ri) - rsz.cwiseQuotient(s));
      sys.solve(g1, -re, dx, dy);
      adx.noalias() = Ain * dx;
      dz = zs.cwiseProduct(adx + ri) - rsz.cwiseQuotient(s);
      ds = -ri - adx;
    };
    // predictor (affine scaling), then the centred corrector
    direction(s.cwiseProduct(z));
    double alpha = std::min(max_step(s, ds), max_step(z, dz));
    if (n_in > 0) {
      const double mu_aff = (s + alpha * ds).dot(z + alpha * dz) / n_in;
      const double sigma = std::pow(std::max(mu_aff, 0.0) / std::max(mu, 1e-300), 3);
      const Vec rsz = s.cwiseProduct(z) + ds.cwiseProduct(dz) - Vec::Constant(n_in, sigma * mu);
      direction(rsz);
      alpha = std::min(1.0, 0.99 * std::min(max_step(s, ds), max_step(z, dz)));
    }
    x += alpha * dx;
    yeq += alpha * dy;
    z += alpha * dz;
    s += alpha * ds;
  }
  for (int i = 0; i < n; ++i) x_out[i] = T(xo[i]);
  for (int r = 0; r < m; ++r) y_out[r] = T(yo[r]);
  double obj = 0.5 * xo.dot(Px) + q.dot(xo), lag = 0;
  for (int r = 0; r < m; ++r)
    if (yo[r] != 0) lag += yo[r] * (Ax[r] - b[r]);
  info.status = status;
  info.iterations = it + 1;  // Newton systems solved, the starting point's included
  info.objective = T(obj);
  info.value = T(obj + lag);
  return info;
}

}  // namespace

// the set's table entry (host/batch/lane_kernels.h): the job's plain data as
// this set's types
template <class T>
void qp_ipm_job(const lanes::IpmJob<T>& j) {
  static_assert(std::is_trivially_copyable<QpSettings<T>>::value, "settings cross as bytes");
  static_assert(std::is_trivially_copyable<QpInfo<T>>::value, "results cross as bytes");
  static_assert(std::is_trivially_copyable<QpShape>::value, "the shape crosses as bytes");
  QpSettings<T> st;
  std::memcpy(static_cast<void*>(&st), j.settings, sizeof st);
  QpShape sh;
  std::memcpy(static_cast<void*>(&sh), j.shape, sizeof sh);
  const QpInfo<T> info = ipm_solve(sh, j.P, j.q, j.A, j.b, j.x, j.y, st, j.max_iter);
  std::memcpy(j.info, static_cast<const void*>(&info), sizeof info);
}

template void qp_ipm_job(const lanes::IpmJob<float>&);
template void qp_ipm_job(const lanes::IpmJob<double>&);

IMPULSE_NAMESPACE_END
