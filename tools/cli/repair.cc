// `auxstore verify --repair`: quarantines exactly the snapshots a scrub named.
#include <rocksdb/convenience.h>

#include "auxstore/store.h"
#include "store/keys.h"
#include "store/watermark.h"
#include "tools/cli/raw_db.h"
#include "tools/cli/verify.h"

namespace auxstore::cli {

Result<RepairReport> RepairStore(const std::string& path, const VerifyReport& report,
                                 const RepairOptions& options) {
  RepairReport out;
  for (const std::string& p : report.store_problems) {
    if (report.watermark_lost && options.accept_data_loss &&
        (p.find("watermark") != std::string::npos)) {
      continue;
    }
    out.not_repaired.push_back(p);
  }
  if (report.watermark_lost && !options.accept_data_loss) {
    return Status::Corruption(
        "repair cannot open the store: committed snapshots were lost (see the report); rerun "
        "with --accept-data-loss to keep what is left");
  }
  out.accepted_data_loss = report.watermark_lost;
  if (report.corrupt.empty() && !report.watermark_lost) return out;
  {
    Options o;
    o.create_if_missing = false;
    o.background_maintenance = false;
    o.accept_data_loss = options.accept_data_loss;
    AUXSTORE_ASSIGN_OR_RETURN(auto store, Store::Open(o, path));
    for (const CorruptSnapshot& c : report.corrupt) {
      // Quarantine returns `why` when it removed the manifest.
      const Status why = Status::Corruption(c.why);
      Status q = store->Quarantine(c.ns, c.prefix, why);
      if (!q.ok() && q != why) return q.WithContext("quarantine " + c.prefix.ToHex());
    }
  }
  if (report.watermark_lost) {
    // The store never lowers its watermark itself (it keeps the old, higher
    // one, and every later open would fail again): vouch for what is left.
    AUXSTORE_RETURN_IF_ERROR(store_internal::WriteWatermark(path, report.commit_seq));
  }
  // The manifests are gone; now the records, and files wholly inside them.
  AUXSTORE_ASSIGN_OR_RETURN(auto raw, RawDb::Open(path, /*read_only=*/false));
  rocksdb::WriteOptions wo;
  wo.sync = true;
  for (const CorruptSnapshot& c : report.corrupt) {
    const std::string begin = store_internal::SnapshotKey(c.ns, c.prefix);
    const std::string end = store_internal::SnapshotRangeEnd(c.ns, c.prefix);
    AUXSTORE_RETURN_IF_ERROR(
        FromRocksStatus(raw->db()->DeleteRange(wo, raw->cf(store_internal::kRecords), begin, end),
                        "delete the records of " + c.prefix.ToHex()));
    rocksdb::Slice b(begin), e(end);
    AUXSTORE_RETURN_IF_ERROR(FromRocksStatus(
        rocksdb::DeleteFilesInRange(raw->db(), raw->cf(store_internal::kRecords), &b, &e),
        "drop the files of " + c.prefix.ToHex()));
    out.removed.push_back(c);
  }
  return out;
}

}  // namespace auxstore::cli
