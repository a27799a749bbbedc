#include "host/batch/golden.h"

#include <cmath>

#include "io/npy.h"

namespace impulse {

GoldenQps load_golden_qps(const std::string& dir, const std::string& prefix) {
  auto load = [&](const char* name, size_t dims) {
    const std::string path = dir + "/" + prefix + "_" + name + ".npy";
    NpyArray a = read_npy(path);
    if (a.shape.size() != dims)
      throw Error(path + ": expected " + std::to_string(dims) + " dimensions, got shape " +
                  shape_string(a.shape));
    return std::make_pair(path, a);
  };
  const auto [p_path, P] = load("P", 3);
  const auto [q_path, q] = load("q", 2);
  const auto [a_path, A] = load("A", 3);
  const auto [l_path, l] = load("l", 2);
  const auto [u_path, u] = load("u", 2);
  const auto [x_path, rx] = load("ref_x", 2);
  const auto [o_path, ro] = load("ref_obj", 1);
  const int B = static_cast<int>(P.shape[0]), n = static_cast<int>(P.shape[1]);
  const int m = static_cast<int>(A.shape[1]);
  auto expect = [](const std::string& path, const std::vector<int64_t>& got,
                   const std::vector<int64_t>& want) {
    if (got != want)
      throw Error(path + ": expected shape " + shape_string(want) + ", got " + shape_string(got));
  };
  expect(p_path, P.shape, {B, n, n});
  expect(q_path, q.shape, {B, n});
  expect(a_path, A.shape, {B, m, n});
  expect(l_path, l.shape, {B, m});
  expect(u_path, u.shape, {B, m});
  expect(x_path, rx.shape, {B, n});
  expect(o_path, ro.shape, {B});
  const std::vector<double> lv = l.as<double>();
  for (size_t i = 0; i < lv.size(); ++i)
    if (std::isfinite(lv[i]))
      throw Error(l_path + ": entry " + std::to_string(i) +
                  " is finite; only rows with l = -inf are supported");
  ConeSpec cones;
  cones.n_nonneg = m;
  GoldenQps g;
  g.batch = QpBatch<double>::from_dense(B, n, cones, P.as<double>(), q.as<double>(),
                                        A.as<double>(), u.as<double>());
  g.ref_obj = ro.as<double>();
  g.ref_x = rx.as<double>();
  return g;
}

}  // namespace impulse
