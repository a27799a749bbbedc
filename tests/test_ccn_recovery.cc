// CCN on synthetic tosses of known systems (the project's own Anitescu
// simulator, host/dynamics/multibody_sim.h): from the paper's random
// initialization it recovers geometry and friction of the cube, the elbow and a
// 3-link chain described in a file (tests/data/systems/chain3.json),
// the inertia the tosses identify (the cube's centre of mass and principal
// moments; the elbow's whole-body centre of mass and inertia and its child
// link's first moment off the hinge axis), and on the vortex scenario CCN-R's
// residual lowers the position error well below CCN's. Tolerances are stated
// per check with the values observed when they were set; each run takes a few
// seconds.
//
// What the tosses do and do not identify (issue 16, checked 2026-11-26 on these
// data sets with the true parameters against learned ones):
// - The cube's inertia is identified by the impacts (an impulse at a vertex
//   changes ω by I⁻¹(r × λ), λ fixed by the change of the linear velocity and
//   the known mass). It needs more epochs than geometry and friction: after 30
//   epochs the mean principal moment was still 25% low (6.0e-4 against 8.1e-4)
//   with the training loss 5x above the truth's; after 150 epochs it is 3% low.
// - The elbow's per-link inertia is not identifiable: mass on the hinge axis
//   (any line distribution along it: mass, first and second moment along the
//   axis, 3 directions) moves with link 1 whichever link it is assigned to, so
//   M(q) and h(q, v) are exactly unchanged (checked to 1e-17) when it is moved
//   between the links, and so is the loss. The learned elbow moves ~0.06 kg
//   that way (link masses 0.426 / 0.314, link 2's COM 12 mm along the axis),
//   which is most of its inertia_error of ~0.81; with the best such transfer
//   removed the error is 0.11 (start 1.34). We therefore assert quantities
//   invariant to those transfers, not the per-link error.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "host/dynamics/inertia.h"
#include "host/dynamics/multibody_sim.h"
#include "host/learning/ccn.h"
#include "host/learning/evaluate.h"
#include "host/learning/trainer.h"
#include "host/systems/system_file.h"
#include "io/system_tosses.h"
#include "tests/test_util.h"

namespace impulse {
namespace {
namespace fs = std::filesystem;

std::string temp_dir(const std::string& name) { return testing::fresh_dir("impulse_ccn_recovery_", name); }

// a system's name for folders: the built-in's, or a file's stem
std::string label(const std::string& system) {
  return is_system_file(system) ? fs::path(system).stem().string() : system;
}

std::string synthetic(const std::string& system, ModelGap gap, int tosses, uint64_t seed) {
  SyntheticSystemOptions o;
  o.system = system;
  if (is_system_file(system)) o.described = load_system(system);
  o.tosses = tosses;
  o.seed = seed;
  o.gap = gap;
  const std::string path = temp_dir("data_" + label(system) + std::to_string(static_cast<int>(gap))) + "/tosses.npz";
  write_system_tosses(path, generate_system_tosses(o));
  return path;
}

struct Outcome {
  nlohmann::json start, end;
  std::vector<LinkInertia> learned;  // the best epoch's inertia, per link
  std::vector<LinkInertia> initial;  // the random initialization's
};

Outcome run(const std::string& method, const std::string& system, const std::string& data, int epochs,
            int patience = 15) {
  TrainConfig c;
  c.method = method;
  c.system = system;
  c.data = data;
  c.out = temp_dir(method + "_" + label(system));
  c.seed = 1;
  c.max_epochs = epochs;
  c.patience = patience;
  c.progress = false;
  c.threads = 1;  // the same answers on any count; one thread does not spin against ctest's other job
  std::ostringstream log;
  train(c, log);
  EvalOptions e;
  e.run_dir = c.out;
  Outcome o;
  o.end = evaluate_run(e);
  e.params = "init_params.json";
  o.start = evaluate_run(e);
  std::ifstream f(c.out + "/params.json");
  const nlohmann::json pj = nlohmann::json::parse(f);
  o.learned = CcnModel::from_json(pj, load_system(system)).link_inertias();
  std::ifstream fi(c.out + "/init_params.json");
  o.initial = CcnModel::from_json(nlohmann::json::parse(fi), load_system(system)).link_inertias();
  return o;
}

std::vector<LinkInertia> true_inertia(const std::string& system) {
  std::vector<LinkInertia> out;
  for (const LinkSpec& l : load_system(system).links) out.push_back(l.inertia);
  return out;
}

Eigen::Vector3d principal_moments(const Eigen::Matrix3d& I) {
  return Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d>(I).eigenvalues();  // ascending
}

// the run's metrics from its initialization to its end, for the test's log
void print_errors(const char* label, const Outcome& o) {
  std::printf("[ %s ] volume error %.3f -> %.3f, friction error %.4f -> %.4f, inertia error %.3f -> %.3f, "
              "position error %.4f -> %.4f m\n",
              label, o.start["volume_error"].get<double>(), o.end["volume_error"].get<double>(),
              o.start["friction_error"].get<double>(), o.end["friction_error"].get<double>(),
              o.start["inertia_error"].get<double>(), o.end["inertia_error"].get<double>(),
              o.start["position_error_m"].get<double>(), o.end["position_error_m"].get<double>());
}

// A chain at zero joint angles as one rigid body in the base's frame (each child frame
// is its parent's moved to the joint origin: the elbow's, and a described system's, whose
// rpy is folded in): the sum of the links' π about the base's origin (host/dynamics/
// inertia.h's parallel-axis pair). Invariant to moving mass along a hinge axis between
// the links (see the top), so identified by the tosses.
LinkInertia composite_at_zero(const MultibodySystem& sys, const std::vector<LinkInertia>& li) {
  std::vector<Eigen::Vector3d> at(li.size(), Eigen::Vector3d::Zero());
  Inertial sum = Inertial::Zero();
  for (size_t l = 0; l < li.size(); ++l) {
    if (l > 0) at[l] = at[size_t(sys.links[l].parent)] + sys.links[l].joint_origin;
    LinkInertia moved = li[l];
    moved.com += at[l];
    sum += to_inertial(moved);
  }
  return from_inertial(sum);
}

TEST(CcnRecovery, CubeGeometryFrictionCentreOfMassAndInertia) {
  // 150 epochs (a few seconds): the inertia converges more slowly than the
  // geometry (see the top)
  const Outcome o = run("ccn", "cube", synthetic("cube", ModelGap::kNone, 48, 11), 150, 150);
  print_errors("cube", o);
  EXPECT_LT(o.end["volume_error"].get<double>(), 0.15);
  EXPECT_LT(o.end["volume_error"].get<double>(), 0.5 * o.start["volume_error"].get<double>());
  EXPECT_LT(o.end["friction_error"].get<double>(), 0.03);  // μ = 0.18
  EXPECT_LT(o.end["position_error_m"].get<double>(), 0.5 * o.start["position_error_m"].get<double>());
  // inertia: the centre of mass (true: the cube's centre) and the principal
  // moments (true: 8.1e-4 kg m² each). Observed: COM 0.9 mm off (start 22 mm),
  // mean principal moment 3% low, spread of the three 1.2% of their mean
  // (start: 20% and 40%). Tolerances: 4 mm, 12%, 10%.
  const LinkInertia& g = o.learned.at(0);
  const std::vector<LinkInertia> truth = true_inertia("cube");
  const LinkInertia& t = truth.at(0);
  const Eigen::Vector3d pm = principal_moments(g.inertia_com);
  const double Ibar = t.inertia_com.trace() / 3;
  std::printf("[ cube ] COM error %.2f mm, principal moments %.3e %.3e %.3e (true %.3e)\n", 1e3 * (g.com - t.com).norm(),
              pm(0), pm(1), pm(2), Ibar);
  EXPECT_LT((g.com - t.com).norm(), 0.004);
  EXPECT_NEAR(pm.mean(), Ibar, 0.12 * Ibar);
  EXPECT_LT(pm(2) - pm(0), 0.10 * pm.mean());
}

TEST(CcnRecovery, ThreeLinkChainFromItsDescription) {
  // tests/data/systems/chain3.json: a box base with a handle on a fixed joint, a middle
  // link on a turned revolute joint, a 5-vertex tip on a second one; 29 vertices in all
  // (the CPU loss's capacity; the device's is 2 links). 80 tosses, 20 epochs.
  const std::string chain = IMPULSE_SOURCE_DIR "/tests/data/systems/chain3.json";
  const Outcome o = run("ccn", chain, synthetic(chain, ModelGap::kNone, 80, 12), 20);
  print_errors("chain3", o);
  const MultibodySystem sys = load_system(chain);
  const std::vector<LinkInertia> truth = true_inertia(chain);
  const LinkInertia cg = composite_at_zero(sys, o.learned), ct = composite_at_zero(sys, truth);
  const Eigen::Vector3d pg = principal_moments(cg.inertia_com), pt = principal_moments(ct.inertia_com);
  std::printf("[ chain3 ] link masses %.3f %.3f %.3f kg; whole-body COM error %.2f mm, principal moments %.3e %.3e "
              "%.3e (true %.3e %.3e %.3e)\n",
              o.learned[0].mass, o.learned[1].mass, o.learned[2].mass, 1e3 * (cg.com - ct.com).norm(), pg(0), pg(1),
              pg(2), pt(0), pt(1), pt(2));
  const LinkInertia c0 = composite_at_zero(sys, o.initial);
  const Eigen::Vector3d p0 = principal_moments(c0.inertia_com);
  std::printf("[ chain3 ] start: whole-body COM error %.2f mm, principal moments %.3e %.3e %.3e\n",
              1e3 * (c0.com - ct.com).norm(), p0(0), p0(1), p0(2));
  // Observed (80 tosses, 20 epochs, seed 12 / 1): volume error 0.895 -> 0.163, friction
  // error 0.157 -> 0.010 (μ = 0.4), position error 22.7 -> 10.3 mm; the whole body's COM
  // 5.4 -> 2.6 mm off, its principal moments 66%, 23%, 24% -> 25%, 5%, 4.5% low: the
  // smallest (about the chain's long axis) converges slowest, as the cube's inertia does
  // (see the top).
  // Tolerances: 0.25 and 0.3x the start; 0.03; 0.6x the start; 5 mm; 35%, 10%, 10%.
  EXPECT_LT(o.end["volume_error"].get<double>(), 0.25);
  EXPECT_LT(o.end["volume_error"].get<double>(), 0.3 * o.start["volume_error"].get<double>());
  EXPECT_LT(o.end["friction_error"].get<double>(), 0.03);
  EXPECT_LT(o.end["position_error_m"].get<double>(), 0.6 * o.start["position_error_m"].get<double>());
  EXPECT_LT((cg.com - ct.com).norm(), 0.005);
  EXPECT_LT((cg.com - ct.com).norm(), (c0.com - ct.com).norm());
  const double tol[3] = {0.35, 0.10, 0.10};
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(pg(k), pt(k), tol[k] * pt(k)) << "principal moment " << k;
    EXPECT_LT(std::abs(pg(k) - pt(k)), std::abs(p0(k) - pt(k))) << "principal moment " << k << " no nearer than at the start";
  }
}

TEST(CcnRecovery, ElbowGeometryFrictionAndInertia) {
  const Outcome o = run("ccn", "elbow", synthetic("elbow", ModelGap::kNone, 48, 12), 30);
  print_errors("elbow", o);
  EXPECT_LT(o.end["volume_error"].get<double>(), 0.25);
  EXPECT_LT(o.end["volume_error"].get<double>(), 0.6 * o.start["volume_error"].get<double>());
  EXPECT_LT(o.end["friction_error"].get<double>(), 0.05);  // μ = 0.3
  EXPECT_LT(o.end["inertia_error"].get<double>(), 0.85 * o.start["inertia_error"].get<double>());
  EXPECT_LT(o.end["position_error_m"].get<double>(), 0.6 * o.start["position_error_m"].get<double>());
  // inertia the tosses identify (see the top; per-link masses and the COM
  // along the hinge are not). After these 30 epochs (the loss still falls, but
  // the test keeps to seconds) observed: whole-body COM 0.9 mm off (start
  // 9.8 mm), its principal moments within 5.3% (start 43%), link 2's first
  // moment across the hinge (m c_x, m c_z; the swing's lever) within 0.3% and
  // 0.5% of m c_x (start 48%, 35%). Tolerances: 3 mm, 12%, 5%, 5%.
  const MultibodySystem sys = elbow_system();
  const std::vector<LinkInertia> truth = true_inertia("elbow");
  const LinkInertia cg = composite_at_zero(sys, o.learned), ct = composite_at_zero(sys, truth);
  const Eigen::Vector3d pg = principal_moments(cg.inertia_com), pt = principal_moments(ct.inertia_com);
  std::printf("[ elbow ] link masses %.3f %.3f kg; whole-body COM error %.2f mm, principal moments %.3e %.3e %.3e "
              "(true %.3e %.3e %.3e)\n",
              o.learned[0].mass, o.learned[1].mass, 1e3 * (cg.com - ct.com).norm(), pg(0), pg(1), pg(2), pt(0), pt(1),
              pt(2));
  EXPECT_LT((cg.com - ct.com).norm(), 0.003);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(pg(k), pt(k), 0.12 * pt(k)) << "principal moment " << k;
  const Eigen::Vector3d hg = o.learned[1].mass * o.learned[1].com, ht = truth[1].mass * truth[1].com;
  EXPECT_NEAR(hg.x(), ht.x(), 0.05 * ht.x());
  EXPECT_NEAR(hg.z(), ht.z(), 0.05 * ht.x());
}

TEST(CcnRecovery, ResidualExplainsTheVortex) {
  const std::string data = synthetic("asymmetric", ModelGap::kVortex, 128, 3);
  const Outcome plain = run("ccn", "asymmetric", data, 60);
  const Outcome res = run("ccn-r", "asymmetric", data, 60);
  std::printf("[ vortex ] position error CCN %.4f m, CCN-R %.4f m; volume error %.3f / %.3f\n",
              plain.end["position_error_m"].get<double>(), res.end["position_error_m"].get<double>(),
              plain.end["volume_error"].get<double>(), res.end["volume_error"].get<double>());
  EXPECT_LT(res.end["position_error_m"].get<double>(), 0.5 * plain.end["position_error_m"].get<double>());
  EXPECT_LT(res.end["volume_error"].get<double>(), 0.05);  // the geometry is still found
}

}  // namespace
}  // namespace impulse
