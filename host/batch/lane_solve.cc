// The lane solvers for one instruction set (host/batch/lane_kernels.h).
//
// Compiled once per set with IMPULSE_ISA naming it (isa_sse2, isa_avx2,
// isa_avx512) and that set's -march: solvers/config.h then puts every solver
// function and type this file instantiates in the inline namespace
// impulse::IMPULSE_ISA, so none of them, compiled for this set, can stand in
// for a baseline one at link time (the build checks the objects' symbols:
// cmake/check_isa_symbols.cmake). What leaves this file is one C function,
// impulse_lane_kernels_<set>, that fills the set's table of plain-data entries.
//
// A problem's path is what host/batch/qp_batch.cc's lane path always was:
// groups of W problems in the lanes of one vector (qp_admm_solve_lanes), a
// group at most half full as single problems, a lane handed off going on alone
// from where it was, all with this set's arithmetic; a stall goes back to the
// caller's interior-point finish.
#if !defined(IMPULSE_ISA)
#error "host/batch/lane_solve.cc is compiled once per instruction set with IMPULSE_ISA defined (CMakeLists.txt)"
#endif

#include <algorithm>
#include <chrono>
#include <cstring>
#include <type_traits>
#include <vector>

#include "host/batch/lane_kernels.h"
#include "host/batch/parallel.h"
#include "solvers/impact_lcp.h"
#include "solvers/qp_admm_lanes.h"

#define IMPULSE_CAT2(a, b) a##b
#define IMPULSE_CAT(a, b) IMPULSE_CAT2(a, b)

namespace impulse {
inline namespace IMPULSE_ISA {
namespace {

template <class T>
struct Job {
  const lanes::QpJob<T>& j;
  QpSettings<T> st;
  QpShape shape;
  explicit Job(const lanes::QpJob<T>& job) : j(job) {
    static_assert(std::is_trivially_copyable<QpSettings<T>>::value, "settings cross as bytes");
    std::memcpy(static_cast<void*>(&st), job.settings, sizeof st);
    shape.n = job.n;
    shape.cones.n_zero = job.n_zero;
    shape.cones.n_nonneg = job.n_nonneg;
    shape.cones.n_soc = job.n_soc;
    shape.a.rows = job.m;
    shape.a.cols = job.n;
    shape.a.nnz = job.nnz;
    shape.a.row_ptr = job.a_row_ptr;
    shape.a.col = job.a_col;
  }
  QpData<T, UnitStride> problem(int k) const {
    const size_t K = size_t(k);
    const int n = j.n, m = j.m, nnz = j.nnz;
    return {unit_view(j.P + K * n * n), unit_view(j.q + K * n), unit_view(j.A + K * nnz), unit_view(j.b + K * m)};
  }
  T first_rho(int k) const { return j.warm_start && j.warm_rho ? detail::qp_first_rho(st, j.warm_rho[k]) : st.rho; }
  T* x(int k) const { return j.x + size_t(k) * j.n; }
  T* y(int k) const { return j.y + size_t(k) * j.m; }
  // Problem k after a stall: the caller's interior-point finish, and where that
  // does not solve (or apply), ADMM from cold with the fallback settings for the
  // rest of the budget, which is what qp_admm_solve does itself after a stall
  // (`work`: qp_work_host_size)
  template <class Work>
  QpInfo<T> stalled(int k, const QpInfo<T>& so_far, Work& work) const {
    QpInfo<T> info;
    int used = so_far.iterations;
    if (j.ipm(j.ctx, k, &so_far, x(k), y(k), &info, &used)) return info;
    QpSettings<T> rest = detail::qp_fallback_settings(st, st.max_iter - used);
    rest.stall_return = false;
    QpInfo<T> more = qp_admm_solve(shape, problem(k), unit_view(x(k)), unit_view(y(k)),
                                   QpWork<T, UnitStride>::carve(unit_view(qp_work_align(work.data())), j.n, j.m, true),
                                   rest, false);
    more.iterations += used;
    more.rho_updates += so_far.rho_updates;
    more.rho = T(0);  // the fallback settings' ρ (QpInfo::rho)
    // what happened, for the fault text: the stall, and where the restart began
    more.stall_iteration = so_far.stall_iteration;
    more.stall_best_iteration = so_far.stall_best_iteration;
    more.stall_best_ratio = so_far.stall_best_ratio;
    more.switch_remaining = so_far.switch_remaining;
    more.restart_iteration = used;
    return more;
  }
};

// problem k alone (qp_admm_solve), as qp_batch.cc's solve_one; `work` holds
// qp_work_host_size. kept: the problem's kept region (QpJob::kept), its
// workspace instead of `work`, which the fallback after a stall still uses
template <class T>
QpInfo<T> solve_one(const Job<T>& job, int k, std::vector<T, LaneAllocator<T>>& work,
                    unsigned char* kept = nullptr) {
  const int n = job.j.n, m = job.j.m;
  T* base = kept ? reinterpret_cast<T*>(kept) : qp_work_align(work.data());
  auto w = QpWork<T, UnitStride>::carve(unit_view(base), n, m, true);
  QpSettings<T> st = job.st;
  st.stall_return = job.st.fallback;  // finished by the caller
  st.rho = job.first_rho(k);
  QpInfo<T> info = qp_admm_solve(job.shape, job.problem(k), unit_view(job.x(k)), unit_view(job.y(k)), w, st,
                                 job.j.warm_start, kept && job.j.reuse);
  return info.stalled ? job.stalled(k, info, work) : info;
}

// the kept region of lane group or problem i, or nullptr
template <class T>
unsigned char* kept_region(const lanes::QpJob<T>& j, int i) {
  return j.kept ? j.kept + size_t(i) * j.kept_stride : nullptr;
}

// lanes [0, live) of dst[0 .. len) from problems k0 .. k0 + live − 1 of a
// problem-contiguous array (`per` entries per problem)
// (element by element, all lanes of one vector in turn: lane by lane, every
// store would touch a different cache line, 3× slower)
template <class T>
void to_lanes(const T* src, size_t per, int len, int k0, int live, Lanes<T>* dst) {
  constexpr int W = Lanes<T>::W;
  const T* s[W];
  for (int l = 0; l < W; ++l) s[l] = src + size_t(k0 + (l < live ? l : 0)) * per;
  if (live == W) {
    for (int e = 0; e < len; ++e)
      for (int l = 0; l < W; ++l) dst[e].v[l] = s[l][e];
  } else {
    for (int e = 0; e < len; ++e)
      for (int l = 0; l < live; ++l) dst[e].v[l] = s[l][e];
  }
}

// The batch in lane groups: problems k0 .. k0 + W − 1 side by side in the
// lanes of one vector (qp_admm_solve_lanes), groups spread over the workers.
template <class T>
void solve_qp(const lanes::QpJob<T>& j) {
  using L = Lanes<T>;
  constexpr int W = L::W;
  const Job<T> job(j);
  const QpSettings<T>& settings = job.st;
  const int B = j.size, n = j.n, m = j.m, nnz = j.nnz;
  const QpColumns columns(job.shape.a);
  const int groups = (B + W - 1) / W;
  const int threads = std::max(1, std::min(j.threads, groups));
  // per worker: the group's data, iterates and workspace, sized once
  struct Buffers {
    std::vector<L, LaneAllocator<L>> data, x, y, work;
    std::vector<T, LaneAllocator<T>> one;  // workspace of qp_admm_solve for the lanes handed off
  };
  std::vector<Buffers, LaneAllocator<Buffers>> bufs(static_cast<size_t>(threads));
  for (Buffers& bf : bufs) {
    bf.data.assign(size_t(n) * n + n + nnz + m, L(T(0)));
    bf.x.assign(n, L(T(0)));
    bf.y.assign(std::max(m, 1), L(T(0)));
    bf.work.assign(qp_work_size(n, m) + qp_anderson_size(n, m, kQpAndersonMax), L(T(0)));
    bf.one.assign(qp_work_host_size(n, m), T(0));
  }
  parallel_for(groups, threads, [&](int worker, int g0, int g1) {
    Buffers& bf = bufs[size_t(worker)];
    L* P = bf.data.data();
    L* q = P + size_t(n) * n;
    L* A = q + n;
    L* b = A + nnz;
    const QpData<L, LaneStride> d{View<const L, LaneStride>{P, {}}, View<const L, LaneStride>{q, {}},
                                  View<const L, LaneStride>{A, {}}, View<const L, LaneStride>{b, {}}};
    QpLaneOut<T> lo;
    for (int g = g0; g < g1; ++g) {
      const int k0 = g * W, live = std::min(W, B - k0);
      // the group's workspace: the worker's, or the group's kept region
      unsigned char* kept = kept_region(j, g);
      L* work = kept ? reinterpret_cast<L*>(kept) : bf.work.data();
      const auto w = QpWork<L, LaneStride>::carve(lane_view(work), n, m, false, true);
      if (2 * live <= W) {  // a group at most half full costs more than its problems alone
        for (int k = k0; k < k0 + live; ++k) {
          const auto t0 = std::chrono::steady_clock::now();
          const size_t one = kept ? (j.kept_stride / W) & ~size_t(63) : 0;  // (kept_region_bytes: room for W)
          const QpInfo<T> info = solve_one(job, k, bf.one, kept ? kept + size_t(k - k0) * one : nullptr);
          if (j.solve_us)
            j.solve_us[k] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
          j.done(j.ctx, k, &info);
        }
        continue;
      }
      const auto t0 = std::chrono::steady_clock::now();
      to_lanes(j.P, size_t(n) * n, n * n, k0, live, P);
      to_lanes(j.q, size_t(n), n, k0, live, q);
      to_lanes(j.A, size_t(nnz), nnz, k0, live, A);
      to_lanes(j.b, size_t(m), m, k0, live, b);
      if (j.warm_start) {
        to_lanes(static_cast<const T*>(j.x), size_t(n), n, k0, live, bf.x.data());
        to_lanes(static_cast<const T*>(j.y), size_t(m), m, k0, live, bf.y.data());
      }
      T rho0[W];
      for (int l = 0; l < W; ++l) rho0[l] = job.first_rho(k0 + (l < live ? l : 0));
      for (int l = 0; l < live; ++l) {
        lo.x[l] = job.x(k0 + l);
        lo.y[l] = job.y(k0 + l);
      }
      qp_admm_solve_lanes(job.shape, columns, d, live, lane_view(bf.x.data()), lane_view(bf.y.data()), w,
                          settings, j.warm_start, lo, std::max(1, W / 4), rho0, kept && j.reuse);
      for (int l = 0; l < live; ++l) {  // lanes handed off: finished one at a time
        QpInfo<T>& info = lo.info[l];
        if (info.status != SolveStatus::kNotRun) continue;
        const int k = k0 + l;
        QpSettings<T> rest = settings;
        rest.rho = info.rho;
        rest.check_input = false;  // checked in the lanes
        rest.max_iter = settings.max_iter - info.iterations;
        // its own budget of ρ updates: with the group's used up, a lane handed
        // over early (the last of its group) could be left at a ρ that never
        // converges (real train QP #451: 291 iterations alone, the
        // 1,000-iteration budget after a hand-off at 75 with none left)
        rest.max_rho_updates = settings.max_rho_updates;
        // a lane that stalled is finished as one-problem solves are after a
        // stall (the caller's interior-point finish); the others go on from
        // where they were
        if (lo.stalled[l] && settings.fallback) {
          info = job.stalled(k, info, bf.one);
          continue;
        }
        // it goes on as the problem's one solve: its stall rule and
        // acceleration's budget count from the lane's start (QpResume), as
        // alone (problem 737 of `generate --kind random`, eps 1e-5: its best
        // residual ratio, at iteration 50, not bettered since, is a stall at
        // 1,000 alone; handed over at 130 with a fresh record it crawled to
        // the 4,000-iteration budget)
        rest.stall_return = settings.fallback;
        QpResume<T> resume;
        resume.iterations = info.iterations;
        resume.stagnation = lo.stagnation[l];
        QpInfo<T> more = qp_admm_solve(
            job.shape, job.problem(k), unit_view(lo.x[l]), unit_view(lo.y[l]),
            QpWork<T, UnitStride>::carve(unit_view(qp_work_align(bf.one.data())), n, m, true), rest, true, false,
            &resume);
        more.iterations += info.iterations;
        more.rho_updates += info.rho_updates;
        info = more.stalled ? job.stalled(k, more, bf.one) : more;
      }
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      for (int l = 0; l < live; ++l) {
        const int k = k0 + l;
        if (j.solve_us) j.solve_us[k] = us / live;
        j.done(j.ctx, k, &lo.info[l]);
      }
    }
  });
}

// The batch one problem at a time (BatchOptions::lanes false), this set's
// arithmetic (its dense loops vectorized as wide as it goes)
template <class T>
void solve_qp_each(const lanes::QpJob<T>& j) {
  const Job<T> job(j);
  const int B = j.size;
  const int threads = std::max(1, std::min(j.threads, B));
  using Work = std::vector<T, LaneAllocator<T>>;
  std::vector<Work, LaneAllocator<Work>> work(static_cast<size_t>(threads), Work(qp_work_host_size(j.n, j.m)));
  parallel_for(B, threads, [&](int worker, int begin, int end) {
    for (int k = begin; k < end; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      const QpInfo<T> info = solve_one(job, k, work[size_t(worker)], kept_region(j, k));
      if (j.solve_us)
        j.solve_us[k] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      j.done(j.ctx, k, &info);
    }
  });
}

// planar impacts in lane groups (a group's spare lanes repeat its last impact)
void solve_planar_ap(const lanes::PlanarApJob& j) {
  using L = Lanes<double>;
  constexpr int W = L::W;
  const int B = j.size, groups = (B + W - 1) / W;
  parallel_for(groups, std::max(1, std::min(j.threads, groups)), [&](int, int begin, int end) {
    for (int grp = begin; grp < end; ++grp) {
      const int k0 = grp * W, live = std::min(W, B - k0);
      L v[7];
      for (int f = 0; f < 7; ++f)
        for (int l = 0; l < W; ++l) v[f].set(l, j.fields[size_t(f) * B + size_t(k0 + std::min(l, live - 1))]);
      L Pt, Pn;
      const LaneMask<double> ok = planar_ap_impulse(j.poisson, v[0], v[1], v[2], v[3], v[4], v[5], v[6], Pt, Pn);
      for (int l = 0; l < live; ++l) {
        const size_t K = size_t(k0 + l);
        j.Pt[K] = Pt[l];
        j.Pn[K] = Pn[l];
        j.ok[K] = static_cast<char>(ok[l]);
      }
    }
  });
}

void solve_qp_float(const lanes::QpJob<float>& j) { solve_qp(j); }
void solve_qp_double(const lanes::QpJob<double>& j) { solve_qp(j); }
void solve_each_float(const lanes::QpJob<float>& j) { solve_qp_each(j); }
void solve_each_double(const lanes::QpJob<double>& j) { solve_qp_each(j); }

}  // namespace
}  // namespace IMPULSE_ISA
}  // namespace impulse

// the set's table (host/batch/lane_kernels.cc calls the one this CPU runs)
namespace impulse {
inline namespace IMPULSE_ISA {
// host/batch/qp_ipm.cc, compiled for this set too
template <class T>
void qp_ipm_job(const lanes::IpmJob<T>& job);
}  // namespace IMPULSE_ISA
}  // namespace impulse

extern "C" void IMPULSE_CAT(impulse_lane_kernels_, IMPULSE_ISA)(impulse::lanes::Kernels* k) {
  using namespace impulse;
  k->bytes = kLaneBytes;
  k->settings_bytes[0] = sizeof(QpSettings<float>);
  k->settings_bytes[1] = sizeof(QpSettings<double>);
  k->info_bytes[0] = sizeof(QpInfo<float>);
  k->info_bytes[1] = sizeof(QpInfo<double>);
  k->shape_bytes = sizeof(QpShape);
  k->qp_float = &solve_qp_float;
  k->qp_double = &solve_qp_double;
  k->each_float = &solve_each_float;
  k->each_double = &solve_each_double;
  k->planar_ap = &solve_planar_ap;
  k->ipm_float = &qp_ipm_job<float>;
  k->ipm_double = &qp_ipm_job<double>;
}
