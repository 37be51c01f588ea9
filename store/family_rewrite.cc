#include "store/family_rewrite.h"

#include <rocksdb/write_batch.h>

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "store/sst_block_salvage.h"

namespace auxstore::store_internal {
namespace {

constexpr size_t kRewriteBatchBytes = 8u << 20;

Status StatusOf(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::Ok();
  if (s.IsCorruption()) return Status::Corruption(what + ": " + s.ToString());
  return Status::IOError(what + ": " + s.ToString());
}

bool Covered(const std::vector<RangeTombstone>& tombstones, std::string_view key,
             std::optional<uint64_t> below_sequence) {
  for (const RangeTombstone& t : tombstones) {
    if (key < t.begin || key >= t.end) continue;
    if (!below_sequence || *below_sequence < t.sequence) return true;
  }
  return false;
}

// The batch of rewritten entries, written whenever it grows large.
class Writer {
 public:
  Writer(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* family, const std::string& name,
         const RewriteHooks& hooks, RewriteCounts* counts)
      : db_(db), family_(family), name_(name), hooks_(hooks), counts_(counts) {}

  // The newest version of `key` (in table order: the first one offered
  // decides, whatever it is).
  Status Offer(std::string_view key, bool is_value, std::string_view value, bool covered,
               bool salvaged) {
    if (!decided_.emplace(key).second) return Status::Ok();
    if (!is_value || covered) return Status::Ok();
    if (hooks_.keep && !hooks_.keep(key, value)) {
      ++counts_->not_kept;
      return Status::Ok();
    }
    (void)batch_.Put(family_, rocksdb::Slice(key.data(), key.size()),
                     rocksdb::Slice(value.data(), value.size()));
    ++counts_->written;
    if (salvaged) ++counts_->salvaged;
    if (hooks_.on_written) hooks_.on_written(key);
    return batch_.GetDataSize() < kRewriteBatchBytes ? Status::Ok() : Write();
  }
  Status Write() {
    Status s = StatusOf(db_->Write(rocksdb::WriteOptions(), &batch_), "rewrite " + name_);
    batch_.Clear();
    return s;
  }

 private:
  rocksdb::DB* db_;
  rocksdb::ColumnFamilyHandle* family_;
  const std::string& name_;
  const RewriteHooks& hooks_;
  RewriteCounts* counts_;
  std::unordered_set<std::string> decided_;
  rocksdb::WriteBatch batch_;
};

}  // namespace

void SortNewestFirst(std::vector<RewriteTable>* tables) {
  std::sort(tables->begin(), tables->end(), [](const auto& a, const auto& b) {
    if (a.meta.level != b.meta.level) return a.meta.level < b.meta.level;
    return a.meta.largest_seqno > b.meta.largest_seqno;
  });
}

Status WriteNewestVersions(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* family,
                           const std::string& family_name, std::vector<RewriteTable> tables,
                           const RewriteHooks& hooks, RewriteCounts* counts) {
  SortNewestFirst(&tables);
  Writer writer(db, family, family_name, hooks, counts);
  std::vector<RangeTombstone> newer_deletions;
  for (const RewriteTable& table : tables) {
    TableWalk walk;
    auto on_entry = [&](const TableEntry& e) -> Status {
      const bool covered = Covered(newer_deletions, e.user_key, std::nullopt) ||
                           Covered(walk.range_tombstones, e.user_key, e.sequence);
      return writer.Offer(e.user_key, e.type == kTypeValue, e.value, covered, false);
    };
    AUXSTORE_RETURN_IF_ERROR(WalkTable(table.path, on_entry, &walk));
    counts->damaged_blocks += walk.damaged_blocks;
    if (hooks.salvage_damaged_blocks && table.damaged) {
      // A damaged block's entries come after the table's others: a key the
      // intact blocks already decided keeps that version.
      for (const auto& [offset, size] : walk.damaged_block_handles) {
        for (const SalvagedEntry& e : SalvageDataBlock({table.path, offset, size})) {
          const bool covered = Covered(newer_deletions, e.user_key, std::nullopt) ||
                               Covered(walk.range_tombstones, e.user_key, e.sequence);
          AUXSTORE_RETURN_IF_ERROR(writer.Offer(e.user_key, e.is_value, e.value, covered, true));
        }
      }
    }
    if (hooks.on_table) AUXSTORE_RETURN_IF_ERROR(hooks.on_table(table, walk));
    newer_deletions.insert(newer_deletions.end(), walk.range_tombstones.begin(),
                           walk.range_tombstones.end());
  }
  return writer.Write();
}

}  // namespace auxstore::store_internal
