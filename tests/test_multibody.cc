// Multibody dynamics (host/dynamics/multibody.h) against independent
// computations: kinetic energy from finite-differenced link motion, energy
// conservation in free flight, Ṁ − 2C skew-symmetric with C built from body
// twists, the one-link case against rigid_body.h, and finite differences for
// every derivative (log-Cholesky inertia, M and h in π, contact Jacobians and
// their vertex gradients).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "host/dynamics/inertia.h"
#include "host/dynamics/multibody.h"
#include "host/systems/system_file.h"
#include "host/dynamics/rigid_body.h"
#include "solvers/error.h"
#include "test_util.h"

namespace impulse {
namespace {

Eigen::Matrix3d skew3(const Eigen::Vector3d& a) {
  Eigen::Matrix3d S;
  S << 0, -a.z(), a.y(), a.z(), 0, -a.x(), -a.y(), a.x(), 0;
  return S;
}

// a random state of sys: unit quaternion, position, joint angles in (−π, π),
// velocities of a tossed object's size.
void random_state(const MultibodySystem& sys, std::mt19937_64& rng, Eigen::VectorXd& q, Eigen::VectorXd& v) {
  std::normal_distribution<double> n(0, 1);
  q.resize(sys.nq());
  v.resize(sys.nv());
  Eigen::Vector4d quat(n(rng), n(rng), n(rng), n(rng));
  q.head<4>() = quat.normalized();
  for (int i = 4; i < sys.nq(); ++i) q(i) = 0.3 * n(rng);
  for (int i = 0; i < sys.nv(); ++i) v(i) = 2.0 * n(rng);
}

// pi of a system with every link's inertia made generic (off-diagonal, COM off the origin)
Eigen::VectorXd generic_inertial(const MultibodySystem& sys, std::mt19937_64& rng) {
  std::normal_distribution<double> n(0, 1);
  Eigen::VectorXd pi(10 * sys.num_links());
  for (int l = 0; l < sys.num_links(); ++l) {
    LogCholesky t;
    for (int i = 0; i < 10; ++i) t(i) = 0.3 * n(rng);
    t(0) = 0.5 * std::log(0.3 + 0.1 * l);
    t.segment<3>(1) += Eigen::Vector3d::Constant(std::log(0.03));
    t.segment<3>(4) *= 0.02;
    t.segment<3>(7) *= 0.05;
    pi.segment<10>(10 * l) = log_cholesky_to_inertial(t);
  }
  return pi;
}

Eigen::MatrixXd mass(const MultibodySystem& sys, const Eigen::VectorXd& pi, const Eigen::VectorXd& q) {
  Kinematics k;
  kinematics(sys, q, k);
  Eigen::MatrixXd M;
  mass_matrix(k, pi, M);
  return M;
}

Eigen::VectorXd bias(const MultibodySystem& sys, const Eigen::VectorXd& pi, const Eigen::VectorXd& q,
                     const Eigen::VectorXd& v, double g) {
  Kinematics k;
  kinematics(sys, q, v, k);
  Eigen::VectorXd h;
  bias_force(k, pi, g, h);
  return h;
}

Eigen::VectorXd step_q(const MultibodySystem& sys, const Eigen::VectorXd& q, const Eigen::VectorXd& v, double dt) {
  Eigen::VectorXd qn(sys.nq());
  integrate_configuration(sys, q, v, dt, qn);
  return qn;
}

// centre of mass (world) and rotation of link l at q
void link_pose(const MultibodySystem& sys, const Eigen::VectorXd& pi, const Eigen::VectorXd& q, int l,
               Eigen::Vector3d& com, Eigen::Matrix3d& R) {
  Kinematics k;
  kinematics(sys, q, k);
  const LinkKinematics& lk = k.links[static_cast<size_t>(l)];
  R = lk.R;
  com = lk.p + lk.R * pi.segment<3>(10 * l + 1) / pi(10 * l);
}

class Systems : public ::testing::TestWithParam<std::string> {};

TEST(Inertia, LogCholeskyRoundTripAndConsistency) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> n(0, 1);
  for (int trial = 0; trial < 200; ++trial) {
    LogCholesky t;
    for (int i = 0; i < 10; ++i) t(i) = 2.0 * n(rng);
    const Inertial p = log_cholesky_to_inertial(t);
    // every parameter value is a physical link
    EXPECT_TRUE(physically_consistent(p)) << t.transpose();
    const LogCholesky back = inertial_to_log_cholesky(from_inertial(p));
    EXPECT_LT((back - t).cwiseAbs().maxCoeff(), 1e-7 * (1 + t.cwiseAbs().maxCoeff())) << trial;
  }
  // a box of uniform density: its textbook inertia survives the round trip
  LinkInertia box;
  box.mass = 0.37;
  box.com = Eigen::Vector3d(0.035, 0, 0);
  box.inertia_com = Eigen::Vector3d(0.37 / 12 * (0.0025 + 0.0025), 0.37 / 12 * (0.01 + 0.0025),
                                    0.37 / 12 * (0.01 + 0.0025)).asDiagonal();
  const LinkInertia again = from_inertial(log_cholesky_to_inertial(inertial_to_log_cholesky(box)));
  EXPECT_NEAR(again.mass, box.mass, 1e-14);
  EXPECT_LT((again.com - box.com).norm(), 1e-14);
  EXPECT_LT((again.inertia_com - box.inertia_com).norm(), 1e-15);
  // and a non-physical one (violating a triangle inequality) is detected
  LinkInertia bad = box;
  bad.inertia_com(0, 0) = 3 * bad.inertia_com(1, 1);
  EXPECT_FALSE(physically_consistent(to_inertial(bad)));
}

TEST(Inertia, LogCholeskyJacobianMatchesFiniteDifferences) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> n(0, 1);
  for (int trial = 0; trial < 20; ++trial) {
    LogCholesky t;
    for (int i = 0; i < 10; ++i) t(i) = n(rng);
    InertialJacobian J;
    log_cholesky_to_inertial(t, &J);
    for (int j = 0; j < 10; ++j) {
      const double h = 1e-6;
      LogCholesky a = t, b = t;
      a(j) += h;
      b(j) -= h;
      const Inertial fd = (log_cholesky_to_inertial(a) - log_cholesky_to_inertial(b)) / (2 * h);
      EXPECT_LT((fd - J.col(j)).norm(), 1e-7 * (1 + fd.norm())) << "column " << j;
    }
  }
}

TEST_P(Systems, MassMatrixSymmetricPositiveDefiniteAndEqualsKineticEnergy) {
  const MultibodySystem sys = load_system(GetParam());
  sys.validate();
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    Eigen::VectorXd q, v;
    random_state(sys, rng, q, v);
    const Eigen::VectorXd pi = trial % 2 ? generic_inertial(sys, rng) : stacked_inertial(sys);
    const Eigen::MatrixXd M = mass(sys, pi, q);
    EXPECT_LT((M - M.transpose()).norm(), 1e-15 * M.norm());
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(M);
    EXPECT_GT(es.eigenvalues().minCoeff(), 0) << "M not positive definite";
    // independent kinetic energy: each link's COM velocity and angular velocity
    // from finite differences of its pose along q(t) = q + Γ v t
    const double h = 1e-6;
    const Eigen::VectorXd qa = step_q(sys, q, v, h), qb = step_q(sys, q, v, -h);
    double T = 0;
    for (int l = 0; l < sys.num_links(); ++l) {
      Eigen::Vector3d ca, cb;
      Eigen::Matrix3d Ra, Rb, R;
      Eigen::Vector3d c;
      link_pose(sys, pi, qa, l, ca, Ra);
      link_pose(sys, pi, qb, l, cb, Rb);
      link_pose(sys, pi, q, l, c, R);
      const Eigen::Vector3d vc = (ca - cb) / (2 * h);
      const Eigen::Matrix3d W = (Ra - Rb) / (2 * h) * R.transpose();  // [ω]× world
      const Eigen::Vector3d w(W(2, 1), W(0, 2), W(1, 0));
      const LinkInertia li = from_inertial(pi.segment<10>(10 * l));
      T += 0.5 * li.mass * vc.squaredNorm() + 0.5 * w.dot(R * li.inertia_com * R.transpose() * w);
    }
    EXPECT_NEAR(0.5 * v.dot(M * v), T, 1e-6 * T) << "trial " << trial;
  }
}

// The one-link case is the rigid body of rigid_body.h: blockdiag(I, m I3) in
// [ω body; v world] order and the same smooth impulse (gravity, gyroscopic).
TEST(Multibody, OneLinkIsTheRigidBody) {
  const MultibodySystem sys = cube_system();
  BodyParams body;
  body.mass = 0.37;
  body.inertia = Eigen::Vector3d(0.0008, 0.0009, 0.0011).asDiagonal();
  MultibodySystem s2 = sys;
  s2.links[0].inertia.inertia_com = body.inertia;
  const Eigen::VectorXd pi = stacked_inertial(s2);
  std::mt19937_64 rng(2);
  Eigen::VectorXd q, v;
  random_state(s2, rng, q, v);
  const Eigen::MatrixXd M = mass(s2, pi, q);
  const Mat6 Mr = body.mass_matrix();  // [v; ω] order
  EXPECT_LT((M.topLeftCorner<3, 3>() - Mr.bottomRightCorner<3, 3>()).norm(), 1e-15);
  EXPECT_LT((M.bottomRightCorner<3, 3>() - Mr.topLeftCorner<3, 3>()).norm(), 1e-15);
  EXPECT_LT((M.topRightCorner<3, 3>()).norm(), 1e-15);
  const State x = make_state(q.segment<3>(4), Eigen::Quaterniond(q(0), q(1), q(2), q(3)), v.segment<3>(3),
                             v.head<3>());
  const double dt = 0.01;
  const Vec6 f = smooth_impulse(x, body, dt);
  const Eigen::VectorXd h = bias(s2, pi, q, v, body.gravity);
  EXPECT_LT((-h.head<3>() * dt - f.tail<3>()).norm(), 1e-15);
  EXPECT_LT((-h.tail<3>() * dt - f.head<3>()).norm(), 1e-15);
}

// RK4 on q̇ = Γ v, v̇ = −M⁻¹h: kinetic + potential energy stays constant.
TEST_P(Systems, FreeFlightConservesEnergy) {
  const MultibodySystem sys = load_system(GetParam());
  std::mt19937_64 rng(7);
  const Eigen::VectorXd pi = generic_inertial(sys, rng);
  Eigen::VectorXd q, v;
  random_state(sys, rng, q, v);
  const auto energy = [&](const Eigen::VectorXd& qq, const Eigen::VectorXd& vv) {
    Kinematics k;
    kinematics(sys, qq, k);
    return kinetic_energy(k, pi, vv) + potential_energy(k, pi, sys.gravity);
  };
  const double E0 = energy(q, v);
  const double dt = 1e-3;
  // the quaternion evolves on the unit sphere: integrate q in its own update
  // (exact for constant v over the step up to normalization), RK4 on v.
  double worst = 0;
  for (int step = 0; step < 1000; ++step) {
    const auto acc = [&](const Eigen::VectorXd& qq, const Eigen::VectorXd& vv) {
      return free_acceleration(sys, pi, qq, vv);
    };
    const Eigen::VectorXd k1v = acc(q, v);
    const Eigen::VectorXd q2 = step_q(sys, q, v, dt / 2);
    const Eigen::VectorXd v2 = v + dt / 2 * k1v;
    const Eigen::VectorXd k2v = acc(q2, v2);
    const Eigen::VectorXd v3 = v + dt / 2 * k2v;
    const Eigen::VectorXd q3 = step_q(sys, q, v2, dt / 2);
    const Eigen::VectorXd k3v = acc(q3, v3);
    const Eigen::VectorXd v4 = v + dt * k3v;
    const Eigen::VectorXd q4 = step_q(sys, q, v3, dt);
    const Eigen::VectorXd k4v = acc(q4, v4);
    const Eigen::VectorXd vmid = (v + 2 * v2 + 2 * v3 + v4) / 6;
    q = step_q(sys, q, vmid, dt);
    v += dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v);
    worst = std::max(worst, std::abs(energy(q, v) - E0));
  }
  // a wrong Coriolis term changes the energy at O(1) per second; the
  // integrator's own error here is ~1e-5 relative
  EXPECT_LT(worst, 1e-4 * std::abs(E0)) << "E0 = " << E0;
}

// C from body twists at the centres of mass: V_l = J_b,l v, M_b = diag(I_c, m I),
// C = Σ J_bᵀ (M_b J̇_b + S(V) J_b) with S = [[−[I_c ω]×, 0], [0, m[ω]×]] skew.
// Then C v must be h's velocity part and Ṁ − 2C skew-symmetric (Ṁ and J̇ by
// central differences along q(t)).
TEST_P(Systems, MdotMinusTwoCIsSkewAndCvIsTheBias) {
  const MultibodySystem sys = load_system(GetParam());
  std::mt19937_64 rng(13);
  const Eigen::VectorXd pi = generic_inertial(sys, rng);
  const int nv = sys.nv();
  for (int trial = 0; trial < 5; ++trial) {
    Eigen::VectorXd q, v;
    random_state(sys, rng, q, v);
    const auto body_jacobian = [&](const Eigen::VectorXd& qq, int l) {
      Kinematics k;
      kinematics(sys, qq, k);
      const LinkKinematics& lk = k.links[static_cast<size_t>(l)];
      const Eigen::Vector3d c = pi.segment<3>(10 * l + 1) / pi(10 * l);
      Eigen::MatrixXd Jb(6, nv);
      Jb.topRows<3>() = lk.R.transpose() * lk.Jw;
      Jb.bottomRows<3>() = lk.R.transpose() * (lk.Jo - skew3(lk.R * c) * lk.Jw);
      return Jb;
    };
    const double h = 1e-6;
    const Eigen::VectorXd qa = step_q(sys, q, v, h), qb = step_q(sys, q, v, -h);
    Eigen::MatrixXd C = Eigen::MatrixXd::Zero(nv, nv), Msum = Eigen::MatrixXd::Zero(nv, nv);
    for (int l = 0; l < sys.num_links(); ++l) {
      const LinkInertia li = from_inertial(pi.segment<10>(10 * l));
      Eigen::Matrix<double, 6, 6> Mb = Eigen::Matrix<double, 6, 6>::Zero();
      Mb.topLeftCorner<3, 3>() = li.inertia_com;
      Mb.bottomRightCorner<3, 3>() = li.mass * Eigen::Matrix3d::Identity();
      const Eigen::MatrixXd Jb = body_jacobian(q, l);
      const Eigen::MatrixXd Jbdot = (body_jacobian(qa, l) - body_jacobian(qb, l)) / (2 * h);
      const Eigen::VectorXd V = Jb * v;
      Eigen::Matrix<double, 6, 6> S = Eigen::Matrix<double, 6, 6>::Zero();
      S.topLeftCorner<3, 3>() = -skew3(li.inertia_com * V.head<3>());
      S.bottomRightCorner<3, 3>() = li.mass * skew3(V.head<3>());
      C += Jb.transpose() * (Mb * Jbdot + S * Jb);
      Msum += Jb.transpose() * Mb * Jb;
    }
    const Eigen::MatrixXd M = mass(sys, pi, q);
    EXPECT_LT((Msum - M).norm(), 1e-12 * M.norm());
    const Eigen::MatrixXd Mdot = (mass(sys, pi, qa) - mass(sys, pi, qb)) / (2 * h);
    const Eigen::MatrixXd N = Mdot - 2 * C;
    EXPECT_LT((N + N.transpose()).norm(), 1e-6 * (Mdot.norm() + C.norm())) << "trial " << trial;
    const Eigen::VectorXd hv = bias(sys, pi, q, v, 0.0);
    EXPECT_LT((C * v - hv).norm(), 1e-6 * (1 + hv.norm())) << "trial " << trial;
  }
}

TEST_P(Systems, InertialGradientsMatchFiniteDifferences) {
  const MultibodySystem sys = load_system(GetParam());
  std::mt19937_64 rng(17);
  std::normal_distribution<double> n(0, 1);
  const Eigen::VectorXd pi = generic_inertial(sys, rng);
  Eigen::VectorXd q, v;
  random_state(sys, rng, q, v);
  const Eigen::VectorXd y = Eigen::VectorXd::NullaryExpr(sys.nv(), [&] { return n(rng); });
  const Eigen::VectorXd w = Eigen::VectorXd::NullaryExpr(sys.nv(), [&] { return n(rng); });
  const double dt = 0.0068;
  Kinematics k;
  kinematics(sys, q, v, k);
  Eigen::VectorXd g1, g2;
  inertial_gradient(k, y, w, dt, sys.gravity, g1);
  mass_quadratic_gradient(k, y, g2);
  const auto f1 = [&](const Eigen::VectorXd& p) {
    return y.dot(mass(sys, p, q) * w - dt * bias(sys, p, q, v, sys.gravity));
  };
  const auto f2 = [&](const Eigen::VectorXd& p) { return y.dot(mass(sys, p, q) * y); };
  for (Eigen::Index j = 0; j < pi.size(); ++j) {
    Eigen::VectorXd a = pi, b = pi;
    const double h = 1e-5;
    a(j) += h;
    b(j) -= h;
    // both are linear in π: central differences are exact up to rounding
    EXPECT_NEAR((f1(a) - f1(b)) / (2 * h), g1(j), 1e-8 * (1 + std::abs(g1(j)))) << "pi " << j;
    EXPECT_NEAR((f2(a) - f2(b)) / (2 * h), g2(j), 1e-8 * (1 + std::abs(g2(j)))) << "pi " << j;
  }
}

TEST_P(Systems, ContactJacobiansAndVertexGradientsMatchFiniteDifferences) {
  const MultibodySystem sys = load_system(GetParam());
  std::mt19937_64 rng(19);
  std::normal_distribution<double> n(0, 1);
  Eigen::VectorXd q, v;
  random_state(sys, rng, q, v);
  std::vector<std::vector<Eigen::Vector3d>> verts;
  for (const LinkSpec& l : sys.links) verts.push_back(l.vertices);
  Kinematics k;
  kinematics(sys, q, k);
  MultibodyContacts c;
  contact_frame(sys, k, verts, c);
  const int K = sys.contacts();
  ASSERT_EQ(c.phi.size(), K);
  // J_p v is the vertex's world velocity: finite differences of its position along q(t)
  const double h = 1e-6;
  const auto points = [&](const Eigen::VectorXd& qq) {
    Kinematics kk;
    kinematics(sys, qq, kk);
    std::vector<Eigen::Vector3d> pts;
    for (int l = 0; l < sys.num_links(); ++l)
      for (const Eigen::Vector3d& r : verts[static_cast<size_t>(l)])
        pts.push_back(kk.links[static_cast<size_t>(l)].p + kk.links[static_cast<size_t>(l)].R * r);
    return pts;
  };
  const auto pa = points(step_q(sys, q, v, h)), pb = points(step_q(sys, q, v, -h)), p0 = points(q);
  for (int i = 0; i < K; ++i) {
    const Eigen::Vector3d vel = (pa[static_cast<size_t>(i)] - pb[static_cast<size_t>(i)]) / (2 * h);
    EXPECT_NEAR(c.Jt.row(2 * i).dot(v), vel.x(), 1e-6 * (1 + vel.norm()));
    EXPECT_NEAR(c.Jt.row(2 * i + 1).dot(v), vel.y(), 1e-6 * (1 + vel.norm()));
    EXPECT_NEAR(c.Jn.row(i).dot(v), vel.z(), 1e-6 * (1 + vel.norm()));
    EXPECT_NEAR(c.phi(i), p0[static_cast<size_t>(i)].z(), 1e-15);
  }
  // vertex gradients of L = Σ G_J ⊙ J_p + G_phi ⊙ φ
  Eigen::MatrixXd GJ = Eigen::MatrixXd::NullaryExpr(3 * K, sys.nv(), [&] { return n(rng); });
  Eigen::VectorXd Gphi = Eigen::VectorXd::NullaryExpr(K, [&] { return n(rng); });
  const auto L = [&](const std::vector<std::vector<Eigen::Vector3d>>& vv) {
    MultibodyContacts cc;
    contact_frame(sys, k, vv, cc);
    double s = Gphi.dot(cc.phi);
    for (int i = 0; i < K; ++i)
      s += GJ.row(3 * i).dot(cc.Jt.row(2 * i)) + GJ.row(3 * i + 1).dot(cc.Jt.row(2 * i + 1)) +
           GJ.row(3 * i + 2).dot(cc.Jn.row(i));
    return s;
  };
  std::vector<double> grad(static_cast<size_t>(3 * K), 0.0);
  jacobian_vertex_gradient(sys, k, verts, GJ, grad.data());
  phi_vertex_gradient(sys, k, verts, Gphi, grad.data());
  int i = 0;
  for (size_t l = 0; l < verts.size(); ++l) {
    for (size_t j = 0; j < verts[l].size(); ++j, ++i) {
      for (int d = 0; d < 3; ++d) {
        auto a = verts, b = verts;
        a[l][j](d) += 1e-6;
        b[l][j](d) -= 1e-6;
        const double fd = (L(a) - L(b)) / 2e-6;
        EXPECT_NEAR(fd, grad[static_cast<size_t>(3 * i + d)], 1e-7 * (1 + std::abs(fd)))
            << "vertex " << i << " coordinate " << d;
      }
    }
  }
}

TEST(Multibody, BadInputIsNamed) {
  MultibodySystem sys = elbow_system();
  Kinematics k;
  Eigen::VectorXd q = Eigen::VectorXd::Zero(7);
  EXPECT_THROW(kinematics(sys, q, k), Error);  // the elbow has nq = 8
  q = Eigen::VectorXd::Zero(8);
  q(0) = 1;
  q(5) = std::nan("");
  EXPECT_THROW(kinematics(sys, q, k), Error);
  sys.links[1].parent = 1;
  try {
    sys.validate();
    FAIL() << "a link that is its own parent was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("elbow_2"), std::string::npos) << e.what();
  }
  sys = elbow_system();
  sys.links[0].inertia.inertia_com(0, 0) = 0.01;  // violates I_yy + I_zz >= I_xx
  EXPECT_THROW(sys.validate(), Error);
  EXPECT_THROW(system_by_name("sphere"), Error);
}

// the built-ins by name, a 3-link chain described in a file (a fixed joint merged, a
// joint frame rotated: host/systems/system_file.h) and a 6-vertex asymmetric wedge from a
// mesh (a URDF whose collision is an STL; its hull's vertices)
INSTANTIATE_TEST_SUITE_P(Multibody, Systems,
                         ::testing::Values("cube", "asymmetric", "elbow", IMPULSE_SOURCE_DIR "/tests/data/systems/chain3.json",
                                           IMPULSE_SOURCE_DIR "/tests/data/systems/wedge.urdf"),
                         testing::SystemParamName());

}  // namespace
}  // namespace impulse
