// Multibody systems: a floating base link plus revolute joints (a small
// kinematic tree), with vertex contact geometry on every link against the
// ground plane z = 0. A single rigid body is the one-link case of this code.
//
// Coordinates (Drake's order, the order of the CCN data files):
//   q = [quaternion w,x,y,z of the base, body -> world (4); base-frame origin,
//        world (3); joint angles θ (nj)]                           nq = 7 + nj
//   v = [ω of the base, base frame (3); velocity of the base-frame origin,
//        world (3); joint rates θ̇ (nj)]                            nv = 6 + nj
//   x = [q; v] (13 + 2 nj numbers; the cube 13, the elbow 15).
// q̇ = Γ(q) v: quaternion rate ½ quat ⊗ (0, ω), ṗ = v, θ̇ = θ̇.
//
// Links are listed parents first (link 0 the base); link l ≥ 1 hangs from
// link parent(l) by joint l−1: its frame origin sits at joint_origin (parent
// frame) and it is rotated from the parent's frame by θ about axis (a unit
// vector, the same in both frames).
//
// Dynamics. Link l's inertia is π_l = [m, h = m c, I_o (xx yy zz xy xz yz)]
// about its frame origin (host/dynamics/inertia.h). With J_o,l, J_ω,l (3 x nv)
// the world Jacobians of the link origin's velocity and of its angular
// velocity,
//   M(q) = Σ_l m J_oᵀJ_o − J_oᵀ S J_ω + J_ωᵀ S J_o + J_ωᵀ R I_o Rᵀ J_ω,  S = [R h]×,
// and the equations of motion are M(q) v̇ + h(q, v) = τ (generalized forces,
// e.g. Σ J_pointᵀ f of contact forces), h holding Coriolis, centrifugal and
// gravity terms. Both are linear in π: every quantity here comes from one
// per-link wrench regressor (link_wrench_regressor), so that the learning
// losses get ∂/∂π without a second implementation.
#pragma once

#include <string>
#include <vector>

#include <Eigen/Dense>

#include "host/dynamics/inertia.h"
#include "io/system_tosses.h"

namespace impulse {

struct LinkSpec {
  std::string name;
  int parent = -1;                                          // −1 for the base (link 0 only)
  Eigen::Vector3d joint_origin = Eigen::Vector3d::Zero();   // in the parent frame, m
  Eigen::Vector3d axis = Eigen::Vector3d::UnitY();          // joint axis, unit
  LinkInertia inertia;                                      // nominal (true, when known)
  std::vector<Eigen::Vector3d> vertices;                    // contact vertices, link frame, m
  Eigen::Vector3d size = Eigen::Vector3d::Zero();           // nominal box size (random init), m
};

struct MultibodySystem {
  std::string name;
  std::vector<LinkSpec> links;
  double gravity = 9.81;  // m/s², along −z world
  double mu = 0.3;        // nominal friction
  // the layout its data files use where it is not the model's (io/system_tosses.h;
  // a description's "state": host/systems/system_file.h)
  StateLayout layout;

  int num_links() const { return static_cast<int>(links.size()); }
  int joints() const { return num_links() - 1; }
  int nq() const { return 7 + joints(); }
  int nv() const { return 6 + joints(); }
  int width() const { return nq() + nv(); }
  int contacts() const;  // total vertices
  double total_mass() const;
  // checks the tree (link 0 the base, parents before children, unit axes,
  // positive masses, finite numbers); throws Error naming the link.
  void validate() const;
};

// The 8 corners of an axis-aligned box (link frame), x fastest, then y, then z.
std::vector<Eigen::Vector3d> box_vertices(const Eigen::Vector3d& centre, const Eigen::Vector3d& size);

// The three systems of the CCN paper, from their published numbers:
// cube: 0.1048 m, 0.37 kg, I = 0.00081 kg m² (ContactNets' data), μ 0.18;
// asymmetric: a 6-vertex object of about the volume of one elbow link, 0.25 kg,
//   I = 0.00081 (the paper's Eq. 17), μ 0.3 (synthetic data only);
// elbow: two 0.10 x 0.05 x 0.05 m boxes of 0.37 kg, hinge about link 1's y axis,
//   child frame at (−0.035, 0.06, 0) in link 1, link 2's centre at (0.035, 0, 0)
//   in its own frame, μ 0.3 (../shared/data/articulated_elbow/README.md).
MultibodySystem cube_system();
MultibodySystem asymmetric_system();
MultibodySystem elbow_system();
// by name: "cube" | "asymmetric" | "elbow"; throws Error otherwise. The same systems are
// data/systems/NAME.json; any system from a file: host/systems/system_file.h.
MultibodySystem system_by_name(const std::string& name);

// Kinematics of one configuration (and velocity), reused by every quantity
// below. Sized on first use; evaluating again with the same system allocates
// nothing.
struct LinkKinematics {
  Eigen::Matrix3d R;            // link -> world
  Eigen::Vector3d p;            // link-frame origin, world
  Eigen::MatrixXd Jo, Jw;       // 3 x nv: origin velocity, angular velocity (world)
  Eigen::Vector3d w;            // angular velocity, world (needs v)
  Eigen::Vector3d a_bias, alpha_bias;  // origin / angular acceleration at v̇ = 0 (needs v)
};
struct Kinematics {
  std::vector<LinkKinematics> links;
  bool has_velocity = false;
};

// Link poses and Jacobians at q (x's first nq entries); with v also the
// velocity-product accelerations. Throws Error on wrong sizes.
void kinematics(const MultibodySystem& sys, const Eigen::Ref<const Eigen::VectorXd>& q,
                Kinematics& out);
void kinematics(const MultibodySystem& sys, const Eigen::Ref<const Eigen::VectorXd>& q,
                const Eigen::Ref<const Eigen::VectorXd>& v, Kinematics& out);

// The 6 x 10 map from a link's π to the wrench [f; n] (world; n about the link
// origin) that gives the link origin acceleration a, angular acceleration α at
// angular velocity ω in a gravity field g (world): f = m(a − g) + α×Rh +
// ω×(ω×Rh), n = Rh×(a − g) + R I_o Rᵀ α + ω×(R I_o Rᵀ ω).
Eigen::Matrix<double, 6, 10> link_wrench_regressor(const Eigen::Matrix3d& R, const Eigen::Vector3d& a,
                                                   const Eigen::Vector3d& alpha,
                                                   const Eigen::Vector3d& w, const Eigen::Vector3d& g);

// π of every link, stacked (10 per link).
Eigen::VectorXd stacked_inertial(const MultibodySystem& sys);

// M(q) (nv x nv) for the stacked π.
void mass_matrix(const Kinematics& k, const Eigen::VectorXd& pi, Eigen::MatrixXd& M);
// h(q, v) (nv): Coriolis, centrifugal and gravity (kinematics with velocity).
void bias_force(const Kinematics& k, const Eigen::VectorXd& pi, double gravity, Eigen::VectorXd& h);
// ∂(yᵀ(M(q) w − dt·h(q, v)))/∂π for given y, w (nv): 10 per link, the gradient
// the losses need of terms linear in M and h.
void inertial_gradient(const Kinematics& k, const Eigen::VectorXd& y, const Eigen::VectorXd& w,
                       double dt, double gravity, Eigen::VectorXd& grad_pi);
// ∂(uᵀ M(q) u)/∂π (10 per link).
void mass_quadratic_gradient(const Kinematics& k, const Eigen::VectorXd& u, Eigen::VectorXd& grad_pi);

// Kinetic and potential energy (potential 0 at z = 0).
double kinetic_energy(const Kinematics& k, const Eigen::VectorXd& pi, const Eigen::VectorXd& v);
double potential_energy(const Kinematics& k, const Eigen::VectorXd& pi, double gravity);

// Contact geometry: one contact per vertex (links in order), against z = 0.
//   φ_i = z of the vertex; J_p,i = J_o + [J_ω columns] × R r (3 x nv, world
//   velocity of the vertex point); J_n,i = e_zᵀ J_p,i, J_t,i = [e_x; e_y]ᵀ J_p,i
// (no friction folded in). vertices[l] are link l's (learned) vertices.
struct MultibodyContacts {
  Eigen::VectorXd phi;   // k
  Eigen::MatrixXd Jn;    // k x nv
  Eigen::MatrixXd Jt;    // 2k x nv
  std::vector<int> link; // link of each contact
};
void contact_frame(const MultibodySystem& sys, const Kinematics& k,
                   const std::vector<std::vector<Eigen::Vector3d>>& vertices, MultibodyContacts& out);
// Chain rules into the vertices (3 per vertex, links in order, added into grad):
// of ∂L/∂J_p given as G_J (3k x nv; rows 3i, 3i+1, 3i+2 = ∂L/∂ of contact i's
// x, y and z rows of J_p, i.e. its two J_t rows and its J_n row), with k the
// kinematics the Jacobians were taken at; and of ∂L/∂φ (k), at the kinematics φ
// was taken at.
void jacobian_vertex_gradient(const MultibodySystem& sys, const Kinematics& k,
                              const std::vector<std::vector<Eigen::Vector3d>>& vertices,
                              const Eigen::MatrixXd& G_J, double* grad);
void phi_vertex_gradient(const MultibodySystem& sys, const Kinematics& k,
                         const std::vector<std::vector<Eigen::Vector3d>>& vertices,
                         const Eigen::VectorXd& G_phi, double* grad);

// q' = q + Γ(q) v' dt, quaternion renormalized (semi-implicit Euler, CCN eq. 6b).
void integrate_configuration(const MultibodySystem& sys, const Eigen::Ref<const Eigen::VectorXd>& q,
                             const Eigen::Ref<const Eigen::VectorXd>& v_next, double dt,
                             Eigen::Ref<Eigen::VectorXd> q_next);

// Free-flight acceleration v̇ = −M⁻¹ h (no contact).
Eigen::VectorXd free_acceleration(const MultibodySystem& sys, const Eigen::VectorXd& pi,
                                  const Eigen::Ref<const Eigen::VectorXd>& q,
                                  const Eigen::Ref<const Eigen::VectorXd>& v);

}  // namespace impulse
