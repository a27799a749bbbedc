// The CPU lanes' instruction set, chosen at run time.
//
// The lane solvers (solvers/lanes.h, solvers/qp_admm_lanes.h) take their
// vector width from the instruction set a file is compiled for. impulse
// compiles them once per instruction set (host/batch/lane_solve.cc, built as
// isa_sse2, isa_avx2 = x86-64-v3 and isa_avx512 = x86-64-v4, each in an inline
// namespace of that name: solvers/config.h) and picks, at the first solve, the
// widest this CPU runs; every other file is compiled for the baseline, so one
// binary runs on any x86-64. A build with -DIMPULSE_NATIVE_ARCH=ON compiles
// everything for the build machine instead and has the one set it was built for.
//
// The set in use: the widest supported, or the environment's IMPULSE_LANES
// (sse2, avx2, avx512: an Error at the first solve if this CPU or build lacks
// it), or set_lane_isa's. Results depend on the set (its width groups the
// problems differently and its arithmetic may fuse a multiply-add), never on
// anything else: the same set gives the same answers bit for bit.
//
// The kernels' interface is plain data (QpJob, PlanarApJob): the solver types
// are distinct types in each instruction set's namespace, so settings and
// results cross as the bytes of the same definitions (trivially copyable, their
// sizes checked at start-up).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace impulse {

enum class LaneIsa { kSse2 = 0, kAvx2 = 1, kAvx512 = 2 };
const char* to_string(LaneIsa isa);                  // "sse2", "avx2", "avx512"
LaneIsa parse_lane_isa(const std::string& name);     // Error naming the choices
// compiled into this build and run by this CPU
bool lane_isa_supported(LaneIsa isa);
std::vector<LaneIsa> supported_lane_isas();
// the set the lane solvers use now (chosen at the first call)
LaneIsa lane_isa();
// use `isa` from now on (Error when lane_isa_supported(isa) is false); for
// tests and benchmarks that compare the sets
void set_lane_isa(LaneIsa isa);
// bytes of one lane vector of the set in use (16, 32, 64): W = bytes / sizeof(T)
int lane_bytes();

namespace lanes {

// A batch of conic QPs of one shape for the lane solver, as host/batch's
// QpBatch and QpSolutions hold it (problem-contiguous).
template <class T>
struct QpJob {
  int size = 0, n = 0, m = 0, nnz = 0;
  int n_zero = 0, n_nonneg = 0, n_soc = 0;
  const int* a_row_ptr = nullptr;  // m + 1
  const int* a_col = nullptr;      // nnz
  const T *P = nullptr, *q = nullptr, *A = nullptr, *b = nullptr;
  const void* settings = nullptr;  // a QpSettings<T>
  bool warm_start = false;
  const T* warm_rho = nullptr;     // per problem: the ρ to start at (qp_first_rho), or nullptr
  T *x = nullptr, *y = nullptr;    // the warm start in, the solutions out
  double* solve_us = nullptr;      // per problem wall time, or nullptr
  int threads = 1;
  void* ctx = nullptr;
  // problem k's solve ended (info: a QpInfo<T>); from the worker that solved it
  void (*done)(void* ctx, int k, const void* info) = nullptr;
  // problem k stalled (so_far: a QpInfo<T>, x and y where ADMM left them): the
  // caller's interior-point finish (host/batch/qp_batch.cc's ipm_finish). True
  // when it solved, into x, y and `info` (a QpInfo<T>); false when not, and the
  // kernel restarts ADMM with the fallback settings. `used`: the iterations
  // spent so far, the interior point's included.
  bool (*ipm)(void* ctx, int k, const void* so_far, T* x, T* y, void* info, int* used) = nullptr;
  // kept factorizations (BatchOptions::factors): a region of kept_stride bytes
  // (kept_region_bytes) per lane group (in lanes) or per problem (one at a
  // time), 64-byte aligned, zeroed when new; each solve leaves its
  // factorization there, and with `reuse` starts from the one it finds
  // (qp_admm_solve's and qp_admm_solve_lanes' `reuse`: P and A unchanged)
  unsigned char* kept = nullptr;
  size_t kept_stride = 0;
  bool reuse = false;
};

// bytes of one kept region (QpJob::kept) for problems of n variables and m
// rows, elements of `elem` bytes, the set's lane vectors of `lane_bytes`: a
// lane group's workspace, or (lanes false, or a group solved one problem at a
// time) one problem's
size_t kept_region_bytes(int n, int m, size_t elem, int lane_bytes, bool lanes);

// B planar impacts by AP Newton (poisson false) or AP Poisson
// (solvers/impact_lcp.h's planar_ap_impulse): `fields` holds 7 × B values,
// field-major (W00, W01, W11, vc_t, vc_n, mu, eps); out: the impulse and
// whether the complementary piece held (ok 0: the caller solves it by Lemke)
struct PlanarApJob {
  int size = 0;
  bool poisson = false;
  const double* fields = nullptr;
  double *Pt = nullptr, *Pn = nullptr;
  char* ok = nullptr;
  int threads = 1;
};

// One problem for the set's interior point (host/batch/qp_ipm.h's
// qp_ipm_solve, which fills it): its shape (a QpShape) and data, the settings
// (a QpSettings<T>) in, the QpInfo<T> out; the three cross as bytes, as the
// batch kernels' settings and results do.
template <class T>
struct IpmJob {
  const void* shape = nullptr;     // a QpShape
  const T *P = nullptr, *q = nullptr, *A = nullptr, *b = nullptr;
  T *x = nullptr, *y = nullptr;
  const void* settings = nullptr;  // a QpSettings<T>
  int max_iter = 1;
  void* info = nullptr;            // a QpInfo<T>
};

struct Kernels {
  LaneIsa isa = LaneIsa::kSse2;
  int bytes = 16;
  size_t settings_bytes[2] = {0, 0};  // sizeof QpSettings<float>, <double> as the kernels see it
  size_t info_bytes[2] = {0, 0};      // sizeof QpInfo<float>, <double>
  size_t shape_bytes = 0;             // sizeof QpShape
  void (*qp_float)(const QpJob<float>&) = nullptr;
  void (*qp_double)(const QpJob<double>&) = nullptr;
  // the same batch one problem at a time (BatchOptions::lanes false)
  void (*each_float)(const QpJob<float>&) = nullptr;
  void (*each_double)(const QpJob<double>&) = nullptr;
  void (*planar_ap)(const PlanarApJob&) = nullptr;
  // the interior point (host/batch/qp_ipm.cc, compiled for this set)
  void (*ipm_float)(const IpmJob<float>&) = nullptr;
  void (*ipm_double)(const IpmJob<double>&) = nullptr;
};

// the kernels of the set in use
const Kernels& kernels();

}  // namespace lanes
}  // namespace impulse
