// Reads of whole layers into caller memory: ReadLayerInto's copy of one
// layer, and ReadLayersInto, several layers of one snapshot with one
// manifest read and one iterator per owner put for all their records. Many
// small layers (a connector's pages) cost a manifest Get and an iterator
// Seek each otherwise, several times their bytes (bench/RESULTS.md,
// "Connector calls"). The Store base class has a plain version over
// ReadLayerInto for stores that do not override it. ReadSnapshotsInto: the
// layers of many snapshots, their manifests looked up in one MultiGet.
#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "format/layer_layout.h"
#include "store/db_store.h"
#include "store/keys.h"

namespace auxstore {
namespace {

// The layers from `from` on fail with `why`: the snapshot is gone or was
// quarantined, so none of them can be read any more.
void FailRest(std::span<Store::LayerInto> layers, size_t from, const Status& why) {
  for (size_t i = from; i < layers.size(); ++i) {
    layers[i].status = why.WithContext("layer " + std::to_string(layers[i].layer) + " not read");
    layers[i].bytes = 0;
  }
}

// Whether an error ends the reads of the snapshot's other layers.
bool EndsSnapshot(const Status& st) { return st.IsNotFound() || st.IsCorruption(); }

// Whether the read is a hit: a layer it asks for is in the manifest.
bool AsksForAny(const Manifest& m, std::span<const Store::LayerInto> layers) {
  return std::any_of(layers.begin(), layers.end(),
                     [&](const Store::LayerInto& l) { return m.FindLayer(l.layer) != nullptr; });
}

}  // namespace

Status Store::ReadLayersInto(NamespaceId ns, const Prefix& prefix, std::span<LayerInto> layers) {
  Status first;
  for (size_t i = 0; i < layers.size(); ++i) {
    LayerInto& l = layers[i];
    auto got = ReadLayerInto(ns, prefix, l.layer, l.dst);
    l.status = got.status();
    l.bytes = got.ok() ? *got : 0;
    if (got.ok()) continue;
    if (first.ok()) first = l.status;
    // A layer the snapshot lacks is that layer's error; a snapshot gone is
    // every remaining layer's.
    if (l.status.IsCorruption()) {
      FailRest(layers, i + 1, l.status);
      break;
    }
  }
  return first;
}

void Store::ReadSnapshotsInto(std::span<SnapshotInto> snapshots) {
  for (SnapshotInto& s : snapshots) (void)ReadLayersInto(s.ns, s.prefix, s.layers);
}

namespace store_internal {

Status DbStore::ReadLayersInto(NamespaceId ns, const Prefix& prefix, std::span<LayerInto> layers) {
  if (layers.empty()) return Status::Ok();
  auto loaded = LoadManifest(ns, prefix);
  if (!loaded.ok()) {
    FailRest(layers, 0, loaded.status());
    return layers[0].status;
  }
  if (AsksForAny(*loaded, layers)) Touch(ns, prefix);
  AfterManifestRead();
  return ReadLayersOf(ns, prefix, std::make_shared<const Manifest>(std::move(*loaded)), layers);
}

Status DbStore::ReadLayersOf(NamespaceId ns, const Prefix& prefix,
                             std::shared_ptr<const Manifest> manifest, std::span<LayerInto> layers,
                             std::shared_ptr<PieceReader> records) {
  for (int attempt = 1;; ++attempt) {
    if (!records) records = NewPieceReader(ns, ReadMode{});
    Status first;
    std::shared_ptr<const Manifest> again;
    for (size_t i = 0; i < layers.size(); ++i) {
      LayerInto& l = layers[i];
      // The next layer's first block comes in while this one is copied.
      if (i + 1 < layers.size()) PrefetchFirstPiece(*records, ns, *manifest, layers[i + 1].layer);
      auto got = CopyLayerInto(ns, prefix, manifest, l.layer, l.dst, records);
      l.status = got.status();
      l.bytes = got.ok() ? *got : 0;
      if (got.ok()) continue;
      if (first.ok()) first = l.status;
      // NotFound from a layer the manifest lacks is that layer's own; from a
      // layer it has, the snapshot was erased or replaced while read.
      const bool own = l.status.IsNotFound() && manifest->FindLayer(l.layer) == nullptr;
      if (!own && EndsSnapshot(l.status)) {
        // Replaced: every layer is read again, so that all of them come
        // from one version of the snapshot.
        again = ReadAgainUnder(ns, prefix, *manifest, l.layer, l.status, attempt);
        if (!again) FailRest(layers, i + 1, l.status);
        break;
      }
    }
    if (!again) return first;
    manifest = std::move(again);
    records = nullptr;  // the shared reader's iterators may be in the old put's range
  }
}

void DbStore::ReadSnapshotsInto(std::span<SnapshotInto> snapshots) {
  // Every manifest in one MultiGet, each then decoded as LoadManifest does.
  std::vector<std::string> keys;
  keys.reserve(snapshots.size());
  for (const SnapshotInto& s : snapshots) keys.push_back(SnapshotKey(s.ns, s.prefix));
  std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
  std::vector<rocksdb::PinnableSlice> values(keys.size());
  std::vector<rocksdb::Status> statuses(keys.size());
  db_->MultiGet(rocksdb::ReadOptions(), cf_[kManifests], keys.size(), slices.data(), values.data(),
                statuses.data());
  AfterManifestRead();
  // Snapshots that own all their records (each its own put: a connector's
  // pages) share one iterator per namespace, moved from one to the next (a
  // Next when they were put one after another, else a Seek), instead of an
  // iterator made and dropped per snapshot (about 6 % of a small page's
  // instructions). A chain's snapshots read from many owners in turn and
  // keep an iterator per owner.
  std::map<NamespaceId, std::shared_ptr<PieceReader>> across;
  // The hits' recency, under one lock of the index for the whole batch.
  std::vector<std::string> hits;
  for (size_t i = 0; i < snapshots.size(); ++i) {
    SnapshotInto& s = snapshots[i];
    if (s.layers.empty()) continue;
    auto m = ManifestFromLookup(s.ns, s.prefix, keys[i], statuses[i],
                                statuses[i].ok() ? values[i].ToStringView() : std::string_view());
    if (!m.ok()) {
      FailRest(s.layers, 0, m.status());
      continue;
    }
    std::shared_ptr<PieceReader> records;
    if (OwnsEveryRecord(*m)) {
      auto& shared = across[s.ns];
      if (!shared) shared = NewPieceReader(s.ns, ReadMode{}, /*across_puts=*/true);
      records = shared;
    }
    if (AsksForAny(*m, s.layers)) hits.push_back(std::move(keys[i]));
    (void)ReadLayersOf(s.ns, s.prefix, std::make_shared<const Manifest>(std::move(*m)), s.layers,
                       std::move(records));
  }
  index_.TouchedAll(hits, NowUnixMs());
}

}  // namespace store_internal
}  // namespace auxstore
