// Convex hull volumes and intersections through qhull's reentrant C API.
//
// Each hull is one qh_new_qhull("qhull Qt") call: qhull merges coplanar facets
// (its default C-0 pre-merge) and 'Qt' triangulates the merged facets, so every
// facet is a triangle carrying its merged facet's outward unit normal n and
// offset d (n·x + d > 0 outside). From that we keep
//   - the volume: Σ |det(v0 − c, v1 − c, v2 − c)| / 6 over the triangles, c the
//     mean of the hull's vertices (inside, so every term has the same sign);
//   - the facet planes (duplicated per triangle of a merged facet; harmless);
//   - the edges of the triangles. These include the diagonals qhull adds inside
//     a merged facet; such a diagonal lies on the hull's surface, so its
//     crossings with the other hull are points of the intersection too.
//
// Intersection (why this and not qhull's halfspace intersection 'H'): 'H' needs
// a point strictly inside both hulls, i.e. a small LP, and then still a special
// case for disjoint, touching and flat intersections. The vertex enumeration
// below needs only the two hulls and one more hull call, and is exact up to the
// "inside" tolerance: every vertex v of A ∩ B lies on a face F_A of A and a face
// F_B of B (the smallest containing it). If either face is a vertex, v is a
// vertex of one hull inside the other. If F_A is an edge (or symmetrically F_B),
// v ends the segment F_A ∩ B where a facet plane of B cuts the edge
// transversally, so it is an edge–plane crossing inside B. Two 2-faces (or a
// 3-face) cannot meet in a vertex with v in both relative interiors. So A ∩ B
// = hull(candidates), and extra candidates on the boundary do not change it.
//
// Tolerance: a point is inside a hull when n·x + d ≤ 1e-10 · D for every facet
// plane, D the diagonal of the two sets' joint bounding box (coordinates are
// first shifted to that box's centre). Candidates closer than that are merged.
// Points up to 1e-10 · D outside can enter, so the intersection volume can be
// off by about 1e-10 · D · its surface area: negligible for the metric.
// Flat sets count as volume 0: a set within 1e-12 × its bounding-box diagonal
// of a plane (found before qhull is called, see flat()), or one qhull reports
// as singular. That covers touching hulls and empty intersections.
#include "host/dynamics/hull.h"

#include <libqhull_r/libqhull_r.h>

#include <Eigen/Geometry>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "solvers/error.h"

namespace impulse {
namespace {

constexpr double kInsideRel = 1e-10;  // "inside" slack, relative to the bounding-box diagonal
constexpr double kFlatRel = 1e-12;    // a set this thin (relative to its box's diagonal) is flat

using Points = std::vector<Eigen::Vector3d>;

struct Plane {
  Eigen::Vector3d n;  // outward, unit
  double d;           // n·x + d > 0 outside
};

struct Hull {
  bool solid = false;  // false: fewer than 4 points, or flat
  double volume = 0.0;
  Points vertices;
  std::vector<int> ids;  // each vertex's index in the input
  std::vector<std::pair<int, int>> edges;  // into vertices, each once
  std::vector<Plane> planes;
};

void check_finite(const Points& pts, const char* fn, const char* set) {
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const Eigen::Vector3d& p = pts[i];
    if (std::isfinite(p.x()) && std::isfinite(p.y()) && std::isfinite(p.z())) continue;
    std::ostringstream msg;
    msg << fn << ": point " << i << " of " << set << " is not finite (" << p.x() << ", " << p.y()
        << ", " << p.z() << ")";
    throw Error(msg.str());
  }
}

struct Box {
  Eigen::Vector3d lo = Eigen::Vector3d::Constant(std::numeric_limits<double>::infinity());
  Eigen::Vector3d hi = Eigen::Vector3d::Constant(-std::numeric_limits<double>::infinity());
  void add(const Points& pts) {
    for (const auto& p : pts) {
      lo = lo.cwiseMin(p);
      hi = hi.cwiseMax(p);
    }
  }
  bool empty() const { return !(lo.x() <= hi.x()); }
  Eigen::Vector3d centre() const { return empty() ? Eigen::Vector3d::Zero() : Eigen::Vector3d(0.5 * (lo + hi)); }
  double diagonal() const { return empty() ? 0.0 : (hi - lo).norm(); }
};

// One qhull session: its memory and its error stream (captured, so a failure
// can be reported in the Error and nothing is printed) are released on every path.
class QhullRun {
 public:
  QhullRun() : err_(open_memstream(&buf_, &len_)) {
    QHULL_LIB_CHECK
    qh_zero(&qh_, err_);
  }
  ~QhullRun() {
    int curlong = 0, totlong = 0;
    qh_freeqhull(&qh_, !qh_ALL);
    qh_memfreeshort(&qh_, &curlong, &totlong);
    if (err_) std::fclose(err_);
    std::free(buf_);
  }
  QhullRun(const QhullRun&) = delete;
  QhullRun& operator=(const QhullRun&) = delete;

  int run(std::vector<double>& coords) {
    char cmd[] = "qhull Qt";
    return qh_new_qhull(&qh_, 3, static_cast<int>(coords.size() / 3), coords.data(), False, cmd,
                        nullptr, err_);
  }
  std::string message() {
    if (!err_) return "";
    std::fflush(err_);
    std::string s = buf_ ? std::string(buf_, len_) : std::string();
    const std::size_t cut = s.find('\n');  // qhull's first line names the error (QHnnnn ...)
    return cut == std::string::npos ? s : s.substr(0, cut);
  }
  qhT* qh() { return &qh_; }

 private:
  char* buf_ = nullptr;
  std::size_t len_ = 0;
  FILE* err_ = nullptr;
  qhT qh_;
};

// Whether pts lie within tol of a plane (or line, or point), found greedily: p1
// farthest from p0, p2 farthest from the line p0 p1, p3 farthest from the plane
// p0 p1 p2. qhull does not report every such set as singular input (an
// axis-flat set is an input error QH6013, six equal points an internal error
// QH6421), so flat sets never reach it.
bool flat(const Points& pts, double tol) {
  if (pts.size() < 4) return true;
  const Eigen::Vector3d& p0 = pts[0];
  auto farthest = [&](const auto& dist) {
    std::size_t best = 0;
    double dmax = -1.0;
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const double d = dist(pts[i] - p0);
      if (d > dmax) dmax = d, best = i;
    }
    return std::make_pair(best, dmax);
  };
  const auto [i1, d1] = farthest([](const Eigen::Vector3d& v) { return v.norm(); });
  if (d1 <= tol) return true;
  const Eigen::Vector3d u = (pts[i1] - p0) / d1;
  const auto [i2, d2] = farthest([&](const Eigen::Vector3d& v) { return (v - u * u.dot(v)).norm(); });
  if (d2 <= tol) return true;
  const Eigen::Vector3d n = u.cross(pts[i2] - p0).normalized();
  const auto [i3, d3] = farthest([&](const Eigen::Vector3d& v) { return std::abs(n.dot(v)); });
  (void)i3;
  return d3 <= tol;
}

// The hull of pts (already finite and shifted near the origin).
Hull build_hull(const Points& pts, const char* fn) {
  Hull h;
  Box box;
  box.add(pts);
  if (flat(pts, kFlatRel * box.diagonal())) return h;
  std::vector<double> coords(3 * pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i)
    for (int k = 0; k < 3; ++k) coords[3 * i + k] = pts[i](k);

  QhullRun run;
  const int code = run.run(coords);
  if (code == qh_ERRsingular) return h;  // flat: fewer than 4 affinely independent points
  if (code != qh_ERRnone) {
    std::ostringstream msg;
    msg << fn << ": qhull failed on " << pts.size() << " points (exit code " << code << "): " << run.message();
    throw Error(msg.str());
  }
  qhT* qh = run.qh();  // the name FORALL… expect

  std::vector<int> index(pts.size(), -1);  // qhull point id -> our vertex index
  vertexT* vertex;
  FORALLvertices {
    const int id = qh_pointid(qh, vertex->point);
    index[static_cast<std::size_t>(id)] = static_cast<int>(h.vertices.size());
    h.ids.push_back(id);
    h.vertices.emplace_back(vertex->point[0], vertex->point[1], vertex->point[2]);
  }
  Eigen::Vector3d c = Eigen::Vector3d::Zero();
  for (const auto& v : h.vertices) c += v;
  c /= static_cast<double>(h.vertices.size());

  std::set<std::pair<int, int>> edges;
  facetT* facet;
  vertexT** vertexp;
  double six_vol = 0.0;
  FORALLfacets {
    int tri[3];
    int k = 0;
    FOREACHvertex_(facet->vertices) {
      if (k < 3) tri[k] = index[static_cast<std::size_t>(qh_pointid(qh, vertex->point))];
      ++k;
    }
    if (k != 3) {
      std::ostringstream msg;
      msg << fn << ": qhull returned a facet with " << k << " vertices despite 'Qt'";
      throw Error(msg.str());
    }
    const Eigen::Vector3d& a = h.vertices[tri[0]];
    const Eigen::Vector3d& b = h.vertices[tri[1]];
    const Eigen::Vector3d& d = h.vertices[tri[2]];
    six_vol += std::abs((a - c).dot((b - c).cross(d - c)));
    h.planes.push_back({Eigen::Vector3d(facet->normal[0], facet->normal[1], facet->normal[2]), facet->offset});
    for (int i = 0; i < 3; ++i) {
      const int u = tri[i], w = tri[(i + 1) % 3];
      edges.emplace(std::min(u, w), std::max(u, w));
    }
  }
  h.edges.assign(edges.begin(), edges.end());
  h.volume = six_vol / 6.0;
  h.solid = h.volume > 0.0;
  return h;
}

Points shifted(const Points& pts, const Eigen::Vector3d& c) {
  Points out;
  out.reserve(pts.size());
  for (const auto& p : pts) out.push_back(p - c);
  return out;
}

bool inside(const Hull& h, const Eigen::Vector3d& x, double eps) {
  for (const auto& pl : h.planes)
    if (pl.n.dot(x) + pl.d > eps) return false;
  return true;
}

// Points of A ∩ B: vertices of one inside the other, edge-plane crossings inside.
void add_candidates(const Hull& from, const Hull& other, double eps, Points& out) {
  for (const auto& v : from.vertices)
    if (inside(other, v, eps)) out.push_back(v);
  for (const auto& [i, j] : from.edges) {
    const Eigen::Vector3d& p = from.vertices[i];
    const Eigen::Vector3d& q = from.vertices[j];
    for (const auto& pl : other.planes) {
      const double sp = pl.n.dot(p) + pl.d;
      const double sq = pl.n.dot(q) + pl.d;
      if (!((sp < 0.0 && sq > 0.0) || (sp > 0.0 && sq < 0.0))) continue;  // endpoints are vertices
      const Eigen::Vector3d x = p + (sp / (sp - sq)) * (q - p);
      if (inside(other, x, eps)) out.push_back(x);
    }
  }
}

double intersection_of(const Hull& a, const Hull& b, double eps, const char* fn) {
  if (!a.solid || !b.solid) return 0.0;
  Box ba, bb;
  ba.add(a.vertices);
  bb.add(b.vertices);
  for (int k = 0; k < 3; ++k)
    if (ba.lo(k) > bb.hi(k) + eps || bb.lo(k) > ba.hi(k) + eps) return 0.0;  // boxes apart
  Points cand;
  add_candidates(a, b, eps, cand);
  add_candidates(b, a, eps, cand);
  Points merged;  // candidates closer than eps are one point
  for (const auto& x : cand) {
    bool seen = false;
    for (const auto& y : merged)
      if ((x - y).lpNorm<Eigen::Infinity>() <= eps) {
        seen = true;
        break;
      }
    if (!seen) merged.push_back(x);
  }
  const Hull i = build_hull(merged, fn);
  return i.solid ? i.volume : 0.0;
}

}  // namespace

double convex_hull_volume(const Points& points) {
  const char* fn = "convex_hull_volume";
  check_finite(points, fn, "points");
  Box box;
  box.add(points);
  return build_hull(shifted(points, box.centre()), fn).volume;
}

double hull_intersection_volume(const Points& a, const Points& b) {
  const char* fn = "hull_intersection_volume";
  check_finite(a, fn, "a");
  check_finite(b, fn, "b");
  Box box;
  box.add(a);
  box.add(b);
  const Eigen::Vector3d c = box.centre();
  const Hull ha = build_hull(shifted(a, c), fn);
  const Hull hb = build_hull(shifted(b, c), fn);
  return intersection_of(ha, hb, kInsideRel * box.diagonal(), fn);
}

double volume_error(const Points& truth, const Points& learned) {
  const char* fn = "volume_error";
  check_finite(truth, fn, "truth");
  check_finite(learned, fn, "learned");
  Box box;
  box.add(truth);
  box.add(learned);
  const Eigen::Vector3d c = box.centre();
  const Hull ht = build_hull(shifted(truth, c), fn);
  if (!ht.solid) {
    std::ostringstream msg;
    msg << fn << ": the true hull has zero volume (" << truth.size()
        << " points, fewer than 4 or all coplanar); the error is relative to it";
    throw Error(msg.str());
  }
  const Hull hl = build_hull(shifted(learned, c), fn);
  double vi = intersection_of(ht, hl, kInsideRel * box.diagonal(), fn);
  vi = std::min(vi, std::min(ht.volume, hl.volume));
  return (ht.volume + hl.volume - 2.0 * vi) / ht.volume;
}

std::vector<int> convex_hull_vertex_indices(const std::vector<Eigen::Vector3d>& points) {
  check_finite(points, "convex_hull_vertex_indices", "the points");
  Box box;
  box.add(points);
  const Hull h = build_hull(shifted(points, box.centre()), "convex_hull_vertex_indices");
  if (!h.solid) return {};
  std::vector<int> ids = h.ids;
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace impulse
