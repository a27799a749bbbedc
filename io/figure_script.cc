#include "io/figure_script.h"

#include <cstdlib>

#include "solvers/error.h"

namespace impulse {

std::string shell_quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) {
    if (c == '\'')
      o += "'\\''";
    else
      o += c;
  }
  return o + "'";
}

namespace {
bool has_matplotlib(const std::string& python) {
  return std::system((shell_quote(python) + " -c 'import matplotlib' >/dev/null 2>&1").c_str()) == 0;
}
}  // namespace

std::string python_with_matplotlib(const std::string& wanted) {
  if (has_matplotlib(wanted)) return wanted;
  const std::string debian = "/usr/bin/python3";
  if (wanted == "python3" && has_matplotlib(debian)) return debian;
  return "";
}

void run_figure_script(const std::string& python, const std::string& script,
                       const std::vector<std::string>& args) {
  std::string cmd = shell_quote(python) + " " + shell_quote(script);
  for (const std::string& a : args) cmd += " " + shell_quote(a);
  const int rc = std::system(cmd.c_str());
  if (rc != 0) throw Error("the figure script failed (" + cmd + ", status " + std::to_string(rc) + ")");
}

}  // namespace impulse
