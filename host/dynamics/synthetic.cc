#include "host/dynamics/synthetic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <mutex>
#include <random>
#include <string>

#include "host/dynamics/polytope.h"
#include "host/batch/qp_batch.h"
#include "solvers/error.h"

namespace impulse {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kRestHeight = 1e-3;  // m: a body at rest has its lowest corner this close to the table

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// portable draws: uniforms from the top 53 bits, normals by Box-Muller
class Draw {
 public:
  explicit Draw(uint64_t seed) : rng_(seed) {}
  double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double a, double b) { return a + (b - a) * uniform(); }
  double normal(double std_dev) {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std_dev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * kPi * u2);
  }
  int integer(int lo, int hi) {  // [lo, hi]
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int>(rng_() % span);
  }

 private:
  std::mt19937_64 rng_;
};

// Shoemake's uniform random rotation
Eigen::Quaterniond random_rotation(Draw& d) {
  const double u1 = d.uniform(), u2 = d.uniform(), u3 = d.uniform();
  const double a = std::sqrt(1.0 - u1), b = std::sqrt(u1);
  return Eigen::Quaterniond(b * std::cos(2.0 * kPi * u3), a * std::sin(2.0 * kPi * u2),
                            a * std::cos(2.0 * kPi * u2), b * std::sin(2.0 * kPi * u3));
}

bool finite_nonneg(double v) { return std::isfinite(v) && v >= 0.0; }

}  // namespace

const char* SyntheticConfig::validate() const {
  static thread_local char msg[160];
  auto fail = [&](const char* what, double v) {
    std::snprintf(msg, sizeof msg, "%s, got %g", what, v);
    return msg;
  };
  if (n_tosses < 0) return fail("n_tosses must be >= 0", n_tosses);
  if (!(std::isfinite(dt) && dt > 0.0)) return fail("dt must be finite and > 0", dt);
  if (!(std::isfinite(half_width) && half_width > 0.0)) return fail("half_width must be finite and > 0", half_width);
  if (!(std::isfinite(mass) && mass > 0.0)) return fail("mass must be finite and > 0", mass);
  if (!(std::isfinite(inertia) && inertia > 0.0)) return fail("inertia must be finite and > 0", inertia);
  if (!finite_nonneg(gravity)) return fail("gravity must be finite and >= 0", gravity);
  if (!finite_nonneg(mu)) return fail("mu must be finite and >= 0", mu);
  if (min_states < 2) return fail("min_states must be >= 2", min_states);
  if (max_states < min_states) return fail("max_states must be >= min_states", max_states);
  if (rest_tail < 0) return fail("rest_tail must be >= 0", rest_tail);
  if (!finite_nonneg(rest_speed)) return fail("rest_speed must be finite and >= 0", rest_speed);
  if (!finite_nonneg(position_noise_std)) return fail("position_noise_std must be finite and >= 0", position_noise_std);
  if (!finite_nonneg(height_min)) return fail("height_min must be finite and >= 0", height_min);
  if (!(std::isfinite(height_max) && height_max >= height_min)) return fail("height_max must be >= height_min", height_max);
  if (!finite_nonneg(horizontal_velocity_std)) return fail("horizontal_velocity_std must be finite and >= 0", horizontal_velocity_std);
  if (!std::isfinite(vertical_velocity_min)) return fail("vertical_velocity_min must be finite", vertical_velocity_min);
  if (!(std::isfinite(vertical_velocity_max) && vertical_velocity_max >= vertical_velocity_min))
    return fail("vertical_velocity_max must be >= vertical_velocity_min", vertical_velocity_max);
  if (!finite_nonneg(angular_velocity_std)) return fail("angular_velocity_std must be finite and >= 0", angular_velocity_std);
  if (threads < 0) return fail("threads must be >= 0", threads);
  if (const char* m = sim_options().validate()) {
    std::snprintf(msg, sizeof msg, "step options: %s", m);
    return msg;
  }
  return nullptr;
}

BodyParams SyntheticConfig::body() const {
  BodyParams b;
  b.mass = mass;
  b.inertia = Eigen::Matrix3d::Identity() * inertia;
  b.gravity = gravity;
  return b;
}

SimOptions SyntheticConfig::sim_options() const {
  SimOptions o;
  o.dt = dt;
  o.friction_directions = friction_directions;
  o.regularization = regularization;
  return o;
}

TossMeta SyntheticConfig::meta() const {
  TossMeta m;
  m.dt = dt;
  m.mass = mass;
  m.inertia = {inertia, inertia, inertia};
  m.gravity = gravity;
  m.half_width = half_width;
  m.mu = mu;
  m.restitution = 0.0;
  return m;
}

// Simulates toss j of the set (see the header) into `toss`.
static void simulate_toss(const SyntheticConfig& config, const PolytopeModel& truth,
                          Simulator& sim, int j, Toss& toss) {
  const double h = config.half_width;
  const double corner_reach = std::sqrt(3.0) * h;  // fastest corner: |v| + √3 h |ω|
  Draw d(splitmix64(config.seed ^ splitmix64(static_cast<uint64_t>(j) + 1)));
  // initial state: orientation, then height of the lowest corner, velocities
  const Eigen::Quaterniond q = random_rotation(d);
  const Eigen::Matrix3d R = q.toRotationMatrix();
  const double reach = h * (std::abs(R(2, 0)) + std::abs(R(2, 1)) + std::abs(R(2, 2)));
  const double lowest = d.uniform(config.height_min, config.height_max);
  const Eigen::Vector3d p(0.0, 0.0, lowest + reach);
  const double vx = d.normal(config.horizontal_velocity_std);
  const double vy = d.normal(config.horizontal_velocity_std);
  const double vz = d.uniform(config.vertical_velocity_min, config.vertical_velocity_max);
  const double wx = d.normal(config.angular_velocity_std);
  const double wy = d.normal(config.angular_velocity_std);
  const double wz = d.normal(config.angular_velocity_std);
  const int uniform_len = d.integer(config.min_states, config.max_states);
  State x = make_state(p, q, Eigen::Vector3d(vx, vy, vz), Eigen::Vector3d(wx, wy, wz));

  // simulate up to max_states rows, cutting rest_tail rows after rest
  toss.name = std::to_string(j);
  toss.states.clear();
  toss.states.reserve(config.max_states);
  toss.states.push_back(to_row(x));
  int len = config.stop_at_rest ? config.max_states : uniform_len;
  bool at_rest = false;
  for (int r = 1; r < len; ++r) {
    x = sim.step(truth, x, nullptr);
    toss.states.push_back(to_row(x));
    if (config.stop_at_rest && !at_rest) {
      const double speed = x.segment<3>(7).norm() + corner_reach * x.segment<3>(10).norm();
      const Eigen::Matrix3d Rx = rotation(x);
      const double low = x(2) - h * (std::abs(Rx(2, 0)) + std::abs(Rx(2, 1)) + std::abs(Rx(2, 2)));
      if (speed <= config.rest_speed && low <= kRestHeight) {
        at_rest = true;
        len = std::min(config.max_states, std::max(config.min_states, r + 1 + config.rest_tail));
      }
    }
  }
  toss.states.resize(len);

  // measurement noise on the stored positions
  if (config.position_noise_std > 0.0)
    for (StateRow& row : toss.states)
      for (int c = 0; c < 3; ++c) row[c] += d.normal(config.position_noise_std);
}

TossSet generate_synthetic_tosses(const SyntheticConfig& config) {
  if (const char* m = config.validate()) throw Error(std::string("SyntheticConfig: ") + m);
  TossSet set;
  set.format = "impulse";
  set.meta = config.meta();
  set.tosses.resize(config.n_tosses);
  if (config.n_tosses == 0) return set;

  const PolytopeModel truth(PolytopeParams::cube(config.half_width, config.mu));
  const BodyParams body = config.body();
  const SimOptions options = config.sim_options();
  const int t = std::min(resolve_threads(config.threads), config.n_tosses);
  std::vector<Simulator> sims(t, Simulator(body, options));
  // the first exception is kept and rethrown after every toss has run
  std::mutex mu;
  std::exception_ptr error;
  parallel_for(config.n_tosses, t, [&](int worker, int begin, int end) {
    for (int j = begin; j < end; ++j) {
      try {
        simulate_toss(config, truth, sims[worker], j, set.tosses[j]);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
    }
  });
  if (error) std::rethrow_exception(error);
  return set;
}

}  // namespace impulse
