// Convex hull volumes and the volume error of learned contact geometry.
//
// ContactNets-for-multibody (CCN, eq. 13a, App. B.1) scores a link's learned
// vertices L against its true vertices A by the symmetric difference of their
// convex hulls over the true volume:
//   e_volume = (Vol(A) + Vol(L) − 2 Vol(A ∩ L)) / Vol(A).
// Hulls come from qhull (Debian's libqhull-dev, the reentrant C API libqhull_r).
//
// The intersection of two hulls is computed exactly from hull data alone: a
// vertex of A ∩ B is a vertex of A inside B, a vertex of B inside A, or a point
// where an edge of one hull crosses a facet plane of the other and lies inside
// that other hull; A ∩ B is the hull of these points. ("Inside" allows
// 1e-10 × the diagonal of the joint bounding box; see hull.cc.) This needs no
// interior point, so disjoint, touching and nested hulls need no special case:
// an empty or flat candidate set has volume 0.
#pragma once

#include <Eigen/Core>
#include <vector>

namespace impulse {

// Volume of the convex hull of points. 0 (no error) for fewer than 4 points or
// a flat set: all points within 1e-12 × the diagonal of their bounding box of
// one plane (coplanar, collinear, coincident). Throws impulse::Error for a
// non-finite coordinate, naming the point index.
double convex_hull_volume(const std::vector<Eigen::Vector3d>& points);

// Volume of hull(a) ∩ hull(b); 0 when either is flat or they are disjoint or
// only touch. Throws impulse::Error for a non-finite coordinate (names the set,
// "a" or "b", and the point index).
double hull_intersection_volume(const std::vector<Eigen::Vector3d>& a,
                                const std::vector<Eigen::Vector3d>& b);

// The indices (ascending) of the points that are vertices of their convex hull:
// points inside it or on its faces (coplanar within qhull's merging, e.g. a
// mesh's face centres) are left out. Empty for a flat set (as above). Throws
// impulse::Error for a non-finite coordinate, naming the point index.
std::vector<int> convex_hull_vertex_indices(const std::vector<Eigen::Vector3d>& points);

// CCN's volume error (eq. 13a) of the learned vertices against the true ones,
// with Vol(A ∩ L) clamped to min(Vol(A), Vol(L)) so round-off cannot make it
// negative. Throws impulse::Error if the true hull has zero volume, or for a
// non-finite coordinate (names "truth" or "learned" and the point index).
double volume_error(const std::vector<Eigen::Vector3d>& truth,
                    const std::vector<Eigen::Vector3d>& learned);

}  // namespace impulse
