// Instructions retired in a region of the benchmark, by every thread of
// the process: through perf_event_open's hardware instructions counter
// (user space only, what `perf stat -e instructions:u` counts), or, when the
// process runs under callgrind, through its client requests (the region's
// costs are zeroed at the start and dumped under the region's name at the
// end; bench/instructions_callgrind.py reads the dumps). A VM without a
// PMU has neither in-process: Start() then says why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace auxstore::bench {

class InstructionCounter {
 public:
  InstructionCounter() = default;
  ~InstructionCounter();
  InstructionCounter(const InstructionCounter&) = delete;
  InstructionCounter& operator=(const InstructionCounter&) = delete;

  // True when this process runs under valgrind (callgrind's dumps count).
  static bool UnderValgrind();

  // Starts counting every thread of the process (and threads they start).
  // An empty string when counting, else why not (no PMU, not permitted).
  std::string Start(const std::string& region);
  // The instructions since Start, or nothing under callgrind (the count is
  // in the dump named after the region) or when Start failed.
  std::optional<uint64_t> Stop();

 private:
  void CloseAll();
  std::vector<int> fds_;
  std::string region_;
};

}  // namespace auxstore::bench
