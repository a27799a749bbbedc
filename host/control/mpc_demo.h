// Closed-loop adaptive MPC in simulation: C3 (host/control/c3.h) on the controller's model, the
// true system stepped with the LCS simulator (host/control/lcs.h) and the residual learner
// (host/control/residual_learner.h) updated at its own rate, all in simulated time (so a run is
// deterministic: the learner runs synchronously every learn_every control steps
// instead of in a thread).
//
// Cart-pole: control at 100 Hz (the LCS step, 0.01 s; the paper asks ≥ 80 Hz), learner
// at 20 Hz over the last 10 samples. The true walls are offset by Δφ = (−0.15, +0.15) m
// from the model's (paper, Sec. VII-A). The pole is kicked (±1.1 rad/s on the pole
// rate, alternating) every 2 s so that it reaches the walls. With these defaults the
// non-adaptive controller lets the pole fall within ~3.5 s; the adaptive one keeps it up
// for the 30 s and learns r ≈ Δφ (see tests/test_residual_learner.cc). The outcome is
// sensitive to the kick size and learning rate (smaller kicks: both survive; larger:
// both fall).
#pragma once

#include <Eigen/Dense>
#include <ostream>
#include <string>
#include <vector>

namespace impulse {

struct CartPoleRunOptions {
  bool adapt = true;
  double duration_s = 30.0;
  Eigen::Vector2d true_offset{-0.15, 0.15};  // Δφ: c_true = ĉ + Δφ
  Eigen::Vector4d x0{0.0, 0.2, 0.0, 0.0};
  int learn_every = 5;          // control steps per learner update (20 Hz)
  double kick_every_s = 2.0;    // 0: no kicks
  double kick = 1.1;            // [rad/s] added to the pole rate, sign alternating
  double lr = 3e-3;               // Adam step of the learner
};

struct CartPoleRunRow {
  double t;
  Eigen::Vector4d x;
  double u;
  Eigen::Vector2d lambda;  // true wall forces
  Eigen::Vector2d r;       // residual in use
  double loss;             // learner loss of the last update
  int status;              // C3Status
};

struct CartPoleRunResult {
  double mean_abs_theta = 0;     // over the run [rad]
  double mean_abs_theta_last = 0;  // over the last quarter [rad]
  double wall_impulse = 0;       // Σ λ dt over the run [N s]
  double final_r_error = 0;      // max |r − Δφ| at the end
  Eigen::Vector2d final_r{0, 0};
  bool fell = false;             // |θ| exceeded 1.2 rad or the state was rejected
  int c3_solved = 0, c3_budget = 0, c3_bad = 0;
  std::vector<double> step_us, update_us;  // wall time of each C3 step / learner update
  std::vector<CartPoleRunRow> rows;
};

CartPoleRunResult run_cartpole(const CartPoleRunOptions& options);

// "p50 / p99 / max" of a list of latencies (µs), for the demo's summary line.
std::string latency_summary(std::vector<double> us);

// Ball rolling (host/control/mpc_tasks.h, BallRollingParams): C3 at 80 Hz on the model whose ball
// radius is 5 mm too large, re-linearized about the measured state at every step; the
// true ball simulated by the same contact model with the true radius (re-linearized
// every step, Lemke); the learner at 20 Hz over the last 10 samples, each linearized
// about its own state. Reference: the ball centre on a circle of 0.1 m radius, period
// 8 s. Measure: the RMS distance between the ball centre and the reference over the last
// half of the run. Measured with these defaults (16 s): adaptation 1.0 cm (r → 4.8 and
// 5.1 mm), no adaptation 5.8 cm (the model believes its contact pushes 5 mm deeper than it
// does; the ball ends on a 0.155 m circle), exact model 0.9 cm.
struct BallRollingRunOptions {
  bool adapt = true;
  double duration_s = 16.0;
  int learn_every = 4;      // control steps per learner update (80 Hz / 4 = 20 Hz)
  double lr = 5e-4;         // Adam step of the learner [m] (1e-3 overshoots to r ≈ 1.5 cm
                            // for an 8 mm error and loses the ball)
  int horizon = 10;         // C3 horizon N (of BallRollingParams::plan_dt)
  double radius_error = 0.005;  // model radius − true radius [m]
};

struct BallRollingRunRow {
  double t;
  Eigen::Matrix<double, 10, 1> x;
  Eigen::Vector2d ref;        // ball centre reference (x, y)
  Eigen::Vector2d u;          // EE force
  Eigen::Vector2d lambda;     // true contact edge forces
  Eigen::Vector2d r;          // residual in use
  double gap;                 // true EE/ball gap [m]
  double loss;
  int status;
};

struct BallRollingRunResult {
  double rms_error_last = 0;  // RMS |ball − ref| over the last half [m]
  double rms_error = 0;       // over the whole run [m]
  double max_error_last = 0;  // max |ball − ref| over the last half [m]
  double contact_impulse = 0; // Σ (λ₀ + λ₁) dt (true contact) [N s]
  double max_contact_force = 0;  // largest true normal force [N] (rolling needs ≤ ~6.9 N)
  double min_gap = 0;         // smallest true gap (penetration if < 0) [m]
  Eigen::Vector2d final_r = Eigen::Vector2d::Zero();
  int c3_solved = 0, c3_budget = 0, c3_bad = 0;
  std::vector<double> step_us, update_us;  // wall time of each C3 step (with its re-linearization) / learner update
  std::vector<BallRollingRunRow> rows;
};

BallRollingRunResult run_ball_rolling(const BallRollingRunOptions& options);

// CLI entry (`impulse mpc-demo --task cartpole|ball-rolling [--adapt on|off] --out F`):
// runs the task, writes the trajectory, residual and loss history as CSV (temp file +
// rename), logs a summary. Returns 0 on success, 1 on a failed run, 2 on bad arguments.
int run_mpc_demo(const std::string& task, bool adapt, const std::string& out_csv, std::ostream& log);

}  // namespace impulse
