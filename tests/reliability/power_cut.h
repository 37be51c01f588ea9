// Simulated power loss, applied after the writer process was SIGKILLed:
// replays FaultFs's event log and drops everything a real power cut could
// drop. Every tracked file is truncated to the size it had at its last
// successful sync. In harsh mode a file whose directory entry was never
// synced (created, renamed or linked after the last fsync of its directory)
// is removed, and a file such a rename replaced comes back.
// Files the log never mentions (written before this writer started, or with
// plain POSIX calls like the store's fsynced watermark) are left alone.
#pragma once

#include <cstdint>
#include <string>

namespace auxstore::reliability {

struct PowerCutReport {
  uint64_t files_truncated = 0;
  uint64_t bytes_dropped = 0;
  uint64_t files_removed = 0;   // harsh mode: entry never made durable
  uint64_t files_restored = 0;  // harsh mode: a replaced file came back
  std::string Summary() const;
};

PowerCutReport ApplyPowerCut(const std::string& event_log_path, bool harsh);

}  // namespace auxstore::reliability
