// Building an LCS (host/control/lcs.h) by linearizing a contact model about a state
// (papers/adaptive-c3-residual-learning-2024.txt, Sec. III-C; Anitescu's velocity-level
// time stepping with the ε regularization that makes F positive definite).
//
// The system: configuration q and velocity v of one size n (q̇ = v: translational and
// planar-angle coordinates, the kind the controller's point-contact tasks use), constant
// inverse mass matrix M⁻¹, generalized force f0 (gravity, springs evaluated at the
// linearization point), input map B_u (n x nu). The contact geometry is a ContactFrame
// (host/dynamics/contact_model.h, the type the learning side's models fill): k contacts with
// signed distances φ, normal Jacobians J_n (k x n) and friction-folded tangential
// Jacobians J_t (2k x n, μ folded in as in ContactNets). Anitescu's linearized cone has,
// per contact, the impulse directions W_ij = J_n,i ± J_t,i,r (friction_edges = 4: both
// tangent rows; 2: the first only, for planar contacts; 0: frictionless, W_i = J_n,i).
// With λ the edge forces [N] and one step of dt:
//
//   v⁺ = v + dt M⁻¹ (f0 + B_u u + Wᵀλ),   q⁺ = q + dt v⁺,
//   0 ≤ λ_ij ⊥ φ_i(q*) + J_n,i (q − q*) + dt W_ij v⁺ + κ λ_ij ≥ 0,
//
// rows in metres (a gap error of δ metres is an offset δ in c), κ [m/N] the compliance
// (paper's ε_c), so F = dt² W M⁻¹ Wᵀ + κ I is symmetric positive definite (σ_min ≥ κ).
// The state of the LCS is x = (q, v) (2n).
//
// LcsLinearizer is the interface the adaptive loop uses to re-linearize at run time (the
// controller at every step, the learner per sample). Implementations fill one step of a
// preallocated Lcs and must not allocate (they keep their scratch; one instance per
// thread).
#pragma once

#include <Eigen/Dense>

#include "host/dynamics/contact_model.h"
#include "host/control/lcs.h"

namespace impulse {

struct AnitescuSettings {
  double dt = 0.01;          // [s] (> 0)
  double compliance = 1e-4;  // κ [m/N] (> 0)
  int friction_edges = 4;    // 0, 2 or 4 directions per contact
  int rows_per_contact() const { return friction_edges == 0 ? 1 : friction_edges; }
  void validate() const;     // throws Error naming the bad field
};

// Scratch for anitescu_lcs_step; sized by reserve(n, nu, k), then no allocation.
struct AnitescuWork {
  Eigen::MatrixXd W, MinvWt, MinvBu;  // nl x n, n x nl, n x nu
  Eigen::VectorXd Minvf;              // n
  void reserve(int n, int nu, int nl);
};

// Writes step `k` of `out` (whose nx = 2n, nu, nl = contacts · rows_per_contact sizes and
// matrices must already be allocated, e.g. by make_lcs_storage) from the frame at q*.
// Allocation-free after work.reserve; throws nothing (sizes are the caller's contract,
// checked in debug builds only).
void anitescu_lcs_step(const ContactFrame& frame, const Eigen::Ref<const Eigen::VectorXd>& q_star,
                       const Eigen::MatrixXd& Minv, const Eigen::VectorXd& f0, const Eigen::MatrixXd& Bu,
                       const AnitescuSettings& s, AnitescuWork& work, Lcs& out, int k);

// An Lcs of N steps with zero matrices of the given sizes and r = 0.
Lcs make_lcs_storage(int N, int nx, int nu, int nl);
// copy step `from` of `lcs` into every other step (no allocation).
void replicate_step(Lcs& lcs, int from = 0);

class LcsLinearizer {
 public:
  virtual ~LcsLinearizer() = default;
  virtual int nx() const = 0;
  virtual int nu() const = 0;
  virtual int nl() const = 0;
  // step k of `out` linearized about (x, u); no allocation, no throw.
  virtual void linearize(const Eigen::Ref<const Eigen::VectorXd>& x, const Eigen::Ref<const Eigen::VectorXd>& u,
                         Lcs& out, int k) = 0;
};

}  // namespace impulse
