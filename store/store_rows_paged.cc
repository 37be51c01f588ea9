// Row ranges of a paged layer (DbStore::ReadLayerRows, issue 24): only the
// records (chunks of the owners' page streams) that hold rows [first, last)
// of each array are read, each one verified on its own: its envelope
// decodes under its own key and its XXH3-64, seeded by that key, matches
// (CheckChunkRecord, store/record_check.h). The layer digest covers every
// page and cannot be checked on a part: the range does not depend on the
// records outside it, and damage there does not fail it. A layer without
// pages (opaque, or a put without a block chain) is read whole, through the
// layer reader, as Store::ReadLayerRows does.
#include <map>
#include <memory>
#include <string>

#include "store/bytes.h"
#include "store/db_store.h"
#include "store/keys.h"
#include "store/record_check.h"
#include "store/rocks/rocks_options.h"
#include "store/store_rows.h"

namespace auxstore::store_internal {

namespace {

std::string Where(NamespaceId ns, const Prefix& prefix) {
  return "prefix " + prefix.ToHex() + " in namespace " + NamespaceHex(ns);
}

}  // namespace

// The records of one layer's wanted pieces, read in key order through one
// iterator per owner put (a fresh iterator per piece costs more than the
// read: bench/RESULTS.md, chains). A value stays valid until its owner's
// iterator moves on.
class DbStore::RowRecords {
 public:
  RowRecords(DbStore& s, NamespaceId ns) : s_(s), ns_(ns) {}

  // The record under `key` of put `owner`: NotFound when absent.
  Status Read(PutId owner, const std::string& key, rocksdb::Slice* value) {
    Owner& o = owners_[owner];
    if (!o.it) {
      o.upper = PutRangeEnd(ns_, owner);
      o.upper_slice = o.upper;
      rocksdb::ReadOptions r = HotReadOptions();
      r.iterate_upper_bound = &o.upper_slice;
      o.it.reset(s_.db_->NewIterator(r, s_.cf_[kRecords]));
      o.it->Seek(key);
    } else if (!(o.it->Valid() && o.it->key() == rocksdb::Slice(key))) {
      o.it->Seek(key);
    }
    if (!o.it->Valid()) {
      if (!o.it->status().ok()) return s_.RecordReadError(key, o.it->status());
      return Status::NotFound("no record");
    }
    if (o.it->key() != rocksdb::Slice(key)) return Status::NotFound("no record");
    *value = o.it->value();
    return Status::Ok();
  }

 private:
  struct Owner {
    std::string upper;
    rocksdb::Slice upper_slice;
    std::unique_ptr<rocksdb::Iterator> it;
  };
  DbStore& s_;
  const NamespaceId ns_;
  std::map<PutId, Owner> owners_;
};

// A snapshot replaced while its rows were read (Compact moving its pages)
// is read again under its new manifest, as ReadLayerInto does (a layer
// without page runs, which Compact never moves, is read by
// Store::ReadLayerRows, which loads the manifest itself).
Result<Store::LayerRows> DbStore::ReadLayerRows(NamespaceId ns, const Prefix& prefix,
                                                uint32_t layer, uint64_t first_row,
                                                uint64_t last_row, std::span<uint8_t> dst) {
  AUXSTORE_ASSIGN_OR_RETURN(Manifest m, LoadManifest(ns, prefix));
  AfterManifestRead();
  return ReadUnderLatest(ns, prefix, std::make_shared<const Manifest>(std::move(m)), layer,
                         [&](const std::shared_ptr<const Manifest>& manifest) {
                           return ReadRowsUnder(ns, prefix, *manifest, layer, first_row, last_row,
                                                dst);
                         });
}

Result<Store::LayerRows> DbStore::ReadRowsUnder(NamespaceId ns, const Prefix& prefix,
                                                const Manifest& m, uint32_t layer,
                                                uint64_t first_row, uint64_t last_row,
                                                std::span<uint8_t> dst) {
  AUXSTORE_ASSIGN_OR_RETURN(RowsPlan plan, PlanRows(m, layer, first_row, last_row, dst.size()));
  if (plan.entry->runs.empty()) {
    return Store::ReadLayerRows(ns, prefix, layer, first_row, last_row, dst);
  }
  const LayerEntry& e = *plan.entry;
  Touch(ns, prefix);
  RowRecords records(*this, ns);
  for (const LayerPiece& piece : PlanPieces(m, e)) {
    if (!Wanted(plan.spans, piece.blob_offset, piece.bytes)) continue;
    const std::string key = RecordKey(ns, piece.owner, layer, piece.array, piece.chunk);
    const auto where = [&] {
      return "layer " + std::to_string(layer) + " array " + std::to_string(piece.array) +
             " chunk " + std::to_string(piece.chunk) + " of put " + PutHex(piece.owner) + " (" +
             Where(ns, prefix) + ")";
    };
    rocksdb::Slice value;
    Status st = records.Read(piece.owner, key, &value);
    if (st.IsNotFound()) {
      st = Status::Corruption("snapshot is torn: missing " + where());
    } else if (!st.ok()) {
      // A damaged block that may hold the record is its damage (Corruption);
      // one of a table file that cannot is a store problem (IOError).
      st = st.WithContext(where());
      if (!st.IsCorruption()) return st;
    }
    ByteSpan bytes;
    if (st.ok()) {
      auto checked = CheckChunkRecord(Bytes(key), Bytes(value),
                                      {e.kind, piece.chunk_offset, piece.bytes, false});
      if (checked.ok()) {
        bytes = *checked;
      } else {
        st = checked.error().WithContext(where());
      }
    }
    if (!st.ok()) return RowRecordDamaged(ns, prefix, m, layer, piece, std::move(st));
    CopyWanted(plan.spans, piece.blob_offset, bytes, dst);
    bytes_read_ += piece.bytes;
  }
  return plan.out;
}

// As the layer reader decides: the damaged record quarantines every snapshot
// using it, unless the snapshot was erased or replaced while it was read
// (its records went with the writer: NotFound).
Status DbStore::RowRecordDamaged(NamespaceId ns, const Prefix& prefix, const Manifest& m,
                                 uint32_t layer, const LayerPiece& piece, Status why) {
  const std::string skey = SnapshotKey(ns, prefix);
  const ManifestCheck same = SameManifest(skey, m);
  std::string now;
  if (!db_->Get(rocksdb::ReadOptions(), cf_[kManifests], skey, &now).ok() || !same(now)) {
    return Status::NotFound("snapshot of " + Where(ns, prefix) +
                            " was erased or replaced while it was being read");
  }
  (void)QuarantineRecord(ns, piece.owner, layer, piece.array, piece.chunk, why);
  (void)QuarantineIf(ns, prefix, same, why);  // gone already after the record's quarantine
  return why;
}

}  // namespace auxstore::store_internal
