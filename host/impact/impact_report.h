// The planar-impact study as commands over one output folder (impulse impact ...):
//
//   fit      Table 1: (μ, ε) of each analytical model from k training impacts, m
//            resamples (mean ± std); fit_<model>.json per model (a rerun skips models
//            already fitted with the same settings), table1.csv / table1.md; Fig. 6's
//            data: AP Newton's best (μ, ε) for each training impact alone and its
//            impulse error, params_each.csv
//   eval     the fitted models (their mean μ, ε) on the test impacts, the best post hoc
//            model (per impact the best of the six) and the IRB bound: eval.csv,
//            eval.md, per-impact errors in errors_test.csv, the impulse-space picture
//            of a few test impacts (ellipse_<i>.csv)
//   learn    the learned models at N training impacts (default 450) against the same
//            references: learned.csv / learned.md; learning curves over training-set
//            sizes and seeds: learning_curve.csv (each point kept as it finishes; a
//            rerun continues)
//   figures  PNG/SVG of the above by host/impact/impact_figures.py (matplotlib); its
//            last line says how many ("impact figures: wrote N files to OUT")
//
// Test impacts: by default a seeded `test_fraction` of --data, the rest trains. With
// test_data (--test-data FILE.npz, same format) every impact of --data trains (fit's
// resamples, learn's training sets, the Class II base model) and every impact of
// test_data is scored; the per-impact CSVs then number test impacts by their row in
// test_data, and the Markdown tables name both files.
//
// OUT/study.json records the data, test data, seed and split; another data set, test
// set or seed in the same folder is refused, as is a second writer (a lock). Files are
// written atomically.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace impulse {

struct ImpactStudyOptions {
  std::string data, out;
  std::string test_data;  // empty: hold out test_fraction of data; else score this file's impacts
  uint64_t seed = 0;
  double test_fraction = 0.3;
  int k = 120, resamples = 100;        // fit
  std::string identify_method = "auto";  // fit: auto | search (IdentifyOptions::method; gradient would refuse mirtich)
  int train_size = 450;                // learn
  std::vector<int> sizes = {10, 25, 50, 100, 200, 300, 450, 600};
  int curve_seeds = 3;
  int threads = 0;
  std::string backend = "cpu";         // cpu | cuda: where the QP batches (Drumwright-Shell, IRB) are solved
  int gp_iterations = 100, gp_restarts = 1;
  std::string figure_script, python = "python3";
};

void impact_fit(const ImpactStudyOptions& opt, std::ostream& log);
void impact_eval(const ImpactStudyOptions& opt, std::ostream& log);
void impact_learn(const ImpactStudyOptions& opt, std::ostream& log);
// returns false (and says why in `log`) when python3 with matplotlib is missing
bool impact_figures(const ImpactStudyOptions& opt, std::ostream& log);

}  // namespace impulse
