// Control tasks for C3 (host/c3.h) and the adaptive loop (host/residual_learner.h).
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

#include "host/c3.h"
#include "host/lcs.h"

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
// A point end-effector (EE) rolls a ball on a table (paper Sec. VII-B; the C3 ball-rolling
// example of Aydinoglu, Wei and Posa 2023). 3-D, with these simplifications:
//   * the EE touches the ball near its top: the contact normal is fixed to +z (the
//     linearization about "EE above the centre"); the gap is φ = z_e − z_b − R (the cost
//     keeps the EE over the centre, where this holds);
//   * the ball/table contact is sticking and closed (rolling without slip, ball centre at
//     z = R): it is eliminated instead of being a complementarity row, which leaves the
//     ball's horizontal dynamics m_b (7/5) a = 2 f for a horizontal force f at the top
//     (the top point then moves at 2 v_b). This needs the table friction |f_t| = 3/7 |f|
//     ≤ μ_t (m_b g + N_ee); with |f| ≤ μ N_ee that holds for any table μ_t ≥ 3/7 μ ≈ 0.26;
//   * EE/ball friction: Anitescu's linearized cone with 4 edges (±x, ±y), so λ (4) are
//     the edge forces [N]; EE force on the ball is −Σ λ_j (n + μ t_j).
// Time stepping is semi-implicit Euler (v⁺ from forces, p⁺ = p + dt v⁺). Each
// complementarity row is Anitescu's condition scaled to metres,
//   0 ≤ λ_j ⊥ φ + dt (n + μ t_j)ᵀ (v_e⁺ − v_top⁺) + κ λ_j ≥ 0,
// so c = −R and a radius error shows up in r as the same offset in metres in every row.
// κ (compliance) regularizes F (Anitescu's F is only PSD; paper eq. 8's ε_c).
//
// State x (12) = (EE position relative to the ball centre, ball centre, EE velocity, ball
// velocity) [m, m/s] (relative, so that the cost keeps the EE over the ball);
// input u (3) = force on the EE beyond gravity compensation [N] (what the paper's
// impedance controller tracks); λ (4) as above.
struct BallRollingParams {
  // ball: a 10 cm solid ball of density ~760 kg/m³ (a hard wooden or polymer ball);
  // the paper's balls are of this size (Fig. 5); its exact values are not given.
  double radius = 0.05;         // true radius [m]
  double radius_error = 0.005;  // the controller's model uses radius + this (paper: 5 mm)
  double ball_mass = 0.4;       // [kg], uniform sphere (I = 2/5 m R²)
  // EE: apparent mass of a Franka Panda under Cartesian impedance control, order 1 kg
  double ee_mass = 1.0;         // [kg]
  double mu = 0.6;              // EE/ball friction (rubber tip on a hard ball)
  double compliance = 1e-4;     // κ [m/N]: 1 N presses 0.1 mm (a stiff 10 kN/m contact)
  double dt = 0.0125;           // control and simulation step [s] (C3 at 80 Hz, as the paper)
  double plan_dt = 0.025;       // C3's model step [s] (horizon N plan_dt)
  // reference: the ball centre on a circle (centre, radius, period), counter-clockwise,
  // starting at angle 0 (the ball's initial position)
  double circle_radius = 0.1;   // [m]
  double period = 8.0;          // [s]: 0.079 m/s along the circle
  double press = 0.002;         // EE z reference: the model's ball top − press [m]
  double stroke = 0.015;        // re-grip when the EE is this far from the centre [m]
  double lift = 0.01;           // lift height above the model's top when re-gripping [m]
};

// state indices
struct BallIdx {
  static constexpr int kEe = 0, kBall = 3, kEeVel = 6, kBallVel = 9, kNx = 12, kNu = 3, kNl = 4;
};

// the LCS over N steps of dt for a ball of the given radius (time-invariant). Rows are in
// metres, so the residual r means the same for any dt.
Lcs ball_rolling_lcs(const BallRollingParams& p, int N, double radius, double dt);

// C3 weights: ball position to the reference (and its velocity), the EE held over the
// ball reference at press depth; G, U as in cartpole_costs (λ weighted in the QP step,
// x held in the projection); |u| ≤ 30 N.
C3Costs ball_rolling_costs(const BallRollingParams& p);
C3Settings ball_rolling_settings();

// the reference state at time t: ball on the circle with its velocity; EE over the
// ball's centre at the model's radius − press (pressing), with the ball's velocity. No
// allocation.
void ball_rolling_reference(const BallRollingParams& p, double t, const Eigen::Vector3d& ee_rel,
                            Eigen::Ref<Eigen::VectorXd> x_ref);

// Re-grip heuristic for the EE reference (C3 plans contact forces over a 0.25 s horizon,
// too short to plan a lift-and-return itself; the C3 ball-rolling example uses a
// heuristic of this kind too). Rolling with a sticking contact moves the EE over the ball
// at the ball's speed (the top moves at 2 v_b), so after a stroke the EE must lift, move
// back behind the top and press again:
//   rolling: EE reference over the centre at the model's top − press; when the EE is more
//            than `stroke` from the centre (horizontally), switch to lifting;
//   lifting: EE reference `stroke`/2 behind the centre (opposite to where it went), `lift`
//            above the model's top; back to rolling when there.
// The model's top is (model radius − r̄) above the centre, r̄ the mean residual in use: the
// reference follows the adapted model.
struct BallRollingGait {
  bool rolling = true;
  Eigen::Vector2d back = Eigen::Vector2d::Zero();
  int regrips = 0;
  // the EE reference relative to the ball centre for state x. No allocation.
  Eigen::Vector3d update(const BallRollingParams& p, const Eigen::Ref<const Eigen::VectorXd>& x, double r_mean);
};
// the initial state: ball at rest at the start of the circle, EE 1 cm above the model's top.
Eigen::VectorXd ball_rolling_x0(const BallRollingParams& p);

}  // namespace impulse
