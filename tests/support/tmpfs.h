// A real small file system for tests that fill a disk: a tmpfs mounted for
// one test (root only; callers skip where mounting is refused), and a file
// written until that file system is full.
#pragma once

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

namespace auxstore::testing {

// Unmounted (and its mount point removed) on destruction, also when the
// test fails.
class TmpfsMount {
 public:
  // nullptr with *why set when mounting is not possible here.
  static std::unique_ptr<TmpfsMount> Mount(const std::string& mount_point, uint64_t bytes,
                                           std::string* why) {
    std::error_code ec;
    std::filesystem::create_directories(mount_point, ec);
    const std::string opts = "size=" + std::to_string(bytes);
    if (::mount("tmpfs", mount_point.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0) {
      if (why) {
        *why = "mount -t tmpfs -o " + opts + " tmpfs " + mount_point +
               " failed: " + std::strerror(errno);
      }
      std::filesystem::remove(mount_point, ec);
      return nullptr;
    }
    return std::unique_ptr<TmpfsMount>(new TmpfsMount(mount_point));
  }
  ~TmpfsMount() {
    if (::umount(path_.c_str()) != 0) ::umount2(path_.c_str(), MNT_DETACH);
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  const std::string& path() const { return path_; }
  // Removes everything on it.
  void Clear() {
    std::error_code ec;
    for (auto& e : std::filesystem::directory_iterator(path_, ec))
      std::filesystem::remove_all(e.path(), ec);
  }

 private:
  explicit TmpfsMount(std::string p) : path_(std::move(p)) {}
  std::string path_;
};

// Writes a file until the file system is full (ENOSPC), in ever smaller
// writes down to one byte; returns its size.
inline uint64_t FillUp(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return 0;
  std::string block(1 << 16, 'F');
  for (size_t chunk = block.size(); chunk >= 1; chunk /= 2) {
    for (;;) {
      const ssize_t n = ::write(fd, block.data(), chunk);
      if (n <= 0 || static_cast<size_t>(n) < chunk) break;
    }
    if (chunk == 1) break;
  }
  ::close(fd);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : size;
}

}  // namespace auxstore::testing
