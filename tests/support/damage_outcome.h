// One classification of what a store did with damaged files, shared by the
// corruption trials (tests/reliability) and the damaged-page sweep
// (tests/trust), so both count the same outcome the same way.
//
//   refused    the open failed with a message
//   detected   the open succeeded and every read that did not return the
//              right bytes reported the damage (Corruption/IOError), or
//              found its snapshot gone because the store quarantined it
//   intact     every read returned the right bytes
// and the failures:
//   WRONG-BYTES  a read returned OK with bytes that were never written
//   SILENT-LOSS  a snapshot is gone and the store neither reported damage
//                nor quarantined it (absent is a loss, not a detection), or
//                an open was refused without a message
#pragma once

#include <cstdint>

namespace auxstore::testing {

enum class DamageOutcome { kRefused, kDetected, kIntact, kWrongBytes, kSilentLoss };

struct DamageReads {
  bool opened = false;
  bool refusal_has_message = true;
  uint64_t exact = 0;     // snapshots read back whole and right
  uint64_t reported = 0;  // snapshots a read reported damage for
  uint64_t absent = 0;    // snapshots not found (NotFound)
  uint64_t wrong = 0;     // snapshots a read returned wrong bytes for
  // Snapshots the store quarantined while these reads ran (Stats::quarantines
  // after minus before): the only reason an absent snapshot is not a loss.
  uint64_t quarantined = 0;
};

inline DamageOutcome ClassifyDamage(const DamageReads& r) {
  if (!r.opened)
    return r.refusal_has_message ? DamageOutcome::kRefused : DamageOutcome::kSilentLoss;
  if (r.wrong > 0) return DamageOutcome::kWrongBytes;
  if (r.absent > 0 && (r.reported == 0 || r.quarantined < r.absent)) {
    return DamageOutcome::kSilentLoss;
  }
  if (r.reported + r.absent > 0) return DamageOutcome::kDetected;
  return DamageOutcome::kIntact;
}

inline const char* DamageOutcomeName(DamageOutcome o) {
  switch (o) {
    case DamageOutcome::kRefused:
      return "refused";
    case DamageOutcome::kDetected:
      return "detected";
    case DamageOutcome::kIntact:
      return "intact";
    case DamageOutcome::kWrongBytes:
      return "WRONG-BYTES";
    case DamageOutcome::kSilentLoss:
      return "SILENT-LOSS";
  }
  return "?";
}

inline bool IsFailure(DamageOutcome o) {
  return o == DamageOutcome::kWrongBytes || o == DamageOutcome::kSilentLoss;
}

}  // namespace auxstore::testing
