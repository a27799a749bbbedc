#include "host/learning/ccn.h"

#include <cmath>
#include <random>
#include <string>

#include "solvers/error.h"

namespace impulse {

// ---- weights ----------------------------------------------------------------------------

nlohmann::json CcnWeights::to_json() const {
  return {{"comp", comp}, {"diss", diss}, {"pen", pen}, {"res", res}, {"res_w", res_w}};
}

CcnWeights CcnWeights::from_json(const nlohmann::json& j) {
  CcnWeights w;
  w.comp = j.at("comp").get<double>();
  w.diss = j.at("diss").get<double>();
  w.pen = j.at("pen").get<double>();
  w.res = j.at("res").get<double>();
  w.res_w = j.at("res_w").get<double>();
  return w;
}

// ---- model ------------------------------------------------------------------------------

namespace {


MlpConfig residual_config(const MultibodySystem& sys, const ResidualShape& shape) {
  MlpConfig c;
  c.input_size = 12 + sys.joints() + sys.nv();
  c.hidden_sizes.assign(static_cast<size_t>(shape.layers), shape.width);
  c.output_size = sys.nv();
  c.activation = Activation::kRelu;
  return c;
}

}  // namespace

CcnModel::CcnModel(MultibodySystem sys, bool residual, uint64_t seed, ResidualShape shape)
    : sys_(std::move(sys)), residual_(residual) {
  sys_.validate();
  for (const LinkSpec& l : sys_.links) {
    vertices_.push_back(l.vertices);
    inertia_.push_back(inertial_to_log_cholesky(l.inertia));
  }
  mu_ = sys_.mu;
  if (residual_) {
    MlpInit init;
    init.seed = seed;
    init.output_scale = 1e-2;
    net_ = Mlp(residual_config(sys_, shape), init);
  }
}

int CcnModel::parameter_count() const {
  return net_offset() + (residual_ ? static_cast<int>(net_.num_params()) : 0);
}

Eigen::VectorXd CcnModel::parameters() const {
  Eigen::VectorXd t(parameter_count());
  int o = 0;
  for (const auto& link : vertices_)
    for (const Eigen::Vector3d& v : link) {
      t.segment<3>(o) = v;
      o += 3;
    }
  for (const LogCholesky& lc : inertia_) {
    t.segment<10>(o) = lc;
    o += 10;
  }
  t(o++) = mu_;
  if (residual_) t.tail(net_.num_params()) = net_.params();
  return t;
}

void CcnModel::set_parameters(const Eigen::VectorXd& t) {
  if (t.size() != parameter_count())
    throw Error("CCN model: " + std::to_string(t.size()) + " parameters given, expected " +
                std::to_string(parameter_count()));
  for (Eigen::Index i = 0; i < t.size(); ++i)
    if (!std::isfinite(t(i))) throw Error("CCN model: parameter " + std::to_string(i) + " is not finite");
  int o = 0;
  for (auto& link : vertices_)
    for (Eigen::Vector3d& v : link) {
      v = t.segment<3>(o);
      o += 3;
    }
  for (LogCholesky& lc : inertia_) {
    lc = t.segment<10>(o);
    o += 10;
  }
  mu_ = t(o++);
  if (residual_) net_.params() = t.tail(net_.num_params());
}

Eigen::VectorXd CcnModel::parameter_scale() const {
  Eigen::VectorXd s = Eigen::VectorXd::Ones(parameter_count());
  s.head(3 * vertex_count()).setConstant(0.05);
  return s;
}

Eigen::VectorXd CcnModel::inertial(Eigen::MatrixXd* jac) const {
  const int L = sys_.num_links();
  Eigen::VectorXd pi(10 * L);
  std::vector<InertialJacobian> J(static_cast<size_t>(L));
  double sum = 0;
  for (int l = 0; l < L; ++l) {
    pi.segment<10>(10 * l) = log_cholesky_to_inertial(inertia_[static_cast<size_t>(l)], jac ? &J[static_cast<size_t>(l)] : nullptr);
    sum += pi(10 * l);  // e^{2α_l}
  }
  const double s = sys_.total_mass() / sum;
  if (jac) {
    // π_l = s π̂_l:  ∂π_l/∂θ_j = s ∂π̂_l/∂θ_j δ_lj + π̂_l ∂s/∂θ_j, ∂s/∂α_j = −2 s e^{2α_j} / Σ
    jac->setZero(10 * L, 10 * L);
    for (int l = 0; l < L; ++l) {
      jac->block<10, 10>(10 * l, 10 * l) = s * J[static_cast<size_t>(l)];
      for (int j = 0; j < L; ++j) jac->col(10 * j).segment<10>(10 * l) += pi.segment<10>(10 * l) * (-2 * s * pi(10 * j) / sum);
    }
  }
  return s * pi;
}

std::vector<LinkInertia> CcnModel::link_inertias() const {
  const Eigen::VectorXd pi = inertial();
  std::vector<LinkInertia> out;
  for (int l = 0; l < sys_.num_links(); ++l) out.push_back(from_inertial(pi.segment<10>(10 * l)));
  return out;
}

void CcnModel::residual_features(const Eigen::Ref<const Eigen::VectorXd>& x, Eigen::Ref<Eigen::VectorXd> out) const {
  const Eigen::Matrix3d R = Eigen::Quaterniond(x(0), x(1), x(2), x(3)).normalized().toRotationMatrix();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) out(3 * r + c) = R(r, c);
  const int nj = sys_.joints();
  out.segment(9, 3 + nj) = x.segment(4, 3 + nj);
  out.tail(sys_.nv()) = x.segment(sys_.nq(), sys_.nv());
}

Eigen::MatrixXd CcnModel::residuals(const std::vector<const Eigen::VectorXd*>& xs, MlpWorkspace& ws) const {
  const int B = static_cast<int>(xs.size());
  for (int b = 0; b < B; ++b)
    if (xs[static_cast<size_t>(b)]->size() != sys_.width())
      throw Error("CCN model: state " + std::to_string(b) + " has " + std::to_string(xs[static_cast<size_t>(b)]->size()) +
                  " numbers, the system '" + sys_.name + "' has " + std::to_string(sys_.width()));
  Eigen::MatrixXd Y = Eigen::MatrixXd::Zero(sys_.nv(), B);
  if (!residual_) return Y;
  Eigen::MatrixXd X(net_.input_size(), B);
  for (int b = 0; b < B; ++b) residual_features(*xs[static_cast<size_t>(b)], X.col(b));
  net_.forward(X, Y, ws);
  return Y;
}

double CcnModel::residual_weight_penalty(double w, double* grad_net) const {
  if (!residual_ || w == 0) return 0;
  double s = 0;
  for (int l = 0; l < net_.num_layers(); ++l) {
    const auto Wl = net_.weight(l);
    s += Wl.squaredNorm();
    if (grad_net) Eigen::Map<Eigen::MatrixXd>(grad_net + net_.weight_offset(l), Wl.rows(), Wl.cols()) += 2 * w * Wl;
  }
  return w * s;
}

void CcnModel::randomize(uint64_t seed) {
  std::mt19937_64 rng(seed);
  // our own uniform from the raw bits: identical with every standard library
  const auto uniform = [&](double a, double b) {
    return a + (b - a) * (static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0));
  };
  const auto normal = [&]() {  // Box-Muller on our uniform
    const double u1 = uniform(1e-300, 1.0), u2 = uniform(0.0, 1.0);
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  };
  for (auto& link : vertices_)
    for (Eigen::Vector3d& v : link)
      for (int d = 0; d < 3; ++d) v(d) *= uniform(0.5, 1.5);
  mu_ *= uniform(0.5, 1.5);
  for (int l = 0; l < sys_.num_links(); ++l) {
    const LinkSpec& s = sys_.links[static_cast<size_t>(l)];
    Eigen::Vector3d len;
    for (int d = 0; d < 3; ++d) len(d) = s.size(d) * uniform(0.5, 1.5);
    LinkInertia li;
    li.mass = s.inertia.mass * uniform(0.5, 1.5);
    for (int d = 0; d < 3; ++d) li.com(d) = s.inertia.com(d) + uniform(-0.25, 0.25) * len(d);
    const Eigen::Vector3d principal(li.mass / 12 * (len.y() * len.y() + len.z() * len.z()),
                                    li.mass / 12 * (len.x() * len.x() + len.z() * len.z()),
                                    li.mass / 12 * (len.x() * len.x() + len.y() * len.y()));
    Eigen::Quaterniond qr(normal(), normal(), normal(), normal());
    const Eigen::Matrix3d R = qr.normalized().toRotationMatrix();
    li.inertia_com = R * principal.asDiagonal() * R.transpose();
    inertia_[static_cast<size_t>(l)] = inertial_to_log_cholesky(li);
  }
  if (residual_) {
    MlpInit init;
    init.seed = seed;
    init.output_scale = 1e-2;
    net_.init_params(init);
  }
}

nlohmann::json CcnModel::to_json() const {
  nlohmann::json links = nlohmann::json::array();
  const std::vector<LinkInertia> li = link_inertias();
  for (int l = 0; l < sys_.num_links(); ++l) {
    nlohmann::json v = nlohmann::json::array();
    for (const Eigen::Vector3d& p : vertices_[static_cast<size_t>(l)]) v.push_back({p.x(), p.y(), p.z()});
    const LinkInertia& L = li[static_cast<size_t>(l)];
    nlohmann::json I = nlohmann::json::array();
    for (int r = 0; r < 3; ++r) I.push_back({L.inertia_com(r, 0), L.inertia_com(r, 1), L.inertia_com(r, 2)});
    const LogCholesky& t = inertia_[static_cast<size_t>(l)];
    links.push_back({{"name", sys_.links[static_cast<size_t>(l)].name},
                     {"vertices_m", v},
                     {"mass_kg", L.mass},
                     {"com_m", {L.com.x(), L.com.y(), L.com.z()}},
                     {"inertia_com_kgm2", I},
                     {"log_cholesky", std::vector<double>(t.data(), t.data() + 10)}});
  }
  nlohmann::json j = {{"format", "impulse.ccn"}, {"version", 1}, {"system", sys_.name},
                      {"links", links},          {"mu", mu()}, {"residual", residual_}};
  if (residual_) j["network"] = net_.to_json();
  return j;
}

CcnModel CcnModel::from_json(const nlohmann::json& j, const MultibodySystem& sys) {
  try {
    if (j.at("format").get<std::string>() != "impulse.ccn") throw Error("not an impulse.ccn model");
    if (j.at("system").get<std::string>() != sys.name)
      throw Error("model of system '" + j.at("system").get<std::string>() + "', expected '" + sys.name + "'");
    CcnModel m(sys, j.at("residual").get<bool>());
    const auto& links = j.at("links");
    if (static_cast<int>(links.size()) != sys.num_links()) throw Error("wrong number of links");
    for (int l = 0; l < sys.num_links(); ++l) {
      const auto& L = links[static_cast<size_t>(l)];
      const auto& v = L.at("vertices_m");
      if (v.size() != m.vertices_[static_cast<size_t>(l)].size()) throw Error("wrong number of vertices on link " + std::to_string(l));
      for (size_t i = 0; i < v.size(); ++i)
        m.vertices_[static_cast<size_t>(l)][i] = Eigen::Vector3d(v[i].at(0).get<double>(), v[i].at(1).get<double>(), v[i].at(2).get<double>());
      const std::vector<double> t = L.at("log_cholesky").get<std::vector<double>>();
      if (t.size() != 10) throw Error("log_cholesky of link " + std::to_string(l) + " is not 10 numbers");
      m.inertia_[static_cast<size_t>(l)] = Eigen::Map<const LogCholesky>(t.data());
    }
    m.mu_ = j.at("mu").get<double>();
    if (m.residual_) m.net_ = Mlp::from_json(j.at("network"));
    m.set_parameters(m.parameters());  // finiteness
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("CCN model JSON: ") + e.what());
  } catch (const Error& e) {
    throw Error(std::string("CCN model JSON: ") + e.what());
  }
}

// ---- loss -------------------------------------------------------------------------------

namespace {

// Everything one transition's QP and gradient need, for given θ-derived values.
struct Terms {
  Kinematics kin, kin_next;
  MultibodyContacts c, c_next;
  Eigen::MatrixXd M, Jtil, MinvJt;  // Jtil: 3k x nv, rows [Jn_i; μ Jt_x,i; μ Jt_y,i]
  Eigen::LLT<Eigen::MatrixXd> llt;
  Eigen::VectorXd h, w, f0, Minvf0, lin, delta, v_next, Jtv;  // Jtv: 2k (J_t v')
  double constant = 0;
};

void check_transition(const MultibodySystem& sys, const CcnTransition& t) {
  if (t.x.size() != sys.width() || t.x_next.size() != sys.width())
    throw Error("CCN loss: a state has " + std::to_string(t.x.size()) + " / " + std::to_string(t.x_next.size()) +
                " numbers, the system '" + sys.name + "' has " + std::to_string(sys.width()));
}

void build_terms(const CcnModel& model, const CcnLossConfig& cfg, const CcnTransition& t,
                 const Eigen::VectorXd& pi, const Eigen::VectorXd& delta, Terms& T) {
  const MultibodySystem& sys = model.system();
  check_transition(sys, t);
  const int nq = sys.nq(), nv = sys.nv();
  const double dt = cfg.dt, mu = model.mu();
  const CcnWeights W = cfg.weights.applied(dt);
  kinematics(sys, t.x.head(nq), t.x.tail(nv), T.kin);
  kinematics(sys, t.x_next.head(nq), T.kin_next);
  mass_matrix(T.kin, pi, T.M);
  bias_force(T.kin, pi, sys.gravity, T.h);
  contact_frame(sys, T.kin, model.vertices(), T.c);
  contact_frame(sys, T.kin_next, model.vertices(), T.c_next);
  T.llt.compute(T.M);
  if (T.llt.info() != Eigen::Success) throw Error("CCN loss: the mass matrix is not positive definite");
  const int k = static_cast<int>(T.c.phi.size());
  T.Jtil.resize(3 * k, nv);
  for (int i = 0; i < k; ++i) {
    T.Jtil.row(3 * i) = T.c.Jn.row(i);
    T.Jtil.row(3 * i + 1) = mu * T.c.Jt.row(2 * i);
    T.Jtil.row(3 * i + 2) = mu * T.c.Jt.row(2 * i + 1);
  }
  T.v_next = t.x_next.tail(nv);
  T.delta = delta;
  T.w = t.x.tail(nv) - T.v_next + dt * delta;
  T.f0 = T.M * T.w - dt * T.h;
  T.Minvf0 = T.llt.solve(T.f0);
  T.MinvJt = T.llt.solve(T.Jtil.transpose());
  T.Jtv = T.c.Jt * T.v_next;
  T.lin.resize(3 * k);
  double pen = 0;
  for (int i = 0; i < k; ++i) {
    const double phin = T.c_next.phi(i);
    T.lin(3 * i) = W.comp * std::abs(phin) + W.diss * mu * T.Jtv.segment<2>(2 * i).norm();
    T.lin(3 * i + 1) = W.diss * mu * T.Jtv(2 * i);
    T.lin(3 * i + 2) = W.diss * mu * T.Jtv(2 * i + 1);
    const double neg = std::min(0.0, phin);
    pen += neg * neg;
  }
  T.constant = T.f0.dot(T.Minvf0) + W.pen * pen + W.res * dt * dt * delta.dot(T.M * delta);
}

double objective(const Terms& T, const Eigen::VectorXd& lambda) {
  const Eigen::VectorXd f = T.f0 + T.Jtil.transpose() * lambda;
  return f.dot(T.llt.solve(f)) + T.lin.dot(lambda) + T.constant - T.f0.dot(T.Minvf0);
}

// ∂objective/∂θ (without the network) added into g (model layout); returns ∂/∂δ.
Eigen::VectorXd gradient(const CcnModel& model, const CcnLossConfig& cfg, const Eigen::MatrixXd& dpi,
                         const Terms& T, const Eigen::VectorXd& lambda, double* g) {
  const MultibodySystem& sys = model.system();
  const double dt = cfg.dt, mu = model.mu();
  const CcnWeights W = cfg.weights.applied(dt);
  const int k = static_cast<int>(T.c.phi.size());
  const Eigen::VectorXd f = T.f0 + T.Jtil.transpose() * lambda;
  const Eigen::VectorXd u = T.llt.solve(f);
  // inertia: 2uᵀ ∂f0/∂π − uᵀ ∂M/∂π u, then into θ
  Eigen::VectorXd gpi, gq;
  inertial_gradient(T.kin, 2 * u, T.w, dt, sys.gravity, gpi);
  mass_quadratic_gradient(T.kin, u, gq);
  gpi -= gq;
  if (W.res != 0 && T.delta.squaredNorm() > 0) {  // the residual's penalty W.res Δt² δᵀMδ
    mass_quadratic_gradient(T.kin, T.delta, gq);
    gpi += W.res * dt * dt * gq;
  }
  Eigen::Map<Eigen::VectorXd>(g + model.inertia_offset(), dpi.cols()) += dpi.transpose() * gpi;
  // ∂/∂Jtil = 2 λ uᵀ; dissipation through J_t; μ
  Eigen::MatrixXd GJ(3 * k, sys.nv());  // rows x, y, z of J_p per contact
  double gmu = 0;
  Eigen::VectorXd gphi(k);
  for (int i = 0; i < k; ++i) {
    const double ln = lambda(3 * i);
    const Eigen::Vector2d lt = lambda.segment<2>(3 * i + 1);
    const Eigen::Vector2d jv = T.Jtv.segment<2>(2 * i);
    const double nj = jv.norm();
    Eigen::Vector2d dd = lt;  // ∂(λ_n‖J_t v'‖ + λ_tᵀ J_t v')/∂(J_t v')
    if (nj > 0) dd += ln * jv / nj;
    for (int r = 0; r < 2; ++r)
      GJ.row(3 * i + r) = (2 * mu * lt(r)) * u.transpose() + (W.diss * mu * dd(r)) * T.v_next.transpose();
    GJ.row(3 * i + 2) = (2 * ln) * u.transpose();
    gmu += 2 * lt.dot(T.c.Jt.middleRows<2>(2 * i) * u) + W.diss * (ln * nj + lt.dot(jv));
    const double phin = T.c_next.phi(i);
    gphi(i) = W.comp * ln * (phin > 0 ? 1.0 : phin < 0 ? -1.0 : 0.0) + 2 * W.pen * std::min(0.0, phin);
  }
  jacobian_vertex_gradient(sys, T.kin, model.vertices(), GJ, g);
  phi_vertex_gradient(sys, T.kin_next, model.vertices(), gphi, g);
  g[model.mu_offset()] += gmu * model.mu_sign();
  // ∂/∂δ: ∂f/∂δ = dt M, so 2 dt M M⁻¹ f = 2 dt f; plus the norm penalty
  return 2 * dt * f + 2 * W.res * dt * dt * (T.M * T.delta);
}

}  // namespace

double ccn_objective_at(const CcnModel& model, const CcnLossConfig& cfg, const CcnTransition& t,
                        const Eigen::VectorXd& lambda, Eigen::VectorXd* grad) {
  MlpWorkspace ws;
  const Eigen::MatrixXd D = model.residuals({&t.x}, ws);
  Eigen::MatrixXd dpi;
  const Eigen::VectorXd pi = model.inertial(&dpi);
  Terms T;
  build_terms(model, cfg, t, pi, D.col(0), T);
  if (lambda.size() != T.Jtil.rows()) throw Error("ccn_objective_at: wrong number of impulses");
  const double value = objective(T, lambda);
  if (grad) {
    grad->setZero(model.parameter_count());
    const Eigen::VectorXd gd = gradient(model, cfg, dpi, T, lambda, grad->data());
    if (model.has_residual()) {
      model.network().backward(ws, gd, grad->tail(model.network().num_params()));
    }
  }
  return value;
}

namespace {

template <class C>
ccnqp::System<double, C> qp_system(const CcnModel& model, const CcnLossConfig& cfg, const char* which) {
  const MultibodySystem& sys = model.system();
  if (sys.num_links() > C::kLinks || sys.contacts() > C::kK)
    throw Error("CCN loss: system '" + sys.name + "' has " + std::to_string(sys.num_links()) + " links and " +
                std::to_string(sys.contacts()) + " vertices; the " + which + " handles up to " +
                std::to_string(C::kLinks) + " and " + std::to_string(C::kK) +
                (C::kLinks < ccnqp::HostCapacity::kLinks ? " (the CPU backend: up to " +
                                                               std::to_string(ccnqp::HostCapacity::kLinks) + " and " +
                                                               std::to_string(ccnqp::HostCapacity::kK) + ")"
                                                         : std::string()));
  ccnqp::System<double, C> s;
  s.links = sys.num_links();
  for (int l = 0; l < s.links; ++l) {
    const LinkSpec& L = sys.links[static_cast<size_t>(l)];
    s.parent[l] = L.parent;
    for (int i = 0; i < 3; ++i) s.origin[l][i] = L.joint_origin(i), s.axis[l][i] = L.axis(i);
    s.nvert[l] = static_cast<int>(model.vertices()[static_cast<size_t>(l)].size());
  }
  for (int l = s.links; l < C::kLinks; ++l) {
    s.parent[l] = -1, s.nvert[l] = 0;
    for (int i = 0; i < 3; ++i) s.origin[l][i] = s.axis[l][i] = 0;
  }
  s.total_mass = sys.total_mass();
  s.gravity = sys.gravity;
  s.dt = cfg.dt;
  const CcnWeights W = cfg.weights.applied(cfg.dt);
  s.w_comp = W.comp;
  s.w_diss = W.diss;
  s.w_pen = W.pen;
  s.w_res = W.res;
  return s;
}

}  // namespace

ccnqp::System<double, ccnqp::HostCapacity> ccn_qp_system(const CcnModel& model, const CcnLossConfig& cfg) {
  return qp_system<ccnqp::HostCapacity>(model, cfg, "CPU loss");
}

ccnqp::System<double, ccnqp::DeviceCapacity> ccn_device_system(const CcnModel& model, const CcnLossConfig& cfg) {
  return qp_system<ccnqp::DeviceCapacity>(model, cfg, "GPU loss");
}

CcnLoss::CcnLoss(CcnLossConfig cfg, QpSettings<double> settings, BatchOptions options)
    : cfg_(cfg), settings_(settings), options_(options) {}

CcnLossResult CcnLoss::evaluate(const CcnModel& model, const std::vector<CcnTransition>& batch,
                                Eigen::VectorXd* grad) {
  const MultibodySystem& sys = model.system();
  const int B = static_cast<int>(batch.size());
  if (B == 0) throw Error("CCN loss: empty batch");
  MlpWorkspace ws;
  std::vector<const Eigen::VectorXd*> xs;
  for (const CcnTransition& t : batch) {
    check_transition(sys, t);
    xs.push_back(&t.x);
  }
  const Eigen::MatrixXd D = model.residuals(xs, ws);
  CcnLossEach each;
  evaluate_each(model, batch, model.has_residual() ? &D : nullptr, each);

  CcnLossResult res;
  res.per_transition = each.loss;
  res.not_solved = each.not_solved;
  res.iterations = each.iterations;
  const int nth = model.net_offset();
  double sum = 0;
  for (int b = 0; b < B; ++b) sum += res.per_transition[static_cast<size_t>(b)];
  if (grad) {
    grad->setZero(model.parameter_count());
    for (int b = 0; b < B; ++b)
      grad->head(nth) += Eigen::Map<const Eigen::VectorXd>(each.grad_theta.data() + static_cast<size_t>(b) * nth, nth) / B;
    if (model.has_residual()) {
      const Eigen::MatrixXd dY = each.grad_delta / B;
      model.network().backward(ws, dY, grad->tail(model.network().num_params()));
    }
  }
  res.loss = sum / B + model.residual_weight_penalty(cfg_.weights.applied(cfg_.dt).res_w, grad ? grad->data() + nth : nullptr);
  return res;
}

void CcnLoss::evaluate_each(const CcnModel& model, const std::vector<CcnTransition>& batch,
                            const Eigen::MatrixXd* residual, CcnLossEach& out) {
  const MultibodySystem& sys = model.system();
  const int B = static_cast<int>(batch.size());
  if (B == 0) throw Error("CCN loss: empty batch");
  const int k = sys.contacts(), n = 3 * k, nv = sys.nv();
  for (const CcnTransition& t : batch) check_transition(sys, t);
  if (residual && (residual->rows() != nv || residual->cols() != B))
    throw Error("CCN loss: the residual is " + std::to_string(residual->rows()) + " x " +
                std::to_string(residual->cols()) + ", expected " + std::to_string(nv) + " x " + std::to_string(B) +
                " (the system's " + std::to_string(nv) + " velocities x the batch's transitions)");
  if (residual && !residual->allFinite()) throw Error("CCN loss: the residual has a non-finite entry");
  const auto qs = ccn_qp_system(model, cfg_);
  const Eigen::VectorXd theta = model.parameters();

  // assemble (solvers/ccn_qp.h): min ½λᵀPλ + qᵀλ, λ = s ∈ K (A = −I, b = 0)
  ConeSpec cones;
  cones.n_soc = k;
  std::vector<int> row_ptr(static_cast<size_t>(n + 1)), col(static_cast<size_t>(n));
  for (int r = 0; r <= n; ++r) row_ptr[static_cast<size_t>(r)] = r;
  for (int r = 0; r < n; ++r) col[static_cast<size_t>(r)] = r;
  QpBatch<double> qp = QpBatch<double>::with_pattern(B, n, cones, row_ptr, col);
  const int workers = resolve_threads(options_.threads);
  std::vector<ccnqp::Terms<double, ccnqp::HostCapacity>> scratch(static_cast<size_t>(workers));
  std::vector<char> bad(static_cast<size_t>(B), 0);
  parallel_for(B, options_.threads, [&](int worker, int begin, int end) {
    ccnqp::Terms<double, ccnqp::HostCapacity>& T = scratch[static_cast<size_t>(worker)];
    for (int b = begin; b < end; ++b) {
      double constant = 0;
      const size_t o = static_cast<size_t>(b);
      bad[o] = !ccnqp::assemble(qs, theta.data(), batch[o].x.data(), batch[o].x_next.data(),
                                residual ? residual->col(b).data() : nullptr, T,
                                unit_view(qp.P.data() + o * n * n), unit_view(qp.q.data() + o * n),
                                unit_view(qp.A.data() + o * n), unit_view(qp.b.data() + o * n), &constant);
    }
  });
  for (int b = 0; b < B; ++b)
    if (bad[static_cast<size_t>(b)])
      throw Error("CCN loss: transition " + std::to_string(b) + ": the mass matrix is not positive definite");
  QpSolutions<double> sol;
  solve_batch(qp, settings_, options_, sol);

  out.loss.assign(static_cast<size_t>(B), 0.0);
  const int nth = model.net_offset();
  out.grad_theta.assign(static_cast<size_t>(B) * nth, 0.0);
  out.grad_delta.setZero(nv, B);
  parallel_for(B, options_.threads, [&](int worker, int begin, int end) {
    ccnqp::Terms<double, ccnqp::HostCapacity>& T = scratch[static_cast<size_t>(worker)];
    for (int b = begin; b < end; ++b) {
      const size_t o = static_cast<size_t>(b);
      out.loss[o] = ccnqp::gradient(
          qs, theta.data(), batch[o].x.data(), batch[o].x_next.data(),
          residual ? residual->col(b).data() : nullptr, unit_view(sol.x.data() + o * n).as_const(), T,
          out.grad_theta.data() + o * nth, out.grad_delta.col(b).data());
    }
  });
  out.not_solved = 0;
  out.iterations = 0;
  for (int b = 0; b < B; ++b) {
    if (sol.status[static_cast<size_t>(b)] != SolveStatus::kSolved) ++out.not_solved;
    out.iterations += sol.iterations[static_cast<size_t>(b)];
  }
}

}  // namespace impulse
