// Figures are drawn by the project's Python scripts with matplotlib (Debian:
// python3-matplotlib). Finding an interpreter that has it, and running a script.
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

// Runs `python script args...` (each quoted); throws Error naming the command and
// its status when it fails.
void run_figure_script(const std::string& python, const std::string& script,
                       const std::vector<std::string>& args);

}  // namespace impulse
