// Shared configuration for the header-only solver layer.
//
// Everything in solvers/ is plain C++17 that compiles both for the host and,
// under nvcc, for the device. This is the only header of solvers/ that knows
// about CUDA: it defines IMPULSE_HD, which expands to
// `__host__ __device__ __forceinline__` under nvcc and to `inline` otherwise
// (IMPULSE_HD_PHASE: always inlined on the host too).
#pragma once

// The namespace of everything in solvers/. A file compiled for one instruction
// set of the CPU lanes (host/batch/lane_kernels.h: IMPULSE_ISA = isa_avx512,
// isa_avx2 or isa_sse2) puts it in an inline namespace of that name, so its
// inline functions and template instantiations, compiled for that instruction
// set, never stand in for the ones every other file compiled for the baseline
// (and nothing else changes: impulse::X still names them). Elsewhere it is
// plain `namespace impulse`.
#if defined(IMPULSE_ISA) && !defined(__CUDACC__)
#define IMPULSE_NAMESPACE_BEGIN namespace impulse { inline namespace IMPULSE_ISA {
#define IMPULSE_NAMESPACE_END } }
#else
#define IMPULSE_NAMESPACE_BEGIN namespace impulse {
#define IMPULSE_NAMESPACE_END }
#endif

#if defined(__CUDACC__)
#define IMPULSE_HD __host__ __device__ __forceinline__
#define IMPULSE_HD_NOINLINE __host__ __device__
#define IMPULSE_HD_PHASE __host__ __device__ __forceinline__
#else
#define IMPULSE_HD inline
#define IMPULSE_HD_NOINLINE inline
// a named phase of a solve (set-up, check, finish): written as a function for
// the reader, compiled into its one caller as before the split
#define IMPULSE_HD_PHASE inline __attribute__((always_inline))
#endif

#if defined(__CUDA_ARCH__)
#define IMPULSE_DEVICE_PASS 1
#else
#define IMPULSE_DEVICE_PASS 0
#endif

// Debug-only check for internal invariants (never for user input: user input is
// validated by the host layer, which reports errors with context).
#if !defined(NDEBUG) && !IMPULSE_DEVICE_PASS
#include <cassert>
#define IMPULSE_DEBUG_ASSERT(cond) assert(cond)
#else
#define IMPULSE_DEBUG_ASSERT(cond) ((void)0)
#endif

IMPULSE_NAMESPACE_BEGIN

// Math helpers usable on both sides without <cmath> overload surprises on the
// device.
template <class T>
IMPULSE_HD T max_of(T a, T b) { return a > b ? a : b; }
template <class T>
IMPULSE_HD T min_of(T a, T b) { return a < b ? a : b; }
template <class T>
IMPULSE_HD T abs_of(T a) { return a < T(0) ? -a : a; }
// c ? a : b, written so that a lane type (solvers/lanes.h: a per-lane
// condition) can overload it
template <class T>
IMPULSE_HD T select_of(bool c, T a, T b) { return c ? a : b; }

IMPULSE_NAMESPACE_END  // namespace impulse

#if defined(__CUDACC__)
#include <cmath>
IMPULSE_NAMESPACE_BEGIN
IMPULSE_HD float sqrt_of(float v) { return ::sqrtf(v); }
IMPULSE_HD double sqrt_of(double v) { return ::sqrt(v); }
IMPULSE_HD float log_of(float v) { return ::logf(v); }
IMPULSE_HD double log_of(double v) { return ::log(v); }
IMPULSE_HD float exp_of(float v) { return ::expf(v); }
IMPULSE_HD double exp_of(double v) { return ::exp(v); }
IMPULSE_HD float sin_of(float v) { return ::sinf(v); }
IMPULSE_HD double sin_of(double v) { return ::sin(v); }
IMPULSE_HD float cos_of(float v) { return ::cosf(v); }
IMPULSE_HD double cos_of(double v) { return ::cos(v); }
IMPULSE_HD bool is_finite(float v) { return ::isfinite(v); }
IMPULSE_HD bool is_finite(double v) { return ::isfinite(v); }
IMPULSE_NAMESPACE_END  // namespace impulse
#else
#include <cmath>
IMPULSE_NAMESPACE_BEGIN
inline float sqrt_of(float v) { return std::sqrt(v); }
inline double sqrt_of(double v) { return std::sqrt(v); }
inline float log_of(float v) { return std::log(v); }
inline double log_of(double v) { return std::log(v); }
inline float exp_of(float v) { return std::exp(v); }
inline double exp_of(double v) { return std::exp(v); }
inline float sin_of(float v) { return std::sin(v); }
inline double sin_of(double v) { return std::sin(v); }
inline float cos_of(float v) { return std::cos(v); }
inline double cos_of(double v) { return std::cos(v); }
inline bool is_finite(float v) { return std::isfinite(v); }
inline bool is_finite(double v) { return std::isfinite(v); }
IMPULSE_NAMESPACE_END  // namespace impulse
#endif
