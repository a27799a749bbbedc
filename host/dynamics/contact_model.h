// What a contact model tells the simulator, the losses and the rollouts about a
// configuration: k contacts, their signed distances φ_n, and the normal and
// (friction-lumped) tangential Jacobians in ν = [v world; ω body] coordinates.
// Friction is folded into J_t (μ = 1 in the cone ‖λ_t,i‖ ≤ λ_n,i), as in
// ContactNets: J_t,i = μ_i · (unit tangent directions' Jacobian).
#pragma once

#include <Eigen/Dense>

#include "host/dynamics/rigid_body.h"

namespace impulse {

struct ContactFrame {
  Eigen::VectorXd phi;  // k
  Eigen::MatrixXd Jn;   // k x 6
  Eigen::MatrixXd Jt;   // 2k x 6, rows 2i, 2i+1 belong to contact i
  // the other body's share of each contact's velocities, added to J_n ν (k) and J_t ν
  // (2k): zero for a static environment; for a moving kinematic obstacle, −n·v_obstacle
  // and −μ t·v_obstacle (the rates are of the gap and of the relative tangential slip;
  // φ is then the gap to the obstacle where it is at the step's start)
  Eigen::VectorXd vn, vt;
  int contacts() const { return static_cast<int>(phi.size()); }
  // vn and vt sized for the contacts: a moving obstacle (a model that leaves
  // them unsized describes a static environment)
  bool moving() const { return vn.size() == contacts() && vt.size() == 2 * contacts(); }
  // k contacts in n velocity coordinates, zeroed (allocates only when the sizes change)
  void resize(int k, int n) {
    phi.setZero(k);
    Jn.setZero(k, n);
    Jt.setZero(2 * k, n);
    vn.setZero(k);
    vt.setZero(2 * k);
  }
};

class ContactModel {
 public:
  virtual ~ContactModel() = default;
  virtual int contacts() const = 0;
  // fills `out` (resized as needed) for the configuration part of x.
  virtual void evaluate(const State& x, ContactFrame& out) const = 0;
};

}  // namespace impulse
