// Control tasks for C3 (host/control/c3.h) and the adaptive loop (host/control/residual_learner.h).
//
// Cart-pole between two soft walls (papers/adaptive-c3-residual-learning-2024.txt,
// Sec. VII-A; the model of Aydinoglu et al., "Stabilization of complementarity systems
// via contact-aware controllers", as in the C3 reference examples). State
// x = (cart position [m], pole angle from upright [rad], cart velocity [m/s], pole rate
// [rad/s]); input u = horizontal force on the cart [N]; λ = (right wall, left wall) spring
// forces on the pole tip [N]. Parameters (SI):
//   cart mass 0.978 kg, pole mass 0.411 kg, pole length 0.6 m (tip lever), pole centre of
//   mass at 0.4267 m, g = 9.81 m/s²; walls at ±0.35 m from the origin, modelled as
//   springs of stiffness 100 N/m (λ = k·penetration: 0 ≤ λ ⊥ gap + λ/k ≥ 0);
//   time step 0.01 s (explicit Euler of the linearization about the upright equilibrium).
// The true system is this LCS with the true wall offsets (c_true = ĉ + Δφ), stepped
// with Lemke (lcs_step); the controller's model uses ĉ.
//
// Ball rolling on a table (see BallRollingParams below).
#pragma once

#include <Eigen/Dense>

#include "host/control/c3.h"
#include "host/control/lcs.h"
#include "host/control/lcs_linearize.h"

namespace impulse {

struct CartPoleParams {
  double mc = 0.978, mp = 0.411, len_p = 0.6, len_com = 0.4267, g = 9.81;
  double wall = 0.35;      // nominal wall distance [m] (the model's ĉ)
  double stiffness = 100;  // wall spring [N/m]
  double dt = 0.01;        // [s]
};

// the LCS (time-invariant over N steps) with wall offsets c = (wall, wall) + offset.
Lcs cartpole_lcs(const CartPoleParams& p, int N, const Eigen::Vector2d& offset = Eigen::Vector2d::Zero());

// C3 weights of the reference example: Q = diag(10, 3, 1, 1), R = 1, Q_N = the DARE
// solution of the contact-free linearization; G = (0.1 x, 10 λ, 0.1 u),
// U = (1000 x, 0.1 λ, 0.1 u); bounds on |x| (5 m, 1.5 rad, 20 m/s, 40 rad/s), |u| ≤ 50 N.
C3Costs cartpole_costs(const CartPoleParams& p);
C3Settings cartpole_settings();

// ---- ball rolling -----------------------------------------------------------------
//
// A point end-effector (EE) rolls a ball on a table along a circle (paper Sec. VII-B,
// in simulation). Planar: the EE tip is held at the height of the ball's centre by the
// arm's impedance controller and pushes the ball at its equator; the ball rolls on the
// table without slipping. (An EE on top of the ball, as on the paper's robot, must lift
// and return after every stroke, a gait C3's 0.25 s horizon cannot plan; a first version
// with that gait did not follow the circle even with the exact model.)
//
// Bodies and contact (host/control/lcs_linearize.h builds the LCS, Anitescu, rows in metres):
//   * EE: point of mass ee_mass, input u = planar force beyond gravity compensation [N];
//   * ball: radius R, mass m_b; rolling without slip under a horizontal force F through
//     its centre gives m_b (7/5) a = F, so its planar effective mass is 1.4 m_b; its spin
//     ω_z about the vertical (inertia 2/5 m_b R²) is free (no pivot friction). Rolling
//     needs the table friction (2/7)|F| ≤ μ_table m_b g: |F| ≤ 6.9 N for μ_table = 0.5
//     (the run reports the largest contact force);
//   * EE/ball contact: sphere-point, gap φ = |p_b − p_e| − R, normal n = (p_b − p_e)/|·|,
//     tangent t = ẑ × n; friction μ with the planar cone's two edges (n ± μ t); the ball's
//     contact point moves at v_b − R ω_z t (rolling adds only a vertical component).
// The true ball is simulated by re-linearizing this model at every step with the true
// radius and solving the step's LCP with Lemke (lcs_step): Anitescu time stepping. The
// controller re-linearizes the same model at every step with its own radius (5 mm too
// large: a gap error of −5 mm in every row, which r learns as +5 mm).
//
// State x (10) = (q, v): q = (EE position (2), ball centre (2), ball spin angle),
// v = (EE velocity (2), ball velocity (2), spin rate) [m, rad, m/s, rad/s]; u (2) [N];
// λ (2): the two cone-edge forces [N].
struct BallRollingParams {
  // ball: a 10 cm solid ball of density ~760 kg/m³ (a hard wooden or polymer ball);
  // the paper's balls are of this size (Fig. 5); its exact values are not given.
  double radius = 0.05;         // true radius [m]
  double radius_error = 0.005;  // the controller's model uses radius + this (paper: 5 mm)
  double ball_mass = 0.4;       // [kg], uniform sphere
  // EE: apparent mass of a Franka Panda under Cartesian impedance control, order 1 kg
  double ee_mass = 1.0;         // [kg]
  double mu = 0.4;              // EE/ball friction
  double compliance = 1e-4;     // κ [m/N]: 1 N presses 0.1 mm (a stiff 10 kN/m contact)
  double dt = 0.0125;           // control and simulation step [s] (C3 at 80 Hz, as the paper)
  double plan_dt = 0.025;       // C3's model step [s] (horizon N plan_dt)
  // reference: the ball centre on a circle about the origin, counter-clockwise, starting
  // at angle 0 (the ball's initial position)
  double circle_radius = 0.1;   // [m]
  double period = 8.0;          // [s]: 0.079 m/s along the circle
  // EE reference (ball_rolling_reference): the push pose is behind the ball along the
  // desired acceleration d = a_ref + kp e_p + kd e_v, at the model's contact distance
  // minus `press`; when the EE is more than push_cone away from it (angle about the ball),
  // the EE orbits towards it at `clearance` from the model's surface
  double press = 0.0;           // [m]
  double kp = 16.0;             // [1/s²]
  double kd = 8.0;              // [1/s]
  double push_cone = 0.5;       // [rad]
  double orbit_step = 0.6;      // [rad] how far ahead of the EE the orbit reference is
  double clearance = 0.01;      // [m]
};

// state indices
struct BallIdx {
  static constexpr int kEe = 0, kBall = 2, kSpin = 4, kEeVel = 5, kBallVel = 7, kSpinRate = 9;
  static constexpr int kNq = 5, kNx = 10, kNu = 2, kNl = 2;
};

// The EE/ball/table model above as an LcsLinearizer: linearize() fills one step about
// (x, u) for the given ball radius and step. No allocation after construction; one
// instance per thread.
class BallRollingModel final : public LcsLinearizer {
 public:
  BallRollingModel(const BallRollingParams& p, double radius, double dt);
  int nx() const override { return BallIdx::kNx; }
  int nu() const override { return BallIdx::kNu; }
  int nl() const override { return BallIdx::kNl; }
  void linearize(const Eigen::Ref<const Eigen::VectorXd>& x, const Eigen::Ref<const Eigen::VectorXd>& u,
                 Lcs& out, int k) override;
  // the contact frame (φ, J_n, J_t with μ folded in) at the configuration part of x
  void frame(const Eigen::Ref<const Eigen::VectorXd>& x, ContactFrame& out) const;
  // an N-step LCS linearized about x (allocates; for set-up and tests)
  Lcs make_lcs(int N, const Eigen::Ref<const Eigen::VectorXd>& x);
  double radius() const { return radius_; }

 private:
  BallRollingParams p_;
  double radius_;
  AnitescuSettings settings_;
  Eigen::MatrixXd Minv_, Bu_;
  Eigen::VectorXd f0_;
  ContactFrame frame_;
  AnitescuWork work_;
};

// C3 weights: ball position and velocity to the reference, the EE to the push reference;
// G, U as in cartpole_costs (λ weighted in the QP step, x held in the projection);
// |u| ≤ 30 N.
C3Costs ball_rolling_costs(const BallRollingParams& p);
C3Settings ball_rolling_settings();

// the reference for C3 over the horizon (nx x (N+1), column k at time t + k·plan_dt): the
// ball on the circle with its velocity; the EE at the push pose (or orbiting towards it,
// see BallRollingParams), relative to the measured ball and moving with the reference.
// The model's contact distance is its radius − r_mean (the residual learned so far). No
// allocation.
void ball_rolling_reference(const BallRollingParams& p, double t, const Eigen::Ref<const Eigen::VectorXd>& x,
                            double r_mean, Eigen::Ref<Eigen::MatrixXd> x_ref);

// the initial state: ball at rest at the start of the circle, EE at rest 1 cm behind it
// (−y side: the circle starts towards +y), at the model's contact distance + 1 cm.
Eigen::VectorXd ball_rolling_x0(const BallRollingParams& p);

}  // namespace impulse
