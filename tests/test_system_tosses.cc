// Tests for io/system_tosses: multibody toss data of width 13 + 2 nj (CCN zip
// .pt folders of any width, the "impulse-multibody" .npz), the cube formats
// seen through the same loader (permuted to Drake's order), and the real
// articulated "elbow" tosses when ../shared/data is present (skips otherwise).
// The .pt files are written here with io/zip.h's encoder and a pickle laid out
// byte for byte like the real elbow files' archive/data.pkl.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <Eigen/Geometry>

#include "io/npy.h"
#include "io/npz.h"
#include "io/system_tosses.h"
#include "io/toss_data.h"
#include "io/zip.h"
#include "solvers/error.h"
#include "tests/test_util.h"

namespace {

namespace fs = std::filesystem;
using impulse::Error;
using impulse::SystemToss;
using impulse::SystemTossSet;
using Bytes = std::vector<uint8_t>;

constexpr double kPi = 3.14159265358979323846;

// ---- helpers ------------------------------------------------------------------

// Runs f, expects impulse::Error whose message contains every one of parts.
void ExpectError(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts) {
      EXPECT_NE(msg.find(p), std::string::npos)
          << "message \"" << msg << "\" lacks \"" << p << "\"";
    }
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected impulse::Error, got another exception: " << e.what();
    return;
  }
  ADD_FAILURE() << "expected impulse::Error, nothing was thrown";
}

// a fresh folder per test, removed afterwards
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() / ("impulse_systoss_" + std::to_string(::getpid()) + "_" +
                                         std::to_string(counter++) + "_" + info->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string str(const std::string& rel = "") const {
    return rel.empty() ? path_.string() : (path_ / rel).string();
  }

 private:
  fs::path path_;
};

void write_bytes(const std::string& path, const Bytes& b) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  ASSERT_TRUE(out.good()) << path;
}

Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void put(Bytes& b, const std::string& s) { b.insert(b.end(), s.begin(), s.end()); }
void put_f64(Bytes& b, double v) {
  uint8_t x[8];
  std::memcpy(x, &v, 8);
  b.insert(b.end(), x, x + 8);
}
void put_i64(Bytes& b, int64_t v) {
  uint8_t x[8];
  std::memcpy(x, &v, 8);
  b.insert(b.end(), x, x + 8);
}

// ---- CCN zip .pt files, as torch.save writes them ------------------------------------

void pk_int(Bytes& b, int64_t v) {
  if (v >= 0 && v < 256) {  // BININT1
    b.push_back('K');
    b.push_back(static_cast<uint8_t>(v));
  } else {  // BININT2 (what the real files use for numel 1815)
    b.push_back('M');
    b.push_back(static_cast<uint8_t>(v));
    b.push_back(static_cast<uint8_t>(v >> 8));
  }
}
void pk_str(Bytes& b, const std::string& s) {  // BINUNICODE
  b.push_back('X');
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(s.size() >> (8 * i)));
  put(b, s);
}

// the real elbow files' data.pkl (protocol 2):
// _rebuild_tensor_v2(('storage', DoubleStorage, '0', 'cpu', numel), 0, (T, W), (W, 1),
//                    False, OrderedDict())
Bytes tensor_pickle(int64_t rows, int64_t cols, int64_t numel) {
  Bytes b{0x80, 0x02};
  put(b, "ctorch._utils\n_rebuild_tensor_v2\n");
  put(b, std::string("q\0((", 4));  // BINPUT 0, MARK, MARK
  pk_str(b, "storage");
  put(b,
      "q\x01"
      "ctorch\nDoubleStorage\nq\x02");
  pk_str(b, "0");
  put(b, "q\x03");
  pk_str(b, "cpu");
  put(b, "q\x04");
  pk_int(b, numel);
  put(b, "tq\x05Q");
  pk_int(b, 0);  // storage offset
  pk_int(b, rows);
  pk_int(b, cols);
  put(b, "\x86q\x06");  // TUPLE2: size
  pk_int(b, cols);
  pk_int(b, 1);
  put(b, "\x86q\x07\x89");  // TUPLE2: stride; NEWFALSE: requires_grad
  put(b, "ccollections\nOrderedDict\nq\x08)Rq\ttq\nRq\x0b.");
  return b;
}

// a torch.save zip archive of one (rows, cols) float64 tensor
Bytes pt_file(const std::vector<double>& values, int64_t cols) {
  const int64_t n = static_cast<int64_t>(values.size());
  Bytes data;
  for (double v : values) put_f64(data, v);
  std::vector<impulse::ZipEntry> e;
  e.push_back({"archive/data.pkl", tensor_pickle(n / cols, cols, n)});
  e.push_back({"archive/data/0", data});
  e.push_back({"archive/version", Bytes{'3', '\n'}});
  return impulse::encode_zip(e);
}

// row k of a synthetic toss with nj joints, in the system order:
// quat wxyz | p | θ (nj) | ω body | v world | θ̇ (nj)
std::vector<double> sys_row(int j, int k, int nj) {
  const double a = 0.1 * j + 0.2 * k;
  std::vector<double> r = {std::cos(a), 0.0,      std::sin(a),   0.0,          // quat
                           0.01 * k,    0.02 + j, 0.3 - 0.01 * k};             // p
  for (int i = 0; i < nj; ++i) r.push_back(0.5 - 0.1 * k + 0.25 * i);          // θ
  for (double v : {1.0 + k, 2.0, 3.0 - j, 4.0 + k, 5.0, 6.0}) r.push_back(v);  // ω, v
  for (int i = 0; i < nj; ++i) r.push_back(-14.8 + i);                         // θ̇
  return r;
}

std::vector<double> sys_toss(int j, int rows, int nj) {
  std::vector<double> v;
  for (int k = 0; k < rows; ++k) {
    const std::vector<double> r = sys_row(j, k, nj);
    v.insert(v.end(), r.begin(), r.end());
  }
  return v;
}

// tosses 0, 1, 2 and 10 (numeric order differs from name order), 3 + j rows each
void write_sys_folder(const std::string& dir, int nj) {
  for (int j : {0, 1, 2, 10})
    write_bytes(dir + "/" + std::to_string(j) + ".pt",
                pt_file(sys_toss(j, 3 + j, nj), 13 + 2 * nj));
}

// a ContactNets legacy file as the tail-only writer lays it out (magic, a
// pickle naming the storage, int64 count, float64 values): what load_tosses
// documents as enough
Bytes legacy_file(const std::vector<double>& values) {
  Bytes b{0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, '.'};
  put(b,
      "\x80\x02"
      "ctorch\nDoubleStorage\n.");
  put_i64(b, static_cast<int64_t>(values.size()));
  for (double v : values) put_f64(b, v);
  return b;
}

// the cube in ContactNets units and order: p | quat | v | ω body | 6 inputs (0):
// moving at a constant velocity and turning 0.1 rad a step about z, so that each
// time step agrees with the velocities and dt, as load_tosses checks
std::vector<double> cn_toss(int j, int rows) {
  const double dt = 0.006756756756756757;
  std::vector<double> v;
  for (int k = 0; k < rows; ++k) {
    const double a = 0.1 * j + 0.05 * k;
    const double r[19] = {0.5 + j + k * dt, k * dt * (-2.0 - j), 1.5 + k * dt * 3.5,  // p
                          std::cos(a), 0.0, 0.0, std::sin(a),                      // quat
                          1.0, -2.0 - j, 3.5,                                      // v
                          0.3, -0.7 * j, 0.1 / dt,                                 // ω body
                          0, 0, 0, 0, 0, 0};                                       // inputs
    v.insert(v.end(), r, r + 19);
  }
  return v;
}

void write_cn_folder(const std::string& dir) {
  for (int j : {0, 1, 2})
    write_bytes(dir + "/" + std::to_string(j) + ".pt", legacy_file(cn_toss(j, 4 + j)));
  const std::string json =
      "{\"dt\": 0.006756756756756757, \"g\": 187.21374045801525, \"mass\": 0.37}";
  write_bytes(dir + "/experiment.json", Bytes(json.begin(), json.end()));
}

// load_tosses' rows permuted to the system order: p | quat | v | ω -> quat | p | ω | v
std::vector<double> permuted(const impulse::Toss& t) {
  std::vector<double> out;
  for (const impulse::StateRow& r : t.states) {
    for (int c : {3, 4, 5, 6, 0, 1, 2, 10, 11, 12, 7, 8, 9}) out.push_back(r[c]);
  }
  return out;
}

void ExpectSameAsCube(const SystemTossSet& s, const impulse::TossSet& cube) {
  EXPECT_EQ(s.format, cube.format);
  EXPECT_EQ(s.width, 13);
  EXPECT_EQ(s.joints(), 0);
  EXPECT_EQ(s.dt, cube.meta.dt);
  ASSERT_EQ(s.tosses.size(), cube.tosses.size());
  for (size_t j = 0; j < s.tosses.size(); ++j) {
    EXPECT_EQ(s.tosses[j].name, cube.tosses[j].name);
    EXPECT_EQ(s.tosses[j].steps(13), int(cube.tosses[j].states.size()));
    EXPECT_EQ(s.tosses[j].rows, permuted(cube.tosses[j])) << "toss " << j;  // exact
  }
}

}  // namespace

// ---- multibody CCN folders ------------------------------------------------------------

TEST(SystemTosses, CcnFolderOfAnyWidth) {
  for (int nj : {1, 2}) {
    TempDir d;
    write_sys_folder(d.str(), nj);
    const SystemTossSet s = impulse::load_system_tosses(d.str());
    EXPECT_EQ(s.format, "ccn");
    EXPECT_EQ(s.width, 13 + 2 * nj);
    EXPECT_EQ(s.joints(), nj);
    EXPECT_EQ(s.dt, 0.0068);
    ASSERT_EQ(s.tosses.size(), 4u);
    const int ids[4] = {0, 1, 2, 10};
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(s.tosses[i].name, std::to_string(ids[i]));  // numeric order
      EXPECT_EQ(s.tosses[i].steps(s.width), 3 + ids[i]);
      EXPECT_EQ(s.tosses[i].rows, sys_toss(ids[i], 3 + ids[i], nj));  // as stored, exactly
    }
    // the expected width passes when it matches
    EXPECT_EQ(impulse::load_system_tosses(d.str(), 13 + 2 * nj).tosses.size(), 4u);
  }
}

TEST(SystemTosses, NeverModifiesInput) {
  TempDir d;
  write_sys_folder(d.str(), 1);
  const Bytes before = read_bytes(d.str("2.pt"));
  impulse::load_system_tosses(d.str(), 15);
  EXPECT_EQ(read_bytes(d.str("2.pt")), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(d.str()), fs::directory_iterator()), 4);
}

// ---- cube formats: width 13, Drake's order, the same values as load_tosses -------------

TEST(SystemTosses, CubeFormatsMatchLoadTossesPermuted) {
  TempDir d;
  // (b) CCN (T, 13): the system order is CCN's own
  write_sys_folder(d.str("ccn"), 0);
  // a quaternion 0.5% off unit norm: both loaders renormalize it the same way
  std::vector<double> v = sys_toss(3, 4, 0);
  for (int c = 0; c < 4; ++c) v[13 * 2 + c] *= 1.005;
  write_bytes(d.str("ccn/3.pt"), pt_file(v, 13));
  const impulse::TossSet ccn = impulse::load_tosses(d.str("ccn"));
  ExpectSameAsCube(impulse::load_system_tosses(d.str("ccn")), ccn);
  EXPECT_EQ(impulse::load_system_tosses(d.str("ccn")).tosses[0].rows, sys_toss(0, 3, 0));
  // (a) ContactNets legacy, converted to SI by load_tosses
  write_cn_folder(d.str("cn"));
  const impulse::TossSet cn = impulse::load_tosses(d.str("cn"));
  const SystemTossSet scn = impulse::load_system_tosses(d.str("cn"));
  ExpectSameAsCube(scn, cn);
  EXPECT_EQ(scn.dt, 0.006756756756756757);
  // (c) impulse .npz (cube, with meta), as a file and as a folder holding tosses.npz
  fs::create_directories(d.str("npz"));
  impulse::write_tosses(d.str("npz/tosses.npz"), cn);
  const impulse::TossSet np = impulse::load_tosses(d.str("npz/tosses.npz"));
  ExpectSameAsCube(impulse::load_system_tosses(d.str("npz/tosses.npz")), np);
  ExpectSameAsCube(impulse::load_system_tosses(d.str("npz")), np);
  EXPECT_EQ(impulse::load_system_tosses(d.str("npz"), 13).format, "impulse");
}

TEST(SystemTosses, CubeFormatsRejectAnotherExpectedWidth) {
  TempDir d;
  write_sys_folder(d.str("ccn"), 0);
  ExpectError([&] { impulse::load_system_tosses(d.str("ccn"), 15); },
              {d.str("ccn/0.pt"), "has 13 columns, expected 15", "1 joint"});
  write_cn_folder(d.str("cn"));
  ExpectError([&] { impulse::load_system_tosses(d.str("cn"), 15); },
              {d.str("cn"), "toss '0'", "has 13 columns, expected 15", "1 joint"});
  impulse::write_tosses(d.str("c.npz"), impulse::load_tosses(d.str("cn")));
  ExpectError([&] { impulse::load_system_tosses(d.str("c.npz"), 17); },
              {d.str("c.npz"), "has 13 columns, expected 17", "2 joints"});
  // and the other way round: elbow-like data where the cube is expected
  write_sys_folder(d.str("elbow"), 1);
  ExpectError([&] { impulse::load_system_tosses(d.str("elbow"), 13); },
              {d.str("elbow/0.pt"), "has 15 columns, expected 13", "no joints"});
  // an expected width that no system has
  ExpectError([&] { impulse::load_system_tosses(d.str("elbow"), 14); },
              {"expected width 14", "13 + 2 nj"});
}

// ---- impulse-multibody .npz ---------------------------------------------------------

TEST(SystemTosses, NpzRoundTripExact) {
  TempDir d;
  SystemTossSet a;
  a.format = "ccn";
  a.width = 17;
  a.dt = 1.0 / 148.0;
  for (int j : {0, 1, 5}) a.tosses.push_back({"toss-" + std::to_string(j), sys_toss(j, 4 + j, 2)});
  // awkward values survive bit for bit; joint angles at the ends of the range
  a.tosses[1].rows[7] = kPi;
  a.tosses[1].rows[17 + 8] = -kPi - 0.5e-6;
  a.tosses[2].rows[4] = std::nextafter(0.1, 1.0);
  a.tosses[2].rows[11] = -0.0;
  a.tosses[2].rows[12] = 1e-310;  // subnormal
  fs::create_directories(d.str("out"));
  impulse::write_system_tosses(d.str("out/m.npz"), a);
  const SystemTossSet b = impulse::load_system_tosses(d.str("out/m.npz"));
  EXPECT_EQ(b.format, "impulse-multibody");
  EXPECT_EQ(b.width, 17);
  EXPECT_EQ(b.joints(), 2);
  EXPECT_EQ(b.dt, a.dt);
  ASSERT_EQ(b.tosses.size(), a.tosses.size());
  for (size_t j = 0; j < a.tosses.size(); ++j) {
    EXPECT_EQ(b.tosses[j].name, a.tosses[j].name);
    ASSERT_EQ(b.tosses[j].rows.size(), a.tosses[j].rows.size());
    EXPECT_EQ(
        std::memcmp(b.tosses[j].rows.data(), a.tosses[j].rows.data(), 8 * a.tosses[j].rows.size()),
        0)
        << "toss " << j;
  }
  // no temporary file is left; rewriting is idempotent, byte for byte
  EXPECT_EQ(std::distance(fs::directory_iterator(d.str("out")), fs::directory_iterator()), 1);
  impulse::write_system_tosses(d.str("again.npz"), b);
  EXPECT_EQ(read_bytes(d.str("again.npz")), read_bytes(d.str("out/m.npz")));
  // a folder holding tosses.npz reads it; the expected width is checked
  fs::create_directories(d.str("dir"));
  fs::copy_file(d.str("out/m.npz"), d.str("dir/tosses.npz"));
  EXPECT_EQ(impulse::load_system_tosses(d.str("dir"), 17).tosses.size(), 3u);
  ExpectError([&] { impulse::load_system_tosses(d.str("dir"), 15); },
              {d.str("dir/tosses.npz"), "has 17 columns, expected 15"});
  // names that do not fit one '\n'-joined list are dropped: indices on reading
  a.tosses[1].name = "";
  impulse::write_system_tosses(d.str("noname.npz"), a);
  const SystemTossSet c = impulse::load_system_tosses(d.str("noname.npz"));
  EXPECT_EQ(c.tosses[0].name, "0");
  EXPECT_EQ(c.tosses[2].name, "2");
  EXPECT_EQ(c.tosses[2].rows, a.tosses[2].rows);
}

// ---- other state layouts --------------------------------------------------------------

// a toss of a 2-joint system in the model's layout whose base turns about a fixed
// tilted axis (w > 0 at the first row), with distinct joint values
std::vector<double> turning_toss(int rows) {
  std::vector<double> v;
  for (int k = 0; k < rows; ++k) {
    const double a = 0.3 + 0.4 * k;  // half the angle: q = (cos a, sin a u), u = (0.6, 0, 0.8)
    const double r[] = {std::cos(a), 0.6 * std::sin(a), 0.0, 0.8 * std::sin(a), 0.01 * k, 0.02, 0.3,  // q, p
                        0.5 - 0.1 * k, -0.7,                                                         // θ
                        1.0 + k, 2.0, -3.0, 4.0, 5.0 - k, 6.0,                                       // ω body, v
                        -2.5, 1.5 + k};                                                              // θ̇
    v.insert(v.end(), std::begin(r), std::end(r));
  }
  return v;
}

// the same rows in a file's layout: the rotation as a row-major matrix, ω in world axes,
// the joints in the order (1, 0)
std::vector<double> as_matrix_world_swapped(const std::vector<double>& model, int rows) {
  std::vector<double> out;
  for (int k = 0; k < rows; ++k) {
    const double* r = model.data() + 17 * k;
    const Eigen::Matrix3d R = Eigen::Quaterniond(r[0], r[1], r[2], r[3]).toRotationMatrix();
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) out.push_back(R(i, j));
    for (int i = 4; i < 7; ++i) out.push_back(r[i]);
    out.push_back(r[8]), out.push_back(r[7]);
    const Eigen::Vector3d w = R * Eigen::Vector3d(r[9], r[10], r[11]);
    for (int i = 0; i < 3; ++i) out.push_back(w(i));
    for (int i = 12; i < 15; ++i) out.push_back(r[i]);
    out.push_back(r[16]), out.push_back(r[15]);
  }
  return out;
}

// an .npz of states impulse did not write (no "layout" mark)
void write_foreign_npz(const std::string& path, const std::vector<double>& states, int64_t width) {
  impulse::NpzArchive a;
  const int64_t R = static_cast<int64_t>(states.size()) / width;
  a["states"] = impulse::make_npy({R, width}, states);
  a["offsets"] = impulse::make_npy({2}, std::vector<int64_t>{0, R});
  a["dt"] = impulse::make_npy({1}, std::vector<double>{0.01});
  impulse::write_npz(path, a);
}

TEST(SystemTosses, OtherStateLayoutsReadIntoTheModels) {
  TempDir d;
  const int rows = 6;
  const std::vector<double> model = turning_toss(rows);
  impulse::StateLayout L;
  L.rotation = impulse::StateLayout::Rotation::kMatrix;
  L.world_angular_velocity = true;
  L.joints = {1, 0};
  EXPECT_FALSE(L.is_model());
  EXPECT_EQ(L.file_width(2), 22);
  const std::vector<double> file = as_matrix_world_swapped(model, rows);
  // a CCN .pt folder and an .npz of another program, both in that layout
  fs::create_directories(d.str("pt"));
  write_bytes(d.str("pt/0.pt"), pt_file(file, 22));
  write_foreign_npz(d.str("foreign.npz"), file, 22);
  for (const std::string& path : {d.str("pt"), d.str("foreign.npz")}) {
    const SystemTossSet got = impulse::load_system_tosses(path, 17, 0, L);
    EXPECT_EQ(got.width, 17);
    ASSERT_EQ(got.tosses.size(), 1u);
    ASSERT_EQ(got.tosses[0].rows.size(), model.size());
    double err = 0;
    for (size_t i = 0; i < model.size(); ++i) err = std::max(err, std::abs(got.tosses[0].rows[i] - model[i]));
    EXPECT_LT(err, 1e-14) << path;  // the rows' quaternions keep one sign: a turns past π/2 here
  }
  // quaternion x, y, z, w: a permutation, read bit for bit
  impulse::StateLayout X;
  X.rotation = impulse::StateLayout::Rotation::kQuaternionXyzw;
  std::vector<double> xyzw = model;
  for (int k = 0; k < rows; ++k) {
    double* r = xyzw.data() + 17 * k;
    const double w = r[0];
    r[0] = r[1], r[1] = r[2], r[2] = r[3], r[3] = w;
  }
  write_foreign_npz(d.str("xyzw.npz"), xyzw, 17);
  EXPECT_EQ(impulse::load_system_tosses(d.str("xyzw.npz"), 17, 0, X).tosses[0].rows, model);
  // impulse's own files are in the model's layout, whatever the description says
  SystemTossSet own;
  own.width = 17;
  own.tosses.push_back({"0", model});
  impulse::write_system_tosses(d.str("own.npz"), own);
  EXPECT_EQ(impulse::load_system_tosses(d.str("own.npz"), 17, 0, L).tosses[0].rows, model);
  // errors name the file, the row and the layout
  ExpectError([&] { impulse::load_system_tosses(d.str("xyzw.npz"), 17, 0, L); },
              {"xyzw.npz: states", "has 17 columns, expected 22", "rotation matrix, angular velocity in world axes, joints (1, 0)"});
  std::vector<double> bad = file;
  for (int i = 0; i < 9; ++i) bad[22 * 2 + i] *= 1.1;
  write_foreign_npz(d.str("scaled.npz"), bad, 22);
  ExpectError([&] { impulse::load_system_tosses(d.str("scaled.npz"), 17, 0, L); },
              {"scaled.npz: toss 0: row 2, columns 0-8: not a rotation matrix"});
  bad = file;
  for (int i = 0; i < 3; ++i) bad[22 * 3 + 3 * i] = -bad[22 * 3 + 3 * i];  // a reflection
  write_foreign_npz(d.str("mirror.npz"), bad, 22);
  ExpectError([&] { impulse::load_system_tosses(d.str("mirror.npz"), 17, 0, L); },
              {"mirror.npz: toss 0: row 3, columns 0-8: not a rotation matrix", "det -"});
  // three joints in the order (1, 2, 0), a permutation that is not its own inverse: the
  // data's joint j is the model's joint joints[j]
  impulse::StateLayout P;
  P.joints = {1, 2, 0};
  const std::vector<double> m3 = sys_toss(3, 4, 3);  // width 19
  std::vector<double> f3 = m3;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j) {
      f3[19 * k + 7 + j] = m3[19 * k + 7 + P.joints[size_t(j)]];
      f3[19 * k + 16 + j] = m3[19 * k + 16 + P.joints[size_t(j)]];
    }
  ASSERT_NE(f3, m3);
  write_foreign_npz(d.str("perm.npz"), f3, 19);
  const SystemTossSet p3 = impulse::load_system_tosses(d.str("perm.npz"), 19, 0, P);
  EXPECT_EQ(p3.tosses[0].rows, m3);
  EXPECT_FALSE(p3.marked);
  EXPECT_FALSE(impulse::is_synthetic(p3, P));  // another program's recording
  EXPECT_TRUE(impulse::is_synthetic(impulse::load_system_tosses(d.str("own.npz"), 17, 0, L), L));  // impulse's own
  impulse::StateLayout dup = L;
  dup.joints = {0, 0};
  ExpectError([&] { impulse::load_system_tosses(d.str("foreign.npz"), 17, 0, dup); },
              {"foreign.npz", "not a permutation of the system's 2 joint(s)"});
  ExpectError([&] { impulse::load_system_tosses(d.str("foreign.npz"), 0, 0, L); },
              {"foreign.npz", "needs the system's width"});
}

TEST(SystemTosses, WriteValidates) {
  TempDir d;
  SystemTossSet s;
  s.width = 15;
  s.tosses.push_back({"x", sys_toss(0, 3, 1)});
  ExpectError([&] { impulse::write_system_tosses(d.str("t.bin"), s); }, {d.str("t.bin"), ".npz"});
  s.width = 14;
  ExpectError([&] { impulse::write_system_tosses(d.str("t.npz"), s); },
              {"14 columns", "13 + 2 nj"});
  s.width = 17;
  ExpectError([&] { impulse::write_system_tosses(d.str("t.npz"), s); },
              {"toss 0 ('x')", "45 values", "width 17"});
  s.width = 15;
  s.dt = 0;
  ExpectError([&] { impulse::write_system_tosses(d.str("t.npz"), s); }, {"dt is 0"});
  s.dt = 0.0068;
  s.tosses[0].rows[15 * 2 + 7] = 4.0;
  ExpectError([&] { impulse::write_system_tosses(d.str("t.npz"), s); },
              {"toss 0", "row 2, column 7", "joint angle 4", "out of range"});
  s.tosses[0].rows[15 * 2 + 7] = 0;
  s.tosses[0].rows.resize(15);
  ExpectError([&] { impulse::write_system_tosses(d.str("t.npz"), s); }, {"1 row(s)", "at least 2"});
  EXPECT_FALSE(fs::exists(d.str("t.npz")));
}

// ---- errors on reading -----------------------------------------------------------------

TEST(SystemTosses, NonFiniteValueNamesRowAndColumn) {
  TempDir d;
  write_sys_folder(d.str(), 1);
  std::vector<double> v = sys_toss(2, 5, 1);
  v[15 * 3 + 9] = std::numeric_limits<double>::quiet_NaN();
  write_bytes(d.str("2.pt"), pt_file(v, 15));
  ExpectError([&] { impulse::load_system_tosses(d.str()); },
              {d.str("2.pt"), "row 3, column 9", "non-finite", "nan"});
  v[15 * 3 + 9] = -std::numeric_limits<double>::infinity();
  write_bytes(d.str("2.pt"), pt_file(v, 15));
  ExpectError([&] { impulse::load_system_tosses(d.str()); }, {d.str("2.pt"), "row 3", "-inf"});
}

TEST(SystemTosses, JointAngleOutOfRange) {
  TempDir d;
  std::vector<double> v = sys_toss(0, 5, 2);
  v[17 * 4 + 8] = 4.0;  // row 4, the second joint
  write_bytes(d.str("0.pt"), pt_file(v, 17));
  ExpectError([&] { impulse::load_system_tosses(d.str()); },
              {d.str("0.pt"), "row 4, column 8", "joint angle 4", "out of range"});
  // just outside the slack, and just inside it
  v[17 * 4 + 8] = -kPi - 2e-6;
  write_bytes(d.str("0.pt"), pt_file(v, 17));
  ExpectError([&] { impulse::load_system_tosses(d.str()); }, {"row 4, column 8", "joint angle"});
  v[17 * 4 + 8] = -kPi - 0.5e-6;
  write_bytes(d.str("0.pt"), pt_file(v, 17));
  EXPECT_EQ(impulse::load_system_tosses(d.str()).tosses[0].rows[17 * 4 + 8], -kPi - 0.5e-6);
}

TEST(SystemTosses, QuaternionAndShortToss) {
  TempDir d;
  std::vector<double> v = sys_toss(0, 4, 1);
  v[15 * 1 + 0] = 0.3;  // the quaternion of row 1 far from unit norm
  write_bytes(d.str("0.pt"), pt_file(v, 15));
  ExpectError([&] { impulse::load_system_tosses(d.str()); },
              {d.str("0.pt"), "row 1", "quaternion", "expected 1 within 0.01"});
  write_bytes(d.str("0.pt"), pt_file(sys_toss(0, 1, 1), 15));
  ExpectError([&] { impulse::load_system_tosses(d.str()); },
              {d.str("0.pt"), "1 row(s)", "at least 2"});
}

TEST(SystemTosses, WidthErrors) {
  TempDir d;
  // not 13 + 2 nj
  std::vector<double> v = sys_toss(0, 3, 1);
  v.resize(3 * 14);
  write_bytes(d.str("a/0.pt"), pt_file(v, 14));
  ExpectError([&] { impulse::load_system_tosses(d.str("a")); },
              {d.str("a/0.pt"), "has 14 columns", "13 + 2 nj"});
  // widths that differ within one folder
  write_bytes(d.str("b/0.pt"), pt_file(sys_toss(0, 3, 1), 15));
  write_bytes(d.str("b/1.pt"), pt_file(sys_toss(1, 3, 2), 17));
  ExpectError([&] { impulse::load_system_tosses(d.str("b")); },
              {d.str("b/1.pt"), "has 17 columns", d.str("b/0.pt") + " has 15"});
  // with an expected width, the file that differs from it is named
  ExpectError([&] { impulse::load_system_tosses(d.str("b"), 15); },
              {d.str("b/1.pt"), "has 17 columns, expected 15", "1 joint"});
}

TEST(SystemTosses, TruncatedAndCorruptFiles) {
  TempDir d;
  write_sys_folder(d.str("pt"), 1);
  const Bytes z = read_bytes(d.str("pt/1.pt"));
  for (size_t cut : {1, 30, 200}) {
    write_bytes(d.str("pt/1.pt"), Bytes(z.begin(), z.end() - static_cast<std::ptrdiff_t>(cut)));
    ExpectError([&] { impulse::load_system_tosses(d.str("pt")); }, {d.str("pt/1.pt")});
  }
  // a flipped storage byte fails the CRC
  Bytes bad = z;
  bad[bad.size() / 2] ^= 0x40;
  write_bytes(d.str("pt/1.pt"), bad);
  ExpectError([&] { impulse::load_system_tosses(d.str("pt")); }, {d.str("pt/1.pt")});
  // a legacy file among zip ones
  write_bytes(d.str("pt/1.pt"), legacy_file(cn_toss(0, 3)));
  ExpectError([&] { impulse::load_system_tosses(d.str("pt")); },
              {d.str("pt/1.pt"), "mixed formats"});

  // .npz: truncated, and offsets past the rows
  SystemTossSet s;
  s.width = 15;
  s.tosses.push_back({"a", sys_toss(0, 3, 1)});
  s.tosses.push_back({"b", sys_toss(1, 4, 1)});
  impulse::write_system_tosses(d.str("m.npz"), s);
  const Bytes n = read_bytes(d.str("m.npz"));
  write_bytes(d.str("cut.npz"), Bytes(n.begin(), n.end() - 40));
  ExpectError([&] { impulse::load_system_tosses(d.str("cut.npz")); }, {d.str("cut.npz")});
  std::vector<impulse::ZipEntry> e = impulse::decode_zip(n, "m.npz");
  bool patched = false;
  for (impulse::ZipEntry& x : e) {
    if (x.name != "offsets.npy") continue;
    // offsets (0, 3, 7) -> (0, 99, 7): the data starts after the .npy header
    const int64_t big = 99;
    std::memcpy(x.data.data() + x.data.size() - 16, &big, 8);
    patched = true;
  }
  ASSERT_TRUE(patched);
  write_bytes(d.str("off.npz"), impulse::encode_zip(e));
  ExpectError([&] { impulse::load_system_tosses(d.str("off.npz")); },
              {d.str("off.npz"), "offset 99", "past the 7 rows"});
  ExpectError([&] { impulse::load_system_tosses(d.str("nothing")); }, {"no such file"});
}

// ---- the real articulated "elbow" tosses ------------------------------------------

namespace {

std::string elbow_dir() {
  return impulse::testing::shared_data("articulated_elbow");
}

class RealElbowTosses : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(elbow_dir() + "/0.pt")) {
      IMPULSE_SKIP_WITHOUT_DATA(impulse::testing::data_absent("real elbow tosses", elbow_dir(), "elbow"));
    }
  }
};

}  // namespace

TEST_F(RealElbowTosses, LoadsAll) {
  const SystemTossSet s = impulse::load_system_tosses(elbow_dir(), 15);
  EXPECT_EQ(s.format, "ccn");
  EXPECT_EQ(s.width, 15);
  EXPECT_EQ(s.joints(), 1);
  EXPECT_EQ(s.dt, 0.0068);
  ASSERT_EQ(s.tosses.size(), 271u);
  for (size_t j = 0; j < s.tosses.size(); ++j) {
    const SystemToss& t = s.tosses[j];
    EXPECT_EQ(t.name, std::to_string(j));
    ASSERT_EQ(t.steps(15), 121) << "toss " << j;
    ASSERT_EQ(t.rows.size(), 121u * 15u);
    // Backward difference: the README says v_k ~ (p_k - p_{k-1}) / dt, so
    // p_1 ~ p_0 + dt v_1. The tolerance allows for tracking noise (~1 mm), the
    // nominal dt 0.0068 s against the effective 0.0066-0.0067 s, and gravity or
    // contact over one step; on this data the worst error over all 271 tosses is
    // 3.4 mm (toss 0: 0.015 mm). A column mix-up (p vs v, or θ in p's place)
    // would be off by centimetres or more.
    for (int c = 0; c < 3; ++c) {
      const double p0 = t.rows[4 + c], p1 = t.rows[15 + 4 + c], v1 = t.rows[15 + 11 + c];
      EXPECT_NEAR(p1, p0 + s.dt * v1, 5e-3) << "toss " << j << " axis " << c;
      if (j == 0) {
        EXPECT_NEAR(p1, p0 + s.dt * v1, 1e-4) << "axis " << c;
      }
    }
  }
  // values exactly as stored (the quaternions are unit to 1e-15: none renormalized):
  // archive/data/0 of 0.pt holds the 121 x 15 float64 row after row
  const std::vector<impulse::ZipEntry> z =
      impulse::decode_zip(read_bytes(elbow_dir() + "/0.pt"), "0.pt");
  const auto st = std::find_if(
      z.begin(), z.end(), [](const impulse::ZipEntry& e) { return e.name == "archive/data/0"; });
  ASSERT_NE(st, z.end());
  ASSERT_EQ(st->data.size(), 8u * 121u * 15u);
  std::vector<double> raw(121 * 15);
  std::memcpy(raw.data(), st->data.data(), st->data.size());
  EXPECT_EQ(s.tosses[0].rows, raw);
  EXPECT_EQ(s.tosses[0].rows[0], 0.5707204287487236);   // w of row 0
  EXPECT_EQ(s.tosses[0].rows[6], 0.2692731019183343);   // p_z of row 0
  EXPECT_EQ(s.tosses[0].rows[7], 0.05960891540203672);  // θ of row 0
  // the synthetic files of the tests above carry the real files' pickle, byte for byte
  const auto pkl = std::find_if(
      z.begin(), z.end(), [](const impulse::ZipEntry& e) { return e.name == "archive/data.pkl"; });
  ASSERT_NE(pkl, z.end());
  EXPECT_EQ(pkl->data, tensor_pickle(121, 15, 121 * 15));
}

TEST_F(RealElbowTosses, WrongWidthAndNpzRoundTrip) {
  ExpectError([&] { impulse::load_system_tosses(elbow_dir(), 13); },
              {elbow_dir() + "/0.pt", "has 15 columns, expected 13"});
  // load_tosses reads CCN's cube layout only, and says so
  ExpectError([&] { impulse::load_tosses(elbow_dir()); }, {"size (121, 15)", "(T, 13)"});
  const SystemTossSet a = impulse::load_system_tosses(elbow_dir());
  TempDir d;
  impulse::write_system_tosses(d.str("elbow.npz"), a);
  const SystemTossSet b = impulse::load_system_tosses(d.str("elbow.npz"), 15);
  EXPECT_EQ(b.format, "impulse-multibody");
  EXPECT_EQ(b.dt, a.dt);
  ASSERT_EQ(b.tosses.size(), a.tosses.size());
  for (size_t j = 0; j < a.tosses.size(); ++j) {
    EXPECT_EQ(b.tosses[j].name, a.tosses[j].name);
    EXPECT_EQ(b.tosses[j].rows, a.tosses[j].rows) << "toss " << j;
  }
}

namespace impulse {
namespace {

// smooth_velocities: every velocity entry is the centred mean of its column
// over the rows within the half width (fewer, still centred, near a toss's
// ends), recomputed here by brute force; positions untouched; on velocities
// that are backward differences of positions, the mean is the difference over
// the longer baseline. Half width 0 changes nothing; < 0 is refused.
TEST(SystemTosses, SmoothVelocitiesIsTheCentredMean) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  SystemTossSet set;
  set.width = 15;
  set.dt = 0.01;
  for (int T : {9, 3, 1}) {
    SystemToss t;
    t.name = std::to_string(T);
    t.rows.resize(static_cast<size_t>(T) * 15);
    for (double& v : t.rows) v = u(rng);
    for (int k = 1; k < T; ++k)  // column 11 (v_x) the backward difference of column 4 (p_x)
      t.rows[static_cast<size_t>(k * 15 + 11)] = (t.rows[static_cast<size_t>(k * 15 + 4)] - t.rows[static_cast<size_t>((k - 1) * 15 + 4)]) / set.dt;
    set.tosses.push_back(t);
  }
  SystemTossSet same = set;
  smooth_velocities(same, 0);
  for (size_t i = 0; i < set.tosses.size(); ++i) EXPECT_EQ(same.tosses[i].rows, set.tosses[i].rows);
  EXPECT_THROW(smooth_velocities(same, -1), Error);
  const int h = 2;
  SystemTossSet s = set;
  smooth_velocities(s, h);
  for (size_t i = 0; i < set.tosses.size(); ++i) {
    const std::vector<double>& a = set.tosses[i].rows;
    const std::vector<double>& b = s.tosses[i].rows;
    const int T = set.tosses[i].steps(15);
    for (int k = 0; k < T; ++k) {
      const int w = std::min({h, k, T - 1 - k});
      for (int c = 0; c < 15; ++c) {
        const size_t o = static_cast<size_t>(k * 15 + c);
        if (c < 8) {
          EXPECT_EQ(b[o], a[o]) << "toss " << i << " row " << k << " position column " << c;
          continue;
        }
        double m = 0;
        for (int j = k - w; j <= k + w; ++j) m += a[static_cast<size_t>(j * 15 + c)];
        m /= 2 * w + 1;
        EXPECT_NEAR(b[o], m, 1e-14) << "toss " << i << " row " << k << " column " << c;
      }
      if (w == h && k - h >= 1) {
        const double base = (a[static_cast<size_t>((k + h) * 15 + 4)] - a[static_cast<size_t>((k - h - 1) * 15 + 4)]) /
                            ((2 * h + 1) * set.dt);
        EXPECT_NEAR(b[static_cast<size_t>(k * 15 + 11)], base, 1e-12) << "row " << k;
      }
    }
  }
}

}  // namespace
}  // namespace impulse
