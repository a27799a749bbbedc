// Figures are drawn by the project's Python scripts with matplotlib (Debian:
// python3-matplotlib). Finding an interpreter that has it, and running a script.
//
// The scripts (host/sweep/report_figures.py, host/impact/impact_figures.py,
// host/planning/plan_figures.py) write each figure through io/figure_files.py:
// into a temporary in the figure's folder, then os.replace(), so that a failure
// (a full disk, a folder that cannot be written) leaves the old file or none,
// never a truncated one; such a failure ends the script with one line naming the
// file and the reason (no traceback) and a non-zero status. Each figure written
// is reported to run_figure_script through the file descriptor named by the
// environment variable IMPULSE_FIGURES_FD.
#pragma once

#include <string>
#include <vector>

namespace impulse {

// The interpreter to draw with: `wanted` when it imports matplotlib; for the default
// "python3", Debian's /usr/bin/python3 when the python3 first on PATH (a pyenv or
// virtualenv one, where apt-get's python3-matplotlib is not seen) lacks it; "" when
// neither has it.
std::string python_with_matplotlib(const std::string& wanted);

// The shell's quoting of one argument ('...').
std::string shell_quote(const std::string& s);

// Runs `python script args...` (no shell; `python` is looked up on PATH) as a child
// that dies with this process (PR_SET_PDEATHSIG: a report killed with kill -9 does
// not leave its script writing into the output folder). Its standard output is this
// process's; its standard error is collected: passed on to std::cerr when the script
// succeeds, and when it fails, the last line of it is in the Error thrown, which
// names the command and its exit status (or signal); more than that one line (a
// traceback) is passed on to std::cerr first.
// Returns the files the script reports as written (IMPULSE_FIGURES_FD, one absolute
// path a line) that exist as regular files, each once, in the order reported.
std::vector<std::string> run_figure_script(const std::string& python, const std::string& script,
                                           const std::vector<std::string>& args);

}  // namespace impulse
