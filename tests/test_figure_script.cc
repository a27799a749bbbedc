// The figure scripts' interpreter and runner (io/figure_script.h), and the report's
// figures through it (host/sweep/report.h): the files it counts, what its training
// curves show (read back from the PNG's Description), a figure that cannot be written,
// a report killed with kill -9.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "host/sweep/report.h"
#include "io/figure_script.h"
#include "tests/figure_description.h"
#include "tests/test_util.h"

namespace impulse {
namespace {

bool imports_matplotlib(const std::string& python) {
  return std::system((shell_quote(python) + " -c 'import matplotlib' >/dev/null 2>&1").c_str()) == 0;
}

TEST(FigureScript, ShellQuoting) {
  EXPECT_EQ(shell_quote("plain"), "'plain'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(std::system(("test " + shell_quote("a b'c") + " = \"a b'c\"").c_str()), 0);
}

// An interpreter named explicitly is taken as it is or not at all; the default
// "python3" falls back to Debian's /usr/bin/python3 when the first python3 on PATH
// (pyenv, a virtualenv) does not see apt-get's python3-matplotlib.
TEST(FigureScript, FindsAnInterpreterWithMatplotlib) {
  EXPECT_EQ(python_with_matplotlib("/nonexistent/python3"), "");
  const std::string py = python_with_matplotlib("python3");
  if (!py.empty()) {
    EXPECT_TRUE(imports_matplotlib(py)) << py;
  }
  if (imports_matplotlib("/usr/bin/python3")) {
    EXPECT_FALSE(py.empty());
  }
  if (imports_matplotlib("python3")) {
    EXPECT_EQ(py, "python3");
  }
  if (py.empty()) std::printf("[ info ] no python3 with matplotlib here: figures are skipped\n");
}

TEST(FigureScript, AFailingScriptIsAnErrorNamingIt) {
  testing::expect_error([] { run_figure_script("/bin/sh", "/nonexistent/figures.py", {"out dir"}); },
                        {"the figure script failed", "/nonexistent/figures.py", "'out dir'"});
  EXPECT_NO_THROW(run_figure_script("/bin/sh", "-c", {"exit 0"}));
}

namespace fs = std::filesystem;

// The script's last line of standard error is the reason in the Error (one line);
// the files it reports through IMPULSE_FIGURES_FD are returned when they exist.
TEST(FigureScript, TheErrorCarriesTheScriptsLastLineAndTheWrittenFilesAreReturned) {
  try {
    run_figure_script("/bin/sh", "-c", {"echo first >&2; echo 'the reason' >&2; exit 3"});
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    const std::string m = e.what();
    const std::string tail = "exit status 3): the reason";  // the last line only
    EXPECT_TRUE(m.size() > tail.size() && m.compare(m.size() - tail.size(), tail.size(), tail) == 0)
        << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  const std::string d = testing::fresh_dir("figscript_", "written");
  const std::string a = d + "/a b.png", missing = d + "/missing.svg";
  const std::vector<std::string> w = run_figure_script(
      "/bin/sh", "-c",
      {"touch \"$1\" && echo \"$1\" >&$IMPULSE_FIGURES_FD && echo \"$2\" >&$IMPULSE_FIGURES_FD && "
       "echo \"$1\" >&$IMPULSE_FIGURES_FD",
       "sh", a, missing});
  EXPECT_EQ(w, std::vector<std::string>{a});  // once, and only the file that exists
}

namespace {

// a finished run as `report --run` reads it, without rollouts (an empty test split):
// its figures are the training curves alone
std::string tiny_run(const std::string& name) {
  const std::string dir = testing::fresh_dir("figscript_", name);
  std::ofstream(dir + "/history.csv")
      << "epoch,train_loss,valid_loss\n0,1.0,1.1\n1,0.5,0.7\n2,0.3,0.6\n";
  std::ofstream(dir + "/config.json") << R"({"split": {"train": [0], "valid": [1], "test": []}})";
  return dir;
}

ReportOptions report_of(const std::string& run, const std::string& out) {
  ReportOptions o;
  o.run_dir = run;
  o.out = out;
  o.figure_script = std::string(IMPULSE_SOURCE_DIR) + "/host/sweep/report_figures.py";
  o.threads = 1;
  return o;
}

std::set<std::string> files_in(const std::string& dir) {
  std::set<std::string> f;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) f.insert(e.path().string());
  return f;
}

std::string bytes_of(const std::string& path) { return testing::read_text_file(path); }

// runs f in a forked child; returns what it wrote to the pipe it is given
std::string in_child(const std::function<std::string()>& f) {
  int p[2];
  if (::pipe(p) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    std::string r;
    try {
      r = f();
    } catch (const std::exception& e) {
      r = std::string("exception: ") + e.what();
    }
    (void)!::write(p[1], r.data(), r.size());
    ::_exit(0);
  }
  ::close(p[1]);
  std::string out;
  char b[4096];
  for (ssize_t n; (n = ::read(p[0], b, sizeof b)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(b, static_cast<size_t>(n));
  }
  ::close(p[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (!WIFEXITED(st)) out += " [child status " + std::to_string(st) + "]";
  return out;
}

}  // namespace

// Issue 50 item 10: "wrote N files" counted the tables and CSVs but not the figures.
// The report's files are the files really in OUT, figures included.
TEST(FigureScript, ReportCountsTheFilesItReallyWrote) {
  if (python_with_matplotlib("python3").empty())
    GTEST_SKIP() << "no python3 with matplotlib: no figures to count";
  const std::string run = tiny_run("count_run");
  const std::string out = testing::fresh_dir("figscript_", "count_out");
  std::ostringstream log;
  const ReportResult r = make_report(report_of(run, out), log);
  ASSERT_TRUE(r.figures) << r.note;
  const std::set<std::string> listed(r.files.begin(), r.files.end());
  EXPECT_EQ(listed.size(), r.files.size()) << "a file counted twice";
  EXPECT_EQ(listed, files_in(out)) << log.str();
  EXPECT_EQ(listed, (std::set<std::string>{out + "/figures.json", out + "/training_curves.png",
                                           out + "/training_curves.svg"}));
  for (const std::string& f : r.files) EXPECT_GT(fs::file_size(f), 100u) << f;
}

namespace {

// a run folder as `report --run` reads it (no rollouts: an empty test split)
std::string run_folder(const std::string& name, const std::string& history, const std::string& config,
                       const std::string& params) {
  const std::string dir = testing::fresh_dir("figscript_", name);
  std::ofstream(dir + "/history.csv") << history;
  std::ofstream(dir + "/config.json") << config;
  if (!params.empty()) std::ofstream(dir + "/params.json") << params;
  return dir;
}

bool has(const nlohmann::json& list, const std::string& item) {
  return list.is_array() && std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

// Issue 45: training curves put a run's train and validation losses on one axes per loss,
// mark the epoch the run kept (params.json's best_epoch: here chosen by validation
// rollouts, not where the validation loss is lowest), name the method, and say when a
// run has no validation curve.
TEST(FigureScript, TrainingCurvesShowTrainAndValidationOnOneAxesAndTheBestEpoch) {
  if (python_with_matplotlib("python3").empty()) GTEST_SKIP() << "no python3 with matplotlib: no figures";
  // the validation loss is lowest at epoch 2, the validation rollouts at epoch 1: the run kept 1
  const std::string run = run_folder(
      "curves_run",
      "epoch,train_loss,valid_loss,seconds,train_seconds,mean_qp_iterations,slowest_qp_iterations,"
      "slowest_qp_rho_updates,not_solved,valid_position_error_m\n"
      "0,0,1.0,0,0,10,0,0,0,0.05\n1,0.8,0.7,1,1,10,0,0,0,0.03\n2,0.5,0.6,1,1,10,0,0,0,0.04\n",
      R"({"method": "ccn", "system": "cube", "select": "rollout",
          "split": {"train": [0], "valid": [1, 2], "test": []}})",
      R"({"method": "ccn", "best_epoch": 1, "best_valid_position_error_m": 0.03})");
  const std::string out = testing::fresh_dir("figscript_", "curves_out");
  std::ostringstream log;
  ASSERT_TRUE(make_report(report_of(run, out), log).figures);
  const nlohmann::json d = testing::png_description(out + "/training_curves.png");
  ASSERT_TRUE(d.is_object()) << "no Description in training_curves.png";
  ASSERT_EQ(d["axes"].size(), 2u) << d.dump();  // the loss, and the rollouts that chose the epoch
  const nlohmann::json loss = testing::axes_titled(d, "ccn (cube): training and validation loss");
  ASSERT_TRUE(loss.is_object()) << d.dump();
  for (const char* entry : {"ccn (cube): train", "ccn (cube): validation", "best epoch 1 (lowest validation rollouts)"})
    EXPECT_TRUE(has(loss["legend"], entry)) << entry << " not in " << loss["legend"].dump();
  EXPECT_EQ(testing::line_labelled(loss, "ccn (cube): train").value("points", 0), 2) << "epochs 1-2 (0 is not trained)";
  EXPECT_EQ(testing::line_labelled(loss, "ccn (cube): validation").value("points", 0), 3) << "epochs 0-2";
  EXPECT_EQ(testing::line_labelled(loss, "best epoch 1 (").value("x", nlohmann::json()), nlohmann::json({1.0, 1.0}));
  EXPECT_EQ(testing::line_labelled(loss, "best epoch 1: ").value("x", nlohmann::json()),
            nlohmann::json({1.0, 1.0}))
      << "the marker on the validation curve";
  EXPECT_TRUE(has(loss["texts"], "best epoch 1"));
  EXPECT_TRUE(testing::line_labelled(loss, "best epoch 2").empty()) << "the lowest loss is not the run's choice";
  const nlohmann::json rollouts = testing::axes_titled(d, "ccn (cube): validation rollouts");
  ASSERT_TRUE(rollouts.is_object()) << d.dump();
  EXPECT_EQ(testing::line_labelled(rollouts, "ccn (cube): validation rollouts").value("points", 0), 3);
  EXPECT_FALSE(testing::line_labelled(rollouts, "best epoch 1").empty());

  // a run without validation tosses says so, and draws no validation curve
  const std::string bare = run_folder(
      "curves_bare", "epoch,train_loss,valid_loss\n0,0,0\n1,0.5,0\n2,0.4,0\n",
      R"({"method": "end-to-end", "split": {"train": [0, 1], "valid": [], "test": []}})",
      R"({"method": "end-to-end", "best_epoch": 0})");
  const std::string out2 = testing::fresh_dir("figscript_", "curves_bare_out");
  ASSERT_TRUE(make_report(report_of(bare, out2), log).figures);
  const nlohmann::json d2 = testing::png_description(out2 + "/training_curves.png");
  const nlohmann::json ax2 = testing::axes_titled(d2, "end-to-end: training and validation loss");
  ASSERT_TRUE(ax2.is_object()) << d2.dump();
  EXPECT_TRUE(has(ax2["texts"], "no validation curve: the run has no validation tosses")) << ax2.dump();
  EXPECT_TRUE(testing::line_labelled(ax2, "end-to-end: validation").empty()) << ax2.dump();
  EXPECT_EQ(testing::line_labelled(ax2, "end-to-end: train").value("points", 0), 2);
  EXPECT_FALSE(testing::line_labelled(ax2, "best epoch 0 (kept: no validation").empty()) << ax2.dump();

  // without params.json: the trainer's rule on the history (the first lowest validation loss)
  const std::string old = tiny_run("curves_old");
  const std::string out3 = testing::fresh_dir("figscript_", "curves_old_out");
  ASSERT_TRUE(make_report(report_of(old, out3), log).figures);
  const nlohmann::json d3 = testing::png_description(out3 + "/training_curves.png");
  ASSERT_TRUE(d3.is_object()) << "no Description";
  ASSERT_EQ(d3["axes"].size(), 1u) << d3.dump();
  EXPECT_FALSE(testing::line_labelled(d3["axes"][0], "best epoch 2 (lowest validation loss)").empty()) << d3.dump();
}

// Issue 50 item 10: a full disk gave a 60-line traceback and a truncated SVG. Simulated
// as root can't be stopped by permissions: RLIMIT_FSIZE in a child (writes past it fail
// with EFBIG, the way ENOSPC does), and a folder whose parent is a regular file.
TEST(FigureScript, AFigureThatCannotBeWrittenLeavesTheOldFileOrNoneAndOneLine) {
  const std::string py = python_with_matplotlib("python3");
  if (py.empty()) GTEST_SKIP() << "no python3 with matplotlib: no figures to write";
  const std::string run = tiny_run("full_run");
  const std::string out = testing::fresh_dir("figscript_", "full_out");
  std::ostringstream log;
  make_report(report_of(run, out), log);  // a first report, whole (and matplotlib's caches warm)
  const std::string png = out + "/training_curves.png", svg = out + "/training_curves.svg";
  const std::string png0 = bytes_of(png), svg0 = bytes_of(svg);
  ASSERT_GT(png0.size(), 16384u);
  // the history changes, so that a rewrite would differ
  std::ofstream(run + "/history.csv", std::ios::app) << "3,0.2,0.5\n4,0.1,0.45\n";
  const std::string msg = in_child([&] {
    const rlimit lim{16384, 16384};  // figures.json fits; no figure does
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) return std::string("setrlimit failed");
    std::ostringstream l;
    try {
      make_report(report_of(run, out), l);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no Error");
  });
  EXPECT_NE(msg.find("report_figures.py"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot write " + png), std::string::npos) << msg;
  EXPECT_NE(msg.find("File too large"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("Traceback"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  // the old figures, byte for byte, and no temporary beside them
  EXPECT_EQ(bytes_of(png), png0);
  EXPECT_EQ(bytes_of(svg), svg0);
  EXPECT_EQ(files_in(out), (std::set<std::string>{out + "/figures.json", png, svg}));
  for (const auto& e : fs::directory_iterator(out))
    EXPECT_EQ(e.path().filename().string().find(".part"), std::string::npos) << e.path();

  // a folder that cannot exist: the same one line, no file
  const std::string blocker = testing::fresh_dir("figscript_", "blocker") + "/a_file";
  std::ofstream(blocker) << "x";
  const std::string manifest =
      testing::fresh_dir("figscript_", "blocked_manifest") + "/figures.json";
  std::ofstream(manifest) << R"({"out": ")" << blocker
                          << R"(/sub", "histories": [{"label": "r", "series": "r", "csv": ")" << run
                          << R"(/history.csv"}], "rollouts": [], "metrics": []})";
  try {
    run_figure_script(py, report_of(run, out).figure_script, {manifest});
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("report_figures.py"), std::string::npos) << m;
    EXPECT_NE(m.find("cannot write " + blocker + "/sub/training_curves.png: Not a directory"),
              std::string::npos)
        << m;
    EXPECT_EQ(m.find("Traceback"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  EXPECT_TRUE(fs::is_regular_file(blocker));
}

namespace {

// whether process `pid` has ended (gone, or a zombie nobody reaped yet)
bool process_ended(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() &&
         (stat[close + 2] == 'Z' || stat[close + 2] == 'X');
}

}  // namespace

// Issue 50 item 10: kill -9 of the report left its figure script running and writing
// into --out. A process running the figure step is killed with SIGKILL; the script
// (here a shell that records its pid and sleeps a minute) must end with it.
TEST(FigureScript, TheScriptEndsWithAReportKilledByKill9) {
  const std::string d = testing::fresh_dir("figscript_", "kill9");
  const std::string pid_file = d + "/script.pid";
  const pid_t report = ::fork();
  ASSERT_GE(report, 0);
  if (report == 0) {
    try {
      run_figure_script(
          "/bin/sh", "-c",
          {"echo $$ > \"$1.tmp\" && mv \"$1.tmp\" \"$1\" && exec sleep 60", "sh", pid_file});
    } catch (...) {
    }
    ::_exit(0);
  }
  // the script's pid, once it runs (a bound, not a timing: a minute to start a shell)
  pid_t script = 0;
  for (int i = 0; i < 6000 && script == 0; ++i) {
    std::ifstream f(pid_file);
    if (!(f >> script)) {
      script = 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ASSERT_GT(script, 0) << "the script never started";
  ASSERT_FALSE(process_ended(script));
  ASSERT_EQ(::kill(report, SIGKILL), 0);
  int st = 0;
  ASSERT_EQ(::waitpid(report, &st, 0), report);
  ASSERT_TRUE(WIFSIGNALED(st));
  // the script ends with it: well before its minute of sleep is over
  bool ended = false;
  for (int i = 0; i < 3000 && !ended; ++i) {
    ended = process_ended(script);
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(ended) << "the figure script (pid " << script
                     << ") outlived the report killed with SIGKILL";
  if (!ended) ::kill(script, SIGKILL);  // the test's own leftover
}

}  // namespace
}  // namespace impulse
