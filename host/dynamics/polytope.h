// ContactNets Polytope geometry (paper App. A.2): k = 8 contacts of a body with
// a flat surface.
//   φ_n,i(q) = z · (p + R a_i)           (normal: learned direction z, vertices a_i)
//   φ_t,i(q) = T (p + R b_i)   (2 rows)  (tangent: learned 2x3 T, vertices b_i)
// with Jacobians in ν = [v world; ω body]:
//   J_n,i = [zᵀ, (a_i × Rᵀz)ᵀ],   J_t,i row r = [T_r, (b_i × RᵀT_rᵀ)ᵀ].
// The row norms of T carry the friction coefficient (μ lumped into J_t).
// The ground truth for a cube of half-width h on a table with friction μ:
// z = e_z, T = μ [e_x; e_y], a_i = b_i = (±h, ±h, ±h).
#pragma once

#include <algorithm>
#include <array>
#include <vector>

#include <Eigen/Dense>

#include "host/dynamics/contact_model.h"
#include "solvers/contactnets_qp.h"

namespace impulse {

struct PolytopeParams {
  static constexpr int kVertices = 8;
  static constexpr int kSize = 3 + 6 + 24 + 24;  // flat parameter count
  Eigen::Vector3d normal = Eigen::Vector3d::UnitZ();          // z
  Eigen::Matrix<double, 2, 3> tangent;                         // T
  Eigen::Matrix<double, kVertices, 3> normal_vertices;         // a_i (rows, body frame)
  Eigen::Matrix<double, kVertices, 3> tangent_vertices;        // b_i

  static PolytopeParams cube(double half_width, double mu) {
    PolytopeParams P;
    P.normal = Eigen::Vector3d::UnitZ();
    P.tangent << mu, 0, 0, 0, mu, 0;
    int r = 0;
    for (int sx = -1; sx <= 1; sx += 2)
      for (int sy = -1; sy <= 1; sy += 2)
        for (int sz = -1; sz <= 1; sz += 2) {
          P.normal_vertices.row(r) = Eigen::RowVector3d(sx, sy, sz) * half_width;
          ++r;
        }
    P.tangent_vertices = P.normal_vertices;
    return P;
  }
  // flat layout: z (3), T row-major (6), a row-major (24), b row-major (24).
  std::vector<double> pack() const {
    std::vector<double> v(kSize);
    int o = 0;
    for (int i = 0; i < 3; ++i) v[o++] = normal(i);
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 3; ++c) v[o++] = tangent(r, c);
    for (int r = 0; r < kVertices; ++r)
      for (int c = 0; c < 3; ++c) v[o++] = normal_vertices(r, c);
    for (int r = 0; r < kVertices; ++r)
      for (int c = 0; c < 3; ++c) v[o++] = tangent_vertices(r, c);
    return v;
  }
  static PolytopeParams unpack(const double* v) {
    PolytopeParams P;
    int o = 0;
    for (int i = 0; i < 3; ++i) P.normal(i) = v[o++];
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 3; ++c) P.tangent(r, c) = v[o++];
    for (int r = 0; r < kVertices; ++r)
      for (int c = 0; c < 3; ++c) P.normal_vertices(r, c) = v[o++];
    for (int r = 0; r < kVertices; ++r)
      for (int c = 0; c < 3; ++c) P.tangent_vertices(r, c) = v[o++];
    return P;
  }
};

// φ and the Jacobians are the host-device code of solvers/contactnets_qp.h
// (cn::frame), the same the GPU path runs.
class PolytopeModel : public ContactModel {
 public:
  PolytopeModel() { set_params(PolytopeParams::cube(0.0524, 0.18)); }
  explicit PolytopeModel(const PolytopeParams& p) { set_params(p); }
  const PolytopeParams& params() const { return params_; }
  const double* theta() const { return theta_.data(); }  // packed (PolytopeParams::pack)
  void set_params(const PolytopeParams& p) {
    static_assert(PolytopeParams::kSize == cn::kTheta && PolytopeParams::kVertices == cn::kK,
                  "the polytope layout must match solvers/contactnets_qp.h");
    params_ = p;
    const std::vector<double> v = p.pack();
    std::copy(v.begin(), v.end(), theta_.begin());
  }
  int contacts() const override { return PolytopeParams::kVertices; }
  void evaluate(const State& x, ContactFrame& out) const override {
    constexpr int k = cn::kK;
    double phi[k], Jn[k][6], Jt[2 * k][6];
    cn::frame(theta_.data(), x.data(), phi, Jn, Jt);
    out.phi.resize(k);
    out.Jn.resize(k, 6);
    out.Jt.resize(2 * k, 6);
    for (int i = 0; i < k; ++i) {
      out.phi(i) = phi[i];
      for (int e = 0; e < 6; ++e) out.Jn(i, e) = Jn[i][e];
    }
    for (int r = 0; r < 2 * k; ++r)
      for (int e = 0; e < 6; ++e) out.Jt(r, e) = Jt[r][e];
  }

 private:
  PolytopeParams params_;
  std::array<double, PolytopeParams::kSize> theta_{};
};

}  // namespace impulse
