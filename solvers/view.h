// Strided views: how one problem's arrays are addressed inside a batch.
//
// A batch stores B problems structure-of-arrays. Element e of problem k lives
// at base[e * stride + k * offset]. On the GPU (batch index fastest) the stride
// is B and the offset 1; on the CPU each problem is contiguous (stride 1,
// compile-time) so loops vectorize. The solvers take views and never see the
// layout.
#pragma once

#include "solvers/config.h"

IMPULSE_NAMESPACE_BEGIN

// Compile-time unit stride (contiguous per problem).
struct UnitStride {
  IMPULSE_HD int operator()(int i) const { return i; }
};

// Runtime stride (batch index fastest: stride = batch size).
struct RunStride {
  int s;
  IMPULSE_HD int operator()(int i) const { return i * s; }
};

template <class T, class S>
struct View {
  T* p;
  S stride;
  IMPULSE_HD T& operator[](int i) const { return p[stride(i)]; }
  // the view of the elements from `offset` on (a sub-array of one problem).
  IMPULSE_HD View slice(int offset) const { return View{p + stride(offset), stride}; }
  // the same elements, read-only.
  IMPULSE_HD View<const T, S> as_const() const { return View<const T, S>{p, stride}; }
};

template <class T>
IMPULSE_HD View<T, UnitStride> unit_view(T* p) {
  return View<T, UnitStride>{p, UnitStride{}};
}
template <class T>
IMPULSE_HD View<T, RunStride> strided_view(T* p, int s) {
  return View<T, RunStride>{p, RunStride{s}};
}

// Vectorization hint for a reduction loop on the host (needs -fopenmp-simd;
// order of operations is fixed by the compiler, so results stay bitwise
// reproducible for one binary). Expands to nothing under nvcc.
#if defined(__CUDACC__)
#define IMPULSE_SIMD_REDUCE(var)
#define IMPULSE_SIMD_MAX(...)
#define IMPULSE_SIMD_MAX_SUM(mx, sm)
#define IMPULSE_SIMD
#else
#define IMPULSE_PRAGMA(x) _Pragma(#x)
#define IMPULSE_SIMD_REDUCE(var) IMPULSE_PRAGMA(omp simd reduction(+ : var))
#define IMPULSE_SIMD_MAX(...) IMPULSE_PRAGMA(omp simd reduction(max : __VA_ARGS__))
#define IMPULSE_SIMD_MAX_SUM(mx, sm) IMPULSE_PRAGMA(omp simd reduction(max : mx) reduction(+ : sm))
#define IMPULSE_SIMD IMPULSE_PRAGMA(omp simd)
#endif

IMPULSE_NAMESPACE_END  // namespace impulse
