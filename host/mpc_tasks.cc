// GCC 12 reports false -Wmaybe-uninitialized inside Eigen's AVX-512 kernels (-march=native).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Warray-bounds"
#include "host/mpc_tasks.h"

#include <cmath>

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

// C3Settings' defaults (10 ADMM iterations, ρ₀ = 1, ρ doubling, consensus 1e-2)
C3Settings cartpole_settings() { return C3Settings{}; }

// ---- ball rolling -----------------------------------------------------------------

Lcs ball_rolling_lcs(const BallRollingParams& p, int N, double radius, double dt) {
  using I = BallIdx;
  const int nx = I::kNx, nu = I::kNu, nl = I::kNl;
  const double mu = p.mu;
  const double kroll = 10.0 / 7.0;  // ball: m_b (7/5) a = 2 f → a = (10/7) f / m_b
  // edge directions of the force on the EE: n + μ t_j, n = +z, t ∈ {+x, −x, +y, −y}
  Eigen::Matrix<double, 3, 4> W;
  W << mu, -mu, 0, 0,  //
      0, 0, mu, -mu,   //
      1, 1, 1, 1;
  // next velocities v⁺ = (v_e⁺, v_b⁺) = Av x + Bv u + Dv λ
  Eigen::MatrixXd Av = Eigen::MatrixXd::Zero(6, nx), Bv = Eigen::MatrixXd::Zero(6, nu),
                  Dv = Eigen::MatrixXd::Zero(6, nl);
  Av.block<6, 6>(0, I::kEeVel).setIdentity();
  Av(5, I::kBallVel + 2) = 0.0;  // the ball's vertical velocity stays 0 (on the table)
  Bv.topRows(3) = dt / p.ee_mass * Eigen::Matrix3d::Identity();
  Dv.topRows(3) = dt / p.ee_mass * W;
  Dv.block(3, 0, 2, nl) = -dt * kroll / p.ball_mass * W.topRows(2);
  // state update: v⁺ as above, p⁺ = p + dt v⁺
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(nx, nx), B(nx, nu), D(nx, nl);
  A.topLeftCorner(6, 6).setIdentity();
  A.topRows(6) += dt * Av;
  A.bottomRows(6) = Av;
  B.topRows(6) = dt * Bv;
  B.bottomRows(6) = Bv;
  D.topRows(6) = dt * Dv;
  D.bottomRows(6) = Dv;
  // relative contact velocity v_e − v_top, v_top = (2 v_b,x, 2 v_b,y, 0)
  Eigen::Matrix<double, 3, 6> G = Eigen::Matrix<double, 3, 6>::Zero();
  G.leftCols(3).setIdentity();
  G(0, 3) = -2.0;
  G(1, 4) = -2.0;
  const Eigen::MatrixXd J = dt * W.transpose() * G;  // nl x 6
  Eigen::MatrixXd E = J * Av;
  E.col(I::kEe + 2).array() += 1.0;    // φ = z_e − z_b − R
  E.col(I::kBall + 2).array() -= 1.0;
  const Eigen::MatrixXd F = J * Dv + p.compliance * Eigen::MatrixXd::Identity(nl, nl);
  const Eigen::MatrixXd H = J * Bv;
  const Eigen::VectorXd c = Eigen::VectorXd::Constant(nl, -radius);
  // to the task's coordinates: EE position relative to the ball, x = T x_abs
  Eigen::MatrixXd T = Eigen::MatrixXd::Identity(nx, nx), Ti = T;
  T.block<3, 3>(I::kEe, I::kBall) = -Eigen::Matrix3d::Identity();
  Ti.block<3, 3>(I::kEe, I::kBall) = Eigen::Matrix3d::Identity();
  return Lcs::time_invariant(N, T * A * Ti, T * B, T * D, Eigen::VectorXd::Zero(nx), E * Ti,
                             0.5 * (F + F.transpose()), H, c);
}

C3Costs ball_rolling_costs(const BallRollingParams& p) {
  (void)p;
  using I = BallIdx;
  C3Costs c;
  Eigen::VectorXd q = Eigen::VectorXd::Zero(I::kNx);
  q.segment<2>(I::kBall).setConstant(1e4);    // ball position (x, y)
  q.segment<2>(I::kBallVel).setConstant(100.0);   // ball velocity (x, y)
  q.segment<2>(I::kEe).setConstant(1e3);          // EE over the ball
  q(I::kEe + 2) = 1e4;                           // EE height: pressing
  q.segment<3>(I::kEeVel).setConstant(0.1);
  c.Q = q.asDiagonal();
  c.QN = c.Q;
  c.R = 0.01 * Eigen::MatrixXd::Identity(I::kNu, I::kNu);
  const int nz = I::kNx + I::kNl + I::kNu;
  c.G = Eigen::VectorXd::Constant(nz, 0.1);
  c.G.segment<I::kNl>(I::kNx).setConstant(10.0);
  c.G.tail<I::kNu>().setConstant(0.1);
  c.U = Eigen::VectorXd::Constant(nz, 0.1);
  c.U.head<I::kNx>().setConstant(1000.0);
  c.x_bound = Eigen::VectorXd::Constant(I::kNx, 5.0);
  c.u_limit = Eigen::VectorXd::Constant(I::kNu, 30.0);
  return c;
}

// C3Settings' defaults (10 ADMM iterations, ρ₀ = 1, ρ doubling, consensus 1e-2)
C3Settings ball_rolling_settings() { return C3Settings{}; }

void ball_rolling_reference(const BallRollingParams& p, double t, const Eigen::Vector3d& ee_rel,
                            Eigen::Ref<Eigen::VectorXd> x_ref) {
  using I = BallIdx;
  const double w = 2.0 * M_PI / p.period, a = w * t;
  x_ref.setZero();
  x_ref(I::kBall) = p.circle_radius * std::cos(a);
  x_ref(I::kBall + 1) = p.circle_radius * std::sin(a);
  x_ref(I::kBall + 2) = p.radius + p.radius_error;
  x_ref(I::kBallVel) = -p.circle_radius * w * std::sin(a);
  x_ref(I::kBallVel + 1) = p.circle_radius * w * std::cos(a);
  x_ref.segment<3>(I::kEe) = ee_rel;
  x_ref(I::kEeVel) = x_ref(I::kBallVel);
  x_ref(I::kEeVel + 1) = x_ref(I::kBallVel + 1);
}

Eigen::Vector3d BallRollingGait::update(const BallRollingParams& p, const Eigen::Ref<const Eigen::VectorXd>& x,
                                        double r_mean) {
  using I = BallIdx;
  const double top = p.radius + p.radius_error - r_mean;  // the model's top above the centre
  const Eigen::Vector2d rel = x.segment<2>(I::kEe);
  if (rolling) {
    if (rel.norm() > p.stroke) {
      // the EE has rolled over the top: lift and go back behind it
      rolling = false;
      back = -0.5 * p.stroke * rel.normalized();
      ++regrips;
    }
  } else if ((rel - back).norm() < 0.003 && x(I::kEe + 2) > top + 0.5 * p.lift) {
    rolling = true;
  }
  if (rolling) return Eigen::Vector3d(0, 0, top - p.press);
  return Eigen::Vector3d(back(0), back(1), top + p.lift);
}

Eigen::VectorXd ball_rolling_x0(const BallRollingParams& p) {
  using I = BallIdx;
  Eigen::VectorXd x = Eigen::VectorXd::Zero(I::kNx);
  x(I::kBall) = p.circle_radius;
  x(I::kBall + 2) = p.radius;  // measured: the true centre height
  x(I::kEe + 2) = p.radius + p.radius_error + 0.01;
  return x;
}

}  // namespace impulse
