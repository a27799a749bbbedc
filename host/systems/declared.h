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

// A mesh file named in a description, as a path: relative to base_dir (the description's
// folder), file:// stripped, package://PACKAGE/PATH found through ROS_PACKAGE_PATH.
// Errors name `who` and the reference.
std::string resolve_mesh_path(const std::string& ref, const std::string& base_dir, const std::string& who);

// The convex hull's vertices of a mesh file (read with assimp: STL, OBJ, COLLADA, PLY, ...;
// every mesh in it, node transforms applied, coordinates as written), each coordinate
// multiplied by scale: the points that are hull vertices, in the file's order (interior and
// face points dropped). Errors name `who` and the file: missing, unreadable, no vertices,
// flat, a non-positive scale.
std::vector<Eigen::Vector3d> mesh_hull_vertices(const std::string& path, const Eigen::Vector3d& scale,
                                                const std::string& who);

// the rotation of fixed X-Y-Z angles (URDF's rpy): Rz(y) Ry(p) Rx(r)
Eigen::Matrix3d rpy_matrix(const Eigen::Vector3d& rpy);

}  // namespace impulse
