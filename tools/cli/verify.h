// `auxstore verify`: a full offline scrub of a store, and `--repair`.
//
// Checks, in order: RocksDB's SST block checksums (VerifyChecksum) and XXH3
// file checksums (VerifyFileChecksums, per file when either fails so every
// bad file is named); the durable watermark against the commit sequence
// RocksDB recovered; every namespace record; every manifest against its
// records (layers, chunk counts and sizes, envelopes, the codec check of each
// blob against its namespace's geometry, whole-blob XXH3); then records with
// no manifest (orphans: counted, not corruption).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "auxstore/prefix.h"
#include "auxstore/status.h"

namespace auxstore::cli {

struct CorruptSnapshot {
  NamespaceId ns = 0;
  Prefix prefix;
  std::optional<uint32_t> layer;  // when the damage is in one layer
  std::string why;
};

struct VerifyReport {
  uint64_t namespaces = 0;
  uint64_t snapshots_checked = 0;
  uint64_t snapshots_ok = 0;
  uint64_t bytes_checked = 0;  // layer payload bytes read and verified
  uint64_t records_checked = 0;
  uint64_t orphan_snapshots = 0;  // record groups with no manifest
  uint64_t orphan_records = 0;
  uint64_t orphan_bytes = 0;
  uint64_t commit_seq = 0;
  std::optional<uint64_t> watermark;
  bool watermark_lost = false;  // watermark ahead of what RocksDB recovered
  // Damage not tied to one snapshot: files, namespaces, watermark, meta.
  std::vector<std::string> store_problems;
  std::vector<CorruptSnapshot> corrupt;  // one entry per damaged snapshot

  bool clean() const { return store_problems.empty() && corrupt.empty(); }
};

// Read-only: opens with OpenForReadOnly, so it runs beside a live writer.
// An error Status means the scrub could not run (usage or I/O); corruption it
// finds is in the report (a store RocksDB refuses to open as corrupt is a
// report with one store problem).
Result<VerifyReport> VerifyStore(const std::string& path);

struct RepairOptions {
  // Also accept a watermark ahead of what RocksDB recovered (lost commits):
  // the store is reopened with Options.accept_data_loss.
  bool accept_data_loss = false;
};

struct RepairReport {
  std::vector<CorruptSnapshot> removed;   // quarantined: manifest removed, records deleted
  std::vector<std::string> not_repaired;  // problems repair leaves alone, and why
  bool accepted_data_loss = false;
};

// Quarantines exactly the snapshots `report` names as corrupt (Store::
// Quarantine removes the manifest and counts it; then their record range is
// deleted and files wholly inside it dropped). Takes the writer's lock: Busy
// while another handle has the store open for writing.
Result<RepairReport> RepairStore(const std::string& path, const VerifyReport& report,
                                 const RepairOptions& options);

}  // namespace auxstore::cli
