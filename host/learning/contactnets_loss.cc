#include "host/learning/contactnets_loss.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "solvers/error.h"

namespace impulse {
namespace {

ConeSpec loss_cones(FrictionModel f) {
  ConeSpec c;
  if (f == FrictionModel::kCone) {
    c.n_nonneg = cn::kK;  // penetration
    c.n_soc = cn::kK;
  } else {
    c.n_nonneg = cn::rows(1);  // penetration, λ_n ≥ 0, octagon
  }
  return c;
}

// dL/dframe in the host-device layout, added into the Eigen one.
void add_grad(const cn::FrameGrad<double>& g, FrameGradient& out) {
  for (int i = 0; i < cn::kK; ++i) {
    out.phi(i) += g.phi[i];
    out.phi_next(i) += g.phin[i];
    for (int e = 0; e < 6; ++e) out.Jn(i, e) += g.Jn[i][e];
  }
  for (int r = 0; r < 2 * cn::kK; ++r)
    for (int e = 0; e < 6; ++e) out.Jt(r, e) += g.Jt[r][e];
}

View<double, UnitStride> view(double* p) { return View<double, UnitStride>{p, UnitStride{}}; }
View<const double, UnitStride> cview(const double* p) {
  return View<const double, UnitStride>{p, UnitStride{}};
}

// problem `index` of a make_loss_batch batch from the frame; returns the constant
double assemble_into(const cn::LossConsts<double>& c, const cn::Frame<double>& f,
                     const TransitionFrame& t, QpBatch<double>& batch, int index) {
  const size_t k = size_t(index);
  const int n = batch.n, m = batch.m(), nnz = batch.nnz();
  return cn::assemble_frame(c, f, t.x.data(), t.x_next.data(), view(batch.P.data() + k * n * n),
                            view(batch.q.data() + k * n), view(batch.A.data() + k * nnz),
                            view(batch.b.data() + k * m));
}

}  // namespace

cn::LossConsts<double> loss_consts(const ContactNetsLossConfig& cfg) {
  const Eigen::Matrix3d& I = cfg.body.inertia;
  if ((I - Eigen::Matrix3d(I.diagonal().asDiagonal())).cwiseAbs().maxCoeff() > 0)
    throw Error("contactnets loss: the body's inertia must be diagonal (principal axes)");
  if (!(cfg.length_unit > 0) || !(cfg.dt > 0))
    throw Error("contactnets loss: length_unit and dt must be > 0");
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

void to_cn_frame(const TransitionFrame& t, cn::Frame<double>& f) {
  const int k = t.frame.contacts();
  if (k != cn::kK || t.frame.Jn.rows() != k || t.frame.Jn.cols() != 6 ||
      t.frame.Jt.rows() != 2 * k || t.frame.Jt.cols() != 6 || t.phi_next.size() != k)
    throw Error("contactnets loss: expected a frame of " + std::to_string(cn::kK) +
                " contacts (phi 8, Jn 8x6, Jt 16x6, phi_next 8), got phi " + std::to_string(k) +
                ", Jn " + std::to_string(t.frame.Jn.rows()) + "x" + std::to_string(t.frame.Jn.cols()) +
                ", Jt " + std::to_string(t.frame.Jt.rows()) + "x" + std::to_string(t.frame.Jt.cols()) +
                ", phi_next " + std::to_string(t.phi_next.size()));
  for (int i = 0; i < k; ++i) {
    f.phi[i] = t.frame.phi(i);
    f.phin[i] = t.phi_next(i);
    for (int e = 0; e < 6; ++e) f.Jn[i][e] = t.frame.Jn(i, e);
  }
  for (int r = 0; r < 2 * k; ++r)
    for (int e = 0; e < 6; ++e) f.Jt[r][e] = t.frame.Jt(r, e);
}

void FrameGradient::resize(int k) {
  phi = Eigen::VectorXd::Zero(k);
  phi_next = Eigen::VectorXd::Zero(k);
  Jn = Eigen::MatrixXd::Zero(k, 6);
  Jt = Eigen::MatrixXd::Zero(2 * k, 6);
}

QpBatch<double> make_loss_batch(const ContactNetsLossConfig& cfg, int size) {
  std::vector<int> row_ptr, col;
  cn::pattern(cfg.friction == FrictionModel::kOctagon, row_ptr, col);
  return QpBatch<double>::with_pattern(size, cn::kN, loss_cones(cfg.friction), std::move(row_ptr),
                                       std::move(col));
}

double assemble_loss_qp(const ContactNetsLossConfig& cfg, const TransitionFrame& t,
                        QpBatch<double>& batch, int index) {
  const cn::LossConsts<double> c = loss_consts(cfg);
  if (batch.n != cn::kN || batch.m() != cn::rows(c.octagon) || batch.nnz() != cn::nnz(c.octagon))
    throw Error("assemble_loss_qp: the batch was not made by make_loss_batch for this friction model");
  if (index < 0 || index >= batch.size) throw Error("assemble_loss_qp: problem index out of range");
  cn::Frame<double> f;
  to_cn_frame(t, f);
  return assemble_into(c, f, t, batch, index);
}

double regularizer_value(const ContactNetsLossConfig& cfg, const ContactFrame& f,
                         FrameGradient* g) {
  TransitionFrame t;
  t.frame = f;
  t.phi_next = Eigen::VectorXd::Zero(f.contacts());  // the regularizers do not use it
  cn::Frame<double> cf;
  to_cn_frame(t, cf);
  cn::FrameGrad<double> cg;
  cn::zero(cg);
  const double v = cn::regularizers(loss_consts(cfg), cf, g ? &cg : nullptr);
  if (g) add_grad(cg, *g);
  return v;
}

void loss_qp_gradient(const ContactNetsLossConfig& cfg, const TransitionFrame& t,
                      const double* x, const double* y, FrameGradient& g) {
  cn::Frame<double> f;
  to_cn_frame(t, f);
  cn::FrameGrad<double> cg;
  cn::zero(cg);
  cn::qp_frame_gradient(loss_consts(cfg), f, t.x.data(), t.x_next.data(), cview(x), cview(y), cg);
  add_grad(cg, g);
}

ContactNetsLoss::ContactNetsLoss(ContactNetsLossConfig cfg, QpSettings<double> settings,
                                 BatchOptions options)
    : cfg_(std::move(cfg)), settings_(settings), options_(options), consts_(loss_consts(cfg_)) {}

void ContactNetsLoss::evaluate(const std::vector<TransitionFrame>& frames, bool want_grad,
                               LossBatchResult& out, std::vector<std::vector<double>>* warm) {
  const int B = static_cast<int>(frames.size());
  if (B == 0) throw Error("contactnets loss: empty batch of transitions");
  if (warm && static_cast<int>(warm->size()) != B)
    throw Error("contactnets loss: warm-start list has " + std::to_string(warm->size()) +
                " entries for " + std::to_string(B) + " transitions");
  if (batch_.size != B) batch_ = make_loss_batch(cfg_, B);
  constant_.resize(B);
  const int n = batch_.n, m = batch_.m();
  parallel_for(B, options_.threads, [&](int, int begin, int end) {
    cn::Frame<double> f;
    for (int i = begin; i < end; ++i) {
      try {
        to_cn_frame(frames[i], f);
      } catch (const Error& e) {
        throw Error("transition " + std::to_string(i) + ": " + e.what());
      }
      constant_[i] = assemble_into(consts_, f, frames[i], batch_, i);
    }
  });
  BatchOptions opt = options_;
  opt.warm_start = false;
  if (warm) {
    sol_.resize(B, n, m);
    bool any = false;
    for (int i = 0; i < B; ++i) {
      const auto& ws = (*warm)[i];
      // x, y and the ρ the last solve ended at (n + m + 1; n + m: a checkpoint from
      // before ρ was kept, which starts at the settings' ρ)
      if (ws.size() == size_t(n + m) || ws.size() == size_t(n + m + 1)) {
        std::copy(ws.begin(), ws.begin() + n, sol_.x.begin() + size_t(i) * n);
        std::copy(ws.begin() + n, ws.begin() + n + m, sol_.y.begin() + size_t(i) * m);
        sol_.rho[i] = ws.size() == size_t(n + m + 1) ? ws[n + m] : 0.0;
        any = true;
      } else {
        std::fill(sol_.x.begin() + size_t(i) * n, sol_.x.begin() + size_t(i + 1) * n, 0.0);
        std::fill(sol_.y.begin() + size_t(i) * m, sol_.y.begin() + size_t(i + 1) * m, 0.0);
        sol_.rho[i] = 0.0;
      }
    }
    opt.warm_start = any;
    opt.warm_rho = any;
  }
  solve_batch(batch_, settings_, opt, sol_);
  out.qp_loss.assign(B, 0.0);
  out.reg_loss.assign(B, 0.0);
  out.not_solved = 0;
  out.iterations = 0;
  out.max_iterations = out.max_rho_updates = 0;
  if (want_grad) out.grad.resize(B);
  for (int i = 0; i < B; ++i) {
    if (!is_solved(sol_.status[i])) ++out.not_solved;
    out.iterations += sol_.iterations[i];
    out.max_iterations = std::max(out.max_iterations, sol_.iterations[i]);
    out.max_rho_updates = std::max(out.max_rho_updates, sol_.rho_updates[i]);
  }
  parallel_for(B, options_.threads, [&](int, int begin, int end) {
    cn::Frame<double> f;
    cn::FrameGrad<double> g;
    for (int i = begin; i < end; ++i) {
      out.qp_loss[i] = std::max(0.0, sol_.value[i] + constant_[i]);
      to_cn_frame(frames[i], f);
      cn::zero(g);
      if (want_grad)
        cn::qp_frame_gradient(consts_, f, frames[i].x.data(), frames[i].x_next.data(),
                              cview(sol_.x.data() + size_t(i) * n), cview(sol_.y.data() + size_t(i) * m), g);
      out.reg_loss[i] = cn::regularizers(consts_, f, want_grad ? &g : nullptr);
      if (want_grad) {
        out.grad[i].resize(cn::kK);
        add_grad(g, out.grad[i]);
      }
      if (warm) {
        auto& ws = (*warm)[i];
        ws.resize(n + m + 1);
        std::copy(sol_.x.begin() + size_t(i) * n, sol_.x.begin() + size_t(i + 1) * n, ws.begin());
        std::copy(sol_.y.begin() + size_t(i) * m, sol_.y.begin() + size_t(i + 1) * m, ws.begin() + n);
        ws[n + m] = sol_.rho[i];
      }
    }
  });
}

}  // namespace impulse
