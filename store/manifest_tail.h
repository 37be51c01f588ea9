// Finds whether a RocksDB MANIFEST is damaged only in its tail.
//
// Why: a power cut during a MANIFEST append (an ingest's or a flush's
// version edit, written but not yet synced) can keep the appended tail's
// size but not its bytes. RocksDB 7.8.3 tolerates a truncated last record
// but refuses a complete one whose checksum fails, so such a cut locked the
// engine out of its store (power_loss_test, cycle 158 of the issue 20 soak).
// That edit was never acknowledged: the operation it belonged to had not
// returned. The store may then open with the MANIFEST read only up to the
// end of its last valid record (rocks/capped_manifest_fs.h), exactly as a
// WAL's damaged unsynced tail is skipped, and the watermark check that
// follows every open refuses the store if an acknowledged commit is missing.
//
// The scan parses RocksDB's log format (db/log_format.h): 32 KiB blocks;
// physical records with a 7-byte header (masked crc32c of type and payload,
// little-endian; payload length, 2 bytes; type: full, first, middle, last);
// fewer than 7 bytes left in a block are zero padding. A tail counts as
// broken only if every record before an offset is valid and no valid record
// (at any byte position) follows the first bad one: damage in the middle of
// a MANIFEST is never skipped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "auxstore/status.h"

namespace auxstore::store_internal {

struct ManifestTailScan {
  enum class Verdict {
    kIntact,        // RocksDB reads it as it is (a truncated last record included)
    kBrokenTail,    // valid up to valid_bytes, nothing valid after
    kBrokenMiddle,  // a bad record with a valid one after it: never skipped
  };
  Verdict verdict = Verdict::kIntact;
  uint64_t valid_bytes = 0;  // end of the last complete valid logical record
  uint64_t file_bytes = 0;
  std::string why;  // for a damaged one: what is bad, and where
};

ManifestTailScan ScanManifestBytes(std::string_view bytes);

// Reads the file at `path` whole and scans it.
Result<ManifestTailScan> ScanManifestFile(const std::string& path);

}  // namespace auxstore::store_internal
