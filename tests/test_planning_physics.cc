// The physics term of contact-invariant planning (host/planning/physics_qp.h): the
// batched QP's optimum against an independent check, and its envelope gradient
// against finite differences of the solved value, for every input.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "host/planning/physics_qp.h"
#include "solvers/error.h"

namespace impulse {
namespace {

// an object at the origin held by 4 contacts around it plus one from below, moving a little
PhysicsSample random_sample(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  PhysicsSample s;
  s.mass = 0.2;
  s.x_obj = Eigen::Vector3d(0.01 * u(rng), 0.01 * u(rng), 0.05);
  s.accel = Eigen::Vector3d(0.5 * u(rng), 0.5 * u(rng), 0.5 * u(rng));
  s.Ldot = Eigen::Vector3d(0.002 * u(rng), 0.002 * u(rng), 0.002 * u(rng));
  for (int j = 0; j < 5; ++j) {
    const double ang = 2 * M_PI * j / 4 + 0.3 * u(rng);
    Eigen::Vector3d r = j < 4 ? Eigen::Vector3d(0.04 * std::cos(ang), 0.04 * std::sin(ang), 0.05 + 0.01 * u(rng))
                              : Eigen::Vector3d(0.005 * u(rng), 0.005 * u(rng), 0.02);
    s.r.push_back(r);
    s.frame.push_back(contact_frame((s.x_obj - r).normalized()));
    s.c.push_back(0.3 + 0.6 * std::abs(u(rng)));
  }
  return s;
}

double value(const PhysicsSample& s, const PhysicsQpOptions& o) { return physics_values({s}, o)[0].value; }

TEST(PlanningPhysics, OptimumIsFeasibleAndBeatsFeasiblePerturbations) {
  std::mt19937_64 rng(1);
  PhysicsQpOptions o;
  std::vector<PhysicsSample> ss;
  for (int i = 0; i < 8; ++i) ss.push_back(random_sample(rng));
  const std::vector<PhysicsGradient> g = physics_values(ss, o);
  std::normal_distribution<double> n(0, 1);
  for (size_t i = 0; i < ss.size(); ++i) {
    ASSERT_TRUE(g[i].solved) << i;
    std::vector<Eigen::Vector3d> f;
    for (size_t j = 0; j < ss[i].r.size(); ++j) {
      f.push_back(ss[i].frame[j].transpose() * g[i].force[j]);
      EXPECT_LE(f.back().tail<2>().norm(), o.mu * f.back()(0) + 1e-7) << "cone, sample " << i << " contact " << j;
    }
    EXPECT_NEAR(physics_objective(ss[i], f, o.lambda), g[i].value, 1e-12 * (1 + g[i].value));
    // no feasible perturbation (projected onto the cones) does better
    for (int t = 0; t < 200; ++t) {
      std::vector<Eigen::Vector3d> h = f;
      for (Eigen::Vector3d& v : h) {
        v += 0.02 * Eigen::Vector3d(n(rng), n(rng), n(rng));
        v(0) = std::max(v(0), v.tail<2>().norm() / o.mu);  // back into the cone
      }
      EXPECT_GE(physics_objective(ss[i], h, o.lambda), g[i].value - 1e-8) << "sample " << i;
    }
  }
}

TEST(PlanningPhysics, EnvelopeGradientMatchesFiniteDifferences) {
  std::mt19937_64 rng(2);
  PhysicsQpOptions o;
  o.eps = 1e-12;
  const double h = 1e-6;
  for (int trial = 0; trial < 4; ++trial) {
    PhysicsSample s = random_sample(rng);
    s.moment_weight = trial % 2 == 0 ? 1.0 : 3000.0;  // the notes' weighting, then the planner's m / I_min
    const PhysicsGradient g = physics_values({s}, o)[0];
    ASSERT_TRUE(g.solved);
    auto fd = [&](auto perturb) {
      PhysicsSample p = s, m = s;
      perturb(p, h);
      perturb(m, -h);
      return (value(p, o) - value(m, o)) / (2 * h);
    };
    auto near = [&](double a, double b, const std::string& what) {
      EXPECT_NEAR(a, b, 2e-4 * (std::abs(b) + 1e-3 * (1 + g.value))) << what << " trial " << trial;
    };
    for (size_t j = 0; j < s.r.size(); ++j) {
      near(g.d_c[j], fd([&](PhysicsSample& q, double e) { q.c[j] += e; }), "c" + std::to_string(j));
      for (int a = 0; a < 3; ++a) {
        near(g.d_r[j](a), fd([&](PhysicsSample& q, double e) { q.r[j](a) += e; }), "r" + std::to_string(j));
        for (int b = 0; b < 3; ++b)
          near(g.d_frame[j](a, b), fd([&](PhysicsSample& q, double e) { q.frame[j](a, b) += e; }),
               "frame" + std::to_string(j));
      }
    }
    for (int a = 0; a < 3; ++a) {
      near(g.d_x_obj(a), fd([&](PhysicsSample& q, double e) { q.x_obj(a) += e; }), "x_obj");
      near(g.d_accel(a), fd([&](PhysicsSample& q, double e) { q.accel(a) += e; }), "accel");
      near(g.d_Ldot(a), fd([&](PhysicsSample& q, double e) { q.Ldot(a) += e; }), "Ldot");
    }
  }
}

TEST(PlanningPhysics, AnObjectAtRestOnTheGroundNeedsNoViolation) {
  // two ground contacts under the centre of mass carry the weight exactly
  PhysicsSample s;
  s.mass = 0.2;
  s.x_obj = Eigen::Vector3d(0, 0, 0.03);
  for (double x : {-0.05, 0.05}) {
    s.r.emplace_back(x, 0, 0);
    s.frame.push_back(contact_frame(Eigen::Vector3d::UnitZ()));
    s.c.push_back(1);
  }
  PhysicsQpOptions o;
  o.lambda = 1e-8;
  const PhysicsGradient g = physics_values({s}, o)[0];
  EXPECT_LT(g.residual_force.norm(), 1e-5);
  EXPECT_LT(g.residual_moment.norm(), 1e-6);
  EXPECT_NEAR(g.force[0](2) + g.force[1](2), 0.2 * 9.81, 1e-4);
}

TEST(PlanningPhysics, BadInputIsNamed) {
  std::mt19937_64 rng(3);
  PhysicsSample s = random_sample(rng), t = s;
  t.c.pop_back();
  EXPECT_THROW(physics_values({s, t}, {}), Error);
  s.r[2](0) = NAN;
  try {
    physics_values({s}, {});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("contact 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace impulse
