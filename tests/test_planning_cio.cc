// Contact-invariant planning (host/planning/cio.h): the whole cost's analytic gradient
// against finite differences, term by term, at the initial guess and at a perturbed plan.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "host/planning/cio.h"
#include "solvers/error.h"

namespace impulse {
namespace {

void check_gradient(const CioProblem& pb, const Eigen::VectorXd& x, const CioWeights& w, const std::string& what,
                    double h = 1e-6) {
  Eigen::VectorXd g;
  pb.evaluate(x, w, &g);
  int checked = 0;
  double worst = 0;
  for (int i = 0; i < pb.size(); ++i) {
    Eigen::VectorXd p = x, m = x;
    p(i) += h;
    m(i) -= h;
    const double fd = (pb.evaluate(p, w) - pb.evaluate(m, w)) / (2 * h);
    const double err = std::abs(fd - g(i)) / (1e-6 + 1e-3 * std::abs(fd) + 1e-3 * std::abs(g(i)));
    worst = std::max(worst, err);
    EXPECT_LE(err, 1.0) << what << ": variable " << i << " analytic " << g(i) << " finite difference " << fd;
    ++checked;
  }
  EXPECT_EQ(checked, pb.size());
}

CioWeights only(const std::string& term) {
  CioWeights w;
  w.ci = term == "ci" ? 1 : 0;
  w.physics = term == "physics" ? 1 : 0;
  w.task = term == "task" ? 100 : 0;
  w.penetration = term == "penetration" ? 1e3 : 0;
  w.reach = term == "reach" ? 1e3 : 0;
  w.smooth = term == "smooth" ? 1e-2 : 0;
  return w;
}

TEST(PlanningCio, EveryTermsGradientMatchesFiniteDifferences) {
  CioTask t;
  t.fingers = 2;
  t.keyframes = 4;
  t.dt = 0.1;
  const CioProblem pb(t);
  std::mt19937_64 rng(5);
  std::normal_distribution<double> n(0, 1);
  Eigen::VectorXd x = pb.initial_guess();
  Eigen::VectorXd lo, hi;
  pb.bounds(lo, hi);
  for (int i = 0; i < x.size(); ++i) x(i) += std::isfinite(lo(i)) ? 0.2 * n(rng) * 0.5 : 0.01 * n(rng);
  x = x.cwiseMax(lo).cwiseMin(hi);
  // some fingertips inside the capsule and out of reach, to exercise every branch
  x.segment<3>(pb.finger(0, 1)) = x.segment<3>(pb.obj(1)) + Eigen::Vector3d(0.01, 0.005, 0.0);
  x.segment<3>(pb.finger(1, 2)) = x.segment<3>(pb.palm(2)) + Eigen::Vector3d(0.15, 0.02, 0.0);
  // the physics term with h = 1e-5: it is a QP's optimal value, accurate to the solver's
  // tolerance, and with moments weighted by m / I_min (~3e3 for the capsule) a 1e-6 step's
  // difference quotient carries ~1e-6 of solver noise; the hinge terms keep 1e-6 (at 1e-5
  // their kinks show in the difference quotient)
  for (const char* term : {"ci", "physics", "task", "penetration", "reach", "smooth"})
    check_gradient(pb, x, only(term), term, std::string(term) == "physics" ? 1e-5 : 1e-6);
  // all terms together, at the initial guess lifted 1 mm (there the capsule touches the
  // ground exactly, where the squared-hinge penetration term's finite difference is one-sided)
  Eigen::VectorXd x0 = pb.initial_guess();
  // and its ground contacts 1 mm in from the axis segment's ends (the initial guess puts them
  // right under the ends, where the capsule's projection changes from cylinder to sphere: a
  // kink, which the force gate's γ(e^O) multiplies)
  for (int k = 0; k < t.keyframes; ++k) {
    x0(pb.obj(k) + 2) += 1e-3;
    x0(pb.contact(t.fingers + 1, k)) += 1e-3;
    x0(pb.contact(t.fingers + 2, k)) -= 1e-3;
  }
  check_gradient(pb, x0, CioWeights(), "all terms near the initial guess");
  // a turn (large jumps of ω at the knots, whose impulses the forces are asked for), near
  // capsule-turn's initial guess
  CioTask tt = t;
  tt.turn = M_PI / 2;
  tt.target = tt.start + Eigen::Vector3d(0, 0, 0.05);
  const CioProblem turn(tt);
  Eigen::VectorXd xt = turn.initial_guess();
  for (int k = 0; k < tt.keyframes; ++k) {
    xt(turn.obj(k) + 2) += 1e-3;
    for (int j = tt.fingers + 1; j < turn.contacts(); ++j)  // in from the ends' kink, as above
      xt.segment<2>(turn.contact(j, k)) =
          xt.segment<2>(turn.obj(k)) + 0.98 * (xt.segment<2>(turn.contact(j, k)) - xt.segment<2>(turn.obj(k)));
    xt.segment<3>(turn.rot(k)) += 0.05 * Eigen::Vector3d(n(rng), n(rng), n(rng)) * (k > 0 && k + 1 < tt.keyframes);
  }
  check_gradient(turn, xt, only("physics"), "physics, a turn", 1e-5);
  check_gradient(turn, xt, only("task"), "task, a turn");
}

TEST(PlanningCio, BadTasksAreNamed) {
  CioTask t;
  t.fingers = 0;
  EXPECT_THROW(CioProblem{t}, Error);
  t = CioTask();
  t.dt = 2;
  EXPECT_THROW(CioProblem{t}, Error);
  const CioProblem pb{CioTask()};
  EXPECT_THROW(pb.evaluate(Eigen::VectorXd::Zero(3), CioWeights()), Error);
}

}  // namespace
}  // namespace impulse
