// main() for the trust tests: GoogleTest's flags, plus `--cycles N` (or
// AUXSTORE_RELIABILITY_CYCLES) to turn a bounded run into a longer one.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "tests/trust/trust_util.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--cycles") == 0 && i + 1 < argc) {
      auxstore::trust::SetCycles(std::atoi(argv[i + 1]));
    }
  }
  return RUN_ALL_TESTS();
}
