// impulse's Python extension (_impulse): the batch QP solve on NumPy arrays.
// The public functions, their argument checks and documentation are in
// python/impulse/__init__.py; this module takes arrays already checked there
// (C-contiguous, of the batch's type, consistent shapes) and checks again what
// could crash it.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "host/batch/qp_batch.h"
#include "host/batch/qp_forms.h"
#include "host/diff/qp_adjoint.h"
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

void expect_size(size_t got, size_t want, const char* name) {
  if (got != want)
    throw nb::value_error((std::string(name) + ": expected " + std::to_string(want) + " numbers, got " +
                           std::to_string(got))
                              .c_str());
}

// an optional array argument: null for None, else its data, held in `held`, of
// `want` numbers (a ValueError naming it otherwise)
template <class Arr>
auto optional_array(const nb::object& o, Arr& held, size_t want, const char* name) -> decltype(held.data()) {
  if (o.is_none()) return nullptr;
  held = nb::cast<Arr>(o);
  expect_size(held.size(), want, name);
  return held.data();
}

// a NumPy array that owns v's storage (moved, not copied)
template <class T>
nb::ndarray<nb::numpy, T> out(std::vector<T>&& v, std::initializer_list<size_t> shape) {
  auto* owned = new std::vector<T>(std::move(v));
  if (owned->empty()) owned->resize(1);  // (a valid pointer for an empty array)
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(owned->data(), shape.size(), shape.begin(), owner);
}

// The batch the arrays make (host or device memory alike: read in place), its sizes
// checked against P's (B, n) and the cones.
template <class T, class Arr>
impulse::QpBatchView<T> batch_view(const Arr& P, const Arr& q, const Arr& A, const In<int>& row_ptr,
                                   const In<int>& col, const Arr& b, std::tuple<int, int, int> cones) {
  if (P.ndim() != 3) throw nb::value_error("P: expected (B, n, n)");
  impulse::QpBatchView<T> v;
  v.size = int(P.shape(0));
  v.n = int(P.shape(1));
  v.cones.n_zero = std::get<0>(cones);
  v.cones.n_nonneg = std::get<1>(cones);
  v.cones.n_soc = std::get<2>(cones);
  const size_t B = size_t(v.size), n = size_t(v.n), m = size_t(v.m());
  expect_size(row_ptr.size(), m + 1, "A's row pointers");
  v.nnz_count = int(col.size());
  expect_size(P.size(), B * n * n, "P");
  expect_size(q.size(), B * n, "q");
  expect_size(A.size(), B * size_t(v.nnz_count), "A");
  expect_size(b.size(), B * m, "b");
  v.a_row_ptr = row_ptr.data();
  v.a_col = col.data();
  v.P = P.data();
  v.q = q.data();
  v.A = A.data();
  v.b = b.data();
  return v;
}

template <class T>
impulse::QpSettings<T> settings_of(double eps, int max_iter) {
  impulse::QpSettings<T> st;
  st.eps_abs = st.eps_rel = T(eps);
  st.max_iter = max_iter;
  return st;
}

// The batch solve on the caller's arrays, read in place (QpBatchView): P (B, n, n),
// q (B, n), b (B, m) and A's values (B, nnz) in the pattern (row_ptr, col); the
// arguments are noconvert, so nanobind never copies them either (the package
// converts what is not C-contiguous of the batch's type, once). `read_from` gets
// the addresses the solve read, for the tests that prove it.
template <class T>
nb::dict solve(const In<T>& P, const In<T>& q, const In<T>& A, const In<int>& row_ptr, const In<int>& col,
               const In<T>& b, std::tuple<int, int, int> cones, double eps, int max_iter, const std::string& backend,
               int threads, bool lanes, nb::object warm_x, nb::object warm_y, nb::object warm_rho,
               impulse::QpFactorStore* factors, bool reuse_factors, int ipm_switch) {
  if (P.ndim() != 3 || q.ndim() != 2 || b.ndim() != 2)
    throw nb::value_error("P, q, b: (B, n, n), (B, n), (B, m)");
  const impulse::QpBatchView<T> v = batch_view<T>(P, q, A, row_ptr, col, b, cones);
  const int B = v.size, n = v.n, m = v.m();
  impulse::QpSettings<T> st = settings_of<T>(eps, max_iter);
  st.ipm_switch = ipm_switch;
  impulse::BatchOptions opt;
  opt.backend = impulse::parse_backend(backend);
  opt.threads = threads;
  opt.lanes = lanes;
  opt.factors = factors;
  opt.reuse_factors = factors && reuse_factors;
  impulse::QpSolutions<T> sol;
  if (!warm_x.is_none()) {
    const In<T> wx = nb::cast<In<T>>(warm_x), wy = nb::cast<In<T>>(warm_y);
    sol.resize(B, n, m);
    sol.x = take(wx, size_t(B) * n, "warm x");
    sol.y = take(wy, size_t(B) * m, "warm y");
    opt.warm_start = true;
    if (!warm_rho.is_none()) {  // each problem starts at its own ρ (a previous solve's final one)
      sol.rho = take(nb::cast<In<T>>(warm_rho), size_t(B), "warm rho");
      opt.warm_rho = true;
    }
  }
  {
    nb::gil_scoped_release release;
    impulse::solve_batch(v, st, opt, sol);
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
  r["x"] = out(std::move(sol.x), {Bs, size_t(n)});
  r["y"] = out(std::move(sol.y), {Bs, size_t(m)});
  r["objective"] = out(std::move(sol.objective), {Bs});
  r["value"] = out(std::move(sol.value), {Bs});
  r["prim_res"] = out(std::move(sol.prim_res), {Bs});
  r["dual_res"] = out(std::move(sol.dual_res), {Bs});
  r["rho"] = out(std::move(sol.rho), {Bs});
  r["status"] = out(std::move(status), {Bs});
  r["fault"] = out(std::move(fault), {Bs});
  r["iterations"] = out(std::move(sol.iterations), {Bs});
  r["ipm_iterations"] = out(std::move(sol.ipm_iterations), {Bs});
  r["fault_text"] = fault_text;
  nb::dict read;
  read["P"] = reinterpret_cast<uintptr_t>(v.P);
  read["q"] = reinterpret_cast<uintptr_t>(v.q);
  read["A"] = reinterpret_cast<uintptr_t>(v.A);
  read["b"] = reinterpret_cast<uintptr_t>(v.b);
  r["_read_from"] = read;
  return r;
}

template <class T>
using Out = nb::ndarray<T, nb::c_contig, nb::device::cpu>;

// The backward pass of impulse.torch.ConicQP (host/diff/qp_adjoint.h) on the
// caller's arrays, read and written in place: the gradients go into gP, gq, gA, gb
// (shaped as P, q, A, b). gx, gy, gv may be None (zero).
template <class T>
nb::dict adjoint(const In<T>& P, const In<T>& A, const In<T>& b, const In<T>& x, const In<T>& y, nb::object gx,
                 nb::object gy, nb::object gv, std::tuple<int, int, int> cones, double eps, int threads,
                 nb::object gP_out, nb::object gq_out, nb::object gA_out, nb::object gb_out) {
  if (P.ndim() != 3 || x.ndim() != 2) throw nb::value_error("P, x: (B, n, n), (B, n)");
  impulse::QpAdjointBatch<T> in;
  in.size = int(P.shape(0));
  in.n = int(P.shape(1));
  in.cones.n_zero = std::get<0>(cones);
  in.cones.n_nonneg = std::get<1>(cones);
  in.cones.n_soc = std::get<2>(cones);
  in.eps = eps;
  const size_t B = size_t(in.size), n = size_t(in.n), m = size_t(in.m());
  expect_size(P.size(), B * n * n, "P");
  expect_size(A.size(), B * m * n, "A");
  expect_size(b.size(), B * m, "b");
  expect_size(x.size(), B * n, "x");
  expect_size(y.size(), B * m, "y");
  // the gradients wanted (None: not computed) and those given (None: zero)
  Out<T> gP, gq, gA, gb;
  impulse::QpAdjointOut<T> out;
  out.gP = optional_array(gP_out, gP, B * n * n, "the gradient of P");
  out.gq = optional_array(gq_out, gq, B * n, "the gradient of q");
  out.gA = optional_array(gA_out, gA, B * m * n, "the gradient of A");
  out.gb = optional_array(gb_out, gb, B * m, "the gradient of b");
  In<T> gxa, gya, gva;
  in.gx = optional_array(gx, gxa, B * n, "the gradient of x");
  in.gy = optional_array(gy, gya, B * m, "the gradient of y");
  in.gv = optional_array(gv, gva, B, "the gradient of the value");
  in.P = P.data();
  in.A = A.data();
  in.b = b.data();
  in.x = x.data();
  in.y = y.data();
  impulse::QpAdjointInfo info;
  {
    nb::gil_scoped_release release;
    info = impulse::qp_adjoint_batch(in, out,
                                     threads);
  }
  nb::dict r;
  r["least_squares"] = info.least_squares;
  r["not_finite"] = info.not_finite;
  r["largest_system"] = info.largest_system;
  return r;
}

}  // namespace

// The batch solve on the device, on the caller's device arrays (DLPack: PyTorch's CUDA
// tensors): P (B, n, n), q (B, n), A's values (B, nnz), b (B, m) read on the device
// (kernels/qp_kernels.h, HostQpArrays::on_device: copied, or transposed for the thread
// layout, device to device), the results written into the caller's device arrays. The
// pattern (row_ptr, col) is host memory. Runs on the legacy default stream and waits
// for it: the caller synchronizes its own stream first. Device 0 only.
template <class T>
using Dev = nb::ndarray<const T, nb::c_contig, nb::device::cuda>;
template <class T>
using DevOut = nb::ndarray<T, nb::c_contig, nb::device::cuda>;

template <class T>
void solve_device(const Dev<T>& P, const Dev<T>& q, const Dev<T>& A, const In<int>& row_ptr, const In<int>& col,
                  const Dev<T>& b, std::tuple<int, int, int> cones, double eps, int max_iter,
                  const std::string& layout, nb::object warm_x, nb::object warm_y, nb::object warm_rho,
                  const DevOut<T>& x, const DevOut<T>& y, const DevOut<T>& objective, const DevOut<T>& value,
                  const DevOut<T>& prim_res, const DevOut<T>& dual_res, const DevOut<T>& rho,
                  const DevOut<int>& status, const DevOut<int>& fault, const DevOut<int>& iterations) {
  for (int id : {P.device_id(), q.device_id(), A.device_id(), b.device_id(), x.device_id(), y.device_id()})
    if (id != 0) throw nb::value_error("impulse solves on CUDA device 0; these tensors are on another device");
  const impulse::QpBatchView<T> v = batch_view<T>(P, q, A, row_ptr, col, b, cones);
  const size_t B = size_t(v.size), n = size_t(v.n), m = size_t(v.m());
  const std::tuple<size_t, size_t, const char*> outs[] = {
      {x.size(), B * n, "x"},         {y.size(), B * m, "y"},
      {objective.size(), B, "objective"}, {value.size(), B, "value"},
      {prim_res.size(), B, "prim_res"}, {dual_res.size(), B, "dual_res"},
      {rho.size(), B, "rho"},         {status.size(), B, "status"},
      {fault.size(), B, "fault"},     {iterations.size(), B, "iterations"}};
  for (const auto& [got, want, name] : outs) expect_size(got, want, name);
  v.check();
  const impulse::QpSettings<T> st = settings_of<T>(eps, max_iter);
  if (const char* bad = st.validate()) throw nb::value_error((std::string("invalid settings: ") + bad).c_str());
  impulse::cuda::HostQpArrays<T> h = v.device_arrays();
  h.on_device = true;
  impulse::cuda::HostQpResults<T> r;
  r.on_device = true;
  r.x = x.data(), r.y = y.data(), r.objective = objective.data(), r.value = value.data();
  r.prim_res = prim_res.data(), r.dual_res = dual_res.data(), r.rho = rho.data();
  r.status = status.data(), r.fault = fault.data(), r.iterations = iterations.data();
  const bool warm = !warm_x.is_none();
  Dev<T> wx, wy, wr;
  if (warm) {
    wx = nb::cast<Dev<T>>(warm_x);
    wy = nb::cast<Dev<T>>(warm_y);
    expect_size(wx.size(), B * n, "warm x");
    expect_size(wy.size(), B * m, "warm y");
    if (!warm_rho.is_none()) {
      wr = nb::cast<Dev<T>>(warm_rho);
      expect_size(wr.size(), B, "warm rho");
    }
  }
  {
    nb::gil_scoped_release release;
    impulse::cuda::DeviceQpBatch<T> dev(
        impulse::cuda::resolve_layout(impulse::cuda::parse_device_layout(layout), v.n, v.m(), v.nnz_count, sizeof(T)));
    dev.upload(h);
    if (warm) {
      impulse::cuda::HostQpResults<T> w;
      w.on_device = true;
      w.x = const_cast<T*>(wx.data());
      w.y = const_cast<T*>(wy.data());
      w.rho = wr.is_valid() ? const_cast<T*>(wr.data()) : nullptr;
      dev.upload_warm_start(w);
    }
    dev.solve(st, warm, false, warm && wr.is_valid());
    dev.download(r);
  }
}

void bind_learning(nb::module_& m);  // python/src/learning.cc

NB_MODULE(_impulse, m) {
  m.doc() = "impulse's compiled core (use the impulse package)";
  // QpSettings::ipm_switch's automatic value (solve_qp_batch(ipm_switch="auto"))
  m.attr("IPM_SWITCH_AUTO") = impulse::kQpIpmSwitchAuto;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const impulse::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  m.def("version", [] { return std::string(IMPULSE_VERSION); });
  bind_learning(m);
  m.def("cuda_available", [] { return impulse::cuda::available(); });
  nb::class_<impulse::QpFactorStore>(m, "FactorStore",
                                     "The factorizations of a batch's CPU solves, kept for re-solves in which "
                                     "only q and b change (host/batch/qp_batch.h's QpFactorStore)")
      .def(nb::init<>())
      .def("clear", &impulse::QpFactorStore::clear, "forget every factorization (P or A changed)")
      .def_prop_ro("bytes", &impulse::QpFactorStore::bytes, "the memory it holds");
  // the warm start's x and y may be None (a cold start): nanobind refuses None unless told
#define IMPULSE_SOLVE_ARGS                                                                                    \
  nb::arg("P").noconvert(), nb::arg("q").noconvert(), nb::arg("A").noconvert(), nb::arg("row_ptr").noconvert(), \
      nb::arg("col").noconvert(), nb::arg("b").noconvert(), nb::arg("cones"), nb::arg("eps"), nb::arg("max_iter"), \
      nb::arg("backend"), nb::arg("threads"), nb::arg("lanes"), nb::arg("warm_x").none(), nb::arg("warm_y").none(), \
      nb::arg("warm_rho").none(), nb::arg("factors").none(), nb::arg("reuse_factors"), \
      nb::arg("ipm_switch")
  m.def("solve_double", &solve<double>, IMPULSE_SOLVE_ARGS);
  m.def("solve_float", &solve<float>, IMPULSE_SOLVE_ARGS);
#undef IMPULSE_SOLVE_ARGS
#define IMPULSE_ADJOINT_ARGS                                                                                   \
  nb::arg("P").noconvert(), nb::arg("A").noconvert(), nb::arg("b").noconvert(), nb::arg("x").noconvert(),        \
      nb::arg("y").noconvert(), nb::arg("gx").none(), nb::arg("gy").none(), nb::arg("gv").none(), nb::arg("cones"), \
      nb::arg("eps"), nb::arg("threads"), nb::arg("gP").none(), nb::arg("gq").none(), nb::arg("gA").none(),        \
      nb::arg("gb").none()
  // OSQP's two-sided rows as conic rows (host/batch/qp_forms.h, as solve-batch --form osqp)
  m.def(
      "osqp_rows",
      [](const In<double>& A, const In<double>& l, const In<double>& u) {
        if (A.ndim() != 3 || l.ndim() != 2 || u.ndim() != 2) throw nb::value_error("A, l, u: (B, m, n), (B, m), (B, m)");
        const int B = int(A.shape(0)), m = int(A.shape(1)), n = int(A.shape(2));
        if (int(l.shape(0)) != B || int(l.shape(1)) != m || int(u.shape(0)) != B || int(u.shape(1)) != m)
          throw nb::value_error("l, u: expected (B, m) as A's rows");
        impulse::ConicRows c = [&] {
          nb::gil_scoped_release release;
          return impulse::conic_rows_from_bounds(B, n, m, A.data(), l.data(), u.data(), "solve_qp_batch_osqp");
        }();
        const size_t mc = size_t(c.cones.rows());
        nb::dict r;
        r["A"] = out(std::move(c.A), {size_t(B), mc, size_t(n)});
        r["b"] = out(std::move(c.b), {size_t(B), mc});
        r["cones"] = nb::make_tuple(c.cones.n_zero, c.cones.n_nonneg, c.cones.n_soc);
        auto ints = [](const std::vector<int>& v) {
          return out(std::vector<int64_t>(v.begin(), v.end()), {v.size()});
        };
        r["equality"] = ints(c.rows.equality);
        r["upper"] = ints(c.rows.upper);
        r["lower"] = ints(c.rows.lower);
        return r;
      },
      nb::arg("A").noconvert(), nb::arg("l").noconvert(), nb::arg("u").noconvert());
  m.def("adjoint_double", &adjoint<double>, IMPULSE_ADJOINT_ARGS);
  m.def("adjoint_float", &adjoint<float>, IMPULSE_ADJOINT_ARGS);
#undef IMPULSE_ADJOINT_ARGS
#define IMPULSE_DEVICE_ARGS                                                                                    \
  nb::arg("P").noconvert(), nb::arg("q").noconvert(), nb::arg("A").noconvert(), nb::arg("row_ptr").noconvert(),  \
      nb::arg("col").noconvert(), nb::arg("b").noconvert(), nb::arg("cones"), nb::arg("eps"), nb::arg("max_iter"), \
      nb::arg("layout"), nb::arg("warm_x").none(), nb::arg("warm_y").none(), nb::arg("warm_rho").none(),         \
      nb::arg("x").noconvert(), nb::arg("y").noconvert(), nb::arg("objective").noconvert(),                      \
      nb::arg("value").noconvert(), nb::arg("prim_res").noconvert(), nb::arg("dual_res").noconvert(),            \
      nb::arg("rho").noconvert(), nb::arg("status").noconvert(), nb::arg("fault").noconvert(),                   \
      nb::arg("iterations").noconvert()
  m.def("solve_device_double", &solve_device<double>, IMPULSE_DEVICE_ARGS);
  m.def("solve_device_float", &solve_device<float>, IMPULSE_DEVICE_ARGS);
#undef IMPULSE_DEVICE_ARGS
  m.def("status_names", [] {
    nb::list names;
    for (int s = 0; s <= int(impulse::SolveStatus::kInvalidInput); ++s)
      names.append(std::string(impulse::to_string(impulse::SolveStatus(s))));
    return names;
  });
}
