// main() for the reliability tests: GoogleTest's flags, plus `--cycles N`
// to turn a bounded CI run into a soak (e.g. --cycles 1000).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "tests/reliability/crash_harness.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--cycles") == 0 && i + 1 < argc) {
      auxstore::reliability::SetBatteryCycles(std::atoi(argv[i + 1]));
    }
  }
  return RUN_ALL_TESTS();
}
