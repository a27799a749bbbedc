#include "io/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "solvers/error.h"

namespace impulse {

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error(path + ": cannot stat: " + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": is a directory, expected a file");
  }
  // the size from fstat is a hint; read to end of file either way, probing
  // with a small buffer so an exact-size file is never reallocated
  std::vector<uint8_t> out(st.st_size > 0 ? static_cast<size_t>(st.st_size) : 0);
  size_t have = 0;
  uint8_t probe[4096];
  while (true) {
    const bool full = have == out.size();
    const ssize_t n = full ? ::read(fd, probe, sizeof probe) : ::read(fd, out.data() + have, out.size() - have);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw Error(path + ": read failed: " + std::strerror(err));
    }
    if (n == 0) break;
    if (full) out.insert(out.end(), probe, probe + n);
    have += static_cast<size_t>(n);
  }
  ::close(fd);
  out.resize(have);
  return out;
}

void write_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw Error(path + ": cannot create " + tmp + ": " + std::strerror(errno));
  auto fail = [&](const char* what, int err, bool opened) {
    if (opened) ::close(fd);
    ::unlink(tmp.c_str());
    throw Error(path + ": " + what + ": " + std::strerror(err));
  };
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write failed", errno, true);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) fail("fsync failed", errno, true);
  if (::close(fd) != 0) fail("close failed", errno, false);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename failed", errno, false);
  // make the rename durable; failure here leaves a correct file, so ignore it
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

void write_text_atomic(const std::string& path, const std::string& text) {
  write_file_atomic(path, std::vector<uint8_t>(text.begin(), text.end()));
}

}  // namespace impulse
