// The figure scripts' interpreter and runner (io/figure_script.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "io/figure_script.h"
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

}  // namespace
}  // namespace impulse
