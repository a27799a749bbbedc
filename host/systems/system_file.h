// Systems as files (issue 47): a multibody system (host/dynamics/multibody.h) described in
// impulse's own JSON format, so a lab can learn its own object without changing code.
//
// The format ("format": "impulse-system-1"; every key below, nothing else):
//
//   { "format": "impulse-system-1", "name": "elbow",
//     "gravity": 9.81,            (optional, m/s², along -z world)
//     "friction": 0.3,            (optional, the nominal coefficient)
//     "links": [ LINK, ... ],
//     "state": { "rotation": "quaternion_wxyz" | "quaternion_xyzw" | "matrix",
//                "angular_velocity": "body" | "world",
//                "joints": ["tip", "middle"] }  (optional: the data files' layout,
//                io/system_tosses.h's StateLayout; joints named by the link each moves) }
//
//   LINK: { "name": "elbow_2",
//           "parent": "elbow_1",  (absent for the base: exactly one link has none)
//           "joint": { "type": "revolute" | "fixed", "origin": [x, y, z] (parent frame, m),
//                      "rpy": [r, p, y] (optional: the child frame's rotation from the
//                              parent's at θ = 0, fixed X-Y-Z angles as URDF's),
//                      "axis": [x, y, z] (revolute: in the child frame, normalized here) },
//           "mass": 0.37 (kg), "com": [x, y, z] (optional, link frame, m),
//           "inertia": [ixx, iyy, izz, ixy, ixz, iyz] (kg m², about the COM, link axes),
//           "vertices": [[x, y, z], ...]  and/or  "box": { "size": [sx, sy, sz],
//                                                        "centre": [x, y, z] (optional) }
//           and/or "mesh": { "file": "hull.stl" (relative to the description's folder;
//                                     any format assimp reads: STL, OBJ, COLLADA, PLY, ...),
//                            "scale": s or [sx, sy, sz], "origin": [x, y, z],
//                            "rpy": [r, p, y] (each optional: the mesh frame in the link's) }
//                   (the convex hull's vertices of the mesh's vertices become contacts),
//           "size": [sx, sy, sz] (optional: the nominal box size a random initial
//                   guess draws around; default the box's, else the vertices' extent) }
//
// Links are listed in any order; the tree is found from the parents. A fixed joint merges
// the child into its parent (mass, COM and inertia by the parallel-axis theorem, vertices
// and any children carried over). A joint's rpy is folded into the model's convention (a
// child frame aligned with its parent's at θ = 0): the child's geometry, inertia and axis
// are rotated into that frame, so the motion is the file's. The base floats (the state is
// the quaternion w, x, y, z, the position, the joint angles, then the velocities:
// multibody.h).
//
// Every error names the file, the link and what is wrong: a missing mass or inertia, an
// inertia that is not positive definite or breaks the triangle inequalities, a joint type
// the dynamics does not support (prismatic, continuous, planar, floating: only revolute and
// fixed), a link with no contact geometry, an unknown parent, a repeated name, a cycle, a
// key that is not in the format (a typo), a value of the wrong kind.
#pragma once

#include <string>

#include "host/dynamics/multibody.h"

namespace impulse {

// A system by name (cube | asymmetric | elbow, host/dynamics/multibody.h) or from a file
// (a path ending in .json or .urdf). Throws Error naming the file and the item.
MultibodySystem load_system(const std::string& name_or_path);

// The JSON text of a system (links in order, numbers to 17 significant digits, so that
// reading it back gives the same doubles); data/systems/*.json are the built-ins written so.
std::string system_json(const MultibodySystem& system);

// The description from a JSON text; `where` names it in errors (a file's path); relative
// mesh files are found in base_dir (the file's folder; "" the working directory).
MultibodySystem system_from_json(const std::string& text, const std::string& where, const std::string& base_dir = "");

// A URDF (read with urdfdom): each link's <inertial> (its origin's rotation turns the
// inertia into the link's axes) and its <collision> blocks as contact vertices (a box's 8
// corners; a sphere's 14 points: the 6 axis points and the 8 cube diagonals; a cylinder's
// two rims of 8 points; a <mesh>'s convex hull's vertices, its file relative to base_dir,
// file:// or package://PACKAGE/... found through ROS_PACKAGE_PATH),
// revolute and fixed joints as above (the joint origin's rpy folded in). <limit> is not
// used (the dynamics has no joint range). Gravity 9.81, friction 0.3 (URDF states
// neither). The same errors, named by link and joint.
MultibodySystem system_from_urdf(const std::string& xml, const std::string& where, const std::string& base_dir = "");

// Whether a --system value names a file rather than a built-in system.
bool is_system_file(const std::string& name_or_path);

}  // namespace impulse
