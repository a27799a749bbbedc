#include "host/planning/physics_qp.h"

#include <cmath>
#include <string>

#include "host/dynamics/rigid_body.h"
#include "solvers/error.h"

namespace impulse {

namespace {

// G (6 × 3J) and g0 (6) of Φ = ‖G f + g0‖² + λ‖f‖²
void physics_terms(const PhysicsSample& s, Eigen::MatrixXd& G, Eigen::Matrix<double, 6, 1>& g0) {
  const size_t J = s.r.size();
  G.setZero(6, static_cast<Eigen::Index>(3 * J));
  for (size_t j = 0; j < J; ++j) {
    const Eigen::Index k = static_cast<Eigen::Index>(3 * j);
    G.block<3, 3>(0, k) = s.c[j] * s.frame[j];
    G.block<3, 3>(3, k) = std::sqrt(s.moment_weight) * s.c[j] * skew(s.r[j] - s.x_obj) * s.frame[j];
  }
  g0.head<3>() = s.mass * (s.gravity - s.accel);
  g0.tail<3>() = -std::sqrt(s.moment_weight) * s.Ldot;
}

void check_sample(const PhysicsSample& s, size_t J, size_t index) {
  const std::string w = "physics sample " + std::to_string(index) + ": ";
  if (s.r.size() != J || s.frame.size() != J || s.c.size() != J)
    throw Error(w + "every sample needs the same number of contacts (" + std::to_string(J) + ") in r, frame and c");
  if (!(s.mass > 0)) throw Error(w + "mass must be > 0");
  if (!(s.moment_weight > 0) || !std::isfinite(s.moment_weight)) throw Error(w + "moment weight must be finite and > 0");
  for (size_t j = 0; j < J; ++j)
    if (!s.r[j].allFinite() || !s.frame[j].allFinite() || !std::isfinite(s.c[j]))
      throw Error(w + "contact " + std::to_string(j) + " has a non-finite point, frame or weight");
  if (!s.x_obj.allFinite() || !s.accel.allFinite() || !s.Ldot.allFinite()) throw Error(w + "non-finite motion");
}

}  // namespace

Eigen::Matrix3d contact_frame(const Eigen::Vector3d& n) {
  const Eigen::Vector3d a = std::abs(n(0)) < 0.9 ? Eigen::Vector3d::UnitX() : Eigen::Vector3d::UnitY();
  const Eigen::Vector3d t1 = n.cross(a).normalized(), t2 = n.cross(t1);
  Eigen::Matrix3d R;
  R << n, t1, t2;
  return R;
}

Eigen::Vector3d contact_frame_gradient_to_normal(const Eigen::Vector3d& n, const Eigen::Matrix3d& G) {
  const Eigen::Vector3d a = std::abs(n(0)) < 0.9 ? Eigen::Vector3d::UnitX() : Eigen::Vector3d::UnitY();
  const Eigen::Vector3d u = n.cross(a), t1 = u.normalized();
  const Eigen::Matrix3d Jt1 = (Eigen::Matrix3d::Identity() - t1 * t1.transpose()) / u.norm() * (-skew(a));
  const Eigen::Matrix3d Jt2 = -skew(t1) + skew(n) * Jt1;
  return G.col(0) + Jt1.transpose() * G.col(1) + Jt2.transpose() * G.col(2);
}

double physics_objective(const PhysicsSample& s, const std::vector<Eigen::Vector3d>& f, double lambda) {
  Eigen::MatrixXd G;
  Eigen::Matrix<double, 6, 1> g0;
  physics_terms(s, G, g0);
  Eigen::VectorXd x(static_cast<Eigen::Index>(3 * f.size()));
  for (size_t j = 0; j < f.size(); ++j) x.segment<3>(static_cast<Eigen::Index>(3 * j)) = f[j];
  return (G * x + g0).squaredNorm() + lambda * x.squaredNorm();
}

std::vector<PhysicsGradient> physics_values(const std::vector<PhysicsSample>& samples, const PhysicsQpOptions& opt) {
  if (samples.empty()) return {};
  if (!(opt.mu > 0) || !(opt.lambda > 0)) throw Error("physics QP: mu and lambda must be > 0");
  const size_t J = samples[0].r.size();
  if (J == 0) throw Error("physics QP: no contacts");
  for (size_t i = 0; i < samples.size(); ++i) check_sample(samples[i], J, i);
  const int n = static_cast<int>(3 * J), B = static_cast<int>(samples.size());
  QpBatch<double> b = QpBatch<double>::dense(B, n, ConeSpec{0, 0, static_cast<int>(J)});
  std::vector<double> A(static_cast<size_t>(n * n), 0.0);
  for (size_t j = 0; j < J; ++j) {  // s = (μ f_n, f_t1, f_t2) = b − A f
    A[(3 * j) * n + 3 * j] = -opt.mu;
    A[(3 * j + 1) * n + 3 * j + 1] = -1;
    A[(3 * j + 2) * n + 3 * j + 2] = -1;
  }
  for (int k = 0; k < B; ++k) {
    Eigen::MatrixXd G;
    Eigen::Matrix<double, 6, 1> g0;
    physics_terms(samples[static_cast<size_t>(k)], G, g0);
    const Eigen::MatrixXd P = 2 * (G.transpose() * G + opt.lambda * Eigen::MatrixXd::Identity(n, n));
    const Eigen::VectorXd q = 2 * G.transpose() * g0;
    Eigen::Map<Eigen::MatrixXd>(&b.P[static_cast<size_t>(k) * n * n], n, n) = P;  // symmetric: order irrelevant
    Eigen::Map<Eigen::VectorXd>(&b.q[static_cast<size_t>(k) * n], n) = q;
    b.set_A_dense(k, A.data());
  }
  QpSettings<double> st;
  st.eps_abs = opt.eps;
  st.eps_rel = opt.eps;
  st.max_iter = 20000;
  BatchOptions bo;
  bo.threads = opt.threads;
  bo.backend = opt.backend;
  QpSolutions<double> sol;
  if (opt.cones) {
    solve_batch(b, st, bo, sol);
  } else {  // no cones: the minimizer of the quadratic, P x = −q
    sol.x.assign(static_cast<size_t>(B) * n, 0.0);
    sol.status.assign(static_cast<size_t>(B), SolveStatus::kSolved);
    for (int k = 0; k < B; ++k) {
      const Eigen::Map<const Eigen::MatrixXd> P(&b.P[static_cast<size_t>(k) * n * n], n, n);
      const Eigen::Map<const Eigen::VectorXd> q(&b.q[static_cast<size_t>(k) * n], n);
      Eigen::Map<Eigen::VectorXd>(&sol.x[static_cast<size_t>(k) * n], n) = P.ldlt().solve(-q);
    }
  }
  std::vector<PhysicsGradient> out(static_cast<size_t>(B));
  for (int k = 0; k < B; ++k) {
    const PhysicsSample& s = samples[static_cast<size_t>(k)];
    PhysicsGradient& g = out[static_cast<size_t>(k)];
    g.solved = is_solved(sol.status[static_cast<size_t>(k)]);
    Eigen::MatrixXd G;
    Eigen::Matrix<double, 6, 1> g0;
    physics_terms(s, G, g0);
    const Eigen::VectorXd x = Eigen::Map<const Eigen::VectorXd>(&sol.x[static_cast<size_t>(k) * n], n);
    const Eigen::Matrix<double, 6, 1> rho = G * x + g0;
    g.value = rho.squaredNorm() + opt.lambda * x.squaredNorm();
    g.residual_force = rho.head<3>();
    g.residual_moment = rho.tail<3>() / std::sqrt(s.moment_weight);
    const Eigen::Vector3d mbar = std::sqrt(s.moment_weight) * rho.tail<3>();  // w_M ρ_M
    g.d_accel = -2 * s.mass * g.residual_force;
    g.d_Ldot = -2 * mbar;
    for (size_t j = 0; j < J; ++j) {
      const Eigen::Vector3d f = x.segment<3>(static_cast<Eigen::Index>(3 * j));
      const Eigen::Vector3d F = s.frame[j] * f, d = s.r[j] - s.x_obj;
      g.force.push_back(F);
      g.d_c.push_back(2 * g.residual_force.dot(F) + 2 * mbar.dot(d.cross(F)));
      const Eigen::Vector3d dr = 2 * s.c[j] * F.cross(mbar);
      g.d_r.push_back(dr);
      g.d_x_obj -= dr;
      g.d_frame.push_back(2 * s.c[j] * (g.residual_force + mbar.cross(d)) * f.transpose());
    }
  }
  return out;
}

}  // namespace impulse
