// Catmull-Rom, SLERP and piecewise-constant keyframe interpolation (host/planning/spline.h).
#include "host/planning/spline.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>

#include "solvers/error.h"

namespace impulse {
namespace {

constexpr double kUnitNormTolerance = 1e-9;
constexpr double kKnotRelative = 1e-12;

std::string num(double v) {
  std::ostringstream os;
  os << std::setprecision(12) << v;
  return os.str();
}

Eigen::Matrix3d skew(const Eigen::Vector3d& v) {
  Eigen::Matrix3d S;
  S << 0, -v.z(), v.y(), v.z(), 0, -v.x(), -v.y(), v.x(), 0;
  return S;
}

// The cubic Hermite basis h00, h10, h01, h11 at u and its first and second u-derivatives.
struct Hermite {
  double b[4], d1[4], d2[4];
  explicit Hermite(double u) {
    const double u2 = u * u, u3 = u2 * u;
    b[0] = 2 * u3 - 3 * u2 + 1;
    b[1] = u3 - 2 * u2 + u;
    b[2] = -2 * u3 + 3 * u2;
    b[3] = u3 - u2;
    d1[0] = 6 * u2 - 6 * u;
    d1[1] = 3 * u2 - 4 * u + 1;
    d1[2] = -6 * u2 + 6 * u;
    d1[3] = 3 * u2 - 2 * u;
    d2[0] = 12 * u - 6;
    d2[1] = 6 * u - 4;
    d2[2] = -12 * u + 6;
    d2[3] = 6 * u - 2;
  }
};

// h·m_k = Σ_j c_j P_j: the (at most two) keyframes and coefficients of the scaled tangent at k.
struct Tangent {
  int lo, hi;
  double c_lo, c_hi;
};
Tangent tangent(int K, int k) {
  if (k == 0) return {0, 1, -1.0, 1.0};
  if (k == K - 1) return {K - 2, K - 1, -1.0, 1.0};
  return {k - 1, k + 1, -0.5, 0.5};
}

void check_keys(const Eigen::MatrixXd& keys, const std::string& what) {
  if (keys.cols() < 2)
    throw Error(what + ": need at least 2 keyframes (columns), got " + std::to_string(keys.cols()));
  if (!keys.allFinite()) throw Error(what + ": keyframes must be finite");
}

// (1 − cos a)/a², (a − sin a)/a³ of J_l and the [φ]×² coefficient 1/a² − cot(a/2)/(2a) of J_l⁻¹
double coef_1(double a) {
  const double s = std::sin(0.5 * a);
  return a < 1e-4 ? 0.5 - a * a / 24.0 : 2.0 * s * s / (a * a);
}
double coef_2(double a) {
  const double a2 = a * a;
  if (a < 1e-2) return 1.0 / 6.0 - a2 / 120.0 + a2 * a2 / 5040.0 - a2 * a2 * a2 / 362880.0;
  return (a - std::sin(a)) / (a2 * a);
}
double coef_inv(double a) {
  const double a2 = a * a;
  if (a < 1e-2) return 1.0 / 12.0 + a2 / 720.0 + a2 * a2 / 30240.0;
  return 1.0 / a2 - 1.0 / (2.0 * a * std::tan(0.5 * a));
}

}  // namespace

double grid_step(int K, double T) {
  if (K < 2) throw Error("spline keyframe count K must be >= 2, got " + std::to_string(K));
  if (!std::isfinite(T) || !(T > 0)) throw Error("spline duration T must be finite and > 0, got " + num(T));
  return T / (K - 1);
}

GridLocation locate_on_grid(int K, double T, double t) {
  const double h = grid_step(K, T);
  const double slack = kKnotRelative * T;
  if (!std::isfinite(t) || t < -slack || t > T + slack)
    throw Error("spline time t = " + num(t) + " is outside [0, T = " + num(T) + "]");
  t = std::clamp(t, 0.0, T);
  double s = t / h;
  const double nearest = std::round(s);
  if (std::abs(s - nearest) <= kKnotRelative * std::max(1.0, s)) s = nearest;
  GridLocation loc;
  const double fl = std::floor(s);
  if (fl >= K - 1) {
    loc.interval = K - 2;
    loc.u = 1.0;
  } else {
    loc.interval = static_cast<int>(fl);
    loc.u = std::clamp(s - fl, 0.0, 1.0);
  }
  return loc;
}

SplineWeights catmull_rom_weights(int K, double T, double t) {
  const double h = grid_step(K, T);
  const GridLocation loc = locate_on_grid(K, T, t);
  const int i = loc.interval;
  const Hermite hb(loc.u);
  SplineWeights w;
  w.interval = i;
  w.u = loc.u;
  w.first = std::max(0, i - 1);
  w.last = std::min(K - 1, i + 2);
  w.value = Eigen::VectorXd::Zero(K);
  w.velocity = Eigen::VectorXd::Zero(K);
  w.acceleration = Eigen::VectorXd::Zero(K);
  const double s1 = 1.0 / h, s2 = 1.0 / (h * h);
  auto add = [&](int k, double c, int basis) {
    w.value(k) += c * hb.b[basis];
    w.velocity(k) += c * hb.d1[basis] * s1;
    w.acceleration(k) += c * hb.d2[basis] * s2;
  };
  add(i, 1.0, 0);
  add(i + 1, 1.0, 2);
  const Tangent m0 = tangent(K, i), m1 = tangent(K, i + 1);
  add(m0.lo, m0.c_lo, 1);
  add(m0.hi, m0.c_hi, 1);
  add(m1.lo, m1.c_lo, 3);
  add(m1.hi, m1.c_hi, 3);
  return w;
}

SplineSample catmull_rom(const Eigen::MatrixXd& keys, double T, double t) {
  check_keys(keys, "Catmull-Rom keyframes");
  const int K = static_cast<int>(keys.cols());
  const double h = grid_step(K, T);
  const GridLocation loc = locate_on_grid(K, T, t);
  const int i = loc.interval;
  // the tangents per unit time, evaluated directly (catmull_rom_weights builds the same sum
  // keyframe by keyframe; the tests compare the two)
  auto slope = [&](int k) -> Eigen::VectorXd {
    if (k == 0) return (keys.col(1) - keys.col(0)) / h;
    if (k == K - 1) return (keys.col(K - 1) - keys.col(K - 2)) / h;
    return (keys.col(k + 1) - keys.col(k - 1)) / (2.0 * h);
  };
  const Eigen::VectorXd m0 = slope(i), m1 = slope(i + 1);
  const Hermite hb(loc.u);
  SplineSample out;
  out.interval = i;
  out.value = hb.b[0] * keys.col(i) + hb.b[1] * h * m0 + hb.b[2] * keys.col(i + 1) + hb.b[3] * h * m1;
  out.velocity = (hb.d1[0] * keys.col(i) + hb.d1[1] * h * m0 + hb.d1[2] * keys.col(i + 1) + hb.d1[3] * h * m1) / h;
  out.acceleration =
      (hb.d2[0] * keys.col(i) + hb.d2[1] * h * m0 + hb.d2[2] * keys.col(i + 1) + hb.d2[3] * h * m1) / (h * h);
  return out;
}

Eigen::Quaterniond rotation_exp(const Eigen::Vector3d& v) {
  const double a = v.norm();
  const double half = 0.5 * a;
  // sin(a/2)/a, with its series near 0
  const double k = a < 1e-6 ? 0.5 - a * a / 48.0 : std::sin(half) / a;
  return Eigen::Quaterniond(std::cos(half), k * v.x(), k * v.y(), k * v.z());
}

Eigen::Vector3d rotation_log(const Eigen::Quaterniond& q) {
  double w = q.w();
  Eigen::Vector3d v = q.vec();
  if (w < 0) {  // the same rotation, the shorter angle
    w = -w;
    v = -v;
  }
  const double n = v.norm();
  // 2·atan2(n, w)/n, with its series for n ≪ w (w ≥ n there, so w > 0)
  const double k = n < 1e-6 * w ? (2.0 / w) * (1.0 - n * n / (3.0 * w * w)) : 2.0 * std::atan2(n, w) / n;
  return k * v;
}

Eigen::Matrix3d so3_left_jacobian(const Eigen::Vector3d& phi) {
  const double a = phi.norm();
  const Eigen::Matrix3d S = skew(phi);
  return Eigen::Matrix3d::Identity() + coef_1(a) * S + coef_2(a) * S * S;
}

Eigen::Matrix3d so3_left_jacobian_inverse(const Eigen::Vector3d& phi) {
  const double a = phi.norm();
  const Eigen::Matrix3d S = skew(phi);
  return Eigen::Matrix3d::Identity() - 0.5 * S + coef_inv(a) * S * S;
}

Eigen::Matrix<double, 4, 3> quaternion_rotation_jacobian(const Eigen::Quaterniond& q) {
  Eigen::Matrix<double, 4, 3> J;
  J.row(0) = -0.5 * q.vec().transpose();
  J.bottomRows<3>() = 0.5 * (q.w() * Eigen::Matrix3d::Identity() - skew(q.vec()));
  return J;
}

SlerpSample slerp_keyframes(const std::vector<Eigen::Quaterniond>& keys, double T, double t) {
  if (keys.size() < 2)
    throw Error("SLERP keyframes: need at least 2 quaternions, got " + std::to_string(keys.size()));
  for (size_t k = 0; k < keys.size(); ++k) {
    const double norm = keys[k].norm();
    if (!(std::abs(norm - 1.0) <= kUnitNormTolerance))
      throw Error("SLERP keyframe " + std::to_string(k) + " must be a unit quaternion (| |q| - 1 | <= 1e-9), got norm " +
                  num(norm));
  }
  const int K = static_cast<int>(keys.size());
  const double h = grid_step(K, T);
  const GridLocation loc = locate_on_grid(K, T, t);
  const int i = loc.interval;
  const double u = loc.u;
  const Eigen::Quaterniond& q0 = keys[i];
  Eigen::Quaterniond q1 = keys[i + 1];
  if (q0.dot(q1) < 0) q1.coeffs() = -q1.coeffs();
  const Eigen::Vector3d theta = rotation_log(q1 * q0.conjugate());
  const Eigen::Vector3d u_theta = u * theta;
  const Eigen::Quaterniond e = rotation_exp(u_theta);

  SlerpSample out;
  out.interval = i;
  out.u = u;
  out.q = e * q0;
  out.omega = theta / h;
  const Eigen::Matrix3d jl_u = so3_left_jacobian(u_theta);
  const Eigen::Matrix3d jl_inv = so3_left_jacobian_inverse(theta);
  const Eigen::Matrix3d jr_inv = so3_left_jacobian_inverse(-theta);
  out.dq_dkey0 = e.toRotationMatrix() - u * jl_u * jr_inv;
  out.dq_dkey1 = u * jl_u * jl_inv;
  out.domega_dkey0 = -jr_inv / h;
  out.domega_dkey1 = jl_inv / h;
  return out;
}

PiecewiseConstantSample piecewise_constant(const Eigen::MatrixXd& values, double T, double t) {
  if (values.cols() < 1)
    throw Error("piecewise-constant values: need at least 1 interval (column), got " + std::to_string(values.cols()));
  const int K = static_cast<int>(values.cols()) + 1;
  PiecewiseConstantSample out;
  out.interval = locate_on_grid(K, T, t).interval;
  out.value = values.col(out.interval);
  return out;
}

}  // namespace impulse
