#include "host/dynamics/simulate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <mutex>
#include <utility>

#include "host/batch/qp_batch.h"
#include "solvers/error.h"
#include "io/files.h"

namespace impulse {

namespace {
constexpr double kPi = 3.14159265358979323846;
}

// ---- options -----------------------------------------------------------------------

const char* SimOptions::validate() const {
  static thread_local char msg[160];
  if (!(std::isfinite(dt) && dt > 0.0)) {
    std::snprintf(msg, sizeof msg, "dt must be finite and > 0, got %g", dt);
    return msg;
  }
  if (friction_directions < 1) {
    std::snprintf(msg, sizeof msg, "friction_directions must be >= 1, got %d", friction_directions);
    return msg;
  }
  if (!(std::isfinite(regularization) && regularization >= 0.0)) {
    std::snprintf(msg, sizeof msg, "regularization must be finite and >= 0, got %g", regularization);
    return msg;
  }
  if (restitution != 0.0) {
    std::snprintf(msg, sizeof msg, "restitution is not modelled by the Stewart-Trinkle step; must be 0, got %g",
                  restitution);
    return msg;
  }
  if (regularization_retries < 0) {
    std::snprintf(msg, sizeof msg, "regularization_retries must be >= 0, got %d", regularization_retries);
    return msg;
  }
  if (const char* m = lemke.validate()) {
    std::snprintf(msg, sizeof msg, "lemke settings: %s", m);
    return msg;
  }
  return nullptr;
}

// ---- Simulator ---------------------------------------------------------------------

Simulator::Simulator(const BodyParams& body, const SimOptions& options)
    : body_(body), options_(options) {
  if (const char* m = options_.validate()) throw Error(std::string("SimOptions: ") + m);
  if (!(std::isfinite(body_.mass) && body_.mass > 0.0))
    throw Error("BodyParams: mass must be finite and > 0, got " + std::to_string(body_.mass));
  if (!body_.inertia.allFinite() || body_.inertia.determinant() <= 0.0)
    throw Error("BodyParams: inertia must be finite and positive definite");
  mass_inv_ = body_.mass_matrix_inverse();
  const int nd = options_.friction_directions;
  dir_cos_.resize(nd);
  dir_sin_.resize(nd);
  for (int j = 0; j < nd; ++j) {
    const double th = 2.0 * kPi * j / nd;
    dir_cos_[j] = std::cos(th);
    dir_sin_[j] = std::sin(th);
  }
}

void Simulator::reserve(int k) {
  if (k <= capacity_) return;
  const int nd = options_.friction_directions;
  const size_t rows = static_cast<size_t>(1 + nd) * k;
  const size_t n = static_cast<size_t>(2 + nd) * k;
  active_.reserve(k);
  in_lcp_.resize(k);
  J_.resize(rows * 6);
  Y_.resize(rows * 6);
  M_.resize(n * n);
  q_.resize(n);
  z_.resize(n);
  w_.resize(n);
  z_best_.resize(n);
  lemke_ws_.reserve(static_cast<int>(n));
  capacity_ = k;
}

LcpView Simulator::last_lcp() const {
  LcpView v;
  v.n = n_;
  v.M = M_.data();
  v.q = q_.data();
  v.z = z_.data();
  v.w = w_.data();
  return v;
}

void Simulator::build_lcp(double reg) {
  const int na = static_cast<int>(active_.size());
  const int nd = options_.friction_directions;
  const int m = (1 + nd) * na;  // rows of J = [J_n; J_D]
  const int n = (2 + nd) * na;
  n_ = n;
  const double dt = options_.dt;

  // rows of J: normal rows first, then nd friction rows per contact
  for (int a = 0; a < na; ++a) {
    const int c = active_[a];
    double* row = &J_[static_cast<size_t>(a) * 6];
    for (int col = 0; col < 6; ++col) row[col] = frame_.Jn(c, col);
    for (int j = 0; j < nd; ++j) {
      double* rd = &J_[static_cast<size_t>(na + a * nd + j) * 6];
      for (int col = 0; col < 6; ++col)
        rd[col] = dir_cos_[j] * frame_.Jt(2 * c, col) + dir_sin_[j] * frame_.Jt(2 * c + 1, col);
    }
  }
  const bool moving = frame_.moving();
  // Y = J M⁻¹ (M⁻¹ symmetric), and q's first m entries J ν_free
  for (int r = 0; r < m; ++r) {
    const Eigen::Map<const Eigen::Matrix<double, 1, 6>> Jr(&J_[static_cast<size_t>(r) * 6]);
    Eigen::Map<Eigen::Matrix<double, 1, 6>> Yr(&Y_[static_cast<size_t>(r) * 6]);
    Yr.noalias() = Jr * mass_inv_;
    q_[r] = Jr.dot(nu_free_);
  }
  for (int a = 0; a < na; ++a) q_[a] += frame_.phi(active_[a]) / dt;
  if (moving)  // a moving obstacle: its velocity enters the gap and slip rates
    for (int a = 0; a < na; ++a) {
      const int c = active_[a];
      q_[a] += frame_.vn(c);
      for (int j = 0; j < nd; ++j) q_[na + a * nd + j] += dir_cos_[j] * frame_.vt(2 * c) + dir_sin_[j] * frame_.vt(2 * c + 1);
    }
  for (int a = 0; a < na; ++a) q_[m + a] = 0.0;

  // M: J M⁻¹ Jᵀ block (symmetric), the E couplings and the cone rows
  std::fill(M_.begin(), M_.begin() + static_cast<size_t>(n) * n, 0.0);
  for (int r = 0; r < m; ++r) {
    const double* yr = &Y_[static_cast<size_t>(r) * 6];
    double* Mr = &M_[static_cast<size_t>(r) * n];
    for (int s = r; s < m; ++s) {
      const double* js = &J_[static_cast<size_t>(s) * 6];
      double acc = 0.0;
      for (int col = 0; col < 6; ++col) acc += yr[col] * js[col];
      Mr[s] = acc;
      M_[static_cast<size_t>(s) * n + r] = acc;
    }
  }
  for (int a = 0; a < na; ++a) {
    double* gamma_row = &M_[static_cast<size_t>(m + a) * n];
    gamma_row[a] = 1.0;  // μ = 1 (friction lumped into J_t)
    for (int j = 0; j < nd; ++j) {
      const int b = na + a * nd + j;
      M_[static_cast<size_t>(b) * n + m + a] = 1.0;  // E
      gamma_row[b] = -1.0;                            // −Eᵀ
    }
  }
  for (int i = 0; i < n; ++i) M_[static_cast<size_t>(i) * n + i] += reg;
}

SolveStatus Simulator::solve_lcp(StepInfo& info) {
  const int n = n_;
  double reg = options_.regularization;
  double best_res = std::numeric_limits<double>::infinity();
  double best_reg = reg;
  bool have_best = false;
  SolveStatus last = SolveStatus::kNotRun;
  for (int attempt = 0; attempt <= options_.regularization_retries; ++attempt) {
    if (attempt > 0) {
      // same LCP with a 10x larger diagonal shift
      const double next = reg == 0.0 ? 1e-6 : reg * 10.0;
      for (int i = 0; i < n; ++i) M_[static_cast<size_t>(i) * n + i] += next - reg;
      reg = next;
    }
    const LemkeInfo li =
        lemke_solve(n, M_.data(), q_.data(), z_.data(), w_.data(), options_.lemke, lemke_ws_);
    ++info.solves;
    info.pivots += li.pivots;
    last = li.status;
    if (li.status == SolveStatus::kSolved) {
      info.residual = li.residual;
      info.regularization = reg;
      return last;
    }
    if (li.status != SolveStatus::kInvalidInput && std::isfinite(li.residual) &&
        li.residual < best_res) {
      best_res = li.residual;
      best_reg = reg;
      std::copy(z_.begin(), z_.begin() + n, z_best_.begin());
      have_best = true;
    }
  }
  // every attempt failed: the best iterate (or nothing), on the LCP it belongs to
  for (int i = 0; i < n; ++i) M_[static_cast<size_t>(i) * n + i] += best_reg - reg;
  if (have_best) {
    std::copy(z_best_.begin(), z_best_.begin() + n, z_.begin());
  } else {
    std::fill(z_.begin(), z_.begin() + n, 0.0);
  }
  info.residual = lemke_detail::residual(n, M_.data(), q_.data(), z_.data(), w_.data());
  info.regularization = best_reg;
  return last;
}

void Simulator::apply_impulses() {
  const int na = static_cast<int>(active_.size());
  const int m = (1 + options_.friction_directions) * na;
  Vec6 g = Vec6::Zero();
  for (int r = 0; r < m; ++r) {
    const double zr = z_[r];
    if (zr == 0.0) continue;
    g += zr * Eigen::Map<const Vec6>(&J_[static_cast<size_t>(r) * 6]);
  }
  nu_next_ = nu_free_ + mass_inv_ * g;
}

State Simulator::step(const ContactModel& model, const State& x, StepInfo* info_out) {
  StepInfo info;
  frame_.vn.setZero();  // a model that does not set them: a static environment
  frame_.vt.setZero();
  model.evaluate(x, frame_);
  const int k = frame_.contacts();
  if (frame_.Jn.rows() != k || frame_.Jn.cols() != 6 || frame_.Jt.rows() != 2 * k ||
      frame_.Jt.cols() != 6)
    throw Error("contact frame: expected Jn " + std::to_string(k) + " x 6 and Jt " +
                std::to_string(2 * k) + " x 6, got Jn " + std::to_string(frame_.Jn.rows()) + " x " +
                std::to_string(frame_.Jn.cols()) + " and Jt " + std::to_string(frame_.Jt.rows()) +
                " x " + std::to_string(frame_.Jt.cols()));
  reserve(k);
  const bool moving = frame_.moving();
  auto vn = [&](int i) { return moving ? frame_.vn(i) : 0.0; };
  info.contacts = k;
  const double dt = options_.dt;
  const int nd = options_.friction_directions;

  // free-flight velocity
  nu_free_ = velocity(x) + mass_inv_ * (smooth_impulse(x, body_, dt) + external_);

  // contacts that free flight would close within the step
  for (int i = 0; i < k; ++i)
    in_lcp_[i] = !options_.drop_separated || frame_.phi(i) + dt * (frame_.Jn.row(i).dot(nu_free_) + vn(i)) <= 0.0;

  SolveStatus status = SolveStatus::kSolved;
  for (;;) {
    active_.clear();
    for (int i = 0; i < k; ++i)
      if (in_lcp_[i]) active_.push_back(i);
    if (active_.empty()) {
      n_ = 0;
      nu_next_ = nu_free_;
      status = SolveStatus::kSolved;
      info.residual = 0.0;
      info.regularization = 0.0;
    } else {
      build_lcp(options_.regularization);
      status = solve_lcp(info);
      apply_impulses();
    }
    if (!options_.drop_separated) break;
    // left-out contacts the impulses drive into the table join the LCP
    bool added = false;
    for (int i = 0; i < k; ++i) {
      if (in_lcp_[i]) continue;
      if (frame_.phi(i) / dt + frame_.Jn.row(i).dot(nu_next_) + vn(i) < 0.0) {
        in_lcp_[i] = 1;
        added = true;
      }
    }
    if (!added) break;
  }

  // impulses per contact, full length
  if (lambda_n_.size() != k) lambda_n_.resize(k);
  if (lambda_t_.size() != 2 * k) lambda_t_.resize(2 * k);
  lambda_n_.setZero();
  lambda_t_.setZero();
  const int na = static_cast<int>(active_.size());
  for (int a = 0; a < na; ++a) {
    const int c = active_[a];
    lambda_n_(c) = z_[a];
    double tx = 0.0, ty = 0.0;
    for (int j = 0; j < nd; ++j) {
      const double b = z_[na + a * nd + j];
      tx += b * dir_cos_[j];
      ty += b * dir_sin_[j];
    }
    lambda_t_(2 * c) = tx;
    lambda_t_(2 * c + 1) = ty;
  }

  // non-finite input shows up as a status, not as a "solved" step full of NaN
  if (status == SolveStatus::kSolved &&
      !(x.allFinite() && frame_.phi.allFinite() && frame_.Jn.allFinite() && frame_.Jt.allFinite() &&
        (!moving || (frame_.vn.allFinite() && frame_.vt.allFinite()))))
    status = SolveStatus::kInvalidInput;
  else if (status == SolveStatus::kSolved && !nu_next_.allFinite())
    status = SolveStatus::kNumericalError;
  info.status = status;
  info.active = na;
  info.lcp_size = n_;
  if (info_out) *info_out = info;
  return integrate(x, nu_next_, dt);
}

// ---- rollouts ------------------------------------------------------------------------

State to_state(const StateRow& r) {
  State x;
  for (int i = 0; i < 13; ++i) x(i) = r[i];
  return x;
}

StateRow to_row(const State& x) {
  StateRow r;
  for (int i = 0; i < 13; ++i) r[i] = x(i);
  return r;
}

BodyParams body_from_meta(const TossMeta& meta) {
  BodyParams b;
  b.mass = meta.mass;
  b.inertia = Eigen::Vector3d(meta.inertia[0], meta.inertia[1], meta.inertia[2]).asDiagonal();
  b.gravity = meta.gravity;
  return b;
}

SimOptions sim_options_from_meta(const TossMeta& meta) {
  SimOptions o;
  o.dt = meta.dt;
  return o;
}

void rollout(Simulator& sim, const ContactModel& model, const StateRow& x0, int n_states,
             RolloutResult& out) {
  if (n_states < 1) throw Error("rollout: n_states must be >= 1, got " + std::to_string(n_states));
  out.states.resize(n_states);
  out.failed_steps = 0;
  out.max_active = 0;
  out.pivots = 0;
  out.states[0] = x0;
  State x = to_state(x0);
  StepInfo info;
  for (int t = 1; t < n_states; ++t) {
    x = sim.step(model, x, &info);
    out.states[t] = to_row(x);
    if (info.status != SolveStatus::kSolved) ++out.failed_steps;
    out.max_active = std::max(out.max_active, info.active);
    out.pivots += info.pivots;
  }
}

RolloutResult rollout(Simulator& sim, const ContactModel& model, const StateRow& x0, int n_states) {
  RolloutResult r;
  rollout(sim, model, x0, n_states, r);
  return r;
}

std::vector<RolloutResult> rollout_tosses(const ContactModel& model, const BodyParams& body,
                                          const SimOptions& options,
                                          const std::vector<Toss>& tosses,
                                          const std::vector<int>& indices, int threads) {
  std::vector<int> idx = indices;
  if (idx.empty()) {
    idx.resize(tosses.size());
    for (size_t i = 0; i < tosses.size(); ++i) idx[i] = static_cast<int>(i);
  }
  for (int i : idx) {
    if (i < 0 || i >= static_cast<int>(tosses.size()))
      throw Error("rollout_tosses: toss index " + std::to_string(i) + " out of range [0, " +
                  std::to_string(tosses.size()) + ")");
    if (tosses[i].states.empty())
      throw Error("rollout_tosses: toss " + std::to_string(i) + " ('" + tosses[i].name +
                  "') has no states");
  }
  const int count = static_cast<int>(idx.size());
  std::vector<RolloutResult> out(count);
  if (count == 0) return out;
  const int t = std::min(resolve_threads(threads), count);
  std::vector<Simulator> sims(t, Simulator(body, options));
  // the first exception is kept and rethrown after every toss has run
  std::mutex mu;
  std::exception_ptr error;
  parallel_for(count, t, [&](int worker, int begin, int end) {
    for (int j = begin; j < end; ++j) {
      try {
        const Toss& toss = tosses[idx[j]];
        rollout(sims[worker], model, toss.states.front(), static_cast<int>(toss.states.size()), out[j]);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
    }
  });
  if (error) std::rethrow_exception(error);
  return out;
}

// ---- metrics ---------------------------------------------------------------------------

double cube_penetration(const StateRow& x, double half_width) {
  const Eigen::Quaterniond q(x[3], x[4], x[5], x[6]);
  const Eigen::Matrix3d R = q.normalized().toRotationMatrix();
  // lowest vertex: p_z − h Σ_c |R_zc|
  const double lowest = x[2] - half_width * (std::abs(R(2, 0)) + std::abs(R(2, 1)) + std::abs(R(2, 2)));
  return std::max(0.0, -lowest);
}

namespace {

double position_error(const StateRow& a, const StateRow& b) {
  return std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                   (a[2] - b[2]) * (a[2] - b[2]));
}

double angle_error_deg(const StateRow& a, const StateRow& b) {
  return rotation_angle_between(Eigen::Quaterniond(a[3], a[4], a[5], a[6]),
                                Eigen::Quaterniond(b[3], b[4], b[5], b[6])) *
         180.0 / kPi;
}

void check_aligned(const std::vector<StateRow>& predicted, const std::vector<StateRow>& truth,
                   const char* who) {
  if (predicted.size() != truth.size() || truth.empty())
    throw Error(std::string(who) + ": expected predicted and true trajectories of the same nonzero length, got " +
                std::to_string(predicted.size()) + " and " + std::to_string(truth.size()) + " states");
}

}  // namespace

TrajectoryErrors trajectory_errors(const std::vector<StateRow>& predicted,
                                   const std::vector<StateRow>& truth, double half_width) {
  check_aligned(predicted, truth, "trajectory_errors");
  TrajectoryErrors e;
  const size_t n = truth.size();
  for (size_t j = 0; j < n; ++j) {
    e.position_m += position_error(predicted[j], truth[j]);
    e.rotation_deg += angle_error_deg(predicted[j], truth[j]);
    e.penetration_m += cube_penetration(predicted[j], half_width);
  }
  e.position_m /= n;
  e.rotation_deg /= n;
  e.penetration_m /= n;
  e.states = static_cast<int>(n);
  return e;
}

RolloutMetrics aggregate_metrics(const std::vector<TrajectoryErrors>& per_toss, double half_width) {
  RolloutMetrics m;
  m.n_tosses = static_cast<int>(per_toss.size());
  if (per_toss.empty()) return m;
  for (const TrajectoryErrors& e : per_toss) {
    m.position_error_m += e.position_m;
    m.rotation_error_deg += e.rotation_deg;
    m.penetration_m += e.penetration_m;
  }
  m.position_error_m /= m.n_tosses;
  m.rotation_error_deg /= m.n_tosses;
  m.penetration_m /= m.n_tosses;
  m.position_error_pct_width = 100.0 * m.position_error_m / (2.0 * half_width);
  m.penetration_pct_width = 100.0 * m.penetration_m / (2.0 * half_width);
  return m;
}

RolloutMetrics evaluate_rollouts(const ContactModel& model, const TossSet& set,
                                 const std::vector<int>& indices, const SimOptions& options,
                                 int threads, std::vector<TrajectoryErrors>* per_toss,
                                 std::vector<RolloutResult>* rollouts) {
  std::vector<int> idx = indices;
  if (idx.empty()) {
    idx.resize(set.tosses.size());
    for (size_t i = 0; i < set.tosses.size(); ++i) idx[i] = static_cast<int>(i);
  }
  std::vector<RolloutResult> rs =
      rollout_tosses(model, body_from_meta(set.meta), options, set.tosses, idx, threads);
  std::vector<TrajectoryErrors> errs(rs.size());
  for (size_t j = 0; j < rs.size(); ++j)
    errs[j] = trajectory_errors(rs[j].states, set.tosses[idx[j]].states, set.meta.half_width);
  const RolloutMetrics m = aggregate_metrics(errs, set.meta.half_width);
  if (per_toss) *per_toss = std::move(errs);
  if (rollouts) *rollouts = std::move(rs);
  return m;
}

void write_rollout_csv(const std::string& path, const std::vector<StateRow>& predicted,
                       const std::vector<StateRow>& truth, double half_width, double dt) {
  check_aligned(predicted, truth, "write_rollout_csv");
  std::string text =
      "t,px,py,pz,qw,qx,qy,qz,px_true,py_true,pz_true,qw_true,qx_true,qy_true,qz_true,"
      "position_error_m,angle_error_deg,penetration_m\n";
  char line[512];
  for (size_t j = 0; j < truth.size(); ++j) {
    const StateRow& a = predicted[j];
    const StateRow& b = truth[j];
    std::snprintf(line, sizeof line,
                  "%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,"
                  "%.9g,%.9g,%.9g\n",
                  j * dt, a[0], a[1], a[2], a[3], a[4], a[5], a[6], b[0], b[1], b[2], b[3], b[4],
                  b[5], b[6], position_error(a, b), angle_error_deg(a, b),
                  cube_penetration(a, half_width));
    text += line;
  }
  try {
    write_text_atomic(path, text);
  } catch (const Error& e) {
    throw Error(std::string("write_rollout_csv: ") + e.what());
  }
}

}  // namespace impulse
