#include "bench/file_per_blob.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "bench/measure.h"

namespace auxstore::bench {
namespace {

std::string BlobPath(const std::string& dir, uint32_t s, uint32_t l) {
  return dir + "/" + std::to_string(s) + "-" + std::to_string(l) + ".blob";
}

bool WriteAll(int fd, std::span<const uint8_t> b) {
  for (size_t off = 0; off < b.size();) {
    ssize_t n = ::write(fd, b.data() + off, b.size() - off);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

double FilePerBlob::Write(const WorkloadData& data) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const Workload& w = data.workload();
  Stopwatch t;
  for (uint32_t s = 0; s < w.snapshots; ++s) {
    for (uint32_t l = 0; l < w.layers; ++l) {
      const std::string path = BlobPath(dir, s, l), tmp = path + ".tmp";
      int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0 || !WriteAll(fd, data.Layer(s, l)) || ::fsync(fd) != 0) return -1;
      ::close(fd);
      if (::rename(tmp.c_str(), path.c_str()) != 0) return -1;
    }
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ::fsync(dfd);
    ::close(dfd);
  }
  return t.Seconds();
}

double FilePerBlob::Read(const WorkloadData& data, bool cold) {
  if (cold) DropPageCache(dir);
  const Workload& w = data.workload();
  HugeBuffer buf(w.layer_bytes);
  Stopwatch t;
  for (uint32_t s = 0; s < w.snapshots; ++s) {
    for (uint32_t l = 0; l < w.layers; ++l) {
      int fd = ::open(BlobPath(dir, s, l).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return -1;
      size_t done = 0;
      while (done < buf.size()) {
        ssize_t n = ::read(fd, buf.data() + done, buf.size() - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      ::close(fd);
      if (done != buf.size()) return -1;
    }
  }
  return t.Seconds();
}

}  // namespace auxstore::bench
