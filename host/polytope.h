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

#include <array>
#include <vector>

#include <Eigen/Dense>

#include "host/contact_model.h"

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

class PolytopeModel : public ContactModel {
 public:
  PolytopeModel() = default;
  explicit PolytopeModel(const PolytopeParams& p) : params_(p) {}
  const PolytopeParams& params() const { return params_; }
  void set_params(const PolytopeParams& p) { params_ = p; }
  int contacts() const override { return PolytopeParams::kVertices; }
  void evaluate(const State& x, ContactFrame& out) const override {
    const int k = PolytopeParams::kVertices;
    out.phi.resize(k);
    out.Jn.resize(k, 6);
    out.Jt.resize(2 * k, 6);
    const Eigen::Vector3d p = x.segment<3>(0);
    const Eigen::Matrix3d R = rotation(x);
    const Eigen::Vector3d& z = params_.normal;
    const Eigen::Vector3d uz = R.transpose() * z;
    Eigen::Vector3d ut[2];
    for (int r = 0; r < 2; ++r) ut[r] = R.transpose() * params_.tangent.row(r).transpose();
    for (int i = 0; i < k; ++i) {
      const Eigen::Vector3d a = params_.normal_vertices.row(i).transpose();
      const Eigen::Vector3d b = params_.tangent_vertices.row(i).transpose();
      out.phi(i) = z.dot(p + R * a);
      out.Jn.row(i).head<3>() = z.transpose();
      out.Jn.row(i).tail<3>() = a.cross(uz).transpose();
      for (int r = 0; r < 2; ++r) {
        out.Jt.row(2 * i + r).head<3>() = params_.tangent.row(r);
        out.Jt.row(2 * i + r).tail<3>() = b.cross(ut[r]).transpose();
      }
    }
  }

 private:
  PolytopeParams params_ = PolytopeParams::cube(0.0524, 0.18);
};

}  // namespace impulse
