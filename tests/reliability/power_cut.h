// Simulated power loss, applied after the writer process was SIGKILLed:
// replays FaultFs's event log and does to every file what a real power cut
// may do to it (the model of RocksDB's FaultInjectionTestFS and SQLite's
// crash tests; POSIX promises nothing for bytes or entries not yet synced):
//  - the bytes past a file's last successful sync are dropped, kept in part
//    (any prefix of the unsynced tail), kept whole, or kept with garbage in
//    them (random bytes or zeros over part of the kept tail);
//  - in harsh mode, each directory entry made (created, renamed, linked)
//    after the last fsync of its directory is dropped or kept, each on its
//    own; a dropped rename puts back the file it replaced (and the source
//    name, where that entry was durable).
// Every choice is drawn from `seed`, so a failing cycle replays exactly.
// Every file the store writes goes through the file system the log comes
// from, its durable watermark included (store/watermark.h); files the log
// never mentions (written before this writer started) are left alone.
#pragma once

#include <cstdint>
#include <string>

namespace auxstore::reliability {

struct PowerCutReport {
  uint64_t files_truncated = 0;  // unsynced tail dropped whole
  uint64_t bytes_dropped = 0;
  uint64_t tails_kept = 0;     // part or all of an unsynced tail kept
  uint64_t tails_garbled = 0;  // kept with garbage in it
  uint64_t garbage_bytes = 0;
  uint64_t files_removed = 0;   // harsh mode: entry never made durable, dropped
  uint64_t files_restored = 0;  // harsh mode: a replaced file came back
  uint64_t entries_kept = 0;    // harsh mode: entry never made durable, kept
  std::string changes;          // one line per file changed: what the cut did to it
  std::string Summary() const;
};

struct PowerCutModel {
  bool harsh = false;  // drop or keep unsynced directory entries
  bool tails = true;   // keep parts of unsynced tails, with garbage (else drop whole)
  uint64_t seed = 1;
};

PowerCutReport ApplyPowerCut(const std::string& event_log_path, const PowerCutModel& model);

}  // namespace auxstore::reliability
