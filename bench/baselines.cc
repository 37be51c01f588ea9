#include "bench/baselines.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/measure.h"

namespace auxstore::bench {
namespace {
constexpr size_t kIoBytes = 4u << 20;  // one write()/read() call
}

double RawWrite(const std::string& file, std::span<const uint8_t> bytes) {
  ::unlink(file.c_str());
  Stopwatch t;
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  for (size_t off = 0; off < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + off, std::min(kIoBytes, bytes.size() - off));
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  ::fdatasync(fd);
  ::close(fd);
  return t.Seconds();
}

double RawReadCold(const std::string& file, uint64_t bytes) {
  DropPageCache(file);
  HugeBuffer buf(kIoBytes);
  Stopwatch t;
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  uint64_t done = 0;
  while (done < bytes) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n <= 0) break;
    done += static_cast<uint64_t>(n);
  }
  ::close(fd);
  return t.Seconds();
}

double RawReadTreeCold(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec)) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());  // RocksDB numbers files in write order
  DropPageCache(dir);
  HugeBuffer buf(kIoBytes);
  Stopwatch t;
  for (const std::string& f : files) {
    int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    while (::read(fd, buf.data(), buf.size()) > 0) {
    }
    ::close(fd);
  }
  return t.Seconds();
}

double Memcpy(std::span<const uint8_t> src, std::span<uint8_t> dst) {
  std::memset(dst.data(), 1, dst.size());  // fault the pages in first: measure the copy
  Stopwatch t;
  std::memcpy(dst.data(), src.data(), src.size());
  const double s = t.Seconds();
  volatile uint8_t sink = dst[dst.size() / 2];
  (void)sink;
  return s;
}

double Xxh3(std::span<const uint8_t> src) {
  Stopwatch t;
  volatile uint64_t h = XXH3_64bits(src.data(), src.size());
  (void)h;
  return t.Seconds();
}

}  // namespace auxstore::bench
