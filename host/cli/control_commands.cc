// The control group: mpc-demo, the closed-loop C3 controller with online residual
// learning in simulation (host/control/mpc_demo.h).
#include <iostream>
#include <memory>
#include <string>

#include "host/cli/commands.h"
#include "host/control/mpc_demo.h"

namespace impulse::cli {

void add_control_commands(CLI::App& app, Commands& out) {
  struct MpcArgs {
    std::string task = "cartpole", adapt = "on", out;
  };
  auto a = std::make_shared<MpcArgs>();
  auto* mpc = app.add_subcommand("mpc-demo", "closed-loop C3 MPC with online residual learning, in simulation");
  mpc->add_option("--task", a->task, "cartpole | ball-rolling")->check(CLI::IsMember({"cartpole", "ball-rolling"}));
  mpc->add_option("--adapt", a->adapt, "on | off: learn the contact residual online")
      ->check(CLI::IsMember({"on", "off"}));
  mpc->add_option("--out", a->out, "CSV file to write (trajectory, residual, loss history)")->required();
  out.push_back({mpc, [a] { return run_mpc_demo(a->task, a->adapt == "on", a->out, std::cerr); }});
}

}  // namespace impulse::cli
