// Keyframe interpolation for contact-invariant optimization (host/planning/README.md): the
// decision variables are keyframes on a uniform time grid
//   t_k = k·h,  h = T / (K − 1),  k = 0 … K−1,
// and the trajectory between them is
//   * Catmull-Rom (cubic Hermite) for vectors in R^d (positions),
//   * piecewise SLERP for unit quaternions (orientations),
//   * piecewise constant for per-interval values (the contact variables c of interval i).
//
// Locating t (`locate_on_grid`): interval i = floor(t / h) clamped to 0 … K−2, u = t/h − i ∈ [0, 1].
// A t within a relative 1e-12 of a knot t_k counts as the knot, and a knot belongs to the
// interval that starts there (i = k, u = 0), except T, which closes the last interval
// (i = K−2, u = 1). t must lie in [0, T]; a t outside by at most 1e-12·T is clamped,
// beyond that it is an error.
//
// Catmull-Rom: on interval i, with the Hermite basis
//   h00 = 2u³ − 3u² + 1, h10 = u³ − 2u² + u, h01 = −2u³ + 3u², h11 = u³ − u²,
//   P(t) = h00 P_i + h10 h m_i + h01 P_{i+1} + h11 h m_{i+1},
// tangents (per unit time) m_k = (P_{k+1} − P_{k−1}) / (2h) inside and ONE-SIDED differences at
// the ends, m_0 = (P_1 − P_0)/h, m_{K−1} = (P_{K−1} − P_{K−2})/h. (Chosen over duplicating the
// end points, which would halve the end tangents: with one-sided ends a motion linear in time
// is reproduced exactly, and K = 2 is the straight line.) The curve passes through every
// keyframe, is C¹, and its second derivative jumps at the knots (at a knot the returned
// acceleration is that of the interval starting there, at T that of the last interval).
// Velocity is dP/dt, acceleration d²P/dt².
// The value is linear in the keyframes: P(t) = Σ_k w_k(t) P_k, and likewise the derivatives
// with weights w'_k, w''_k; `catmull_rom_weights` returns them, so ∂P(t)/∂P_k = w_k(t)·I.
// The non-zero weights lie in k ∈ [max(0, i−1), min(K−1, i+2)].
//
// SLERP: on interval i, the shortest arc from q_i to q_{i+1} (q_{i+1} is negated when
// q_i·q_{i+1} < 0). With θ = log(q_{i+1} ⊗ q_i⁻¹) (world-frame rotation vector, |θ| ≤ π):
//   q(t) = exp(u θ) ⊗ q_i,   ω(t) = θ / h   (world-frame angular velocity, constant per interval),
// where exp(v) is the unit quaternion of the rotation by |v| about v, (cos(|v|/2), sin(|v|/2) v/|v|).
// The returned quaternion keeps q_i's sign along the interval (at u = 1 it is ±q_{i+1}).
// Keyframe derivatives, in rotation-vector form (3×3): perturbing the keyframes on the left in
// the world frame, q_i ← exp(δ_i)⊗q_i, q_{i+1} ← exp(δ_{i+1})⊗q_{i+1} (this exp(δ) is the
// quaternion exp(δ/2) of the pure quaternion δ/2), moves the interpolated quaternion to
// exp(ε)⊗q(t) and the angular velocity to ω + Δω with, to first order,
//   ε = dq_dkey0·δ_i + dq_dkey1·δ_{i+1},      Δω = domega_dkey0·δ_i + domega_dkey1·δ_{i+1}:
//   dq_dkey0 = Rot(uθ) − u·J_l(uθ)·J_r⁻¹(θ),   dq_dkey1 = u·J_l(uθ)·J_l⁻¹(θ),
//   domega_dkey0 = −J_r⁻¹(θ) / h,             domega_dkey1 = J_l⁻¹(θ) / h,
// with the SO(3) left and right Jacobians J_l(φ) = I + (1 − cos a)/a²·[φ]× + (a − sin a)/a³·[φ]×²,
// J_r(φ) = J_l(−φ), a = |φ|. (dq_dkey0 + dq_dkey1 = I: rotating both keyframes rotates the arc.)
// Other keyframes do not enter. The 4×3 derivative of q(t)'s coefficients is
// quaternion_rotation_jacobian(q(t)) · (3×3). These derivatives (and the arc itself) are
// undefined when consecutive keyframes are exactly π apart (q_i·q_{i+1} = 0), where the
// shortest arc is not unique.
//
// Piecewise constant: values is d × (K − 1), column i the value on interval i (located as above).
//
// Errors (impulse::Error, naming the item): K < 2, T not finite or ≤ 0, t not finite or
// outside [0, T], keyframe matrices with fewer than 2 columns or non-finite entries, and
// quaternion keyframes whose norm differs from 1 by more than 1e-9 (normalize first).
#pragma once

#include <vector>

#include <Eigen/Dense>
#include <Eigen/Geometry>

namespace impulse {

struct GridLocation {
  int interval = 0;  // i ∈ 0 … K−2: t ∈ [t_i, t_{i+1}]
  double u = 0;      // (t − t_i) / h ∈ [0, 1]
};

// h = T / (K − 1); validates K and T.
double grid_step(int K, double T);
GridLocation locate_on_grid(int K, double T, double t);
inline int interval_index(int K, double T, double t) { return locate_on_grid(K, T, t).interval; }

struct SplineWeights {
  int interval = 0;
  double u = 0;
  int first = 0, last = 0;  // non-zero weights lie in [first, last]
  Eigen::VectorXd value;         // K: w_k(t)
  Eigen::VectorXd velocity;      // K: d w_k / dt
  Eigen::VectorXd acceleration;  // K: d² w_k / dt²
};

struct SplineSample {
  int interval = 0;
  Eigen::VectorXd value, velocity, acceleration;  // d each
};

SplineWeights catmull_rom_weights(int K, double T, double t);

// keys: d × K, column k the keyframe at t_k.
SplineSample catmull_rom(const Eigen::MatrixXd& keys, double T, double t);

struct SlerpSample {
  int interval = 0;
  double u = 0;
  Eigen::Quaterniond q = Eigen::Quaterniond::Identity();
  Eigen::Vector3d omega = Eigen::Vector3d::Zero();  // world frame, rad/s
  Eigen::Matrix3d dq_dkey0 = Eigen::Matrix3d::Zero();      // ∂ε/∂δ_i
  Eigen::Matrix3d dq_dkey1 = Eigen::Matrix3d::Zero();      // ∂ε/∂δ_{i+1}
  Eigen::Matrix3d domega_dkey0 = Eigen::Matrix3d::Zero();  // ∂ω/∂δ_i
  Eigen::Matrix3d domega_dkey1 = Eigen::Matrix3d::Zero();  // ∂ω/∂δ_{i+1}
};

// keys: K unit quaternions at t_0 … t_{K−1}.
SlerpSample slerp_keyframes(const std::vector<Eigen::Quaterniond>& keys, double T, double t);

struct PiecewiseConstantSample {
  int interval = 0;
  Eigen::VectorXd value;
};

// values: d × (K − 1), column i the value on interval i; the grid has K = values.cols() + 1 knots.
PiecewiseConstantSample piecewise_constant(const Eigen::MatrixXd& values, double T, double t);

// Rotation-vector helpers (world-frame, left perturbations as above).
Eigen::Quaterniond rotation_exp(const Eigen::Vector3d& v);  // exp(v): rotation by |v| about v
Eigen::Vector3d rotation_log(const Eigen::Quaterniond& q);  // |result| ≤ π (sign of q ignored)
Eigen::Matrix3d so3_left_jacobian(const Eigen::Vector3d& phi);
Eigen::Matrix3d so3_left_jacobian_inverse(const Eigen::Vector3d& phi);  // |phi| < 2π
// d(coefficients of exp(ε)⊗q, rows ordered w, x, y, z) / dε at ε = 0, i.e. of ½·(0, ε)⊗q with
// (0, ε) the pure quaternion: [−½ vᵀ; ½ (w I − [v]×)] for q = (w, v).
Eigen::Matrix<double, 4, 3> quaternion_rotation_jacobian(const Eigen::Quaterniond& q);

}  // namespace impulse
