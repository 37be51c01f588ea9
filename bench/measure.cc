#include "bench/measure.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>

namespace auxstore::bench {
namespace {

uint64_t ProcField(const char* file, const char* field) {
  std::ifstream in(file);
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(in, line)) {
    if (line.compare(0, n, field) == 0) {
      std::istringstream s(line.substr(n));
      uint64_t v = 0;
      s >> v;
      return v;
    }
  }
  return 0;
}

void DropFile(const std::string& file) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

}  // namespace

Spread Summarize(std::vector<double> s) {
  if (s.empty()) return {};
  std::sort(s.begin(), s.end());
  return {s[s.size() / 2], s.front(), s.back()};
}

double Percentile(std::vector<double> s, double p) {
  if (s.empty()) return 0;
  std::sort(s.begin(), s.end());
  const size_t i = std::min(s.size() - 1, static_cast<size_t>(p / 100.0 * s.size()));
  return s[i];
}

uint64_t ProcessWriteBytes() { return ProcField("/proc/self/io", "write_bytes:"); }
uint64_t ProcessReadBytes() { return ProcField("/proc/self/io", "read_bytes:"); }

void DropPageCache(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return DropFile(path);
  for (auto& e : fs::recursive_directory_iterator(path, ec)) {
    if (e.is_regular_file(ec)) DropFile(e.path().string());
  }
}

namespace {
double CpuSeconds(int who) {
  rusage u{};
  if (::getrusage(who, &u) != 0) return 0;
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}
}  // namespace

double ProcessCpuSeconds() { return CpuSeconds(RUSAGE_SELF); }
double ChildrenCpuSeconds() { return CpuSeconds(RUSAGE_CHILDREN); }

uint64_t PeakRssBytes() { return ProcField("/proc/self/status", "VmHWM:") * 1024; }
uint64_t RssBytes() { return ProcField("/proc/self/status", "VmRSS:") * 1024; }

bool ResetPeakRss() {
  FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

void FillRandom(uint8_t* p, size_t n, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(p + i, &x, 8);
  }
  for (; i < n; ++i) p[i] = static_cast<uint8_t>(x >> (8 * (i % 8)));
}

HugeBuffer::HugeBuffer(size_t bytes) : size_(bytes) {
  constexpr size_t kHuge = 2u << 20;
  const size_t rounded = (std::max<size_t>(bytes, 1) + kHuge - 1) / kHuge * kHuge;
  data_ = static_cast<uint8_t*>(std::aligned_alloc(kHuge, rounded));
  if (data_ == nullptr) throw std::bad_alloc();
  (void)::madvise(data_, rounded, MADV_HUGEPAGE);
  std::memset(data_, 0, rounded);
}

HugeBuffer::~HugeBuffer() { std::free(data_); }

}  // namespace auxstore::bench
