#include "io/file_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "solvers/error.h"

namespace impulse {

FileLock::FileLock(const std::string& path, const std::string& what, const std::string& holder,
                   const std::string& advice) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) throw Error(what + ": cannot create its lock file " + path + " (" + std::strerror(errno) + ")");
  bool locked = ::flock(fd_, LOCK_EX | LOCK_NB) == 0;
  if (!locked) {
    // the process that wrote its pid here is gone, yet the lock is held: a child it
    // forked holds the descriptor between fork and exec (or while it dies with its
    // parent). That ends within moments; wait for it, briefly.
    char pid_text[32] = {0};
    const ssize_t m = ::pread(fd_, pid_text, sizeof pid_text - 1, 0);
    const long owner = m > 0 ? std::strtol(pid_text, nullptr, 10) : 0;
    if (owner > 0 && ::kill(static_cast<pid_t>(owner), 0) != 0 && errno == ESRCH)
      for (int i = 0; i < 100 && !locked; ++i) {
        ::usleep(50000);
        locked = ::flock(fd_, LOCK_EX | LOCK_NB) == 0;
      }
  }
  if (!locked) {
    char buf[32] = {0};
    const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    ::close(fd_);
    fd_ = -1;
    throw Error(what + " is in use by " + holder +
                (n > 0 ? std::string(" (process ") + std::string(buf, static_cast<size_t>(n)) + ")" : std::string()) +
                "; " + advice);
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
    // the pid is only for the message above
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

bool FileLock::held_elsewhere(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0;
  ::close(fd);
  return held;
}

}  // namespace impulse
