// Checks a reopened store against what a writer attempted and acknowledged:
// every acknowledged snapshot reads back bit-exact, every visible snapshot is
// one that was attempted and is complete and exact (nothing torn, nothing
// invented), and what is wrong is counted and described.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "auxstore/store.h"

namespace auxstore::reliability {

struct CheckReport {
  uint64_t acked_checked = 0;       // acknowledged snapshots looked for
  uint64_t visible = 0;             // snapshots List showed
  uint64_t lost = 0;                // acknowledged, not visible
  uint64_t evicted = 0;             // acknowledged, not visible, eviction allowed
  uint64_t torn_visible = 0;        // visible but a layer fails to read
  uint64_t wrong_bytes = 0;         // a read returned OK with bytes not written
  uint64_t unexpected_visible = 0;  // visible, never attempted
  std::vector<std::string> problems;

  bool ok() const {
    return lost == 0 && torn_visible == 0 && wrong_bytes == 0 && unexpected_visible == 0 &&
           problems.empty();
  }
  std::string Summary() const;
};

struct CheckOptions {
  // Eviction runs in the background: an acknowledged snapshot may be gone.
  bool acked_may_be_evicted = false;
};

// `attempted` holds every seed a writer may have started (a superset of
// `acked`). Reads every layer of every visible snapshot.
CheckReport CheckStore(Store& store, NamespaceId ns, const std::set<uint64_t>& attempted,
                       const std::set<uint64_t>& acked, const CheckOptions& options = {});

}  // namespace auxstore::reliability

namespace auxstore::reliability {

// Opens the closed store at `path` read-only with RocksDB itself and runs
// VerifyChecksum (every SST block) and VerifyFileChecksums (whole-file XXH3
// recorded in the MANIFEST).
Status VerifyRocksFiles(const std::string& path);

}  // namespace auxstore::reliability
