// Toss data of multibody systems: a floating base plus nj revolute joints,
// of any width, next to the cube-only io/toss_data.h it builds on.
//
// Row layout in memory (width = 13 + 2 nj doubles, SI), Drake's state order for
// a floating base plus revolute joints:
//   q = quaternion w,x,y,z (body -> world) (4) | p (3, m, world) | θ (nj, rad)
//   v = ω (3, rad/s, body) | v (3, m/s, world) | θ̇ (nj, rad/s)
// Note the order differs from toss_data.h's StateRow (p | quat | v | ω): cube
// data read here is permuted into the order above.
//
// Formats read by load_system_tosses(path), detected automatically:
//  - everything load_tosses reads (ContactNets legacy .pt folders, CCN zip .pt
//    folders of (T, 13), impulse .npz with meta): the cube, width 13;
//  - CCN zip .pt folders of (T, 13 + 2 nj) float64 tensors in the order above,
//    e.g. the articulated "elbow" tosses (T, 15); dt 0.0068 s (no metadata);
//  - "impulse-multibody" .npz (written by write_system_tosses): arrays
//      states  (R, W) float64, rows in the order above,
//      offsets (N+1,) int64, toss j is rows offsets[j] .. offsets[j+1],
//      dt      (1,) float64,
//      names   (B,) uint8, optional: the toss names joined by '\n' (UTF-8);
//              written when every name is non-empty and has no newline,
//              otherwise tosses are named "0", "1", ... on reading;
//      layout  (5,) uint8, the bytes "model": written by impulse, in the model's
//              layout (a StateLayout below does not apply to it).
//    A folder holding tosses.npz (and no .pt files) reads that file.
//
// Validation on reading (errors are impulse::Error naming the file, the 0-based
// row and, where it applies, the column): non-finite values; a quaternion whose
// norm is further than 0.01 from 1 (the load_tosses threshold; closer ones are
// renormalized, as load_tosses does); a joint angle outside [-π - 1e-6, π + 1e-6]
// (the data are wrapped to (-π, π]); fewer than 2 rows; different widths in one
// folder; a width not of the form 13 + 2 nj; truncated or corrupt zip / npz.
// The input files are never modified.
#pragma once

#include <string>
#include <vector>

namespace impulse {

struct SystemToss {
  std::string name;          // file stem ("17") or the npz's name / index
  std::vector<double> rows;  // steps x width, row-major, SI
  // rows.size() / width (0 for width <= 0)
  int steps(int width) const;
};

struct SystemTossSet {
  std::string format;  // "contactnets" | "ccn" | "impulse" | "impulse-multibody"
  int width = 13;      // 13 + 2 * joints()
  double dt = 0.0068;  // from metadata when the format has it; CCN zip: 0.0068
  std::vector<SystemToss> tosses;
  bool marked = false;  // an impulse-multibody .npz carrying write_system_tosses' layout mark
  int joints() const { return (width - 13) / 2; }
};


// The state layout of a data file when it is not the one above (a system's
// description states it: host/systems/system_file.h). Files in the other layout
// are read into the one above: the base's rotation as a quaternion w, x, y, z,
// ω in body axes, joints in the model's order. Applies to the CCN .pt folders and to .npz files
// of states that impulse did not write (write_system_tosses marks its files as
// being in the model's layout; those are read as they are; impulse's files from
// before the mark are unmarked, so read them with the model's layout). Cube
// formats have fixed layouts of their own and are not affected. Quaternions
// are taken with the sign they have; a matrix's quaternion keeps one sign along
// the toss (the nearer of ±q to the previous row's, w >= 0 at the first).
struct StateLayout {
  enum class Rotation { kQuaternionWxyz, kQuaternionXyzw, kMatrix };
  Rotation rotation = Rotation::kQuaternionWxyz;  // kMatrix: 9 columns, row-major R (body -> world)
  bool world_angular_velocity = false;            // ω in world axes (else body)
  // the data's joint j is the model's joint joints[j] (a permutation of 0 .. nj−1);
  // empty: the model's order
  std::vector<int> joints;

  bool is_model() const;
  int rotation_columns() const { return rotation == Rotation::kMatrix ? 9 : 4; }
  // a file's row width for nj joints: rotation + p (3) + θ (nj) + ω (3) + v (3) + θ̇ (nj)
  int file_width(int nj) const { return rotation_columns() + 9 + 2 * nj; }
  // "rotation matrix, ω in world axes, joints (1, 0)": for messages
  std::string describe() const;
  // the rotation's name in a description's "state": quaternion_wxyz | quaternion_xyzw | matrix
  const char* rotation_name() const;
};

// Whether a set is impulse's own simulated data (the CCN paper's Table 2 weights and no
// velocity smoothing apply): an impulse-multibody .npz that impulse wrote (marked), or an
// unmarked one read in the model's layout (written before the mark existed). An .npz another
// program wrote in a description's own layout is a recording.
bool is_synthetic(const SystemTossSet& set, const StateLayout& layout);

// Reads any of the formats above. expected_width > 0 (itself 13 + 2 nj) makes
// every toss of another width an error naming the file, its width and the
// expected one ("3.pt: has 13 columns, expected 15 (a floating base and 1 joint)").
// dt > 0 replaces the data's time step (as load_tosses' dt). A layout other than
// the model's (it needs expected_width > 0) reads files in that layout (above):
// a rotation matrix further than 0.01 from orthonormal (max |RᵀR − I|) or with a
// negative determinant is an error naming the row.
SystemTossSet load_system_tosses(const std::string& path, int expected_width = 0, double dt = 0,
                                 const StateLayout& layout = StateLayout{});

// Velocities averaged over 2 half_width + 1 consecutive rows, centred (fewer,
// still centred, within half_width of a toss's ends); positions untouched.
// The real elbow's velocities are backward differences of tracked poses
// (v_k = (x_k − x_{k−1})/Δt), so the average of v_{k−h} .. v_{k+h} is the
// difference (x_{k+h} − x_{k−h−1}) / ((2h+1) Δt): the same instant k − ½,
// over a 2h+1 times longer baseline, so tracking noise of the poses weighs
// 2h+1 times less in it. half_width 0 leaves the set as it is; < 0 is an error.
void smooth_velocities(SystemTossSet& set, int half_width);

// Writes the "impulse-multibody" .npz (path must end in .npz) atomically
// (temporary file + rename), in the model's layout and marked so (an array
// "layout" holding the bytes "model"; a StateLayout does not apply to it). The set is validated as on reading (width, dt > 0,
// every toss a whole number of >= 2 rows, finite, unit quaternions within 0.01,
// joint angles in range); nothing is renormalized, so write + load round-trips
// exactly whenever the quaternion norms are within 1e-12 of 1 (as after loading).
void write_system_tosses(const std::string& path, const SystemTossSet& set);

}  // namespace impulse
