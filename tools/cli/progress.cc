#include "tools/cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace auxstore::cli {

Progress::Progress(std::string what)
    : what_(std::move(what)),
      enabled_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() {
  if (enabled_ && any_) Print(true);
}

void Progress::Update(const VerifyProgress& p) {
  p_ = p;
  any_ = true;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(250)) return;
  last_ = now;
  Print(false);
}

void Progress::Print(bool final) {
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = secs > 0 ? p_.bytes_done / secs : 0;
  char eta[32] = "";
  if (p_.bytes_total && rate > 0 && p_.bytes_done <= p_.bytes_total) {
    std::snprintf(eta, sizeof eta, ", ETA %.0f s", (p_.bytes_total - p_.bytes_done) / rate);
  }
  std::fprintf(stderr, "\r%s: %llu snapshots, %.1f MiB, %.1f MiB/s%s%s", what_.c_str(),
               static_cast<unsigned long long>(p_.snapshots_done), p_.bytes_done / 1048576.0,
               rate / 1048576.0, eta, final ? "\n" : "   ");
  std::fflush(stderr);
}

}  // namespace auxstore::cli
