#include "host/control/lcs_linearize.h"

#include <cassert>
#include <cmath>
#include <string>

#include "solvers/error.h"

namespace impulse {

void AnitescuSettings::validate() const {
  if (!(dt > 0.0 && std::isfinite(dt))) throw Error("AnitescuSettings.dt must be finite and > 0");
  if (!(compliance > 0.0 && std::isfinite(compliance)))
    throw Error("AnitescuSettings.compliance must be finite and > 0 (it makes F positive definite)");
  if (friction_edges != 0 && friction_edges != 2 && friction_edges != 4)
    throw Error("AnitescuSettings.friction_edges must be 0, 2 or 4, got " + std::to_string(friction_edges));
}

void AnitescuWork::reserve(int n, int nu, int nl) {
  W.setZero(nl, n);
  MinvWt.setZero(n, nl);
  MinvBu.setZero(n, nu);
  Minvf.setZero(n);
}

void anitescu_lcs_step(const ContactFrame& frame, const Eigen::Ref<const Eigen::VectorXd>& q_star,
                       const Eigen::MatrixXd& Minv, const Eigen::VectorXd& f0, const Eigen::MatrixXd& Bu,
                       const AnitescuSettings& s, AnitescuWork& w, Lcs& out, int k) {
  const int n = static_cast<int>(Minv.rows());
  const int nc = frame.contacts();
  const int rpc = s.rows_per_contact();
  const int nl = nc * rpc;
  assert(out.nx == 2 * n && out.nl == nl && w.W.rows() == nl && w.W.cols() == n);
  (void)nl;
  const double dt = s.dt;
  // impulse directions W (rows): J_n ± J_t rows
  for (int i = 0; i < nc; ++i) {
    for (int j = 0; j < rpc; ++j) {
      auto row = w.W.row(i * rpc + j);
      row = frame.Jn.row(i);
      if (s.friction_edges == 0) continue;
      const int t = 2 * i + j / 2;          // tangent row: j = 0,1 → first; 2,3 → second
      const double sign = (j % 2 == 0) ? 1.0 : -1.0;
      row += sign * frame.Jt.row(t);
    }
  }
  w.MinvWt.noalias() = Minv * w.W.transpose();
  w.MinvBu.noalias() = Minv * Bu;
  w.Minvf.noalias() = Minv * f0;
  Eigen::MatrixXd& A = out.A[k];
  Eigen::MatrixXd& B = out.B[k];
  Eigen::MatrixXd& D = out.D[k];
  Eigen::VectorXd& d = out.d[k];
  Eigen::MatrixXd& E = out.E[k];
  Eigen::MatrixXd& F = out.F[k];
  Eigen::MatrixXd& H = out.H[k];
  Eigen::VectorXd& c = out.c[k];
  // dynamics: v⁺ = v + dt M⁻¹(f0 + B_u u + Wᵀλ), q⁺ = q + dt v⁺
  A.setIdentity();
  A.topRightCorner(n, n).diagonal().setConstant(dt);
  B.topRows(n) = (dt * dt) * w.MinvBu;
  B.bottomRows(n) = dt * w.MinvBu;
  D.topRows(n) = (dt * dt) * w.MinvWt;
  D.bottomRows(n) = dt * w.MinvWt;
  d.head(n) = (dt * dt) * w.Minvf;
  d.tail(n) = dt * w.Minvf;
  // rows: φ* + J_n (q − q*) + dt W v⁺ + κλ
  for (int i = 0; i < nc; ++i)
    for (int j = 0; j < rpc; ++j) E.row(i * rpc + j).head(n) = frame.Jn.row(i);
  E.rightCols(n) = dt * w.W;
  F.noalias() = (dt * dt) * (w.W * w.MinvWt);
  F.diagonal().array() += s.compliance;
  H.noalias() = (dt * dt) * (w.W * w.MinvBu);
  c.noalias() = (dt * dt) * (w.W * w.Minvf);
  for (int i = 0; i < nc; ++i) {
    const double base = frame.phi[i] - frame.Jn.row(i).dot(q_star);
    for (int j = 0; j < rpc; ++j) c[i * rpc + j] += base;
  }
}

Lcs make_lcs_storage(int N, int nx, int nu, int nl) {
  Lcs l;
  l.nx = nx;
  l.nu = nu;
  l.nl = nl;
  l.A.assign(N, Eigen::MatrixXd::Zero(nx, nx));
  l.B.assign(N, Eigen::MatrixXd::Zero(nx, nu));
  l.D.assign(N, Eigen::MatrixXd::Zero(nx, nl));
  l.E.assign(N, Eigen::MatrixXd::Zero(nl, nx));
  l.F.assign(N, Eigen::MatrixXd::Zero(nl, nl));
  l.H.assign(N, Eigen::MatrixXd::Zero(nl, nu));
  l.d.assign(N, Eigen::VectorXd::Zero(nx));
  l.c.assign(N, Eigen::VectorXd::Zero(nl));
  l.r = Eigen::VectorXd::Zero(nl);
  return l;
}

void replicate_step(Lcs& l, int from) {
  for (int k = 0; k < l.horizon(); ++k) {
    if (k != from) l.copy_step(l, from, k);
  }
}

}  // namespace impulse
