// The impact group: impulse impact fit|eval|learn|figures (host/impact/impact_report.h).
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "host/cli/commands.h"
#include "host/impact/impact_report.h"
#include "solvers/error.h"

namespace impulse::cli {

void add_impact_commands(CLI::App& app, Commands& out) {
  auto* im = app.add_subcommand("impact", "planar impact models (Fazeli et al. 2017): fit, eval, learn, figures");
  im->require_subcommand(1);
  struct Args {
    ImpactStudyOptions o;
    std::string sizes;
  };
  auto a = std::make_shared<Args>();
  a->o.figure_script = source_file("host/impact/impact_figures.py");
  auto common = [&](CLI::App* c, bool data) {
    if (data) c->add_option("--data", a->o.data, "impacts (.npz), e.g. ../shared/data/planar_impact/ellipse_impacts.npz")->required();
    c->add_option("--out", a->o.out, "the study folder (shared by fit, eval, learn, figures)")->required();
    c->add_option("--seed", a->o.seed, "seed of the split and the resamples");
    auto* tf = c->add_option("--test-fraction", a->o.test_fraction, "impacts of --data held out for testing")
                   ->check(CLI::Range(0.01, 0.99));
    if (data)
      c->add_option("--test-data", a->o.test_data,
                    "impacts (.npz, --data's format) to score instead: every impact of --data then trains and "
                    "every impact of this file is tested")
          ->excludes(tf);
    c->add_option("--threads", a->o.threads, "CPU threads (0 = all cores)")->check(CLI::NonNegativeNumber);
    c->add_option("--backend", a->o.backend, "cpu | cuda: where the batches are solved (the Drumwright-Shell and IRB QPs, the AP LCPs)")
        ->check(CLI::IsMember({"cpu", "cuda"}));
  };
  auto* fit = im->add_subcommand("fit", "identify (mu, eps) of the six analytical models: Table 1");
  common(fit, true);
  fit->add_option("--k", a->o.k, "training impacts per identification")->check(CLI::PositiveNumber);
  fit->add_option("--resamples", a->o.resamples, "resamples m")->check(CLI::PositiveNumber);
  fit->add_option("--identify", a->o.identify_method,
                  "auto | search: how the grid's best point is refined (auto: Gauss-Newton on the gradients of the "
                  "four models that have them, pattern search for mirtich and wang-mason; search: pattern search for all)")
      ->check(CLI::IsMember({"auto", "search"}));
  out.push_back({fit, [a] {
                   impact_fit(a->o, std::cout);
                   return 0;
                 }});
  auto* ev = im->add_subcommand("eval", "the fitted models, best post hoc and the IRB bound on the test impacts");
  common(ev, true);
  out.push_back({ev, [a] {
                   impact_eval(a->o, std::cout);
                   return 0;
                 }});
  auto* le = im->add_subcommand("learn", "the GP models (Class I and II) and their learning curves");
  common(le, true);
  le->add_option("--train", a->o.train_size, "training impacts of the main comparison")->check(CLI::PositiveNumber);
  le->add_option("--sizes", a->sizes, "learning-curve sizes, e.g. 10,25,50,100,200,300,450,600");
  le->add_option("--curve-seeds", a->o.curve_seeds, "seeds per learning-curve point")->check(CLI::PositiveNumber);
  le->add_option("--gp-iterations", a->o.gp_iterations, "L-BFGS-B iterations per GP fit")->check(CLI::PositiveNumber);
  out.push_back({le, [a] {
                   if (!a->sizes.empty()) {
                     a->o.sizes.clear();
                     std::stringstream ss(a->sizes);
                     std::string item;
                     while (std::getline(ss, item, ',')) {
                       try {
                         size_t used = 0;
                         a->o.sizes.push_back(std::stoi(item, &used));
                         if (used != item.size()) throw std::invalid_argument(item);
                       } catch (const std::exception&) {
                         throw Error("--sizes: \"" + item + "\" is not a number");
                       }
                     }
                   }
                   impact_learn(a->o, std::cout);
                   return 0;
                 }});
  auto* fg = im->add_subcommand("figures", "draw the study's figures (matplotlib)");
  common(fg, false);
  out.push_back({fg, [a] {
                   impact_figures(a->o, std::cout);
                   return 0;
                 }});
}

}  // namespace impulse::cli
