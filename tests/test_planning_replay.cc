// Replay 1 of a plan (host/planning/replay.h): the engine's time-stepping under the
// plan's hand forces follows a plan whose forces are exactly right, and a capsule left
// alone rests on the ground.
#include <gtest/gtest.h>

#include "host/planning/replay.h"
#include "solvers/error.h"

namespace impulse {
namespace {

std::vector<CioSample> lift_plan(const CioProblem& pb, const Eigen::Vector3d& accel, double force_scale) {
  const CioTask& t = pb.task();
  std::vector<CioSample> plan;
  const Eigen::Vector3d x0 = t.start + Eigen::Vector3d(0, 0, 0.01);  // just off the ground
  for (int s = 0; s <= 20; ++s) {
    CioSample c;
    c.t = 0.05 * s;
    c.x_obj = x0 + 0.5 * accel * c.t * c.t;
    c.velocity = accel * c.t;
    c.accel = accel;
    c.palm = c.x_obj + Eigen::Vector3d(0, 0, t.radius);
    for (int j = 0; j < pb.contacts(); ++j) {
      c.contacts.push_back(j == t.fingers ? c.palm : c.x_obj);  // all through the centre: no torque
      c.c.push_back(j == t.fingers ? 1.0 : 0.0);
      c.forces.push_back(j == t.fingers ? Eigen::Vector3d(force_scale * pb.mass() * (accel - Eigen::Vector3d(0, 0, -9.81)))
                                        : Eigen::Vector3d::Zero());
      if (j < t.fingers) c.fingertips.push_back(c.x_obj);
    }
    plan.push_back(c);
  }
  return plan;
}

TEST(PlanningReplay, ExactForcesAreFollowedAndWrongOnesAreNot) {
  CioTask t;
  t.target = t.start + Eigen::Vector3d(0, 0, 0.01) + 0.5 * Eigen::Vector3d(0.2, 0, 0.3);
  const CioProblem pb(t);
  const Eigen::Vector3d a(0.2, 0, 0.3);
  const ReplayResult good = replay_forces(pb, lift_plan(pb, a, 1.0));
  EXPECT_EQ(good.failed_steps, 0);
  EXPECT_LT(good.max_deviation, 2e-3) << "the plan's forces explain its motion";
  EXPECT_LT(good.final_error, 2e-3);
  // 10% too little force: the capsule falls back and drags on the ground
  const ReplayResult bad = replay_forces(pb, lift_plan(pb, a, 0.9));
  EXPECT_GT(bad.max_deviation, 0.02);
}

TEST(PlanningReplay, ACapsuleLeftAloneRests) {
  CioTask t;
  const CioProblem pb(t);
  std::vector<CioSample> plan = lift_plan(pb, Eigen::Vector3d::Zero(), 0.0);
  for (CioSample& c : plan) c.x_obj = t.start;  // on the ground, no hand force
  const ReplayResult r = replay_forces(pb, plan);
  EXPECT_LT(r.max_deviation, 1e-3);
}

}  // namespace
}  // namespace impulse

namespace impulse {
namespace {

// two fingertips pinching the capsule's middle from ±y, both moving up and along x
std::vector<CioSample> pinch_plan(const CioProblem& pb, const Eigen::Vector3d& move, double finger_offset) {
  const CioTask& t = pb.task();
  std::vector<CioSample> plan;
  for (int s = 0; s <= 20; ++s) {
    CioSample c;
    c.t = 0.05 * s;
    const double u = c.t * c.t * (3 - 2 * c.t);  // smooth 0 → 1 over the second
    c.x_obj = t.start + u * move;
    c.velocity = 6 * c.t * (1 - c.t) * move;
    c.accel = (6 - 12 * c.t) * move;
    c.palm = c.x_obj + Eigen::Vector3d(0, 0, 0.08);
    for (int i = 0; i < t.fingers; ++i) {
      const double side = i % 2 == 0 ? 1 : -1;
      c.fingertips.push_back(i < 2 ? Eigen::Vector3d(c.x_obj + Eigen::Vector3d(0, side * (t.radius + finger_offset), 0))
                                   : Eigen::Vector3d(c.palm + Eigen::Vector3d(0.02 * side, 0, 0)));
    }
    for (int j = 0; j < pb.contacts(); ++j) {
      c.contacts.push_back(c.x_obj);
      c.c.push_back(0);
      c.forces.push_back(Eigen::Vector3d::Zero());
    }
    plan.push_back(c);
  }
  return plan;
}

TEST(PlanningReplay, AKinematicPinchCarriesTheCapsuleAndAnOpenHandDoesNot) {
  CioTask t;
  t.fingers = 2;
  const Eigen::Vector3d move(0.05, 0, 0.04);
  t.target = t.start + move;
  const CioProblem pb(t);
  const ReplayResult held = replay_hand(pb, pinch_plan(pb, move, 0.0));
  EXPECT_EQ(held.failed_steps, 0);
  EXPECT_LT(held.final_error, 2e-3) << "the squeezed capsule goes where the fingertips go";
  EXPECT_LT(held.max_deviation, 3e-3);
  // fingertips 5 mm off the surface never touch it: the capsule stays on the ground
  const ReplayResult open = replay_hand(pb, pinch_plan(pb, move, 0.005));
  EXPECT_LT((open.replayed.back() - t.start).norm(), 1e-3);
  EXPECT_GT(open.final_error, 0.06);
  // nonsense options are named
  HandReplayOptions bad;
  bad.squeeze = 0.01;
  EXPECT_THROW(replay_hand(pb, pinch_plan(pb, move, 0.0), bad), Error);
}

}  // namespace
}  // namespace impulse
