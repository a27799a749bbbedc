#include "io/system_tosses.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <utility>

#include "io/npz.h"
#include "io/toss_data.h"
#include "io/files.h"
#include "solvers/error.h"

namespace impulse {

namespace fs = std::filesystem;

int SystemToss::steps(int width) const {
  return width > 0 ? static_cast<int>(rows.size() / static_cast<size_t>(width)) : 0;
}

namespace {

constexpr int kBaseCols = 13;  // quat (4) + p (3) + ω (3) + v (3)
constexpr double kPi = 3.14159265358979323846;
// joint angles are wrapped to (-π, π]; the slack admits a wrap done in float32
// or after a last rounding, not an unwrapped angle (which is a different state
// representation the model would have to learn modulo 2π)
constexpr double kJointAngleSlack = 1e-6;
// no real system comes near this; it keeps width arithmetic far from int overflow
constexpr int64_t kMaxJoints = 10000;
constexpr const char* kMultibodyFormat = "impulse-multibody";
constexpr const char* kModelLayoutMark = "model";  // write_system_tosses' "layout" array

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

bool width_ok(int64_t w) {
  return w >= kBaseCols && (w - kBaseCols) % 2 == 0 && (w - kBaseCols) / 2 <= kMaxJoints;
}

// "a floating base and 1 joint": what a width means, for the error messages
std::string system_of(int64_t w) {
  if (!width_ok(w)) return "not 13 + 2 nj";
  const int64_t nj = (w - kBaseCols) / 2;
  if (nj == 0) return "a single rigid body, no joints";
  return "a floating base and " + std::to_string(nj) + (nj == 1 ? " joint" : " joints");
}

void check_width(int64_t w, const std::string& label) {
  if (!width_ok(w)) {
    throw Error(label + ": has " + std::to_string(w) +
                " columns, not of the form 13 + 2 nj (a floating base: quaternion, position, "
                "angular and linear velocity; then nj joint angles and nj joint rates)");
  }
}

void check_expected_width(int64_t w, int expected, const std::string& label) {
  if (expected > 0 && w != expected) {
    throw Error(label + ": has " + std::to_string(w) + " columns, expected " +
                std::to_string(expected) + " (" + system_of(expected) + ")");
  }
}

// Per row, in column order: finite values, then the quaternion (the
// load_tosses check and renormalization, or the check alone when renormalize
// is false: the writer never changes what it is given), then the joint angles.
// Errors name label, the 0-based row and the column.
void check_rows(double* rows, size_t steps, int width, const std::string& label, bool renormalize) {
  if (steps < 2) {
    throw Error(label + ": toss has " + std::to_string(steps) + " row(s), expected at least 2");
  }
  const int nj = (width - kBaseCols) / 2;
  const double bound = kPi + kJointAngleSlack;
  for (size_t k = 0; k < steps; ++k) {
    double* r = rows + k * static_cast<size_t>(width);
    for (int c = 0; c < width; ++c) {
      if (!std::isfinite(r[c])) {
        throw Error(label + ": row " + std::to_string(k) + ", column " + std::to_string(c) +
                    ": non-finite value " + fmt(r[c]));
      }
    }
    if (renormalize) {
      toss_detail::check_quaternion(r, k, label);
    } else {
      double q[4] = {r[0], r[1], r[2], r[3]};
      toss_detail::check_quaternion(q, k, label);
    }
    for (int j = 0; j < nj; ++j) {
      const int c = 7 + j;
      if (!(std::abs(r[c]) <= bound)) {
        throw Error(label + ": row " + std::to_string(k) + ", column " + std::to_string(c) +
                    ": joint angle " + fmt(r[c]) + " out of range [-pi, pi] (+-1e-6); joint " +
                    std::to_string(j) + " must be wrapped to (-pi, pi]");
      }
    }
  }
}

// ---- other state layouts (StateLayout) ------------------------------------------

// the joints' permutation, checked against nj
std::vector<int> joint_map(const StateLayout& L, int nj, const std::string& label) {
  std::vector<int> map(static_cast<size_t>(nj));
  if (L.joints.empty()) {
    for (int j = 0; j < nj; ++j) map[static_cast<size_t>(j)] = j;
    return map;
  }
  std::vector<char> seen(static_cast<size_t>(nj), 0);
  bool ok = static_cast<int>(L.joints.size()) == nj;
  for (size_t j = 0; ok && j < L.joints.size(); ++j) {
    const int m = L.joints[j];
    ok = m >= 0 && m < nj && !seen[static_cast<size_t>(m)];
    if (ok) seen[static_cast<size_t>(m)] = 1, map[j] = m;
  }
  if (!ok)
    throw Error(label + ": the layout's joint order is not a permutation of the system's " + std::to_string(nj) +
                " joint(s)");
  return map;
}

// R (row-major) -> unit quaternion w, x, y, z (the largest of the four first, for accuracy)
void matrix_to_quaternion(const double* R, double* q) {
  const double tr = R[0] + R[4] + R[8];
  double w, x, y, z;
  if (tr > 0) {
    const double s = 2 * std::sqrt(1 + tr);
    w = 0.25 * s, x = (R[7] - R[5]) / s, y = (R[2] - R[6]) / s, z = (R[3] - R[1]) / s;
  } else if (R[0] > R[4] && R[0] > R[8]) {
    const double s = 2 * std::sqrt(1 + R[0] - R[4] - R[8]);
    w = (R[7] - R[5]) / s, x = 0.25 * s, y = (R[1] + R[3]) / s, z = (R[2] + R[6]) / s;
  } else if (R[4] > R[8]) {
    const double s = 2 * std::sqrt(1 + R[4] - R[0] - R[8]);
    w = (R[2] - R[6]) / s, x = (R[1] + R[3]) / s, y = 0.25 * s, z = (R[5] + R[7]) / s;
  } else {
    const double s = 2 * std::sqrt(1 + R[8] - R[0] - R[4]);
    w = (R[3] - R[1]) / s, x = (R[2] + R[6]) / s, y = (R[5] + R[7]) / s, z = 0.25 * s;
  }
  const double n = std::sqrt(w * w + x * x + y * y + z * z);
  q[0] = w / n, q[1] = x / n, q[2] = y / n, q[3] = z / n;
}

// the unit quaternion's rotation matrix (row-major)
void quaternion_to_matrix(const double* q0, double* R) {
  const double n = std::sqrt(q0[0] * q0[0] + q0[1] * q0[1] + q0[2] * q0[2] + q0[3] * q0[3]);
  const double w = q0[0] / n, a = q0[1] / n, b = q0[2] / n, c = q0[3] / n;
  R[0] = 1 - 2 * (b * b + c * c), R[1] = 2 * (a * b - w * c), R[2] = 2 * (a * c + w * b);
  R[3] = 2 * (a * b + w * c), R[4] = 1 - 2 * (a * a + c * c), R[5] = 2 * (b * c - w * a);
  R[6] = 2 * (a * c - w * b), R[7] = 2 * (b * c + w * a), R[8] = 1 - 2 * (a * a + b * b);
}

// rows of a file in layout L (steps x L.file_width(nj)) into the model's layout
std::vector<double> to_model_rows(const StateLayout& L, const std::vector<double>& in, size_t steps, int nj,
                                  const std::string& label) {
  const std::vector<int> map = joint_map(L, nj, label);
  const int rc = L.rotation_columns(), fw = L.file_width(nj), W = kBaseCols + 2 * nj;
  std::vector<double> out(steps * static_cast<size_t>(W));
  double prev[4] = {0, 0, 0, 0};
  for (size_t k = 0; k < steps; ++k) {
    const double* r = in.data() + k * static_cast<size_t>(fw);
    double* o = out.data() + k * static_cast<size_t>(W);
    for (int c = 0; c < fw; ++c)
      if (!std::isfinite(r[c]))
        throw Error(label + ": row " + std::to_string(k) + ", column " + std::to_string(c) + ": non-finite value " +
                    fmt(r[c]));
    double q[4], R[9];
    if (L.rotation == StateLayout::Rotation::kMatrix) {
      double err = 0;
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
          double d = 0;
          for (int e = 0; e < 3; ++e) d += r[3 * e + i] * r[3 * e + j];
          err = std::max(err, std::abs(d - (i == j ? 1.0 : 0.0)));
        }
      const double det = r[0] * (r[4] * r[8] - r[5] * r[7]) - r[1] * (r[3] * r[8] - r[5] * r[6]) +
                         r[2] * (r[3] * r[7] - r[4] * r[6]);
      if (err > 0.01 || !(det > 0))
        throw Error(label + ": row " + std::to_string(k) + ", columns 0-8: not a rotation matrix (max |R'R - I| " +
                    fmt(err) + ", det " + fmt(det) + "; the layout reads a row-major rotation, body to world)");
      matrix_to_quaternion(r, q);
      // one sign along the toss: the nearer of ±q to the previous row's (w >= 0 at the first)
      const double dot = k == 0 ? q[0] : q[0] * prev[0] + q[1] * prev[1] + q[2] * prev[2] + q[3] * prev[3];
      if (dot < 0)
        for (double& v : q) v = -v;
    } else if (L.rotation == StateLayout::Rotation::kQuaternionXyzw) {
      q[0] = r[3], q[1] = r[0], q[2] = r[1], q[3] = r[2];
    } else {
      for (int i = 0; i < 4; ++i) q[i] = r[i];
    }
    for (int i = 0; i < 4; ++i) prev[i] = q[i], o[i] = q[i];
    const double* p = r + rc;
    for (int i = 0; i < 3; ++i) o[4 + i] = p[i];
    for (int j = 0; j < nj; ++j) o[7 + map[static_cast<size_t>(j)]] = p[3 + j];
    const double* w = p + 3 + nj;  // ω, v, θ̇
    if (L.world_angular_velocity) {
      quaternion_to_matrix(q, R);
      for (int i = 0; i < 3; ++i) o[7 + nj + i] = R[i] * w[0] + R[3 + i] * w[1] + R[6 + i] * w[2];  // Rᵀ ω
    } else {
      for (int i = 0; i < 3; ++i) o[7 + nj + i] = w[i];
    }
    for (int i = 0; i < 3; ++i) o[10 + nj + i] = w[3 + i];
    for (int j = 0; j < nj; ++j) o[13 + nj + map[static_cast<size_t>(j)]] = w[6 + j];
  }
  return out;
}

// the model's row, for messages about converted rows
std::string describe_model() { return "quaternion w, x, y, z | p | joint angles | body ω | v | joint rates"; }

// the width a reader expects of a file: the model's, or the layout's for the
// expected system; what the file's width must be, checked
void check_file_width(int64_t w, int expected_width, const StateLayout& L, const std::string& label) {
  if (L.is_model()) {
    check_width(w, label);
    check_expected_width(w, expected_width, label);
    return;
  }
  const int nj = (expected_width - kBaseCols) / 2;
  if (w != L.file_width(nj))
    throw Error(label + ": has " + std::to_string(w) + " columns, expected " + std::to_string(L.file_width(nj)) +
                " (" + system_of(expected_width) + " in the description's layout: " + L.describe() + ")");
}

// ---- cube data (load_tosses) ------------------------------------------------------

SystemTossSet from_cube(const TossSet& cube, int expected_width, const std::string& path) {
  SystemTossSet set;
  set.format = cube.format;
  set.width = kBaseCols;
  set.dt = cube.meta.dt;
  // cube data is width 13 by its format: one check names the path (and the
  // first toss) rather than every file
  if (!cube.tosses.empty()) {
    check_expected_width(
        kBaseCols, expected_width,
        path + ": toss '" + cube.tosses[0].name + "' (cube data, " + cube.format + ")");
  }
  set.tosses.reserve(cube.tosses.size());
  for (const Toss& t : cube.tosses) {
    SystemToss s;
    s.name = t.name;
    s.rows.reserve(kBaseCols * t.states.size());
    for (const StateRow& r : t.states) {
      // p | quat | v | ω  ->  quat | p | ω | v; load_tosses validated (and
      // renormalized) already, and a permutation changes no value
      const double row[kBaseCols] = {r[3],  r[4],  r[5],  r[6], r[0], r[1], r[2],
                                     r[10], r[11], r[12], r[7], r[8], r[9]};
      s.rows.insert(s.rows.end(), row, row + kBaseCols);
    }
    set.tosses.push_back(std::move(s));
  }
  return set;
}

// ---- CCN zip folders of any width ------------------------------------------------

SystemTossSet read_ccn_folder(const std::vector<std::string>& files, int expected_width, const StateLayout& L) {
  SystemTossSet set;
  set.format = "ccn";
  set.dt = toss_detail::kCcnDt;  // no metadata in the files
  int64_t width = 0;
  std::string first;
  for (const std::string& f : files) {
    const std::vector<uint8_t> b = read_file_bytes(f);
    if (!toss_detail::is_zip(b)) {
      throw Error(f +
                  ": not a zip archive, but the folder's first file is PyTorch zip serialization "
                  "(CCN); mixed formats in one folder");
    }
    toss_detail::PtMatrix m = toss_detail::read_pt_zip_matrix(b, f, 0);
    check_file_width(m.cols, expected_width, L, f);
    if (width == 0) {
      width = m.cols;
      first = f;
    } else if (m.cols != width) {
      throw Error(f + ": has " + std::to_string(m.cols) + " columns, but " + first + " has " +
                  std::to_string(width) + "; the tosses of one folder are of one system");
    }
    SystemToss t;
    t.name = fs::path(f).stem().string();
    const int model_width = L.is_model() ? static_cast<int>(width) : expected_width;
    t.rows = L.is_model() ? std::move(m.values)
                          : to_model_rows(L, m.values, static_cast<size_t>(m.rows), (model_width - kBaseCols) / 2, f);
    check_rows(t.rows.data(), static_cast<size_t>(m.rows), model_width,
               L.is_model() ? f : f + " (converted to the model's layout: " + describe_model() + ")", true);
    set.tosses.push_back(std::move(t));
  }
  set.width = L.is_model() ? static_cast<int>(width) : expected_width;
  return set;
}

// ---- impulse-multibody .npz -------------------------------------------------------

SystemTossSet read_multibody_npz(const NpzArchive& a, const std::string& path, int expected_width,
                                 const StateLayout& layout) {
  // impulse's own files are in the model's layout, whatever the description's
  const auto mark = a.find("layout");
  const bool marked = mark != a.end() && mark->second.dtype == DType::kUInt8 &&
                      std::string(mark->second.data.begin(), mark->second.data.end()) == kModelLayoutMark;
  const StateLayout L = marked ? StateLayout{} : layout;
  const NpyArray& s = npz_get(a, "states", path);
  const NpyArray& o = npz_get(a, "offsets", path);
  const NpyArray& d = npz_get(a, "dt", path);
  if (s.dtype != DType::kFloat32) expect_dtype(s, DType::kFloat64, path + ": states");  // float32 widened
  if (s.shape.size() != 2) {
    throw Error(path + ": states has shape " + shape_string(s.shape) + ", expected (R, W)");
  }
  const int64_t R = s.shape[0];
  const int64_t FW = s.shape[1];  // the file's row width
  check_file_width(FW, expected_width, L, path + ": states");
  const int64_t W = L.is_model() ? FW : expected_width;
  expect_dtype(d, DType::kFloat64, path + ": dt");
  if (d.shape != std::vector<int64_t>{1}) {
    throw Error(path + ": dt has shape " + shape_string(d.shape) + ", expected (1,)");
  }
  const std::vector<int64_t> off = toss_detail::read_offsets(o, R, path);
  const size_t n = off.size() - 1;
  SystemTossSet set;
  set.format = kMultibodyFormat;
  set.marked = marked;
  set.width = static_cast<int>(W);
  set.dt = d.as<double>()[0];
  if (!std::isfinite(set.dt) || !(set.dt > 0))
    throw Error(path + ": dt is " + fmt(set.dt) + ", expected a finite value > 0");
  std::vector<std::string> names;
  const auto nm = a.find("names");
  if (nm != a.end()) {
    // the names joined by '\n', as bytes: numpy has no portable string dtype
    // that np.load reads without pickles
    expect_dtype(nm->second, DType::kUInt8, path + ": names");
    if (nm->second.shape.size() != 1) {
      throw Error(path + ": names has shape " + shape_string(nm->second.shape) +
                  ", expected (B,) bytes");
    }
    const std::string all(nm->second.data.begin(), nm->second.data.end());
    if (n > 0) {
      size_t at = 0;
      for (;;) {
        const size_t e = all.find('\n', at);
        names.push_back(all.substr(at, e == std::string::npos ? std::string::npos : e - at));
        if (e == std::string::npos) break;
        at = e + 1;
      }
    }
    if (names.size() != n) {
      throw Error(path + ": names holds " + std::to_string(names.size()) + " name(s) for " +
                  std::to_string(n) + " toss(es)");
    }
  }
  std::vector<double> x = s.as<double>();
  set.tosses.reserve(n);
  for (size_t j = 0; j < n; ++j) {
    SystemToss t;
    t.name = names.empty() ? std::to_string(j) : names[j];
    if (L.is_model()) {
      t.rows.assign(x.begin() + off[j] * W, x.begin() + off[j + 1] * W);
    } else {
      const std::vector<double> raw(x.begin() + off[j] * FW, x.begin() + off[j + 1] * FW);
      t.rows = to_model_rows(L, raw, static_cast<size_t>(off[j + 1] - off[j]), static_cast<int>((W - kBaseCols) / 2),
                             path + ": toss " + std::to_string(j));
    }
    check_rows(t.rows.data(), static_cast<size_t>(off[j + 1] - off[j]), set.width,
               path + ": toss " + std::to_string(j) +
                   (L.is_model() ? "" : " (converted to the model's layout: " + describe_model() + ")"),
               true);
    set.tosses.push_back(std::move(t));
  }
  return set;
}

// an .npz of either kind: the cube's has meta (9,), the multibody one dt (1,)
SystemTossSet read_npz_file(const std::string& path, int expected_width, const StateLayout& L) {
  const NpzArchive a = read_npz(path);
  if (a.count("meta") != 0) return from_cube(load_tosses(path), expected_width, path);
  return read_multibody_npz(a, path, expected_width, L);
}

}  // namespace

namespace {

SystemTossSet load_any(const std::string& path, int expected_width, double dt, const StateLayout& L) {
  if (expected_width < 0 || (expected_width > 0 && !width_ok(expected_width))) {
    throw Error(path + ": expected width " + std::to_string(expected_width) +
                " is not of the form 13 + 2 nj (or 0: any)");
  }
  std::error_code ec;
  const fs::path p(path);
  const fs::file_status status = fs::status(p, ec);
  if (ec || !fs::exists(status)) throw Error(path + ": no such file or folder");
  if (fs::is_regular_file(status) && p.extension() == ".npz")
    return read_npz_file(path, expected_width, L);
  if (fs::is_directory(status)) {
    const std::vector<std::string> pts = toss_detail::list_pt_files(path);
    const fs::path npz = p / toss_detail::kImpulseFile;
    const bool has_npz = fs::is_regular_file(npz);
    if (has_npz && pts.empty()) return read_npz_file(npz.string(), expected_width, L);
    // a zip first file: CCN, of any width; the rest (legacy ContactNets,
    // repository layouts, a folder holding both kinds) is load_tosses' to read or reject
    if (!pts.empty() && !has_npz && toss_detail::is_zip(read_file_bytes(pts[0])))
      return read_ccn_folder(pts, expected_width, L);
  }
  // cube data, or load_tosses' error for what is none of the formats
  return from_cube(load_tosses(path, dt), expected_width, path);
}

}  // namespace

bool is_synthetic(const SystemTossSet& set, const StateLayout& layout) {
  return set.format == kMultibodyFormat && (set.marked || layout.is_model());
}

bool StateLayout::is_model() const {
  if (rotation != Rotation::kQuaternionWxyz || world_angular_velocity) return false;
  for (size_t j = 0; j < joints.size(); ++j)
    if (joints[j] != static_cast<int>(j)) return false;
  return true;
}

const char* StateLayout::rotation_name() const {
  return rotation == Rotation::kMatrix            ? "matrix"
         : rotation == Rotation::kQuaternionXyzw ? "quaternion_xyzw"
                                                 : "quaternion_wxyz";
}

std::string StateLayout::describe() const {
  std::string s = rotation == Rotation::kMatrix            ? "rotation matrix"
                  : rotation == Rotation::kQuaternionXyzw ? "quaternion x, y, z, w"
                                                          : "quaternion w, x, y, z";
  s += world_angular_velocity ? ", angular velocity in world axes" : ", angular velocity in body axes";
  if (!joints.empty()) {
    s += ", joints (";
    for (size_t j = 0; j < joints.size(); ++j) s += (j ? ", " : "") + std::to_string(joints[j]);
    s += ")";
  }
  return s;
}

SystemTossSet load_system_tosses(const std::string& path, int expected_width, double dt, const StateLayout& layout) {
  toss_detail::check_time_step(dt, path);
  if (!layout.is_model() && !(expected_width > 0 && width_ok(expected_width)))
    throw Error(path + ": a state layout other than the model's needs the system's width (13 + 2 nj)");
  SystemTossSet set = load_any(path, expected_width, dt, layout);
  if (dt > 0) set.dt = dt;
  return set;
}

void smooth_velocities(SystemTossSet& set, int half_width) {
  if (half_width < 0) throw Error("smooth_velocities: the half width must be >= 0, got " + std::to_string(half_width));
  if (half_width == 0) return;
  check_width(set.width, "smooth_velocities");
  const int W = set.width, first = 7 + set.joints();  // velocity columns first .. W−1
  std::vector<double> raw;
  for (SystemToss& t : set.tosses) {
    const int T = t.steps(W);
    raw = t.rows;
    for (int k = 0; k < T; ++k) {
      const int h = std::min(half_width, std::min(k, T - 1 - k));
      for (int c = first; c < W; ++c) {
        double s = 0;
        for (int j = k - h; j <= k + h; ++j) s += raw[static_cast<size_t>(j) * W + c];
        t.rows[static_cast<size_t>(k) * W + c] = s / (2 * h + 1);
      }
    }
  }
}

void write_system_tosses(const std::string& path, const SystemTossSet& set) {
  if (fs::path(path).extension() != ".npz")
    throw Error(path + ": toss files are .npz; the name must end in .npz");
  check_width(set.width, path);
  if (!std::isfinite(set.dt) || !(set.dt > 0))
    throw Error(path + ": dt is " + fmt(set.dt) + ", expected a finite value > 0");
  const size_t W = static_cast<size_t>(set.width);
  std::vector<double> states;
  std::vector<int64_t> offsets{0};
  bool simple_names = !set.tosses.empty();
  std::string names;
  for (size_t j = 0; j < set.tosses.size(); ++j) {
    const SystemToss& t = set.tosses[j];
    const std::string label = path + ": toss " + std::to_string(j) + " ('" + t.name + "')";
    if (t.rows.size() % W != 0) {
      throw Error(label + ": " + std::to_string(t.rows.size()) +
                  " values, not a whole number of rows of width " + std::to_string(W));
    }
    const size_t steps = t.rows.size() / W;
    const size_t at = states.size();
    states.insert(states.end(), t.rows.begin(), t.rows.end());
    check_rows(states.data() + at, steps, set.width, label, false);
    offsets.push_back(offsets.back() + static_cast<int64_t>(steps));
    if (t.name.empty() || t.name.find('\n') != std::string::npos) simple_names = false;
    names += (j ? "\n" : "") + t.name;
  }
  NpzArchive a;
  a["states"] = make_npy({offsets.back(), static_cast<int64_t>(W)}, states);
  a["offsets"] = make_npy({static_cast<int64_t>(offsets.size())}, offsets);
  a["dt"] = make_npy({1}, std::vector<double>{set.dt});
  NpyArray mark;
  mark.dtype = DType::kUInt8;
  const std::string m = kModelLayoutMark;
  mark.shape = {static_cast<int64_t>(m.size())};
  mark.data.assign(m.begin(), m.end());
  a["layout"] = std::move(mark);
  if (simple_names) {
    NpyArray nm;
    nm.dtype = DType::kUInt8;
    nm.shape = {static_cast<int64_t>(names.size())};
    nm.data.assign(names.begin(), names.end());
    a["names"] = std::move(nm);
  }
  write_npz(path, a);  // temporary file + rename
}

}  // namespace impulse
