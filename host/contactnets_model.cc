#include "host/contactnets_model.h"

#include <cmath>
#include <random>

#include "io/error.h"

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
  const PolytopeParams& P = model_.params();
  const int k = PolytopeParams::kVertices;
  Eigen::Map<Eigen::Vector3d> dz(grad);
  double* dT = grad + 3;  // row-major 2 x 3
  double* da = grad + 9;
  double* db = grad + 33;
  const Eigen::Vector3d p = x.segment<3>(0), pn = x_next.segment<3>(0);
  const Eigen::Matrix3d R = rotation(x), Rn = rotation(x_next);
  const Eigen::Vector3d& z = P.normal;
  const Eigen::Vector3d u = R.transpose() * z, un = Rn.transpose() * z;
  Eigen::Vector3d ut[2];
  for (int r = 0; r < 2; ++r) ut[r] = R.transpose() * P.tangent.row(r).transpose();
  for (int i = 0; i < k; ++i) {
    const Eigen::Vector3d a = P.normal_vertices.row(i).transpose();
    const Eigen::Vector3d b = P.tangent_vertices.row(i).transpose();
    Eigen::Map<Eigen::Vector3d> dai(da + 3 * i), dbi(db + 3 * i);
    // φ at q and at q'
    dz += g.phi(i) * (p + R * a) + g.phi_next(i) * (pn + Rn * a);
    dai += g.phi(i) * u + g.phi_next(i) * un;
    // J_n,i = [zᵀ, (a × Rᵀz)ᵀ]
    const Eigen::Vector3d gl = g.Jn.row(i).head<3>().transpose();
    const Eigen::Vector3d gr = g.Jn.row(i).tail<3>().transpose();
    dz += gl + R * gr.cross(a);
    dai += u.cross(gr);
    // J_t,i row r = [T_r, (b × RᵀT_rᵀ)ᵀ]
    for (int r = 0; r < 2; ++r) {
      const Eigen::Vector3d tl = g.Jt.row(2 * i + r).head<3>().transpose();
      const Eigen::Vector3d tr = g.Jt.row(2 * i + r).tail<3>().transpose();
      const Eigen::Vector3d dTr = tl + R * tr.cross(b);
      for (int c = 0; c < 3; ++c) dT[3 * r + c] += dTr(c);
      dbi += ut[r].cross(tr);
    }
  }
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
