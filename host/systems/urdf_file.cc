// URDF files as systems (system_file.h): read with urdfdom, each link's <inertial> and
// <collision> blocks and each joint turned into the declared links of declared.h.
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <urdf_parser/urdf_parser.h>

#include "host/systems/declared.h"
#include "host/systems/system_file.h"
#include "solvers/error.h"

namespace impulse {
namespace {

Eigen::Vector3d vec(const urdf::Vector3& v) { return Eigen::Vector3d(v.x, v.y, v.z); }

Eigen::Matrix3d rotation(const urdf::Rotation& r) {
  double x, y, z, w;
  r.getQuaternion(x, y, z, w);
  return Eigen::Quaterniond(w, x, y, z).normalized().toRotationMatrix();
}

bool is_identity(const urdf::Rotation& r) {
  double x, y, z, w;
  r.getQuaternion(x, y, z, w);
  return x == 0 && y == 0 && z == 0;
}

// the contact vertices of one <collision> block, in the link frame: a box's 8 corners, a
// sphere's 14 points (the 6 axis points and the 8 cube diagonals, on the sphere), a
// cylinder's two rims of 8 points each (its axis along the block's z), a mesh's convex
// hull's vertices (scaled by the <mesh>'s scale; mesh_file.cc)
std::vector<Eigen::Vector3d> collision_vertices(const urdf::Collision& c, const std::string& who,
                                               const std::string& base_dir) {
  std::vector<Eigen::Vector3d> local;
  if (!c.geometry) throw Error(who + ": a <collision> without a geometry");
  switch (c.geometry->type) {
    case urdf::Geometry::BOX: {
      const auto& b = static_cast<const urdf::Box&>(*c.geometry);
      local = box_vertices(Eigen::Vector3d::Zero(), vec(b.dim));
      break;
    }
    case urdf::Geometry::SPHERE: {
      const double r = static_cast<const urdf::Sphere&>(*c.geometry).radius;
      for (int a = 0; a < 3; ++a)
        for (double s : {-r, r}) {
          Eigen::Vector3d v = Eigen::Vector3d::Zero();
          v[a] = s;
          local.push_back(v);
        }
      const double d = r / std::sqrt(3.0);
      for (int i = 0; i < 8; ++i) local.emplace_back((i & 1) ? d : -d, (i & 2) ? d : -d, (i & 4) ? d : -d);
      break;
    }
    case urdf::Geometry::CYLINDER: {
      const auto& cy = static_cast<const urdf::Cylinder&>(*c.geometry);
      for (double z : {-0.5 * cy.length, 0.5 * cy.length})
        for (int i = 0; i < 8; ++i)
          local.emplace_back(cy.radius * std::cos(i * M_PI / 4), cy.radius * std::sin(i * M_PI / 4), z);
      break;
    }
    case urdf::Geometry::MESH: {
      const auto& m = static_cast<const urdf::Mesh&>(*c.geometry);
      local = mesh_hull_vertices(resolve_mesh_path(m.filename, base_dir, who), vec(m.scale), who);
      break;
    }
    default:
      throw Error(who + ": a <collision> geometry of an unknown kind");
  }
  const Eigen::Matrix3d R = rotation(c.origin.rotation);
  const Eigen::Vector3d p = vec(c.origin.position);
  for (Eigen::Vector3d& v : local) v = R * v + p;
  return local;
}

void declare(const urdf::Link& link, const std::string& where, const std::string& base_dir,
             std::vector<Declared>& out) {
  const std::string who = where + ": link '" + link.name + "'";
  Declared d;
  d.name = link.name;
  if (const urdf::JointSharedPtr& j = link.parent_joint) {
    d.parent = j->parent_link_name;
    const std::string jw = where + ": joint '" + j->name + "' (to link '" + link.name + "')";
    switch (j->type) {
      case urdf::Joint::REVOLUTE: d.joint = "revolute"; break;
      case urdf::Joint::FIXED: d.joint = "fixed"; break;
      case urdf::Joint::CONTINUOUS:
        throw Error(jw + ": joint type 'continuous' is not supported (the dynamics has revolute and fixed joints; "
                         "a revolute joint with wide limits moves the same)");
      case urdf::Joint::PRISMATIC: throw Error(jw + ": joint type 'prismatic' is not supported (revolute and fixed are)");
      case urdf::Joint::PLANAR: throw Error(jw + ": joint type 'planar' is not supported (revolute and fixed are)");
      case urdf::Joint::FLOATING: throw Error(jw + ": joint type 'floating' is not supported (only the base floats)");
      default: throw Error(jw + ": a joint of an unknown type");
    }
    d.origin = vec(j->parent_to_joint_origin_transform.position);
    if (!is_identity(j->parent_to_joint_origin_transform.rotation)) {
      d.rotation = rotation(j->parent_to_joint_origin_transform.rotation);
      d.rotated = true;
    }
    if (d.joint == "revolute") {
      d.axis = vec(j->axis);
      const double n = d.axis.norm();
      if (!(n > 1e-9)) throw Error(jw + ": the axis is zero");
      if (std::abs(n - 1) > 1e-12) d.axis /= n;
    }
  }
  if (!link.inertial) throw Error(who + ": no <inertial> (every link needs its mass and inertia)");
  const urdf::Inertial& in = *link.inertial;
  if (!(in.mass > 0)) {
    std::ostringstream m;
    m << who << ": the <mass> must be positive, got " << in.mass;
    throw Error(m.str());
  }
  d.inertia.mass = in.mass;
  d.inertia.com = vec(in.origin.position);
  Eigen::Matrix3d I;
  I << in.ixx, in.ixy, in.ixz, in.ixy, in.iyy, in.iyz, in.ixz, in.iyz, in.izz;
  const Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> eig(I);
  if (!(eig.eigenvalues().minCoeff() > 0)) {
    std::ostringstream m;
    m << who << ": the <inertia> is not positive definite (eigenvalues " << eig.eigenvalues().transpose() << ")";
    throw Error(m.str());
  }
  if (!is_identity(in.origin.rotation)) {  // the inertia's axes turned into the link's
    const Eigen::Matrix3d R = rotation(in.origin.rotation);
    const Eigen::Matrix3d r = R * I * R.transpose();
    I = 0.5 * (r + r.transpose());
  }
  d.inertia.inertia_com = I;
  for (size_t i = 0; i < link.collision_array.size(); ++i) {
    if (!link.collision_array[i]) continue;
    for (const Eigen::Vector3d& v : collision_vertices(*link.collision_array[i], who + ", <collision> " + std::to_string(i + 1), base_dir))
      d.vertices.push_back(v);
  }
  out.push_back(d);
  for (const urdf::LinkSharedPtr& c : link.child_links)
    if (c) declare(*c, where, base_dir, out);
}

}  // namespace

MultibodySystem system_from_urdf(const std::string& xml, const std::string& where, const std::string& base_dir) {
  const urdf::ModelInterfaceSharedPtr model = urdf::parseURDF(xml);
  if (!model)
    throw Error(where + ": not a URDF urdfdom can read (its reason is printed above: a missing tag, a link with two "
                        "parents, a joint naming a link that is not there, a cycle)");
  const urdf::LinkConstSharedPtr root = model->getRoot();
  if (!root) throw Error(where + ": no root link");
  std::vector<Declared> links;
  declare(*root, where, base_dir, links);
  return build_declared(where, model->getName().empty() ? where : model->getName(), 9.81, 0.3, links);
}

}  // namespace impulse
