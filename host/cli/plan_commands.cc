// The plan command: impulse plan --task capsule-move (host/planning/plan_report.h).
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "host/cli/commands.h"
#include "host/planning/plan_report.h"
#include "solvers/error.h"

namespace impulse::cli {

namespace {

Eigen::Vector3d parse_point(const std::string& text, const std::string& what) {
  std::stringstream ss(text);
  Eigen::Vector3d p;
  std::string item;
  int i = 0;
  while (std::getline(ss, item, ',')) {
    if (i == 3) throw Error(what + ": expected x,y,z, got '" + text + "'");
    try {
      size_t used = 0;
      p(i) = std::stod(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw Error(what + ": '" + item + "' is not a number (expected x,y,z in metres)");
    }
    if (!std::isfinite(p(i))) throw Error(what + ": '" + item + "' is not finite");
    ++i;
  }
  if (i != 3) throw Error(what + ": expected x,y,z, got '" + text + "'");
  return p;
}

}  // namespace

void add_plan_commands(CLI::App& app, Commands& out) {
  auto* c = app.add_subcommand("plan", "contact-invariant optimization: plan a hand moving a capsule, replay it twice, check it");
  struct Args {
    PlanRunOptions o;
    std::string task = "capsule-move", target;
  };
  auto a = std::make_shared<Args>();
  a->o.figure_script = source_file("host/planning/plan_figures.py");
  c->add_option("--task", a->task, "the task (capsule-move: the capsule from rest on the ground to --target)")
      ->check(CLI::IsMember({"capsule-move"}));
  c->add_option("--fingers", a->o.task.fingers, "fingertips N (2-5)")->check(CLI::Range(2, 5));
  c->add_option("--target", a->target, "the capsule's final centre x,y,z in metres (default 0.15,0,0.08)");
  c->add_option("--keyframes", a->o.task.keyframes, "keyframes over the motion")->check(CLI::Range(3, 20));
  c->add_option("--method", a->o.method, "cio (the repaired method) | notes (the 2017 notes' settings)")
      ->check(CLI::IsMember({"cio", "notes"}));
  c->add_option("--notes-iterations", a->o.notes_iterations, "quasi-Newton iterations of --method notes")
      ->check(CLI::PositiveNumber);
  c->add_option("--squeeze", a->o.hand.squeeze, "replay 2: how far a hand sphere on the surface presses in, m")
      ->check(CLI::Range(0.0, 0.004));
  c->add_option("--out", a->o.out, "the output folder")->required();
  c->add_flag("!--no-figures", a->o.figures, "skip the figures");
  out.push_back({c, [a] {
                   if (!a->target.empty()) a->o.task.target = parse_point(a->target, "--target");
                   const PlanRun r = run_plan(a->o, std::cout);
                   return r.check.success ? 0 : 5;
                 }});
}

}  // namespace impulse::cli
