// An exclusive advisory lock on a file (flock) for the life of an object: the
// kernel releases it when the process ends, however it ends (kill -9 included),
// so a lock is never left stale. The file holds the owner's pid, for messages.
#pragma once

#include <string>

namespace impulse {

class FileLock {
 public:
  // Creates `path` if needed and locks it. Throws Error when it cannot be
  // created, or when another process holds it: "<what> is in use by <holder>
  // (process PID); <advice>". When the process whose pid the file names is gone
  // but the lock is still held (a child it forked, between fork and exec, dying
  // with it), waits up to 5 s for the lock first.
  FileLock(const std::string& path, const std::string& what, const std::string& holder,
           const std::string& advice);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  // Whether another process holds the lock on `path` now (false when the file
  // does not exist).
  static bool held_elsewhere(const std::string& path);

 private:
  int fd_ = -1;
};

}  // namespace impulse
