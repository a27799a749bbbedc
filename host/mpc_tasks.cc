// GCC 12 reports false -Wmaybe-uninitialized inside Eigen's AVX-512 kernels (-march=native).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Warray-bounds"
#include "host/mpc_tasks.h"

namespace impulse {

Lcs cartpole_lcs(const CartPoleParams& p, int N, const Eigen::Vector2d& offset) {
  const double mc = p.mc, mp = p.mp, lp = p.len_p, lc = p.len_com, g = p.g;
  Eigen::Matrix4d Ac;
  Ac << 0, 0, 1, 0,  //
      0, 0, 0, 1,    //
      0, g * mp / mc, 0, 0,  //
      0, g * (mc + mp) / (lc * mc), 0, 0;
  Eigen::Vector4d Bc(0, 0, 1 / mc, 1 / (lc * mc));
  // generalized effect of a horizontal tip force (λ1 from the right wall pushes −x)
  const double d3 = -1 / mc + lp / (mc * lc);
  const double d4 = -1 / (mc * lc) + lp * (mc + mp) / (mc * mp * lc * lc);
  Eigen::Matrix<double, 4, 2> Dc;
  Dc << 0, 0, 0, 0, d3, -d3, d4, -d4;
  Eigen::Matrix<double, 2, 4> E;
  E << -1, lp, 0, 0,  //
      1, -lp, 0, 0;
  const Eigen::Matrix2d F = Eigen::Matrix2d::Identity() / p.stiffness;
  const Eigen::Vector2d c = Eigen::Vector2d::Constant(p.wall) + offset;
  const Eigen::Matrix4d A = Eigen::Matrix4d::Identity() + p.dt * Ac;
  return Lcs::time_invariant(N, A, p.dt * Bc, p.dt * Dc, Eigen::VectorXd::Zero(4), E, F,
                             Eigen::MatrixXd::Zero(2, 1), c);
}

C3Costs cartpole_costs(const CartPoleParams& p) {
  C3Costs c;
  c.Q = Eigen::Vector4d(10, 3, 1, 1).asDiagonal();
  c.R = Eigen::MatrixXd::Identity(1, 1);
  // terminal weight: the infinite-horizon LQR cost of the contact-free linearization
  const Lcs l = cartpole_lcs(p, 1);
  Eigen::MatrixXd P = c.Q;
  for (int it = 0; it < 5000; ++it) {
    const Eigen::MatrixXd& A = l.A[0];
    const Eigen::MatrixXd& B = l.B[0];
    const Eigen::MatrixXd S = c.R + B.transpose() * P * B;
    const Eigen::MatrixXd K = S.ldlt().solve(B.transpose() * P * A);
    const Eigen::MatrixXd Pn = c.Q + A.transpose() * P * (A - B * K);
    const double diff = (Pn - P).cwiseAbs().maxCoeff();
    P = 0.5 * (Pn + Pn.transpose());
    if (diff < 1e-10 * (1 + P.cwiseAbs().maxCoeff())) break;
  }
  c.QN = P;
  // ADMM weights: λ weighted 100x the state and input in the QP step (else the QP uses λ
  // as a free actuator and ADMM converges slowly); the projection keeps x (weight 1000)
  // and moves λ, as in the C3 reference cart-pole (U = diag(1000 I, 1, 0))
  c.G.resize(7);
  c.G << 0.1, 0.1, 0.1, 0.1, 10, 10, 0.1;
  c.U.resize(7);
  c.U << 1000, 1000, 1000, 1000, 0.1, 0.1, 0.1;
  c.x_bound = Eigen::Vector4d(5, 1.5, 20, 40);
  c.u_limit = Eigen::VectorXd::Constant(1, 50);
  return c;
}

C3Settings cartpole_settings() {
  C3Settings s;
  s.admm_iterations = 10;
  s.rho0 = 1.0;
  s.rho_scale = 2.0;
  s.consensus_tol = 1e-2;
  return s;
}

}  // namespace impulse
