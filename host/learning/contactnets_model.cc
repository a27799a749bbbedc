#include "host/learning/contactnets_model.h"

#include <cmath>
#include <random>

#include "host/batch/qp_batch.h"
#include "solvers/error.h"

namespace impulse {

void PolytopeContactModel::set_parameters(const std::vector<double>& theta) {
  if (static_cast<int>(theta.size()) != PolytopeParams::kSize)
    throw Error("polytope model: expected " + std::to_string(PolytopeParams::kSize) +
                " parameters, got " + std::to_string(theta.size()));
  for (double v : theta)
    if (!std::isfinite(v)) throw Error("polytope model: non-finite parameter");
  model_.set_params(PolytopeParams::unpack(theta.data()));
}

std::vector<double> PolytopeContactModel::parameter_scale(double length_unit) const {
  std::vector<double> s(PolytopeParams::kSize, 1.0);
  for (int i = 9; i < PolytopeParams::kSize; ++i) s[i] = length_unit;
  return s;
}

void PolytopeContactModel::backprop(const State& x, const State& x_next, const FrameGradient& g,
                                    double* grad) const {
  cn::FrameGrad<double> cg;
  for (int i = 0; i < cn::kK; ++i) {
    cg.phi[i] = g.phi(i);
    cg.phin[i] = g.phi_next(i);
    for (int e = 0; e < 6; ++e) cg.Jn[i][e] = g.Jn(i, e);
  }
  for (int r = 0; r < 2 * cn::kK; ++r)
    for (int e = 0; e < 6; ++e) cg.Jt[r][e] = g.Jt(r, e);
  cn::polytope_backprop(model_.theta(), x.data(), x_next.data(), cg, grad);
}

nlohmann::json polytope_to_json(const PolytopeParams& p) {
  nlohmann::json j;
  j["normal"] = {p.normal(0), p.normal(1), p.normal(2)};
  j["tangent"] = nlohmann::json::array();
  for (int r = 0; r < 2; ++r) j["tangent"].push_back({p.tangent(r, 0), p.tangent(r, 1), p.tangent(r, 2)});
  j["friction"] = {p.tangent.row(0).norm(), p.tangent.row(1).norm()};
  j["normal_vertices_m"] = nlohmann::json::array();
  j["tangent_vertices_m"] = nlohmann::json::array();
  for (int i = 0; i < PolytopeParams::kVertices; ++i) {
    j["normal_vertices_m"].push_back(
        {p.normal_vertices(i, 0), p.normal_vertices(i, 1), p.normal_vertices(i, 2)});
    j["tangent_vertices_m"].push_back(
        {p.tangent_vertices(i, 0), p.tangent_vertices(i, 1), p.tangent_vertices(i, 2)});
  }
  return j;
}

PolytopeParams polytope_from_json(const nlohmann::json& j) {
  try {
    PolytopeParams p;
    for (int c = 0; c < 3; ++c) p.normal(c) = j.at("normal").at(c).get<double>();
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 3; ++c) p.tangent(r, c) = j.at("tangent").at(r).at(c).get<double>();
    for (int i = 0; i < PolytopeParams::kVertices; ++i)
      for (int c = 0; c < 3; ++c) {
        p.normal_vertices(i, c) = j.at("normal_vertices_m").at(i).at(c).get<double>();
        p.tangent_vertices(i, c) = j.at("tangent_vertices_m").at(i).at(c).get<double>();
      }
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("polytope parameters: ") + e.what());
  }
}

nlohmann::json PolytopeContactModel::to_json() const {
  nlohmann::json j = polytope_to_json(model_.params());
  j["method"] = method();
  return j;
}

void LearnableContactModel::frames(std::vector<TransitionFrame>& batch, int threads) {
  parallel_for(static_cast<int>(batch.size()), threads, [&](int, int begin, int end) {
    ContactFrame next;
    for (int i = begin; i < end; ++i) {
      evaluate(batch[i].x, batch[i].frame);
      evaluate(batch[i].x_next, next);
      batch[i].phi_next = next.phi;
    }
  });
}

void LearnableContactModel::backprop_batch(const std::vector<TransitionFrame>& batch,
                                           const std::vector<FrameGradient>& g, double* grad) {
  for (size_t i = 0; i < batch.size(); ++i) backprop(batch[i].x, batch[i].x_next, g[i], grad);
}

// ---- Deep -----------------------------------------------------------------------

namespace {
MlpConfig deep_config(std::vector<int> hidden) {
  MlpConfig c;
  c.input_size = 12;
  c.hidden_sizes = std::move(hidden);
  c.output_size = 3 * PolytopeParams::kVertices;
  c.activation = Activation::kTanh;
  return c;
}
}  // namespace

DeepContactModel::DeepContactModel(const PolytopeParams& p, double length_unit, uint64_t seed,
                                   std::vector<int> hidden)
    : poly_(p), L_(length_unit) {
  MlpInit init;
  init.seed = seed;
  net_ = Mlp(deep_config(std::move(hidden)), init);
}

DeepContactModel::DeepContactModel(const PolytopeParams& p, double length_unit, Mlp net)
    : poly_(p), L_(length_unit), net_(std::move(net)) {
  if (net_.input_size() != 12 || net_.output_size() != 3 * PolytopeParams::kVertices)
    throw Error("deep contact model: the network must map 12 inputs to 24 outputs");
}

Eigen::VectorXd DeepContactModel::features(const State& x) const {
  Eigen::VectorXd f(12);
  f.head<3>() = x.segment<3>(0) / L_;
  const Eigen::Matrix3d R = rotation(x);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) f(3 + 3 * r + c) = R(r, c);
  return f;
}

Eigen::Matrix<double, 12, 6> DeepContactModel::feature_jacobian(const State& x) const {
  Eigen::Matrix<double, 12, 6> F = Eigen::Matrix<double, 12, 6>::Zero();
  F.topLeftCorner<3, 3>() = Eigen::Matrix3d::Identity() / L_;
  const Eigen::Matrix3d R = rotation(x);
  for (int j = 0; j < 3; ++j) {
    const Eigen::Matrix3d dR = R * skew(Eigen::Vector3d::Unit(j));  // Ṙ = R [ω]×
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) F(3 + 3 * r + c, 3 + j) = dR(r, c);
  }
  return F;
}

void DeepContactModel::evaluate(const State& x, ContactFrame& out) const {
  poly_.evaluate(x, out);
  const Eigen::VectorXd f = features(x);
  const Eigen::VectorXd y = net_(f);
  const Eigen::MatrixXd Jf = net_.input_jacobian(f) * feature_jacobian(x);  // 24 x 6
  const int k = PolytopeParams::kVertices;
  const double s = kScale * L_;
  out.phi += s * y.head(k);
  out.Jn += s * Jf.topRows(k);
  out.Jt += s * Jf.bottomRows(2 * k);
}

int DeepContactModel::parameter_count() const {
  return PolytopeParams::kSize + static_cast<int>(net_.num_params());
}

std::vector<double> DeepContactModel::parameters() const {
  std::vector<double> v = poly_.parameters();
  v.insert(v.end(), net_.params().data(), net_.params().data() + net_.params().size());
  return v;
}

void DeepContactModel::set_parameters(const std::vector<double>& theta) {
  if (static_cast<int>(theta.size()) != parameter_count())
    throw Error("deep contact model: expected " + std::to_string(parameter_count()) +
                " parameters, got " + std::to_string(theta.size()));
  poly_.set_parameters(std::vector<double>(theta.begin(), theta.begin() + PolytopeParams::kSize));
  net_.params() = Eigen::Map<const Eigen::VectorXd>(theta.data() + PolytopeParams::kSize,
                                                    net_.num_params());
}

std::vector<double> DeepContactModel::parameter_scale(double length_unit) const {
  std::vector<double> s = poly_.parameter_scale(length_unit);
  s.resize(parameter_count(), 1.0);
  return s;
}

void DeepContactModel::backprop(const State& x, const State& x_next, const FrameGradient& g,
                                double* grad) const {
  poly_.backprop(x, x_next, g, grad);
  const int k = PolytopeParams::kVertices;
  const double s = kScale * L_;
  MlpWorkspace ws;
  Eigen::VectorXd gnet = Eigen::VectorXd::Zero(net_.num_params());
  const Eigen::VectorXd f = features(x), fn = features(x_next);
  Eigen::MatrixXd Y(24, 1), J(24, 12);
  net_.forward_jacobian(f, Y, J, ws);
  Eigen::MatrixXd dY = Eigen::MatrixXd::Zero(24, 1);
  dY.topRows(k) = s * g.phi;
  Eigen::MatrixXd GJ(24, 6);
  GJ.topRows(k) = g.Jn;
  GJ.bottomRows(2 * k) = g.Jt;
  const Eigen::MatrixXd dJ = s * GJ * feature_jacobian(x).transpose();
  net_.backward(ws, dY, dJ, gnet);
  net_.forward(fn, Y, ws);
  dY.setZero();
  dY.topRows(k) = s * g.phi_next;
  net_.backward(ws, dY, gnet);
  Eigen::Map<Eigen::VectorXd>(grad + PolytopeParams::kSize, net_.num_params()) += gnet;
}

void DeepContactModel::frames(std::vector<TransitionFrame>& batch, int threads) {
  const int B = static_cast<int>(batch.size()), k = PolytopeParams::kVertices;
  const double s = kScale * L_;
  X_.resize(12, B);
  Xn_.resize(12, B);
  Y_.resize(24, B);
  Yn_.resize(24, B);
  J_.resize(24, 12 * B);
  for (int i = 0; i < B; ++i) {
    X_.col(i) = features(batch[i].x);
    Xn_.col(i) = features(batch[i].x_next);
  }
  net_.forward_jacobian(X_, Y_, J_, ws_);
  net_.forward(Xn_, Yn_, ws_next_);
  parallel_for(B, threads, [&](int, int begin, int end) {
    ContactFrame next;
    for (int i = begin; i < end; ++i) {
      TransitionFrame& t = batch[i];
      poly_.evaluate(t.x, t.frame);
      poly_.evaluate(t.x_next, next);
      const Eigen::MatrixXd Jf = J_.middleCols(12 * i, 12) * feature_jacobian(t.x);
      t.frame.phi += s * Y_.col(i).head(k);
      t.frame.Jn += s * Jf.topRows(k);
      t.frame.Jt += s * Jf.bottomRows(2 * k);
      t.phi_next = next.phi + s * Yn_.col(i).head(k);
    }
  });
}

void DeepContactModel::backprop_batch(const std::vector<TransitionFrame>& batch,
                                      const std::vector<FrameGradient>& g, double* grad) {
  const int B = static_cast<int>(batch.size()), k = PolytopeParams::kVertices;
  const double s = kScale * L_;
  Eigen::MatrixXd dY = Eigen::MatrixXd::Zero(24, B), dYn = Eigen::MatrixXd::Zero(24, B);
  Eigen::MatrixXd dJ(24, 12 * B);
  Eigen::MatrixXd GJ(24, 6);
  for (int i = 0; i < B; ++i) {
    poly_.backprop(batch[i].x, batch[i].x_next, g[i], grad);
    dY.col(i).head(k) = s * g[i].phi;
    dYn.col(i).head(k) = s * g[i].phi_next;
    GJ.topRows(k) = g[i].Jn;
    GJ.bottomRows(2 * k) = g[i].Jt;
    dJ.middleCols(12 * i, 12) = s * GJ * feature_jacobian(batch[i].x).transpose();
  }
  Eigen::Map<Eigen::VectorXd> gnet(grad + PolytopeParams::kSize, net_.num_params());
  net_.backward(ws_, dY, dJ, gnet);
  net_.backward(ws_next_, dYn, gnet);
}

nlohmann::json DeepContactModel::to_json() const {
  nlohmann::json j = poly_.to_json();
  j["method"] = method();
  j["network"] = net_.to_json();
  j["length_unit"] = L_;
  j["network_scale"] = kScale;
  return j;
}

PolytopeParams perturb_polytope(const PolytopeParams& truth, double fraction, uint64_t seed) {
  std::mt19937_64 rng(seed);
  // portable standard normal (Box-Muller on 53-bit uniforms)
  auto uniform = [&rng]() { return ((rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0); };
  auto normal = [&]() {
    return std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * M_PI * uniform());
  };
  std::vector<double> v = truth.pack();
  const int groups[5] = {0, 3, 9, 33, 57};
  for (int gi = 0; gi < 4; ++gi) {
    double ss = 0;
    for (int i = groups[gi]; i < groups[gi + 1]; ++i) ss += v[i] * v[i];
    const double rms = std::sqrt(ss / (groups[gi + 1] - groups[gi]));
    for (int i = groups[gi]; i < groups[gi + 1]; ++i) v[i] += fraction * rms * normal();
  }
  return PolytopeParams::unpack(v.data());
}

}  // namespace impulse
