// Mesh collisions (declared.h): a mesh file read with assimp (Debian's libassimp-dev: STL,
// OBJ, COLLADA, PLY and the rest of its formats), its vertices scaled, their convex hull's
// vertices (host/dynamics/hull.h, qhull) as the link's contact vertices.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <assimp/Importer.hpp>
#include <assimp/config.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include "host/dynamics/hull.h"
#include "host/systems/declared.h"
#include "solvers/error.h"

namespace impulse {

namespace fs = std::filesystem;

std::string resolve_mesh_path(const std::string& ref, const std::string& base_dir, const std::string& who) {
  if (ref.empty()) throw Error(who + ": the mesh has no file name");
  const std::string file_scheme = "file://", package_scheme = "package://";
  if (ref.rfind(package_scheme, 0) == 0) {
    const std::string rest = ref.substr(package_scheme.size());
    const size_t slash = rest.find('/');
    if (slash == std::string::npos || slash == 0)
      throw Error(who + ": mesh '" + ref + "': expected package://PACKAGE/PATH");
    const std::string package = rest.substr(0, slash), inside = rest.substr(slash + 1);
    const char* env = std::getenv("ROS_PACKAGE_PATH");
    std::string searched;
    if (env) {
      std::stringstream dirs(env);
      std::string dir;
      while (std::getline(dirs, dir, ':')) {
        if (dir.empty()) continue;
        searched += (searched.empty() ? "" : ", ") + dir;
        std::error_code ec;
        const fs::path base = fs::path(dir).lexically_normal();
        const fs::path p = base / package / inside;
        if (fs::exists(p, ec)) return p.string();
        // a path entry that is the package itself ("a/b/pkg" or "a/b/pkg/")
        const fs::path name = base.has_filename() ? base.filename() : base.parent_path().filename();
        const fs::path q = base / inside;
        if (name == package && fs::exists(q, ec)) return q.string();
      }
    }
    throw Error(who + ": mesh '" + ref + "': package '" + package + "' not found (" +
                (env ? "looked in ROS_PACKAGE_PATH: " + searched : std::string("ROS_PACKAGE_PATH is not set")) +
                "); set ROS_PACKAGE_PATH to the folder that holds the package, or write the path relative to the "
                "description file");
  }
  fs::path p = ref.rfind(file_scheme, 0) == 0 ? fs::path(ref.substr(file_scheme.size())) : fs::path(ref);
  if (p.is_relative() && !base_dir.empty()) p = fs::path(base_dir) / p;
  return p.string();
}

std::vector<Eigen::Vector3d> mesh_hull_vertices(const std::string& path, const Eigen::Vector3d& scale,
                                                const std::string& who) {
  const std::string what = who + ": mesh '" + path + "'";
  for (int a = 0; a < 3; ++a)
    if (!(std::isfinite(scale[a]) && scale[a] > 0)) {
      std::ostringstream m;
      m << what << ": every scale factor must be positive and finite, got " << scale.transpose();
      throw Error(m.str());
    }
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw Error(what + ": no such file");
  Assimp::Importer importer;
  // the coordinates as written (COLLADA's up axis is not turned into assimp's y-up)
  importer.SetPropertyBool(AI_CONFIG_IMPORT_COLLADA_IGNORE_UP_DIRECTION, true);
  // node transforms applied to the vertices; no triangulation or normals needed
  const aiScene* scene = importer.ReadFile(path, aiProcess_PreTransformVertices | aiProcess_JoinIdenticalVertices);
  if (!scene) throw Error(what + ": not a mesh assimp can read (" + importer.GetErrorString() + ")");
  std::vector<Eigen::Vector3d> points;
  for (unsigned i = 0; i < scene->mNumMeshes; ++i) {
    const aiMesh* mesh = scene->mMeshes[i];
    for (unsigned v = 0; v < mesh->mNumVertices; ++v) {
      const aiVector3D& p = mesh->mVertices[v];
      const Eigen::Vector3d x(scale[0] * p.x, scale[1] * p.y, scale[2] * p.z);
      if (!x.allFinite())
        throw Error(what + ": mesh " + std::to_string(i) + ", vertex " + std::to_string(v) + " is not finite");
      points.push_back(x);
    }
  }
  if (points.empty()) throw Error(what + ": the mesh has no vertices");
  std::vector<int> hull;
  try {
    hull = convex_hull_vertex_indices(points);
  } catch (const Error& e) {
    throw Error(what + ": its convex hull: " + e.what());
  }
  if (hull.empty())
    throw Error(what + ": the mesh is flat (its " + std::to_string(points.size()) +
                " vertices lie in a plane, on a line or at a point): no solid to touch the ground with");
  std::vector<Eigen::Vector3d> out;
  out.reserve(hull.size());
  for (int i : hull) out.push_back(points[static_cast<size_t>(i)]);
  return out;
}

}  // namespace impulse
