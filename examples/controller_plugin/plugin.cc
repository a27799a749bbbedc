// The controller plugin: C3 on the cart-pole's LCS, with the residual learner running
// on a thread of its own (it learns the walls' true distance from the transitions
// the controller observes and publishes its residual to the controller lock-free).
// The real-time functions (controller_step, controller_observe) allocate nothing.
#include <impulse/control/c3.h>
#include <impulse/control/mpc_tasks.h>
#include <impulse/control/residual_learner.h>
#include <impulse/control/rt_channels.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace {

// as the closed-loop demo's (host/control/mpc_demo.cc): the velocities carry the
// contact information
impulse::ResidualLearnerSettings learner_settings() {
  impulse::ResidualLearnerSettings s;
  s.buffer = 10;
  s.lr = 3e-3;
  s.Qd = Eigen::Vector4d(0, 0, 1e6, 1e6);
  return s;
}

struct Controller {
  impulse::CartPoleParams params;
  impulse::Lcs model = impulse::cartpole_lcs(params, 10);
  impulse::C3Controller c3{model, impulse::cartpole_costs(params), impulse::cartpole_settings()};
  impulse::ResidualLearner learner{model, learner_settings()};
  impulse::SampleRing ring{256, 4, 1};
  std::atomic<bool> stop{false};
  std::thread learning;

  Controller() {
    c3.attach_residual(&learner.channel());
    c3.attach_samples(&ring);
    learning = std::thread([this] {  // the learner at 20 Hz, beside the control loop
      while (!stop.load()) {
        learner.drain(ring);
        learner.update();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  ~Controller() {
    stop = true;
    learning.join();
  }
};

}  // namespace

extern "C" {

void* controller_create() { return new Controller(); }
void controller_destroy(void* c) { delete static_cast<Controller*>(c); }

// x: 4 numbers (cart position, pole angle, their rates); u: 1 (the cart's force, N).
// Returns 0 on a solved step, 1 at the iteration budget, 2 on bad input (u is then
// the last safe command).
int controller_step(void* c, const double* x, double t, double* u) {
  Controller& k = *static_cast<Controller*>(c);
  Eigen::Map<Eigen::VectorXd> out(u, 1);
  return static_cast<int>(k.c3.step(Eigen::Map<const Eigen::VectorXd>(x, 4), t, out));
}

// a transition the robot made: handed to the learner through the sample ring
void controller_observe(void* c, const double* x, const double* u, const double* x_next) {
  Controller& k = *static_cast<Controller*>(c);
  k.c3.observe(Eigen::Map<const Eigen::VectorXd>(x, 4), Eigen::Map<const Eigen::VectorXd>(u, 1),
               Eigen::Map<const Eigen::VectorXd>(x_next, 4));
}

// the residual the controller runs with (2 numbers: the walls' offsets the learner found)
void controller_residual(void* c, double* r) {
  Controller& k = *static_cast<Controller*>(c);
  Eigen::Map<Eigen::VectorXd> out(r, 2);
  k.learner.channel().read(out);
}

}  // extern "C"
