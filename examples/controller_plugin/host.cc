// A host loop in the manner of ros2_control: loads the controller plugin, then calls
// it at a fixed rate (100 Hz, in real time, for 6 s) on a simulated cart-pole whose
// walls stand 0.15 m off where the controller's model says (the closed-loop demo's
// set-up: the pole kicked by ±1.1 rad/s every 2 s, into a wall). It checks that
//   - the real-time calls (controller_step, controller_observe) allocate nothing,
//   - the pole stays up (|angle| below 0.6 rad throughout, below 0.1 rad at the end),
// and exits 1 otherwise.
#include <dlfcn.h>

#include <impulse/control/lcs.h>
#include <impulse/control/mpc_tasks.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>

// allocations on this thread while counting: the plugin's operator new is this one
namespace {
thread_local bool counting = false;
std::atomic<long> allocations{0};
}  // namespace
void* operator new(std::size_t n) {
  if (counting) allocations.fetch_add(1);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

template <class F>
F load(void* lib, const char* name) {
  void* f = dlsym(lib, name);
  if (!f) {
    std::fprintf(stderr, "the plugin has no %s\n", name);
    std::exit(1);
  }
  return reinterpret_cast<F>(f);
}

int main() {
  void* lib = dlopen(PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "cannot load %s: %s\n", PLUGIN_PATH, dlerror());
    return 1;
  }
  auto create = load<void* (*)()>(lib, "controller_create");
  auto destroy = load<void (*)(void*)>(lib, "controller_destroy");
  auto step = load<int (*)(void*, const double*, double, double*)>(lib, "controller_step");
  auto observe = load<void (*)(void*, const double*, const double*, const double*)>(lib, "controller_observe");
  auto residual = load<void (*)(void*, double*)>(lib, "controller_residual");

  // the robot: its walls 0.15 m off the controller's model (c_true = c + (-0.15, 0.15))
  impulse::CartPoleParams params;
  const impulse::Lcs robot = impulse::cartpole_lcs(params, 1, Eigen::Vector2d(-0.15, 0.15));
  impulse::LcsStepWork work;
  work.reserve(2);
  Eigen::VectorXd x(4), x_next(4), lam(2);
  x << 0.0, 0.1, 0.0, 0.0;  // the pole 0.1 rad off upright
  double u = 0.0;
  void* controller = create();
  const int steps = 600;
  int bad = 0;
  double worst = 0;  // the largest |pole angle|
  auto tick = std::chrono::steady_clock::now();
  for (int k = 0; k < steps; ++k) {
    if (k > 0 && k % 200 == 0) x(3) += (k / 200) % 2 ? 1.1 : -1.1;  // a kick
    tick += std::chrono::microseconds(static_cast<long>(params.dt * 1e6));
    std::this_thread::sleep_until(tick);
    counting = true;
    bad += step(controller, x.data(), k * params.dt, &u) == 2;
    counting = false;
    Eigen::VectorXd uu(1);
    uu(0) = u;
    impulse::lcs_step(robot, 0, x, uu, x_next, lam, work);
    counting = true;
    observe(controller, x.data(), &u, x_next.data());
    counting = false;
    x = x_next;
    worst = std::max(worst, std::abs(x(1)));
  }
  double r[2];
  residual(controller, r);
  destroy(controller);
  dlclose(lib);
  std::printf("after %d steps: cart %.3f m, pole %.4f rad (at most %.3f); allocations in the real-time calls: %ld; "
              "bad inputs: %d; the residual the learner has published so far (%.4f, %.4f)\n",
              steps, x(0), x(1), worst, allocations.load(), bad, r[0], r[1]);
  const bool ok = allocations.load() == 0 && bad == 0 && worst < 0.6 && std::abs(x(1)) < 0.1 && std::isfinite(x(0));
  if (!ok) std::fprintf(stderr, "controller_plugin: FAILED\n");
  return ok ? 0 : 1;
}
