#include "host/batch/qp_file.h"

#include <cmath>
#include <filesystem>

#include "io/npz.h"
#include "io/qps.h"

namespace impulse {

namespace {

std::vector<int64_t> dims(std::initializer_list<int64_t> d) { return std::vector<int64_t>(d); }

void expect_shape(const NpyArray& a, const std::vector<int64_t>& want, const std::string& file,
                  const char* key) {
  if (a.shape != want)
    throw Error(file + ": array '" + key + "': expected shape " + shape_string(want) + ", got " +
                shape_string(a.shape));
}

}  // namespace

QpFile read_qp_file(const std::string& path) {
  const NpzArchive ar = read_npz(path);
  const NpyArray& cones_a = npz_get(ar, "cones", path);
  const NpyArray& P = npz_get(ar, "P", path);
  if (P.shape.size() != 3 || P.shape[1] != P.shape[2])
    throw Error(path + ": array 'P': expected shape (B, n, n), got " + shape_string(P.shape));
  const int64_t B = P.shape[0], n = P.shape[1];
  expect_shape(cones_a, dims({3}), path, "cones");
  const std::vector<int64_t> c = cones_a.as<int64_t>();
  if (c[0] < 0 || c[1] < 0 || c[2] < 0)
    throw Error(path + ": array 'cones': counts must be >= 0");
  ConeSpec cones;
  cones.n_zero = static_cast<int>(c[0]);
  cones.n_nonneg = static_cast<int>(c[1]);
  cones.n_soc = static_cast<int>(c[2]);
  const int64_t m = cones.rows();
  const NpyArray& q = npz_get(ar, "q", path);
  const NpyArray& A = npz_get(ar, "A", path);
  const NpyArray& b = npz_get(ar, "b", path);
  expect_shape(q, dims({B, n}), path, "q");
  expect_shape(A, dims({B, m, n}), path, "A");
  expect_shape(b, dims({B, m}), path, "b");
  QpFile f;
  f.batch = QpBatch<double>::from_dense(static_cast<int>(B), static_cast<int>(n), cones,
                                        P.as<double>(), q.as<double>(), A.as<double>(),
                                        b.as<double>());
  if (ar.count("x0") || ar.count("y0")) {
    const NpyArray& x0 = npz_get(ar, "x0", path);
    const NpyArray& y0 = npz_get(ar, "y0", path);
    expect_shape(x0, dims({B, n}), path, "x0");
    expect_shape(y0, dims({B, m}), path, "y0");
    f.has_warm_start = true;
    f.x0 = x0.as<double>();
    f.y0 = y0.as<double>();
  }
  return f;
}

void write_qp_file(const std::string& path, const QpBatch<double>& bt) {
  bt.check_sizes();
  const int64_t B = bt.size, n = bt.n, m = bt.m();
  std::vector<double> A;
  A.reserve(size_t(B * m * n));
  for (int k = 0; k < bt.size; ++k) {
    const std::vector<double> d = bt.A_dense(k);
    A.insert(A.end(), d.begin(), d.end());
  }
  NpzArchive ar;
  ar["cones"] = make_npy(dims({3}), std::vector<int32_t>{bt.cones.n_zero, bt.cones.n_nonneg,
                                                           bt.cones.n_soc});
  ar["P"] = make_npy(dims({B, n, n}), bt.P);
  ar["q"] = make_npy(dims({B, n}), bt.q);
  ar["A"] = make_npy(dims({B, m, n}), A);
  ar["b"] = make_npy(dims({B, m}), bt.b);
  write_npz(path, ar);
}

template <class T>
void write_solution_file(const std::string& path, const QpSolutions<T>& s) {
  write_npz(path, solution_arrays(s));
}

template <class T>
NpzArchive solution_arrays(const QpSolutions<T>& s) {
  const int64_t B = s.size;
  auto d = [](const std::vector<T>& v) { return std::vector<double>(v.begin(), v.end()); };
  std::vector<int32_t> status(B), fault(B), iters(s.iterations.begin(), s.iterations.end()),
      ipm(s.ipm_iterations.begin(), s.ipm_iterations.end());
  for (int64_t k = 0; k < B; ++k) {
    status[k] = static_cast<int32_t>(s.status[k]);
    fault[k] = static_cast<int32_t>(s.fault[k]);
  }
  NpzArchive ar;
  ar["x"] = make_npy(dims({B, s.n}), d(s.x));
  ar["y"] = make_npy(dims({B, s.m}), d(s.y));
  ar["objective"] = make_npy(dims({B}), d(s.objective));
  ar["value"] = make_npy(dims({B}), d(s.value));
  ar["prim_res"] = make_npy(dims({B}), d(s.prim_res));
  ar["dual_res"] = make_npy(dims({B}), d(s.dual_res));
  ar["status"] = make_npy(dims({B}), status);
  ar["fault"] = make_npy(dims({B}), fault);
  ar["iterations"] = make_npy(dims({B}), iters);
  ar["ipm_iterations"] = make_npy(dims({B}), ipm);
  ar["rho"] = make_npy(dims({B}), d(s.rho));  // the final ρ (QpInfo::rho)
  ar["solve_us"] = make_npy(dims({B}), s.solve_us);
  return ar;
}

QpSolutions<double> read_solution_file(const std::string& path) {
  const NpzArchive ar = read_npz(path);
  const NpyArray& x = npz_get(ar, "x", path);
  const NpyArray& y = npz_get(ar, "y", path);
  if (x.shape.size() != 2 || y.shape.size() != 2 || x.shape[0] != y.shape[0])
    throw Error(path + ": arrays 'x' and 'y' must be (B, n) and (B, m)");
  QpSolutions<double> s;
  s.resize(static_cast<int>(x.shape[0]), static_cast<int>(x.shape[1]),
           static_cast<int>(y.shape[1]));
  s.x = x.as<double>();
  s.y = y.as<double>();
  s.objective = npz_get(ar, "objective", path).as<double>();
  s.value = npz_get(ar, "value", path).as<double>();
  s.solve_us = npz_get(ar, "solve_us", path).as<double>();
  s.iterations = npz_get(ar, "iterations", path).as<int>();
  if (ar.count("ipm_iterations")) s.ipm_iterations = npz_get(ar, "ipm_iterations", path).as<int>();
  if (ar.count("rho")) s.rho = npz_get(ar, "rho", path).as<double>();  // (older files: none)
  const std::vector<int> st = npz_get(ar, "status", path).as<int>();
  for (size_t k = 0; k < st.size() && k < s.status.size(); ++k)
    s.status[k] = static_cast<SolveStatus>(st[k]);
  return s;
}

BoundedQps read_bounded_file(const std::string& path) {
  NpzArchive ar;
  namespace fs = std::filesystem;
  if (fs::is_directory(path)) {
    for (const char* key : {"P", "q", "A", "l", "u"}) {
      const fs::path f = fs::path(path) / (std::string(key) + ".npy");
      if (!fs::exists(f)) throw Error(path + ": no " + std::string(key) + ".npy (a folder holds P, q, A, l and u)");
      ar[key] = read_npy(f.string());
    }
  } else {
    ar = read_npz(path);
  }
  const NpyArray& P = npz_get(ar, "P", path);
  const bool batch = P.shape.size() == 3;
  if (!(batch || P.shape.size() == 2) || P.shape[P.shape.size() - 1] != P.shape[P.shape.size() - 2])
    throw Error(path + ": array 'P': expected shape (n, n) or (B, n, n), got " + shape_string(P.shape));
  const int64_t B = batch ? P.shape[0] : 1, n = P.shape.back();
  const NpyArray& A = npz_get(ar, "A", path);
  if (A.shape.size() != P.shape.size() || A.shape.back() != n || (batch && A.shape[0] != B))
    throw Error(path + ": array 'A': expected shape " +
                (batch ? "(" + std::to_string(B) + ", m, " + std::to_string(n) + ")"
                       : "(m, " + std::to_string(n) + ")") +
                " as P " + shape_string(P.shape) + " gives, got " + shape_string(A.shape));
  const int64_t m = A.shape[A.shape.size() - 2];
  auto want = [&](std::initializer_list<int64_t> one, std::initializer_list<int64_t> many) {
    return batch ? dims(many) : dims(one);
  };
  expect_shape(A, want({m, n}, {B, m, n}), path, "A");
  for (const char* key : {"q"}) expect_shape(npz_get(ar, key, path), want({n}, {B, n}), path, key);
  for (const char* key : {"l", "u"}) expect_shape(npz_get(ar, key, path), want({m}, {B, m}), path, key);
  for (const char* key : {"P", "q", "A", "l", "u"}) {
    const DType t = npz_get(ar, key, path).dtype;
    if (t != DType::kFloat64 && t != DType::kFloat32)
      throw Error(path + ": array '" + std::string(key) + "' has dtype " + dtype_descr(t) +
                  ", expected float64 or float32");
  }
  BoundedQps q;
  q.size = static_cast<int>(B);
  q.n = static_cast<int>(n);
  q.m = static_cast<int>(m);
  q.P = P.as<double>();
  q.q = npz_get(ar, "q", path).as<double>();
  q.A = A.as<double>();
  q.l = npz_get(ar, "l", path).as<double>();
  q.u = npz_get(ar, "u", path).as<double>();
  return q;
}

QpsAsBounds read_qps_problem(const std::string& path) {
  const QpsProblem p = read_qps(path);
  QpsAsBounds out;
  out.name = p.name;
  out.constant = p.c0;
  out.constraint_rows = p.m;
  for (int j = 0; j < p.n; ++j)
    if (std::isfinite(p.col_lower[size_t(j)]) || std::isfinite(p.col_upper[size_t(j)])) out.bound_vars.push_back(j);
  BoundedQps& q = out.qps;
  q.size = 1;
  q.n = p.n;
  q.m = p.m + static_cast<int>(out.bound_vars.size());
  q.P = p.Q;
  q.q = p.c;
  q.A = p.A;
  q.A.resize(size_t(q.m) * q.n, 0.0);
  q.l = p.row_lower;
  q.u = p.row_upper;
  for (size_t r = 0; r < out.bound_vars.size(); ++r) {
    const int j = out.bound_vars[r];
    q.A[(size_t(p.m) + r) * q.n + size_t(j)] = 1.0;
    q.l.push_back(p.col_lower[size_t(j)]);
    q.u.push_back(p.col_upper[size_t(j)]);
  }
  return out;
}

template void write_solution_file(const std::string&, const QpSolutions<float>&);
template void write_solution_file(const std::string&, const QpSolutions<double>&);
template NpzArchive solution_arrays(const QpSolutions<float>&);
template NpzArchive solution_arrays(const QpSolutions<double>&);

}  // namespace impulse
