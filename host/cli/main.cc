// impulse: the command-line front end. The subcommands live in their groups'
// files (commands.h); this file parses, dispatches and reports errors.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <string>

#include "host/batch/qp_batch.h"
#include "host/cli/commands.h"
#include "solvers/error.h"
#include "host/batch/lane_kernels.h"

using namespace impulse;

namespace {

std::string capabilities() {
  const cuda::DeviceInfo d = cuda::device_info();
#ifdef IMPULSE_CUDA_ARCHS
  const char* archs = IMPULSE_CUDA_ARCHS;
#else
  const char* archs = "";
#endif
  std::string s = "cuda kernels: " + (d.built ? "built (" + std::string(archs) + ")" : std::string("not built"));
  if (d.built) {
    if (d.count > 0)
      s += "\ncuda device: " + d.name + " (" + std::to_string(d.count) + " present)";
    else
      s += "\ncuda device: none (" + d.reason + ")";
  }
  s += "\ncpu threads: " + std::to_string(resolve_threads(0));
  std::string sets;
  for (LaneIsa isa : supported_lane_isas()) sets += (sets.empty() ? "" : ", ") + std::string(to_string(isa));
  s += "\ncpu lanes: " + std::string(to_string(lane_isa())) + ", " + std::to_string(lane_bytes() / 8) +
       " doubles / " + std::to_string(lane_bytes() / 4) + " floats per vector (this CPU and build: " + sets +
       "; IMPULSE_LANES picks one)";
  return s;
}

// Every (sub)command's help ends with its exit codes: the common ones and its own.
void add_exit_codes(CLI::App* app, const std::string& own) {
  app->footer("Exit codes: 0 done" + own +
              "; 2 a usage error (one line naming the option) or an error of the input or the run (one line "
              "'impulse: error: ...' naming the file, item or option)");
  for (CLI::App* sub : app->get_subcommands({})) add_exit_codes(sub, "");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"impulse: batched conic-QP and LCP solvers for learning contact dynamics"};
  app.require_subcommand(0, 1);
  // every option's help shows its default (the value it is bound to when the command is built)
  app.option_defaults()->always_capture_default();
  bool version = false;
  app.add_flag("--version", version, "print the version and this build's capabilities");

  cli::Commands commands;
  cli::add_solve_commands(app, commands);
  cli::add_learn_commands(app, commands);
  cli::add_control_commands(app, commands);
  cli::add_sweep_commands(app, commands);
  cli::add_impact_commands(app, commands);
  cli::add_plan_commands(app, commands);

  add_exit_codes(&app, "");
  for (const cli::Command& c : commands)
    if (!c.exit_codes.empty()) add_exit_codes(c.app, c.exit_codes);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    // one line naming the option, exit code 2 (as impulse's own errors)
    std::fprintf(stderr, "impulse: error: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    if (version) {
      std::printf("impulse %s\n%s\n", IMPULSE_VERSION, capabilities().c_str());
      return 0;
    }
    for (const cli::Command& c : commands)
      if (c.app->parsed()) return c.run();
    std::cout << app.help();
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "impulse: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // a file system or allocation failure: still a message, not an abort
    std::fprintf(stderr, "impulse: error: %s\n", e.what());
    return 2;
  }
}
