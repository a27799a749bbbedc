// Convex hull volumes, hull intersections and CCN's volume error (host/dynamics/hull.h)
// against closed forms: boxes, a regular tetrahedron, a cube against itself turned 45°
// (a regular octagonal prism), a cube with a corner simplex, overlapping, nested,
// touching and disjoint boxes, and the same under rigid motions and far from the origin.
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "host/dynamics/hull.h"
#include "solvers/error.h"

#include "test_util.h"

namespace impulse {
namespace {

using testing::expect_error;

using Points = std::vector<Eigen::Vector3d>;
constexpr double kPi = 3.14159265358979323846;

// the 8 corners of the box [lo, hi]
Points box(const Eigen::Vector3d& lo, const Eigen::Vector3d& hi) {
  Points p;
  for (int i = 0; i < 8; ++i)
    p.emplace_back((i & 1) ? hi.x() : lo.x(), (i & 2) ? hi.y() : lo.y(), (i & 4) ? hi.z() : lo.z());
  return p;
}
Points cube(double side, const Eigen::Vector3d& centre = Eigen::Vector3d::Zero()) {
  const Eigen::Vector3d h = Eigen::Vector3d::Constant(0.5 * side);
  return box(centre - h, centre + h);
}
Points transformed(const Points& pts, const Eigen::Matrix3d& R, const Eigen::Vector3d& t) {
  Points out;
  for (const auto& p : pts) out.push_back(R * p + t);
  return out;
}
Eigen::Matrix3d rot_z(double angle) { return Eigen::AngleAxisd(angle, Eigen::Vector3d::UnitZ()).toRotationMatrix(); }
Eigen::Matrix3d random_rotation(std::mt19937_64& rng) {
  std::normal_distribution<double> nd(0.0, 1.0);
  return Eigen::Quaterniond(nd(rng), nd(rng), nd(rng), nd(rng)).normalized().toRotationMatrix();
}

void expect_rel(double got, double want, double rel, const std::string& what) {
  EXPECT_LE(std::abs(got - want), rel * std::abs(want)) << what << ": got " << got << ", want " << want;
}

// ---- volumes --------------------------------------------------------------------------

TEST(HullTest, BoxAndTetrahedronVolumes) {
  expect_rel(convex_hull_volume(cube(1.0)), 1.0, 1e-14, "unit cube");
  expect_rel(convex_hull_volume(box({0, 0, 0}, {0.1, 0.05, 0.05})), 2.5e-4, 1e-12, "0.1 x 0.05 x 0.05 box");
  // regular tetrahedron of edge 2√2: a³ / (6√2) = 8/3
  const Points tet = {{1, 1, 1}, {1, -1, -1}, {-1, 1, -1}, {-1, -1, 1}};
  expect_rel(convex_hull_volume(tet), 8.0 / 3.0, 1e-14, "regular tetrahedron");
  // far from the origin and turned: the same volumes
  std::mt19937_64 rng(7);
  const Eigen::Matrix3d R = random_rotation(rng);
  expect_rel(convex_hull_volume(transformed(cube(1.0), R, {1000.0, -500.0, 200.0})), 1.0, 1e-12, "moved cube");
  expect_rel(convex_hull_volume(transformed(tet, R, {-3.0, 40.0, 7.0})), 8.0 / 3.0, 1e-13, "moved tetrahedron");
}

TEST(HullTest, ThinSlabsKeepTheirVolume) {
  // flat means within 1e-12 of the box diagonal of a plane; thinner than that is 0
  expect_rel(convex_hull_volume(box({0, 0, 0}, {1, 1, 1e-6})), 1e-6, 1e-12, "1e-6 slab");
  expect_rel(convex_hull_volume(box({0, 0, 0}, {1, 1, 1e-10})), 1e-10, 1e-12, "1e-10 slab");
  EXPECT_EQ(convex_hull_volume(box({0, 0, 0}, {1, 1, 1e-13})), 0.0);
  // two turned cubes overlapping by 1e-9 of a side: a 1e-9 x 0.7 x 0.8 slab
  std::mt19937_64 rng(19);
  const Eigen::Matrix3d R = random_rotation(rng);
  const double v = hull_intersection_volume(transformed(cube(1.0), R, {0, 0, 0}),
                                            transformed(cube(1.0, {1.0 - 1e-9, 0.3, -0.2}), R, {0, 0, 0}));
  expect_rel(v, 1e-9 * 0.7 * 0.8, 1e-5, "1e-9 overlap");
}

TEST(HullTest, RandomHullsIntersectSymmetricallyAndWithThemselves) {
  std::mt19937_64 rng(23);
  std::normal_distribution<double> nd(0.0, 1.0);
  for (int trial = 0; trial < 5; ++trial) {
    Points a, b;
    for (int i = 0; i < 40; ++i) {
      a.emplace_back(nd(rng), nd(rng), nd(rng));
      b.emplace_back(nd(rng) + 0.5, nd(rng), nd(rng));
    }
    const double va = convex_hull_volume(a), vb = convex_hull_volume(b);
    const double ab = hull_intersection_volume(a, b);
    EXPECT_NEAR(hull_intersection_volume(a, a), va, 1e-12 * va);
    EXPECT_NEAR(hull_intersection_volume(b, a), ab, 1e-12 * ab);
    EXPECT_GT(ab, 0.0);
    EXPECT_LE(ab, std::min(va, vb) * (1 + 1e-12));
    EXPECT_NEAR(volume_error(a, b), (va + vb - 2 * ab) / va, 1e-12);
  }
}

TEST(HullTest, InteriorAndDuplicatePointsAndOrderDoNotMatter) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  const Eigen::Matrix3d R = random_rotation(rng);
  Points pts = transformed(cube(1.0), R, {0.3, -0.2, 0.1});
  const Points corners = pts;
  for (int i = 0; i < 50; ++i) pts.push_back(R * Eigen::Vector3d(u(rng), u(rng), u(rng)) + Eigen::Vector3d(0.3, -0.2, 0.1));
  for (int i = 0; i < 8; ++i) pts.push_back(corners[i]);  // every corner twice
  pts.push_back(corners[3]);
  const double v0 = convex_hull_volume(corners);
  const Points learned = transformed(cube(1.1), R, {0.35, -0.2, 0.1});
  const double e0 = volume_error(corners, learned);
  for (int trial = 0; trial < 5; ++trial) {
    std::shuffle(pts.begin(), pts.end(), rng);
    expect_rel(convex_hull_volume(pts), v0, 1e-12, "shuffled, with duplicates and interior points");
    Points l2 = learned;
    l2.push_back(learned[0]);
    std::shuffle(l2.begin(), l2.end(), rng);
    EXPECT_NEAR(volume_error(pts, l2), e0, 1e-12);
    EXPECT_NEAR(hull_intersection_volume(pts, l2), hull_intersection_volume(l2, pts), 1e-12);
  }
}

TEST(HullTest, DegenerateSetsHaveZeroVolume) {
  EXPECT_EQ(convex_hull_volume({}), 0.0);
  EXPECT_EQ(convex_hull_volume({{0, 0, 0}, {1, 0, 0}, {0, 1, 0}}), 0.0);
  Points plane, line;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int i = 0; i < 20; ++i) {
    plane.emplace_back(u(rng), u(rng), 0.25);
    line.push_back(Eigen::Vector3d(1, 2, 3) * u(rng));
  }
  EXPECT_EQ(convex_hull_volume(plane), 0.0);
  // a tilted plane too
  EXPECT_EQ(convex_hull_volume(transformed(plane, random_rotation(rng), {1, 2, 3})), 0.0);
  EXPECT_EQ(convex_hull_volume(line), 0.0);
  EXPECT_EQ(convex_hull_volume(Points(6, Eigen::Vector3d(1, 2, 3))), 0.0);
  // a flat set intersects nothing; a flat truth cannot normalize the error
  EXPECT_EQ(hull_intersection_volume(plane, cube(2.0)), 0.0);
  expect_error([&] { volume_error(plane, cube(1.0)); }, {"volume_error", "true hull has zero volume"});
  EXPECT_NEAR(volume_error(cube(1.0), plane), 1.0, 1e-15);  // learned flat: all of A missed
}

TEST(HullTest, NonFiniteCoordinatesAreNamed) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Points bad = cube(1.0);
  bad[5].y() = nan;
  expect_error([&] { convex_hull_volume(bad); }, {"convex_hull_volume", "point 5 of points", "nan"});
  expect_error([&] { hull_intersection_volume(cube(1.0), bad); }, {"point 5 of b"});
  expect_error([&] { hull_intersection_volume(bad, cube(1.0)); }, {"point 5 of a"});
  expect_error([&] { volume_error(cube(1.0), bad); }, {"volume_error", "point 5 of learned"});
  Points bad2 = cube(1.0);
  bad2[2].z() = -inf;
  expect_error([&] { volume_error(bad2, cube(1.0)); }, {"point 2 of truth", "inf"});
}

// ---- intersections --------------------------------------------------------------------

// ---- hull vertices --------------------------------------------------------------------

TEST(HullTest, HullVerticesLeaveOutInteriorAndFacePoints) {
  // a turned, shifted box's corners among its centre, its face centres and an edge's midpoint,
  // shuffled: exactly the corners' indices, ascending
  std::mt19937_64 rng(3);
  const Eigen::Matrix3d R = random_rotation(rng);
  const Eigen::Vector3d t(0.3, -0.2, 1.5);
  Points pts = transformed(box({0, 0, 0}, {0.08, 0.05, 0.03}), R, t);
  const Points extra = transformed({{0.04, 0.025, 0.015}, {0.04, 0.025, 0}, {0.04, 0.025, 0.03}, {0, 0.025, 0.015},
                                    {0.08, 0.025, 0.015}, {0.04, 0, 0}},
                                   R, t);
  pts.insert(pts.end(), extra.begin(), extra.end());
  std::vector<int> order(pts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::shuffle(order.begin(), order.end(), rng);
  Points shuffled;
  for (int i : order) shuffled.push_back(pts[static_cast<size_t>(i)]);
  std::vector<int> want;
  for (size_t j = 0; j < order.size(); ++j)
    if (order[j] < 8) want.push_back(static_cast<int>(j));
  EXPECT_EQ(convex_hull_vertex_indices(shuffled), want);
  // flat sets have no hull; a non-finite point is named
  EXPECT_TRUE(convex_hull_vertex_indices({{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}}).empty());
  EXPECT_TRUE(convex_hull_vertex_indices({{0, 0, 0}, {1, 0, 0}}).empty());
  Points bad = cube(1.0);
  bad[5].y() = std::nan("");
  expect_error([&] { convex_hull_vertex_indices(bad); }, "point 5");
}

TEST(HullTest, AxisAlignedBoxesOverlapByTheProductOfOverlaps) {
  const Points a = box({0, 0, 0}, {2, 1, 1});
  const Points b = box({1.5, 0.25, -1}, {3, 2, 0.5});
  const double want = 0.5 * 0.75 * 0.5;
  expect_rel(hull_intersection_volume(a, b), want, 1e-12, "overlap");
  expect_rel(hull_intersection_volume(b, a), want, 1e-12, "overlap, swapped");
  // a rigid motion of both changes nothing
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 5; ++trial) {
    const Eigen::Matrix3d R = random_rotation(rng);
    const Eigen::Vector3d t(10.0 * trial, -3.0, 0.5);
    expect_rel(hull_intersection_volume(transformed(a, R, t), transformed(b, R, t)), want, 1e-12, "moved overlap");
  }
}

TEST(HullTest, NestedTouchingAndDisjointBoxes) {
  const Points outer = cube(2.0);
  const Points inner = box({-0.5, -0.2, 0.1}, {0.3, 0.6, 0.9});
  const double vin = 0.8 * 0.8 * 0.8;
  expect_rel(hull_intersection_volume(outer, inner), vin, 1e-12, "nested");
  expect_rel(hull_intersection_volume(inner, outer), vin, 1e-12, "nested, swapped");
  // inner box sharing three faces with the outer one
  const Points corner = box({-1, -1, -1}, {0, 0.5, 0});
  expect_rel(hull_intersection_volume(outer, corner), 1.5, 1e-12, "nested, faces shared");
  // face to face, edge to edge, corner to corner, and apart
  EXPECT_EQ(hull_intersection_volume(cube(1.0), cube(1.0, {1, 0, 0})), 0.0);
  EXPECT_EQ(hull_intersection_volume(cube(1.0), cube(1.0, {1, 1, 0})), 0.0);
  EXPECT_EQ(hull_intersection_volume(cube(1.0), cube(1.0, {1, 1, 1})), 0.0);
  EXPECT_EQ(hull_intersection_volume(cube(1.0), cube(1.0, {1.5, 0.2, 0})), 0.0);
  // face to face under a rotation: round-off may leave a sliver, never more
  std::mt19937_64 rng(9);
  const Eigen::Matrix3d R = random_rotation(rng);
  EXPECT_LE(hull_intersection_volume(transformed(cube(1.0), R, {0, 0, 0}),
                                     transformed(cube(1.0, {1, 0.3, -0.2}), R, {0, 0, 0})),
            1e-12);
  // a tetrahedron with a vertex at the cube's corner (1,1,1), the rest beyond it
  const Points far_tet = {{1, 1, 1}, {2, 2, 1.5}, {2, 1.5, 2}, {1.5, 2, 2}};
  EXPECT_LE(hull_intersection_volume(box({0, 0, 0}, {1, 1, 1}), far_tet), 1e-12);
}

TEST(HullTest, CubeAndItselfTurned45DegreesMeetInAnOctagonalPrism) {
  // a unit square and the same square turned 45° about its centre meet in the
  // regular octagon of inradius 1/2: area 8 r² tan(π/8) = 2(√2 − 1); height 1
  const double want = 2.0 * (std::sqrt(2.0) - 1.0);
  const Points a = cube(1.0);
  const Points b = transformed(a, rot_z(kPi / 4), Eigen::Vector3d::Zero());
  expect_rel(hull_intersection_volume(a, b), want, 1e-12, "octagonal prism");
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 5; ++trial) {
    const Eigen::Matrix3d R = random_rotation(rng);
    const Eigen::Vector3d t(-2.0 + trial, 0.7, 100.0 * trial);
    expect_rel(hull_intersection_volume(transformed(a, R, t), transformed(b, R, t)), want, 1e-12, "moved prism");
  }
  // and the volume error of the turned cube: 1 + 1 − 2·2(√2 − 1)
  EXPECT_NEAR(volume_error(a, b), 2.0 - 2.0 * want, 1e-12);
}

TEST(HullTest, CubeCutByACornerSimplex) {
  // [0,1]^3 ∩ {x, y, z ≥ 0, x + y + z ≤ 3/2}: s³/6 − 3 (s − 1)³/6 = 9/16 − 1/16 = 1/2;
  // three of the simplex's faces lie in the cube's faces, the fourth cuts six edges
  const Points simplex = {{0, 0, 0}, {1.5, 0, 0}, {0, 1.5, 0}, {0, 0, 1.5}};
  const Points unit = box({0, 0, 0}, {1, 1, 1});
  expect_rel(hull_intersection_volume(unit, simplex), 0.5, 1e-12, "cube ∩ simplex");
  expect_rel(hull_intersection_volume(simplex, unit), 0.5, 1e-12, "simplex ∩ cube");
  // s = 1/2 lies inside the cube: the simplex itself, 1/48
  const Points small = {{0, 0, 0}, {0.5, 0, 0}, {0, 0.5, 0}, {0, 0, 0.5}};
  expect_rel(hull_intersection_volume(unit, small), 1.0 / 48.0, 1e-12, "small simplex");
}

// ---- the volume error -------------------------------------------------------------------

TEST(HullTest, VolumeErrorClosedForms) {
  const Points a = cube(1.0, {0.2, -0.1, 0.4});
  EXPECT_NEAR(volume_error(a, a), 0.0, 1e-12);
  // scaled by 1.1 about its centre: (1.331 − 1) / 1
  EXPECT_NEAR(volume_error(a, cube(1.1, {0.2, -0.1, 0.4})), 0.331, 1e-12);
  // a learned cube inside the true one: (1 − 0.729) / 1
  EXPECT_NEAR(volume_error(a, cube(0.9, {0.2, -0.1, 0.4})), 0.271, 1e-12);
  // shifted by half a side: (1 + 1 − 2 · 0.5) / 1
  EXPECT_NEAR(volume_error(a, cube(1.0, {0.7, -0.1, 0.4})), 1.0, 1e-12);
  // disjoint: (1 + 1.331) / 1
  EXPECT_NEAR(volume_error(a, cube(1.1, {5, 0, 0})), 2.331, 1e-12);
  // at the cube's size in the data (half-width 0.0524 m), turned and moved
  std::mt19937_64 rng(17);
  const Eigen::Matrix3d R = random_rotation(rng);
  const Eigen::Vector3d t(0.3, 0.1, 0.0524);
  const Points truth = transformed(cube(0.1048), R, t);
  EXPECT_NEAR(volume_error(truth, truth), 0.0, 1e-12);
  EXPECT_NEAR(volume_error(truth, transformed(cube(0.1048 * 1.1), R, t)), 0.331, 1e-12);
  EXPECT_NEAR(volume_error(truth, transformed(cube(0.1048, {0.0524, 0, 0}), R, t)), 1.0, 1e-12);
}

}  // namespace
}  // namespace impulse
