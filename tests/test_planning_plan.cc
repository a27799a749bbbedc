// The capsule move end to end (host/planning/plan_report.h): the repaired method makes
// plans that pass issue 19's criteria for N = 4 and N = 3 (both replays within 1 cm of
// the target, active contacts within 2 mm, forces in their cones); a static task is
// optimal as it stands; the output is deterministic and written as files a person reads.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "host/planning/plan_report.h"
#include "io/file_lock.h"
#include "solvers/error.h"
#include "test_util.h"

namespace impulse {
namespace {

// the planner as `impulse plan` runs it (its starts included), the criteria recomputed
void expect_valid(int fingers) {
  PlanRunOptions o;
  o.task.fingers = fingers;
  o.figures = false;
  o.out = testing::fresh_dir("plan_valid_", std::to_string(fingers));
  std::ostringstream log;
  const PlanRun run = run_plan(o, log);
  const CioProblem pb(o.task);
  const PlanCheck c = check_plan(pb, run.result.theta, CioOptions().weights, HandReplayOptions{});
  SCOPED_TRACE("N = " + std::to_string(fingers));
  EXPECT_EQ(c.success, run.check.success);
  EXPECT_LT(c.plan_final_error, 0.01);
  EXPECT_LT(c.forces.final_error, 0.01) << "replay 1, the planned forces";
  EXPECT_LT(c.hand.final_error, 0.01) << "replay 2, the kinematic hand";
  EXPECT_EQ(c.forces.failed_steps, 0);
  EXPECT_EQ(c.hand.failed_steps, 0);
  EXPECT_GT(c.active, 0);
  EXPECT_LT(c.worst_object_gap, 0.002);
  EXPECT_LT(c.worst_hand_gap, 0.002);
  EXPECT_LT(c.worst_cone_violation, 1e-6 * pb.mass() * 9.81);
  EXPECT_TRUE(c.success);
}

TEST(PlanningPlan, TheCapsuleMoveIsValidWithFourFingers) { expect_valid(4); }
TEST(PlanningPlan, TheCapsuleMoveIsValidWithThreeFingers) { expect_valid(3); }

TEST(PlanningPlan, AStaticTaskIsOptimalAsItStands) {
  // the capsule at rest on the ground with the target where it is: only the ground
  // contacts active (under the capsule's ends), the hand away and still
  CioTask t;
  t.fingers = 2;
  t.target = t.start;
  const CioProblem pb(t);
  Eigen::VectorXd x = pb.initial_guess();
  const int K = t.keyframes, N = t.fingers;
  for (int k = 0; k < K; ++k) {
    x.segment<3>(pb.obj(k)) = t.start;
    x.segment<3>(pb.palm(k)) = t.start + Eigen::Vector3d(0, 0, 0.1);
    for (int i = 0; i < N; ++i) {
      x.segment<3>(pb.finger(i, k)) = t.start + Eigen::Vector3d(0.02 * (i == 0 ? 1 : -1), 0, 0.08);
      x.segment<3>(pb.contact(i, k)) = x.segment<3>(pb.finger(i, k));
    }
    x.segment<3>(pb.contact(N, k)) = x.segment<3>(pb.palm(k));
    x.segment<3>(pb.contact(N + 1, k)) = Eigen::Vector3d(t.start(0) - t.half_length, t.start(1), 0);
    x.segment<3>(pb.contact(N + 2, k)) = Eigen::Vector3d(t.start(0) + t.half_length, t.start(1), 0);
  }
  for (int j = 0; j < pb.contacts(); ++j)
    for (int m = 0; m + 1 < K; ++m) x(pb.weight(j, m)) = j > N ? 1.0 : 0.0;
  const CioWeights w;
  Eigen::VectorXd g;
  CioTerms tm;
  pb.evaluate(x, w, &g, &tm);
  EXPECT_NEAR(tm.ci, 0, 1e-12);
  EXPECT_NEAR(tm.task, 0, 1e-12);
  EXPECT_NEAR(tm.penetration, 0, 1e-12);
  // optimal at once: the optimizer, started there, leaves the capsule where it is and
  // barely changes the cost (what it gains is the force regularization's bias)
  CioOptions o;
  o.start = x;
  const CioResult r = optimize_cio(pb, o);
  const std::vector<CioSample> plan = pb.samples(r.theta, o.weights);
  for (const CioSample& s : plan) EXPECT_LT((s.x_obj - t.start).norm(), 1e-4) << "t = " << s.t;
  CioWeights last = o.weights;
  last.ci = o.stages.back().ci;
  last.physics = o.stages.back().physics;
  EXPECT_LT(pb.evaluate(x, last) - pb.evaluate(r.theta, last), 0.01 * pb.evaluate(x, last));
  for (int j = N + 1; j < pb.contacts(); ++j) EXPECT_GT(plan[5].c[static_cast<size_t>(j)], 0.99) << "the ground stays active";
  // and the capsule rests in both replays
  const PlanCheck c = check_plan(pb, x, w, HandReplayOptions{});
  EXPECT_LT(c.forces.max_deviation, 1e-3);
  EXPECT_LT(c.hand.max_deviation, 1e-3);
  EXPECT_TRUE(c.success);
}

TEST(PlanningPlan, RunWritesItsFilesDeterministicallyAndRefusesASecondWriter) {
  PlanRunOptions o;
  o.task.fingers = 3;
  o.figures = false;
  o.out = testing::fresh_dir("plan_", "a");
  std::ostringstream log;
  const PlanRun a = run_plan(o, log);
  EXPECT_NE(log.str().find("stage 7/7"), std::string::npos) << "progress while it optimizes";
  for (const char* f : {"plan.csv", "replay.csv", "stages.csv", "summary.json"})
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(o.out) / f)) << f;
  // its last line counts what it wrote: the folder's files (the lock aside), no figures here
  int in_folder = 0;
  for (const auto& e : std::filesystem::directory_iterator(o.out))
    in_folder += e.is_regular_file() && e.path().filename().string()[0] != '.';
  EXPECT_EQ(in_folder, 4);
  EXPECT_EQ(a.files.size(), 4u);
  const std::string text = log.str();
  const size_t last = text.rfind('\n', text.size() - 2);
  EXPECT_EQ(text.substr(last + 1), "plan: wrote 4 files to " + o.out + "\n") << text;
  const nlohmann::json s = nlohmann::json::parse(testing::read_text_file(o.out + "/summary.json"));
  EXPECT_EQ(s["success"].get<bool>(), a.check.success);
  EXPECT_EQ(s["task"]["fingers"].get<int>(), 3);
  EXPECT_NEAR(s["criteria"]["replay_hand"]["final_error_m"].get<double>(), a.check.hand.final_error, 1e-12);
  const std::string plan_csv = testing::read_text_file(o.out + "/plan.csv");
  EXPECT_EQ(std::count(plan_csv.begin(), plan_csv.end(), '\n'), 22) << "a header and 21 samples";
  // the same task again: the same plan, bit for bit
  PlanRunOptions o2 = o;
  o2.out = testing::fresh_dir("plan_", "b");
  std::ostringstream log2;
  const PlanRun b = run_plan(o2, log2);
  EXPECT_EQ(a.result.theta, b.result.theta);
  EXPECT_EQ(plan_csv, testing::read_text_file(o2.out + "/plan.csv"));
  // a second writer of the folder is refused, naming it
  const FileLock held(o.out + "/.lock", o.out, "this test", "");
  EXPECT_THROW(run_plan(o, log), Error);
  // nonsense options are named
  PlanRunOptions bad = o2;
  bad.method = "bfgs";
  EXPECT_THROW(run_plan(bad, log), Error);
  bad = o2;
  bad.starts = 0;
  EXPECT_THROW(run_plan(bad, log), Error);
  bad = o2;
  bad.perturb = 0.5;
  EXPECT_THROW(run_plan(bad, log), Error);
  bad = o2;
  bad.task.fingers = 9;
  EXPECT_THROW(run_plan(bad, log), Error);
  bad = o2;
  bad.task.target = Eigen::Vector3d(0, std::nan(""), 0);
  EXPECT_THROW(run_plan(bad, log), Error);
}

}  // namespace
}  // namespace impulse
