// Progress of a long scan on stderr (bytes and snapshots done, rate, ETA),
// shown only when stderr is a terminal; silent otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace auxstore::cli {

class Progress {
 public:
  // `total_bytes` 0 = unknown (no ETA).
  Progress(std::string what, uint64_t total_bytes);
  ~Progress();

  void Add(uint64_t bytes, uint64_t snapshots);

 private:
  void Print(bool final);

  const std::string what_;
  const uint64_t total_bytes_;
  const bool enabled_;
  uint64_t bytes_ = 0, snapshots_ = 0;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace auxstore::cli
