// The path-level entry points of maintenance.h: how the CLI opens a store
// for verify, repair and compact.
#include "auxstore/maintenance.h"
#include "auxstore/store.h"
#include "store/refused_open_repair.h"

namespace auxstore {

Result<VerifyReport> VerifyStoreAt(const std::string& path, const VerifyOptions& options) {
  Options o;
  o.read_only = true;
  o.create_if_missing = false;
  // Lost commits are reported, not refused: the rest is still verified.
  o.accept_data_loss = true;
  auto store = Store::Open(o, path);
  if (!store.ok()) {
    if (!store.error().IsCorruption()) return store.error();
    VerifyReport report;
    report.store_problems.push_back(store.error().message());
    return report;
  }
  return (*store)->Verify(options);
}

Result<RepairReport> RepairStoreAt(const std::string& path, bool accept_data_loss,
                                   VerifyReport* report, const VerifyOptions& options) {
  Options o;
  o.create_if_missing = false;
  o.background_maintenance = false;
  o.accept_data_loss = accept_data_loss;
  auto store = Store::Open(o, path);
  std::vector<std::string> set_aside;
  std::string refusal;
  if (!store.ok() && store.error().IsCorruption()) {
    refusal = store.error().message();
    // RocksDB refuses a store whose live table file cannot be opened: set
    // it aside and rewrite around it, then open again (refused_open_repair.h).
    auto lines = store_internal::RepairUnopenableTables(path, o.log_sink, o.log_level);
    if (!lines.ok()) {
      return lines.error().WithContext("repair cannot open the store (" + store.error().message() +
                                       ")");
    }
    set_aside = std::move(*lines);
    if (!set_aside.empty()) store = Store::Open(o, path);
  }
  if (!store.ok()) {
    Status s = store.error();
    // What was already done stays done (and is found again by the next
    // run): said, so the operator knows where the files went.
    for (auto it = set_aside.rbegin(); it != set_aside.rend(); ++it) {
      s = s.WithContext("set aside: " + *it);
    }
    if (s.IsCorruption() && !accept_data_loss) {
      return s.WithContext(
          "repair cannot open the store (rerun with --accept-data-loss to keep what is left "
          "when committed snapshots were lost)");
    }
    return s;
  }
  AUXSTORE_ASSIGN_OR_RETURN(*report, (*store)->Verify(options));
  AUXSTORE_ASSIGN_OR_RETURN(RepairReport repaired, (*store)->Repair(*report));
  if (!set_aside.empty()) {
    // The damage the refusal was, found (and repaired): reported like any
    // other, so the verification is not clean (exit 1 in the CLI).
    report->store_problems.insert(report->store_problems.begin(), refusal);
    repaired.tables_set_aside = std::move(set_aside);
  }
  return repaired;
}

Result<CompactReport> CompactStoreAt(const std::string& path, const CompactOptions& options) {
  Options o;
  o.create_if_missing = false;
  o.background_maintenance = false;  // one explicit pass
  auto store = Store::Open(o, path);
  if (!store.ok()) {
    if (store.error().code() == StatusCode::kBusy) {
      return Status::Busy("compact needs the store to itself, but " + store.error().message() +
                          "; stop the writer and try again");
    }
    return store.error();
  }
  return (*store)->Compact(options);
}

}  // namespace auxstore
