// The planar Anitescu-Potra impulse LCPs of host/impact on the device: one
// impact per thread, solved by solvers/impact_lcp.h (the CPU lanes' code).
// Without CUDA (kernels/no_cuda.cc) it throws "CUDA not available".
#pragma once

namespace impulse {
namespace cuda {

// `in` holds seven arrays of `batch` values one after another: W_tt, W_tn, W_nn,
// v_t, v_n, μ, ε (structure of arrays, so neighbouring threads read neighbouring
// values). On return `out` holds P_t then P_n (two arrays of `batch`) and
// solved[k] is 1 where a complementary piece held (else the host falls back to
// Lemke). poisson: AP Poisson (compression LCP, then ε P_c,n), else AP Newton.
void solve_planar_ap(int batch, bool poisson, const double* in, double* out, int* solved);

}  // namespace cuda
}  // namespace impulse
