// The `auxstore` command line: parses arguments (CLI11), runs one command
// from this library, prints its report as text or --json.
//
// Exit codes: 0 success (verify: clean), 1 corruption found (verify), 2 usage
// error or any failure to do what was asked (I/O, busy store, bad input).
#pragma once

#include <ostream>

namespace auxstore::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCorruption = 1;
inline constexpr int kExitError = 2;

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace auxstore::cli
