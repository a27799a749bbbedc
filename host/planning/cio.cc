#include "host/planning/cio.h"

#include <LBFGSB.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "host/dynamics/rigid_body.h"
#include "host/planning/spline.h"
#include "solvers/error.h"

namespace impulse {

namespace {

Eigen::Vector3d block(const Eigen::VectorXd& x, int at) { return x.segment<3>(at); }

// the force gate γ = δ² / (δ² + ‖e^O‖² + ‖e^H‖²) (CioWeights::gate; 1 when δ = 0)
double gate(const Eigen::Vector3d& eo, const Eigen::Vector3d& eh, double delta) {
  if (!(delta > 0)) return 1.0;
  const double d2 = delta * delta;
  return d2 / (d2 + eo.squaredNorm() + eh.squaredNorm());
}

// e^O and e^H of contact j (< N a fingertip, N the palm, above: the ground) at a sample,
// from r's closest point on the object
void contact_errors(const Eigen::Vector3d& on_object, int j, int N, const Eigen::Vector3d& r, const Eigen::Vector3d& hand_point,
                    Eigen::Vector3d& eo, Eigen::Vector3d& eh) {
  eo = on_object - r;
  eh = (j <= N ? hand_point : project_to_ground(r).point) - r;
}

// the angular impulse a knot asks of its sample's forces (CioWeights::knot_forces): where
// SLERP's interval changes between the previous sample and this one, I_w (ω − ω_prev) / dt
Eigen::Vector3d knot_rate(bool on, int interval, int interval_prev, const Eigen::Matrix3d& Iw, const Eigen::Vector3d& omega,
                          const Eigen::Vector3d& omega_prev, double dt) {
  if (!on || interval == interval_prev) return Eigen::Vector3d::Zero();
  return Iw * (omega - omega_prev) / dt;
}

}  // namespace

CioProblem::CioProblem(const CioTask& t) : task_(t) {
  if (t.fingers < 1 || t.fingers > 5) throw Error("plan: fingers must be 1..5, got " + std::to_string(t.fingers));
  if (!(t.radius > 0) || !(t.half_length >= 0) || !(t.density > 0)) throw Error("plan: the capsule needs radius > 0, half-length >= 0, density > 0");
  if (t.keyframes < 3) throw Error("plan: at least 3 keyframes");
  if (!(t.duration > 0) || !(t.dt > 0) || t.dt > t.duration) throw Error("plan: need 0 < dt <= duration");
  if (!t.start.allFinite() || !t.target.allFinite()) throw Error("plan: start and target must be finite");
  if (!(t.reach > 0) || !(t.mu > 0)) throw Error("plan: reach and mu must be > 0");
  if (!std::isfinite(t.turn) || std::abs(t.turn) > M_PI) throw Error("plan: the turn must be within ±180°");
  if (t.turn != 0 && !t.free_orientation) throw Error("plan: a turn needs a free orientation");
  K_ = t.keyframes;
  S_ = static_cast<int>(std::lround(t.duration / t.dt)) + 1;
  const LinkInertia li = capsule_inertia(t.radius, t.half_length, t.density);
  mass_ = li.mass;
  inertia_body_ = li.inertia_com;
  moment_weight_ = mass_ / li.inertia_com.diagonal().minCoeff();  // 1/ℓ², ℓ the smallest radius of gyration
}

Eigen::Quaterniond CioTask::target_orientation() const {
  return Eigen::Quaterniond(Eigen::AngleAxisd(turn, Eigen::Vector3d::UnitZ()));
}

Capsule CioProblem::capsule_at(const Eigen::Vector3d& centre, const Eigen::Quaterniond& q) const {
  Capsule c;
  c.radius = task_.radius;
  c.half_length = task_.half_length;
  c.position = centre;
  c.orientation = q;
  return c;
}

int CioProblem::size() const { return rot(K_ - 1) + 3; }

Eigen::Matrix3d CioProblem::world_inertia(const Eigen::Quaterniond& q) const {
  const Eigen::Matrix3d R = q.toRotationMatrix();
  return R * inertia_body_ * R.transpose();
}

PhysicsSample CioProblem::physics_sample(const Eigen::Vector3d& xo, const Eigen::Vector3d& ao, const Eigen::Quaterniond& q,
                                         const Eigen::Vector3d& omega, const std::vector<Eigen::Vector3d>& r,
                                         const std::vector<double>& c, const Eigen::Vector3d& impulse_rate) const {
  PhysicsSample p;
  p.mass = mass_;
  p.moment_weight = moment_weight_;
  p.x_obj = xo;
  p.accel = ao;
  p.Ldot = omega.cross(world_inertia(q) * omega) + impulse_rate;  // within an interval ω is constant, I_w turns
  p.r = r;
  p.c = c;
  const Capsule cap = capsule_at(xo, q);
  for (size_t j = 0; j < r.size(); ++j) {
    const bool hand = static_cast<int>(j) <= task_.fingers;
    p.frame.push_back(contact_frame(hand ? Eigen::Vector3d(-project_to_capsule(cap, r[j]).normal) : Eigen::Vector3d::UnitZ()));
  }
  return p;
}

PhysicsQpOptions CioProblem::physics_options(const CioWeights& w, int threads) const {
  PhysicsQpOptions po;
  po.mu = task_.mu;
  po.lambda = w.lambda;
  po.cones = w.cones;
  po.threads = threads;
  return po;
}

std::vector<Eigen::Quaterniond> CioProblem::orientations(const Eigen::VectorXd& x) const {
  std::vector<Eigen::Quaterniond> q;
  for (int k = 0; k < K_; ++k) q.push_back(rotation_exp(x.segment<3>(rot(k))));
  return q;
}

Eigen::VectorXd CioProblem::initial_guess(int start) const {
  if (start < 0) throw Error("plan: start index must be >= 0, got " + std::to_string(start));
  Eigen::VectorXd x = Eigen::VectorXd::Zero(size());
  const int N = task_.fingers;
  const double R = task_.radius, H = task_.half_length;
  for (int k = 0; k < K_; ++k) {
    const double s = static_cast<double>(k) / (K_ - 1);
    const Eigen::Vector3d o = (1 - s) * task_.start + s * task_.target;
    x.segment<3>(obj(k)) = o;
    // a turn: the orientation keyframes turn evenly, the hand's layout with them
    const Eigen::Matrix3d Rk = Eigen::AngleAxisd(s * task_.turn, Eigen::Vector3d::UnitZ()).toRotationMatrix();
    x.segment<3>(rot(k)) = Eigen::Vector3d(0, 0, s * task_.turn);
    const Eigen::Vector3d palm_at = o + Eigen::Vector3d(0, 0, R + 0.06);
    x.segment<3>(palm(k)) = palm_at;
    for (int i = 0; i < N; ++i) {  // around the capsule's middle, 1 cm off its surface
      const double ang = 2 * M_PI * (i + 0.5 + start * 0.381966) / N;
      const Eigen::Vector3d f = o + Rk * Eigen::Vector3d(H * std::cos(ang) * 0.8, (R + 0.01) * std::sin(ang), 0.02);
      x.segment<3>(finger(i, k)) = f;
      x.segment<3>(contact(i, k)) = f;
    }
    x.segment<3>(contact(N, k)) = palm_at;
    const Eigen::Vector3d end = Rk * Eigen::Vector3d(H, 0, 0);
    x.segment<3>(contact(N + 1, k)) = Eigen::Vector3d(o(0) - end(0), o(1) - end(1), 0);
    x.segment<3>(contact(N + 2, k)) = Eigen::Vector3d(o(0) + end(0), o(1) + end(1), 0);
  }
  for (int j = 0; j < contacts(); ++j)
    for (int m = 0; m < K_ - 1; ++m) x(weight(j, m)) = 0.5;
  return x;
}

void CioProblem::bounds(Eigen::VectorXd& lo, Eigen::VectorXd& hi) const {
  const double inf = std::numeric_limits<double>::infinity();
  lo = Eigen::VectorXd::Constant(size(), -inf);
  hi = Eigen::VectorXd::Constant(size(), inf);
  for (int j = 0; j < contacts(); ++j)
    for (int m = 0; m < K_ - 1; ++m) {
      lo(weight(j, m)) = 0;
      hi(weight(j, m)) = 1;
    }
  // the object's keyframes stay above the ground (between them the penetration cost
  // holds it), and it starts where the task puts it
  for (int k = 0; k < K_; ++k) lo(obj(k) + 2) = task_.radius;
  lo.segment<3>(obj(0)) = hi.segment<3>(obj(0)) = task_.start;
  // and, unless the task says otherwise, ends at the target: a constraint, not a penalty
  // traded against the others (as a penalty, the force gate's costs left plans 1-2 cm short)
  if (task_.target_as_bound) lo.segment<3>(obj(K_ - 1)) = hi.segment<3>(obj(K_ - 1)) = task_.target;
  if (task_.target_as_bound && task_.turn != 0)  // and turned as the task says
    lo.segment<3>(rot(K_ - 1)) = hi.segment<3>(rot(K_ - 1)) = Eigen::Vector3d(0, 0, task_.turn);
  for (int k = 0; k < (task_.free_orientation ? 1 : K_); ++k) {  // and with the orientation it starts in
    lo.segment<3>(rot(k)).setZero();
    hi.segment<3>(rot(k)).setZero();
  }
}

// one sample's values and the costs' gradients with respect to them
struct CioProblem::Sample {
  SplineWeights w;
  int interval = 0;
  Eigen::Vector3d xo, ao, xp, ap;
  std::vector<Eigen::Vector3d> p, ap_i, r;
  std::vector<double> c;
  // gradients
  Eigen::Vector3d g_xo = Eigen::Vector3d::Zero(), g_vo = Eigen::Vector3d::Zero(), g_ao = Eigen::Vector3d::Zero(), g_xp = Eigen::Vector3d::Zero(),
                  g_ap = Eigen::Vector3d::Zero();
  std::vector<Eigen::Vector3d> g_p, g_api, g_r;
  std::vector<double> g_c;
  std::vector<CapsuleProjection> proj;
  std::vector<Eigen::Vector3d> eo, eh;
  std::vector<double> gamma, ceff;  // the gate γ(e) and c γ, per contact
  // the orientation (SLERP): q, the world inertia, ω; gradients with respect to a left
  // rotation-vector perturbation ε of q(t) and to ω
  SlerpSample sl;
  Eigen::Matrix3d Iw;
  Eigen::Vector3d g_rot = Eigen::Vector3d::Zero(), g_om = Eigen::Vector3d::Zero();

  // a cost's gradient with respect to e^O / e^H of contact j, pushed to r, x_O and the hand
  void push_eo(int j, const Eigen::Vector3d& g) {
    const CapsuleProjection& pr = proj[static_cast<size_t>(j)];
    g_r[static_cast<size_t>(j)] += (pr.dpoint_dx - Eigen::Matrix3d::Identity()).transpose() * g;
    g_xo += pr.dpoint_dp.transpose() * g;
    g_rot += pr.dpoint_drot.transpose() * g;
  }
  void push_eh(int j, int N, const Eigen::Vector3d& g) {
    if (j < N) {
      g_p[static_cast<size_t>(j)] += g;
      g_r[static_cast<size_t>(j)] -= g;
    } else if (j == N) {
      g_xp += g;
      g_r[static_cast<size_t>(j)] -= g;
    } else {
      g_r[static_cast<size_t>(j)] += Eigen::Vector3d(0, 0, -g(2));  // e^H = (0, 0, −r_z)
    }
  }
};

std::vector<CioProblem::Sample> CioProblem::sample_values(const Eigen::VectorXd& x, const CioWeights& w) const {
  const int N = task_.fingers, J = contacts(), S = S_, K = K_;
  const double T = task_.duration, dt = task_.dt;
  const std::vector<Eigen::Quaterniond> keys = orientations(x);
  std::vector<Sample> at(static_cast<size_t>(S));
  for (int s = 0; s < S; ++s) {
    Sample& a = at[static_cast<size_t>(s)];
    const double t = std::min(T, s * dt);
    a.w = catmull_rom_weights(K, T, t);
    a.interval = a.w.interval;
    auto interp = [&](auto off, const Eigen::VectorXd& wt) {
      Eigen::Vector3d v = Eigen::Vector3d::Zero();
      for (int k = a.w.first; k <= a.w.last; ++k) v += wt(k) * block(x, off(k));
      return v;
    };
    a.xo = interp([&](int k) { return obj(k); }, a.w.value);
    a.ao = interp([&](int k) { return obj(k); }, a.w.acceleration);
    a.xp = interp([&](int k) { return palm(k); }, a.w.value);
    a.ap = interp([&](int k) { return palm(k); }, a.w.acceleration);
    for (int i = 0; i < N; ++i) {
      a.p.push_back(interp([&](int k) { return finger(i, k); }, a.w.value));
      a.ap_i.push_back(interp([&](int k) { return finger(i, k); }, a.w.acceleration));
    }
    for (int j = 0; j < J; ++j) {
      a.r.push_back(interp([&](int k) { return contact(j, k); }, a.w.value));
      a.c.push_back(x(weight(j, a.interval)));
    }
    a.g_p.assign(static_cast<size_t>(N), Eigen::Vector3d::Zero());
    a.g_api.assign(static_cast<size_t>(N), Eigen::Vector3d::Zero());
    a.g_r.assign(static_cast<size_t>(J), Eigen::Vector3d::Zero());
    a.g_c.assign(static_cast<size_t>(J), 0.0);
    a.sl = slerp_keyframes(keys, T, t);
    a.Iw = world_inertia(a.sl.q);
    const Capsule cap = capsule_at(a.xo, a.sl.q);
    for (int j = 0; j < J; ++j) {
      a.proj.push_back(project_to_capsule(cap, a.r[static_cast<size_t>(j)]));
      Eigen::Vector3d eo, eh;
      contact_errors(a.proj.back().point, j, N, a.r[static_cast<size_t>(j)], j < N ? a.p[static_cast<size_t>(j)] : a.xp, eo, eh);
      a.eo.push_back(eo);
      a.eh.push_back(eh);
      const double gm = gate(a.eo.back(), a.eh.back(), w.gate);
      a.gamma.push_back(gm);
      a.ceff.push_back(a.c[static_cast<size_t>(j)] * gm);
    }
  }
  return at;
}

// contact invariance: c (‖e‖² + ‖ė‖²) per contact and sample
void CioProblem::add_contact_invariance(std::vector<Sample>& at, const CioWeights& w, bool want_grad, CioTerms& tm) const {
  const int N = task_.fingers, J = contacts(), S = S_;
  const double dt = task_.dt;
  auto push_eo = [&](int s, int j, const Eigen::Vector3d& g) { at[static_cast<size_t>(s)].push_eo(j, g); };
  auto push_eh = [&](int s, int j, const Eigen::Vector3d& g) { at[static_cast<size_t>(s)].push_eh(j, task_.fingers, g); };
  for (int s = 0; s < S; ++s) {
    Sample& a = at[static_cast<size_t>(s)];
    for (int j = 0; j < J; ++j) {
      const double c = a.c[static_cast<size_t>(j)];
      const Eigen::Vector3d& eo = a.eo[static_cast<size_t>(j)];
      const Eigen::Vector3d& eh = a.eh[static_cast<size_t>(j)];
      double e2 = eo.squaredNorm() + eh.squaredNorm();
      if (want_grad) {
        push_eo(s, j, w.ci * dt * c * 2 * eo);
        push_eh(s, j, w.ci * dt * c * 2 * eh);
      }
      if (s + 1 < S && !w.no_slip) {  // the notes' ė: the rate of e
        const Sample& b = at[static_cast<size_t>(s + 1)];
        const Eigen::Vector3d deo = (b.eo[static_cast<size_t>(j)] - eo) / dt, deh = (b.eh[static_cast<size_t>(j)] - eh) / dt;
        e2 += deo.squaredNorm() + deh.squaredNorm();
        if (want_grad) {
          const Eigen::Vector3d go = w.ci * dt * c * 2 * deo / dt, gh = w.ci * dt * c * 2 * deh / dt;
          push_eo(s + 1, j, go);
          push_eo(s, j, -go);
          push_eh(s + 1, j, gh);
          push_eh(s, j, -gh);
        }
      } else if (s + 1 < S) {
        // ė: the contact point's velocity relative to the material points it touches,
        // the object's (ẋ_O + ω × (r − x_O)) and the hand's, or the ground's (at rest):
        // an active contact does not slide
        const Sample& b = at[static_cast<size_t>(s + 1)];
        const Eigen::Vector3d dr = (b.r[static_cast<size_t>(j)] - a.r[static_cast<size_t>(j)]) / dt;
        const Eigen::Vector3d arm = a.r[static_cast<size_t>(j)] - a.xo;
        const Eigen::Vector3d deo = (b.xo - a.xo) / dt + a.sl.omega.cross(arm) - dr;
        Eigen::Vector3d dh = Eigen::Vector3d::Zero();
        if (j < N)
          dh = (b.p[static_cast<size_t>(j)] - a.p[static_cast<size_t>(j)]) / dt;
        else if (j == N)
          dh = (b.xp - a.xp) / dt;
        const Eigen::Vector3d deh = dh - dr;
        e2 += deo.squaredNorm() + deh.squaredNorm();
        if (want_grad) {
          const Eigen::Vector3d go = w.ci * dt * c * 2 * deo / dt, gh = w.ci * dt * c * 2 * deh / dt;
          Sample& bm = at[static_cast<size_t>(s + 1)];
          bm.g_xo += go;
          a.g_xo -= go;
          bm.g_r[static_cast<size_t>(j)] -= go + gh;
          a.g_r[static_cast<size_t>(j)] += go + gh;
          // ω × arm: d/dω = −[arm]×, d/darm = [ω]×; arm = r − x_O
          const Eigen::Vector3d gt = go * dt;  // go is per 1/dt
          a.g_om += arm.cross(gt);
          const Eigen::Vector3d garm = -a.sl.omega.cross(gt);
          a.g_r[static_cast<size_t>(j)] += garm;
          a.g_xo -= garm;
          if (j < N) {
            bm.g_p[static_cast<size_t>(j)] += gh;
            a.g_p[static_cast<size_t>(j)] -= gh;
          } else if (j == N) {
            bm.g_xp += gh;
            a.g_xp -= gh;
          }
        }
      }
      tm.ci += w.ci * dt * c * e2;
      if (want_grad) a.g_c[static_cast<size_t>(j)] += w.ci * dt * e2;
    }
  }

}

// physics: one batch of the inner QPs over the samples
void CioProblem::add_physics(std::vector<Sample>& at, const CioWeights& w, bool want_grad, CioTerms& tm) const {
  const int N = task_.fingers, J = contacts(), S = S_;
  const double dt = task_.dt;
  auto push_eo = [&](int s, int j, const Eigen::Vector3d& g) { at[static_cast<size_t>(s)].push_eo(j, g); };
  auto push_eh = [&](int s, int j, const Eigen::Vector3d& g) { at[static_cast<size_t>(s)].push_eh(j, task_.fingers, g); };
  {
    std::vector<PhysicsSample> ps;
    // a knot between samples s − 1 and s: sample s's forces turn ω_{s−1} into ω_s
    auto knot = [&](int s) { return w.knot_forces && s > 0 && at[static_cast<size_t>(s)].sl.interval != at[static_cast<size_t>(s - 1)].sl.interval; };
    for (int s = 0; s < S; ++s) {
      const Sample& a = at[static_cast<size_t>(s)];
      const Sample& prev = at[static_cast<size_t>(std::max(0, s - 1))];
      ps.push_back(physics_sample(a.xo, a.ao, a.sl.q, a.sl.omega, a.r, a.ceff,
                                  knot_rate(w.knot_forces, a.sl.interval, prev.sl.interval, a.Iw, a.sl.omega, prev.sl.omega, dt)));
    }
    const std::vector<PhysicsGradient> pg = physics_values(ps, physics_options(w, 1));
    for (int s = 0; s < S; ++s) {
      const PhysicsGradient& g = pg[static_cast<size_t>(s)];
      tm.physics += w.physics * dt * g.value;
      if (!want_grad) continue;
      Sample& a = at[static_cast<size_t>(s)];
      const double f = w.physics * dt;
      a.g_xo += f * g.d_x_obj;
      a.g_ao += f * g.d_accel;
      {  // L̇ = ω × I_w ω: ∂/∂ω = [ω]× I_w − [I_w ω]×, ∂/∂ε = [ω]× (I_w [ω]× − [I_w ω]×)
        const Eigen::Vector3d& om = a.sl.omega;
        const Eigen::Vector3d gl = f * g.d_Ldot;
        a.g_om += (skew(om) * a.Iw - skew(a.Iw * om)).transpose() * gl;
        a.g_rot += (skew(om) * (a.Iw * skew(om) - skew(a.Iw * om))).transpose() * gl;
        if (knot(s)) {  // + I_w u / dt, u = ω_s − ω_{s−1}; δ(I_w u) = (I_w [u]× − [I_w u]×) ε
          Sample& prev = at[static_cast<size_t>(s - 1)];
          const Eigen::Vector3d u = om - prev.sl.omega;
          a.g_om += a.Iw * gl / dt;
          prev.g_om -= a.Iw * gl / dt;
          a.g_rot += (a.Iw * skew(u) - skew(a.Iw * u)).transpose() * gl / dt;
        }
      }
      for (int j = 0; j < J; ++j) {
        a.g_r[static_cast<size_t>(j)] += f * g.d_r[static_cast<size_t>(j)];
        // c_eff = c γ(e): to c, and through γ' = −γ²/δ² · 2e to e^O and e^H
        const double dce = f * g.d_c[static_cast<size_t>(j)], gm = a.gamma[static_cast<size_t>(j)];
        a.g_c[static_cast<size_t>(j)] += dce * gm;
        if (w.gate > 0) {
          const double k = -dce * a.c[static_cast<size_t>(j)] * gm * gm / (w.gate * w.gate) * 2;
          push_eo(s, j, k * a.eo[static_cast<size_t>(j)]);
          push_eh(s, j, k * a.eh[static_cast<size_t>(j)]);
        }
        if (j <= N) {  // the frame follows the capsule's normal at r_j's projection: n = −normal
          const Eigen::Vector3d dn =
              f * contact_frame_gradient_to_normal(ps[static_cast<size_t>(s)].frame[static_cast<size_t>(j)].col(0),
                                                   g.d_frame[static_cast<size_t>(j)]);
          const CapsuleProjection& pr = a.proj[static_cast<size_t>(j)];
          a.g_r[static_cast<size_t>(j)] -= pr.dnormal_dx.transpose() * dn;
          a.g_xo -= pr.dnormal_dp.transpose() * dn;
          a.g_rot -= pr.dnormal_drot.transpose() * dn;
        }
      }
    }
  }

}

// the task: at the target at rest, and at rest over the first interval
void CioProblem::add_task(std::vector<Sample>& at, const Eigen::VectorXd& x, const CioWeights& w, bool want_grad,
                          CioTerms& tm) const {
  const int S = S_;
  {
    Sample& a = at[static_cast<size_t>(S - 1)];
    const Eigen::Vector3d d = a.xo - task_.target;
    tm.task = w.task * d.squaredNorm();
    if (want_grad) a.g_xo += 2 * w.task * d;
    // at rest at the end, and over the whole first interval (the capsule waits on the
    // floor while the hand reaches it: it must leave the floor from rest, which the
    // Catmull-Rom tangent at the first inner knot otherwise contradicts)
    std::vector<int> rest = {S - 1};
    for (int s = 0; s < S && at[static_cast<size_t>(s)].w.interval == 0; ++s) rest.push_back(s);
    for (int e : rest) {
      Sample& b = at[static_cast<size_t>(e)];
      Eigen::Vector3d v = Eigen::Vector3d::Zero();
      for (int k = b.w.first; k <= b.w.last; ++k) v += b.w.velocity(k) * block(x, obj(k));
      tm.task += w.task * v.squaredNorm();
      if (want_grad) b.g_vo += 2 * w.task * v;
      const Eigen::Vector3d& om = b.sl.omega;  // and not turning
      tm.task += w.task * om.squaredNorm();
      if (want_grad) b.g_om += 2 * w.task * om;
    }
  }
}

// SLERP's ω is constant on each interval and jumps at the knots: the jump takes an
// angular impulse I_w Δω. Without knot_forces (the notes) it is charged as the physics
// term charges an unexplained moment over one sample, w_physics w_M ‖I_w Δω / dt‖² dt;
// with them, the knot's sample asks its forces for it (above)
void CioProblem::add_knot_jumps(std::vector<Sample>& at, const CioWeights& w, bool want_grad, CioTerms& tm) const {
  const int S = S_;
  const double dt = task_.dt;
  for (int s = 1; s < S && !w.knot_forces; ++s) {
    Sample& a = at[static_cast<size_t>(s - 1)];
    Sample& b = at[static_cast<size_t>(s)];
    if (a.sl.interval == b.sl.interval) continue;
    const Eigen::Vector3d dL = b.Iw * (b.sl.omega - a.sl.omega);
    const double f = w.physics * moment_weight_ / dt;
    tm.physics += f * dL.squaredNorm();
    if (want_grad) {
      const Eigen::Vector3d g = 2 * f * b.Iw * dL;  // I_w symmetric
      b.g_om += g;
      a.g_om -= g;
      // I_w = R I_b Rᵀ turns with ε: δ(I_w u) = [ε]× I_w u − I_w [ε]× u = (I_w [u]× − [I_w u]×) ε
      const Eigen::Vector3d u = b.sl.omega - a.sl.omega;
      b.g_rot += (b.Iw * skew(u) - skew(b.Iw * u)).transpose() * (2 * f * dL);
    }
  }
}

// penetration (the hand into the capsule or the ground, the capsule into the ground),
// the fingers' reach from the palm, and smoothness (the hand's accelerations)
void CioProblem::add_penetration_reach_smooth(std::vector<Sample>& at, const CioWeights& w, bool want_grad,
                                              CioTerms& tm) const {
  const int N = task_.fingers, S = S_;
  const double dt = task_.dt, R = task_.radius;
  for (int s = 0; s < S; ++s) {
    Sample& a = at[static_cast<size_t>(s)];
    const Capsule cap = capsule_at(a.xo, a.sl.q);
    const double f = w.penetration * dt;
    for (int i = 0; i <= N; ++i) {  // fingertips, then the palm
      const Eigen::Vector3d& h = i < N ? a.p[static_cast<size_t>(i)] : a.xp;
      Eigen::Vector3d& gh = i < N ? a.g_p[static_cast<size_t>(i)] : a.g_xp;
      const CapsuleProjection pr = project_to_capsule(cap, h);
      if (pr.distance < 0) {
        tm.penetration += f * pr.distance * pr.distance;
        if (want_grad) {
          gh += f * 2 * pr.distance * pr.ddistance_dx.transpose();
          a.g_xo += f * 2 * pr.distance * pr.ddistance_dp.transpose();
          a.g_rot += f * 2 * pr.distance * pr.ddistance_drot.transpose();
        }
      }
      if (h(2) < 0) {
        tm.penetration += f * h(2) * h(2);
        if (want_grad) gh(2) += f * 2 * h(2);
      }
      if (i < N) {
        const Eigen::Vector3d v = h - a.xp;
        const double over = v.norm() - task_.reach;
        if (over > 0) {
          tm.reach += w.reach * dt * over * over;
          if (want_grad) {
            const Eigen::Vector3d g = w.reach * dt * 2 * over * v / v.norm();
            gh += g;
            a.g_xp -= g;
          }
        }
      }
    }
    {  // the capsule's end spheres, centres x_O ± H·axis, below the ground
      const Eigen::Vector3d axis = a.sl.q * Eigen::Vector3d::UnitX();
      const double H = task_.half_length;
      for (int e = -1; e <= 1; e += 2) {
        const double low = a.xo(2) + e * H * axis(2) - R;
        const Eigen::Vector3d dlow_drot = e * H * Eigen::Vector3d(axis(1), -axis(0), 0);  // δaxis = ε × axis
        if (low >= 0) continue;
        const double fg = w.ground * dt;
        tm.penetration += fg * low * low;
        if (want_grad) {
          a.g_xo(2) += fg * 2 * low;
          a.g_rot += fg * 2 * low * dlow_drot;
        }
      }
    }
    tm.smooth += w.smooth * dt * a.ap.squaredNorm();
    if (want_grad) a.g_ap += w.smooth * dt * 2 * a.ap;
    for (int i = 0; i < N; ++i) {
      tm.smooth += w.smooth * dt * a.ap_i[static_cast<size_t>(i)].squaredNorm();
      if (want_grad) a.g_api[static_cast<size_t>(i)] += w.smooth * dt * 2 * a.ap_i[static_cast<size_t>(i)];
    }
  }
}

// the samples' gradients to the variables: the keyframes through the splines'
// weights, the contact weights, and the orientations per sample to the interval's two
// keyframes (left perturbations δ_k), then to the rotation vectors,
// exp(φ + dφ) = exp(J_l(φ) dφ) exp(φ)
void CioProblem::chain_to_variables(const std::vector<Sample>& at, const Eigen::VectorXd& x, Eigen::VectorXd& G) const {
  const int N = task_.fingers, J = contacts(), S = S_, K = K_;
  for (int s = 0; s < S; ++s) {
    const Sample& a = at[static_cast<size_t>(s)];
    for (int k = a.w.first; k <= a.w.last; ++k) {
      const double v = a.w.value(k), acc = a.w.acceleration(k);
      G.segment<3>(obj(k)) += v * a.g_xo + a.w.velocity(k) * a.g_vo + acc * a.g_ao;
      G.segment<3>(palm(k)) += v * a.g_xp + acc * a.g_ap;
      for (int i = 0; i < N; ++i)
        G.segment<3>(finger(i, k)) += v * a.g_p[static_cast<size_t>(i)] + acc * a.g_api[static_cast<size_t>(i)];
      for (int j = 0; j < J; ++j) G.segment<3>(contact(j, k)) += v * a.g_r[static_cast<size_t>(j)];
    }
    for (int j = 0; j < J; ++j) G(weight(j, a.interval)) += a.g_c[static_cast<size_t>(j)];
  }
  std::vector<Eigen::Vector3d> g_key(static_cast<size_t>(K), Eigen::Vector3d::Zero());
  for (int s = 0; s < S; ++s) {
    const Sample& a = at[static_cast<size_t>(s)];
    const size_t i = static_cast<size_t>(a.sl.interval);
    g_key[i] += a.sl.dq_dkey0.transpose() * a.g_rot + a.sl.domega_dkey0.transpose() * a.g_om;
    g_key[i + 1] += a.sl.dq_dkey1.transpose() * a.g_rot + a.sl.domega_dkey1.transpose() * a.g_om;
  }
  for (int k = 0; k < K; ++k)
    G.segment<3>(rot(k)) += so3_left_jacobian(x.segment<3>(rot(k))).transpose() * g_key[static_cast<size_t>(k)];
}

double CioProblem::evaluate(const Eigen::VectorXd& x, const CioWeights& w, Eigen::VectorXd* grad, CioTerms* terms) const {
  if (x.size() != size()) throw Error("plan: " + std::to_string(x.size()) + " variables, expected " + std::to_string(size()));
  if (!x.allFinite()) throw Error("plan: non-finite variables");
  const int J = contacts(), K = K_;
  CioTerms tm;
  if (grad) grad->setZero(size());
  const bool want_grad = grad != nullptr;
  // per-sample values, then each cost's value and its gradient with respect to them
  std::vector<Sample> at = sample_values(x, w);
  add_contact_invariance(at, w, want_grad, tm);
  add_physics(at, w, want_grad, tm);
  add_task(at, x, w, want_grad, tm);
  add_knot_jumps(at, w, want_grad, tm);
  add_penetration_reach_smooth(at, w, want_grad, tm);
  if (w.weight_bounds > 0)  // the notes' c ∈ [0, 1] as a penalty (counted with penetration)
    for (int j = 0; j < J; ++j)
      for (int m = 0; m + 1 < K; ++m) {
        const double c = x(weight(j, m)), v = c < 0 ? c : (c > 1 ? c - 1 : 0.0);
        tm.penetration += w.weight_bounds * v * v;
        if (grad) (*grad)(weight(j, m)) += 2 * w.weight_bounds * v;
      }
  tm.total = tm.ci + tm.physics + tm.task + tm.penetration + tm.reach + tm.smooth;
  if (terms) *terms = tm;
  if (!grad) return tm.total;
  chain_to_variables(at, x, *grad);
  return tm.total;
}

std::vector<CioSample> CioProblem::samples(const Eigen::VectorXd& x, const CioWeights& w, double dt) const {
  const int N = task_.fingers, J = contacts();
  if (!(dt >= 0) || (dt > 0 && dt > task_.duration)) throw Error("plan: sample dt must be in (0, duration]");
  if (dt == 0) dt = task_.dt;
  const int S = static_cast<int>(std::lround(task_.duration / dt)) + 1;
  const std::vector<Eigen::Quaterniond> keys = orientations(x);
  std::vector<CioSample> out;
  std::vector<PhysicsSample> ps;
  int interval_before = 0;
  for (int s = 0; s < S; ++s) {
    const double t = std::min(task_.duration, s * dt);
    const SplineWeights sw = catmull_rom_weights(K_, task_.duration, t);
    auto interp = [&](auto off, const Eigen::VectorXd& wt) {
      Eigen::Vector3d v = Eigen::Vector3d::Zero();
      for (int k = sw.first; k <= sw.last; ++k) v += wt(k) * block(x, off(k));
      return v;
    };
    CioSample c;
    c.t = t;
    c.x_obj = interp([&](int k) { return obj(k); }, sw.value);
    c.velocity = interp([&](int k) { return obj(k); }, sw.velocity);
    c.accel = interp([&](int k) { return obj(k); }, sw.acceleration);
    c.palm = interp([&](int k) { return palm(k); }, sw.value);
    const SlerpSample sl = slerp_keyframes(keys, task_.duration, t);
    c.q = sl.q;
    c.omega = sl.omega;
    for (int i = 0; i < N; ++i) c.fingertips.push_back(interp([&](int k) { return finger(i, k); }, sw.value));
    const Capsule cap = capsule_at(c.x_obj, c.q);
    std::vector<double> ceff;
    for (int j = 0; j < J; ++j) {
      c.contacts.push_back(interp([&](int k) { return contact(j, k); }, sw.value));
      c.c.push_back(x(weight(j, sw.interval)));
      Eigen::Vector3d eo, eh;
      contact_errors(project_to_capsule(cap, c.contacts.back()).point, j, N, c.contacts.back(),
                     j < N ? c.fingertips[static_cast<size_t>(j)] : c.palm, eo, eh);
      c.gate.push_back(gate(eo, eh, w.gate));
      ceff.push_back(c.c.back() * c.gate.back());
    }
    const Eigen::Vector3d rate = out.empty() ? Eigen::Vector3d::Zero()
                                             : knot_rate(w.knot_forces, sl.interval, interval_before, world_inertia(c.q), c.omega,
                                                         out.back().omega, dt);
    interval_before = sl.interval;
    ps.push_back(physics_sample(c.x_obj, c.accel, c.q, c.omega, c.contacts, ceff, rate));
    out.push_back(c);
  }
  const std::vector<PhysicsGradient> pg = physics_values(ps, physics_options(w, 0));
  for (size_t s = 0; s < out.size(); ++s) {
    for (int j = 0; j < J; ++j)
      out[s].forces.push_back(out[s].c[static_cast<size_t>(j)] * out[s].gate[static_cast<size_t>(j)] * pg[s].force[static_cast<size_t>(j)]);
    out[s].residual_force = pg[s].residual_force;
    out[s].residual_moment = pg[s].residual_moment;
  }
  return out;
}

CioOptions notes_options(int iterations) {
  CioOptions o;
  o.stages = {{1e4, 1e4, iterations}};
  o.weights.no_slip = false;
  o.weights.cones = false;
  o.weights.weight_bounds = 1e4;
  o.weights.ground = o.weights.penetration;  // one penetration weight
  o.weights.gate = 0;                         // every contact pushes with c F
  o.weights.knot_forces = false;              // ω's jumps charged only
  o.finite_differences = true;
  return o;
}

CioGaps contact_gaps(const CioProblem& pb, const Eigen::VectorXd& theta, const CioWeights& w) {
  return contact_gaps(pb, pb.samples(theta, w));
}

CioGaps contact_gaps(const CioProblem& pb, const std::vector<CioSample>& samples) {
  const int N = pb.task().fingers, J = pb.contacts();
  CioGaps g;
  for (const CioSample& s : samples) {
    const Capsule cap = pb.capsule_at(s.x_obj, s.q);
    for (int j = 0; j < J; ++j) {
      if (s.c[static_cast<size_t>(j)] <= 0.5 && !(s.forces[static_cast<size_t>(j)].norm() > kPlanActiveForce * pb.mass() * 9.81)) continue;
      const Eigen::Vector3d& r = s.contacts[static_cast<size_t>(j)];
      ++g.active;
      g.object = std::max(g.object, std::abs(project_to_capsule(cap, r).distance));
      double hg = 0;
      if (j < N)
        hg = (s.fingertips[static_cast<size_t>(j)] - r).norm();
      else if (j == N)
        hg = (s.palm - r).norm();
      else
        hg = std::abs(r(2));
      g.hand = std::max(g.hand, hg);
    }
  }
  return g;
}

CioResult optimize_cio(const CioProblem& problem, const CioOptions& opt) {
  if (opt.stages.empty()) throw Error("plan: no optimization stages");
  const auto t0 = std::chrono::steady_clock::now();
  CioResult res;
  if (opt.start.size() != 0 && opt.start.size() != problem.size())
    throw Error("plan: the start has " + std::to_string(opt.start.size()) + " variables, expected " + std::to_string(problem.size()));
  res.theta = opt.start.size() != 0 ? opt.start : problem.initial_guess();
  Eigen::VectorXd lo, hi;
  problem.bounds(lo, hi);
  if (opt.weights.weight_bounds > 0)  // c's bounds are a penalty instead
    for (int j = 0; j < problem.contacts(); ++j)
      for (int m = 0; m + 1 < problem.task().keyframes; ++m) {
        lo(problem.weight(j, m)) = -std::numeric_limits<double>::infinity();
        hi(problem.weight(j, m)) = std::numeric_limits<double>::infinity();
      }
  // the stages, then the last one again while the plan's active contacts are farther
  // than kPlanContactGap from the object or the hand (at most opt.polish_rounds more):
  // the schedule's iteration budgets end short of convergence, and where they stop
  // depends on the arithmetic's last bits (the default three-finger plan ended 0.9 mm
  // from the object compiled with fused multiply-adds, 2.1 mm without)
  const size_t last = opt.stages.size() - 1;
  for (size_t round = 0; round < opt.stages.size() + static_cast<size_t>(std::max(0, opt.polish_rounds)); ++round) {
    if (round > last) {
      const CioGaps gaps = contact_gaps(problem, res.theta, opt.weights);  // as check_plan sees it
      if (gaps.object <= kPlanContactGap && gaps.hand <= kPlanContactGap) break;
      ++res.polish_rounds;
    }
    const size_t st = std::min(round, last);
    CioWeights w = opt.weights;
    w.ci = opt.stages[st].ci;
    w.physics = opt.stages[st].physics;
    // the floor's penalty rises with the physics weight, reaching `ground` in the last stage
    w.ground = opt.weights.ground * opt.stages[st].physics / opt.stages.back().physics;
    // the force gate tightens as the physics weight rises, reaching `gate` in the last stage
    // (δ ∝ 1/√w_physics: at the first stages no gate, the contacts still far from the object)
    w.gate = opt.weights.gate * std::sqrt(opt.stages.back().physics / opt.stages[st].physics);
    Eigen::VectorXd best = res.theta;
    double best_f = problem.evaluate(best, w);
    int iteration = 0;
    auto f = [&](const Eigen::VectorXd& x, Eigen::VectorXd& g) {
      CioTerms tm;
      double v = 0;
      if (opt.finite_differences) {
        v = problem.evaluate(x, w, nullptr, &tm);
        g.resize(x.size());
        Eigen::VectorXd y = x;
        for (Eigen::Index i = 0; i < x.size(); ++i) {
          const double h = 1e-6 * std::max(1.0, std::abs(x(i)));
          y(i) = x(i) + h;
          g(i) = (problem.evaluate(y, w) - v) / h;
          y(i) = x(i);
        }
      } else {
        v = problem.evaluate(x, w, &g, &tm);
      }
      if (v < best_f) {
        best_f = v;
        best = x;
      }
      if (opt.progress) opt.progress(static_cast<int>(st), ++iteration, tm);
      return v;
    };
    LBFGSpp::LBFGSBParam<double> param;
    param.max_iterations = opt.stages[st].iterations;
    param.epsilon = 1e-8;
    param.max_linesearch = 40;
    LBFGSpp::LBFGSBSolver<double> solver(param);
    Eigen::VectorXd x = res.theta;
    double fx = 0;
    try {
      solver.minimize(f, x, fx, lo, hi);
    } catch (const std::exception&) {
      // a line search that cannot progress (LBFGS++ throws runtime_error or, when the
      // direction does not descend, logic_error): keep the best point seen
    }
    res.theta = best;
    CioTerms tm;
    problem.evaluate(res.theta, w, nullptr, &tm);
    res.stage_terms.push_back(tm);
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace impulse
