// The systems room's own: one link as a file declares it (JSON or URDF), and the system
// built from such links (the tree ordered from the base, fixed joints merged into their
// parent, joint frames' rotations folded into the child; system_file.h describes it).
#pragma once

#include <string>
#include <vector>

#include "host/dynamics/multibody.h"

namespace impulse {

// one link as the file declares it, before the tree is ordered and fixed joints merged
struct Declared {
  std::string name, parent, joint = "none";
  Eigen::Vector3d origin = Eigen::Vector3d::Zero(), axis = Eigen::Vector3d::UnitY();
  Eigen::Matrix3d rotation = Eigen::Matrix3d::Identity();  // the child frame from the parent's at θ = 0
  bool rotated = false;                                     // rotation is not the identity
  LinkInertia inertia;
  std::vector<Eigen::Vector3d> vertices;
  Eigen::Vector3d size = Eigen::Vector3d::Zero();
};

// The system of the declared links; errors name `where` (the file) and the link.
MultibodySystem build_declared(const std::string& where, const std::string& name, double gravity, double mu,
                               const std::vector<Declared>& links);

// the rotation of fixed X-Y-Z angles (URDF's rpy): Rz(y) Ry(p) Rx(r)
Eigen::Matrix3d rpy_matrix(const Eigen::Vector3d& rpy);

}  // namespace impulse
