#include "store/watermark.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace auxstore::store_internal {
namespace {

std::string Body(uint64_t seq) { return "auxstore-watermark v1 " + std::to_string(seq); }

std::string Line(uint64_t seq) {
  const std::string body = Body(seq);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, XXH3_64bits(body.data(), body.size()));
  return body + " " + hex + "\n";
}

Status Errno(const std::string& what) {
  return Status::IOError(what + ": " + std::strerror(errno));
}

// A fresh file: whatever is at `path` (a leftover, or a planted symlink) is
// unlinked, never followed.
Status WriteAllAndSync(const std::string& path, const std::string& data) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Errno("remove " + path);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("create " + path);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = Errno("write " + path);
      ::close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (::fdatasync(fd) != 0) {
    Status s = Errno("fdatasync " + path);
    ::close(fd);
    return s;
  }
  if (::close(fd) != 0) return Errno("close " + path);
  return Status::Ok();
}

Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("open directory " + dir);
  int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::Ok() : Errno("fsync directory " + dir);
}

}  // namespace

Result<uint64_t> ReadWatermark(const std::string& dir) {
  const std::string path = dir + "/" + kWatermarkFileName;
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound("no durable watermark at " + path);
    if (errno == ELOOP) return Status::Corruption("durable watermark " + path + " is a symlink");
    return Errno("open " + path);
  }
  char buf[128] = {};
  const ssize_t got = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (got < 0) return Errno("read " + path);
  const size_t n = static_cast<size_t>(got);
  uint64_t seq = 0;
  if (std::sscanf(buf, "auxstore-watermark v1 %" SCNu64, &seq) != 1 ||
      std::string(buf, n) != Line(seq)) {
    return Status::Corruption("durable watermark " + path + " is damaged");
  }
  return seq;
}

Status WriteWatermark(const std::string& dir, uint64_t seq) {
  const std::string path = dir + "/" + kWatermarkFileName;
  const std::string tmp = path + ".tmp";
  AUXSTORE_RETURN_IF_ERROR(WriteAllAndSync(tmp, Line(seq)));
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Errno("rename " + tmp);
  return SyncDir(dir);
}

}  // namespace auxstore::store_internal
