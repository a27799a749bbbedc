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
    fill(x, out);
  }
  // the two ground contacts into rows 0 and 1 of a frame already sized (and zeroed)
  void fill(const State& x, ContactFrame& out) const {
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

// the capsule among the ground (as above) and the hand's N + 1 kinematic spheres
// (fingertips, then the palm), whose centres and velocities are set before each step
class CapsuleAmongSpheres : public ContactModel {
 public:
  CapsuleAmongSpheres(double radius, double half_length, double mu, int spheres, double sphere_radius)
      : ground_(radius, half_length, mu), R_(radius), H_(half_length), mu_(mu), rs_(sphere_radius),
        centre_(static_cast<size_t>(spheres), Eigen::Vector3d::Zero()),
        speed_(static_cast<size_t>(spheres), Eigen::Vector3d::Zero()) {}
  int contacts() const override { return 2 + static_cast<int>(centre_.size()); }
  void set_sphere(int i, const Eigen::Vector3d& centre, const Eigen::Vector3d& velocity) {
    centre_[static_cast<size_t>(i)] = centre;
    speed_[static_cast<size_t>(i)] = velocity;
  }
  void evaluate(const State& x, ContactFrame& out) const override {
    const int k = contacts();
    out.resize(k, 6);
    ground_.fill(x, out);
    const Eigen::Matrix3d Rot = rotation(x);
    const Eigen::Vector3d axis = Rot * Eigen::Vector3d(H_, 0, 0);
    for (int i = 0; i + 2 < k; ++i) {
      const Eigen::Vector3d& s = centre_[static_cast<size_t>(i)];
      const double tau = H_ > 0 ? std::clamp((s - position(x)).dot(axis) / axis.squaredNorm(), -1.0, 1.0) : 0.0;
      const Eigen::Vector3d a = position(x) + tau * axis;  // nearest point of the axis
      Eigen::Vector3d u = s - a;
      const double dist = u.norm();
      u = dist > 1e-12 ? Eigen::Vector3d(u / dist) : Eigen::Vector3d::UnitZ();
      const int c = 2 + i;
      out.phi(c) = dist - R_ - rs_;
      // the capsule is pushed along −u at its surface point a + R u; the gap closes at
      // u·(v_capsule point − v_sphere)
      const Eigen::Vector3d rho = Rot.transpose() * (a + R_ * u - position(x));
      const Eigen::Vector3d nb = Rot.transpose() * u;
      Eigen::Vector3d t1 = u.unitOrthogonal(), t2 = u.cross(t1);
      out.Jn.block<1, 3>(c, 0) = -u.transpose();
      out.Jn.block<1, 3>(c, 3) = -rho.cross(nb).transpose();
      out.vn(c) = u.dot(speed_[static_cast<size_t>(i)]);
      for (int d = 0; d < 2; ++d) {
        const Eigen::Vector3d& t = d == 0 ? t1 : t2;
        out.Jt.block<1, 3>(2 * c + d, 0) = mu_ * t.transpose();
        out.Jt.block<1, 3>(2 * c + d, 3) = mu_ * rho.cross(Rot.transpose() * t).transpose();
        out.vt(2 * c + d) = -mu_ * t.dot(speed_[static_cast<size_t>(i)]);
      }
    }
  }

 private:
  CapsuleGround ground_;
  double R_, H_, mu_, rs_;
  std::vector<Eigen::Vector3d> centre_, speed_;
};

BodyParams capsule_body(const CioTask& t) {
  const LinkInertia inertia = capsule_inertia(t.radius, t.half_length, t.density);
  BodyParams body;
  body.mass = inertia.mass;
  body.inertia = inertia.inertia_com;
  return body;
}

// what both replays share: the simulator from the plan's first state, a step that counts
// failed solves, the record at each plan sample
struct Replayer {
  Simulator sim;
  State x;
  ReplayResult r;
  Replayer(const CioProblem& pb, const std::vector<CioSample>& plan, double dt) : sim(capsule_body(pb.task()), options(dt)) {
    if (plan.size() < 2) throw Error("replay: the plan needs at least 2 samples");
    x = make_state(plan[0].x_obj, plan[0].q, plan[0].velocity, plan[0].q.conjugate() * plan[0].omega);
    record();
  }
  static SimOptions options(double dt) {
    if (!(dt > 0)) throw Error("replay: dt must be > 0");
    SimOptions so;
    so.dt = dt;
    return so;
  }
  void step(const ContactModel& model) {
    StepInfo info;
    x = sim.step(model, x, &info);
    if (info.status != SolveStatus::kSolved) ++r.failed_steps;
  }
  void record() {
    r.replayed.push_back(position(x));
    r.orientation.push_back(orientation(x));
  }
};

void finish(const CioProblem& pb, const std::vector<CioSample>& plan, ReplayResult& r) {
  for (size_t s = 0; s < plan.size(); ++s) {
    r.max_deviation = std::max(r.max_deviation, (r.replayed[s] - plan[s].x_obj).norm());
    r.max_rotation_deviation = std::max(r.max_rotation_deviation, rotation_angle_between(r.orientation[s], plan[s].q));
  }
  r.final_error = (r.replayed.back() - pb.task().target).norm();
}

}  // namespace

ReplayResult replay_hand(const CioProblem& pb, const std::vector<CioSample>& plan, const HandReplayOptions& o) {
  if (!(o.sphere_radius > 0) || !(o.squeeze >= 0) || o.squeeze >= o.sphere_radius)
    throw Error("replay: need sphere radius > 0 and 0 <= squeeze < sphere radius");
  const CioTask& t = pb.task();
  const int N = t.fingers;
  Replayer rp(pb, plan, o.dt);
  CapsuleAmongSpheres model(t.radius, t.half_length, t.mu, N + 1, o.sphere_radius);
  // a sphere's centre: its hand point moved out from the planned capsule's surface by
  // the sphere's radius less the squeeze, so a hand point on the surface grips it
  auto centre_of = [&](const CioSample& c, int i) {
    const Eigen::Vector3d& h = i < N ? c.fingertips[static_cast<size_t>(i)] : c.palm;
    const CapsuleProjection pr = project_to_capsule(pb.capsule_at(c.x_obj, c.q), h);
    return Eigen::Vector3d(h + (o.sphere_radius - o.squeeze) * pr.normal);
  };
  for (size_t s = 0; s + 1 < plan.size(); ++s) {
    const double span = plan[s + 1].t - plan[s].t;
    const int steps = std::max(1, static_cast<int>(std::lround(span / o.dt)));
    for (int k = 0; k < steps; ++k) {
      // the spheres move linearly between the plan's samples; each step sees where
      // they are at its start and how fast they move (the LCP keeps the gap at its end)
      const double f = static_cast<double>(k) / steps;
      for (int i = 0; i <= N; ++i) {
        const Eigen::Vector3d a = centre_of(plan[s], i), b = centre_of(plan[s + 1], i);
        model.set_sphere(i, (1 - f) * a + f * b, (b - a) / span);
      }
      rp.step(model);
    }
    rp.record();
  }
  finish(pb, plan, rp.r);
  return rp.r;
}

ReplayResult replay_forces(const CioProblem& pb, const std::vector<CioSample>& plan, double dt, bool with_ground_forces) {
  const CioTask& t = pb.task();
  Replayer rp(pb, plan, dt);
  const CapsuleGround ground(t.radius, t.half_length, t.mu);
  const int N = t.fingers;
  for (size_t s = 0; s + 1 < plan.size(); ++s) {
    // the hand forces of sample s, about the planned centre; torque into the body frame
    Eigen::Vector3d F = Eigen::Vector3d::Zero(), tau = Eigen::Vector3d::Zero();
    for (int j = 0; j < (with_ground_forces ? pb.contacts() : N + 1); ++j) {
      F += plan[s].forces[static_cast<size_t>(j)];
      tau += (plan[s].contacts[static_cast<size_t>(j)] - plan[s].x_obj).cross(plan[s].forces[static_cast<size_t>(j)]);
    }
    const int steps = std::max(1, static_cast<int>(std::lround((plan[s + 1].t - plan[s].t) / dt)));
    for (int k = 0; k < steps; ++k) {
      Vec6 J;
      J << F * dt, rotation(rp.x).transpose() * tau * dt;
      rp.sim.set_external_impulse(J);
      rp.step(ground);
    }
    rp.record();
  }
  finish(pb, plan, rp.r);
  return rp.r;
}

}  // namespace impulse
