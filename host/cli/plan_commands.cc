// The plan command: impulse plan --task capsule-move (host/planning/plan_report.h).
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

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
    std::string task = "capsule-move", target, targets;
    int threads = 0;
    double turn_deg = 90;
  };
  auto a = std::make_shared<Args>();
  a->o.figure_script = source_file("host/planning/plan_figures.py");
  c->add_option("--task", a->task,
                "the task (capsule-move: the capsule from rest on the ground to --target; capsule-turn: lifted above its "
                "start to --target's height (default 0.08) and turned by --turn about the vertical)")
      ->check(CLI::IsMember({"capsule-move", "capsule-turn"}));
  auto* turn = c->add_option("--turn", a->turn_deg, "capsule-turn: the turn about the vertical, degrees (-180 to 180, not 0)")
                   ->check(CLI::Range(-180.0, 180.0));
  c->add_option("--fingers", a->o.task.fingers, "fingertips N (2-5)")->check(CLI::Range(2, 5));
  auto* one = c->add_option("--target", a->target,
                             "the capsule's final centre x,y,z in metres (default 0.15,0,0.08); supported: 0.05-0.25 m from the "
                             "start horizontally, any direction, height 0.04-0.12 m");
  c->add_option("--targets", a->targets,
                "a CSV file of targets, one x,y,z per row (optional header x,y,z): a plan each, in parallel, into "
                "OUT/target_<n>/, and OUT/targets.csv")
      ->excludes(one);
  c->add_option("--threads", a->threads, "with --targets: plans at once (0: all cores)")->check(CLI::NonNegativeNumber);
  c->add_option("--keyframes", a->o.task.keyframes, "keyframes over the motion")->check(CLI::Range(3, 20));
  c->add_option("--method", a->o.method, "cio (the repaired method) | notes (the 2017 notes' settings)")
      ->check(CLI::IsMember({"cio", "notes"}));
  c->add_option("--notes-iterations", a->o.notes_iterations, "quasi-Newton iterations of --method notes")
      ->check(CLI::PositiveNumber);
  c->add_option("--starts", a->o.starts, "starts tried in turn until a plan is valid (the first valid plan is kept; --method cio)")
      ->check(CLI::Range(1, 16));
  c->add_option("--perturb", a->o.perturb,
                "for sensitivity studies: the starts' variables scaled by 1 +- this (alternating) and the weights by 1 + this");
  c->add_option("--squeeze", a->o.hand.squeeze, "replay 2: how far a hand sphere on the surface presses in, m")
      ->check(CLI::Range(0.0, 0.004));
  c->add_option("--out", a->o.out, "the output folder")->required();
  c->add_flag("!--no-figures", a->o.figures, "skip the figures");
  out.push_back({c, [a, turn] {
                   if (a->task != "capsule-turn" && turn->count() > 0) throw Error("--turn: only capsule-turn turns (--task capsule-turn)");
                   if (a->task == "capsule-turn") {
                     if (a->turn_deg == 0) throw Error("--turn: capsule-turn needs a turn other than 0 (capsule-move has none)");
                     a->o.task.turn = a->turn_deg * M_PI / 180;
                     a->o.task.target = a->o.task.start + Eigen::Vector3d(0, 0, 0.05);  // --target below may set the height
                     if (!a->targets.empty()) throw Error("--targets: capsule-turn turns in place; give its height with --target");
                   }
                   if (!a->targets.empty()) {
                     std::vector<int> rows;
                     const std::vector<Eigen::Vector3d> targets = read_targets(a->targets, &rows);
                     std::vector<std::string> names;
                     for (int r : rows) names.push_back(a->targets + ": row " + std::to_string(r));
                     const std::vector<PlanRun> runs = run_plan_targets(a->o, targets, a->threads, std::cout, names);
                     for (const PlanRun& r : runs)
                       if (!r.check.success) return 5;
                     return 0;
                   }
                   if (!a->target.empty()) a->o.task.target = parse_point(a->target, "--target");
                   const PlanRun r = run_plan(a->o, std::cout);
                   return r.check.success ? 0 : 5;
                 }});
}

}  // namespace impulse::cli
