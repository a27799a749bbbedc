// Capsule and ground projections with their Jacobians, capsule mass properties
// (host/planning/capsule.h).
#include "host/planning/capsule.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>

#include "solvers/error.h"

namespace impulse {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kUnitNormTolerance = 1e-9;
constexpr double kOnAxisRelative = 1e-12;

std::string num(double v) {
  std::ostringstream os;
  os << std::setprecision(12) << v;
  return os.str();
}

std::string vec(const Eigen::Vector3d& v) {
  return "(" + num(v.x()) + ", " + num(v.y()) + ", " + num(v.z()) + ")";
}

void check_point(const Eigen::Vector3d& x, const std::string& what) {
  if (!x.allFinite()) throw Error(what + " must be finite, got " + vec(x));
}

// [v]×: [v]× w = v × w
Eigen::Matrix3d skew(const Eigen::Vector3d& v) {
  Eigen::Matrix3d S;
  S << 0, -v.z(), v.y(), v.z(), 0, -v.x(), -v.y(), v.x(), 0;
  return S;
}

}  // namespace

void validate_capsule(const Capsule& capsule) {
  if (!std::isfinite(capsule.radius) || !(capsule.radius > 0))
    throw Error("capsule radius must be finite and > 0, got " + num(capsule.radius));
  if (!std::isfinite(capsule.half_length) || !(capsule.half_length >= 0))
    throw Error("capsule half_length must be finite and >= 0, got " + num(capsule.half_length));
  check_point(capsule.position, "capsule position");
  const double norm = capsule.orientation.norm();
  if (!(std::abs(norm - 1.0) <= kUnitNormTolerance))
    throw Error("capsule orientation must be a unit quaternion (| |q| - 1 | <= 1e-9), got norm " + num(norm));
}

CapsuleProjection project_to_capsule(const Capsule& capsule, const Eigen::Vector3d& x) {
  validate_capsule(capsule);
  check_point(x, "point projected onto the capsule");
  const double R = capsule.radius;
  const double H = capsule.half_length;
  const Eigen::Matrix3d rot = capsule.orientation.toRotationMatrix();
  const Eigen::Vector3d w = x - capsule.position;
  const Eigen::Vector3d y = rot.transpose() * w;

  CapsuleProjection out;
  Eigen::Vector3d a = Eigen::Vector3d::Zero();
  if (y.x() >= H) {
    out.region = CapsuleRegion::kCapPlus;
    a.x() = H;
  } else if (y.x() <= -H) {
    out.region = CapsuleRegion::kCapMinus;
    a.x() = -H;
  } else {
    out.region = CapsuleRegion::kSide;
    a.x() = y.x();
  }
  const bool side = out.region == CapsuleRegion::kSide;
  Eigen::Vector3d d = y - a;
  if (side) d.x() = 0;  // exactly orthogonal to the axis
  const double r = d.norm();

  // body-frame point, normal and their Jacobians with respect to y
  Eigen::Vector3d n_b;
  Eigen::Matrix3d dn_dy = Eigen::Matrix3d::Zero();
  Eigen::Matrix3d ds_dy = Eigen::Matrix3d::Zero();
  Eigen::Matrix3d axial = Eigen::Matrix3d::Zero();
  if (side) axial(0, 0) = 1;
  if (r <= kOnAxisRelative * R) {
    out.on_axis = true;
    n_b = Eigen::Vector3d::UnitZ();
    ds_dy = axial;  // the unbounded tangential term is dropped (capsule.h)
  } else {
    n_b = d / r;
    // d n_b / d y = (I − n nᵀ) (dd/dy) / r with dd/dy = I − axial
    Eigen::Matrix3d dd_dy = Eigen::Matrix3d::Identity() - axial;
    dn_dy = (Eigen::Matrix3d::Identity() - n_b * n_b.transpose()) * dd_dy / r;
    ds_dy = axial + R * dn_dy;
  }
  const Eigen::Vector3d s_b = a + R * n_b;

  out.point = capsule.position + rot * s_b;
  out.normal = rot * n_b;
  out.distance = r - R;

  out.dpoint_dx = rot * ds_dy * rot.transpose();
  out.dnormal_dx = rot * dn_dy * rot.transpose();
  out.ddistance_dx = out.normal.transpose();

  out.dpoint_dp = Eigen::Matrix3d::Identity() - out.dpoint_dx;
  out.dnormal_dp = -out.dnormal_dx;
  out.ddistance_dp = -out.normal.transpose();

  const Eigen::Matrix3d wx = skew(w);
  out.dpoint_drot = -skew(out.point - capsule.position) + out.dpoint_dx * wx;
  out.dnormal_drot = -skew(out.normal) + out.dnormal_dx * wx;
  out.ddistance_drot = out.normal.cross(w).transpose();
  return out;
}

GroundProjection project_to_ground(const Eigen::Vector3d& x) {
  check_point(x, "point projected onto the ground");
  GroundProjection out;
  out.point = Eigen::Vector3d(x.x(), x.y(), 0.0);
  out.normal = Eigen::Vector3d::UnitZ();
  out.distance = x.z();
  out.dpoint_dx = Eigen::Vector3d(1, 1, 0).asDiagonal();
  out.ddistance_dx = Eigen::RowVector3d(0, 0, 1);
  return out;
}

LinkInertia capsule_inertia(double radius, double half_length, double density) {
  if (!std::isfinite(radius) || !(radius > 0)) throw Error("capsule radius must be finite and > 0, got " + num(radius));
  if (!std::isfinite(half_length) || !(half_length >= 0))
    throw Error("capsule half_length must be finite and >= 0, got " + num(half_length));
  if (!std::isfinite(density) || !(density > 0))
    throw Error("capsule density must be finite and > 0, got " + num(density));
  const double R = radius, H = half_length, R2 = R * R;
  const double m_c = density * kPi * R2 * 2.0 * H;
  const double m_h = density * (2.0 / 3.0) * kPi * R2 * R;
  const double i_axial = 0.5 * m_c * R2 + 2.0 * 0.4 * m_h * R2;
  const double i_trans = m_c * (0.25 * R2 + H * H / 3.0) + 2.0 * m_h * (0.4 * R2 + H * H + 0.75 * H * R);
  LinkInertia out;
  out.mass = m_c + 2.0 * m_h;
  out.com = Eigen::Vector3d::Zero();
  out.inertia_com = Eigen::Vector3d(i_axial, i_trans, i_trans).asDiagonal();
  return out;
}

}  // namespace impulse
