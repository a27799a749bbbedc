#include "host/dynamics/multibody_sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>

#include "solvers/cones.h"
#include "solvers/error.h"

namespace impulse {

namespace {

constexpr double kPi = 3.14159265358979323846;

Eigen::Matrix3d skew(const Eigen::Vector3d& a) {
  Eigen::Matrix3d S;
  S << 0, -a.z(), a.y(), a.z(), 0, -a.x(), -a.y(), a.x(), 0;
  return S;
}

// c = (t, u) ∈ K: ‖u‖ ≤ t (exactly, no tolerance: λ = 0 must be the exact optimum)
bool in_soc(double t, double u1, double u2) { return std::sqrt(u1 * u1 + u2 * u2) <= t; }

// per-state scratch of one step
struct StateTerms {
  Kinematics kin;
  MultibodyContacts contacts;
  Eigen::MatrixXd M, Jtil, MinvJt;  // Jtil 3k x nv, MinvJt nv x 3k
  Eigen::LLT<Eigen::MatrixXd> llt;
  Eigen::VectorXd h, vstar, c;
};

void build_state(const MultibodySystem& sys, const MultibodyParams& P, double dt,
                 const Eigen::Ref<const Eigen::VectorXd>& x, const double* a_ext, int col, StateTerms& T) {
  const int nq = sys.nq(), nv = sys.nv();
  if (!x.allFinite()) throw Error("multibody_step: state (column " + std::to_string(col) + ") is not finite");
  const Eigen::VectorXd q = x.head(nq), v = x.tail(nv);
  kinematics(sys, q, v, T.kin);
  mass_matrix(T.kin, P.pi, T.M);
  bias_force(T.kin, P.pi, P.gravity, T.h);
  T.llt.compute(T.M);
  if (T.llt.info() != Eigen::Success)
    throw Error("multibody_step: the mass matrix of state (column " + std::to_string(col) +
                ") is not positive definite");
  T.vstar = v - dt * T.llt.solve(T.h);
  if (a_ext) T.vstar += dt * Eigen::Map<const Eigen::VectorXd>(a_ext, nv);
  contact_frame(sys, T.kin, P.vertices, T.contacts);
  const int k = static_cast<int>(T.contacts.phi.size());
  T.Jtil.resize(3 * k, nv);
  for (int i = 0; i < k; ++i) {
    T.Jtil.row(3 * i) = T.contacts.Jn.row(i);
    T.Jtil.row(3 * i + 1) = P.mu * T.contacts.Jt.row(2 * i);
    T.Jtil.row(3 * i + 2) = P.mu * T.contacts.Jt.row(2 * i + 1);
  }
  T.c.noalias() = T.Jtil * T.vstar;
  for (int i = 0; i < k; ++i) T.c(3 * i) += T.contacts.phi(i) / dt;
}

bool needs_qp(const Eigen::VectorXd& c) {
  for (Eigen::Index i = 0; i < c.size() / 3; ++i)
    if (!in_soc(c(3 * i), c(3 * i + 1), c(3 * i + 2))) return true;
  return false;
}

// uniform in [0, 1) from 53 bits: portable across standard libraries
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0); }
double uniform(std::mt19937_64& rng, double lo, double hi) { return lo + (hi - lo) * uniform01(rng); }

double wrap_angle(double a) {
  double w = std::remainder(a, 2 * kPi);  // [−π, π]
  if (w <= -kPi) w += 2 * kPi;            // (−π, π]
  return w;
}

}  // namespace

// ---- parameters and options ----------------------------------------------------

MultibodyParams MultibodyParams::nominal(const MultibodySystem& sys) {
  MultibodyParams p;
  p.pi = stacked_inertial(sys);
  for (const LinkSpec& l : sys.links) p.vertices.push_back(l.vertices);
  p.mu = sys.mu;
  p.gravity = sys.gravity;
  return p;
}

void MultibodyParams::validate(const MultibodySystem& sys) const {
  if (pi.size() != 10 * sys.num_links())
    throw Error("MultibodyParams: pi has " + std::to_string(pi.size()) + " entries, the system '" + sys.name +
                "' needs " + std::to_string(10 * sys.num_links()));
  if (!pi.allFinite()) throw Error("MultibodyParams: pi is not finite");
  if (static_cast<int>(vertices.size()) != sys.num_links())
    throw Error("MultibodyParams: vertices for " + std::to_string(vertices.size()) + " links, the system '" +
                sys.name + "' has " + std::to_string(sys.num_links()));
  int k = 0;
  for (size_t l = 0; l < vertices.size(); ++l)
    for (size_t i = 0; i < vertices[l].size(); ++i, ++k)
      if (!vertices[l][i].allFinite())
        throw Error("MultibodyParams: vertex " + std::to_string(i) + " of link " + std::to_string(l) +
                    " is not finite");
  if (k == 0) throw Error("MultibodyParams: no contact vertices");
  if (!(std::isfinite(mu) && mu >= 0)) throw Error("MultibodyParams: mu must be finite and >= 0, got " + std::to_string(mu));
  if (!std::isfinite(gravity)) throw Error("MultibodyParams: gravity is not finite");
}

QpSettings<double> multibody_qp_settings() {
  QpSettings<double> s;
  s.eps_abs = 1e-8;
  s.eps_rel = 1e-8;
  s.max_iter = 20000;
  return s;
}

void MultibodyStepOptions::validate() const {
  if (!(std::isfinite(dt) && dt > 0)) throw Error("MultibodyStepOptions: dt must be finite and > 0, got " + std::to_string(dt));
  if (!(std::isfinite(regularization) && regularization >= 0))
    throw Error("MultibodyStepOptions: regularization must be finite and >= 0, got " + std::to_string(regularization));
}

// ---- the step ------------------------------------------------------------------

void multibody_step(const MultibodySystem& sys, const MultibodyParams& params, const MultibodyStepOptions& options,
                    const Eigen::MatrixXd& X, const Eigen::MatrixXd* a_ext, Eigen::MatrixXd& X_next,
                    MultibodyStepResult* result) {
  options.validate();
  params.validate(sys);
  const int nq = sys.nq(), nv = sys.nv(), W = sys.width();
  const int B = static_cast<int>(X.cols());
  if (X.rows() != W)
    throw Error("multibody_step: X has " + std::to_string(X.rows()) + " rows, the system '" + sys.name +
                "' has state width " + std::to_string(W));
  if (B == 0) throw Error("multibody_step: X has no states (0 columns)");
  if (a_ext && (a_ext->rows() != nv || a_ext->cols() != B))
    throw Error("multibody_step: a_ext is " + std::to_string(a_ext->rows()) + " x " + std::to_string(a_ext->cols()) +
                ", expected " + std::to_string(nv) + " x " + std::to_string(B) + " (nv x states)");
  if (a_ext && !a_ext->allFinite()) throw Error("multibody_step: a_ext is not finite");
  const double dt = options.dt;
  int k = 0;
  for (const auto& v : params.vertices) k += static_cast<int>(v.size());
  const int n = 3 * k;

  std::vector<StateTerms> terms(static_cast<size_t>(B));
  std::vector<char> use(static_cast<size_t>(B), 0);
  // exceptions inside the workers are carried out (parallel_for's threads)
  std::vector<std::string> errors(static_cast<size_t>(B));
  parallel_for(B, options.batch.threads, [&](int, int begin, int end) {
    for (int b = begin; b < end; ++b) {
      try {
        StateTerms& T = terms[static_cast<size_t>(b)];
        build_state(sys, params, dt, X.col(b), a_ext ? a_ext->col(b).data() : nullptr, b, T);
        use[static_cast<size_t>(b)] = needs_qp(T.c) ? 1 : 0;
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(b)] = e.what();
      }
    }
  });
  for (const std::string& e : errors)
    if (!e.empty()) throw Error(e);

  std::vector<int> idx;
  for (int b = 0; b < B; ++b)
    if (use[static_cast<size_t>(b)]) idx.push_back(b);
  const int Q = static_cast<int>(idx.size());

  Eigen::MatrixXd lambda = Eigen::MatrixXd::Zero(n, B);
  std::vector<SolveStatus> status(static_cast<size_t>(B), SolveStatus::kSolved);
  long long iterations = 0;
  // solves the states `which` in one form; fills lambda and status
  auto solve = [&](MultibodyQpForm form, const std::vector<int>& which) {
    const int nb = static_cast<int>(which.size());
    const bool primal = form == MultibodyQpForm::kVelocities;
    ConeSpec cones;
    cones.n_soc = k;
    const int nx = primal ? nv : n;  // QP variables
    std::vector<int> row_ptr(static_cast<size_t>(n + 1)), col;
    for (int r = 0; r <= n; ++r) row_ptr[static_cast<size_t>(r)] = primal ? r * nv : r;
    for (int r = 0; r < n; ++r)
      for (int j = 0; j < (primal ? nv : 1); ++j) col.push_back(primal ? j : r);
    const int nnz = static_cast<int>(col.size());
    QpBatch<double> qp = QpBatch<double>::with_pattern(nb, nx, cones, row_ptr, col);
    parallel_for(nb, options.batch.threads, [&](int, int begin, int end) {
      for (int j = begin; j < end; ++j) {
        StateTerms& T = terms[static_cast<size_t>(which[static_cast<size_t>(j)])];
        if (T.MinvJt.cols() != n) T.MinvJt = T.llt.solve(T.Jtil.transpose());
        Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> P(
            qp.P.data() + static_cast<size_t>(j) * nx * nx, nx, nx);
        Eigen::Map<Eigen::VectorXd> q(qp.q.data() + static_cast<size_t>(j) * nx, nx);
        double* A = qp.A.data() + static_cast<size_t>(j) * nnz;
        if (primal) {
          P = 0.5 * (T.M + T.M.transpose());
          q.noalias() = -(T.M * T.vstar);
          // A = −J̃ (row-major, dense pattern); b = b̃
          Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(A, n, nv) = -T.Jtil;
          double* bb = qp.b.data() + static_cast<size_t>(j) * n;
          for (int i = 0; i < n; ++i) bb[i] = 0.0;
          for (int i = 0; i < k; ++i) bb[3 * i] = T.contacts.phi(i) / dt;
        } else {
          P.noalias() = T.Jtil * T.MinvJt;
          P = 0.5 * (P + P.transpose()).eval();
          q = T.c;
          for (int r = 0; r < n; ++r) A[r] = -1.0;
        }
        if (options.regularization > 0) P.diagonal().array() += options.regularization;
      }
    });
    QpSolutions<double> sol;
    solve_batch(qp, options.qp, options.batch, sol);
    for (int j = 0; j < nb; ++j) {
      const int b = which[static_cast<size_t>(j)];
      status[static_cast<size_t>(b)] = sol.status[static_cast<size_t>(j)];
      iterations += sol.iterations[static_cast<size_t>(j)];
      const std::vector<double>& src = primal ? sol.y : sol.x;
      Eigen::VectorXd lam = Eigen::Map<const Eigen::VectorXd>(src.data() + static_cast<size_t>(j) * n, n);
      if (!lam.allFinite()) lam.setZero();
      for (int i = 0; i < k; ++i) project_soc3(lam(3 * i), lam(3 * i + 1), lam(3 * i + 2));
      lambda.col(b) = lam;
    }
  };
  auto failed = [&](int b) {
    const SolveStatus st = status[static_cast<size_t>(b)];
    return st != SolveStatus::kSolved && st != SolveStatus::kSolvedInaccurate;
  };
  int fallbacks = 0;
  if (Q > 0) {
    solve(options.form, idx);
    std::vector<int> again;
    for (int b : idx)
      if (failed(b)) again.push_back(b);
    if (!again.empty() && options.fallback) {
      // the same step in the other form, for the problems the first did not solve
      fallbacks = static_cast<int>(again.size());
      const Eigen::MatrixXd keep = lambda;
      const std::vector<SolveStatus> keep_status = status;
      solve(options.form == MultibodyQpForm::kImpulses ? MultibodyQpForm::kVelocities : MultibodyQpForm::kImpulses,
            again);
      for (int b : again)
        if (failed(b)) {  // neither form solved it: keep the first answer
          lambda.col(b) = keep.col(b);
          status[static_cast<size_t>(b)] = keep_status[static_cast<size_t>(b)];
        }
    }
  }
  int not_solved = 0, inaccurate = 0;
  for (int b : idx) {
    if (status[static_cast<size_t>(b)] == SolveStatus::kSolvedInaccurate) ++inaccurate;
    if (failed(b)) ++not_solved;
  }

  X_next.resize(W, B);
  parallel_for(B, options.batch.threads, [&](int, int begin, int end) {
    for (int b = begin; b < end; ++b) {
      const StateTerms& T = terms[static_cast<size_t>(b)];
      Eigen::VectorXd vn = T.vstar;
      if (use[static_cast<size_t>(b)]) vn += T.MinvJt * lambda.col(b);
      X_next.col(b).tail(nv) = vn;
      integrate_configuration(sys, X.col(b).head(nq), vn, dt, X_next.col(b).head(nq));
    }
  });

  if (result) {
    result->lambda = std::move(lambda);
    result->v_free.resize(nv, B);
    for (int b = 0; b < B; ++b) result->v_free.col(b) = terms[static_cast<size_t>(b)].vstar;
    result->status = std::move(status);
    result->used_qp = std::move(use);
    result->qp_count = Q;
    result->not_solved = not_solved;
    result->inaccurate = inaccurate;
    result->fallbacks = fallbacks;
    result->iterations = iterations;
  }
}

// ---- rollouts ------------------------------------------------------------------

bool rollout_state_is_valid(const MultibodySystem& sys, const Eigen::Ref<const Eigen::VectorXd>& x) {
  return x.allFinite() && std::abs(x.head<4>().norm() - 1.0) < 1e-6 &&
         x.tail(sys.nv()).cwiseAbs().maxCoeff() < kDivergedSpeed;
}

MultibodyRollout multibody_rollout(const MultibodySystem& sys, const MultibodyParams& params,
                                   const MultibodyStepOptions& options, const Eigen::MatrixXd& X0, int n_states,
                                   const ExternalAcceleration& external) {
  if (n_states < 1) throw Error("multibody_rollout: n_states must be >= 1, got " + std::to_string(n_states));
  const int W = sys.width(), nv = sys.nv();
  if (X0.rows() != W)
    throw Error("multibody_rollout: X0 has " + std::to_string(X0.rows()) + " rows, the system '" + sys.name +
                "' has state width " + std::to_string(W));
  const int B = static_cast<int>(X0.cols());
  if (B == 0) throw Error("multibody_rollout: X0 has no states (0 columns)");
  MultibodyRollout out;
  out.steps = n_states - 1;
  out.trajectories.assign(static_cast<size_t>(B), MultibodyRollout::Trajectory(n_states, W));
  for (int b = 0; b < B; ++b) out.trajectories[static_cast<size_t>(b)].row(0) = X0.col(b).transpose();
  out.diverged_at.assign(static_cast<size_t>(B), -1);
  Eigen::MatrixXd X = X0, Xn, A;
  MultibodyStepResult res;
  for (int t = 0; t + 1 < n_states; ++t) {
    if (external) {
      A.setZero(nv, B);
      std::vector<std::string> errors(static_cast<size_t>(B));
      parallel_for(B, options.batch.threads, [&](int, int begin, int end) {
        for (int b = begin; b < end; ++b) {
          try {
            const Eigen::VectorXd x = X.col(b);
            external(b, t, x, A.col(b));
          } catch (const std::exception& e) {
            errors[static_cast<size_t>(b)] = e.what();
          }
        }
      });
      for (const std::string& e : errors)
        if (!e.empty()) throw Error(e);
    }
    multibody_step(sys, params, options, X, external ? &A : nullptr, Xn, &res);
    out.qp_states += res.qp_count;
    out.not_solved += res.not_solved;
    out.inaccurate += res.inaccurate;
    out.fallbacks += res.fallbacks;
    out.iterations += res.iterations;
    const auto valid = [&](int b) { return rollout_state_is_valid(sys, Xn.col(b)); };
    for (int b = 0; b < B; ++b) {
      int& d = out.diverged_at[static_cast<size_t>(b)];
      if (d < 0 && !valid(b)) d = t + 1;
      // a diverged toss goes into every later step as its last valid state at
      // rest (keeps the batch's step well defined; what that step makes of it
      // is discarded, though its QP counts in the totals above); its output
      // stays frozen
      if (d >= 0) {
        Xn.col(b) = out.trajectories[static_cast<size_t>(b)].row(d - 1).transpose();
        Xn.col(b).tail(nv).setZero();
      }
    }
    X.swap(Xn);
    for (int b = 0; b < B; ++b) {
      const int d = out.diverged_at[static_cast<size_t>(b)];
      auto& tr = out.trajectories[static_cast<size_t>(b)];
      if (d >= 0)
        tr.row(t + 1) = tr.row(d - 1);
      else
        tr.row(t + 1) = X.col(b).transpose();
    }
  }
  return out;
}

// ---- model gaps ----------------------------------------------------------------

void vortex_generalized_force(const Kinematics& kin, const Eigen::VectorXd& pi, double k_r, double k_t,
                              Eigen::VectorXd& tau) {
  const int L = static_cast<int>(kin.links.size());
  if (pi.size() != 10 * L)
    throw Error("vortex_generalized_force: pi has " + std::to_string(pi.size()) + " entries, expected " +
                std::to_string(10 * L));
  tau.setZero(kin.links[0].Jo.cols());
  for (int l = 0; l < L; ++l) {
    const LinkKinematics& k = kin.links[static_cast<size_t>(l)];
    const double m = pi(10 * l);
    const Eigen::Vector3d rc = k.R * (pi.segment<3>(10 * l + 1) / m);  // R c, c = h / m
    const Eigen::Vector3d p = k.p + rc;
    const Eigen::Vector3d a(-k_r * p.x() - k_t * p.y(), -k_r * p.y() + k_t * p.x(), 0.0);
    const Eigen::MatrixXd Jcom = k.Jo - skew(rc) * k.Jw;
    tau.noalias() += Jcom.transpose() * (m * a);
  }
}

ExternalAcceleration vortex_acceleration(const MultibodySystem& sys, const Eigen::VectorXd& pi, double k_r,
                                         double k_t) {
  if (pi.size() != 10 * sys.num_links())
    throw Error("vortex_acceleration: pi has " + std::to_string(pi.size()) + " entries, expected " +
                std::to_string(10 * sys.num_links()));
  return [sys, pi, k_r, k_t](int, int, const Eigen::VectorXd& x, Eigen::Ref<Eigen::VectorXd> a) {
    Kinematics kin;
    kinematics(sys, x.head(sys.nq()), kin);
    Eigen::MatrixXd M;
    Eigen::VectorXd tau;
    mass_matrix(kin, pi, M);
    vortex_generalized_force(kin, pi, k_r, k_t, tau);
    a = M.llt().solve(tau);
  };
}

ModelGap parse_model_gap(const std::string& s) {
  if (s == "none") return ModelGap::kNone;
  if (s == "vortex") return ModelGap::kVortex;
  if (s == "gravity") return ModelGap::kGravity;
  throw Error("unknown model gap '" + s + "' (none | vortex | gravity)");
}

const char* to_string(ModelGap g) {
  switch (g) {
    case ModelGap::kNone: return "none";
    case ModelGap::kVortex: return "vortex";
    case ModelGap::kGravity: return "gravity";
  }
  return "?";
}

// ---- synthetic tosses ----------------------------------------------------------

MultibodySystem SyntheticSystemOptions::resolved() const {
  return described.links.empty() ? system_by_name(system) : described;
}

void SyntheticSystemOptions::validate() const {
  if (described.links.empty())
    system_by_name(system);  // throws on an unknown name
  else
    described.validate();
  auto bad = [](const std::string& what) { throw Error("SyntheticSystemOptions: " + what); };
  if (tosses < 1) bad("tosses must be >= 1, got " + std::to_string(tosses));
  if (states < 2) bad("states must be >= 2, got " + std::to_string(states));
  if (!(std::isfinite(dt) && dt > 0)) bad("dt must be finite and > 0");
  if (!(std::isfinite(vortex_k_r) && std::isfinite(vortex_k_t))) bad("vortex_k_r and vortex_k_t must be finite");
  if (!(gravity_factor >= 0 && gravity_factor <= 2)) bad("gravity_factor must be in [0, 2], got " + std::to_string(gravity_factor));
  if (!(landing_fraction > 0 && landing_fraction <= 1)) bad("landing_fraction must be in (0, 1]");
  if (!(xy_range >= 0 && vxy_range >= 0 && omega_range >= 0 && joint_rate_range >= 0))
    bad("ranges must be >= 0");
  if (!(clearance_min > 0 && clearance_max >= clearance_min)) bad("need 0 < clearance_min <= clearance_max");
  if (!(vz_max >= vz_min)) bad("need vz_min <= vz_max");
  if (!(std::isfinite(xy_range) && std::isfinite(vxy_range) && std::isfinite(omega_range) &&
        std::isfinite(joint_rate_range) && std::isfinite(clearance_max) && std::isfinite(vz_min) &&
        std::isfinite(vz_max)))
    bad("ranges must be finite");
}

namespace {
double simulation_gravity(const SyntheticSystemOptions& o) {
  return o.gap == ModelGap::kGravity ? o.gravity_factor * 9.81 : 9.81;
}
}  // namespace

Eigen::MatrixXd synthetic_initial_states(const SyntheticSystemOptions& o) {
  o.validate();
  const MultibodySystem sys = o.resolved();
  const int nq = sys.nq(), nj = sys.joints();
  const double g = simulation_gravity(o);
  const double t_land = o.landing_fraction * (o.states - 1) * o.dt;
  std::mt19937_64 rng(o.seed);
  Eigen::MatrixXd X(sys.width(), o.tosses);
  Kinematics kin;
  for (int b = 0; b < o.tosses; ++b) {
    Eigen::VectorXd x(sys.width());
    // orientation: Shoemake's uniform quaternion (x, y, z, w order of the formula)
    const double u1 = uniform01(rng), u2 = uniform01(rng), u3 = uniform01(rng);
    Eigen::Vector4d quat(std::sqrt(u1) * std::cos(2 * kPi * u3), std::sqrt(1 - u1) * std::sin(2 * kPi * u2),
                         std::sqrt(1 - u1) * std::cos(2 * kPi * u2), std::sqrt(u1) * std::sin(2 * kPi * u3));
    if (quat(0) < 0) quat = -quat;
    x.head<4>() = quat / quat.norm();
    x(4) = uniform(rng, -o.xy_range, o.xy_range);
    x(5) = uniform(rng, -o.xy_range, o.xy_range);
    x(6) = 0;
    for (int j = 0; j < nj; ++j) x(7 + j) = kPi - 2 * kPi * uniform01(rng);  // (−π, π]
    // height: the lowest vertex at the chosen clearance
    const double clearance = uniform(rng, o.clearance_min, o.clearance_max);
    kinematics(sys, x.head(nq), kin);
    double zmin = std::numeric_limits<double>::infinity();
    for (int l = 0; l < sys.num_links(); ++l)
      for (const Eigen::Vector3d& r : sys.links[static_cast<size_t>(l)].vertices)
        zmin = std::min(zmin, (kin.links[static_cast<size_t>(l)].p + kin.links[static_cast<size_t>(l)].R * r).z());
    x(6) = clearance - zmin;
    for (int i = 0; i < 3; ++i) x(nq + i) = uniform(rng, -o.omega_range, o.omega_range);
    x(nq + 3) = uniform(rng, -o.vxy_range, o.vxy_range);
    x(nq + 4) = uniform(rng, -o.vxy_range, o.vxy_range);
    // v_z: redrawn until the lowest vertex lands within the first landing_fraction of the toss
    double vz = 0;
    bool ok = false;
    for (int attempt = 0; attempt < 10000 && !ok; ++attempt) {
      vz = uniform(rng, o.vz_min, o.vz_max);
      double t;
      if (g > 0) {
        t = (vz + std::sqrt(vz * vz + 2 * g * clearance)) / g;
      } else {
        t = vz < 0 ? clearance / -vz : std::numeric_limits<double>::infinity();
      }
      ok = t <= t_land;
    }
    if (!ok)
      throw Error("synthetic_initial_states: toss " + std::to_string(b) + " cannot land within " +
                  std::to_string(t_land) + " s with v_z in [" + std::to_string(o.vz_min) + ", " +
                  std::to_string(o.vz_max) + "] (gravity " + std::to_string(g) + ")");
    x(nq + 5) = vz;
    for (int j = 0; j < nj; ++j) x(nq + 6 + j) = uniform(rng, -o.joint_rate_range, o.joint_rate_range);
    X.col(b) = x;
  }
  return X;
}

SystemTossSet generate_system_tosses(const SyntheticSystemOptions& o, SyntheticSystemReport* report) {
  const auto t0 = std::chrono::steady_clock::now();
  const Eigen::MatrixXd X0 = synthetic_initial_states(o);  // validates
  const MultibodySystem sys = o.resolved();
  MultibodyParams params = MultibodyParams::nominal(sys);
  params.gravity = simulation_gravity(o);
  MultibodyStepOptions step = o.step;
  step.dt = o.dt;
  ExternalAcceleration ext;
  if (o.gap == ModelGap::kVortex) ext = vortex_acceleration(sys, params.pi, o.vortex_k_r, o.vortex_k_t);
  const MultibodyRollout r = multibody_rollout(sys, params, step, X0, o.states, ext);
  for (int b = 0; b < o.tosses; ++b)
    if (r.diverged_at[static_cast<size_t>(b)] >= 0)
      throw Error("generate-tosses: toss " + std::to_string(b) + " diverged at state " +
                  std::to_string(r.diverged_at[static_cast<size_t>(b)]) + " (a speed past " +
                  std::to_string(static_cast<int>(kDivergedSpeed)) + " or a non-finite state): try a smaller dt");

  SystemTossSet set;
  set.format = "impulse-multibody";
  set.width = sys.width();
  set.dt = o.dt;
  const int nj = sys.joints();
  for (int b = 0; b < o.tosses; ++b) {
    SystemToss t;
    t.name = std::to_string(b);
    const MultibodyRollout::Trajectory& tr = r.trajectories[static_cast<size_t>(b)];
    t.rows.assign(tr.data(), tr.data() + tr.size());
    for (int s = 0; s < o.states; ++s)
      for (int j = 0; j < nj; ++j) {
        double& th = t.rows[static_cast<size_t>(s) * set.width + 7 + j];
        th = wrap_angle(th);
      }
    set.tosses.push_back(std::move(t));
  }
  if (report) {
    report->qp_states = r.qp_states;
    report->not_solved = r.not_solved;
    report->inaccurate = r.inaccurate;
    report->fallbacks = r.fallbacks;
    report->iterations = r.iterations;
    report->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return set;
}

}  // namespace impulse
