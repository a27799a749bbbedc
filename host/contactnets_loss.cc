#include "host/contactnets_loss.h"

#include <cmath>
#include <string>

#include "io/error.h"

namespace impulse {
namespace {

constexpr int kOctagonSides = 8;

// One transition in the loss's scaled units (length_unit = 1).
struct Scaled {
  int k = 0;
  Eigen::VectorXd phi, phi_next;
  Eigen::MatrixXd Jn, Jt;   // rotational columns divided by L
  Vec6 nu, nu_next, nu_free, dv;
  Mat6 Mi;
};

void scale(const ContactNetsLossConfig& cfg, const TransitionFrame& t, Scaled& s) {
  const double L = cfg.length_unit;
  s.k = t.frame.contacts();
  if (t.frame.Jn.rows() != s.k || t.frame.Jn.cols() != 6 || t.frame.Jt.rows() != 2 * s.k ||
      t.frame.Jt.cols() != 6 || t.phi_next.size() != s.k)
    throw Error("contactnets loss: frame sizes disagree (k = " + std::to_string(s.k) + ")");
  s.phi = t.frame.phi / L;
  s.phi_next = t.phi_next / L;
  s.Jn = t.frame.Jn;
  s.Jn.rightCols<3>() /= L;
  s.Jt = t.frame.Jt;
  s.Jt.rightCols<3>() /= L;
  auto scale_nu = [L](Vec6 v) {
    v.head<3>() /= L;
    return v;
  };
  s.nu = scale_nu(velocity(t.x));
  s.nu_next = scale_nu(velocity(t.x_next));
  Vec6 Fs = smooth_impulse(t.x, cfg.body, cfg.dt);
  Fs.head<3>() /= L;
  Fs.tail<3>() /= L * L;
  BodyParams b = cfg.body;
  b.inertia /= L * L;
  s.Mi = b.mass_matrix_inverse();
  s.nu_free = s.nu + s.Mi * Fs;
  s.dv = s.nu_next - s.nu_free;  // = M⁻¹ F_data
}

int loss_rows(FrictionModel f, int k) {
  return f == FrictionModel::kCone ? k + 3 * k : k + k + kOctagonSides * k;
}

ConeSpec loss_cones(FrictionModel f, int k) {
  ConeSpec c;
  if (f == FrictionModel::kCone) {
    c.n_nonneg = k;  // penetration
    c.n_soc = k;
  } else {
    c.n_nonneg = k + k + kOctagonSides * k;  // penetration, λ_n ≥ 0, octagon
  }
  return c;
}

double direction_angle(int j) { return 2.0 * M_PI * j / kOctagonSides; }

}  // namespace

cn::LossConsts<double> device_consts(const ContactNetsLossConfig& cfg) {
  const Eigen::Matrix3d& I = cfg.body.inertia;
  if ((I - Eigen::Matrix3d(I.diagonal().asDiagonal())).cwiseAbs().maxCoeff() > 0)
    throw Error("the device loss needs a diagonal inertia (principal axes)");
  cn::LossConsts<double> c{};
  c.w_match = cfg.weights.match;
  c.w_comp_n = cfg.weights.comp_n;
  c.w_comp_t = cfg.weights.comp_t;
  c.w_cone = cfg.weights.cone;
  c.w_slack = cfg.weights.slack;
  c.w_perp = cfg.weights.reg_perp;
  c.w_unit = cfg.weights.reg_unit;
  c.dt = cfg.dt;
  c.L = cfg.length_unit;
  c.mass = cfg.body.mass;
  for (int e = 0; e < 3; ++e) c.inertia[e] = I(e, e);
  c.gravity = cfg.body.gravity;
  c.octagon = cfg.friction == FrictionModel::kOctagon ? 1 : 0;
  return c;
}

void FrameGradient::resize(int k) {
  phi = Eigen::VectorXd::Zero(k);
  phi_next = Eigen::VectorXd::Zero(k);
  Jn = Eigen::MatrixXd::Zero(k, 6);
  Jt = Eigen::MatrixXd::Zero(2 * k, 6);
}

void assemble_loss_qp(const ContactNetsLossConfig& cfg, const TransitionFrame& t, LossQp& out) {
  Scaled s;
  scale(cfg, t, s);
  const int k = s.k, n = 4 * k, m = loss_rows(cfg.friction, k);
  const ContactNetsWeights& w = cfg.weights;
  out.n = n;
  out.k = k;
  out.cones = loss_cones(cfg.friction, k);
  out.P.setZero(n, n);
  out.q.setZero(n);
  out.A.setZero(m, n);
  out.b.setZero(m);
  // B maps (λ_n, λ_t) to the generalized impulse: Jn^T λ_n + Jt^T λ_t.
  Eigen::MatrixXd B(6, 3 * k);
  B.leftCols(k) = s.Jn.transpose();
  B.rightCols(2 * k) = s.Jt.transpose();
  const Eigen::MatrixXd MiB = s.Mi * B;
  Eigen::MatrixXd Q = Eigen::MatrixXd::Zero(n, n);
  // prediction
  Q.topLeftCorner(3 * k, 3 * k) += w.match * MiB.transpose() * MiB;
  out.q.head(3 * k) = -2.0 * w.match * MiB.transpose() * s.dv;
  out.constant = w.match * s.dv.squaredNorm();
  // activation, dissipation, slack
  for (int i = 0; i < k; ++i) {
    const double p2 = s.phi_next(i) * s.phi_next(i);
    Q(i, i) += w.comp_n * p2;
    Q(k + 2 * i, k + 2 * i) += w.comp_t * p2;
    Q(k + 2 * i + 1, k + 2 * i + 1) += w.comp_t * p2;
    const Eigen::Vector2d c = s.Jt.middleRows(2 * i, 2) * s.nu_next;
    const double cn = c.norm();
    // u_i = λ_n,i c + ‖c‖ λ_t,i: a 2 x n map C, Q += w CᵀC
    const int a = i, t0 = k + 2 * i;
    Q(a, a) += w.cone * c.squaredNorm();
    for (int r = 0; r < 2; ++r) {
      Q(a, t0 + r) += w.cone * c(r) * cn;
      Q(t0 + r, a) += w.cone * c(r) * cn;
      Q(t0 + r, t0 + r) += w.cone * cn * cn;
    }
    Q(3 * k + i, 3 * k + i) += w.slack;
  }
  out.P = 2.0 * Q;
  // penetration rows: -dt Jn_i M⁻¹ B λ - s_i + s_c = φ_i + dt Jn_i ν_free
  const Eigen::MatrixXd pen = -cfg.dt * s.Jn * MiB;  // k x 3k
  out.A.topLeftCorner(k, 3 * k) = pen;
  for (int i = 0; i < k; ++i) {
    out.A(i, 3 * k + i) = -1.0;
    out.b(i) = s.phi(i) + cfg.dt * s.Jn.row(i).dot(s.nu_free);
  }
  if (cfg.friction == FrictionModel::kCone) {
    for (int i = 0; i < k; ++i) {
      const int r = k + 3 * i;
      out.A(r, i) = -1.0;
      out.A(r + 1, k + 2 * i) = -1.0;
      out.A(r + 2, k + 2 * i + 1) = -1.0;
    }
  } else {
    for (int i = 0; i < k; ++i) out.A(k + i, i) = -1.0;
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < kOctagonSides; ++j) {
        const int r = 2 * k + kOctagonSides * i + j;
        out.A(r, i) = -1.0;
        out.A(r, k + 2 * i) = std::cos(direction_angle(j));
        out.A(r, k + 2 * i + 1) = std::sin(direction_angle(j));
      }
  }
}

QpBatch<double> make_loss_batch(const ContactNetsLossConfig& cfg, int k, int size) {
  const int n = 4 * k, m = loss_rows(cfg.friction, k);
  std::vector<int> row_ptr{0}, col;
  for (int i = 0; i < k; ++i) {  // penetration
    for (int c = 0; c < 3 * k; ++c) col.push_back(c);
    col.push_back(3 * k + i);
    row_ptr.push_back(static_cast<int>(col.size()));
  }
  if (cfg.friction == FrictionModel::kCone) {
    for (int i = 0; i < k; ++i) {
      for (int c : {i, k + 2 * i, k + 2 * i + 1}) {
        col.push_back(c);
        row_ptr.push_back(static_cast<int>(col.size()));
      }
    }
  } else {
    for (int i = 0; i < k; ++i) {
      col.push_back(i);
      row_ptr.push_back(static_cast<int>(col.size()));
    }
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < kOctagonSides; ++j) {
        for (int c : {i, k + 2 * i, k + 2 * i + 1}) col.push_back(c);
        row_ptr.push_back(static_cast<int>(col.size()));
      }
  }
  (void)m;
  return QpBatch<double>::with_pattern(size, n, loss_cones(cfg.friction, k), std::move(row_ptr),
                                       std::move(col));
}

void store_loss_qp(const LossQp& qp, int index, QpBatch<double>& batch) {
  const int n = batch.n, m = batch.m();
  if (qp.n != n || qp.A.rows() != m) throw Error("store_loss_qp: shape differs from the batch");
  double* P = batch.P.data() + size_t(index) * n * n;
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c) P[r * n + c] = qp.P(r, c);
  for (int i = 0; i < n; ++i) batch.q[size_t(index) * n + i] = qp.q(i);
  for (int i = 0; i < m; ++i) batch.b[size_t(index) * m + i] = qp.b(i);
  double* A = batch.A.data() + size_t(index) * batch.nnz();
  for (int r = 0; r < m; ++r)
    for (int p = batch.a_row_ptr[r]; p < batch.a_row_ptr[r + 1]; ++p) A[p] = qp.A(r, batch.a_col[p]);
}

double regularizer_value(const ContactNetsLossConfig& cfg, const ContactFrame& f,
                         FrameGradient* g) {
  const int k = f.contacts();
  const ContactNetsWeights& w = cfg.weights;
  double value = 0;
  for (int i = 0; i < k; ++i) {
    const Eigen::Vector3d nv = f.Jn.row(i).head<3>().transpose();
    const double nn = nv.norm();
    if (w.reg_unit != 0) {
      value += w.reg_unit * (nn - 1) * (nn - 1);
      if (g && nn > 0) g->Jn.row(i).head<3>() += (2 * w.reg_unit * (nn - 1) / nn) * nv.transpose();
    }
    if (w.reg_perp != 0 && nn > 0) {
      const Eigen::Vector3d nh = nv / nn;
      for (int r = 0; r < 2; ++r) {
        const Eigen::Vector3d tv = f.Jt.row(2 * i + r).head<3>().transpose();
        const double tn = tv.norm();
        if (tn == 0) continue;
        const Eigen::Vector3d th = tv / tn;
        const double c = nh.dot(th);
        value += w.reg_perp * c * c;
        if (g) {
          g->Jn.row(i).head<3>() += (2 * w.reg_perp * c / nn) * (th - c * nh).transpose();
          g->Jt.row(2 * i + r).head<3>() += (2 * w.reg_perp * c / tn) * (nh - c * th).transpose();
        }
      }
    }
  }
  return value;
}

void loss_qp_gradient(const ContactNetsLossConfig& cfg, const TransitionFrame& t,
                      const double* x, const double* y, FrameGradient& g) {
  Scaled s;
  scale(cfg, t, s);
  const int k = s.k;
  const ContactNetsWeights& w = cfg.weights;
  const double L = cfg.length_unit, dt = cfg.dt;
  Eigen::Map<const Eigen::VectorXd> ln(x, k), lt(x + k, 2 * k), yp(y, k);
  const Vec6 Jl = s.Jn.transpose() * ln + s.Jt.transpose() * lt;
  const Vec6 MiJl = s.Mi * Jl;
  const Vec6 e = MiJl - s.dv;
  const Vec6 gJ = 2.0 * w.match * (s.Mi * e) - dt * (s.Mi * (s.Jn.transpose() * yp));
  Eigen::MatrixXd dJn = ln * gJ.transpose();
  Eigen::MatrixXd dJt = lt * gJ.transpose();
  const Vec6 pen_dir = MiJl + s.nu_free;
  Eigen::VectorXd dphi(k), dphin(k);
  for (int i = 0; i < k; ++i) {
    dJn.row(i) -= dt * yp(i) * pen_dir.transpose();
    dphi(i) = -yp(i);
    const Eigen::Vector2d lti = lt.segment<2>(2 * i);
    dphin(i) = 2.0 * s.phi_next(i) * (w.comp_n * ln(i) * ln(i) + w.comp_t * lti.squaredNorm());
    const Eigen::Vector2d c = s.Jt.middleRows(2 * i, 2) * s.nu_next;
    const double cn = c.norm();
    const Eigen::Vector2d u = ln(i) * c + cn * lti;
    Eigen::Vector2d dc = 2.0 * w.cone * ln(i) * u;
    if (cn > 0) dc += 2.0 * w.cone * lti.dot(u) * (c / cn);
    dJt.middleRows(2 * i, 2) += dc * s.nu_next.transpose();
  }
  // back to SI: φ_s = φ/L; rotational Jacobian columns were divided by L.
  g.phi += dphi / L;
  g.phi_next += dphin / L;
  dJn.rightCols<3>() /= L;
  dJt.rightCols<3>() /= L;
  g.Jn += dJn;
  g.Jt += dJt;
}

ContactNetsLoss::ContactNetsLoss(ContactNetsLossConfig cfg, QpSettings<double> settings,
                                 BatchOptions options)
    : cfg_(std::move(cfg)), settings_(settings), options_(options) {
  if (!(cfg_.length_unit > 0) || !(cfg_.dt > 0))
    throw Error("contactnets loss: length_unit and dt must be > 0");
}

void ContactNetsLoss::evaluate(const std::vector<TransitionFrame>& frames, bool want_grad,
                               LossBatchResult& out, std::vector<std::vector<double>>* warm) {
  const int B = static_cast<int>(frames.size());
  if (B == 0) throw Error("contactnets loss: empty batch of transitions");
  const int k = frames[0].frame.contacts();
  if (warm && static_cast<int>(warm->size()) != B)
    throw Error("contactnets loss: warm-start list has " + std::to_string(warm->size()) +
                " entries for " + std::to_string(B) + " transitions");
  if (batch_.size != B || batch_.n != 4 * k) batch_ = make_loss_batch(cfg_, k, B);
  qps_.resize(B);
  const int n = batch_.n, m = batch_.m();
  parallel_for(B, options_.threads, [&](int, int begin, int end) {
    for (int i = begin; i < end; ++i) {
      if (frames[i].frame.contacts() != k)
        throw Error("contactnets loss: transition " + std::to_string(i) + " has " +
                    std::to_string(frames[i].frame.contacts()) + " contacts, expected " +
                    std::to_string(k));
      assemble_loss_qp(cfg_, frames[i], qps_[i]);
      store_loss_qp(qps_[i], i, batch_);
    }
  });
  BatchOptions opt = options_;
  opt.warm_start = false;
  if (warm) {
    sol_.resize(B, n, m);
    bool any = false;
    for (int i = 0; i < B; ++i) {
      const auto& ws = (*warm)[i];
      if (ws.size() == size_t(n + m)) {
        std::copy(ws.begin(), ws.begin() + n, sol_.x.begin() + size_t(i) * n);
        std::copy(ws.begin() + n, ws.end(), sol_.y.begin() + size_t(i) * m);
        any = true;
      } else {
        std::fill(sol_.x.begin() + size_t(i) * n, sol_.x.begin() + size_t(i + 1) * n, 0.0);
        std::fill(sol_.y.begin() + size_t(i) * m, sol_.y.begin() + size_t(i + 1) * m, 0.0);
      }
    }
    opt.warm_start = any;
  }
  solve_batch(batch_, settings_, opt, sol_);
  out.qp_loss.assign(B, 0.0);
  out.reg_loss.assign(B, 0.0);
  out.not_solved = 0;
  out.iterations = 0;
  if (want_grad) out.grad.resize(B);
  for (int i = 0; i < B; ++i) {
    if (!is_solved(sol_.status[i])) ++out.not_solved;
    out.iterations += sol_.iterations[i];
  }
  parallel_for(B, options_.threads, [&](int, int begin, int end) {
    for (int i = begin; i < end; ++i) {
      out.qp_loss[i] = std::max(0.0, sol_.objective[i] + qps_[i].constant);
      FrameGradient* g = nullptr;
      if (want_grad) {
        out.grad[i].resize(k);
        g = &out.grad[i];
        loss_qp_gradient(cfg_, frames[i], sol_.x.data() + size_t(i) * n,
                         sol_.y.data() + size_t(i) * m, *g);
      }
      out.reg_loss[i] = regularizer_value(cfg_, frames[i].frame, g);
      if (warm) {
        auto& ws = (*warm)[i];
        ws.resize(n + m);
        std::copy(sol_.x.begin() + size_t(i) * n, sol_.x.begin() + size_t(i + 1) * n, ws.begin());
        std::copy(sol_.y.begin() + size_t(i) * m, sol_.y.begin() + size_t(i + 1) * m, ws.begin() + n);
      }
    }
  });
}

}  // namespace impulse
