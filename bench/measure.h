// Measurement helpers for the benchmarks: timing, medians, process I/O
// counters, page-cache eviction, resident memory.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace auxstore::bench {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

struct Spread {
  double median = 0, min = 0, max = 0;
};
Spread Summarize(std::vector<double> samples);
double Percentile(std::vector<double> samples, double p);  // p in [0, 100]

// Bytes this process (all threads) caused to be written to / read from
// storage so far (/proc/self/io write_bytes, read_bytes).
uint64_t ProcessWriteBytes();
uint64_t ProcessReadBytes();

// CPU seconds (user + system) of this process, all threads, so far; and of
// the child processes it has waited for (getrusage). Steadier than wall
// time on a shared machine: what a call costs the cores, not how long it
// waited for them.
double ProcessCpuSeconds();
double ChildrenCpuSeconds();

// Drops the page cache of every regular file under `path` (file or dir):
// the next read comes from the disk. Files must be clean (synced).
void DropPageCache(const std::string& path);

// Peak resident set size of this process so far (VmHWM), and a reset of it
// (writes 5 to /proc/self/clear_refs; returns false where not permitted).
uint64_t PeakRssBytes();
uint64_t RssBytes();
bool ResetPeakRss();

// A zero-filled buffer on transparent huge pages, every page touched. Every
// buffer the benchmarks copy into or out of is one, as the store's own read
// and staging buffers are: on the project's VMs (shadow paging) a 4 KiB page
// costs ~10 us on first touch and again after any large munmap in the
// process (an XXH3 pass over a 4 KiB-paged buffer ran at 0.46 GB/s right
// after a 256 MiB free, 15 GB/s on huge pages), which would skew whichever
// contender runs next.
class HugeBuffer {
 public:
  explicit HugeBuffer(size_t bytes);
  ~HugeBuffer();
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<uint8_t> span() { return {data_, size_}; }
  std::span<const uint8_t> span() const { return {data_, size_}; }

 private:
  uint8_t* data_;
  size_t size_;
};

// Fills with pseudo-random bytes (incompressible, cheap to generate).
void FillRandom(uint8_t* p, size_t n, uint64_t seed);

}  // namespace auxstore::bench
