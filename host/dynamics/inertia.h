// Inertial parameters of one rigid link and the log-Cholesky parameterization
// (Rucker & Wensing, "Smooth parameterization of rigid-body inertia", RA-L 2022)
// that maps every θ ∈ R¹⁰ to a physically consistent link.
//
// A link's inertia is linear in π = [m, h (3), I_o (6)] with h = m·c (first
// moment, link frame) and I_o the rotational inertia about the link-frame origin
// in the order xx, yy, zz, xy, xz, yz. The dynamics (multibody.h) are linear in
// π, which is why the learning losses differentiate with respect to it first.
//
// log-Cholesky: the pseudo-inertia J = [[Σ_o, h], [hᵀ, m]] (Σ_o = ∫ r rᵀ dm,
// I_o = tr(Σ_o) I − Σ_o) is written J = U Uᵀ with
//   U = e^α [[e^d1, s12, s13, t1],
//            [0,   e^d2, s23, t2],
//            [0,   0,   e^d3, t3],
//            [0,   0,    0,    1]],   θ = [α, d1, d2, d3, s12, s23, s13, t1, t2, t3].
// Then m = e^{2α}, c = t, Σ_c = e^{2α} V Vᵀ (V the upper 3x3 block): J ≻ 0 for
// every θ, i.e. m > 0 and the inertia about the centre of mass satisfies the
// triangle inequalities strictly. Total mass held fixed (CCN: it is not
// observable without force measurements): the links of a system share a scale
// s = M_total / Σ_l e^{2α_l}, so link l's π is s·π(θ_l); for one link m = M_total
// whatever α is.
#pragma once

#include <array>
#include <cmath>

#include <Eigen/Dense>

namespace impulse {

using Inertial = Eigen::Matrix<double, 10, 1>;      // π
using LogCholesky = Eigen::Matrix<double, 10, 1>;   // θ
using InertialJacobian = Eigen::Matrix<double, 10, 10>;

struct LinkInertia {
  double mass = 0;
  Eigen::Vector3d com = Eigen::Vector3d::Zero();          // link frame, m
  Eigen::Matrix3d inertia_com = Eigen::Matrix3d::Zero();  // about the COM, link axes, kg m²
};

inline Eigen::Matrix3d inertia_from_vector(const double* I) {
  Eigen::Matrix3d M;
  M << I[0], I[3], I[4], I[3], I[1], I[5], I[4], I[5], I[2];
  return M;
}

// π of a link given mass, COM and inertia about the COM (parallel-axis theorem).
inline Inertial to_inertial(const LinkInertia& l) {
  const Eigen::Matrix3d Io =
      l.inertia_com + l.mass * (l.com.squaredNorm() * Eigen::Matrix3d::Identity() - l.com * l.com.transpose());
  Inertial p;
  p << l.mass, l.mass * l.com, Io(0, 0), Io(1, 1), Io(2, 2), Io(0, 1), Io(0, 2), Io(1, 2);
  return p;
}

inline LinkInertia from_inertial(const Inertial& p) {
  LinkInertia l;
  l.mass = p(0);
  l.com = p.segment<3>(1) / p(0);
  const Eigen::Matrix3d Io = inertia_from_vector(p.data() + 4);
  l.inertia_com = Io - l.mass * (l.com.squaredNorm() * Eigen::Matrix3d::Identity() - l.com * l.com.transpose());
  return l;
}

// π(θ) of one link before the total-mass scale, and (optionally) ∂π/∂θ.
inline Inertial log_cholesky_to_inertial(const LogCholesky& t, InertialJacobian* jac = nullptr) {
  const double e2a = std::exp(2 * t(0));
  const double u11 = std::exp(t(1)), u22 = std::exp(t(2)), u33 = std::exp(t(3));
  const double s12 = t(4), s23 = t(5), s13 = t(6);
  const Eigen::Vector3d c = t.segment<3>(7);
  Eigen::Matrix3d V;
  V << u11, s12, s13, 0, u22, s23, 0, 0, u33;
  const Eigen::Matrix3d S = V * V.transpose();  // Σ_c / m
  const double m = e2a;
  // Σ_o = m (V Vᵀ + c cᵀ); I_o = tr(Σ_o) I − Σ_o
  const Eigen::Matrix3d So = m * (S + c * c.transpose());
  const Eigen::Matrix3d Io = So.trace() * Eigen::Matrix3d::Identity() - So;
  Inertial p;
  p << m, m * c, Io(0, 0), Io(1, 1), Io(2, 2), Io(0, 1), Io(0, 2), Io(1, 2);
  if (jac) {
    jac->setZero();
    // every entry of π is m times a function of (d, s, c): ∂/∂α = 2π
    jac->col(0) = 2 * p;
    // the rest through Σ_o = m (S + c cᵀ): dI_o = tr(dΣ_o) I − dΣ_o
    const auto put_So = [&](int col, const Eigen::Matrix3d& dSo) {
      const Eigen::Matrix3d dIo = dSo.trace() * Eigen::Matrix3d::Identity() - dSo;
      (*jac)(4, col) = dIo(0, 0);
      (*jac)(5, col) = dIo(1, 1);
      (*jac)(6, col) = dIo(2, 2);
      (*jac)(7, col) = dIo(0, 1);
      (*jac)(8, col) = dIo(0, 2);
      (*jac)(9, col) = dIo(1, 2);
    };
    // dS = dV Vᵀ + V dVᵀ for the entry of V each of θ(1..6) moves
    const std::array<std::array<int, 2>, 6> where = {{{0, 0}, {1, 1}, {2, 2}, {0, 1}, {1, 2}, {0, 2}}};
    const double dval[6] = {u11, u22, u33, 1, 1, 1};
    for (int k = 0; k < 6; ++k) {
      Eigen::Matrix3d dV = Eigen::Matrix3d::Zero();
      dV(where[k][0], where[k][1]) = dval[k];
      put_So(1 + k, m * (dV * V.transpose() + V * dV.transpose()));
    }
    for (int k = 0; k < 3; ++k) {
      Eigen::Vector3d e = Eigen::Vector3d::Zero();
      e(k) = 1;
      (*jac)(1 + k, 7 + k) = m;
      put_So(7 + k, m * (e * c.transpose() + c * e.transpose()));
    }
  }
  return p;
}

// θ of a physically consistent link (mass > 0, inertia about the COM positive
// definite with strict triangle inequalities): the inverse of the map above
// (up to the total-mass scale, which it does not know: α = ½ log m).
inline LogCholesky inertial_to_log_cholesky(const LinkInertia& l) {
  // Σ_c = ½ tr(I_c) I − I_c; S = Σ_c / m = V Vᵀ with V upper triangular: the
  // "upper" Cholesky factor, from the lower one of the reversed matrix.
  const Eigen::Matrix3d Sc = 0.5 * l.inertia_com.trace() * Eigen::Matrix3d::Identity() - l.inertia_com;
  const Eigen::Matrix3d S = Sc / l.mass;
  Eigen::Matrix3d P;
  P << 0, 0, 1, 0, 1, 0, 1, 0, 0;
  const Eigen::Matrix3d Lr = (P * S * P).llt().matrixL();
  const Eigen::Matrix3d V = P * Lr * P;  // upper triangular, V Vᵀ = S
  LogCholesky t;
  t << 0.5 * std::log(l.mass), std::log(V(0, 0)), std::log(V(1, 1)), std::log(V(2, 2)), V(0, 1),
      V(1, 2), V(0, 2), l.com;
  return t;
}

// A link is physically consistent when its pseudo-inertia is positive definite.
inline bool physically_consistent(const Inertial& p) {
  if (!(p(0) > 0)) return false;
  const Eigen::Matrix3d Io = inertia_from_vector(p.data() + 4);
  Eigen::Matrix4d J;
  J.topLeftCorner<3, 3>() = 0.5 * Io.trace() * Eigen::Matrix3d::Identity() - Io;
  J.topRightCorner<3, 1>() = p.segment<3>(1);
  J.bottomLeftCorner<1, 3>() = p.segment<3>(1).transpose();
  J(3, 3) = p(0);
  return J.llt().info() == Eigen::Success && J.ldlt().vectorD().minCoeff() > 0;
}

}  // namespace impulse
