// Systems as files (host/systems/system_file.h, issue 47): the built-in systems' files in
// data/systems/ load to exactly the built-ins; a fixed joint merges its child (mass, COM,
// inertia, vertices) as the composite body; a joint's rpy gives the same motion as the
// system written in the model's convention; every bad file is refused naming the item.
// (The dynamics' checks on a described 3-link chain, tests/data/systems/chain3.json: M(q),
// energy, Ṁ − 2C, gradients, run in test_multibody.cc with the built-ins.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <random>
#include <regex>

#include <nlohmann/json.hpp>

#include "host/dynamics/multibody_sim.h"
#include "host/learning/evaluate.h"
#include "host/learning/trainer.h"
#include "host/systems/declared.h"
#include "host/systems/system_file.h"
#include "io/npy.h"
#include "io/npz.h"
#include "io/system_tosses.h"
#include "solvers/error.h"
#include "test_util.h"

namespace impulse {
namespace {

const std::string kSource = IMPULSE_SOURCE_DIR;

// a quiet CCN run of `epochs` on a system (name or file) and its tosses
TrainConfig ccn_run(const std::string& system, const std::string& data, const std::string& out, int epochs) {
  TrainConfig c;
  c.method = "ccn";
  c.system = system;
  c.data = data;
  c.out = out;
  c.max_epochs = epochs;
  c.progress = false;
  return c;
}

// trains c and returns its params.json
std::string trained_params(const TrainConfig& c) {
  std::ostringstream log;
  train(c, log);
  return testing::read_text_file(c.out + "/params.json");
}

// the links' fields within tol (0: the same doubles); the nominal size, which a URDF
// derives from the vertices' extent and a JSON box states, is expect_identical's
void expect_same_links(const MultibodySystem& a, const MultibodySystem& b, double tol) {
  ASSERT_EQ(a.num_links(), b.num_links());
  for (int l = 0; l < a.num_links(); ++l) {
    const LinkSpec &x = a.links[size_t(l)], &y = b.links[size_t(l)];
    SCOPED_TRACE("link " + x.name);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.parent, y.parent);
    EXPECT_LE((x.joint_origin - y.joint_origin).norm(), tol);
    EXPECT_LE((x.axis - y.axis).norm(), tol);
    EXPECT_LE(std::abs(x.inertia.mass - y.inertia.mass), tol);
    EXPECT_LE((x.inertia.com - y.inertia.com).norm(), tol) << std::setprecision(17) << x.inertia.com.transpose();
    EXPECT_LE((x.inertia.inertia_com - y.inertia.inertia_com).norm(), tol);
    ASSERT_EQ(x.vertices.size(), y.vertices.size());
    for (size_t i = 0; i < x.vertices.size(); ++i) EXPECT_LE((x.vertices[i] - y.vertices[i]).norm(), tol) << "vertex " << i;
  }
}

// every field, exactly
void expect_identical(const MultibodySystem& a, const MultibodySystem& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.gravity, b.gravity);
  EXPECT_EQ(a.mu, b.mu);
  expect_same_links(a, b, 0.0);
  for (int l = 0; l < std::min(a.num_links(), b.num_links()); ++l)
    EXPECT_EQ(a.links[size_t(l)].size, b.links[size_t(l)].size) << "link " << a.links[size_t(l)].name;
}

TEST(SystemFile, TheBuiltInSystemsFilesAreTheBuiltInsExactly) {
  for (const std::string name : {"cube", "asymmetric", "elbow"}) {
    SCOPED_TRACE(name);
    expect_identical(load_system(kSource + "/data/systems/" + name + ".json"), system_by_name(name));
    expect_identical(load_system(name), system_by_name(name));
  }
}

TEST(SystemFile, WrittenAndReadBackIsTheSameSystem) {
  for (const std::string name : {"cube", "asymmetric", "elbow"}) {
    SCOPED_TRACE(name);
    expect_identical(system_from_json(system_json(system_by_name(name)), name), system_by_name(name));
  }
  const MultibodySystem chain = load_system(kSource + "/tests/data/systems/chain3.json");
  expect_identical(system_from_json(system_json(chain), "chain3"), chain);
}

// A box of 0.2 x 0.05 x 0.05 m written as two halves joined by a fixed joint is the box:
// mass, COM, inertia (the box formula) and its corners among the vertices.
TEST(SystemFile, AFixedJointMergesTheChildAsOneRigidBody) {
  const double m = 0.4, a = 0.1, b = 0.05, c = 0.05;  // each half a x b x c, m/2
  std::ostringstream I;  // a half's inertia about its COM, the box formula
  I << std::setprecision(17) << (m / 2) / 12 * (b * b + c * c) << ", " << (m / 2) / 12 * (a * a + c * c) << ", "
    << (m / 2) / 12 * (a * a + b * b) << ", 0, 0, 0";
  const std::string text = R"({"format": "impulse-system-1", "name": "two halves", "links": [
    {"name": "left", "mass": 0.2, "com": [-0.05, 0, 0], "inertia": [)" + I.str() + R"(],
     "box": {"size": [0.1, 0.05, 0.05], "centre": [-0.05, 0, 0]}},
    {"name": "right", "parent": "left", "joint": {"type": "fixed", "origin": [0.1, 0, 0], "rpy": [0, 0, 3.141592653589793]},
     "mass": 0.2, "com": [0.05, 0, 0], "inertia": [)" + I.str() + R"(],
     "box": {"size": [0.1, 0.05, 0.05], "centre": [0.05, 0, 0]}}]})";
  // the right half's frame sits at x = 0.1 turned half a turn about z: its COM (0.05, 0, 0)
  // lands at x = 0.05 of the left's frame, its box over [0, 0.1]
  const MultibodySystem s = system_from_json(text, "two halves");
  ASSERT_EQ(s.num_links(), 1) << "the fixed child is merged";
  const LinkInertia& in = s.links[0].inertia;
  EXPECT_NEAR(in.mass, m, 1e-15);
  EXPECT_LT(in.com.norm(), 1e-12) << in.com.transpose();
  const double L = 2 * a;
  const Eigen::Vector3d box(m / 12 * (b * b + c * c), m / 12 * (L * L + c * c), m / 12 * (L * L + b * b));
  EXPECT_LT((in.inertia_com.diagonal() - box).norm(), 1e-8 * box.norm()) << in.inertia_com;
  EXPECT_LT((in.inertia_com - Eigen::Matrix3d(in.inertia_com.diagonal().asDiagonal())).norm(), 1e-12);
  ASSERT_EQ(s.links[0].vertices.size(), 16u);
  double xmin = 1, xmax = -1;
  for (const Eigen::Vector3d& v : s.links[0].vertices) xmin = std::min(xmin, v.x()), xmax = std::max(xmax, v.x());
  EXPECT_NEAR(xmin, -0.1, 1e-12);
  EXPECT_NEAR(xmax, 0.1, 1e-12);
}

// chain3's middle joint has rpy; the same system written in the model's convention (the
// child's geometry, inertia and axis rotated by hand) gives the same vertex positions in
// the world at any configuration
TEST(SystemFile, AJointsRpyGivesTheSameMotionAsTheRotatedDescription) {
  const MultibodySystem s = load_system(kSource + "/tests/data/systems/chain3.json");
  ASSERT_EQ(s.num_links(), 3) << "base (with the handle merged), middle, tip";
  EXPECT_EQ(s.links[0].vertices.size(), 16u) << "the handle's box is the base's now";
  // the file's kinematics, by hand: world frame of each file link at q
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> U(-1, 1);
  const auto R = [](const Eigen::Vector3d& rpy) {
    return (Eigen::AngleAxisd(rpy.z(), Eigen::Vector3d::UnitZ()) * Eigen::AngleAxisd(rpy.y(), Eigen::Vector3d::UnitY()) *
            Eigen::AngleAxisd(rpy.x(), Eigen::Vector3d::UnitX()))
        .toRotationMatrix();
  };
  for (int trial = 0; trial < 5; ++trial) {
    Eigen::VectorXd q(s.nq());
    Eigen::Quaterniond quat(U(rng), U(rng), U(rng), U(rng));
    quat.normalize();
    q << quat.w(), quat.x(), quat.y(), quat.z(), U(rng), U(rng), 0.2 + U(rng) * 0.1, U(rng), U(rng);
    Kinematics k;
    kinematics(s, q, k);
    const Eigen::Matrix3d Rb = quat.toRotationMatrix();
    const Eigen::Vector3d pb = q.segment<3>(4);
    // middle: origin (0.05, 0, 0) in base, rotated by rpy (0.2, 0, 0.5), then θ1 about its z
    const Eigen::Matrix3d Rm = Rb * R(Eigen::Vector3d(0.2, 0, 0.5)) * Eigen::AngleAxisd(q(7), Eigen::Vector3d::UnitZ());
    const Eigen::Vector3d pm = pb + Rb * Eigen::Vector3d(0.05, 0, 0);
    // tip: origin (0.09, 0, 0) in middle, θ2 about its y
    const Eigen::Matrix3d Rt = Rm * Eigen::AngleAxisd(q(8), Eigen::Vector3d::UnitY());
    const Eigen::Vector3d pt = pm + Rm * Eigen::Vector3d(0.09, 0, 0);
    // the tip's first file vertex (0, 0.01, 0.01) and the middle's box corner (0, -0.015, -0.015)
    const Eigen::Vector3d want_tip = pt + Rt * Eigen::Vector3d(0.0, 0.01, 0.01);
    const Eigen::Vector3d want_mid = pm + Rm * Eigen::Vector3d(0.0, -0.015, -0.015);
    const Eigen::Vector3d got_tip = k.links[2].p + k.links[2].R * s.links[2].vertices[0];
    const Eigen::Vector3d got_mid = k.links[1].p + k.links[1].R * s.links[1].vertices[0];
    EXPECT_LT((got_tip - want_tip).norm(), 1e-12) << "trial " << trial;
    EXPECT_LT((got_mid - want_mid).norm(), 1e-12) << "trial " << trial;
    // the COM of the tip moves with it too
    const Eigen::Vector3d want_com = pt + Rt * Eigen::Vector3d(0.03, 0, 0);
    EXPECT_LT((k.links[2].p + k.links[2].R * s.links[2].inertia.com - want_com).norm(), 1e-12);
  }
}

std::string refusal(const std::string& text) {
  try {
    system_from_json(text, "bad.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "(loaded)";
}

TEST(SystemFile, EveryBadFileIsRefusedNamingTheItem) {
  const std::string head = R"({"format": "impulse-system-1", "name": "t", "links": [)";
  const std::string base = R"({"name": "b", "mass": 0.3, "inertia": [1e-4, 1e-4, 1e-4, 0, 0, 0], "box": {"size": [0.1, 0.1, 0.1]}})";
  const auto child = [](const std::string& joint, const std::string& extra = "") {
    return R"(, {"name": "c", "parent": "b", "joint": )" + joint +
           R"(, "mass": 0.1, "inertia": [1e-5, 1e-5, 1e-5, 0, 0, 0], "box": {"size": [0.05, 0.05, 0.05]})" + extra + "}";
  };
  const std::string rev = R"({"type": "revolute", "origin": [0.1, 0, 0], "axis": [0, 1, 0]})";
  struct Case {
    std::string text, want;
  } cases[] = {
      {"{", "not valid JSON"},
      {R"({"format": "urdf", "links": []})", "impulse-system-1"},
      {R"({"format": "impulse-system-1", "links": []})", "no links"},
      {head + R"({"name": "b", "inertia": [1e-4, 1e-4, 1e-4, 0, 0, 0], "box": {"size": [0.1, 0.1, 0.1]}}]})", "link 'b': no mass"},
      {head + R"({"name": "b", "mass": 0.3, "box": {"size": [0.1, 0.1, 0.1]}}]})", "link 'b': no inertia"},
      {head + R"({"name": "b", "mass": 0.3, "inertia": [1e-4, 1e-4, -1e-4, 0, 0, 0], "box": {"size": [0.1, 0.1, 0.1]}}]})",
       "link 'b': the inertia is not positive definite"},
      {head + R"({"name": "b", "mass": 0.3, "inertia": [1e-4, 1e-4, 5e-4, 0, 0, 0], "box": {"size": [0.1, 0.1, 0.1]}}]})",
       "triangle inequalities"},
      {head + R"({"name": "b", "mass": -1, "inertia": [1e-4, 1e-4, 1e-4, 0, 0, 0], "box": {"size": [0.1, 0.1, 0.1]}}]})",
       "link 'b': the mass must be positive"},
      {head + R"({"name": "b", "mass": 0.3, "inertia": [1e-4, 1e-4, 1e-4, 0, 0, 0]}]})", "link 'b' has no contact geometry"},
      {head + base + child(R"({"type": "prismatic", "origin": [0, 0, 0], "axis": [1, 0, 0]})") + "]}",
       "link 'c': joint type 'prismatic' is not supported"},
      {head + base + child(R"({"type": "continuous", "axis": [1, 0, 0]})") + "]}", "joint type 'continuous' is not supported"},
      {head + base + child(R"({"type": "planar"})") + "]}", "joint type 'planar' is not supported"},
      {head + base + child(R"({"type": "hinge"})") + "]}", "unknown joint type 'hinge'"},
      {head + base + child(R"({"type": "revolute", "origin": [0, 0, 0]})") + "]}", "a revolute joint needs an axis"},
      {head + base + child(rev, R"(, "mas": 1)") + "]}", "link 'c': unknown key 'mas'"},
      {head + base + child(rev) + child(rev) + "]}", "two links are named 'c'"},
      {head + base + R"(, {"name": "c", "parent": "nowhere", "joint": )" + rev +
           R"(, "mass": 0.1, "inertia": [1e-5, 1e-5, 1e-5, 0, 0, 0], "box": {"size": [0.05, 0.05, 0.05]}}]})",
       "its parent 'nowhere' is not a link"},
      {head + base + R"(, {"name": "c", "parent": "d", "joint": )" + rev +
           R"(, "mass": 0.1, "inertia": [1e-5, 1e-5, 1e-5, 0, 0, 0], "box": {"size": [0.05, 0.05, 0.05]}}, {"name": "d", "parent": "c", "joint": )" +
           rev + R"(, "mass": 0.1, "inertia": [1e-5, 1e-5, 1e-5, 0, 0, 0], "box": {"size": [0.05, 0.05, 0.05]}}]})",
       "cycle"},
      {head + base + R"(, {"name": "e", "mass": 0.1, "inertia": [1e-5, 1e-5, 1e-5, 0, 0, 0], "box": {"size": [0.05, 0.05, 0.05]}}]})",
       "both have no parent"},
      {head + R"({"name": "b", "mass": "heavy", "inertia": [1e-4, 1e-4, 1e-4, 0, 0, 0], "box": {"size": [0.1, 0.1, 0.1]}}]})",
       "link 'b'.mass: expected a number"},
      {head + R"({"name": "b", "mass": 0.3, "inertia": [1e-4, 1e-4, 1e-4], "box": {"size": [0.1, 0.1, 0.1]}}]})",
       "link 'b'.inertia: expected 6 numbers"},
  };
  for (const Case& c : cases) {
    const std::string got = refusal(c.text);
    EXPECT_NE(got.find(c.want), std::string::npos) << "expected '" << c.want << "' in: " << got << "\n for: " << c.text;
    EXPECT_EQ(got.rfind("bad.json: ", 0), 0u) << "the file is named: " << got;
  }
  EXPECT_THROW(load_system(testing::fresh_dir("system_file_", "") + "/missing.json"), Error);
  EXPECT_THROW(load_system("sphere"), Error);
}

// generate-tosses' synthetic data for a described system: the chain's tosses have its width
TEST(SystemFile, SyntheticTossesOfADescribedSystem) {
  SyntheticSystemOptions o;
  o.described = load_system(kSource + "/tests/data/systems/chain3.json");
  o.system = o.described.name;
  o.tosses = 2;
  const SystemTossSet set = generate_system_tosses(o);
  ASSERT_EQ(set.tosses.size(), 2u);
  EXPECT_EQ(set.width, o.described.width());
  EXPECT_EQ(set.tosses[0].steps(set.width), o.states);
  for (double v : set.tosses[0].rows) EXPECT_TRUE(std::isfinite(v));
}

}  // namespace
}  // namespace impulse

namespace impulse {
namespace {

// The cube and the elbow from their files train bit for bit as the built-ins: the same
// tosses, two epochs of CCN, the same params.json and history (but for the seconds column).
TEST(SystemFile, TheCubeAndTheElbowFromTheirFilesTrainBitForBitAsTheBuiltIns) {
  for (const std::string name : {"cube", "elbow"}) {
    SCOPED_TRACE(name);
    SyntheticSystemOptions o;
    o.system = name;
    o.tosses = 6;
    o.seed = 2;
    const std::string dir = testing::fresh_dir("system_file_train_", name);
    write_system_tosses(dir + "/tosses.npz", generate_system_tosses(o));
    std::string params[2];
    for (int from_file = 0; from_file < 2; ++from_file) {
      params[from_file] = trained_params(ccn_run(from_file ? kSource + "/data/systems/" + name + ".json" : name,
                                                 dir + "/tosses.npz", dir + "/run" + std::to_string(from_file), 2));
    }
    EXPECT_FALSE(params[0].empty());
    EXPECT_EQ(params[0], params[1]);
  }
}

}  // namespace
}  // namespace impulse

namespace impulse {
namespace {

// A description's "state": its data files' layout (io/system_tosses.h). The chain's tosses
// rewritten with the quaternion as x, y, z, w and the joints as (tip, middle), read through a
// description that says so, train bit for bit as the model-layout tosses through the plain
// description (2 epochs of CCN, the same smoothing and weights; a permutation changes no
// value).
TEST(SystemFile, AStatedLayoutReadsItsDataAsTheModelsAndTrainsTheSame) {
  const std::string dir = testing::fresh_dir("system_file_layout_", "chain3");
  const std::string plain = kSource + "/tests/data/systems/chain3.json";
  nlohmann::json j = nlohmann::json::parse(testing::read_text_file(plain));
  j["state"] = {{"rotation", "quaternion_xyzw"}, {"joints", {"tip", "middle"}}};
  const std::string stated = dir + "/chain3_xyzw.json";
  std::ofstream(stated) << j.dump(2);
  const MultibodySystem sys = load_system(stated);
  EXPECT_EQ(sys.layout.rotation, StateLayout::Rotation::kQuaternionXyzw);
  EXPECT_EQ(sys.layout.joints, (std::vector<int>{1, 0}));
  // written and read back, the layout stays
  EXPECT_EQ(system_from_json(system_json(sys), "again").layout.joints, sys.layout.joints);
  EXPECT_NE(system_json(sys).find(R"("state": {"rotation": "quaternion_xyzw", "angular_velocity": "body", "joints": ["tip", "middle"]})"),
            std::string::npos);

  SyntheticSystemOptions o;
  o.described = load_system(plain);
  o.system = o.described.name;
  o.tosses = 6;
  o.seed = 2;
  const SystemTossSet set = generate_system_tosses(o);
  write_system_tosses(dir + "/model.npz", set);
  // the same rows in the stated layout, as another program would write them (no mark)
  std::vector<double> states;
  std::vector<int64_t> offsets{0};
  const int W = set.width;  // 13 + 2 * 2
  for (const SystemToss& t : set.tosses) {
    for (int k = 0; k < t.steps(W); ++k) {
      const double* r = t.rows.data() + size_t(k) * W;
      const double row[] = {r[1], r[2], r[3], r[0], r[4], r[5], r[6], r[8], r[7],
                            r[9], r[10], r[11], r[12], r[13], r[14], r[16], r[15]};
      states.insert(states.end(), std::begin(row), std::end(row));
    }
    offsets.push_back(offsets.back() + t.steps(W));
  }
  NpzArchive a;
  a["states"] = make_npy({offsets.back(), int64_t(W)}, states);
  a["offsets"] = make_npy({int64_t(offsets.size())}, offsets);
  a["dt"] = make_npy({1}, std::vector<double>{set.dt});
  write_npz(dir + "/foreign.npz", a);
  EXPECT_EQ(load_system_tosses(dir + "/foreign.npz", W, 0, sys.layout).tosses[1].rows, set.tosses[1].rows);

  std::string params[2];
  for (int i = 0; i < 2; ++i) {
    TrainConfig c = ccn_run(i ? stated : plain, dir + (i ? "/foreign.npz" : "/model.npz"), dir + "/run" + std::to_string(i), 2);
    // the foreign file counts as a recording (smoothed, the real data's weights by
    // default; is_synthetic): the same settings for both
    c.smooth_velocities = 0;
    c.w_res = 0.001;
    c.w_res_w = 0.0;
    params[i] = trained_params(c);
  }
  EXPECT_FALSE(params[0].empty());
  EXPECT_EQ(params[0], params[1]);

  // a bad "state" is named
  struct Case {
    nlohmann::json state;
    std::string want;
  } cases[] = {
      {{{"rotation", "euler"}}, "state.rotation: expected quaternion_wxyz, quaternion_xyzw or matrix, got 'euler'"},
      {{{"angular_velocity", "spatial"}}, "state.angular_velocity: expected body or world"},
      {{{"joints", {"tip"}}}, "state.joints: lists 1 joint(s), the system has 2 revolute joint(s)"},
      {{{"joints", {"tip", "handle"}}}, "state.joints[1]: link 'handle' hangs on a fixed joint"},
      {{{"joints", {"tip", "tip"}}}, "state.joints[1]: link 'tip' is listed twice"},
      {{{"joints", {"tip", "nose"}}}, "state.joints[1]: no link 'nose' with a revolute joint"},
      {{{"order", "drake"}}, "state: unknown key 'order'"},
  };
  for (const Case& c : cases) {
    nlohmann::json b = j;
    b["state"] = c.state;
    std::string got = "(loaded)";
    try {
      system_from_json(b.dump(), "bad.json");
    } catch (const Error& e) {
      got = e.what();
    }
    EXPECT_NE(got.find(c.want), std::string::npos) << "expected '" << c.want << "' in: " << got;
  }
}

// A run of a system file keeps its own copy (run/system.json): eval works after the file is
// gone, a resume with the same file goes on, and one with an edited file is refused naming
// the copy.
TEST(SystemFile, ARunKeepsItsSystemAndRefusesAnEditedOne) {
  const std::string dir = testing::fresh_dir("system_file_copy_", "chain3");
  const std::string file = dir + "/mine.json";
  std::filesystem::copy_file(kSource + "/tests/data/systems/chain3.json", file);
  SyntheticSystemOptions o;
  o.described = load_system(file);
  o.system = o.described.name;
  o.tosses = 6;
  o.seed = 4;
  write_system_tosses(dir + "/tosses.npz", generate_system_tosses(o));
  TrainConfig c = ccn_run(file, dir + "/tosses.npz", dir + "/run", 1);
  std::ostringstream log;
  train(c, log);
  EXPECT_EQ(testing::read_text_file(c.out + "/system.json"), system_json(o.described));
  EvalOptions e;
  e.run_dir = c.out;
  const double before = evaluate_run(e)["position_error_m"].get<double>();
  std::filesystem::remove(file);
  EXPECT_EQ(evaluate_run(e)["position_error_m"].get<double>(), before);  // from the run's copy
  // the file back as it was: the run resumes (one more epoch)
  std::filesystem::copy_file(kSource + "/tests/data/systems/chain3.json", file);
  c.max_epochs = 2;
  EXPECT_TRUE(train(c, log).resumed);
  // edited: resuming (more epochs) is refused
  std::string text = testing::read_text_file(kSource + "/tests/data/systems/chain3.json");
  text.replace(text.find("\"mass\": 0.3"), 11, "\"mass\": 0.35");
  std::ofstream(file) << text;
  c.max_epochs = 3;
  try {
    train(c, log);
    ADD_FAILURE() << "a run resumed with an edited system file";
  } catch (const Error& err) {
    const std::string m = err.what();
    EXPECT_NE(m.find("differs from the one this run began with (" + c.out + "/system.json)"), std::string::npos) << m;
  }
  EXPECT_EQ(testing::read_text_file(c.out + "/system.json"), system_json(o.described));  // the copy kept
}

// The same chain as URDF and as impulse's JSON (the tip a box in both): the same system,
// to rounding (URDF's rpy goes through a quaternion)
TEST(SystemFile, AUrdfIsTheSameSystemAsItsJsonDescription) {
  const MultibodySystem u = load_system(kSource + "/tests/data/systems/chain3.urdf");
  std::string json = testing::read_text_file(kSource + "/tests/data/systems/chain3.json");
  const size_t v = json.find("\"vertices\": [[0.0, 0.01");
  ASSERT_NE(v, std::string::npos);
  json.replace(v, json.find("]]", v) + 2 - v, R"("box": {"size": [0.06, 0.02, 0.02], "centre": [0.03, 0, 0]})");
  const MultibodySystem j = system_from_json(json, "chain3 with a box tip");
  EXPECT_EQ(u.name, "chain3");
  expect_same_links(u, j, 1e-15);
}

// a sphere's 14 points and a cylinder's 16 lie on their surfaces, placed by the origin
TEST(SystemFile, UrdfSpheresAndCylindersBecomeVerticesOnTheirSurface) {
  const std::string urdf = R"(<robot name="round"><link name="b">
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0.1 0 0"/><geometry><sphere radius="0.05"/></geometry></collision>
    <collision><origin xyz="0 0 0.2" rpy="1.5707963267948966 0 0"/><geometry><cylinder radius="0.03" length="0.1"/></geometry></collision>
    </link></robot>)";
  const MultibodySystem s = system_from_urdf(urdf, "round.urdf");
  ASSERT_EQ(s.links[0].vertices.size(), 30u);
  for (int i = 0; i < 14; ++i) EXPECT_NEAR((s.links[0].vertices[size_t(i)] - Eigen::Vector3d(0.1, 0, 0)).norm(), 0.05, 1e-15);
  for (int i = 14; i < 30; ++i) {  // the cylinder's axis turned from z to -y: rims at y = ±0.05, radius 0.03 in x, z
    const Eigen::Vector3d d = s.links[0].vertices[size_t(i)] - Eigen::Vector3d(0, 0, 0.2);
    EXPECT_NEAR(std::abs(d.y()), 0.05, 1e-12);
    EXPECT_NEAR(std::hypot(d.x(), d.z()), 0.03, 1e-12);
  }
}

TEST(SystemFile, EveryBadUrdfIsRefusedNamingTheItem) {
  const std::string inertial = R"(<inertial><mass value="0.2"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial>)";
  const std::string box = R"(<collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision>)";
  const auto robot = [&](const std::string& child_link, const std::string& joint_type, const std::string& extra = "") {
    return R"(<robot name="r"><link name="b">)" + inertial + box + "</link>" + child_link +
           R"(<joint name="j" type=")" + joint_type +
           R"("><parent link="b"/><child link="c"/><axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/>)" +
           extra + "</joint></robot>";
  };
  const std::string good_child = R"(<link name="c">)" + inertial + box + "</link>";
  struct Case {
    std::string text, want;
  } cases[] = {
      {"<robot", "not a URDF urdfdom can read"},
      {robot(R"(<link name="c">)" + box + "</link>", "revolute"), "link 'c': no <inertial>"},
      {robot(R"(<link name="c"><inertial><mass value="0.2"/><inertia ixx="1e-4" iyy="1e-4" izz="-1e-4" ixy="0" ixz="0" iyz="0"/></inertial>)" +
                 box + "</link>",
             "revolute"),
       "link 'c': the <inertia> is not positive definite"},
      {robot(R"(<link name="c">)" + inertial + "</link>", "revolute"), "link 'c' has no contact geometry"},
      {robot(good_child, "prismatic"), "joint 'j' (to link 'c'): joint type 'prismatic' is not supported"},
      {robot(good_child, "continuous"), "joint type 'continuous' is not supported"},
      {robot(good_child, "planar"), "joint type 'planar' is not supported"},
      {robot(R"(<link name="c">)" + inertial +
                 R"(<collision><geometry><mesh filename="no_such_hull.stl"/></geometry></collision></link>)",
             "revolute"),
       "link 'c', <collision> 1: mesh 'no_such_hull.stl': no such file"},
  };
  for (const Case& c : cases) {
    std::string got = "(loaded)";
    try {
      system_from_urdf(c.text, "bad.urdf");
    } catch (const Error& e) {
      got = e.what();
    }
    EXPECT_NE(got.find(c.want), std::string::npos) << "expected '" << c.want << "' in: " << got;
    EXPECT_EQ(got.rfind("bad.urdf: ", 0), 0u) << got;
  }
}

// the wedge's 6 hull vertices as tests/data/systems/wedge.stl writes them (its 7th point,
// the bottom face's centroid, is on the hull's face)
std::vector<Eigen::Vector3d> wedge_vertices() {
  return {{0, 0, 0}, {0.08, 0, 0}, {0, 0.05, 0}, {0.01, 0.01, 0.04}, {0.06, 0.005, 0.035}, {0.005, 0.045, 0.03}};
}

// every point of `want` in `got` (within tol) and as many points. assimp reads meshes in
// single precision: a coordinate c comes back within ~6e-8 c, so meshes' tolerance is 2e-8
// for these (at most 0.16 m).
void expect_same_points(const std::vector<Eigen::Vector3d>& got, const std::vector<Eigen::Vector3d>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (const Eigen::Vector3d& w : want) {
    double best = 1e300;
    for (const Eigen::Vector3d& g : got) best = std::min(best, (g - w).norm());
    EXPECT_LT(best, tol) << "no vertex at " << w.transpose();
  }
}

std::string write_file(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(SystemFile, AMeshCollisionBecomesItsConvexHullsVertices) {
  // URDF: the mesh beside the file, by a relative name
  const MultibodySystem u = load_system(kSource + "/tests/data/systems/wedge.urdf");
  ASSERT_EQ(u.num_links(), 1);
  expect_same_points(u.links[0].vertices, wedge_vertices(), 2e-8);
  EXPECT_EQ(u.contacts(), 6);
  // JSON: scaled, shifted and turned, the mesh found relative to the description's folder
  const std::string dir = testing::fresh_dir("impulse_system_file_", "mesh");
  std::filesystem::copy_file(kSource + "/tests/data/systems/wedge.stl", dir + "/wedge.stl");
  const std::string link =
      R"({"format": "impulse-system-1", "links": [{"name": "w", "mass": 0.2, "inertia": [6e-5, 9e-5, 1.2e-4, 0, 0, 0],
          "mesh": {"file": "wedge.stl", "scale": [2, 1, 0.5], "origin": [0.1, 0, 0], "rpy": [0, 0, 1.5707963267948966]}}]})";
  const MultibodySystem j = load_system(write_file(dir, "w.json", link));
  const Eigen::Matrix3d R = rpy_matrix(Eigen::Vector3d(0, 0, 1.5707963267948966));
  std::vector<Eigen::Vector3d> want;
  for (const Eigen::Vector3d& v : wedge_vertices()) want.push_back(R * Eigen::Vector3d(2 * v.x(), v.y(), 0.5 * v.z()) + Eigen::Vector3d(0.1, 0, 0));
  expect_same_points(j.links[0].vertices, want, 2e-8);
  // another format (OBJ): a cube whose faces fan from the body's centre (referenced, not a corner)
  std::string obj;
  for (int i = 0; i < 8; ++i)
    obj += "v " + std::to_string((i & 1) ? 0.02 : -0.02) + " " + std::to_string((i & 2) ? 0.02 : -0.02) + " " +
           std::to_string((i & 4) ? 0.02 : -0.02) + "\n";
  obj += "v 0 0 0\n";
  for (const char* f : {"1 2 9", "2 4 9", "4 3 9", "3 1 9", "5 6 9", "6 8 9", "8 7 9", "7 5 9", "1 2 6", "1 6 5",
                        "3 4 8", "3 8 7"})
    obj += std::string("f ") + f + "\n";
  write_file(dir, "cube.obj", obj);
  const MultibodySystem o = load_system(write_file(
      dir, "c.json",
      R"({"format": "impulse-system-1", "links": [{"name": "c", "mass": 0.1, "inertia": [1e-5, 1e-5, 1e-5, 0, 0, 0], "mesh": {"file": "cube.obj"}}]})"));
  expect_same_points(o.links[0].vertices, box_vertices(Eigen::Vector3d::Zero(), Eigen::Vector3d::Constant(0.04)), 2e-8);
  // package:// through ROS_PACKAGE_PATH
  const char* old = std::getenv("ROS_PACKAGE_PATH");
  const std::string saved = old ? old : "";
  setenv("ROS_PACKAGE_PATH", ("/nonexistent:" + kSource + "/tests/data").c_str(), 1);
  std::string text;
  {
    std::ifstream in(kSource + "/tests/data/systems/wedge.urdf");
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  const std::string pkg = std::regex_replace(text, std::regex("wedge\\.stl"), "package://systems/wedge.stl");
  expect_same_points(system_from_urdf(pkg, "pkg.urdf", "/elsewhere").links[0].vertices, wedge_vertices(), 2e-8);
  const std::string missing = std::regex_replace(text, std::regex("wedge\\.stl"), "package://nopkg/wedge.stl");
  try {
    system_from_urdf(missing, "pkg.urdf");
    ADD_FAILURE() << "an unknown package loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("package 'nopkg' not found"), std::string::npos) << e.what();
  }
  if (old)
    setenv("ROS_PACKAGE_PATH", saved.c_str(), 1);
  else
    unsetenv("ROS_PACKAGE_PATH");
}

TEST(SystemFile, EveryBadMeshIsRefusedNamingTheLinkAndTheFile) {
  const std::string dir = testing::fresh_dir("impulse_system_file_", "bad_mesh");
  write_file(dir, "flat.stl",
             "solid f\n facet normal 0 0 1\n  outer loop\n   vertex 0 0 0\n   vertex 1 0 0\n   vertex 0 1 0\n  endloop\n "
             "endfacet\nendsolid f\n");
  write_file(dir, "garbage.stl", "this is not a mesh\n\x01\x02\x03");
  std::filesystem::copy_file(kSource + "/tests/data/systems/wedge.stl", dir + "/wedge.stl");
  const auto with_mesh = [](const std::string& mesh) {
    return R"({"format": "impulse-system-1", "links": [{"name": "m", "mass": 0.1, "inertia": [1e-5, 1e-5, 1e-5, 0, 0, 0], "mesh": )" +
           mesh + "}]}";
  };
  struct Case {
    std::string mesh, want;
  } cases[] = {
      {R"({"file": "none.stl"})", "link 'm'.mesh: mesh '" + dir + "/none.stl': no such file"},
      {R"({"file": "flat.stl"})", "link 'm'.mesh: mesh '" + dir + "/flat.stl': the mesh is flat"},
      {R"({"file": "garbage.stl"})", "link 'm'.mesh: mesh '" + dir + "/garbage.stl': not a mesh assimp can read"},
      {R"({"file": "wedge.stl", "scale": [1, 0, 1]})", "every scale factor must be positive"},
      {R"({"scale": 2})", "link 'm'.mesh: no file"},
      {R"({"file": "wedge.stl", "colour": "red"})", "link 'm'.mesh: unknown key 'colour'"},
  };
  for (const Case& c : cases) {
    std::string got = "(loaded)";
    try {
      load_system(write_file(dir, "bad.json", with_mesh(c.mesh)));
    } catch (const Error& e) {
      got = e.what();
    }
    EXPECT_NE(got.find(c.want), std::string::npos) << "expected '" << c.want << "' in: " << got;
    EXPECT_EQ(got.rfind(dir + "/bad.json: ", 0), 0u) << got;
  }
}

}  // namespace
}  // namespace impulse
