#include "host/sweep/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>

#include "host/learning/evaluate.h"
#include "io/figure_script.h"
#include "io/json_file.h"
#include "io/files.h"
#include "solvers/error.h"

namespace fs = std::filesystem;

namespace impulse {

double t_quantile_975(int dof) {
  // Student's t, two-sided 95% (0.975 quantile), dof 1..30, then a few beyond
  static const double t[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                             2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                             2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof < 1) throw Error("t quantile: dof must be >= 1");
  if (dof <= 30) return t[dof - 1];
  if (dof <= 40) return 2.042 + (2.021 - 2.042) * (dof - 30) / 10.0;
  if (dof <= 60) return 2.021 + (2.000 - 2.021) * (dof - 40) / 20.0;
  if (dof <= 120) return 2.000 + (1.980 - 2.000) * (dof - 60) / 60.0;
  if (dof <= 1000) return 1.980 + (1.962 - 1.980) * (dof - 120) / 880.0;
  return 1.960;
}

const std::vector<std::string>& report_metrics() {
  static const std::vector<std::string> m = {"position_error_m", "rotation_error_deg", "penetration_m",
                                             "position_error_pct_width", "penetration_pct_width",
                                             "volume_error", "friction_error", "inertia_error"};
  return m;
}

namespace {

std::string value_str(const nlohmann::ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

std::string fmt(double x) {
  char b[40];
  std::snprintf(b, sizeof b, "%.6g", x);
  return b;
}

std::vector<std::string> group_keys_of(const std::vector<std::string>& grid_keys) {
  std::vector<std::string> g;
  for (const std::string& k : grid_keys)
    if (k != "seed") g.push_back(k);
  return g;
}

}  // namespace

std::vector<TableCell> sweep_table(const std::vector<SweepRow>& rows, const std::vector<std::string>& grid_keys) {
  const std::vector<std::string> gk = group_keys_of(grid_keys);
  // groups in the order their first run appears
  std::vector<nlohmann::ordered_json> groups;
  std::vector<std::vector<const SweepRow*>> members;
  for (const SweepRow& r : rows) {
    nlohmann::ordered_json g = nlohmann::ordered_json::object();
    for (const std::string& k : gk) g[k] = r.grid.contains(k) ? r.grid[k] : nlohmann::ordered_json();
    auto it = std::find(groups.begin(), groups.end(), g);
    if (it == groups.end()) {
      groups.push_back(g);
      members.emplace_back();
      it = groups.end() - 1;
    }
    if (r.status == "done") members[static_cast<size_t>(it - groups.begin())].push_back(&r);
  }
  std::vector<TableCell> cells;
  for (size_t gi = 0; gi < groups.size(); ++gi)
    for (const std::string& m : report_metrics()) {
      std::vector<double> x;
      for (const SweepRow* r : members[gi])
        if (r->metrics.contains(m) && r->metrics[m].is_number()) x.push_back(r->metrics[m].get<double>());
      bool any_metric = false;
      for (const SweepRow& r : rows) any_metric = any_metric || r.metrics.contains(m);
      if (!any_metric) continue;
      TableCell c;
      c.group = groups[gi];
      c.metric = m;
      c.n = static_cast<int>(x.size());
      if (x.empty()) {
        c.center = c.lo = c.hi = NAN;
        c.interval = "none";
        cells.push_back(c);
        continue;
      }
      const bool positive = std::all_of(x.begin(), x.end(), [](double v) { return v > 0 && std::isfinite(v); });
      std::vector<double> y = x;
      if (positive)
        for (double& v : y) v = std::log(v);
      double mean = 0;
      for (double v : y) mean += v;
      mean /= static_cast<double>(y.size());
      double hw = NAN;
      if (y.size() > 1) {
        double ss = 0;
        for (double v : y) ss += (v - mean) * (v - mean);
        const double sd = std::sqrt(ss / static_cast<double>(y.size() - 1));
        hw = t_quantile_975(static_cast<int>(y.size()) - 1) * sd / std::sqrt(static_cast<double>(y.size()));
      }
      if (positive) {
        c.center = std::exp(mean);
        c.lo = std::exp(mean - hw);
        c.hi = std::exp(mean + hw);
        c.interval = y.size() > 1 ? "log-normal" : "none";
      } else {
        c.center = mean;
        c.lo = mean - hw;
        c.hi = mean + hw;
        c.interval = y.size() > 1 ? "normal" : "none";
      }
      cells.push_back(c);
    }
  return cells;
}

std::string table_csv(const std::vector<TableCell>& cells, const std::vector<std::string>& gk) {
  std::ostringstream s;
  for (const std::string& k : gk) s << k << ",";
  s << "metric,n,mean,ci_low,ci_high,interval\n";
  for (const TableCell& c : cells) {
    for (const std::string& k : gk) s << (c.group.contains(k) ? value_str(c.group[k]) : "") << ",";
    s << c.metric << "," << c.n << "," << fmt(c.center) << "," << fmt(c.lo) << "," << fmt(c.hi) << "," << c.interval
      << "\n";
  }
  return s.str();
}

std::string table_markdown(const std::vector<TableCell>& cells, const std::vector<std::string>& gk) {
  std::vector<std::string> metrics;
  for (const TableCell& c : cells)
    if (std::find(metrics.begin(), metrics.end(), c.metric) == metrics.end()) metrics.push_back(c.metric);
  std::ostringstream s;
  s << "Geometric mean [95% interval] over seeds (log-normal; \"(normal)\": arithmetic mean and t interval where a "
       "value is <= 0).\n\n|";
  for (const std::string& k : gk) s << " " << k << " |";
  s << " n |";
  for (const std::string& m : metrics) s << " " << m << " |";
  s << "\n|";
  for (size_t i = 0; i < gk.size() + 1 + metrics.size(); ++i) s << "---|";
  s << "\n";
  std::vector<nlohmann::ordered_json> groups;
  for (const TableCell& c : cells)
    if (std::find(groups.begin(), groups.end(), c.group) == groups.end()) groups.push_back(c.group);
  for (const auto& g : groups) {
    s << "|";
    for (const std::string& k : gk) s << " " << (g.contains(k) ? value_str(g[k]) : "") << " |";
    int n = 0;
    for (const TableCell& c : cells)
      if (c.group == g) n = std::max(n, c.n);
    s << " " << n << " |";
    for (const std::string& m : metrics) {
      const auto it = std::find_if(cells.begin(), cells.end(), [&](const TableCell& c) { return c.group == g && c.metric == m; });
      if (it == cells.end() || it->n == 0) {
        s << " – |";
        continue;
      }
      char b[120];
      if (it->interval == "none")
        std::snprintf(b, sizeof b, " %.4g |", it->center);
      else
        std::snprintf(b, sizeof b, " %.4g [%.4g, %.4g]%s |", it->center, it->lo, it->hi,
                      it->interval == "normal" ? " (normal)" : "");
      s << b;
    }
    s << "\n";
  }
  return s.str();
}

namespace {

// "" = the run's first test toss; else a list as `impulse eval --subset` takes it
// (rollout_run checks each index against the data)
std::vector<int> chosen_tosses(const std::string& spec, const std::string& run_dir) {
  const nlohmann::json cfg = read_json_file((fs::path(run_dir) / "config.json").string());
  TossSplit split;
  try {
    split.test = cfg.at("split").at("test").get<std::vector<int>>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(run_dir + "/config.json: no test split (" + e.what() + ")");
  }
  if (spec.empty()) return split.test.empty() ? std::vector<int>{} : std::vector<int>{split.test.front()};
  if (spec == "all") throw Error("report --subset: give a list of tosses (3,17) or test, not all");
  return select_tosses(spec, std::numeric_limits<int>::max(), split, true);
}

// A run's training curve as the figure script draws it: its history.csv, the method
// whose loss it trained (the loss differs between methods: one axes each), what picked
// its best epoch (select: the validation loss, or for --select rollout the validation
// rollouts' position error), the epoch it picked (params.json's best_epoch, the
// trainer's choice) and how many validation tosses it had (none: no validation curve).
// What a run's files do not say is left out; the script then works from the history
// alone (the first epoch with the lowest validation figure, the trainer's rule).
nlohmann::json history_entry(const fs::path& dir, const std::string& label, const std::string& series) {
  nlohmann::json h = {{"label", label}, {"series", series}, {"csv", (dir / "history.csv").string()}};
  const auto read = [&](const char* name) {
    const fs::path p = dir / name;
    nlohmann::json j;
    if (fs::is_regular_file(p)) {
      try {
        j = read_json_file(p.string());
      } catch (const Error&) {
        j = nlohmann::json();  // a damaged file: the history alone
      }
    }
    return j.is_object() ? j : nlohmann::json::object();
  };
  const nlohmann::json cfg = read("config.json"), params = read("params.json");
  std::string method = cfg.value("method", params.value("method", std::string()));
  const std::string system = cfg.value("system", std::string());
  if (!method.empty() && !system.empty()) method += " (" + system + ")";
  if (!method.empty()) h["method"] = method;
  h["select"] = cfg.value("select", std::string("loss"));
  if (params.contains("best_epoch") && params["best_epoch"].is_number_integer())
    h["best_epoch"] = params["best_epoch"].get<int>();
  if (cfg.contains("split") && cfg["split"].is_object() && cfg["split"].contains("valid") &&
      cfg["split"]["valid"].is_array())
    h["valid_tosses"] = cfg["split"]["valid"].size();
  return h;
}

// rollouts of the chosen tosses with one run; adds them to the manifest
void add_rollouts(const std::string& run_dir, const std::string& label, const std::string& tosses_spec,
                  const fs::path& out, int threads, nlohmann::json& manifest, std::vector<std::string>& files) {
  for (int k : chosen_tosses(tosses_spec, run_dir)) {
    EvalOptions eo;
    eo.run_dir = run_dir;
    eo.threads = threads;
    const std::string csv = (out / ("rollout_" + label + "_toss" + std::to_string(k) + ".csv")).string();
    rollout_run(eo, k, csv);
    files.push_back(csv);
    manifest["rollouts"].push_back({{"label", label + ", toss " + std::to_string(k)},
                                    {"csv", csv},
                                    {"png", (out / ("rollout_" + label + "_toss" + std::to_string(k))).string()}});
  }
}

}  // namespace

ReportResult make_report(const ReportOptions& opt, std::ostream& log) {
  if (opt.sweep_dir.empty() == opt.run_dir.empty()) throw Error("report: give --sweep DIR or --run DIR (one of them)");
  if (opt.out.empty()) throw Error("report: --out is required");
  std::error_code ec;
  fs::create_directories(opt.out, ec);
  const fs::path out = fs::absolute(fs::path(opt.out)).lexically_normal();  // the figure script may run elsewhere
  if (ec) throw Error("--out " + opt.out + ": cannot create it (" + ec.message() + ")");
  ReportResult res;
  nlohmann::json manifest = {{"out", out.string()}, {"histories", nlohmann::json::array()},
                             {"rollouts", nlohmann::json::array()}, {"metrics", nlohmann::json::array()}};

  if (!opt.sweep_dir.empty()) {
    const std::vector<SweepRow> rows = collect_sweep_rows(opt.sweep_dir);
    const nlohmann::json rec = read_json_file((fs::path(opt.sweep_dir) / "sweep.json").string());
    const std::vector<std::string> grid_keys = rec.at("grid_keys").get<std::vector<std::string>>();
    const std::vector<std::string> gk = group_keys_of(grid_keys);
    const std::vector<TableCell> cells = sweep_table(rows, grid_keys);
    write_text_atomic((out / "table.csv").string(), table_csv(cells, gk));
    write_text_atomic((out / "table.md").string(), table_markdown(cells, gk));
    res.files.push_back((out / "table.csv").string());
    res.files.push_back((out / "table.md").string());
    int done = 0, failed = 0;
    for (const SweepRow& r : rows) {
      done += r.status == "done";
      failed += r.status == "failed";
    }
    log << "report: " << rows.size() << " runs (" << done << " done, " << failed << " failed, "
        << rows.size() - static_cast<size_t>(done + failed) << " not run), " << cells.size() << " table cells\n";
    manifest["table"] = (out / "table.csv").string();
    manifest["x_key"] = std::find(gk.begin(), gk.end(), "tosses") != gk.end() ? "tosses" : "";
    std::vector<std::string> series;
    for (const std::string& k : gk)
      if (k != "tosses") series.push_back(k);
    manifest["series_keys"] = series;
    for (const std::string& m : report_metrics())
      if (std::any_of(cells.begin(), cells.end(), [&](const TableCell& c) { return c.metric == m; }))
        manifest["metrics"].push_back(m);
    // training curves of every finished run; rollouts of each series' largest-data,
    // first-seed run
    std::map<std::string, std::pair<double, const SweepRow*>> pick;
    for (const SweepRow& r : rows) {
      if (r.status != "done") continue;
      const fs::path dir = fs::absolute(fs::path(opt.sweep_dir)) / "runs" / r.name;
      std::string series_label;
      for (const std::string& k : series) series_label += (series_label.empty() ? "" : ", ") + value_str(r.grid[k]);
      if (series_label.empty()) series_label = "runs";
      manifest["histories"].push_back(history_entry(dir, r.name, series_label));
      const double size = r.grid.contains("tosses") && r.grid["tosses"].is_number() ? r.grid["tosses"].get<double>() : 0;
      auto it = pick.find(series_label);
      if (it == pick.end() || size > it->second.first) pick[series_label] = {size, &r};
    }
    for (const auto& [label, p] : pick) {
      std::string safe = p.second->name;
      add_rollouts((fs::path(opt.sweep_dir) / "runs" / p.second->name).string(), safe, opt.tosses, out, opt.threads,
                   manifest, res.files);
    }
  } else {
    fs::path dir = fs::absolute(fs::path(opt.run_dir)).lexically_normal();
    if (dir.filename().empty()) dir = dir.parent_path();  // "runs/a/": its name is "a"
    if (!fs::exists(dir / "history.csv")) throw Error(opt.run_dir + ": no history.csv (not a finished run directory)");
    manifest["histories"].push_back(history_entry(dir, dir.filename().string(), dir.filename().string()));
    add_rollouts(opt.run_dir, "run", opt.tosses, out, opt.threads, manifest, res.files);
  }
  write_text_atomic((out / "figures.json").string(), manifest.dump(2) + "\n");
  res.files.push_back((out / "figures.json").string());

  // figures: matplotlib, through the script
  if (opt.figure_script.empty() || !fs::exists(opt.figure_script)) {
    res.note = "figure script not found (" + opt.figure_script + ")";
  } else if (const std::string py = python_with_matplotlib(opt.python); py.empty()) {
    res.note = opt.python + " with matplotlib not found (Debian: apt-get install python3-matplotlib)";
  } else {
    log.flush();
    // the figures the script reports as written and that exist (a figure it skips,
    // e.g. a metric no run has, is not counted)
    const std::vector<std::string> figs =
        run_figure_script(py, opt.figure_script, {(out / "figures.json").string()});
    res.files.insert(res.files.end(), figs.begin(), figs.end());
    res.figures = true;
    log << "report: " << figs.size() << " figure files\n";
  }
  if (!res.figures) log << "report: figures skipped: " << res.note << "; the tables and CSVs are written\n";
  return res;
}

}  // namespace impulse
