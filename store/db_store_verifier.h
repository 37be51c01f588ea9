// DbStore::Verifier: Store::Verify's walk over the whole store, split by
// job:
//   db_store_verify_puts.cc       the puts (every record once, against its
//                                 run record's hashes) and the page ledger's
//                                 entries no snapshot uses (orphans, stale
//                                 refs and page entries)
//   db_store_verify_snapshots.cc  the manifests, against the puts they name
//   db_store_verify_files.cc      RocksDB's file checks, the namespaces,
//                                 damage no snapshot shows
// Each put's records are read once and checked against its run record's
// page and tail hashes; each manifest is then checked against the puts it
// names (pins, layouts, the damage found in exactly the pages and tails it
// uses). RocksDB's file-level checks name damaged files; damage they find
// that no snapshot reads is a store problem, never a reason to remove a
// snapshot.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "auxstore/maintenance.h"
#include "store/db_store.h"
#include "store/keys.h"

namespace auxstore::store_internal {

inline std::string NamespaceRecordProblem(NamespaceId ns, const Status& why) {
  return "namespace " + NamespaceHex(ns) + ": its record is unreadable or missing (" +
         why.message() +
         "); its snapshots were checked against their manifests and kept. Register the "
         "namespace again (RegisterNamespace with its spec) to restore the record";
}

inline std::string Where(NamespaceId ns, const Prefix& prefix) {
  return "prefix " + prefix.ToHex() + " in namespace " + NamespaceHex(ns);
}

// A live file RocksDB's own checks found damaged, and the key range it holds.
struct DamagedFile {
  std::string file;
  int cf = kDefault;
  std::string smallest, largest;
  std::string why;
};
// The damage found in one put's records.
struct PutDamage {
  std::string why;          // the first problem found
  bool run_record = false;  // its run record does not decode: everything it stored is lost
  // Per layer: damaged pages (chain page numbers) and whether the tail is.
  struct Layer {
    std::set<uint32_t> pages;
    bool tail = false;
  };
  std::map<uint32_t, Layer> layers;
};

class DbStore::Verifier {
 public:
  Verifier(DbStore& store, const VerifyOptions& options, VerifyReport* report)
      : s_(store), o_(options), r_(*report) {}

  Status Run();

 private:
  // ---- files and namespaces (db_store_verify_files.cc)
  // RocksDB's own checks over every live file; on a failure, each file on
  // its own so every bad one is named (the DB-wide calls stop at the first).
  void CheckFiles();
  void CheckNamespaces();
  // A damaged file whose damage no corrupt snapshot or damaged put shows.
  void ReportUnexplainedFiles();
  static std::string ToHex(const std::string& bytes);

  // ---- puts (db_store_verify_puts.cc): every record once, against its run
  // record's hashes
  void CheckPuts();
  void CheckPutRecords(NamespaceId ns, PutId put, const RunRecord& rec);
  // Records of puts that have no run record (a crash before the commit, or
  // between a reclaim's commit and its delete).
  void ScanOrphanRecords();
  // Run records no manifest uses: their records are unreachable.
  void CheckUnreferencedPuts();
  // Refs whose snapshot is gone, or is another put now.
  void CheckRefs();
  // Page entries naming a put that is gone (a share missed, nothing lost).
  void CheckPageEntries();
  // Put `put`'s run record (cached), or null with *why set.
  const RunRecord* RunRecordOf(NamespaceId ns, PutId put, Status* why);

  // ---- manifests (db_store_verify_snapshots.cc): against the puts they name
  void CheckSnapshots();
  Status CheckManifest(NamespaceId ns, const Prefix& prefix, const Manifest& m,
                       std::optional<uint32_t>* bad_layer);
  // Layer `l`'s pages shared from earlier puts: each run against what its
  // owner stored, the owner's damage, and the hashes gathered for the digest.
  Status CheckSharedRuns(NamespaceId ns, const Manifest& m, const LayerEntry& l,
                         std::vector<std::vector<uint64_t>>* page_xxh3);
  // Layer `l`'s own rows (its tail) against its own put's run record.
  Status CheckOwnRows(NamespaceId ns, const Manifest& m, const LayerEntry& l,
                      std::vector<uint64_t>* tail_xxh3);

  DbStore& s_;
  const VerifyOptions& o_;
  VerifyReport& r_;
  VerifyProgress progress_;
  std::vector<DamagedFile> damaged_;
  std::map<std::string, PutDamage> damage_;                         // PutKey -> damage found
  std::unordered_set<std::string> puts_;                            // every run record's key
  std::unordered_set<std::string> referenced_;                      // puts some manifest uses
  std::unordered_map<std::string, std::optional<RunRecord>> runs_;  // a cache
  // (PutKey, layer) -> snapshots using each page the put stored for it.
  std::unordered_map<std::string, std::vector<uint32_t>> page_users_;
  std::set<std::string> charged_;  // damaged puts some corrupt snapshot reads
  struct PutRecords {
    uint64_t records = 0, bytes = 0;
  };
  std::unordered_map<std::string, PutRecords> put_records_;  // PutKey -> its intact records
  int skips_ = 0;
  bool run_problem_ = false;                  // the manifest being checked failed on a run record
  std::set<NamespaceId> namespace_problems_;  // reported once each
};

}  // namespace auxstore::store_internal
