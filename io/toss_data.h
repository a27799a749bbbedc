// Cube-toss data sets: trajectories of one rigid body, read from the formats
// users of ContactNets / CCN have, and the project's own synthetic format.
// Everything is converted to SI on reading; the input is never modified.
//
// Row layout in memory (13 doubles, SI), the same as host/dynamics/rigid_body.h's State:
//   p (3, m, world) | quaternion w,x,y,z (body -> world) | v (3, m/s, world) |
//   ω (3, rad/s, body)
//
// Formats, detected automatically by load_tosses(path):
//  (a) ContactNets: a folder holding N.pt files (PyTorch legacy serialization of
//      one float64 (or float32) tensor (1, T, 19): p [BHW], quat wxyz, v [BHW/s], ω body,
//      6 inputs, which must be 0: tosses have no control) and experiment.json
//      beside them or in ../params_processed/ (dt, g [BHW/s²], mass, inertia
//      [kg BHW²], mu, vertices). The length unit (one block half-width) is
//      9.81 / g metres. These files carry no checksum: torch's header, when the
//      file has one, must parse and agree with the data; every value must be
//      finite, quaternions unit within kLegacyQuatNormTol, and each time step
//      consistent with the velocities and dt (kLegacyStepTol, kLegacyTurnTol).
//  (b) CCN: a folder of N.pt files in PyTorch's zip serialization, each one
//      float64 (or float32) tensor (T, 13): quat wxyz, p [m], ω body, v world [m/s] (Drake's
//      floating-base order). No metadata; dt defaults to 0.0068 s (load_tosses' dt, the CLI's --dt, sets another).
//  (c) impulse: one .npz file (numpy reads it) with arrays
//      states (R, 13) float64 in the in-memory layout above, offsets (N+1,)
//      int64 (toss j is rows offsets[j] .. offsets[j+1]), and meta (9,) float64:
//      dt, mass, Ixx, Iyy, Izz, gravity, half_width, mu, restitution(0 if n/a).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace impulse {

using StateRow = std::array<double, 13>;

struct Toss {
  std::string name;              // file stem, e.g. "17"
  std::vector<StateRow> states;  // SI
};

struct TossMeta {
  double dt = 1.0 / 148.0;
  double mass = 0.37;
  std::array<double, 3> inertia{0.00081, 0.00081, 0.00081};  // principal, kg m²
  double gravity = 9.81;
  double half_width = 0.0524;  // m
  double mu = 0.18;            // nominal friction (metadata; not learned from here)
  double restitution = 0.0;
};

struct TossSet {
  std::string format;  // "contactnets" | "ccn" | "impulse"
  TossMeta meta;
  std::vector<Toss> tosses;
  std::size_t rows() const;
};

// Detects the format and reads every toss (sorted by numeric file stem for the
// folder formats). Throws impulse::Error naming the file and the problem (and the
// row and column of a value) on a missing, corrupt or inconsistent file (wrong
// element count, non-finite value, quaternion far from unit norm, a time step that
// disagrees with the velocities, a toss shorter than 2 rows, ...); a folder whose
// first .pt file is neither PyTorch format gets what was expected and found.
// dt > 0 replaces the data's time step (experiment.json's, CCN's 0.0068 s, the
// .npz's meta): a ContactNets folder's steps are then checked against it.
// Tensors may be float64 or float32 (widened); so may an .npz's states.
TossSet load_tosses(const std::string& path, double dt = 0);

// Writes format (c) atomically (temporary file + rename).
void write_tosses(const std::string& path, const TossSet& set);

struct TossSplit {
  std::vector<int> train, valid, test;  // toss indices
};

// Seeded shuffle of the tosses, then fractions (train, valid, test) of the
// count (rounded; every part of a set of >= 3 tosses gets at least one).
// train_limit > 0 keeps only the first train_limit training tosses (the data-set
// size N of the paper's Fig. 5); valid and test stay as split.
// Details: the fractions are divided by their sum; train and valid get
// round(f * n), test the rest (train does when test's fraction is 0); a part
// whose fraction is 0 stays empty. The shuffle is Fisher-Yates over
// std::mt19937_64(seed), the same with every standard library; each part lists
// indices in shuffled order, so the train_limit prefixes of one seed are nested.
// A train_limit above the training count keeps them all (no error). Throws
// impulse::Error for n_tosses < 0, train_limit < 0, or a negative, non-finite
// or all-zero fraction.
TossSplit split_tosses(int n_tosses, uint64_t seed, std::array<double, 3> fractions = {0.5, 0.3, 0.2},
                       int train_limit = 0);

// ---- shared with io/system_tosses.cc (the multibody loader); not an API for other rooms ----
struct NpyArray;

namespace toss_detail {

// The offsets array (N+1,) of an npz toss file whose states have `rows` rows:
// an integer array running from 0 to rows without decreasing. Throws
// impulse::Error naming `path` and the first fault.
std::vector<int64_t> read_offsets(const NpyArray& offsets, int64_t rows, const std::string& path);

// A quaternion whose norm is further than this from 1 is a corrupt row (or a
// wrong column order), not rounding; closer ones are renormalized...
constexpr double kQuatNormTol = 1e-2;
// ...unless they are this close to 1 already, so that loading is idempotent.
constexpr double kQuatNormExact = 1e-12;
// Legacy ContactNets .pt files carry no checksum (the zip formats have CRCs), so
// their values are checked as tightly as the data allow. Quaternions: the 570
// real tosses are unit to 4.4e-16; a unit quaternion rounded to float32 and
// widened is off by at most 2^-24 (6e-8): 1e-6 accepts both and refuses a
// component altered by more than about 1e-6.
constexpr double kLegacyQuatNormTol = 1e-6;
// Time steps: row k's position step p_k - p_(k-1) against dt v_k (the velocities
// are backward differences, median-filtered; row 0's, a copy of row 1's, against
// p_1 - p_0), in block half-widths: at most 0.025 in the real tosses (59,953
// rows), refused past 0.1 (5 mm for the real cube); the rotation from q_(k-1) to
// q_k against dt ω_k (body frame), in radians: at most 0.11 in the real tosses,
// refused past 0.5.
constexpr double kLegacyStepTol = 0.1;
constexpr double kLegacyTurnTol = 0.5;
constexpr double kCcnDt = 0.0068;  // the CCN code's dt (cube and elbow tosses)
constexpr const char* kImpulseFile = "tosses.npz";  // what a folder of format (c) holds

// Checks the quaternion q[0..3] (w, x, y, z) of row `row`: throws impulse::Error
// "LABEL: row K: quaternion (...) has norm N, expected 1 within TOL" when it is
// further than tol from unit norm, renormalizes it in place otherwise (see the
// constants).
void check_quaternion(double* q, std::size_t row, const std::string& label,
                      double tol = kQuatNormTol);

// The *.pt files of a folder, sorted by numeric stem (0, 1, 2, ..., 10, then
// other stems by name). Throws when the folder cannot be listed.
std::vector<std::string> list_pt_files(const std::string& dir);

// True when the bytes open with a zip local file header ("PK\3\4").
bool is_zip(const std::vector<uint8_t>& bytes);

// One float64 matrix read from a PyTorch zip serialization (torch.save, format
// (b)): the T x W values of a 2-D tensor, row-major.
struct PtMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<double> values;
};

// Reads the one tensor of a PyTorch zip file already in memory (`bytes`, the
// file `label`): decodes the zip (CRCs, truncation), parses data.pkl with the
// pickle subset reader and checks dtype float64, a 2-D contiguous shape with at
// least 2 rows and the storage size. cols > 0 requires that many columns
// ("tensor size (3, 12), expected (T, 13)"); cols == 0 accepts any width >= 1.
// No value checks (finiteness, quaternions): the caller knows the layout.
PtMatrix read_pt_zip_matrix(const std::vector<uint8_t>& bytes, const std::string& label,
                            int64_t cols);

// A time step given to a reader (load_tosses' dt): 0 (the data's own) or finite
// and > 0; throws "PATH: the time step given is X, ..." otherwise.
void check_time_step(double dt, const std::string& path);

}  // namespace toss_detail

}  // namespace impulse
