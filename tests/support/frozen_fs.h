// A real file system whose writes can be stopped: ext4 on a loop device,
// mounted for one test (root only; callers skip where it cannot be made),
// frozen with FIFREEZE (every write to it blocks, reads go on) and thawed
// with FITHAW, as `fsfreeze` does. The stand-in for a local disk that cannot
// keep up: what queues behind it, and what waits for it.
#pragma once

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

namespace auxstore::testing {

// Thawed, unmounted, and its image and mount point removed on destruction,
// also when the test fails. A store on it must be closed before (declare
// the file system first) and thawed before that (a ThawOnExit declared
// after the store): closing waits for the store's writes.
class FreezableFs {
 public:
  // `dir` holds the image and the mount point; nullptr with *why set when
  // the file system cannot be made or mounted here.
  static std::unique_ptr<FreezableFs> Make(const std::string& dir, uint64_t bytes,
                                           std::string* why) {
    std::error_code ec;
    std::filesystem::create_directories(dir + "/mnt", ec);
    const std::string image = dir + "/ext4.img";
    const std::string cmd = "truncate -s " + std::to_string(bytes) + " '" + image +
                            "' && mkfs.ext4 -q -F '" + image + "' && mount -o loop '" + image +
                            "' '" + dir + "/mnt' 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      if (why) *why = "could not make and mount an ext4 loop file system: " + cmd;
      std::filesystem::remove_all(dir, ec);
      return nullptr;
    }
    return std::unique_ptr<FreezableFs>(new FreezableFs(dir));
  }
  ~FreezableFs() {
    Thaw();
    const std::string cmd = "umount '" + path() + "' 2>/dev/null || umount -l '" + path() + "'";
    (void)std::system(cmd.c_str());
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path() const { return dir_ + "/mnt"; }

  // Every write to the file system blocks until Thaw().
  bool Freeze() { return Ioctl(FIFREEZE, false); }
  // Idempotent: thawing a file system that is not frozen changes nothing.
  bool Thaw() { return Ioctl(FITHAW, true); }

 private:
  explicit FreezableFs(std::string dir) : dir_(std::move(dir)) {}
  bool Ioctl(unsigned long request, bool einval_is_ok) {
    const int fd = ::open(path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return false;
    int arg = 0;
    const bool ok = ::ioctl(fd, request, &arg) == 0 || (einval_is_ok && errno == EINVAL);
    ::close(fd);
    return ok;
  }
  std::string dir_;
};

// Thaws `fs` when it goes out of scope.
class ThawOnExit {
 public:
  explicit ThawOnExit(FreezableFs& fs) : fs_(fs) {}
  ~ThawOnExit() { fs_.Thaw(); }
  ThawOnExit(const ThawOnExit&) = delete;
  ThawOnExit& operator=(const ThawOnExit&) = delete;

 private:
  FreezableFs& fs_;
};

}  // namespace auxstore::testing
