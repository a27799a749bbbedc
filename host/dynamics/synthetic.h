// Synthetic cube tosses with known geometry, friction and inertia: the
// project's own data set (DESIGN.md "Data"), simulated with the ground-truth
// PolytopeModel (PolytopeParams::cube(half_width, mu)) by the same
// Stewart-Trinkle step the rollouts use (host/dynamics/simulate.h).
//
// Toss j: a uniformly random orientation (Shoemake), the lowest corner
// `height_min .. height_max` above the table (uniform), horizontal velocity
// N(0, horizontal_velocity_std²) per axis, vertical velocity uniform in
// [vertical_velocity_min, vertical_velocity_max], body angular velocity
// N(0, angular_velocity_std²) per axis. Row 0 is that state; row t+1 is the
// simulator's step from row t (velocities are the simulator's ν after the step),
// so a rollout of the toss from its first row with the true model reproduces it
// exactly. Length: with stop_at_rest, the toss is cut `rest_tail` rows after the
// first row at rest (every corner slower than rest_speed and the lowest corner
// within 1 mm of the table; the real data were cut 10 samples after coming to
// rest), clamped to [min_states, max_states]; otherwise a uniform length in
// [min_states, max_states]. position_noise_std > 0 adds
// N(0, σ²) noise to every stored position after simulating (the states are
// simulated clean).
//
// Determinism: toss j draws from its own std::mt19937_64 seeded by a splitmix64
// hash of (seed, j), with uniforms from the top 53 bits and normals by Box-Muller
// (no std:: distributions, whose algorithms differ between standard libraries);
// the set is bit-identical for a seed whatever the thread count.
#pragma once

#include <cstdint>

#include "host/dynamics/rigid_body.h"
#include "host/dynamics/simulate.h"
#include "io/toss_data.h"

namespace impulse {

struct SyntheticConfig {
  int n_tosses = 100;
  uint64_t seed = 0;
  double dt = 1.0 / 148.0;      // s
  double half_width = 0.0524;   // m
  double mass = 0.37;           // kg
  double inertia = 0.00081;     // kg m², isotropic
  double gravity = 9.81;        // m/s²
  double mu = 0.18;
  int min_states = 80;          // rows per toss (the real data: 80 .. 442, mean 105)
  int max_states = 442;
  bool stop_at_rest = true;
  int rest_tail = 10;           // rows kept after coming to rest
  double rest_speed = 0.01;     // m/s, fastest corner speed that counts as rest
  double position_noise_std = 0.0;      // m
  double height_min = 0.10;             // m, lowest corner above the table
  double height_max = 0.25;
  double horizontal_velocity_std = 0.8;  // m/s
  double vertical_velocity_min = -1.0;   // m/s
  double vertical_velocity_max = 1.0;
  double angular_velocity_std = 6.0;     // rad/s
  int friction_directions = 16;          // step options (SimOptions)
  double regularization = 1e-3;
  int threads = 0;                       // 0 = all cores

  // nullptr when usable, else a message (thread-local buffer).
  const char* validate() const;
  BodyParams body() const;
  SimOptions sim_options() const;
  TossMeta meta() const;
};

// format "impulse", meta filled from the config, tosses named "0", "1", ...
// Throws Error if the config fails validate().
TossSet generate_synthetic_tosses(const SyntheticConfig& config);

}  // namespace impulse
