// DbStore::Verifier, the manifests (db_store_verifier.h): each one checked
// against the puts it names (their run records, the refs that hold them, the
// damage found in exactly the pages and tails it uses) and its layer digest
// recomputed from the hashes the puts recorded.
#include <xxhash.h>

#include "auxstore/blob_hash.h"
#include "format/layer_layout.h"
#include "format/manifest.h"
#include "format/namespace_spec.h"
#include "format/run_record.h"
#include "store/bytes.h"
#include "store/db_store_verifier.h"

namespace auxstore::store_internal {

// ---- manifests: against the puts they name
void DbStore::Verifier::CheckSnapshots() {
  std::unique_ptr<rocksdb::Iterator> it(s_.db_->NewIterator(HotReadOptions(), s_.cf_[kManifests]));
  std::string last;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    last = it->key().ToString();
    CorruptSnapshot found;
    if (!ParseSnapshotKey(last, &found.ns, &found.prefix)) {
      r_.store_problems.push_back("a manifest record has a malformed key");
      continue;
    }
    ++r_.snapshots_checked;
    auto m = DecodeManifestRecord(last, Bytes(it->value()));
    run_problem_ = false;
    Status st = m.ok() ? CheckManifest(found.ns, found.prefix, *m, &found.layer)
                       : m.error().WithContext("manifest");
    if (!st.ok() && run_problem_) {
      // Only a run record failed: derived metadata, which repair rebuilds.
      // The snapshot is judged by its own bytes, read back whole.
      r_.store_problems.push_back("snapshot " + Where(found.ns, found.prefix) +
                                  " cannot be checked against its run records (" + st.message() +
                                  "); `verify --repair` rebuilds them");
      st = s_.VerifySnapshot(found.ns, found.prefix, *m, &found.layer, nullptr);
      // NotFound: erased or replaced while it was read (the reader's own
      // judgement), a writer's progress, not damage.
      if (st.IsNotFound()) {
        --r_.snapshots_checked;
        ++progress_.snapshots_done;
        continue;
      }
      // Any other error but Corruption is the store's (a table file that
      // does not hold the snapshot's records is damaged), not the snapshot's.
      if (!st.ok() && !st.IsCorruption()) {
        r_.store_problems.push_back("snapshot " + Where(found.ns, found.prefix) +
                                    " could not be read back: " + st.message());
        ++progress_.snapshots_done;
        continue;
      }
    }
    if (st.ok()) {
      ++r_.snapshots_ok;
    } else {
      found.why = st.ToString();
      r_.corrupt.push_back(std::move(found));
    }
    ++progress_.snapshots_done;
    if (o_.progress) o_.progress(progress_);
  }
  if (!it->status().ok()) {
    // Manifests in a damaged block cannot even be listed, so they cannot
    // be named; what follows the block is not reached either.
    r_.store_problems.push_back(
        "the manifests are unreadable" +
        (last.empty() ? std::string() : " after the snapshot with key " + ToHex(last)) + ": " +
        it->status().ToString());
  }
  for (const auto& [key, users] : page_users_) {
    for (uint32_t n : users) r_.shared_pages += n > 1;
  }
}

Status DbStore::Verifier::CheckManifest(NamespaceId ns, const Prefix& prefix, const Manifest& m,
                                        std::optional<uint32_t>* bad_layer) {
  // The namespace record is the store's, not the snapshot's: a damaged or
  // missing one is a store problem, and the snapshot is still judged by
  // its own bytes against its manifest (only the geometry check needs it).
  auto spec = s_.NamespaceSpecFor(ns);
  if (!spec.ok() && namespace_problems_.insert(ns).second) {
    r_.store_problems.push_back(NamespaceRecordProblem(ns, spec.error()));
  }
  const std::string where = Where(ns, prefix);
  for (PutId put : UsedPuts(m)) {
    referenced_.insert(PutKey(ns, put));
    auto has_ref = s_.ledger_.HasRef(ns, put, m.put_id);
    if (has_ref.ok() && !*has_ref && (put != m.put_id || puts_.count(PutKey(ns, put)))) {
      r_.store_problems.push_back("snapshot " + where + " has no ref to put " + PutHex(put) +
                                  " it reads: a removal could reclaim it");
    }
  }
  for (const LayerEntry& l : m.layers) {
    *bad_layer = l.layer;
    if (spec.ok()) {
      AUXSTORE_RETURN_IF_ERROR(CheckLayerBlob(l.layer, l.kind, l.header, l.bytes, *spec));
    }
    // The layer digest again, from the hashes the puts recorded for the
    // bytes just verified: the manifest names exactly those bytes.
    std::vector<std::vector<uint64_t>> page_xxh3(l.row_bytes.size());
    std::vector<uint64_t> tail_xxh3(l.row_bytes.size(), XXH3_64bits(nullptr, 0));
    AUXSTORE_RETURN_IF_ERROR(CheckSharedRuns(ns, m, l, &page_xxh3));
    AUXSTORE_RETURN_IF_ERROR(CheckOwnRows(ns, m, l, &tail_xxh3));
    AUXSTORE_RETURN_IF_ERROR(CheckLayerDigest(l, LayerDigest(l.header, page_xxh3, tail_xxh3)));
  }
  bad_layer->reset();
  return Status::Ok();
}

Status DbStore::Verifier::CheckSharedRuns(NamespaceId ns, const Manifest& m, const LayerEntry& l,
                                          std::vector<std::vector<uint64_t>>* hashes) {
  std::vector<std::vector<uint64_t>>& page_xxh3 = *hashes;
  for (const PageRun& r : l.runs) {
    Status why;
    const RunRecord* owner = RunRecordOf(ns, r.owner, &why);
    if (owner == nullptr) return why;
    const RunLayer* rl = owner->FindLayer(l.layer);
    if (rl == nullptr || rl->kind != l.kind || owner->page_tokens != m.page_tokens ||
        owner->chunk_bytes != r.owner_chunk_bytes || rl->first_page != r.owner_first_page ||
        rl->arrays.size() != l.row_bytes.size() || r.first_page < rl->first_page ||
        r.first_page + r.pages > rl->first_page + rl->pages) {
      return Status::Corruption("layer " + std::to_string(l.layer) + " pages [" +
                                std::to_string(r.first_page) + ", " +
                                std::to_string(r.first_page + r.pages) + ") are not pages put " +
                                PutHex(r.owner) + " stored");
    }
    for (size_t a = 0; a < rl->arrays.size(); ++a) {
      if (rl->arrays[a].row_bytes != l.row_bytes[a]) {
        return Status::Corruption("layer " + std::to_string(l.layer) +
                                  " has rows of another size than put " + PutHex(r.owner) +
                                  " stored");
      }
      const auto& h = rl->arrays[a].page_xxh3;
      page_xxh3[a].insert(page_xxh3[a].end(), h.begin() + (r.first_page - rl->first_page),
                          h.begin() + (r.first_page - rl->first_page + r.pages));
    }
    auto d = damage_.find(PutKey(ns, r.owner));
    if (d != damage_.end()) {
      auto dl = d->second.layers.find(l.layer);
      if (dl != d->second.layers.end()) {
        auto bad = dl->second.pages.lower_bound(r.first_page);
        if (bad != dl->second.pages.end() && *bad < r.first_page + r.pages) {
          charged_.insert(d->first);
          return Status::Corruption("page " + std::to_string(*bad) + " of layer " +
                                    std::to_string(l.layer) + " (stored by put " + PutHex(r.owner) +
                                    ") is damaged: " + d->second.why);
        }
      }
    }
    std::string users_key = PutKey(ns, r.owner);
    users_key.append(reinterpret_cast<const char*>(&l.layer), sizeof l.layer);
    auto& users = page_users_[users_key];
    if (users.size() < rl->pages) users.resize(rl->pages);
    for (uint32_t p = r.first_page; p < r.first_page + r.pages; ++p) {
      ++users[p - rl->first_page];
    }
  }
  return Status::Ok();
}

Status DbStore::Verifier::CheckOwnRows(NamespaceId ns, const Manifest& m, const LayerEntry& l,
                                       std::vector<uint64_t>* tail_xxh3) {
  bool own_bytes = false;
  for (size_t a = 0; a < l.row_bytes.size(); ++a) own_bytes |= TailBytes(m, l, a) > 0;
  if (own_bytes) {
    Status why;
    const RunRecord* own = RunRecordOf(ns, m.put_id, &why);
    if (own == nullptr) return why;
    const RunLayer* rl = own->FindLayer(l.layer);
    bool fits = rl != nullptr && rl->kind == l.kind && rl->arrays.size() == l.row_bytes.size() &&
                rl->first_page + rl->pages == l.full_pages() && own->chunk_bytes == m.chunk_bytes;
    for (size_t a = 0; fits && a < l.row_bytes.size(); ++a) {
      fits = rl->arrays[a].tail_bytes == TailBytes(m, l, a);
      if (fits) (*tail_xxh3)[a] = rl->arrays[a].tail_xxh3;
    }
    if (!fits) {
      return Status::Corruption("layer " + std::to_string(l.layer) +
                                "'s own rows are not what its put " + PutHex(m.put_id) + " stored");
    }
    auto d = damage_.find(PutKey(ns, m.put_id));
    if (d != damage_.end()) {
      auto dl = d->second.layers.find(l.layer);
      if (dl != d->second.layers.end() && dl->second.tail) {
        charged_.insert(d->first);
        return Status::Corruption("layer " + std::to_string(l.layer) +
                                  "'s own rows are damaged: " + d->second.why);
      }
    }
  }
  return Status::Ok();
}

}  // namespace auxstore::store_internal
