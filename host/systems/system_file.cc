#include "host/systems/system_file.h"

#include "host/systems/declared.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "solvers/error.h"

namespace impulse {

Eigen::Matrix3d rpy_matrix(const Eigen::Vector3d& rpy) {
  return (Eigen::AngleAxisd(rpy.z(), Eigen::Vector3d::UnitZ()) * Eigen::AngleAxisd(rpy.y(), Eigen::Vector3d::UnitY()) *
          Eigen::AngleAxisd(rpy.x(), Eigen::Vector3d::UnitX()))
      .toRotationMatrix();
}

namespace {

using json = nlohmann::json;

struct Reader {
  std::string where;
  std::string base_dir;  // relative mesh files are found here
  [[noreturn]] void fail(const std::string& what) const { throw Error(where + ": " + what); }

  void only_keys(const json& j, const std::string& who, std::initializer_list<const char*> keys) const {
    if (!j.is_object()) fail(who + ": expected an object {...}, got " + std::string(j.type_name()));
    const std::set<std::string> allowed(keys.begin(), keys.end());
    for (auto it = j.begin(); it != j.end(); ++it)
      if (!allowed.count(it.key())) {
        std::string list;
        for (const char* k : keys) list += std::string(list.empty() ? "" : ", ") + k;
        fail(who + ": unknown key '" + it.key() + "' (the format's keys here: " + list + ")");
      }
  }
  double number(const json& j, const std::string& who) const {
    if (!j.is_number()) fail(who + ": expected a number, got " + std::string(j.type_name()));
    const double v = j.get<double>();
    if (!std::isfinite(v)) fail(who + ": not a finite number");
    return v;
  }
  Eigen::Vector3d vec3(const json& j, const std::string& who) const {
    if (!j.is_array() || j.size() != 3) fail(who + ": expected 3 numbers [x, y, z]");
    return Eigen::Vector3d(number(j[0], who), number(j[1], who), number(j[2], who));
  }
  std::string text(const json& j, const std::string& who) const {
    if (!j.is_string()) fail(who + ": expected a string, got " + std::string(j.type_name()));
    return j.get<std::string>();
  }
};

Declared read_link(const Reader& r, const json& j, size_t index) {
  Declared d;
  const std::string at = "links[" + std::to_string(index) + "]";
  if (!j.is_object()) r.fail(at + ": expected an object {...}");
  if (!j.contains("name")) r.fail(at + ": no name");
  d.name = r.text(j["name"], at + ".name");
  if (d.name.empty()) r.fail(at + ": the name is empty");
  const std::string who = "link '" + d.name + "'";
  r.only_keys(j, who, {"name", "parent", "joint", "mass", "com", "inertia", "vertices", "box", "mesh", "size"});
  if (j.contains("parent")) {
    d.parent = r.text(j["parent"], who + ".parent");
    if (!j.contains("joint")) r.fail(who + ": a link with a parent needs a joint {type, origin, axis}");
    const json& jt = j["joint"];
    r.only_keys(jt, who + ".joint", {"type", "origin", "rpy", "axis"});
    if (!jt.contains("type")) r.fail(who + ".joint: no type (revolute or fixed)");
    d.joint = r.text(jt["type"], who + ".joint.type");
    if (d.joint == "prismatic" || d.joint == "continuous" || d.joint == "planar" || d.joint == "floating")
      r.fail(who + ": joint type '" + d.joint + "' is not supported (the dynamics has revolute and fixed joints)");
    if (d.joint != "revolute" && d.joint != "fixed") r.fail(who + ": unknown joint type '" + d.joint + "' (revolute or fixed)");
    if (jt.contains("origin")) d.origin = r.vec3(jt["origin"], who + ".joint.origin");
    if (jt.contains("rpy")) {
      const Eigen::Vector3d rpy = r.vec3(jt["rpy"], who + ".joint.rpy");
      if (!rpy.isZero(0)) d.rotation = rpy_matrix(rpy), d.rotated = true;
    }
    if (d.joint == "revolute") {
      if (!jt.contains("axis")) r.fail(who + ".joint: a revolute joint needs an axis");
      d.axis = r.vec3(jt["axis"], who + ".joint.axis");
      const double n = d.axis.norm();
      if (!(n > 1e-9)) r.fail(who + ".joint.axis: the axis is zero");
      if (std::abs(n - 1) > 1e-12) d.axis /= n;
    } else if (jt.contains("axis")) {
      r.fail(who + ".joint: a fixed joint has no axis");
    }
  } else if (j.contains("joint")) {
    r.fail(who + ": the base (no parent) has no joint");
  }
  if (!j.contains("mass")) r.fail(who + ": no mass (every link needs mass and inertia)");
  d.inertia.mass = r.number(j["mass"], who + ".mass");
  if (!(d.inertia.mass > 0)) r.fail(who + ": the mass must be positive, got " + std::to_string(d.inertia.mass));
  if (j.contains("com")) d.inertia.com = r.vec3(j["com"], who + ".com");
  if (!j.contains("inertia")) r.fail(who + ": no inertia [ixx, iyy, izz, ixy, ixz, iyz] (about the COM, kg m²)");
  {
    const json& ji = j["inertia"];
    if (!ji.is_array() || ji.size() != 6) r.fail(who + ".inertia: expected 6 numbers [ixx, iyy, izz, ixy, ixz, iyz]");
    double I[6];
    for (int i = 0; i < 6; ++i) I[i] = r.number(ji[size_t(i)], who + ".inertia");
    d.inertia.inertia_com = inertia_from_vector(I);
    const Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> eig(d.inertia.inertia_com);
    if (!(eig.eigenvalues().minCoeff() > 0)) {
      std::ostringstream m;
      m << who << ": the inertia is not positive definite (eigenvalues " << eig.eigenvalues().transpose() << ")";
      r.fail(m.str());
    }
  }
  if (j.contains("vertices")) {
    const json& jv = j["vertices"];
    if (!jv.is_array()) r.fail(who + ".vertices: expected a list of [x, y, z]");
    for (size_t i = 0; i < jv.size(); ++i) d.vertices.push_back(r.vec3(jv[i], who + ".vertices[" + std::to_string(i) + "]"));
  }
  if (j.contains("box")) {
    const json& jb = j["box"];
    r.only_keys(jb, who + ".box", {"size", "centre"});
    if (!jb.contains("size")) r.fail(who + ".box: no size [sx, sy, sz]");
    const Eigen::Vector3d size = r.vec3(jb["size"], who + ".box.size");
    if (!(size.minCoeff() > 0)) r.fail(who + ".box.size: every side must be positive");
    const Eigen::Vector3d centre = jb.contains("centre") ? r.vec3(jb["centre"], who + ".box.centre") : Eigen::Vector3d::Zero();
    for (const Eigen::Vector3d& v : box_vertices(centre, size)) d.vertices.push_back(v);
    d.size = size;
  }
  if (j.contains("mesh")) {
    const json& jm = j["mesh"];
    r.only_keys(jm, who + ".mesh", {"file", "scale", "origin", "rpy"});
    if (!jm.contains("file")) r.fail(who + ".mesh: no file (a mesh file's path, relative to this description)");
    Eigen::Vector3d scale = Eigen::Vector3d::Ones();
    if (jm.contains("scale"))
      scale = jm["scale"].is_number() ? Eigen::Vector3d::Constant(r.number(jm["scale"], who + ".mesh.scale"))
                                      : r.vec3(jm["scale"], who + ".mesh.scale");
    const Eigen::Vector3d origin = jm.contains("origin") ? r.vec3(jm["origin"], who + ".mesh.origin") : Eigen::Vector3d::Zero();
    const Eigen::Matrix3d R = jm.contains("rpy") ? rpy_matrix(r.vec3(jm["rpy"], who + ".mesh.rpy")) : Eigen::Matrix3d::Identity();
    const std::string mw = r.where + ": " + who + ".mesh";
    const std::string path = resolve_mesh_path(r.text(jm["file"], who + ".mesh.file"), r.base_dir, mw);
    for (const Eigen::Vector3d& v : mesh_hull_vertices(path, scale, mw)) d.vertices.push_back(R * v + origin);
  }
  if (j.contains("size")) {
    d.size = r.vec3(j["size"], who + ".size");
    if (!(d.size.minCoeff() > 0)) r.fail(who + ".size: every side must be positive");
  }
  return d;
}

// C I Cᵀ, exactly symmetric (the rounding of the product is not)
Eigen::Matrix3d rotated_inertia(const Eigen::Matrix3d& C, const Eigen::Matrix3d& I) {
  const Eigen::Matrix3d r = C * I * C.transpose();
  return 0.5 * (r + r.transpose());
}

// link b's inertia added into a's (both about their COM in one frame)
LinkInertia combined(const LinkInertia& a, const LinkInertia& b) {
  LinkInertia c;
  c.mass = a.mass + b.mass;
  c.com = (a.mass * a.com + b.mass * b.com) / c.mass;
  c.inertia_com = Eigen::Matrix3d::Zero();
  for (const LinkInertia* l : {&a, &b}) {
    const Eigen::Vector3d d = l->com - c.com;
    c.inertia_com += l->inertia_com + l->mass * (d.squaredNorm() * Eigen::Matrix3d::Identity() - d * d.transpose());
  }
  return c;
}

}  // namespace

MultibodySystem build_declared(const std::string& where, const std::string& name, double gravity, double mu,
                               const std::vector<Declared>& links) {
  const Reader r{where, ""};
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < links.size(); ++i)
    if (!index.emplace(links[i].name, i).second) r.fail("two links are named '" + links[i].name + "'");
  std::vector<std::vector<size_t>> children(links.size());
  int root = -1;
  for (size_t i = 0; i < links.size(); ++i) {
    const Declared& d = links[i];
    if (d.parent.empty()) {
      if (root >= 0) r.fail("links '" + links[size_t(root)].name + "' and '" + d.name + "' both have no parent: one base only");
      root = int(i);
      continue;
    }
    const auto p = index.find(d.parent);
    if (p == index.end()) r.fail("link '" + d.name + "': its parent '" + d.parent + "' is not a link of the file");
    if (p->second == i) r.fail("link '" + d.name + "' is its own parent");
    children[p->second].push_back(i);
  }
  for (size_t i = 0; i < links.size(); ++i) {  // a cycle: following the parents never reaches the base
    std::vector<size_t> path{i};
    std::set<size_t> seen{i};
    for (size_t k = i; !links[k].parent.empty();) {
      k = index.at(links[k].parent);
      path.push_back(k);
      if (!seen.insert(k).second) {
        std::string chain;
        for (size_t s : path) chain += (chain.empty() ? "'" : " -> '") + links[s].name + "'";
        r.fail("the links form a cycle: " + chain + " (each link's parent, in turn)");
      }
    }
  }
  if (root < 0) r.fail("no base: every link has a parent");

  MultibodySystem sys;
  sys.name = name;
  sys.gravity = gravity;
  sys.mu = mu;
  // depth first from the base, children in file order; C maps a link's file frame to its
  // model link's frame (rotation C, offset t), model[i] the model link it belongs to
  std::vector<Eigen::Matrix3d> C(links.size(), Eigen::Matrix3d::Identity());
  std::vector<Eigen::Vector3d> t(links.size(), Eigen::Vector3d::Zero());
  std::vector<bool> rotated(links.size(), false), has_geometry;
  std::vector<int> model(links.size(), -1);
  std::function<void(size_t)> visit = [&](size_t i) {
    const Declared& d = links[i];
    const bool rot = d.rotated;
    if (d.parent.empty() || d.joint == "revolute") {
      LinkSpec s;
      s.name = d.name;
      const size_t p = d.parent.empty() ? 0 : index.at(d.parent);
      if (!d.parent.empty()) {
        s.parent = model[p];
        // the model's child frame is aligned with its parent's at θ = 0; the file's child
        // frame is rotated from it by C (parent's rotation into its model link, then rpy)
        const Eigen::Matrix3d Cp = C[p];
        s.joint_origin = rotated[p] ? Eigen::Vector3d(Cp * d.origin + t[p]) : Eigen::Vector3d(d.origin + t[p]);
        rotated[i] = rotated[p] || rot;
        C[i] = rot ? Eigen::Matrix3d(Cp * d.rotation) : Cp;
        s.axis = rotated[i] ? Eigen::Vector3d((C[i] * d.axis).normalized()) : d.axis;
      }
      LinkInertia in = d.inertia;
      if (rotated[i]) {
        in.com = C[i] * in.com;
        in.inertia_com = rotated_inertia(C[i], in.inertia_com);
      }
      s.inertia = in;
      for (const Eigen::Vector3d& v : d.vertices) s.vertices.push_back(rotated[i] ? Eigen::Vector3d(C[i] * v) : v);
      s.size = d.size;
      model[i] = sys.num_links();
      sys.links.push_back(s);
      has_geometry.push_back(!d.vertices.empty());
    } else {  // fixed: merged into the parent's model link
      const size_t p = index.at(d.parent);
      const int into = model[p];
      model[i] = into;
      rotated[i] = rotated[p] || rot;
      C[i] = rot ? Eigen::Matrix3d(C[p] * d.rotation) : C[p];
      t[i] = rotated[p] ? Eigen::Vector3d(C[p] * d.origin + t[p]) : Eigen::Vector3d(d.origin + t[p]);
      LinkSpec& s = sys.links[size_t(into)];
      LinkInertia in = d.inertia;
      in.com = (rotated[i] ? Eigen::Vector3d(C[i] * in.com) : in.com) + t[i];
      if (rotated[i]) in.inertia_com = rotated_inertia(C[i], in.inertia_com);
      s.inertia = combined(s.inertia, in);
      for (const Eigen::Vector3d& v : d.vertices) s.vertices.push_back((rotated[i] ? Eigen::Vector3d(C[i] * v) : v) + t[i]);
      if (!d.vertices.empty()) has_geometry[size_t(into)] = true;
    }
    for (size_t c : children[i]) visit(c);
  };
  visit(size_t(root));
  for (int l = 0; l < sys.num_links(); ++l) {
    LinkSpec& s = sys.links[size_t(l)];
    if (!has_geometry[size_t(l)])
      r.fail("link '" + s.name + "' has no contact geometry (vertices or box; a fixed child's counts)");
    if (s.size.isZero(0)) {  // the vertices' extent
      Eigen::Vector3d lo = s.vertices[0], hi = s.vertices[0];
      for (const Eigen::Vector3d& v : s.vertices) lo = lo.cwiseMin(v), hi = hi.cwiseMax(v);
      s.size = (hi - lo).cwiseMax(Eigen::Vector3d::Constant(1e-3));
    }
  }
  try {
    sys.validate();
  } catch (const Error& e) {
    r.fail(e.what());
  }
  return sys;
}

namespace {

void write_vec(std::ostream& o, const Eigen::Vector3d& v) { o << '[' << v.x() << ", " << v.y() << ", " << v.z() << ']'; }

}  // namespace

namespace {
bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
}  // namespace

bool is_system_file(const std::string& s) { return ends_with(s, ".json") || ends_with(s, ".urdf"); }

namespace {

// "state": the layout of the system's data files (io/system_tosses.h's StateLayout)
StateLayout read_layout(const Reader& r, const json& j, const MultibodySystem& sys, const std::vector<Declared>& declared) {
  r.only_keys(j, "state", {"rotation", "angular_velocity", "joints"});
  StateLayout L;
  if (j.contains("rotation")) {
    const std::string v = r.text(j["rotation"], "state.rotation");
    if (v == "quaternion_wxyz") L.rotation = StateLayout::Rotation::kQuaternionWxyz;
    else if (v == "quaternion_xyzw") L.rotation = StateLayout::Rotation::kQuaternionXyzw;
    else if (v == "matrix") L.rotation = StateLayout::Rotation::kMatrix;
    else r.fail("state.rotation: expected quaternion_wxyz, quaternion_xyzw or matrix, got '" + v + "'");
  }
  if (j.contains("angular_velocity")) {
    const std::string v = r.text(j["angular_velocity"], "state.angular_velocity");
    if (v != "body" && v != "world") r.fail("state.angular_velocity: expected body or world, got '" + v + "'");
    L.world_angular_velocity = v == "world";
  }
  if (j.contains("joints")) {
    const json& jj = j["joints"];
    if (!jj.is_array()) r.fail("state.joints: expected a list of link names (each names its revolute joint)");
    if (static_cast<int>(jj.size()) != sys.joints())
      r.fail("state.joints: lists " + std::to_string(jj.size()) + " joint(s), the system has " +
             std::to_string(sys.joints()) + " revolute joint(s)");
    std::vector<char> seen(static_cast<size_t>(sys.joints()), 0);
    for (size_t i = 0; i < jj.size(); ++i) {
      const std::string n = r.text(jj[i], "state.joints[" + std::to_string(i) + "]");
      int found = -1;
      for (int l = 1; l < sys.num_links(); ++l)
        if (sys.links[size_t(l)].name == n) found = l - 1;
      if (found < 0) {
        for (const Declared& d : declared)
          if (d.name == n && d.joint == "fixed")
            r.fail("state.joints[" + std::to_string(i) + "]: link '" + n +
                   "' hangs on a fixed joint (merged into its parent): it has no joint angle");
        r.fail("state.joints[" + std::to_string(i) + "]: no link '" + n + "' with a revolute joint");
      }
      if (seen[size_t(found)]) r.fail("state.joints[" + std::to_string(i) + "]: link '" + n + "' is listed twice");
      seen[size_t(found)] = 1;
      L.joints.push_back(found);
    }
  }
  return L;
}

}  // namespace

MultibodySystem system_from_json(const std::string& text, const std::string& where, const std::string& base_dir) {
  const Reader r{where, base_dir};
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    r.fail(std::string("not valid JSON (") + e.what() + ")");
  }
  r.only_keys(j, "the system", {"format", "name", "gravity", "friction", "links", "state"});
  if (!j.contains("format") || !j["format"].is_string() || j["format"].get<std::string>() != "impulse-system-1")
    r.fail("expected \"format\": \"impulse-system-1\" (an impulse system description)");
  const std::string name = j.contains("name") ? r.text(j["name"], "name") : where;
  const double gravity = j.contains("gravity") ? r.number(j["gravity"], "gravity") : 9.81;
  const double mu = j.contains("friction") ? r.number(j["friction"], "friction") : 0.3;
  if (mu < 0) r.fail("friction must be >= 0");
  if (!j.contains("links") || !j["links"].is_array() || j["links"].empty()) r.fail("no links (\"links\": [ ... ])");
  std::vector<Declared> links;
  for (size_t i = 0; i < j["links"].size(); ++i) links.push_back(read_link(r, j["links"][i], i));
  MultibodySystem sys = build_declared(where, name, gravity, mu, links);
  if (j.contains("state")) sys.layout = read_layout(r, j["state"], sys, links);
  return sys;
}

MultibodySystem load_system(const std::string& s) {
  if (!is_system_file(s)) return system_by_name(s);
  std::ifstream in(s, std::ios::binary);
  if (!in) throw Error(s + ": cannot open the system file");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string dir = std::filesystem::path(s).parent_path().string();
  return ends_with(s, ".urdf") ? system_from_urdf(text.str(), s, dir) : system_from_json(text.str(), s, dir);
}

std::string system_json(const MultibodySystem& sys) {
  std::ostringstream o;
  o << std::setprecision(17);
  o << "{\n  \"format\": \"impulse-system-1\",\n  \"name\": " << json(sys.name).dump() << ",\n  \"gravity\": " << sys.gravity
    << ",\n  \"friction\": " << sys.mu << ",\n  \"links\": [";
  for (int l = 0; l < sys.num_links(); ++l) {
    const LinkSpec& s = sys.links[size_t(l)];
    o << (l ? ",\n" : "\n") << "    {\n      \"name\": " << json(s.name).dump() << ",\n";
    if (s.parent >= 0) {
      o << "      \"parent\": " << json(sys.links[size_t(s.parent)].name).dump() << ",\n";
      o << "      \"joint\": {\"type\": \"revolute\", \"origin\": ";
      write_vec(o, s.joint_origin);
      o << ", \"axis\": ";
      write_vec(o, s.axis);
      o << "},\n";
    }
    const Eigen::Matrix3d& I = s.inertia.inertia_com;
    o << "      \"mass\": " << s.inertia.mass << ",\n      \"com\": ";
    write_vec(o, s.inertia.com);
    o << ",\n      \"inertia\": [" << I(0, 0) << ", " << I(1, 1) << ", " << I(2, 2) << ", " << I(0, 1) << ", " << I(0, 2) << ", "
      << I(1, 2) << "],\n      \"size\": ";
    write_vec(o, s.size);
    o << ",\n      \"vertices\": [";
    for (size_t i = 0; i < s.vertices.size(); ++i) {
      o << (i ? ",\n        " : "\n        ");
      write_vec(o, s.vertices[i]);
    }
    o << "\n      ]\n    }";
  }
  o << "\n  ]";
  const StateLayout& L = sys.layout;
  if (!L.is_model()) {
    o << ",\n  \"state\": {\"rotation\": \"" << L.rotation_name() << "\", \"angular_velocity\": \""
      << (L.world_angular_velocity ? "world" : "body") << "\"";
    if (!L.joints.empty()) {
      o << ", \"joints\": [";
      for (size_t j = 0; j < L.joints.size(); ++j)
        o << (j ? ", " : "") << json(sys.links[size_t(L.joints[j] + 1)].name).dump();
      o << "]";
    }
    o << "}";
  }
  o << "\n}\n";
  return o.str();
}

}  // namespace impulse
