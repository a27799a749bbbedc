// The command line, one file per group of subcommands. Each group adds its
// subcommands and their options to the app and hands back, for each, the function
// that runs it once the options are parsed. This room is the only place that
// parses command-line options; the rooms below take plain settings structs.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <utility>
#include <string>
#include <vector>

namespace impulse {
struct TrainConfig;
}

namespace impulse::cli {

// A file the CLI reads at run time (a figure script, the built-in data set), by its
// path in the source tree: in an installed impulse, under P/share/impulse/ beside the
// binary's P/bin/; else under the source directory the binary was built from; else
// relative to the working directory.
inline std::string source_file(const std::string& relative) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path p = exe.parent_path().parent_path() / "share" / "impulse" / relative;
    if (std::filesystem::exists(p, ec)) return p.string();
  }
#ifdef IMPULSE_SOURCE_DIR
  const std::string p = std::string(IMPULSE_SOURCE_DIR) + "/" + relative;
  if (std::ifstream(p).good()) return p;
#endif
  return relative;
}

struct Command {
  Command(CLI::App* a, std::function<int()> r, std::string codes = {})
      : app(a), run(std::move(r)), exit_codes(std::move(codes)) {}
  CLI::App* app = nullptr;   // the subcommand
  std::function<int()> run;  // its action; returns the exit code, throws impulse::Error
  std::string exit_codes;    // its own exit codes besides 0 and 2, for its help ("; 1 ...")
};
using Commands = std::vector<Command>;

// solve_commands.cc: solve-batch, generate, bench-solvers (host/batch)
void add_solve_commands(CLI::App& app, Commands& out);
// learn_commands.cc: train, eval, rollout, generate-tosses (host/learning, host/dynamics)
void add_learn_commands(CLI::App& app, Commands& out);
// learn_commands.cc: train's options, for the train subcommand and for checking a
// sweep's run command lines ({"train", "--method", ...}) before any run starts:
// throws Error with CLI11's or the trainer's reason for the first bad option
void add_train_options(CLI::App* app, TrainConfig& config);
void check_train_arguments(const std::vector<std::string>& args);
// control_commands.cc: mpc-demo (host/control)
void add_control_commands(CLI::App& app, Commands& out);
// sweep_commands.cc: sweep, report (host/sweep)
void add_sweep_commands(CLI::App& app, Commands& out);
// impact_commands.cc: impact fit|eval|learn|figures (host/impact)
void add_impact_commands(CLI::App& app, Commands& out);
// plan_commands.cc: plan (host/planning)
void add_plan_commands(CLI::App& app, Commands& out);

}  // namespace impulse::cli
