#pragma GCC diagnostic ignored "-Warray-bounds"
#include "host/control/mpc_tasks.h"

#include <cmath>

#include "solvers/error.h"

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

BallRollingModel::BallRollingModel(const BallRollingParams& p, double radius, double dt)
    : p_(p), radius_(radius) {
  using I = BallIdx;
  settings_.dt = dt;
  settings_.compliance = p.compliance;
  settings_.friction_edges = 2;
  settings_.validate();
  if (!(radius > 0.0) || !(p.ball_mass > 0.0) || !(p.ee_mass > 0.0) || !(p.mu >= 0.0))
    throw Error("BallRollingModel: radius, masses must be > 0 and mu >= 0");
  const int n = I::kNq;
  Minv_.setZero(n, n);
  Minv_(0, 0) = Minv_(1, 1) = 1.0 / p.ee_mass;
  Minv_(2, 2) = Minv_(3, 3) = 1.0 / (1.4 * p.ball_mass);  // rolling: m_b (7/5) a = F
  Minv_(4, 4) = 1.0 / (0.4 * p.ball_mass * radius * radius);
  Bu_.setZero(n, I::kNu);
  Bu_(0, 0) = Bu_(1, 1) = 1.0;
  f0_.setZero(n);
  frame_.resize(1, n);
  work_.reserve(n, I::kNu, I::kNl);
}

void BallRollingModel::frame(const Eigen::Ref<const Eigen::VectorXd>& x, ContactFrame& f) const {
  using I = BallIdx;
  const double dx = x[I::kBall] - x[I::kEe], dy = x[I::kBall + 1] - x[I::kEe + 1];
  const double dist = std::hypot(dx, dy);
  // normal from the EE to the ball centre (any direction when they coincide)
  const double nx = dist > 1e-12 ? dx / dist : 1.0, ny = dist > 1e-12 ? dy / dist : 0.0;
  const double tx = -ny, ty = nx;  // ẑ × n
  f.phi[0] = dist - radius_;
  f.Jn.setZero();
  f.Jn(0, I::kEe) = -nx, f.Jn(0, I::kEe + 1) = -ny;
  f.Jn(0, I::kBall) = nx, f.Jn(0, I::kBall + 1) = ny;
  f.Jt.setZero();
  f.Jt(0, I::kEe) = -p_.mu * tx, f.Jt(0, I::kEe + 1) = -p_.mu * ty;
  f.Jt(0, I::kBall) = p_.mu * tx, f.Jt(0, I::kBall + 1) = p_.mu * ty;
  f.Jt(0, I::kSpin) = -p_.mu * radius_;
}

void BallRollingModel::linearize(const Eigen::Ref<const Eigen::VectorXd>& x,
                                 const Eigen::Ref<const Eigen::VectorXd>& /*u*/, Lcs& out, int k) {
  frame(x, frame_);
  anitescu_lcs_step(frame_, x.head(BallIdx::kNq), Minv_, f0_, Bu_, settings_, work_, out, k);
}

Lcs BallRollingModel::make_lcs(int N, const Eigen::Ref<const Eigen::VectorXd>& x) {
  Lcs l = make_lcs_storage(N, nx(), nu(), nl());
  linearize(x, Eigen::VectorXd::Zero(nu()), l, 0);
  replicate_step(l, 0);
  return l;
}

C3Costs ball_rolling_costs(const BallRollingParams& p) {
  (void)p;
  using I = BallIdx;
  C3Costs c;
  Eigen::VectorXd q = Eigen::VectorXd::Zero(I::kNx);
  q.segment<2>(I::kBall).setConstant(1e4);      // ball position
  q.segment<2>(I::kBallVel).setConstant(1e3);   // ball velocity
  q.segment<2>(I::kEe).setConstant(3e3);        // EE at the push pose
  q.segment<2>(I::kEeVel).setConstant(1.0);
  c.Q = q.asDiagonal();
  c.QN = c.Q;
  c.R = 1e-2 * Eigen::MatrixXd::Identity(I::kNu, I::kNu);
  const int nz = I::kNx + I::kNl + I::kNu;
  c.G = Eigen::VectorXd::Constant(nz, 0.1);
  c.G.segment<I::kNl>(I::kNx).setConstant(10.0);
  c.U = Eigen::VectorXd::Constant(nz, 0.1);
  c.U.head<I::kNx>().setConstant(1000.0);
  c.x_bound = Eigen::VectorXd::Constant(I::kNx, 5.0);
  c.x_bound[I::kSpin] = 1e9;                         // the spin angle is free
  c.x_bound.segment<5>(I::kEeVel).setConstant(20.0);
  c.x_bound[I::kSpinRate] = 1e3;
  c.u_limit = Eigen::VectorXd::Constant(I::kNu, 30.0);
  return c;
}

// C3Settings' defaults (10 ADMM iterations, ρ₀ = 1, ρ doubling, consensus 1e-2)
C3Settings ball_rolling_settings() { return C3Settings{}; }

void ball_rolling_reference(const BallRollingParams& p, double t, const Eigen::Ref<const Eigen::VectorXd>& x,
                            double r_mean, Eigen::Ref<Eigen::MatrixXd> x_ref) {
  using I = BallIdx;
  const double w = 2.0 * M_PI / p.period, R = p.circle_radius;
  const double a0 = w * t, c0 = std::cos(a0), s0 = std::sin(a0);
  const double bx = x[I::kBall], by = x[I::kBall + 1];
  // desired push direction d: the circle's acceleration plus PD on the ball
  double dx = -R * w * w * c0 + p.kp * (R * c0 - bx) + p.kd * (-R * w * s0 - x[I::kBallVel]);
  double dy = -R * w * w * s0 + p.kp * (R * s0 - by) + p.kd * (R * w * c0 - x[I::kBallVel + 1]);
  const double dn = std::hypot(dx, dy);
  if (dn > 1e-9) dx /= dn, dy /= dn;
  else dx = -s0, dy = c0;  // along the circle
  // the EE's direction from the ball now, and the push pose's (−d)
  double ex = x[I::kEe] - bx, ey = x[I::kEe + 1] - by;
  const double en = std::hypot(ex, ey);
  if (en > 1e-9) ex /= en, ey /= en;
  else ex = -dx, ey = -dy;
  const double cross = ex * (-dy) - ey * (-dx), dot = ex * (-dx) + ey * (-dy);
  const double delta = std::atan2(cross, dot);  // angle from e to −d
  const double reach = p.radius + p.radius_error - r_mean;  // the model's contact distance
  double ox, oy, dist;
  if (std::fabs(delta) <= p.push_cone) {
    ox = -dx, oy = -dy, dist = reach - p.press;  // push
  } else {
    // orbit: turn around the ball at a clearance, at most orbit_step ahead of the EE
    const double step = std::copysign(std::fmin(std::fabs(delta), p.orbit_step), delta);
    ox = std::cos(step) * ex - std::sin(step) * ey;
    oy = std::sin(step) * ex + std::cos(step) * ey;
    dist = reach + p.clearance;
  }
  x_ref.setZero();
  for (int k = 0; k < x_ref.cols(); ++k) {
    const double a = w * (t + k * p.plan_dt);
    auto col = x_ref.col(k);
    col[I::kBall] = R * std::cos(a);
    col[I::kBall + 1] = R * std::sin(a);
    col[I::kBallVel] = -R * w * std::sin(a);
    col[I::kBallVel + 1] = R * w * std::cos(a);
    // the EE at the pose relative to the ball, moving with the reference
    col[I::kEe] = bx + (col[I::kBall] - R * c0) + dist * ox;
    col[I::kEe + 1] = by + (col[I::kBall + 1] - R * s0) + dist * oy;
    col[I::kEeVel] = col[I::kBallVel];
    col[I::kEeVel + 1] = col[I::kBallVel + 1];
  }
}

Eigen::VectorXd ball_rolling_x0(const BallRollingParams& p) {
  using I = BallIdx;
  Eigen::VectorXd x = Eigen::VectorXd::Zero(I::kNx);
  x[I::kBall] = p.circle_radius;
  x[I::kEe] = p.circle_radius;
  x[I::kEe + 1] = -(p.radius + p.radius_error + 0.01);
  return x;
}

}  // namespace impulse
