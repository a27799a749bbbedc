// impulse's Python extension (_impulse): the batch QP solve on NumPy arrays.
// The public functions, their argument checks and documentation are in
// python/impulse/__init__.py; this module takes arrays already checked there
// (C-contiguous, of the batch's type, consistent shapes) and checks again what
// could crash it.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "host/batch/qp_batch.h"
#include "kernels/qp_kernels.h"
#include "solvers/error.h"

namespace nb = nanobind;

namespace {

template <class T>
using In = nb::ndarray<const T, nb::c_contig, nb::device::cpu>;

template <class T>
std::vector<T> take(const In<T>& a, size_t want, const char* name) {
  if (a.size() != want)
    throw nb::value_error((std::string(name) + ": expected " + std::to_string(want) + " numbers, got " +
                           std::to_string(a.size()))
                              .c_str());
  return std::vector<T>(a.data(), a.data() + want);
}

// a NumPy array that owns a copy of v
template <class T>
nb::ndarray<nb::numpy, T> out(const std::vector<T>& v, std::initializer_list<size_t> shape) {
  T* data = new T[v.size() ? v.size() : 1];
  if (!v.empty()) std::memcpy(data, v.data(), v.size() * sizeof(T));
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  return nb::ndarray<nb::numpy, T>(data, shape.size(), shape.begin(), owner);
}

template <class T>
nb::dict solve(const In<T>& P, const In<T>& q, const In<T>& A, const In<T>& b, std::tuple<int, int, int> cones,
               double eps, int max_iter, const std::string& backend, int threads, bool lanes, nb::object warm_x,
               nb::object warm_y) {
  if (P.ndim() != 3 || q.ndim() != 2 || A.ndim() != 3 || b.ndim() != 2)
    throw nb::value_error("P, A: (B, n, n), (B, m, n); q, b: (B, n), (B, m)");
  const int B = int(P.shape(0)), n = int(P.shape(1));
  impulse::ConeSpec spec;
  spec.n_zero = std::get<0>(cones);
  spec.n_nonneg = std::get<1>(cones);
  spec.n_soc = std::get<2>(cones);
  const int m = spec.rows();
  impulse::QpBatch<T> batch = impulse::QpBatch<T>::from_dense(
      B, n, spec, take(P, size_t(B) * n * n, "P"), take(q, size_t(B) * n, "q"), take(A, size_t(B) * m * n, "A"),
      take(b, size_t(B) * m, "b"));
  impulse::QpSettings<T> st;
  st.eps_abs = st.eps_rel = T(eps);
  st.max_iter = max_iter;
  impulse::BatchOptions opt;
  opt.backend = impulse::parse_backend(backend);
  opt.threads = threads;
  opt.lanes = lanes;
  impulse::QpSolutions<T> sol;
  if (!warm_x.is_none()) {
    const In<T> wx = nb::cast<In<T>>(warm_x), wy = nb::cast<In<T>>(warm_y);
    sol.resize(B, n, m);
    sol.x = take(wx, size_t(B) * n, "warm x");
    sol.y = take(wy, size_t(B) * m, "warm y");
    opt.warm_start = true;
  }
  {
    nb::gil_scoped_release release;
    impulse::solve_batch(batch, st, opt, sol);
  }
  std::vector<int> status(B), fault(B);
  nb::list fault_text;
  for (int k = 0; k < B; ++k) {
    status[k] = int(sol.status[k]);
    fault[k] = int(sol.fault[k]);
    fault_text.append(sol.fault_text.empty() ? std::string() : sol.fault_text[k]);
  }
  const size_t Bs = size_t(B);
  nb::dict r;
  r["x"] = out(sol.x, {Bs, size_t(n)});
  r["y"] = out(sol.y, {Bs, size_t(m)});
  r["objective"] = out(sol.objective, {Bs});
  r["value"] = out(sol.value, {Bs});
  r["prim_res"] = out(sol.prim_res, {Bs});
  r["dual_res"] = out(sol.dual_res, {Bs});
  r["rho"] = out(sol.rho, {Bs});
  r["status"] = out(status, {Bs});
  r["fault"] = out(fault, {Bs});
  r["iterations"] = out(sol.iterations, {Bs});
  r["fault_text"] = fault_text;
  return r;
}

}  // namespace

NB_MODULE(_impulse, m) {
  m.doc() = "impulse's compiled core (use the impulse package)";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const impulse::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  m.def("version", [] { return std::string(IMPULSE_VERSION); });
  m.def("cuda_available", [] { return impulse::cuda::available(); });
  // the warm start's x and y may be None (a cold start): nanobind refuses None unless told
#define IMPULSE_SOLVE_ARGS                                                                                    \
  nb::arg("P"), nb::arg("q"), nb::arg("A"), nb::arg("b"), nb::arg("cones"), nb::arg("eps"), nb::arg("max_iter"), \
      nb::arg("backend"), nb::arg("threads"), nb::arg("lanes"), nb::arg("warm_x").none(), nb::arg("warm_y").none()
  m.def("solve_double", &solve<double>, IMPULSE_SOLVE_ARGS);
  m.def("solve_float", &solve<float>, IMPULSE_SOLVE_ARGS);
#undef IMPULSE_SOLVE_ARGS
  m.def("status_names", [] {
    nb::list names;
    for (int s = 0; s <= int(impulse::SolveStatus::kInvalidInput); ++s)
      names.append(std::string(impulse::to_string(impulse::SolveStatus(s))));
    return names;
  });
}
