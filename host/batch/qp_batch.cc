#include "host/batch/qp_batch.h"

#include "host/batch/lane_kernels.h"
#include "host/batch/qp_ipm.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>

namespace impulse {

Backend parse_backend(const std::string& s) {
  if (s == "cpu") return Backend::kCpu;
  if (s == "cuda" || s == "gpu") return Backend::kCuda;
  throw Error("unknown backend '" + s + "': expected cpu or cuda");
}

const char* to_string(Backend b) { return b == Backend::kCpu ? "cpu" : "cuda"; }

// ---- QpBatch -------------------------------------------------------------------

namespace {

// A's CSR pattern (m rows, n columns, nnz entries): an Error naming the row or entry
// that breaks it
void check_pattern(int m, int n, int nnz, const int* row_ptr, const int* col) {
  if (row_ptr[0] != 0 || row_ptr[m] != nnz)
    throw Error("A pattern: row pointers run from " + std::to_string(row_ptr[0]) + " to " +
                std::to_string(row_ptr[m]) + ", expected 0 to nnz = " + std::to_string(nnz));
  for (int r = 0; r < m; ++r) {
    if (row_ptr[r + 1] < row_ptr[r]) throw Error("A pattern: row pointers decrease at row " + std::to_string(r));
    for (int k = row_ptr[r]; k < row_ptr[r + 1]; ++k)
      if (col[k] < 0 || col[k] >= n || (k > row_ptr[r] && col[k] <= col[k - 1]))
        throw Error("A pattern: entry " + std::to_string(k) + " (row " + std::to_string(r) + ") has column " +
                    std::to_string(col[k]) + ": columns must lie in [0, " + std::to_string(n) +
                    ") and increase along a row");
  }
}

}  // namespace

template <class T>
QpBatch<T> QpBatch<T>::with_pattern(int size, int n, ConeSpec cones, std::vector<int> row_ptr,
                                    std::vector<int> col) {
  if (size < 0) throw Error("batch size must be >= 0, got " + std::to_string(size));
  if (n < 1) throw Error("n must be >= 1, got " + std::to_string(n));
  if (cones.n_zero < 0 || cones.n_nonneg < 0 || cones.n_soc < 0)
    throw Error("cone counts must be >= 0");
  QpBatch<T> bt;
  bt.size = size;
  bt.n = n;
  bt.cones = cones;
  bt.a_row_ptr = std::move(row_ptr);
  bt.a_col = std::move(col);
  const int m = cones.rows();
  if (static_cast<int>(bt.a_row_ptr.size()) != m + 1)
    throw Error("A pattern: expected " + std::to_string(m + 1) + " row pointers, got " +
                std::to_string(bt.a_row_ptr.size()));
  check_pattern(m, n, bt.nnz(), bt.a_row_ptr.data(), bt.a_col.data());
  bt.P.assign(size_t(size) * n * n, T(0));
  bt.q.assign(size_t(size) * n, T(0));
  bt.A.assign(size_t(size) * bt.nnz(), T(0));
  bt.b.assign(size_t(size) * m, T(0));
  return bt;
}

template <class T>
QpBatch<T> QpBatch<T>::dense(int size, int n, ConeSpec cones) {
  const int m = cones.rows();
  std::vector<int> row_ptr(m + 1), col;
  col.reserve(size_t(m) * n);
  for (int r = 0; r < m; ++r) {
    row_ptr[r] = r * n;
    for (int j = 0; j < n; ++j) col.push_back(j);
  }
  row_ptr[m] = m * n;
  return with_pattern(size, n, cones, std::move(row_ptr), std::move(col));
}

template <class T>
void QpBatch<T>::set_A_dense(int k, const T* dense) {
  const int nz = nnz();
  T* dst = A.data() + size_t(k) * nz;
  for (int r = 0; r < m(); ++r) {
    int kk = a_row_ptr[r];
    for (int j = 0; j < n; ++j) {
      const T v = dense[size_t(r) * n + j];
      if (kk < a_row_ptr[r + 1] && a_col[kk] == j) {
        dst[kk++] = v;
      } else if (v != T(0)) {
        throw Error("problem " + std::to_string(k) + ": A(" + std::to_string(r) + ", " +
                    std::to_string(j) + ") is nonzero but outside the batch's pattern");
      }
    }
  }
}

template <class T>
std::vector<T> QpBatch<T>::A_dense(int k) const {
  std::vector<T> d(size_t(m()) * n, T(0));
  const T* src = A.data() + size_t(k) * nnz();
  for (int r = 0; r < m(); ++r)
    for (int kk = a_row_ptr[r]; kk < a_row_ptr[r + 1]; ++kk) d[size_t(r) * n + a_col[kk]] = src[kk];
  return d;
}

template <class T>
QpBatch<T> QpBatch<T>::from_dense(int size, int n, ConeSpec cones, const std::vector<T>& P_,
                                  const std::vector<T>& q_, const std::vector<T>& A_dense_,
                                  const std::vector<T>& b_) {
  const int m = cones.rows();
  if (A_dense_.size() != size_t(size) * m * n)
    throw Error("A: expected " + std::to_string(size_t(size) * m * n) + " entries (" +
                std::to_string(size) + " x " + std::to_string(m) + " x " + std::to_string(n) +
                "), got " + std::to_string(A_dense_.size()));
  // union of nonzeros (a NaN counts as a nonzero, so that it is reported later)
  std::vector<char> used(size_t(m) * n, 0);
  for (int k = 0; k < size; ++k)
    for (size_t e = 0; e < used.size(); ++e)
      if (A_dense_[size_t(k) * m * n + e] != T(0)) used[e] = 1;
  std::vector<int> row_ptr(m + 1, 0), col;
  for (int r = 0; r < m; ++r) {
    for (int j = 0; j < n; ++j)
      if (used[size_t(r) * n + j]) col.push_back(j);
    row_ptr[r + 1] = static_cast<int>(col.size());
  }
  QpBatch<T> bt = with_pattern(size, n, cones, std::move(row_ptr), std::move(col));
  bt.P = P_;
  bt.q = q_;
  bt.b = b_;
  bt.check_sizes();
  for (int k = 0; k < size; ++k) bt.set_A_dense(k, A_dense_.data() + size_t(k) * m * n);
  return bt;
}

template <class T>
void QpBatch<T>::check_sizes() const {
  auto expect = [](const char* name, size_t got, size_t want, const std::string& how) {
    if (got != want)
      throw Error(std::string(name) + ": expected " + std::to_string(want) + " entries (" + how +
                  "), got " + std::to_string(got));
  };
  const std::string B = std::to_string(size), N = std::to_string(n), M = std::to_string(m());
  expect("P", P.size(), size_t(size) * n * n, B + " x " + N + " x " + N);
  expect("q", q.size(), size_t(size) * n, B + " x " + N);
  expect("A", A.size(), size_t(size) * nnz(), B + " x nnz " + std::to_string(nnz()));
  expect("b", b.size(), size_t(size) * m(), B + " x " + M);
  expect("A row pointers", a_row_ptr.size(), size_t(m()) + 1, "m + 1");
}

template <class T>
cuda::HostQpArrays<T> QpBatch<T>::device_arrays() const {
  return view().device_arrays();
}

template <class T>
QpData<T, UnitStride> QpBatch<T>::problem(int k) const {
  return view().problem(k);
}

template <class T>
QpShape QpBatch<T>::shape() const {
  return view().shape();
}

template <class T>
QpBatchView<T> QpBatch<T>::view() const {
  QpBatchView<T> v;
  v.size = size;
  v.n = n;
  v.cones = cones;
  v.nnz_count = nnz();
  v.a_row_ptr = a_row_ptr.data();
  v.a_col = a_col.data();
  v.P = P.data();
  v.q = q.data();
  v.A = A.data();
  v.b = b.data();
  return v;
}

template <class T>
void QpBatchView<T>::check() const {
  if (size < 0 || n < 0 || nnz_count < 0 || cones.n_zero < 0 || cones.n_nonneg < 0 || cones.n_soc < 0)
    throw Error("batch view: negative size (B " + std::to_string(size) + ", n " + std::to_string(n) + ", nnz " +
                std::to_string(nnz_count) + ", cones " + std::to_string(cones.n_zero) + "/" +
                std::to_string(cones.n_nonneg) + "/" + std::to_string(cones.n_soc) + ")");
  const int rows = m();
  // (an array with no entries may be null)
  const std::tuple<const void*, const char*, bool> arrays[] = {{a_row_ptr, "A's row pointers", true},
                                                              {P, "P", n > 0},
                                                              {q, "q", n > 0},
                                                              {b, "b", rows > 0},
                                                              {A, "A", nnz_count > 0},
                                                              {a_col, "A's columns", nnz_count > 0}};
  for (const auto& [ptr, name, needed] : arrays)
    if (ptr == nullptr && needed) throw Error(std::string("batch view: ") + name + " is null");
  check_pattern(rows, n, nnz_count, a_row_ptr, a_col);
}

template <class T>
QpShape QpBatchView<T>::shape() const {
  QpShape s;
  s.n = n;
  s.cones = cones;
  s.a = CsrPattern{m(), n, nnz_count, a_row_ptr, a_col};
  return s;
}

template <class T>
QpData<T, UnitStride> QpBatchView<T>::problem(int k) const {
  return QpData<T, UnitStride>{unit_view(P + size_t(k) * n * n), unit_view(q + size_t(k) * n),
                               unit_view(A + size_t(k) * nnz_count), unit_view(b + size_t(k) * m())};
}

template <class T>
cuda::HostQpArrays<T> QpBatchView<T>::device_arrays() const {
  cuda::HostQpArrays<T> h;
  h.batch = size;
  h.n = n;
  h.cones = cones;
  h.nnz = nnz_count;
  h.a_row_ptr = a_row_ptr;
  h.a_col = a_col;
  h.P = P;
  h.q = q;
  h.A = A;
  h.b = b;
  return h;
}

template <class T>
template <class U>
QpBatch<U> QpBatch<T>::cast() const {
  QpBatch<U> o;
  o.size = size;
  o.n = n;
  o.cones = cones;
  o.a_row_ptr = a_row_ptr;
  o.a_col = a_col;
  o.P.assign(P.begin(), P.end());
  o.q.assign(q.begin(), q.end());
  o.A.assign(A.begin(), A.end());
  o.b.assign(b.begin(), b.end());
  return o;
}

// ---- QpSolutions -----------------------------------------------------------------

template <class T>
cuda::HostQpResults<T> QpSolutions<T>::device_results(std::vector<int>& codes) {
  codes.assign(2 * size_t(size), 0);
  cuda::HostQpResults<T> r;
  r.x = x.data(), r.y = y.data(), r.objective = objective.data(), r.value = value.data();
  r.prim_res = prim_res.data(), r.dual_res = dual_res.data();
  r.status = codes.data(), r.fault = codes.data() + size;
  r.iterations = iterations.data(), r.rho_updates = rho_updates.data();
  r.rho = rho.data();
  return r;
}

template <class T>
void QpSolutions<T>::take_codes(const std::vector<int>& codes) {
  for (int k = 0; k < size; ++k) {
    status[k] = static_cast<SolveStatus>(codes[size_t(k)]);
    fault[k] = static_cast<InputFault>(codes[size_t(size) + k]);
  }
}

template <class T>
void QpSolutions<T>::resize(int size_, int n_, int m_) {
  const bool keep = size == size_ && n == n_ && m == m_;
  size = size_;
  n = n_;
  m = m_;
  if (!keep) {
    x.assign(size_t(size) * n, T(0));
    y.assign(size_t(size) * m, T(0));
    rho.assign(size, T(0));
  }
  objective.assign(size, T(0));
  value.assign(size, T(0));
  prim_res.assign(size, T(0));
  dual_res.assign(size, T(0));
  status.assign(size, SolveStatus::kNotRun);
  fault.assign(size, InputFault::kNone);
  fault_text.assign(size, std::string());
  iterations.assign(size, 0);
  rho_updates.assign(size, 0);
  ipm_iterations.assign(size, 0);
  solve_us.assign(size, 0.0);
}

template <class T>
std::vector<std::string> QpSolutions<T>::problems_not_solved() const {
  std::vector<std::string> out;
  for (int k = 0; k < size; ++k) {
    if (status[k] == SolveStatus::kSolved) continue;
    std::ostringstream os;
    os << "problem " << k << ": " << to_string(status[k]);
    if (size_t(k) < fault_text.size() && !fault_text[k].empty())
      os << " (" << fault_text[k] << ")";
    else if (status[k] == SolveStatus::kInvalidInput)
      os << " (" << to_string(fault[k]) << ")";
    out.push_back(os.str());
  }
  return out;
}

template <class T>
int QpSolutions<T>::count(SolveStatus s) const {
  return static_cast<int>(std::count(status.begin(), status.end(), s));
}

// ---- solve_batch -----------------------------------------------------------------

namespace {

// "the primal residual 1.0e-04 at 2.1x its tolerance 4.9e-05, ..." for those of
// the last check's primal and dual residuals and duality gap above their
// tolerances (all three when none is; a tolerance 0 is one not recorded)
template <class T>
std::string residuals_text(const QpInfo<T>& info) {
  struct Term {
    const char* name;
    double value, tol;
  };
  const Term terms[3] = {{"primal residual", double(info.prim_res), double(info.eps_prim)},
                         {"dual residual", double(info.dual_res), double(info.eps_dual)},
                         {"duality gap", double(info.gap), double(info.eps_gap)}};
  bool any_over = false;
  for (const Term& t : terms) any_over = any_over || (t.tol > 0 && !(t.value <= t.tol));
  std::string out;
  char buf[160];
  for (const Term& t : terms) {
    if (any_over && !(t.tol > 0 && !(t.value <= t.tol))) continue;
    if (t.tol > 0)
      std::snprintf(buf, sizeof buf, "the %s %.1e at %.3gx its tolerance %.1e", t.name, t.value,
                    t.value / t.tol, t.tol);
    else if (&t == &terms[2])
      continue;  // the gap is not recorded
    else
      std::snprintf(buf, sizeof buf, "the %s %.1e", t.name, t.value);
    out += (out.empty() ? "" : ", ") + std::string(buf);
  }
  return out;
}

// Why problem k is not solved (QpSolutions::fault_text), from its final info,
// the interior point's iterations (QpSolutions::ipm_iterations) and whether
// it applies to the shape; empty when solved.
template <class T>
std::string fault_text_of(const QpInfo<T>& info, int ipm_iterations, bool ipm_eligible,
                          const QpSettings<T>& st) {
  char buf[256];
  switch (info.status) {
    case SolveStatus::kSolved:
      return std::string();
    case SolveStatus::kInvalidInput:
      return to_string(info.fault);
    case SolveStatus::kNotRun:
      return "not run";
    case SolveStatus::kRayTermination:
      return "ray termination";
    case SolveStatus::kPrimalInfeasible:
      std::snprintf(buf, sizeof buf,
                    "primal infeasible: a certificate (a dual direction y with A'y = 0 in the "
                    "dual cone and b'y < 0) at iteration %d",
                    info.iterations);
      return buf;
    case SolveStatus::kDualInfeasible:
      std::snprintf(buf, sizeof buf,
                    "dual infeasible, the objective unbounded below: a certificate (a direction x "
                    "with Px = 0, Ax in -K and q'x < 0) at iteration %d",
                    info.iterations);
      return buf;
    case SolveStatus::kNumericalError:
      if (info.iterations == 0)
        return "K = P + sigma I + A' rho A could not be factored at the start";
      if (!std::isfinite(double(info.prim_res)) || !std::isfinite(double(info.dual_res))) {
        std::snprintf(buf, sizeof buf, "the iterate stopped being finite at iteration %d", info.iterations);
        return buf;
      }
      std::snprintf(buf, sizeof buf,
                    "at iteration %d the factorization after a rho update failed or the iterate "
                    "stopped being finite",
                    info.iterations);
      return buf;
    case SolveStatus::kMaxIterations:
    case SolveStatus::kSolvedInaccurate:
      break;
  }
  std::string t;
  std::snprintf(buf, sizeof buf, "the budget of %d iterations ran out%s with ", info.iterations,
                info.status == SolveStatus::kSolvedInaccurate ? " within 10x of the tolerances" : "");
  t = buf + residuals_text(info);
  if (info.stall_iteration > 0) {
    const int aa_end = st.max_iter / 8;
    if (info.switch_remaining > 0)
      std::snprintf(buf, sizeof buf,
                    "; at iteration %d ADMM's residuals extrapolated to %.0f further iterations, more "
                    "than an interior-point solve costs (ipm_switch %d)",
                    info.stall_iteration, double(info.switch_remaining), st.ipm_switch);
    else if (st.anderson > 0 && info.stall_iteration == aa_end &&
             info.stall_iteration - info.stall_best_iteration < st.max_iter / 8)
      std::snprintf(buf, sizeof buf,
                    "; Anderson acceleration's budget (max_iter/8, %d iterations) ran out unsolved",
                    aa_end);
    else
      std::snprintf(buf, sizeof buf,
                    "; ADMM stalled at iteration %d (its residual ratio's best, %.3g at iteration %d, "
                    "not bettered by 1%% since)",
                    info.stall_iteration, double(info.stall_best_ratio), info.stall_best_iteration);
    t += buf;
    if (ipm_iterations > 0) {
      std::snprintf(buf, sizeof buf, ", the interior point did not solve it in %d iterations", ipm_iterations);
      t += buf;
    } else if (!ipm_eligible) {
      t += ", the interior point does not take second-order cones";
    }
    if (info.restart_iteration > 0) {
      std::snprintf(buf, sizeof buf, ", and ADMM restarted with the fallback settings at iteration %d",
                    info.restart_iteration);
      t += buf;
    }
  } else {
    if (st.fallback)
      t += "; no stall (its residual ratio kept setting a new low, 1% below the last, within every "
           "eighth of the budget)";
    if (info.rho_updates >= st.max_rho_updates && st.adaptive_rho) {
      std::snprintf(buf, sizeof buf, "; its rho updates were used up (%d, at most %d a solve)",
                    info.rho_updates, st.max_rho_updates);
      t += buf;
    }
  }
  return t;
}

template <class T>
void store_info(const QpInfo<T>& info, int k, QpSolutions<T>& out, bool ipm_eligible,
                const QpSettings<T>& settings) {
  out.fault_text[k] = fault_text_of(info, out.ipm_iterations[k], ipm_eligible, settings);
  out.objective[k] = info.objective;
  out.value[k] = info.value;
  out.prim_res[k] = info.prim_res;
  out.dual_res[k] = info.dual_res;
  out.status[k] = info.status;
  out.fault[k] = info.fault;
  out.iterations[k] = info.iterations;
  out.rho_updates[k] = info.rho_updates;
  out.rho[k] = info.rho;
}

// The interior point's iteration bound after a stall (within what is left of
// the budget): it converges in 15-40 on the Maros-Meszaros problems.
constexpr int kIpmMaxIterations = 100;

// Problem k after a stall (QpSettings::stall_return; `so_far` is what ADMM
// did): the interior-point finish from scratch (host/batch/qp_ipm.h). True when
// it solved, with its answer in x, y and `result`; false when it does not apply
// or does not solve, and then the lane kernels restart ADMM cold with the
// fallback settings for the rest of the budget (host/batch/lane_solve.cc, as
// qp_admm_solve does itself after a stall). `used` gets the iterations so far,
// the interior point's included; out.ipm_iterations[k] says how many were its.
template <class T>
bool ipm_finish(const QpBatchView<T>& batch, const QpShape& shape, int k, const QpSettings<T>& settings,
                const QpInfo<T>& so_far, T* x, T* y, QpSolutions<T>& out, QpInfo<T>& result, int& used) {
  const int n = batch.n, m = batch.m(), nnz = batch.nnz();
  used = so_far.iterations;
  if (!qp_ipm_eligible(shape) || settings.max_iter - used <= 1) return false;
  std::vector<T> xi(n), yi(m);
  // to a hundredth of the tolerance (not below 1e-11 unless the tolerance
  // is): near the end the interior point converges fast, and the answer then
  // has the accuracy an ADMM solve reaches by overshooting its last check (on
  // the recorded ContactNets QPs at eps 1e-6, the value of a problem finished
  // at eps itself was 2e-6 off, relative, and at a tenth of it 6e-6 on the
  // ones QpSettings::ipm_switch hands over); at the tolerance itself if that fails
  const auto ipm_solve = [&](const QpSettings<T>& st, int cap) {
    return qp_ipm_solve(shape, batch.P + size_t(k) * n * n, batch.q + size_t(k) * n, batch.A + size_t(k) * nnz,
                        batch.b + size_t(k) * m, xi.data(), yi.data(), st, std::min(kIpmMaxIterations, cap));
  };
  QpSettings<T> tight = settings;
  const auto tighter = [](T eps) { return std::max(T(0.001) * eps, std::min(eps, T(1e-11))); };
  tight.eps_abs = tighter(settings.eps_abs);
  tight.eps_rel = tighter(settings.eps_rel);
  QpInfo<T> ipm = ipm_solve(tight, settings.max_iter - used - 1);
  if (ipm.status != SolveStatus::kSolved && settings.max_iter - used - ipm.iterations > 1) {
    const int spent = ipm.iterations;
    ipm = ipm_solve(settings, settings.max_iter - used - spent - 1);
    ipm.iterations += spent;
  }
  out.ipm_iterations[k] = ipm.iterations;
  used += ipm.iterations;
  if (ipm.status != SolveStatus::kSolved) return false;
  std::copy(xi.begin(), xi.end(), x);
  std::copy(yi.begin(), yi.end(), y);
  ipm.iterations = used;
  ipm.rho_updates = so_far.rho_updates;
  ipm.rho = T(0);  // no ρ to resume from (QpInfo::rho): the next warm start takes the settings'
  result = ipm;
  return true;
}

// The CPU path in lane groups, in the lane kernels of the instruction set in
// use (host/batch/lane_kernels.h; host/batch/lane_solve.cc holds the path):
// they call back here when a problem's solve ends and when one stalls.
template <class T>
struct LaneCtx {
  const QpBatchView<T>* batch;
  const QpShape* shape;
  const QpSettings<T>* settings;
  bool ipm_eligible;
  QpSolutions<T>* out;
};

template <class T>
void lane_done(void* ctx, int k, const void* info_bytes) {
  const auto& c = *static_cast<const LaneCtx<T>*>(ctx);
  QpInfo<T> info;
  std::memcpy(static_cast<void*>(&info), info_bytes, sizeof info);
  store_info(info, k, *c.out, c.ipm_eligible, *c.settings);
}

template <class T>
bool lane_ipm(void* ctx, int k, const void* so_far_bytes, T* x, T* y, void* info_bytes, int* used) {
  const auto& c = *static_cast<const LaneCtx<T>*>(ctx);
  QpInfo<T> so_far, info;
  std::memcpy(static_cast<void*>(&so_far), so_far_bytes, sizeof so_far);
  if (!ipm_finish(*c.batch, *c.shape, k, *c.settings, so_far, x, y, *c.out, info, *used)) return false;
  std::memcpy(info_bytes, static_cast<const void*>(&info), sizeof info);
  return true;
}

template <class T>
void solve_cpu(const QpBatchView<T>& batch, const QpSettings<T>& settings,
               const BatchOptions& options, int threads, QpSolutions<T>& out) {
  static_assert(std::is_trivially_copyable<QpSettings<T>>::value && std::is_trivially_copyable<QpInfo<T>>::value,
                "the lane kernels take settings and give results as bytes");
  const QpShape shape = batch.shape();
  // the switch to the interior point only where it applies (QpSettings::ipm_switch),
  // its automatic threshold from the batch's shape
  QpSettings<T> run = settings;
  const bool ipm_eligible = qp_ipm_eligible(shape);
  if (!ipm_eligible)
    run.ipm_switch = 0;
  else if (run.ipm_switch == kQpIpmSwitchAuto)
    run.ipm_switch = qp_ipm_switch_auto(shape);
  LaneCtx<T> ctx{&batch, &shape, &run, ipm_eligible, &out};
  lanes::QpJob<T> j;
  j.size = batch.size;
  j.n = batch.n;
  j.m = batch.m();
  j.nnz = batch.nnz();
  j.n_zero = batch.cones.n_zero;
  j.n_nonneg = batch.cones.n_nonneg;
  j.n_soc = batch.cones.n_soc;
  j.a_row_ptr = batch.a_row_ptr;
  j.a_col = batch.a_col;
  j.P = batch.P;
  j.q = batch.q;
  j.A = batch.A;
  j.b = batch.b;
  j.settings = &run;
  j.warm_start = options.warm_start;
  j.warm_rho = options.warm_start && options.warm_rho ? out.rho.data() : nullptr;
  j.x = out.x.data();
  j.y = out.y.data();
  j.solve_us = options.time_each ? out.solve_us.data() : nullptr;
  j.threads = threads;
  j.ctx = &ctx;
  j.done = &lane_done<T>;
  j.ipm = &lane_ipm<T>;
  const lanes::Kernels& k = lanes::kernels();
  if (options.factors) {
    QpFactorStore::Layout layout;
    layout.size = batch.size, layout.n = batch.n, layout.m = batch.m(), layout.nnz = batch.nnz();
    layout.lane_bytes = k.bytes, layout.elem = sizeof(T), layout.lanes = options.lanes;
    layout.stride = lanes::kept_region_bytes(batch.n, batch.m(), sizeof(T), k.bytes, options.lanes);
    const size_t W = size_t(k.bytes) / sizeof(T);
    layout.regions = options.lanes ? (size_t(batch.size) + W - 1) / W : size_t(batch.size);
    bool usable = false;
    j.kept = options.factors->regions(layout, usable);
    j.kept_stride = layout.stride;
    j.reuse = options.reuse_factors && usable;
  }
  if constexpr (std::is_same<T, float>::value)
    (options.lanes ? k.qp_float : k.each_float)(j);
  else
    (options.lanes ? k.qp_double : k.each_double)(j);
}

// problems without an optimum to report (invalid input, a numerical error,
// an infeasibility certificate) get NaN objective and value: never a
// plausible 0 a caller could take for an answer
template <class T>
void nan_without_optimum(QpSolutions<T>& out) {
  for (int k = 0; k < out.size; ++k) {
    const SolveStatus s = out.status[k];
    if (s == SolveStatus::kInvalidInput || s == SolveStatus::kNumericalError ||
        s == SolveStatus::kPrimalInfeasible || s == SolveStatus::kDualInfeasible)
      out.objective[k] = out.value[k] = std::numeric_limits<T>::quiet_NaN();
  }
}

template <class T>
void solve_batch_paths(const QpBatchView<T>& batch, const QpSettings<T>& settings,
                 const BatchOptions& options, QpSolutions<T>& out) {
  if (const char* bad = settings.validate()) throw Error(std::string("invalid settings: ") + bad);
  if (batch.size == 0) throw Error("empty batch: nothing to solve (batch size 0)");
  batch.check();
  const int B = batch.size, n = batch.n, m = batch.m();
  if (options.warm_start) {
    if (out.x.size() != size_t(B) * n || out.y.size() != size_t(B) * m)
      throw Error("warm start: expected x of " + std::to_string(size_t(B) * n) + " and y of " +
                  std::to_string(size_t(B) * m) + " entries, got " + std::to_string(out.x.size()) +
                  " and " + std::to_string(out.y.size()));
    for (size_t i = 0; i < out.x.size(); ++i)
      if (!std::isfinite(out.x[i])) throw Error("warm start: x has a NaN or Inf entry");
    for (size_t i = 0; i < out.y.size(); ++i)
      if (!std::isfinite(out.y[i])) throw Error("warm start: y has a NaN or Inf entry");
    if (options.warm_rho) {
      if (out.rho.size() != size_t(B))
        throw Error("warm start: expected rho of " + std::to_string(B) + " entries, got " +
                    std::to_string(out.rho.size()));
      for (int k = 0; k < B; ++k)  // 0: none (the settings' ρ)
        if (!std::isfinite(out.rho[k]) || out.rho[k] < T(0) ||
            (out.rho[k] > T(0) && (out.rho[k] < settings.rho_min || out.rho[k] > settings.rho_max)))
          throw Error("warm start: rho of problem " + std::to_string(k) + " is " + std::to_string(out.rho[k]) +
                      ": it must be 0 (none) or within [rho_min, rho_max]");
    }
  }
  out.resize(B, n, m);

  if (options.backend == Backend::kCuda) {
    if (options.factors)
      throw Error("BatchOptions::factors keeps the CPU's factorizations; on the device, DeviceQpBatch::keep_factors");
    std::vector<int> codes;
    cuda::HostQpResults<T> r = out.device_results(codes);
    cuda::DeviceQpBatch<T> dev(cuda::resolve_layout(options.device_layout, batch.n, batch.m(), batch.nnz(), sizeof(T)));
    dev.upload(batch.device_arrays());
    if (options.warm_start) dev.upload_warm_start(r);
    dev.solve(settings, options.warm_start, false, options.warm_rho);
    dev.download(r);
    out.take_codes(codes);
    // the device keeps no tolerances or stall record: the fault text says
    // what it returns
    for (int k = 0; k < B; ++k) {
      QpInfo<T> info;
      info.status = out.status[k];
      info.fault = out.fault[k];
      info.iterations = out.iterations[k];
      info.prim_res = out.prim_res[k];
      info.dual_res = out.dual_res[k];
      info.rho_updates = out.rho_updates[k];
      QpSettings<T> told = settings;
      told.fallback = false;  // (its stall restart is not recorded)
      told.adaptive_rho = false;
      out.fault_text[k] = fault_text_of(info, 0, false, told);
    }
    return;
  }

  // CPU: in lane groups or one problem at a time, in the lane kernels of the
  // instruction set in use (host/batch/lane_kernels.h)
  solve_cpu(batch, settings, options, resolve_threads(options.threads), out);
}

}  // namespace

void QpFactorStore::clear() { filled_ = false; }

unsigned char* QpFactorStore::regions(const Layout& layout, bool& usable) {
  const size_t want = layout.regions * layout.stride + 64;
  usable = filled_ && layout == layout_;
  if (!usable) {
    // zeroed: no region holds a usable factorization (its kQpKeptValid is 0)
    if (mem_.size() < want) mem_.resize(want);
    std::fill(mem_.begin(), mem_.end(), static_cast<unsigned char>(0));
    layout_ = layout;
  }
  filled_ = true;
  return qp_work_align(mem_.data());
}

template <class T>
void solve_batch(const QpBatchView<T>& batch, const QpSettings<T>& settings,
                 const BatchOptions& options, QpSolutions<T>& out) {
  solve_batch_paths(batch, settings, options, out);
  nan_without_optimum(out);
}

template <class T>
void solve_batch(const QpBatch<T>& batch, const QpSettings<T>& settings,
                 const BatchOptions& options, QpSolutions<T>& out) {
  // the arrays' sizes before a view points into them (invalid settings and an
  // empty batch are the view's solve's errors to report, first, as before)
  if (settings.validate() == nullptr && batch.size != 0) batch.check_sizes();
  solve_batch(batch.view(), settings, options, out);
}

template struct QpBatchView<float>;
template struct QpBatchView<double>;
template void solve_batch(const QpBatchView<float>&, const QpSettings<float>&, const BatchOptions&,
                          QpSolutions<float>&);
template void solve_batch(const QpBatchView<double>&, const QpSettings<double>&, const BatchOptions&,
                          QpSolutions<double>&);

template struct QpBatch<float>;
template struct QpBatch<double>;
template QpBatch<float> QpBatch<double>::cast<float>() const;
template QpBatch<double> QpBatch<float>::cast<double>() const;
template QpBatch<double> QpBatch<double>::cast<double>() const;
template struct QpSolutions<float>;
template struct QpSolutions<double>;
template <class T>
cuda::DeviceLayout device_layout_for(const QpBatch<T>& batch, const BatchOptions& options) {
  return cuda::resolve_layout(options.device_layout, batch.n, batch.m(), batch.nnz(), sizeof(T));
}
template cuda::DeviceLayout device_layout_for(const QpBatch<float>&, const BatchOptions&);
template cuda::DeviceLayout device_layout_for(const QpBatch<double>&, const BatchOptions&);

template void solve_batch(const QpBatch<float>&, const QpSettings<float>&, const BatchOptions&,
                          QpSolutions<float>&);
template void solve_batch(const QpBatch<double>&, const QpSettings<double>&, const BatchOptions&,
                          QpSolutions<double>&);

}  // namespace impulse
