#include "host/learning/diffsim.h"

#include <cmath>

#include "solvers/error.h"

namespace impulse {

Eigen::Matrix3d soc_projection_jacobian(const Eigen::Vector3d& z) {
  const double t = z(0);
  const Eigen::Vector2d u = z.tail<2>();
  const double nu = u.norm();
  if (nu <= t) return Eigen::Matrix3d::Identity();
  if (nu <= -t) return Eigen::Matrix3d::Zero();
  const Eigen::Vector2d ub = u / nu;
  Eigen::Matrix3d D;
  D(0, 0) = 1;
  D.block<1, 2>(0, 1) = ub.transpose();
  D.block<2, 1>(1, 0) = ub;
  D.block<2, 2>(1, 1) = (1 + t / nu) * Eigen::Matrix2d::Identity() - (t / nu) * ub * ub.transpose();
  return 0.5 * D;
}

DiffSimLoss::DiffSimLoss(DiffSimConfig cfg, MultibodyStepOptions step) : cfg_(cfg), step_(step) {
  step_.dt = cfg_.dt;
}

namespace {

// ∂(aᵀ M b)/∂π by polarization of the quadratic form's gradient
Eigen::VectorXd bilinear_mass_gradient(const Kinematics& k, const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  Eigen::VectorXd gp, gm;
  mass_quadratic_gradient(k, a + b, gp);
  mass_quadratic_gradient(k, a - b, gm);
  return 0.25 * (gp - gm);
}

}  // namespace

DiffSimResult DiffSimLoss::evaluate(const CcnModel& model, const std::vector<CcnTransition>& batch,
                                    Eigen::VectorXd* grad) {
  const MultibodySystem& sys = model.system();
  const int B = static_cast<int>(batch.size());
  if (B == 0) throw Error("DiffSim loss: empty batch");
  const int nq = sys.nq(), nv = sys.nv(), W = sys.width(), k = sys.contacts(), n = 3 * k;
  const double dt = cfg_.dt, mu = model.mu();
  Eigen::MatrixXd X(W, B);
  std::vector<const Eigen::VectorXd*> xs;
  for (int b = 0; b < B; ++b) {
    const CcnTransition& t = batch[static_cast<size_t>(b)];
    if (t.x.size() != W || t.x_next.size() != W)
      throw Error("DiffSim loss: transition " + std::to_string(b) + " has states of " + std::to_string(t.x.size()) +
                  " / " + std::to_string(t.x_next.size()) + " numbers, the system '" + sys.name + "' has " +
                  std::to_string(W));
    X.col(b) = t.x;
    xs.push_back(&t.x);
  }
  // the residual acceleration δ(x)
  MlpWorkspace ws;
  const Eigen::MatrixXd D = model.residuals(xs, ws);
  MultibodyParams params;
  Eigen::MatrixXd dpi;
  params.pi = model.inertial(&dpi);
  params.vertices = model.vertices();
  params.mu = mu;
  params.gravity = sys.gravity;
  Eigen::MatrixXd Xn;
  MultibodyStepResult step;
  multibody_step(sys, params, step_, X, model.has_residual() ? &D : nullptr, Xn, &step);

  DiffSimResult res;
  res.per_transition.resize(static_cast<size_t>(B));
  res.not_solved = step.not_solved;
  res.iterations = step.iterations;
  std::vector<Eigen::VectorXd> g_each(grad ? static_cast<size_t>(B) : 0);
  Eigen::MatrixXd dY(nv, grad ? B : 0);
  parallel_for(B, step_.batch.threads, [&](int, int begin, int end) {
    Kinematics kin;
    MultibodyContacts c;
    Eigen::MatrixXd M, Jtil(n, nv);
    Eigen::VectorXd h;
    for (int b = begin; b < end; ++b) {
      const CcnTransition& t = batch[static_cast<size_t>(b)];
      const Eigen::VectorXd v = t.x.tail(nv), vn = t.x_next.tail(nv), delta = D.col(b);
      kinematics(sys, t.x.head(nq), v, kin);
      mass_matrix(kin, params.pi, M);
      const Eigen::LLT<Eigen::MatrixXd> llt(M);
      const Eigen::VectorXd vhat = Xn.col(b).tail(nv);
      const Eigen::VectorXd e = vhat - vn;
      res.per_transition[static_cast<size_t>(b)] = e.dot(M * e) + cfg_.w_res * dt * dt * delta.dot(M * delta);
      if (!grad) continue;
      bias_force(kin, params.pi, sys.gravity, h);
      contact_frame(sys, kin, params.vertices, c);
      for (int i = 0; i < k; ++i) {
        Jtil.row(3 * i) = c.Jn.row(i);
        Jtil.row(3 * i + 1) = mu * c.Jt.row(2 * i);
        Jtil.row(3 * i + 2) = mu * c.Jt.row(2 * i + 1);
      }
      const Eigen::VectorXd lam = step.lambda.col(b), vstar = step.v_free.col(b);
      // adjoint of the QP: g = ∂loss/∂λ = 2 J̃ M e... (the loss's λ-dependence is through M v̂' = ... + J̃ᵀλ)
      Eigen::VectorXd r = Eigen::VectorXd::Zero(n);
      if (lam.cwiseAbs().maxCoeff() > 0) {
        const Eigen::MatrixXd MinvJt = llt.solve(Jtil.transpose());
        const Eigen::MatrixXd P = Jtil * MinvJt;
        Eigen::VectorXd q = Jtil * vstar;
        for (int i = 0; i < k; ++i) q(3 * i) += c.phi(i) / dt;
        const double gamma = 1.0 / std::max(1e-12, P.diagonal().maxCoeff());
        const Eigen::VectorXd z = lam - gamma * (P * lam + q);
        Eigen::MatrixXd Dp = Eigen::MatrixXd::Zero(n, n);
        for (int i = 0; i < k; ++i) Dp.block<3, 3>(3 * i, 3 * i) = soc_projection_jacobian(z.segment<3>(3 * i));
        const Eigen::MatrixXd A = Eigen::MatrixXd::Identity(n, n) - Dp + gamma * Dp * P;
        const Eigen::VectorXd g = 2 * Jtil * e;  // ∂(eᵀMe)/∂λ with M ∂v̂'/∂λ = J̃ᵀ
        const Eigen::VectorXd s = A.transpose().completeOrthogonalDecomposition().solve(g);
        r = -gamma * Dp * s;
      }
      Eigen::VectorXd& gt = g_each[static_cast<size_t>(b)];
      gt.setZero(model.net_offset());
      // inertia: 2eᵀ(dM w − Δt dh) + eᵀdMe, w = v + Δtδ − v̂'; the adjoint's
      // −aᵀdM b (a = M⁻¹J̃ᵀr, b = M⁻¹J̃ᵀλ) and Δt (cᵀ dM M⁻¹h − cᵀdh), c = a
      const Eigen::VectorXd a = llt.solve(Jtil.transpose() * r), bl = llt.solve(Jtil.transpose() * lam);
      Eigen::VectorXd gpi, gq, gh;
      inertial_gradient(kin, 2 * e, v + dt * delta - vhat, dt, sys.gravity, gpi);
      mass_quadratic_gradient(kin, e, gq);
      inertial_gradient(kin, a, llt.solve(h), 1.0, sys.gravity, gh);
      Eigen::VectorXd gtot = gpi + gq - bilinear_mass_gradient(kin, a, bl) + dt * gh;
      if (cfg_.w_res != 0 && delta.squaredNorm() > 0) {  // the residual's penalty w_res Δt² δᵀMδ
        mass_quadratic_gradient(kin, delta, gq);
        gtot += cfg_.w_res * dt * dt * gq;
      }
      gt.segment(model.inertia_offset(), dpi.cols()) += dpi.transpose() * gtot;
      // J̃: 2λeᵀ + r bᵀ + λ aᵀ + r v*ᵀ
      const Eigen::MatrixXd GJt = 2 * lam * e.transpose() + r * bl.transpose() + lam * a.transpose() +
                                  r * vstar.transpose();
      Eigen::MatrixXd GJ(n, nv);  // rows x, y, z of J_p per contact
      Eigen::VectorXd gphi(k);
      double gmu = 0;
      for (int i = 0; i < k; ++i) {
        GJ.row(3 * i) = mu * GJt.row(3 * i + 1);
        GJ.row(3 * i + 1) = mu * GJt.row(3 * i + 2);
        GJ.row(3 * i + 2) = GJt.row(3 * i);
        gmu += GJt.row(3 * i + 1).dot(c.Jt.row(2 * i)) + GJt.row(3 * i + 2).dot(c.Jt.row(2 * i + 1));
        gphi(i) = r(3 * i) / dt;
      }
      jacobian_vertex_gradient(sys, kin, params.vertices, GJ, gt.data());
      phi_vertex_gradient(sys, kin, params.vertices, gphi, gt.data());
      gt(model.mu_offset()) += gmu * model.mu_sign();
      dY.col(b) = (2 * dt * (M * e) + 2 * cfg_.w_res * dt * dt * (M * delta) + dt * Jtil.transpose() * r) / B;
    }
  });
  double sum = 0;
  for (double l : res.per_transition) sum += l;
  res.loss = sum / B;
  if (grad) {
    grad->setZero(model.parameter_count());
    for (int b = 0; b < B; ++b) grad->head(model.net_offset()) += g_each[static_cast<size_t>(b)] / B;
    if (model.has_residual()) model.network().backward(ws, dY, grad->tail(model.network().num_params()));
  }
  res.loss += model.residual_weight_penalty(cfg_.w_res_w, grad ? grad->data() + model.net_offset() : nullptr);
  return res;
}

}  // namespace impulse
