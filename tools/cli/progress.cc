#include "tools/cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace auxstore::cli {

Progress::Progress(std::string what, uint64_t total_bytes)
    : what_(std::move(what)),
      total_bytes_(total_bytes),
      enabled_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() {
  if (enabled_ && (bytes_ || snapshots_)) Print(true);
}

void Progress::Add(uint64_t bytes, uint64_t snapshots) {
  bytes_ += bytes;
  snapshots_ += snapshots;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(250)) return;
  last_ = now;
  Print(false);
}

void Progress::Print(bool final) {
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = secs > 0 ? bytes_ / secs : 0;
  char eta[32] = "";
  if (total_bytes_ && rate > 0 && bytes_ <= total_bytes_) {
    std::snprintf(eta, sizeof eta, ", ETA %.0f s", (total_bytes_ - bytes_) / rate);
  }
  std::fprintf(stderr, "\r%s: %llu snapshots, %.1f MiB, %.1f MiB/s%s%s", what_.c_str(),
               static_cast<unsigned long long>(snapshots_), bytes_ / 1048576.0, rate / 1048576.0,
               eta, final ? "\n" : "   ");
  std::fflush(stderr);
}

}  // namespace auxstore::cli
