// Reads of whole layers into caller memory: ReadLayerInto's copy of one
// layer, and ReadLayersInto, several layers of one snapshot with one
// manifest read and one iterator per owner put for all their records. Many
// small layers (a connector's pages) cost a manifest Get and an iterator
// Seek each otherwise, several times their bytes (bench/RESULTS.md,
// "Connector calls"). The Store base class has a plain version over
// ReadLayerInto for stores that do not override it. ReadSnapshotsInto: the
// layers of many snapshots, their manifests looked up in one MultiGet.
#include <algorithm>
#include <atomic>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "format/layer_layout.h"
#include "store/db_store.h"
#include "store/keys.h"
#include "store/read_outcomes.h"

namespace auxstore {

void FailRest(std::span<Store::LayerInto> layers, size_t from, const Status& why) {
  for (size_t i = from; i < layers.size(); ++i) {
    layers[i].status = why.WithContext("layer " + std::to_string(layers[i].layer) + " not read");
    layers[i].bytes = 0;
  }
}

Status FirstError(std::span<const Store::LayerInto> layers) {
  for (const Store::LayerInto& l : layers) {
    if (!l.status.ok()) return l.status;
  }
  return Status::Ok();
}

namespace {

// Whether layer `l`'s outcome ends the reads of the snapshot's other
// layers: NotFound from a layer the manifest lacks is that layer's own;
// from a layer it has, the snapshot was erased or replaced while read.
// Corruption: the snapshot was found damaged.
bool EndsSnapshot(const Manifest& m, const Store::LayerInto& l) {
  if (l.status.IsCorruption()) return true;
  return l.status.IsNotFound() && m.FindLayer(l.layer) != nullptr;
}

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
    const std::optional<size_t> ended =
        WorthLanes(*manifest, layers) ? CopyLayersInLanes(ns, prefix, manifest, layers)
                                      : CopyLayersInTurn(ns, prefix, manifest, layers, records);
    std::shared_ptr<const Manifest> again;
    if (ended) {
      const LayerInto& l = layers[*ended];
      // Replaced: every layer is read again, so that all of them come from
      // one version of the snapshot. Otherwise the layers after it fail,
      // read or not.
      again = ReadAgainUnder(ns, prefix, *manifest, l.layer, l.status, attempt);
      if (!again) FailRest(layers, *ended + 1, l.status);
    }
    if (!again) return FirstError(layers);
    manifest = std::move(again);
    records = nullptr;  // the shared reader's iterators may be in the old put's range
  }
}

std::optional<size_t> DbStore::CopyLayersInTurn(NamespaceId ns, const Prefix& prefix,
                                                const std::shared_ptr<const Manifest>& manifest,
                                                std::span<LayerInto> layers,
                                                std::shared_ptr<PieceReader> records) {
  if (!records) records = NewPieceReader(ns, ReadMode{});
  for (size_t i = 0; i < layers.size(); ++i) {
    LayerInto& l = layers[i];
    // The next layer's first block comes in while this one is copied.
    if (i + 1 < layers.size()) PrefetchFirstPiece(*records, ns, *manifest, layers[i + 1].layer);
    auto got = CopyLayerInto(ns, prefix, manifest, l.layer, l.dst, records);
    l.status = got.status();
    l.bytes = got.ok() ? *got : 0;
    if (EndsSnapshot(*manifest, l)) return i;
  }
  return std::nullopt;
}

bool DbStore::WorthLanes(const Manifest& m, std::span<const LayerInto> layers) const {
  if (!lane_pool_ || layers.size() < 2) return false;
  uint64_t bytes = 0, largest = 0;
  for (const LayerInto& l : layers) {
    if (const LayerEntry* e = m.FindLayer(l.layer)) {
      bytes += e->bytes;
      largest = std::max(largest, e->bytes);
    }
  }
  return bytes - largest >= kLanesFromBytes;
}

// Lanes take the layers in order from one counter; a lane stops taking
// them after the first layer whose error ends the snapshot (`ended`: every
// layer before it was taken by then, and is read whole), and a layer after
// it being copied is abandoned between two pieces. The caller is one lane;
// the others run on lane_pool_, and one that starts only after the caller
// stopped takes nothing (the layers are all taken, or past `ended`) and
// touches nothing but the shared state. The outcomes are those of the
// layers read in turn: the damage of layer `ended` alone is quarantined,
// once no lane reads any more (a layer before it, still being read, must
// not meet its snapshot removed), and ReadLayersOf fails the layers after it.
std::optional<size_t> DbStore::CopyLayersInLanes(NamespaceId ns, const Prefix& prefix,
                                                 const std::shared_ptr<const Manifest>& manifest,
                                                 std::span<LayerInto> layers) {
  static constexpr size_t kNone = SIZE_MAX;
  struct Lanes {
    explicit Lanes(size_t n) : damage(n) {}
    std::atomic<size_t> next{0};
    std::atomic<size_t> ended{kNone};
    std::mutex mu;
    std::condition_variable idle;
    size_t running = 0;              // under mu
    std::vector<HeldDamage> damage;  // per layer, each written by its lane
  };
  ++lane_reads_;
  auto lanes = std::make_shared<Lanes>(layers.size());
  auto copy = [this, lanes, ns, prefix, manifest, layers](size_t i,
                                                          std::shared_ptr<PieceReader>& records) {
    LayerInto& l = layers[i];
    try {
      if (!records) records = NewPieceReader(ns, ReadMode{});
      auto got = CopyLayerInto(ns, prefix, manifest, l.layer, l.dst, records, &lanes->damage[i],
                               [&ended = lanes->ended, i] { return ended.load() < i; });
      l.status = got.status();
      l.bytes = got.ok() ? *got : 0;
    } catch (const std::exception& e) {  // out of memory: this layer's error
      l.status = Status::Internal("layer " + std::to_string(l.layer) + ": " + e.what());
      l.bytes = 0;
    }
    if (!EndsSnapshot(*manifest, l)) return;
    size_t was = lanes->ended.load();
    while (i < was && !lanes->ended.compare_exchange_weak(was, i)) {
    }
  };
  auto lane = [lanes, copy, n = layers.size()] {
    {
      std::lock_guard lock(lanes->mu);
      ++lanes->running;
    }
    std::shared_ptr<PieceReader> records;
    for (;;) {
      const size_t i = lanes->next.fetch_add(1);
      if (i >= n || i > lanes->ended.load()) break;
      copy(i, records);
    }
    records.reset();  // its iterators go before the caller may return
    std::lock_guard lock(lanes->mu);
    if (--lanes->running == 0) lanes->idle.notify_all();
  };
  const size_t helpers = std::min(read_lanes_, layers.size()) - 1;
  try {
    for (size_t h = 0; h < helpers; ++h) boost::asio::post(*lane_pool_, lane);
  } catch (const std::exception&) {  // fewer helpers; the caller's lane reads the rest
  }
  lane();
  {
    std::unique_lock lock(lanes->mu);
    lanes->idle.wait(lock, [&] { return lanes->running == 0; });
  }
  const size_t ended = lanes->ended.load();
  if (ended == kNone) return std::nullopt;
  QuarantineHeld(ns, prefix, *manifest, lanes->damage[ended]);
  return ended;
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
