// Rigid-body state and kinematics shared by the simulator, the learning losses
// and the rollouts. SI units throughout.
//
// State x = [p (3, world); quaternion (w, x, y, z), body -> world (4);
//            v (3, linear velocity of the centre of mass, world);
//            ω (3, angular velocity, body frame)]            (13 numbers)
// Generalized velocity ν = [v; ω] (6). Configuration q = [p; quaternion] (7).
// q̇ = Γ(q) ν with Γ = blockdiag(I3, ½ G(quat)), where the quaternion rate of
// a body-frame angular velocity is ½ quat ⊗ (0, ω).
#pragma once

#include <cmath>

#include <Eigen/Dense>

namespace impulse {

using State = Eigen::Matrix<double, 13, 1>;
using Vec6 = Eigen::Matrix<double, 6, 1>;
using Mat6 = Eigen::Matrix<double, 6, 6>;

struct BodyParams {
  double mass = 0.37;                                           // kg
  Eigen::Matrix3d inertia = Eigen::Matrix3d::Identity() * 0.00081;  // kg m², body frame
  double gravity = 9.81;                                        // m/s², along −z world
  // generalized mass matrix in ν coordinates: blockdiag(m I3, I_body).
  Mat6 mass_matrix() const {
    Mat6 M = Mat6::Zero();
    M.topLeftCorner<3, 3>() = Eigen::Matrix3d::Identity() * mass;
    M.bottomRightCorner<3, 3>() = inertia;
    return M;
  }
  Mat6 mass_matrix_inverse() const {
    Mat6 Mi = Mat6::Zero();
    Mi.topLeftCorner<3, 3>() = Eigen::Matrix3d::Identity() / mass;
    Mi.bottomRightCorner<3, 3>() = inertia.inverse();
    return Mi;
  }
};

inline Eigen::Vector3d position(const State& x) { return x.segment<3>(0); }
inline Eigen::Quaterniond orientation(const State& x) {
  return Eigen::Quaterniond(x(3), x(4), x(5), x(6));
}
inline Eigen::Matrix3d rotation(const State& x) { return orientation(x).normalized().toRotationMatrix(); }
inline Vec6 velocity(const State& x) { return x.segment<6>(7); }

inline State make_state(const Eigen::Vector3d& p, const Eigen::Quaterniond& q,
                        const Eigen::Vector3d& v, const Eigen::Vector3d& w) {
  State x;
  x.segment<3>(0) = p;
  x(3) = q.w(); x(4) = q.x(); x(5) = q.y(); x(6) = q.z();
  x.segment<3>(7) = v;
  x.segment<3>(10) = w;
  return x;
}

inline Eigen::Matrix3d skew(const Eigen::Vector3d& a) {
  Eigen::Matrix3d S;
  S << 0, -a.z(), a.y(), a.z(), 0, -a.x(), -a.y(), a.x(), 0;
  return S;
}

// Γ(q): 7 x 6 map from ν to q̇ (quaternion block: ½ quat ⊗ (0, ω)).
inline Eigen::Matrix<double, 7, 6> gamma_matrix(const State& x) {
  const double w = x(3), a = x(4), b = x(5), c = x(6);
  Eigen::Matrix<double, 7, 6> G = Eigen::Matrix<double, 7, 6>::Zero();
  G.topLeftCorner<3, 3>().setIdentity();
  Eigen::Matrix<double, 4, 3> Q;
  Q << -a, -b, -c,
        w, -c,  b,
        c,  w, -a,
       -b,  a,  w;
  G.bottomRightCorner<4, 3>() = 0.5 * Q;
  return G;
}

// Semi-implicit step: q' = q + Γ(q) ν' dt with the quaternion renormalized,
// ν' taken as the new velocity.
inline State integrate(const State& x, const Vec6& nu_next, double dt) {
  State y = x;
  y.head<7>() += gamma_matrix(x) * nu_next * dt;
  y.segment<4>(3).normalize();
  y.segment<6>(7) = nu_next;
  return y;
}

// Smooth-force impulse over dt in ν coordinates: gravity on the linear part and
// the gyroscopic term −ω × Iω on the angular part.
inline Vec6 smooth_impulse(const State& x, const BodyParams& body, double dt) {
  Vec6 f;
  f.head<3>() = Eigen::Vector3d(0, 0, -body.gravity * body.mass * dt);
  const Eigen::Vector3d w = x.segment<3>(10);
  f.tail<3>() = -w.cross(body.inertia * w) * dt;
  return f;
}

// Angle (rad) of the rotation between two orientations, by atan2 of the
// relative quaternion so that identical orientations score 0 (acos near 1 loses
// half the digits).
inline double rotation_angle_between(const Eigen::Quaterniond& a, const Eigen::Quaterniond& b) {
  const Eigen::Quaterniond r = a.normalized().conjugate() * b.normalized();
  return 2.0 * std::atan2(r.vec().norm(), std::abs(r.w()));
}

}  // namespace impulse
