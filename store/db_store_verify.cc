// Store::Verify and Store::Repair (include/auxstore/maintenance.h). The
// Verifier's walk over the store is in db_store_verifier.h and its files;
// here: one snapshot read back whole, Verify, and Repair.
#include <rocksdb/convenience.h>
#include <rocksdb/file_checksum.h>
#include <rocksdb/metadata.h>
#include <xxhash.h>

#include <cinttypes>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "auxstore/blob_hash.h"
#include "format/byte_order.h"
#include "format/envelope.h"
#include "format/layer_layout.h"
#include "format/manifest.h"
#include "format/namespace_spec.h"
#include "format/run_record.h"
#include "store/bytes.h"
#include "store/db_store.h"
#include "store/db_store_verifier.h"
#include "store/keys.h"
#include "store/meta_keys.h"

namespace auxstore::store_internal {

Status DbStore::VerifySnapshot(NamespaceId ns, const Prefix& prefix, const Manifest& m,
                               std::optional<uint32_t>* bad_layer, VerifyReport* report) {
  // Reads the snapshot back whole through the layer reader, as a restore
  // does, with no side effect (nothing quarantined, nothing counted).
  // A damaged or missing namespace record is the store's problem, never the
  // snapshot's: its bytes are judged against its manifest all the same.
  auto spec = NamespaceSpecFor(ns);
  if (!spec.ok() && report != nullptr) {
    report->store_problems.push_back(NamespaceRecordProblem(ns, spec.error()));
  }
  for (const LayerEntry& l : m.layers) {
    *bad_layer = l.layer;
    if (spec.ok()) {
      AUXSTORE_RETURN_IF_ERROR(CheckLayerBlob(l.layer, l.kind, l.header, l.bytes, *spec));
    }
    AUXSTORE_ASSIGN_OR_RETURN(auto reader,
                              OpenCursor(ns, prefix, m, l.layer, ReadMode{.verify_only = true}));
    while (!reader->done()) {
      AUXSTORE_ASSIGN_OR_RETURN(LayerReader::View piece, reader->Read());
      if (report) {
        ++report->records_checked;
        report->bytes_checked += piece.bytes.size();
      }
    }
  }
  bad_layer->reset();
  return Status::Ok();
}

Result<VerifyReport> DbStore::Verify(const VerifyOptions& options) {
  VerifyReport report;
  Verifier v(*this, options, &report);
  AUXSTORE_RETURN_IF_ERROR(v.Run());
  return report;
}

// Removes the snapshots `report` names corrupt that still read back damaged.
Status DbStore::RemoveCorrupt(const VerifyReport& report, RepairReport* out,
                              std::vector<std::string>* left_alone) {
  for (const CorruptSnapshot& c : report.corrupt) {
    auto m = LoadManifest(c.ns, c.prefix);  // a damaged manifest is quarantined by the load
    if (m.ok()) {
      std::optional<uint32_t> layer;
      Status why = VerifySnapshot(c.ns, c.prefix, *m, &layer, nullptr);
      if (why.ok()) {
        left_alone->push_back("snapshot " + Where(c.ns, c.prefix) +
                              " reads back intact now; left alone");
        continue;
      }
      // Removing it reclaims every put no remaining snapshot uses.
      Status q = QuarantineIfUnchanged(c.ns, c.prefix, *m, why);
      if (q.IsNotFound()) continue;  // erased or replaced meanwhile
      if (q != why) return q.WithContext("quarantine " + Where(c.ns, c.prefix));
    } else if (m.error().IsNotFound()) {
      continue;  // gone since the report
    } else if (!m.error().IsCorruption()) {
      return m.error();
    }
    out->removed.push_back(c);
  }
  return Status::Ok();
}

// Every column family with a damaged file is rewritten around it and the
// derived metadata is rebuilt (db_store_rebuild.cc); the store is verified
// again and the snapshots still damaged go. After a repair, verify is clean
// unless a problem is listed as not repaired.
Result<RepairReport> DbStore::Repair(const VerifyReport& report) {
  AUXSTORE_RETURN_IF_ERROR(CheckWritable());
  RepairReport out;
  out.accepted_data_loss = lost_commits_at_open_ > 0;
  std::vector<std::string> left_alone;
  if (report.store_problems.empty() && report.corrupt.empty()) return out;
  AUXSTORE_ASSIGN_OR_RETURN(auto damaged, DamagedFiles());
  // With damaged files, the snapshots are judged after the rewrite, which
  // keeps every intact entry of a damaged block.
  if (damaged.empty()) {
    AUXSTORE_RETURN_IF_ERROR(RemoveCorrupt(report, &out, &left_alone));
  }
  bool changed = !damaged.empty();
  for (const auto& [cf, files] : damaged) {
    Status s = RewriteFamily(cf, files, &out);
    if (!s.ok()) out.not_repaired.push_back(s.ToString());
  }
  Status rebuilt = RebuildDerived(&out, &changed);
  if (!rebuilt.ok()) out.not_repaired.push_back(rebuilt.ToString());
  if (!changed) {
    out.not_repaired.insert(out.not_repaired.end(), report.store_problems.begin(),
                            report.store_problems.end());
  } else {
    VerifyReport again;
    const VerifyOptions options;  // the Verifier keeps a reference: not a temporary
    Verifier v(*this, options, &again);
    AUXSTORE_RETURN_IF_ERROR(v.Run());
    AUXSTORE_RETURN_IF_ERROR(RemoveCorrupt(again, &out, &left_alone));
    out.not_repaired.insert(out.not_repaired.end(), again.store_problems.begin(),
                            again.store_problems.end());
  }
  out.not_repaired.insert(out.not_repaired.end(), left_alone.begin(), left_alone.end());
  return out;
}

}  // namespace auxstore::store_internal
