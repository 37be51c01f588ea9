// How many cycles (trials, rounds, kills) a battery test runs: the command
// line's --cycles N, else AUXSTORE_RELIABILITY_CYCLES, else the test's own
// default; never more than AUXSTORE_MAX_CYCLES when that is set (the
// sanitized CI builds cut every test to a bounded run without raising the
// ones whose default is smaller).
#pragma once

#include <algorithm>
#include <cstdlib>

namespace auxstore::testing {

inline int PositiveEnv(const char* name) {
  const char* e = std::getenv(name);
  const int n = e ? std::atoi(e) : 0;
  return n > 0 ? n : 0;
}

inline int CyclesFor(int command_line, int fallback) {
  int n = command_line > 0 ? command_line : PositiveEnv("AUXSTORE_RELIABILITY_CYCLES");
  if (n == 0) n = fallback;
  if (const int cap = PositiveEnv("AUXSTORE_MAX_CYCLES")) n = std::min(n, cap);
  return n;
}

}  // namespace auxstore::testing
