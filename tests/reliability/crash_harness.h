// Runs auxstore_crash_writer as a child process (fork + exec), collects what
// it reports over a pipe, and SIGKILLs it at a chosen moment.
#pragma once

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace auxstore::reliability {

struct WriterRun {
  bool ready = false;               // the child opened the store
  std::string open_error;           // OPENFAIL message, if any
  std::set<uint64_t> attempted;     // B lines
  std::set<uint64_t> acked;         // A lines
  std::vector<std::string> errors;  // E lines
  bool killed = false;              // we SIGKILLed it (else it exited)
  int exit_code = -1;               // when it exited by itself
};

// `args`: the writer's arguments (without argv[0]). The child is killed
// `kill_after` after it reports READY, or `kill_after` after the start when
// `kill_before_ready` (a kill that may land during open and recovery).
WriterRun RunWriter(const std::vector<std::string>& args, std::chrono::milliseconds kill_after,
                    bool kill_before_ready);

// Runs `argv` (argv[0] a path; its stdout to /dev/null) and SIGKILLs it
// `kill_after` after the start unless it exited first. Returns its exit code,
// -SIGKILL when it was killed, -signal when a signal killed it otherwise,
// -1000 when it could not be started.
int RunKilledAfter(const std::vector<std::string>& argv, std::chrono::milliseconds kill_after);

// The path of the auxstore_crash_writer binary (set at build time).
std::string CrashWriterPath();

// Cycles for the long-running tests: --cycles N on the command line (see
// battery_main.cc), else AUXSTORE_RELIABILITY_CYCLES, else `fallback`; at
// most AUXSTORE_MAX_CYCLES (tests/support/cycles.h).
int BatteryCycles(int fallback);
void SetBatteryCycles(int cycles);

}  // namespace auxstore::reliability
