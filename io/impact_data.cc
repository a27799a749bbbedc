#include "io/impact_data.h"

#include <cmath>
#include <filesystem>

#include "io/npz.h"
#include "solvers/error.h"

namespace impulse {

namespace {
const char* const kNames[kImpactModels] = {"drumwright-shell", "ap-poisson", "ap-newton",
                                           "mirtich",          "wang-mason", "whittaker"};

template <size_t K>
void read_rows(const NpzArchive& z, const std::string& key, const std::string& file, size_t rows,
               std::vector<Impact>& out, std::array<double, K> Impact::*field, bool finite = true) {
  const NpyArray& a = npz_get(z, key, file);
  if (a.shape.size() != 2 || a.shape[0] != static_cast<int64_t>(rows) || a.shape[1] != static_cast<int64_t>(K))
    throw Error(file + ": array '" + key + "' has shape " + shape_string(a.shape) + ", expected (" +
                std::to_string(rows) + ", " + std::to_string(K) + ")");
  const std::vector<double> v = a.as<double>();
  for (size_t i = 0; i < rows; ++i)
    for (size_t j = 0; j < K; ++j) {
      const double x = v[i * K + j];
      if (finite && !std::isfinite(x))
        throw Error(file + ": array '" + key + "' row " + std::to_string(i) + " column " + std::to_string(j) +
                    " is not finite (" + std::to_string(x) + ")");
      (out[i].*field)[j] = x;
    }
}
}  // namespace

const char* impact_model_name(int k) {
  if (k < 0 || k >= kImpactModels) throw Error("impact model index " + std::to_string(k) + " out of range");
  return kNames[k];
}

int impact_model_index(const std::string& name) {
  for (int k = 0; k < kImpactModels; ++k)
    if (name == kNames[k]) return k;
  throw Error("unknown impact model '" + name +
              "' (known: drumwright-shell, ap-poisson, ap-newton, mirtich, wang-mason, whittaker)");
}

ImpactSet load_impacts(const std::string& path) {
  if (!std::filesystem::exists(path)) throw Error(path + ": no such file");
  const NpzArchive z = read_npz(path);
  const NpyArray& si = npz_get(z, "states_i", path);
  if (si.shape.size() != 2 || si.shape[0] < 1)
    throw Error(path + ": array 'states_i' has shape " + shape_string(si.shape) + ", expected (N, 6) with N >= 1");
  const size_t rows = static_cast<size_t>(si.shape[0]);
  ImpactSet s;
  s.source = path;
  s.impacts.resize(rows);
  read_rows(z, "states_i", path, rows, s.impacts, &Impact::state_i);
  read_rows(z, "states_f", path, rows, s.impacts, &Impact::state_f);
  read_rows(z, "n", path, rows, s.impacts, &Impact::n);
  read_rows(z, "d", path, rows, s.impacts, &Impact::d);
  for (size_t i = 0; i < rows; ++i) {
    const Impact& m = s.impacts[i];
    if (std::hypot(m.n[0], m.n[1]) < 1e-9 || std::hypot(m.d[0], m.d[1]) < 1e-9)
      throw Error(path + ": row " + std::to_string(i) + " has a zero normal or tangent (arrays 'n', 'd')");
  }
  for (Impact& m : s.impacts) {
    m.p_models.fill(NAN);
    m.v_models.fill(NAN);
    m.p_irb.fill(NAN);
    m.w_data.fill(NAN);
    m.feature5.fill(NAN);
    m.feature2.fill(NAN);
  }
  if (z.count("p_models") && z.count("v_models")) {
    read_rows(z, "p_models", path, rows, s.impacts, &Impact::p_models, false);
    read_rows(z, "v_models", path, rows, s.impacts, &Impact::v_models, false);
    s.has_models = true;
  }
  if (z.count("p_irb")) {
    read_rows(z, "p_irb", path, rows, s.impacts, &Impact::p_irb);
    s.has_irb = true;
  }
  if (z.count("w_data")) {
    read_rows(z, "w_data", path, rows, s.impacts, &Impact::w_data);
    s.has_wrench = true;
  }
  if (z.count("feature5")) read_rows(z, "feature5", path, rows, s.impacts, &Impact::feature5, false);
  if (z.count("feature2")) read_rows(z, "feature2", path, rows, s.impacts, &Impact::feature2, false);
  if (z.count("original_index")) {
    const NpyArray& a = z.at("original_index");
    if (static_cast<size_t>(a.size()) != rows) throw Error(path + ": array 'original_index' has " + std::to_string(a.size()) + " entries, expected " + std::to_string(rows));
    const std::vector<double> v = a.as<double>();
    for (size_t i = 0; i < rows; ++i) s.impacts[i].original_index = static_cast<int>(v[i]);
  }
  return s;
}

void write_impacts(const std::string& path, const ImpactSet& set) {
  const size_t n = set.impacts.size();
  auto put = [&](NpzArchive& z, const std::string& key, size_t K, auto getter) {
    std::vector<double> v(n * K);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < K; ++j) v[i * K + j] = getter(set.impacts[i])[j];
    z[key] = make_npy({static_cast<int64_t>(n), static_cast<int64_t>(K)}, v);
  };
  NpzArchive z;
  put(z, "states_i", 6, [](const Impact& m) { return m.state_i.data(); });
  put(z, "states_f", 6, [](const Impact& m) { return m.state_f.data(); });
  put(z, "n", 3, [](const Impact& m) { return m.n.data(); });
  put(z, "d", 3, [](const Impact& m) { return m.d.data(); });
  if (set.has_models) {
    put(z, "p_models", 12, [](const Impact& m) { return m.p_models.data(); });
    put(z, "v_models", 18, [](const Impact& m) { return m.v_models.data(); });
  }
  if (set.has_irb) put(z, "p_irb", 2, [](const Impact& m) { return m.p_irb.data(); });
  if (set.has_wrench) put(z, "w_data", 3, [](const Impact& m) { return m.w_data.data(); });
  write_npz(path, z);
}

}  // namespace impulse
