#include "io/figure_script.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "solvers/error.h"

extern char** environ;

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

constexpr const char* kFiguresFdVar = "IMPULSE_FIGURES_FD";
constexpr size_t kStderrKept = 64 * 1024;  // the tail of a chatty script's standard error

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// the non-empty lines of s; `trim`: without trailing blanks (messages, not paths)
std::vector<std::string> lines_of(const std::string& s, bool trim) {
  std::vector<std::string> out;
  size_t a = 0;
  while (a < s.size()) {
    size_t b = s.find('\n', a);
    if (b == std::string::npos) b = s.size();
    std::string l = s.substr(a, b - a);
    while (trim && !l.empty() && (l.back() == '\r' || l.back() == ' ')) l.pop_back();
    if (!l.empty()) out.push_back(l);
    a = b + 1;
  }
  return out;
}
}  // namespace

std::string python_with_matplotlib(const std::string& wanted) {
  if (has_matplotlib(wanted)) return wanted;
  const std::string debian = "/usr/bin/python3";
  if (wanted == "python3" && has_matplotlib(debian)) return debian;
  return "";
}

std::vector<std::string> run_figure_script(const std::string& python, const std::string& script,
                                           const std::vector<std::string>& args) {
  std::string cmd = shell_quote(python) + " " + shell_quote(script);
  for (const std::string& a : args) cmd += " " + shell_quote(a);

  // everything the child needs, built before fork (only async-signal-safe calls after it)
  std::vector<std::string> argv_s = {python, script};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  int err[2] = {-1, -1}, list[2] = {-1, -1};
  if (::pipe2(err, O_CLOEXEC) != 0 || ::pipe2(list, O_CLOEXEC) != 0) {
    const std::string why = std::strerror(errno);
    close_fd(err[0]);
    close_fd(err[1]);
    throw Error("the figure script (" + cmd + ") cannot be started: pipe: " + why);
  }
  std::vector<std::string> env_s;
  const std::string var = std::string(kFiguresFdVar) + "=";
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, var.c_str(), var.size()) != 0) env_s.push_back(*e);
  env_s.push_back(var + std::to_string(list[1]));
  std::vector<char*> envp;
  for (std::string& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  std::fflush(nullptr);  // the script's output comes after ours
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const std::string why = std::strerror(errno);
    for (int* fd : {&err[0], &err[1], &list[0], &list[1]}) close_fd(*fd);
    throw Error("the figure script (" + cmd + ") cannot be started: fork: " + why);
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the report killed (even by -9): the script stops too
    if (::getppid() != parent) ::_exit(126);  // ...also when that happened before prctl
    if (err[1] != STDERR_FILENO) {
      ::dup2(err[1], STDERR_FILENO);  // the copy is not close-on-exec
    } else {
      ::fcntl(STDERR_FILENO, F_SETFD, 0);
    }
    ::fcntl(list[1], F_SETFD, 0);  // the script reports its figures here
    ::execvpe(argv[0], argv.data(), envp.data());
    const char* m = "cannot execute the interpreter: ";
    const char* why =
        std::strerror(errno);  // not async-signal-safe in theory; glibc's is a table lookup
    (void)!::write(STDERR_FILENO, m, std::strlen(m));
    (void)!::write(STDERR_FILENO, why, std::strlen(why));
    (void)!::write(STDERR_FILENO, "\n", 1);
    ::_exit(127);
  }
  close_fd(err[1]);
  close_fd(list[1]);

  // the child's standard error and its list of figures, until both close
  std::string err_text, list_text;
  bool err_truncated = false;
  pollfd fds[2] = {{err[0], POLLIN, 0}, {list[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    const int r = ::poll(fds, 2, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;  // the child is waited for below all the same
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      std::string& t = i == 0 ? err_text : list_text;
      t.append(buf, static_cast<size_t>(n));
      if (i == 0 && t.size() > 2 * kStderrKept) {
        t.erase(0, t.size() - kStderrKept);
        err_truncated = true;
      }
    }
  }
  for (pollfd& p : fds)
    if (p.fd >= 0) ::close(p.fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      throw Error("the figure script (" + cmd + "): waitpid: " + std::strerror(errno));
  }

  const std::vector<std::string> err_lines = lines_of(err_text, true);
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok) {
    if (err_lines.size() > 1 || err_truncated) {
      std::cerr << err_text;  // a traceback: for whoever debugs the script
      if (!err_text.empty() && err_text.back() != '\n') std::cerr << "\n";
    }
    const std::string how = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                            : WIFSIGNALED(status)
                                ? "killed by signal " + std::to_string(WTERMSIG(status))
                                : "status " + std::to_string(status);
    throw Error("the figure script failed (" + cmd + ", " + how + ")" +
                (err_lines.empty() ? std::string() : ": " + err_lines.back()));
  }
  if (!err_text.empty()) {
    std::cerr << err_text;
    if (err_text.back() != '\n') std::cerr << "\n";
  }
  std::vector<std::string> written;
  for (const std::string& f : lines_of(list_text, false)) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(f, ec) &&
        std::find(written.begin(), written.end(), f) == written.end())
      written.push_back(f);
  }
  return written;
}

}  // namespace impulse
