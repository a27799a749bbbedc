// Reports: a sweep's results as tables and the papers' figures, or one run's
// training curve and rollout.
//
// From a sweep directory (host/sweep/sweep.h), runs are grouped by every grid key
// but the seed (e.g. method × tosses). Per group and metric the table gives the
// number of finished runs n and, under the papers' log-normal assumption, the
// geometric mean exp(mean log x) with the 95% interval exp(mean log x ± t·s/√n)
// (s: the standard deviation of log x, t: Student's 0.975 quantile with n − 1
// degrees of freedom). A metric with a value ≤ 0 in a group (a penetration of
// exactly 0) has no logarithm: that group gets the arithmetic mean and the normal
// t interval, and says so in its `interval` column.
//
// Files in OUT: table.csv (one row per group and metric), table.md (one row per
// group), figures.json (what the figure script draws), and, drawn by
// host/sweep/report_figures.py with matplotlib: fig_<metric>.png/.svg (metric
// against data size, log scales, one line and band per method), rollout_*.png
// (position beside rotation, true against predicted, of chosen tosses; their CSVs
// beside) and training_curves.png/.svg (one axes per method's loss, train and
// validation on it, each run's best epoch from its params.json marked; figures.json
// gives the script each run's method, selection rule, best epoch and validation
// tosses). Without python3 and matplotlib the tables are still
// written and the report says the figures were skipped. The script runs as a child
// that dies with the report (kill -9 included) and writes each figure whole or not
// at all; a figure it cannot write (a full disk) is an Error naming the script and
// the file (io/figure_script.h).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/sweep/sweep.h"

namespace impulse {

struct TableCell {
  nlohmann::ordered_json group;  // the grid values of the group (not the seed)
  std::string metric;
  int n = 0;
  double center = 0, lo = 0, hi = 0;
  std::string interval;  // "log-normal" | "normal" (a value <= 0) | "none" (n = 1)
};

// Student's t 0.975 quantile for dof >= 1 (exact to 4 digits; 1.96 past 1000)
double t_quantile_975(int dof);

// The metrics a report shows, in this order, when the runs have them.
const std::vector<std::string>& report_metrics();

std::vector<TableCell> sweep_table(const std::vector<SweepRow>& rows, const std::vector<std::string>& grid_keys);
std::string table_csv(const std::vector<TableCell>& cells, const std::vector<std::string>& group_keys);
std::string table_markdown(const std::vector<TableCell>& cells, const std::vector<std::string>& group_keys);

struct ReportOptions {
  std::string sweep_dir;      // a sweep directory, or
  std::string run_dir;        // one run (its training curve and a rollout)
  std::string out;
  std::string tosses;         // tosses to roll out, "3,17"; "" = the first test toss
  std::string figure_script;  // report_figures.py
  std::string python = "python3";
  int threads = 0;
};

struct ReportResult {
  // every file written into OUT: tables, CSVs, figures.json, the figures
  std::vector<std::string> files;
  bool figures = false;
  std::string note;  // why figures were skipped
};

ReportResult make_report(const ReportOptions& opt, std::ostream& log);

}  // namespace impulse
