#include "host/batch/qp_forms.h"

#include <cmath>
#include <sstream>

#include "solvers/error.h"

namespace impulse {

namespace {

enum RowKind { kEquality, kUpper, kLower, kBoth, kFree };

const char* kind_name(RowKind k) {
  switch (k) {
    case kEquality: return "an equality";
    case kUpper: return "an upper bound";
    case kLower: return "a lower bound";
    case kBoth: return "two bounds";
    default: return "free";
  }
}

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

ConicRows conic_rows_from_bounds(int B, int n, int m, const double* Ain, const double* lin, const double* uin,
                                 const std::string& what) {
  if (B < 1 || n < 1 || m < 0) throw Error(what + ": an empty batch or no variables");
  auto at = [&](int k, int i) {
    return " at problem " + std::to_string(k) + ", row " + std::to_string(i);
  };
  std::vector<RowKind> kind(size_t(m), kFree);
  for (int k = 0; k < B; ++k) {
    for (int i = 0; i < m; ++i) {
      const double l = lin[size_t(k) * m + i], u = uin[size_t(k) * m + i];
      if (std::isnan(l)) throw Error(what + ": l is NaN" + at(k, i));
      if (std::isnan(u)) throw Error(what + ": u is NaN" + at(k, i));
      if (l > u) throw Error(what + ": l > u" + at(k, i) + ": " + num(l) + " > " + num(u) + " (no x satisfies it)");
      if (l == INFINITY) throw Error(what + ": l is +inf" + at(k, i) + " (no x satisfies it)");
      if (u == -INFINITY) throw Error(what + ": u is -inf" + at(k, i) + " (no x satisfies it)");
      const bool lo = std::isfinite(l), up = std::isfinite(u);
      const RowKind r = lo && up ? (l == u ? kEquality : kBoth) : up ? kUpper : lo ? kLower : kFree;
      if (k == 0) kind[size_t(i)] = r;
      else if (r != kind[size_t(i)])
        throw Error(what + ": row " + std::to_string(i) + ": " + kind_name(kind[size_t(i)]) +
                    " in problem 0 but " + kind_name(r) + " in problem " + std::to_string(k) +
                    "; every problem of a batch must have the same kind of row");
    }
  }
  ConicRows out;
  RowMap& rows = out.rows;
  rows.m = m;
  for (int i = 0; i < m; ++i) {
    const RowKind r = kind[size_t(i)];
    if (r == kEquality) rows.equality.push_back(i);
    if (r == kUpper || r == kBoth) rows.upper.push_back(i);
    if (r == kLower || r == kBoth) rows.lower.push_back(i);
  }
  out.cones.n_zero = static_cast<int>(rows.equality.size());
  out.cones.n_nonneg = static_cast<int>(rows.upper.size() + rows.lower.size());
  const int mc = out.cones.rows();
  out.A.resize(size_t(B) * mc * n);
  out.b.resize(size_t(B) * mc);
  for (int k = 0; k < B; ++k) {
    int r = 0;
    auto put = [&](int i, double sign, double rhs) {
      const double* src = &Ain[(size_t(k) * m + i) * n];
      double* dst = &out.A[(size_t(k) * mc + r) * n];
      for (int j = 0; j < n; ++j) dst[j] = sign * src[j];
      out.b[size_t(k) * mc + r] = sign * rhs;
      ++r;
    };
    for (int i : rows.equality) put(i, 1.0, uin[size_t(k) * m + i]);
    for (int i : rows.upper) put(i, 1.0, uin[size_t(k) * m + i]);
    for (int i : rows.lower) put(i, -1.0, lin[size_t(k) * m + i]);
  }
  return out;
}

ConicBatch conic_from_bounds(const BoundedQps& in, const std::string& what) {
  const int B = in.size, n = in.n, m = in.m;
  auto expect = [&](const std::vector<double>& v, size_t want, const char* name, const char* shape) {
    if (v.size() != want)
      throw Error(what + ": " + name + " has " + std::to_string(v.size()) + " values, expected " +
                  std::to_string(want) + " " + shape);
  };
  if (B < 1 || n < 1 || m < 0) throw Error(what + ": an empty batch or no variables");
  expect(in.P, size_t(B) * n * n, "P", "(B, n, n)");
  expect(in.q, size_t(B) * n, "q", "(B, n)");
  expect(in.A, size_t(B) * m * n, "A", "(B, m, n)");
  expect(in.l, size_t(B) * m, "l", "(B, m)");
  expect(in.u, size_t(B) * m, "u", "(B, m)");
  ConicRows c = conic_rows_from_bounds(B, n, m, in.A.data(), in.l.data(), in.u.data(), what);
  ConicBatch out;
  out.rows = std::move(c.rows);
  out.batch = QpBatch<double>::from_dense(B, n, c.cones, in.P, in.q, c.A, c.b);
  return out;
}

template <class T>
std::vector<T> bounds_multipliers(const RowMap& rows, int size, const std::vector<T>& conic_y) {
  const size_t mc = rows.equality.size() + rows.upper.size() + rows.lower.size();
  if (conic_y.size() != size_t(size) * mc)
    throw Error("bounds_multipliers: y has " + std::to_string(conic_y.size()) + " values, expected " +
                std::to_string(size_t(size) * mc));
  std::vector<T> y(size_t(size) * rows.m, T(0));
  for (int k = 0; k < size; ++k) {
    const T* yc = &conic_y[size_t(k) * mc];
    T* yk = &y[size_t(k) * rows.m];
    size_t r = 0;
    for (int i : rows.equality) yk[i] += yc[r++];
    for (int i : rows.upper) yk[i] += yc[r++];
    for (int i : rows.lower) yk[i] -= yc[r++];
  }
  return y;
}

template std::vector<float> bounds_multipliers(const RowMap&, int, const std::vector<float>&);
template std::vector<double> bounds_multipliers(const RowMap&, int, const std::vector<double>&);

}  // namespace impulse
