#include "host/planning/replay.h"

#include <algorithm>
#include <cmath>

#include "host/dynamics/contact_model.h"
#include "host/dynamics/simulate.h"
#include "host/planning/spline.h"
#include "solvers/error.h"

namespace impulse {

namespace {

// the capsule on the ground plane: its two end spheres' lowest points, friction μ
class CapsuleGround : public ContactModel {
 public:
  CapsuleGround(double radius, double half_length, double mu) : R_(radius), H_(half_length), mu_(mu) {}
  int contacts() const override { return 2; }
  void evaluate(const State& x, ContactFrame& out) const override {
    out.resize(2, 6);
    const Eigen::Matrix3d Rot = rotation(x);
    const Eigen::Vector3d ez = Rot.transpose() * Eigen::Vector3d::UnitZ();  // world z in the body frame
    const Eigen::Vector3d tx = Rot.transpose() * Eigen::Vector3d::UnitX(), ty = Rot.transpose() * Eigen::Vector3d::UnitY();
    for (int i = 0; i < 2; ++i) {
      const Eigen::Vector3d a(i == 0 ? -H_ : H_, 0, 0);  // sphere centre, body frame
      const Eigen::Vector3d b = a - R_ * ez;                // its lowest point, body frame
      out.phi(i) = (position(x) + Rot * a)(2) - R_;
      const Eigen::Vector3d an = a.cross(ez), bx = b.cross(tx), by = b.cross(ty);
      out.Jn(i, 2) = 1;
      out.Jt(2 * i, 0) = mu_;
      out.Jt(2 * i + 1, 1) = mu_;
      for (int e = 0; e < 3; ++e) {
        out.Jn(i, 3 + e) = an(e);
        out.Jt(2 * i, 3 + e) = mu_ * bx(e);
        out.Jt(2 * i + 1, 3 + e) = mu_ * by(e);
      }
    }
  }

 private:
  double R_, H_, mu_;
};

}  // namespace

ReplayResult replay_forces(const CioProblem& pb, const std::vector<CioSample>& plan, double dt) {
  if (plan.size() < 2) throw Error("replay: the plan needs at least 2 samples");
  if (!(dt > 0)) throw Error("replay: dt must be > 0");
  const CioTask& t = pb.task();
  const LinkInertia inertia = capsule_inertia(t.radius, t.half_length, t.density);
  BodyParams body;
  body.mass = inertia.mass;
  body.inertia = inertia.inertia_com;
  SimOptions so;
  so.dt = dt;
  Simulator sim(body, so);
  const CapsuleGround ground(t.radius, t.half_length, t.mu);
  State x = make_state(plan[0].x_obj, Eigen::Quaterniond::Identity(), plan[0].velocity, Eigen::Vector3d::Zero());
  ReplayResult r;
  r.replayed.push_back(position(x));
  const int N = t.fingers;
  for (size_t s = 0; s + 1 < plan.size(); ++s) {
    // the hand forces of sample s, about the planned centre; torque into the body frame
    Eigen::Vector3d F = Eigen::Vector3d::Zero(), tau = Eigen::Vector3d::Zero();
    for (int j = 0; j <= N; ++j) {
      F += plan[s].forces[static_cast<size_t>(j)];
      tau += (plan[s].contacts[static_cast<size_t>(j)] - plan[s].x_obj).cross(plan[s].forces[static_cast<size_t>(j)]);
    }
    const int steps = std::max(1, static_cast<int>(std::lround((plan[s + 1].t - plan[s].t) / dt)));
    for (int k = 0; k < steps; ++k) {
      Vec6 J;
      J << F * dt, rotation(x).transpose() * tau * dt;
      sim.set_external_impulse(J);
      StepInfo info;
      x = sim.step(ground, x, &info);
      if (info.status != SolveStatus::kSolved) ++r.failed_steps;
    }
    r.replayed.push_back(position(x));
  }
  for (size_t s = 0; s < plan.size(); ++s) r.max_deviation = std::max(r.max_deviation, (r.replayed[s] - plan[s].x_obj).norm());
  r.final_error = (r.replayed.back() - t.target).norm();
  return r;
}

}  // namespace impulse
