#include "host/dynamics/multibody.h"

#include <cmath>
#include <string>

#include "solvers/error.h"

namespace impulse {

namespace {

Eigen::Matrix3d cross_matrix(const Eigen::Vector3d& a) {
  Eigen::Matrix3d S;
  S << 0, -a.z(), a.y(), a.z(), 0, -a.x(), -a.y(), a.x(), 0;
  return S;
}

void check_size(const char* what, Eigen::Index got, int want) {
  if (got != want) {
    throw Error(std::string("multibody: ") + what + " has " + std::to_string(got) +
                " entries, expected " + std::to_string(want));
  }
}

// I_o basis of column 4 + k of the regressor (xx yy zz xy xz yz)
Eigen::Matrix3d inertia_basis(int k) {
  Eigen::Matrix3d E = Eigen::Matrix3d::Zero();
  static const int rc[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};
  E(rc[k][0], rc[k][1]) = 1;
  E(rc[k][1], rc[k][0]) = 1;
  return E;
}

}  // namespace

std::vector<Eigen::Vector3d> box_vertices(const Eigen::Vector3d& centre, const Eigen::Vector3d& size) {
  std::vector<Eigen::Vector3d> v;
  for (int i = 0; i < 8; ++i) {
    v.emplace_back(centre.x() + ((i & 1) ? 0.5 : -0.5) * size.x(),
                   centre.y() + ((i & 2) ? 0.5 : -0.5) * size.y(),
                   centre.z() + ((i & 4) ? 0.5 : -0.5) * size.z());
  }
  return v;
}

int MultibodySystem::contacts() const {
  int k = 0;
  for (const LinkSpec& l : links) k += static_cast<int>(l.vertices.size());
  return k;
}

double MultibodySystem::total_mass() const {
  double m = 0;
  for (const LinkSpec& l : links) m += l.inertia.mass;
  return m;
}

void MultibodySystem::validate() const {
  if (links.empty()) throw Error("multibody system '" + name + "': no links");
  if (!(std::isfinite(gravity)) || !(std::isfinite(mu)) || mu < 0)
    throw Error("multibody system '" + name + "': gravity and friction must be finite, friction >= 0");
  for (int l = 0; l < num_links(); ++l) {
    const LinkSpec& s = links[static_cast<size_t>(l)];
    const std::string who = "multibody system '" + name + "', link " + std::to_string(l) + " ('" + s.name + "')";
    if (l == 0 && s.parent != -1) throw Error(who + ": the base (link 0) must have parent -1");
    if (l > 0 && (s.parent < 0 || s.parent >= l))
      throw Error(who + ": parent " + std::to_string(s.parent) + " must be an earlier link");
    if (l > 0 && std::abs(s.axis.norm() - 1) > 1e-9) throw Error(who + ": joint axis is not a unit vector");
    if (!s.joint_origin.allFinite()) throw Error(who + ": joint origin is not finite");
    if (!(s.inertia.mass > 0) || !s.inertia.com.allFinite() || !s.inertia.inertia_com.allFinite())
      throw Error(who + ": mass must be > 0 and inertia finite");
    if (!physically_consistent(to_inertial(s.inertia)))
      throw Error(who + ": inertia is not physically consistent (triangle inequalities)");
    for (size_t i = 0; i < s.vertices.size(); ++i)
      if (!s.vertices[i].allFinite()) throw Error(who + ": vertex " + std::to_string(i) + " is not finite");
  }
}

MultibodySystem cube_system() {
  MultibodySystem s;
  s.name = "cube";
  s.mu = 0.18;
  LinkSpec b;
  b.name = "cube";
  b.size = Eigen::Vector3d::Constant(0.1048);
  b.inertia.mass = 0.37;
  b.inertia.inertia_com = Eigen::Matrix3d::Identity() * 0.00081;
  b.vertices = box_vertices(Eigen::Vector3d::Zero(), b.size);
  s.links.push_back(b);
  return s;
}

MultibodySystem asymmetric_system() {
  // The paper gives its volume (about one elbow link's, 2.5e-4 m³), mass and
  // inertia (Eq. 17) but not its vertices: ours are an irregular octahedron
  // with no symmetry plane, centroid at the origin, volume 2.47e-4 m³.
  MultibodySystem s;
  s.name = "asymmetric";
  s.mu = 0.3;
  LinkSpec b;
  b.name = "asymmetric";
  b.inertia.mass = 0.25;
  b.inertia.inertia_com = Eigen::Matrix3d::Identity() * 0.00081;
  const double raw[6][3] = {{0.075, 0.010, -0.005}, {-0.055, -0.015, 0.010}, {0.005, 0.060, 0.015},
                            {-0.010, -0.065, -0.010}, {0.015, 0.005, 0.070}, {-0.005, 0.010, -0.060}};
  Eigen::Vector3d mean = Eigen::Vector3d::Zero();
  for (const auto& r : raw) mean += Eigen::Vector3d(r[0], r[1], r[2]) / 6.0;
  for (const auto& r : raw) b.vertices.push_back(Eigen::Vector3d(r[0], r[1], r[2]) - mean);
  b.size = Eigen::Vector3d(0.13, 0.125, 0.13);
  s.links.push_back(b);
  return s;
}

MultibodySystem elbow_system() {
  MultibodySystem s;
  s.name = "elbow";
  s.mu = 0.3;
  const Eigen::Vector3d size(0.10, 0.05, 0.05);
  LinkSpec a;
  a.name = "elbow_1";
  a.size = size;
  a.inertia.mass = 0.37;
  a.inertia.inertia_com = Eigen::Matrix3d::Identity() * 0.0006167;  // the URDF's
  a.vertices = box_vertices(Eigen::Vector3d::Zero(), size);
  LinkSpec b = a;
  b.name = "elbow_2";
  b.parent = 0;
  b.joint_origin = Eigen::Vector3d(-0.035, 0.06, 0);
  b.axis = Eigen::Vector3d::UnitY();
  b.inertia.com = Eigen::Vector3d(0.035, 0, 0);
  b.vertices = box_vertices(b.inertia.com, size);
  s.links = {a, b};
  return s;
}

MultibodySystem system_by_name(const std::string& name) {
  if (name == "cube") return cube_system();
  if (name == "asymmetric") return asymmetric_system();
  if (name == "elbow") return elbow_system();
  throw Error("unknown system '" + name + "' (cube | asymmetric | elbow)");
}

Eigen::VectorXd stacked_inertial(const MultibodySystem& sys) {
  Eigen::VectorXd pi(10 * sys.num_links());
  for (int l = 0; l < sys.num_links(); ++l) pi.segment<10>(10 * l) = to_inertial(sys.links[static_cast<size_t>(l)].inertia);
  return pi;
}

void kinematics(const MultibodySystem& sys, const Eigen::Ref<const Eigen::VectorXd>& q, Kinematics& out) {
  check_size("q", q.size(), sys.nq());
  const int L = sys.num_links(), nv = sys.nv();
  out.links.resize(static_cast<size_t>(L));
  out.has_velocity = false;
  const Eigen::Quaterniond quat(q(0), q(1), q(2), q(3));
  if (!(quat.norm() > 0) || !q.allFinite()) throw Error("multibody: configuration is not finite or its quaternion is zero");
  for (int l = 0; l < L; ++l) {
    LinkKinematics& k = out.links[static_cast<size_t>(l)];
    if (k.Jo.rows() != 3 || k.Jo.cols() != nv) {
      k.Jo.resize(3, nv);
      k.Jw.resize(3, nv);
    }
    if (l == 0) {
      k.R = quat.normalized().toRotationMatrix();
      k.p = q.segment<3>(4);
      k.Jo.setZero();
      k.Jw.setZero();
      k.Jw.leftCols<3>() = k.R;
      k.Jo.middleCols<3>(3).setIdentity();
      continue;
    }
    const LinkSpec& s = sys.links[static_cast<size_t>(l)];
    const LinkKinematics& P = out.links[static_cast<size_t>(s.parent)];
    const Eigen::Vector3d r = P.R * s.joint_origin;
    k.R = P.R * Eigen::AngleAxisd(q(7 + l - 1), s.axis).toRotationMatrix();
    k.p = P.p + r;
    k.Jw = P.Jw;
    k.Jw.col(6 + l - 1) += P.R * s.axis;
    k.Jo.noalias() = P.Jo - cross_matrix(r) * P.Jw;
  }
}

void kinematics(const MultibodySystem& sys, const Eigen::Ref<const Eigen::VectorXd>& q,
                const Eigen::Ref<const Eigen::VectorXd>& v, Kinematics& out) {
  check_size("v", v.size(), sys.nv());
  if (!v.allFinite()) throw Error("multibody: velocity is not finite");
  kinematics(sys, q, out);
  for (int l = 0; l < sys.num_links(); ++l) {
    LinkKinematics& k = out.links[static_cast<size_t>(l)];
    if (l == 0) {
      k.w = k.R * v.head<3>();
      k.a_bias.setZero();
      k.alpha_bias.setZero();
      continue;
    }
    const LinkSpec& s = sys.links[static_cast<size_t>(l)];
    const LinkKinematics& P = out.links[static_cast<size_t>(s.parent)];
    const Eigen::Vector3d r = P.R * s.joint_origin;
    const Eigen::Vector3d wj = P.R * s.axis * v(6 + l - 1);
    k.w = P.w + wj;
    k.alpha_bias = P.alpha_bias + P.w.cross(wj);
    k.a_bias = P.a_bias + P.alpha_bias.cross(r) + P.w.cross(P.w.cross(r));
  }
  out.has_velocity = true;
}

Eigen::Matrix<double, 6, 10> link_wrench_regressor(const Eigen::Matrix3d& R, const Eigen::Vector3d& a,
                                                   const Eigen::Vector3d& alpha,
                                                   const Eigen::Vector3d& w, const Eigen::Vector3d& g) {
  Eigen::Matrix<double, 6, 10> A = Eigen::Matrix<double, 6, 10>::Zero();
  const Eigen::Vector3d ag = a - g;
  A.block<3, 1>(0, 0) = ag;
  for (int k = 0; k < 3; ++k) {
    const Eigen::Vector3d hw = R.col(k);
    A.block<3, 1>(0, 1 + k) = alpha.cross(hw) + w.cross(w.cross(hw));
    A.block<3, 1>(3, 1 + k) = hw.cross(ag);
  }
  const Eigen::Vector3d ab = R.transpose() * alpha, wb = R.transpose() * w;
  for (int k = 0; k < 6; ++k) {
    const Eigen::Matrix3d E = inertia_basis(k);
    A.block<3, 1>(3, 4 + k) = R * (E * ab + wb.cross(E * wb));
  }
  return A;
}

void mass_matrix(const Kinematics& kin, const Eigen::VectorXd& pi, Eigen::MatrixXd& M) {
  const int L = static_cast<int>(kin.links.size());
  check_size("pi", pi.size(), 10 * L);
  const Eigen::Index nv = kin.links[0].Jo.cols();
  M.setZero(nv, nv);
  for (int l = 0; l < L; ++l) {
    const LinkKinematics& k = kin.links[static_cast<size_t>(l)];
    const double m = pi(10 * l);
    const Eigen::Matrix3d S = cross_matrix(k.R * pi.segment<3>(10 * l + 1));
    const Eigen::Matrix3d Iw = k.R * inertia_from_vector(pi.data() + 10 * l + 4) * k.R.transpose();
    // cross terms −Joᵀ S Jw + Jwᵀ S Jo = −C − Cᵀ with C = Joᵀ S Jw (Sᵀ = −S)
    const Eigen::MatrixXd C = k.Jo.transpose() * (S * k.Jw);
    M.noalias() += m * k.Jo.transpose() * k.Jo;
    M -= C;
    M -= C.transpose();
    M.noalias() += k.Jw.transpose() * Iw * k.Jw;
  }
}

namespace {
// [Jo; Jw] y of one link
Eigen::Matrix<double, 6, 1> link_motion(const LinkKinematics& k, const Eigen::VectorXd& y) {
  Eigen::Matrix<double, 6, 1> r;
  r.head<3>() = k.Jo * y;
  r.tail<3>() = k.Jw * y;
  return r;
}
void add_generalized(const LinkKinematics& k, const Eigen::Matrix<double, 6, 1>& wrench, Eigen::VectorXd& tau) {
  tau.noalias() += k.Jo.transpose() * wrench.head<3>();
  tau.noalias() += k.Jw.transpose() * wrench.tail<3>();
}
void need_velocity(const Kinematics& k) {
  if (!k.has_velocity) throw Error("multibody: these kinematics were evaluated without a velocity");
}
}  // namespace

void bias_force(const Kinematics& kin, const Eigen::VectorXd& pi, double gravity, Eigen::VectorXd& h) {
  need_velocity(kin);
  const int L = static_cast<int>(kin.links.size());
  check_size("pi", pi.size(), 10 * L);
  h.setZero(kin.links[0].Jo.cols());
  const Eigen::Vector3d g(0, 0, -gravity);
  for (int l = 0; l < L; ++l) {
    const LinkKinematics& k = kin.links[static_cast<size_t>(l)];
    const Eigen::Matrix<double, 6, 1> wrench =
        link_wrench_regressor(k.R, k.a_bias, k.alpha_bias, k.w, g) * pi.segment<10>(10 * l);
    add_generalized(k, wrench, h);
  }
}

void inertial_gradient(const Kinematics& kin, const Eigen::VectorXd& y, const Eigen::VectorXd& w, double dt,
                       double gravity, Eigen::VectorXd& grad_pi) {
  need_velocity(kin);
  const int L = static_cast<int>(kin.links.size());
  grad_pi.setZero(10 * L);
  const Eigen::Vector3d g(0, 0, -gravity), zero = Eigen::Vector3d::Zero();
  for (int l = 0; l < L; ++l) {
    const LinkKinematics& k = kin.links[static_cast<size_t>(l)];
    const Eigen::Matrix<double, 6, 1> mw = link_motion(k, w), my = link_motion(k, y);
    const Eigen::Matrix<double, 6, 10> A = link_wrench_regressor(k.R, mw.head<3>(), mw.tail<3>(), zero, zero) -
                                           dt * link_wrench_regressor(k.R, k.a_bias, k.alpha_bias, k.w, g);
    grad_pi.segment<10>(10 * l) = A.transpose() * my;
  }
}

void mass_quadratic_gradient(const Kinematics& kin, const Eigen::VectorXd& u, Eigen::VectorXd& grad_pi) {
  const int L = static_cast<int>(kin.links.size());
  grad_pi.setZero(10 * L);
  const Eigen::Vector3d zero = Eigen::Vector3d::Zero();
  for (int l = 0; l < L; ++l) {
    const LinkKinematics& k = kin.links[static_cast<size_t>(l)];
    const Eigen::Matrix<double, 6, 1> mu = link_motion(k, u);
    grad_pi.segment<10>(10 * l) =
        link_wrench_regressor(k.R, mu.head<3>(), mu.tail<3>(), zero, zero).transpose() * mu;
  }
}

double kinetic_energy(const Kinematics& kin, const Eigen::VectorXd& pi, const Eigen::VectorXd& v) {
  Eigen::MatrixXd M;
  mass_matrix(kin, pi, M);
  return 0.5 * v.dot(M * v);
}

double potential_energy(const Kinematics& kin, const Eigen::VectorXd& pi, double gravity) {
  double V = 0;
  for (size_t l = 0; l < kin.links.size(); ++l) {
    const LinkKinematics& k = kin.links[l];
    const int o = 10 * static_cast<int>(l);
    V += gravity * (pi(o) * k.p.z() + (k.R * pi.segment<3>(o + 1)).z());
  }
  return V;
}

void contact_frame(const MultibodySystem& sys, const Kinematics& kin,
                   const std::vector<std::vector<Eigen::Vector3d>>& vertices, MultibodyContacts& out) {
  if (static_cast<int>(vertices.size()) != sys.num_links())
    throw Error("multibody: vertices for " + std::to_string(vertices.size()) + " links, the system has " +
                std::to_string(sys.num_links()));
  int K = 0;
  for (const auto& v : vertices) K += static_cast<int>(v.size());
  const Eigen::Index nv = sys.nv();
  if (out.phi.size() != K || out.Jn.cols() != nv) {
    out.phi.resize(K);
    out.Jn.resize(K, nv);
    out.Jt.resize(2 * K, nv);
  }
  out.link.resize(static_cast<size_t>(K));
  int i = 0;
  for (int l = 0; l < sys.num_links(); ++l) {
    const LinkKinematics& k = kin.links[static_cast<size_t>(l)];
    for (const Eigen::Vector3d& r : vertices[static_cast<size_t>(l)]) {
      const Eigen::Vector3d rw = k.R * r;
      out.phi(i) = k.p.z() + rw.z();
      // J_p = Jo − [R r]× Jw
      const Eigen::Matrix3d S = cross_matrix(rw);
      out.Jt.row(2 * i) = k.Jo.row(0) - S.row(0) * k.Jw;
      out.Jt.row(2 * i + 1) = k.Jo.row(1) - S.row(1) * k.Jw;
      out.Jn.row(i) = k.Jo.row(2) - S.row(2) * k.Jw;
      out.link[static_cast<size_t>(i)] = l;
      ++i;
    }
  }
}

void jacobian_vertex_gradient(const MultibodySystem& sys, const Kinematics& kin,
                              const std::vector<std::vector<Eigen::Vector3d>>& vertices,
                              const Eigen::MatrixXd& G_J, double* grad) {
  int i = 0;
  for (int l = 0; l < sys.num_links(); ++l) {
    const LinkKinematics& k = kin.links[static_cast<size_t>(l)];
    for (size_t j = 0; j < vertices[static_cast<size_t>(l)].size(); ++j, ++i) {
      // J_p column c = Jo_c + Jw_c × R r:  ∂(Σ_c G_c·J_p,c)/∂r = −Rᵀ Σ_c Jw_c × G_c
      Eigen::Vector3d s = Eigen::Vector3d::Zero();
      for (Eigen::Index c = 0; c < k.Jw.cols(); ++c)
        s += Eigen::Vector3d(k.Jw.col(c)).cross(Eigen::Vector3d(G_J.block<3, 1>(3 * i, c)));
      Eigen::Map<Eigen::Vector3d>(grad + 3 * i) -= k.R.transpose() * s;
    }
  }
}

void phi_vertex_gradient(const MultibodySystem& sys, const Kinematics& kin,
                         const std::vector<std::vector<Eigen::Vector3d>>& vertices,
                         const Eigen::VectorXd& G_phi, double* grad) {
  int i = 0;
  for (int l = 0; l < sys.num_links(); ++l) {
    const LinkKinematics& k = kin.links[static_cast<size_t>(l)];
    for (size_t j = 0; j < vertices[static_cast<size_t>(l)].size(); ++j, ++i)
      Eigen::Map<Eigen::Vector3d>(grad + 3 * i) += G_phi(i) * k.R.row(2).transpose();
  }
}

void integrate_configuration(const MultibodySystem& sys, const Eigen::Ref<const Eigen::VectorXd>& q,
                             const Eigen::Ref<const Eigen::VectorXd>& v, double dt,
                             Eigen::Ref<Eigen::VectorXd> qn) {
  check_size("q", q.size(), sys.nq());
  check_size("v", v.size(), sys.nv());
  check_size("q_next", qn.size(), sys.nq());
  const Eigen::Vector4d quat = q.head<4>();
  const Eigen::Vector3d w = v.head<3>();
  // ½ quat ⊗ (0, ω)
  Eigen::Vector4d dq;
  dq(0) = -quat.tail<3>().dot(w);
  dq.tail<3>() = quat(0) * w + quat.tail<3>().cross(w);
  Eigen::Vector4d nq = quat + 0.5 * dt * dq;
  qn.head<4>() = nq / nq.norm();
  qn.segment<3>(4) = q.segment<3>(4) + dt * v.segment<3>(3);
  const int nj = sys.joints();
  qn.tail(nj) = q.tail(nj) + dt * v.tail(nj);
}

Eigen::VectorXd free_acceleration(const MultibodySystem& sys, const Eigen::VectorXd& pi,
                                  const Eigen::Ref<const Eigen::VectorXd>& q,
                                  const Eigen::Ref<const Eigen::VectorXd>& v) {
  Kinematics k;
  kinematics(sys, q, v, k);
  Eigen::MatrixXd M;
  Eigen::VectorXd h;
  mass_matrix(k, pi, M);
  bias_force(k, pi, sys.gravity, h);
  return -M.llt().solve(h);
}

}  // namespace impulse
