// The geometry of the planning problem (host/planning/README.md): the manipulated object is
// a capsule, the floor is the plane z = 0, and the hand's contact points are projected onto
// both. The projections carry their Jacobians, because contact-invariant optimization
// (Mordatch et al. 2012) differentiates the contact-distance and contact-location terms.
//
// Capsule: the set of points within `radius` R of the axis segment
//   { p + q·(s, 0, 0) : s ∈ [−H, H] },   H = `half_length`,
// i.e. the segment runs along the body x-axis and its midpoint is the body origin, placed in
// the world at position p with the unit quaternion q (body → world, Rot = Rot(q)).
//
// Projection of a world point x: with y = Rotᵀ(x − p) (body frame), the closest axis point is
// a = (clamp(y_x, −H, H), 0, 0), d = y − a, r = |d|, and the body normal is n_b = d / r. The
// closest SURFACE point is a + R·n_b and the signed distance is r − R, whether x is outside
// (r > R) or inside (r < R): every surface point z has dist(z, axis) = R, so
// |z − x| ≥ R − dist(x, axis) = R − r, attained at a + R·n_b.
//
// Regions: kSide when |y_x| < H (a moves with x along the axis), kCapMinus when y_x ≤ −H,
// kCapPlus when y_x ≥ H (a is an end point). On the planes |y_x| = H the point Jacobian is
// discontinuous (from the side it has an axial term 1, from the cap R/r); what is returned
// there is the cap's (one-sided) value. The distance is C¹ across them (its gradient is n).
//
// Degenerate case (`on_axis`): r ≤ 1e-12·R, i.e. x on the axis segment. Every direction
// orthogonal to the axis is then a closest direction; the returned normal is the body +z axis,
// n = Rot·e_z (deterministic; also valid when x is an end point), the point a + R·e_z and
// the distance −R. The surface point is not differentiable there (its derivative across the
// axis is unbounded, like R/r); the Jacobians returned are one-sided: those obtained by
// moving x along +n or along the axis, i.e. the unbounded tangential term is dropped
// (dpoint_dx = Rot e_x e_xᵀ Rotᵀ on the side, 0 at an end point; dnormal_dx = 0) and the
// distance gradient is nᵀ (its directional derivative along +n; the distance has a conical
// kink on the axis).
//
// Jacobians (world frame):
//   with respect to x:               dpoint_dx, dnormal_dx (3×3), ddistance_dx = nᵀ (1×3);
//   with respect to the position p:  dpoint_dp = I − dpoint_dx, dnormal_dp = −dnormal_dx,
//                                    ddistance_dp = −nᵀ;
//   with respect to a world-frame rotation-vector perturbation of the orientation,
//   q ← exp(δ/2)⊗q (the convention of spline.h's SLERP derivatives):
//                                    dpoint_drot = −[point − p]× + dpoint_dx·[x − p]×,
//                                    dnormal_drot = −[n]× + dnormal_dx·[x − p]×,
//                                    ddistance_drot = (n × (x − p))ᵀ.
//
// Ground: the plane z = 0 with normal +e_z; the signed distance is x_z.
//
// Errors (impulse::Error, naming the item): radius not finite or ≤ 0, half_length not finite
// or < 0, a non-finite position or point, an orientation whose norm differs from 1 by more
// than 1e-9 (normalize before calling), and for capsule_inertia a density not finite or ≤ 0.
#pragma once

#include <Eigen/Dense>
#include <Eigen/Geometry>

#include "host/dynamics/inertia.h"

namespace impulse {

struct Capsule {
  double radius = 0;       // R > 0, m
  double half_length = 0;  // H ≥ 0 (0: a sphere), m
  Eigen::Vector3d position = Eigen::Vector3d::Zero();                 // p: the segment's midpoint, world
  Eigen::Quaterniond orientation = Eigen::Quaterniond::Identity();  // q: body → world, unit
};

enum class CapsuleRegion { kSide, kCapMinus, kCapPlus };

struct CapsuleProjection {
  Eigen::Vector3d point = Eigen::Vector3d::Zero();   // closest surface point, world
  Eigen::Vector3d normal = Eigen::Vector3d::UnitZ();  // outward unit normal at `point`, world
  double distance = 0;                                // signed: > 0 outside, < 0 inside
  CapsuleRegion region = CapsuleRegion::kSide;
  bool on_axis = false;  // the degenerate case above

  Eigen::Matrix3d dpoint_dx = Eigen::Matrix3d::Zero();
  Eigen::Matrix3d dnormal_dx = Eigen::Matrix3d::Zero();
  Eigen::RowVector3d ddistance_dx = Eigen::RowVector3d::Zero();

  Eigen::Matrix3d dpoint_dp = Eigen::Matrix3d::Zero();
  Eigen::Matrix3d dnormal_dp = Eigen::Matrix3d::Zero();
  Eigen::RowVector3d ddistance_dp = Eigen::RowVector3d::Zero();

  Eigen::Matrix3d dpoint_drot = Eigen::Matrix3d::Zero();
  Eigen::Matrix3d dnormal_drot = Eigen::Matrix3d::Zero();
  Eigen::RowVector3d ddistance_drot = Eigen::RowVector3d::Zero();
};

struct GroundProjection {
  Eigen::Vector3d point = Eigen::Vector3d::Zero();    // (x_x, x_y, 0)
  Eigen::Vector3d normal = Eigen::Vector3d::UnitZ();  // +e_z
  double distance = 0;                                // x_z (negative below the floor)
  Eigen::Matrix3d dpoint_dx = Eigen::Matrix3d::Zero();           // diag(1, 1, 0)
  Eigen::RowVector3d ddistance_dx = Eigen::RowVector3d::Zero();  // e_zᵀ
};

// Throws impulse::Error if the capsule is malformed (see the list above).
void validate_capsule(const Capsule& capsule);

CapsuleProjection project_to_capsule(const Capsule& capsule, const Eigen::Vector3d& x);

GroundProjection project_to_ground(const Eigen::Vector3d& x);

// Mass properties of the solid capsule of uniform density ρ (kg/m³), body frame, about its
// centre (com = 0); the axis is body x. With the cylinder of length 2H (mass
// m_c = ρ·π R²·2H) and two hemispheres (each m_h = ρ·(2/3)π R³, centroid 3R/8 from its flat
// face, inertia about a diameter of the flat face (2/5)·m_h R²):
//   mass = m_c + 2 m_h
//   I_xx = m_c R²/2 + 2·(2/5) m_h R²
//   I_yy = I_zz = m_c (R²/4 + H²/3)
//               + 2·[ (2/5) m_h R² − m_h (3R/8)²  +  m_h (H + 3R/8)² ]      (parallel axis twice:
//                   to the hemisphere's centroid, then to the capsule's centre)
//               = m_c (R²/4 + H²/3) + 2 m_h (2R²/5 + H² + 3HR/4)
// The off-diagonal terms vanish by symmetry.
LinkInertia capsule_inertia(double radius, double half_length, double density);

}  // namespace impulse
