// Progress of a long scan on stderr (bytes and snapshots done, rate, ETA),
// shown only when stderr is a terminal; silent otherwise. Fed by the
// library's progress callbacks (maintenance.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "auxstore/maintenance.h"

namespace auxstore::cli {

class Progress {
 public:
  explicit Progress(std::string what);
  ~Progress();

  void Update(const VerifyProgress& p);

 private:
  void Print(bool final);

  const std::string what_;
  const bool enabled_;
  VerifyProgress p_;
  bool any_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace auxstore::cli
