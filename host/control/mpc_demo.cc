#pragma GCC diagnostic ignored "-Warray-bounds"
#include "host/control/mpc_demo.h"

#include <algorithm>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "host/control/c3.h"
#include "host/control/lcs.h"
#include "host/control/mpc_tasks.h"
#include "host/control/residual_learner.h"
#include "solvers/error.h"
#include "io/files.h"

namespace impulse {

namespace {

// drain the samples into the learner and run one update, recording its wall time (µs)
void timed_update(ResidualLearner& learner, SampleRing& ring, std::vector<double>& us) {
  learner.drain(ring);
  const auto t0 = std::chrono::steady_clock::now();
  learner.update();
  us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace


CartPoleRunResult run_cartpole(const CartPoleRunOptions& o) {
  CartPoleParams p;
  const int N = 10;
  const Lcs model = cartpole_lcs(p, N);
  const Lcs truth = cartpole_lcs(p, 1, o.true_offset);
  C3Controller c3(model, cartpole_costs(p), cartpole_settings());
  ResidualLearnerSettings ls;
  ls.buffer = 10;
  ls.lr = o.lr;
  ls.Qd = Eigen::Vector4d(0, 0, 1e6, 1e6);  // velocities carry the contact information
  ResidualLearner learner(model, ls);
  SampleRing ring(64, 4, 1);
  c3.attach_residual(&learner.channel());
  c3.attach_samples(&ring);

  CartPoleRunResult res;
  LcsStepWork work;
  Eigen::VectorXd x = o.x0, u(1), xn(4), lam(2);
  const int steps = static_cast<int>(std::lround(o.duration_s / p.dt));
  const int kick_steps = o.kick_every_s > 0 ? static_cast<int>(std::lround(o.kick_every_s / p.dt)) : 0;
  double sum_theta = 0, sum_theta_last = 0;
  int n_last = 0, kicks = 0;
  res.rows.reserve(steps);
  for (int t = 0; t < steps; ++t) {
    if (kick_steps > 0 && t > 0 && t % kick_steps == 0) x(3) += (kicks++ % 2 ? -o.kick : o.kick);
    const auto t0 = std::chrono::steady_clock::now();
    const C3Status s = c3.step(x, t * p.dt, u);
    res.step_us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    res.c3_solved += s == C3Status::kSolved;
    res.c3_budget += s == C3Status::kBudgetExhausted;
    if (s == C3Status::kBadInput) {
      ++res.c3_bad;
      res.fell = true;
      break;
    }
    lcs_step(truth, 0, x, u, xn, lam, work);
    if (o.adapt) {
      c3.observe(x, u, xn);
      if ((t + 1) % o.learn_every == 0) {
        timed_update(learner, ring, res.update_us);
      }
    }
    CartPoleRunRow row;
    row.t = t * p.dt;
    row.x = x;
    row.u = u(0);
    row.lambda = lam;
    row.r = c3.model().r;
    row.loss = learner.stats().loss;
    row.status = static_cast<int>(s);
    res.rows.push_back(row);
    sum_theta += std::fabs(x(1));
    if (t >= 3 * steps / 4) sum_theta_last += std::fabs(x(1)), ++n_last;
    res.wall_impulse += lam.sum() * p.dt;
    x = xn;
    if (std::fabs(x(1)) > 1.2) {
      res.fell = true;
      break;
    }
  }
  const int done = static_cast<int>(res.rows.size());
  res.mean_abs_theta = done ? sum_theta / done : 0;
  res.mean_abs_theta_last = n_last ? sum_theta_last / n_last : 0;
  res.final_r = o.adapt ? learner.residual() : Eigen::VectorXd::Zero(2);
  res.final_r_error = (res.final_r - o.true_offset).cwiseAbs().maxCoeff();
  return res;
}

BallRollingRunResult run_ball_rolling(const BallRollingRunOptions& o) {
  using I = BallIdx;
  BallRollingParams p;
  const int N = o.horizon;
  p.radius_error = o.radius_error;
  const double model_radius = p.radius + p.radius_error;
  // the controller's model (re-linearized every step), the learner's (per sample, at
  // the sampling step; r is in metres: shared), and the truth
  BallRollingModel ctrl_lin(p, model_radius, p.plan_dt);
  BallRollingModel learn_lin(p, model_radius, p.dt);
  BallRollingModel truth_lin(p, p.radius, p.dt);
  Eigen::VectorXd x = ball_rolling_x0(p), u = Eigen::VectorXd::Zero(I::kNu), xn(I::kNx), lam(I::kNl);
  Lcs model = ctrl_lin.make_lcs(N, x);
  Lcs truth = truth_lin.make_lcs(1, x);
  C3Controller c3(model, ball_rolling_costs(p), ball_rolling_settings());
  ResidualLearnerSettings ls;
  ls.buffer = 10;
  ls.lr = o.lr;
  ls.gamma = p.compliance;  // Anitescu: σ_min(F + Fᵀ) ≥ 2κ at every linearization
  Eigen::VectorXd qd = Eigen::VectorXd::Zero(I::kNx);
  qd.segment<4>(I::kEeVel).setConstant(1e4);  // velocities carry the contact information
  ls.Qd = qd;
  ResidualLearner learner(learn_lin.make_lcs(1, x), ls, &learn_lin);
  SampleRing ring(64, I::kNx, I::kNu);
  c3.attach_residual(&learner.channel());
  c3.attach_samples(&ring);

  BallRollingRunResult res;
  LcsStepWork work;
  work.reserve(I::kNl);
  Eigen::MatrixXd xref(I::kNx, N + 1);
  ContactFrame fr;
  fr.resize(1, I::kNq);
  const int steps = static_cast<int>(std::lround(o.duration_s / p.dt));
  double se = 0, se_last = 0;
  int n_last = 0;
  res.min_gap = std::numeric_limits<double>::infinity();
  res.rows.reserve(steps);
  for (int t = 0; t < steps; ++t) {
    const double time = t * p.dt;
    const auto t0 = std::chrono::steady_clock::now();
    // re-linearize the model about the measured state, then one C3 step
    ctrl_lin.linearize(x, u, model, 0);
    replicate_step(model, 0);
    c3.set_model(model);
    ball_rolling_reference(p, time, x, c3.model().r.mean(), xref);
    c3.set_reference(xref);
    const C3Status s = c3.step(x, time, u);
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    res.step_us.push_back(us);
    res.c3_solved += s == C3Status::kSolved;
    res.c3_budget += s == C3Status::kBudgetExhausted;
    if (s == C3Status::kBadInput) {
      ++res.c3_bad;
      break;
    }
    // the true system: the contact model with the true radius, linearized here
    truth_lin.linearize(x, u, truth, 0);
    lcs_step(truth, 0, x, u, xn, lam, work);
    if (o.adapt) {
      c3.observe(x, u, xn);
      if ((t + 1) % o.learn_every == 0) {
        timed_update(learner, ring, res.update_us);
      }
    }
    truth_lin.frame(x, fr);
    BallRollingRunRow row;
    row.t = time;
    row.x = x;
    row.ref = xref.col(0).segment<2>(I::kBall);
    row.u = u;
    row.lambda = lam;
    row.r = c3.model().r;
    row.gap = fr.phi[0];
    row.loss = learner.stats().loss;
    row.status = static_cast<int>(s);
    res.rows.push_back(row);
    const double e2 = (x.segment<2>(I::kBall) - row.ref).squaredNorm();
    se += e2;
    if (t >= steps / 2) {
      se_last += e2, ++n_last;
      res.max_error_last = std::max(res.max_error_last, std::sqrt(e2));
    }
    res.contact_impulse += lam.sum() * p.dt;
    res.max_contact_force = std::max(res.max_contact_force, lam.sum());
    res.min_gap = std::min(res.min_gap, row.gap);
    x = xn;
  }
  const int done = static_cast<int>(res.rows.size());
  res.rms_error = done ? std::sqrt(se / done) : 0;
  res.rms_error_last = n_last ? std::sqrt(se_last / n_last) : 0;
  res.final_r = o.adapt ? Eigen::Vector2d(learner.residual()) : Eigen::Vector2d::Zero();
  return res;
}

namespace {

// writes the CSV atomically (io/zip.h); false with a log line on failure
bool write_csv(const std::string& path, const std::ostringstream& text, std::ostream& log) {
  try {
    write_text_atomic(path, text.str());
    return true;
  } catch (const Error& e) {
    log << "mpc-demo: " << e.what() << "\n";
    return false;
  }
}

bool write_csv_atomic(const std::string& path, const CartPoleRunResult& r, std::ostream& log) {
  std::ostringstream f;
  f.precision(9);
  f << "t,x,theta,xdot,thetadot,u,lambda_right,lambda_left,r_right,r_left,loss,c3_status\n";
  for (const auto& row : r.rows)
    f << row.t << ',' << row.x(0) << ',' << row.x(1) << ',' << row.x(2) << ',' << row.x(3) << ','
      << row.u << ',' << row.lambda(0) << ',' << row.lambda(1) << ',' << row.r(0) << ','
      << row.r(1) << ',' << row.loss << ',' << row.status << '\n';
  return write_csv(path, f, log);
}

bool write_ball_csv_atomic(const std::string& path, const BallRollingRunResult& r, std::ostream& log) {
  std::ostringstream f;
  f.precision(9);
  f << "t,ee_x,ee_y,ball_x,ball_y,ball_spin,ee_vx,ee_vy,ball_vx,ball_vy,ball_spin_rate,"
       "ref_x,ref_y,u_x,u_y,lambda_0,lambda_1,gap,r_0,r_1,loss,c3_status\n";
  for (const auto& row : r.rows) {
    f << row.t;
    for (int i = 0; i < 10; ++i) f << ',' << row.x(i);
    f << ',' << row.ref(0) << ',' << row.ref(1) << ',' << row.u(0) << ',' << row.u(1) << ','
      << row.lambda(0) << ',' << row.lambda(1) << ',' << row.gap << ',' << row.r(0) << ','
      << row.r(1) << ',' << row.loss << ',' << row.status << '\n';
  }
  return write_csv(path, f, log);
}

}  // namespace

std::string latency_summary(std::vector<double> us) {
  if (us.empty()) return "n/a";
  std::sort(us.begin(), us.end());
  auto at = [&](double f) { return us[std::min(us.size() - 1, size_t(f * double(us.size() - 1) + 0.5))]; };
  char buf[96];
  std::snprintf(buf, sizeof buf, "p50 %.0f / p99 %.0f / max %.0f us", at(0.5), at(0.99), us.back());
  return buf;
}

int run_mpc_demo(const std::string& task, bool adapt, const std::string& out_csv, std::ostream& log) {
  if (task == "ball-rolling") {
    BallRollingRunOptions o;
    o.adapt = adapt;
    const BallRollingRunResult r = run_ball_rolling(o);
    log << "mpc-demo ball-rolling (adapt " << (adapt ? "on" : "off") << "): " << r.rows.size()
        << " steps at 80 Hz, learner at 20 Hz; |ball - reference| over the last half: RMS "
        << r.rms_error_last << " m, max " << r.max_error_last << " m (whole run RMS " << r.rms_error
        << " m), circle radius 0.1 m; residual (" << r.final_r(0) << ", " << r.final_r(1)
        << ") m vs true radius error 0.005 m; contact impulse " << r.contact_impulse
        << " N s, max contact force " << r.max_contact_force << " N, min gap " << r.min_gap
        << " m; C3 solved " << r.c3_solved << ", budget " << r.c3_budget << ", bad " << r.c3_bad << "\n"
        << "latency (one core): C3 step with re-linearization " << latency_summary(r.step_us) << " over "
        << r.step_us.size() << " steps; learner update (10 samples) " << latency_summary(r.update_us)
        << " over " << r.update_us.size() << " updates\n";
    if (!out_csv.empty() && !write_ball_csv_atomic(out_csv, r, log)) return 1;
    return r.c3_bad ? 1 : 0;
  }
  if (task != "cartpole") {
    log << "mpc-demo: unknown task '" << task << "' (available: cartpole, ball-rolling)\n";
    return 2;
  }
  CartPoleRunOptions o;
  o.adapt = adapt;
  const CartPoleRunResult r = run_cartpole(o);
  log << "mpc-demo cartpole (adapt " << (adapt ? "on" : "off") << "): " << r.rows.size()
      << " steps at 100 Hz, learner at 20 Hz; mean |theta| " << r.mean_abs_theta
      << " rad (last quarter " << r.mean_abs_theta_last << "), wall impulse " << r.wall_impulse
      << " N s, residual (" << r.final_r(0) << ", " << r.final_r(1) << ") vs true (-0.15, 0.15)"
      << (r.fell ? ", FELL" : "") << "; C3 solved " << r.c3_solved << ", budget "
      << r.c3_budget << "\n"
      << "latency (one core): C3 step " << latency_summary(r.step_us) << " over " << r.step_us.size()
      << " steps; learner update (10 samples) " << latency_summary(r.update_us) << " over "
      << r.update_us.size() << " updates\n";
  if (!out_csv.empty() && !write_csv_atomic(out_csv, r, log)) return 1;
  return r.fell ? 1 : 0;
}

}  // namespace impulse
