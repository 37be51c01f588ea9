// TieredStore's reads into the caller's memory (ReadLayersInto,
// ReadSnapshotsInto): what the local store holds, or a lookup restored and
// is still writing, is read from there; a snapshot only the pool holds
// (another node's or another process's, not looked up here) is read from
// the pool straight into the layers' destinations. The records of all such
// snapshots in one round, their leases beside the page reads, the pages of
// all of them in one window, each page checked against its key and each
// layer against its digest in the caller's memory: one copy, out of
// librados's buffers. A snapshot read whole is copied once more, in the
// pass that checks each layer's digest, into the buffers its local copy is
// written from, behind (FillBehind), unless Options::shared_local_copies is
// off.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "store/read_outcomes.h"
#include "store/shared/tiered_store.h"

namespace auxstore::shared {
namespace {

// Layer `layer`'s place in m.layers; nullopt when m lacks it.
std::optional<size_t> IndexOf(const Manifest& m, uint32_t layer) {
  const LayerEntry* e = m.FindLayer(layer);
  if (e == nullptr) return std::nullopt;
  return static_cast<size_t>(e - m.layers.data());
}

// The layers (of snapshots[k], whose record is records[k]) whose bytes
// would land where another's do. Their pages are read in one window and
// each layer's digest is checked in its destination, so an overlap would
// be taken for damage and quarantine a sound snapshot in the pool: they
// are refused instead. (The local store checks what it copies, not the
// destination: there an overlap is only the caller's loss.)
std::set<const Store::LayerInto*> Overlapping(
    const std::vector<std::optional<SharedRecord>>& records,
    std::span<Store::SnapshotInto* const> snapshots) {
  struct Range {
    const uint8_t* begin;
    const uint8_t* end;
    const Store::LayerInto* layer;
  };
  std::vector<Range> ranges;
  for (size_t k = 0; k < snapshots.size(); ++k) {
    if (!records[k]) continue;
    for (const Store::LayerInto& l : snapshots[k]->layers) {
      const std::optional<size_t> index = IndexOf(records[k]->manifest, l.layer);
      if (!index) continue;
      const uint64_t bytes = records[k]->manifest.layers[*index].bytes;
      if (bytes == 0 || l.dst.size() < bytes) continue;
      ranges.push_back({l.dst.data(), l.dst.data() + bytes, &l});
    }
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return std::less<const uint8_t*>()(a.begin, b.begin);
  });
  std::set<const Store::LayerInto*> out;
  const uint8_t* reach = nullptr;  // the furthest end so far
  const Store::LayerInto* reacher = nullptr;
  for (const Range& r : ranges) {
    if (reacher && std::less<const uint8_t*>()(r.begin, reach)) {
      out.insert(r.layer);
      out.insert(reacher);
    }
    if (!reacher || std::less<const uint8_t*>()(reach, r.end)) {
      reach = r.end;
      reacher = r.layer;
    }
  }
  return out;
}

bool AllNotFound(std::span<const Store::LayerInto> layers) {
  return !layers.empty() && std::all_of(layers.begin(), layers.end(), [](const auto& l) {
    return l.status.code() == StatusCode::kNotFound;
  });
}

}  // namespace

Status TieredStore::ReadLayersInto(NamespaceId ns, const Prefix& prefix,
                                   std::span<LayerInto> layers) {
  SnapshotInto one{ns, prefix, layers};
  ReadSnapshotsInto({&one, 1});
  return FirstError(layers);
}

void TieredStore::ReadSnapshotsInto(std::span<SnapshotInto> snapshots) {
  std::vector<SnapshotInto> here;
  for (SnapshotInto& s : snapshots) {
    if (auto pending = PendingOf(s.ns, s.prefix)) {
      (void)CopyPendingLayers(*pending, s.layers);
    } else {
      here.push_back(s);
    }
  }
  local_->ReadSnapshotsInto(here);
  // A snapshot every layer of which is NotFound may be missing here (or
  // lack every layer asked for): the local manifests say which, one batch
  // per namespace; the missing ones are the pool's to answer.
  std::map<NamespaceId, std::vector<SnapshotInto*>> missed;
  for (SnapshotInto& s : here)
    if (AllNotFound(s.layers)) missed[s.ns].push_back(&s);
  std::vector<SnapshotInto> again;  // written locally since they were read (a fill)
  for (auto& [ns, candidates] : missed) {
    std::vector<Prefix> prefixes;
    for (const SnapshotInto* s : candidates) prefixes.push_back(s->prefix);
    auto local = local_->GetManifests(ns, prefixes);
    // NotFound: a namespace this directory has not registered.
    if (!local.ok() && !local.status().IsNotFound()) continue;
    std::vector<SnapshotInto*> absent;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (!local.ok() || !(*local)[i]) {
        absent.push_back(candidates[i]);
      } else {
        again.push_back(*candidates[i]);
      }
    }
    if (!absent.empty()) ReadFromPool(ns, absent);
  }
  if (!again.empty()) local_->ReadSnapshotsInto(again);
}

void TieredStore::ReadFromPool(NamespaceId ns, std::span<SnapshotInto* const> snapshots) {
  std::vector<Prefix> prefixes;
  for (const SnapshotInto* s : snapshots) prefixes.push_back(s->prefix);
  auto records = tier_->ReadRecords(ns, prefixes);
  if (!records.ok()) {
    for (SnapshotInto* s : snapshots) FailRest(s->layers, 0, records.status());
    return;
  }
  // Where each record's wanted layers go; a layer's own error (not in the
  // snapshot, a destination too small) is set here and that layer skipped.
  std::vector<const SharedRecord*> asked;
  std::vector<SnapshotInto*> asked_for;
  std::vector<std::vector<SharedTier::LayerDst>> wanted;
  std::vector<std::vector<size_t>> wanted_at;    // into the snapshot's layers
  std::vector<std::vector<LayerBuffer>> copies;  // for local copies; empty: none
  uint64_t room = FillRoom();                    // copies made only of what will be queued
  const std::set<const Store::LayerInto*> overlapping = Overlapping(*records, snapshots);
  for (size_t k = 0; k < snapshots.size(); ++k) {
    if (!(*records)[k]) continue;  // not in the pool either: the local NotFound stands
    const SharedRecord& r = *(*records)[k];
    SnapshotInto& s = *snapshots[k];
    if (Status spec = SpecCheck(r); !spec.ok()) {
      FailRest(s.layers, 0, spec);
      continue;
    }
    std::vector<SharedTier::LayerDst> to;
    std::vector<size_t> at;
    for (size_t i = 0; i < s.layers.size(); ++i) {
      Store::LayerInto& l = s.layers[i];
      l.bytes = 0;
      const std::optional<size_t> index = IndexOf(r.manifest, l.layer);
      if (!index) {
        l.status = Status::NotFound("layer " + std::to_string(l.layer) +
                                    " is not in the snapshot of prefix " + r.prefix.ToHex());
        continue;
      }
      const uint64_t bytes = r.manifest.layers[*index].bytes;
      if (l.dst.size() < bytes) {
        l.status =
            Status::OutOfRange("layer " + std::to_string(l.layer) + " of prefix " +
                               r.prefix.ToHex() + " is " + std::to_string(bytes) +
                               " bytes; the destination holds " + std::to_string(l.dst.size()));
        continue;
      }
      if (overlapping.contains(&l)) {
        l.status = Status::InvalidArgument(
            "layer " + std::to_string(l.layer) + " of prefix " + r.prefix.ToHex() +
            ": its destination overlaps another layer's in the same read");
        continue;
      }
      to.push_back({*index, l.dst});
      at.push_back(i);
    }
    if (to.empty()) continue;
    // Asked for whole (every layer): copied for its local copy in the pass
    // that checks each layer, when the copy queue has room. A read into
    // memory does not wait for the local disk: the bytes are where the
    // caller wants them, and the pool keeps them.
    std::vector<SharedTier::LayerDst*> first(r.manifest.layers.size(), nullptr);
    for (SharedTier::LayerDst& d : to)
      if (!first[d.index]) first[d.index] = &d;
    uint64_t whole = 0;
    for (const LayerEntry& e : r.manifest.layers) whole += e.bytes;
    std::vector<LayerBuffer> copy;
    if (options_.shared_local_copies && !options_.read_only &&
        std::find(first.begin(), first.end(), nullptr) == first.end() &&
        (whole <= room || room == kMaxPendingFillBytes)) {  // one larger than the bound: alone
      room = whole < room ? room - whole : 0;
      for (size_t li = 0; li < first.size(); ++li) {
        const uint64_t bytes = r.manifest.layers[li].bytes;
        copy.push_back({std::make_unique_for_overwrite<uint8_t[]>(bytes), bytes});
        first[li]->copy = {copy.back().data.get(), bytes};
      }
    }
    copies.push_back(std::move(copy));
    asked.push_back(&r);
    asked_for.push_back(&s);
    wanted.push_back(std::move(to));
    wanted_at.push_back(std::move(at));
  }
  if (asked.empty()) return;  // no lease to wait for
  std::vector<SharedTier::LayersRead> outcome(asked.size());
  const std::vector<Status> leased =
      ReadUnderLeases(ns, asked, [&](std::span<const size_t> which, SharedTier::OnDamage on) {
        std::vector<const SharedRecord*> these;
        std::vector<std::vector<SharedTier::LayerDst>> their;
        for (size_t j : which) {
          these.push_back(asked[j]);
          their.push_back(wanted[j]);
        }
        auto read = tier_->ReadLayersInto(these, their, on);
        std::vector<Status> status;
        for (size_t i = 0; i < which.size(); ++i) {
          status.push_back(read[i].status);
          outcome[which[i]] = std::move(read[i]);
        }
        return status;
      });
  for (size_t j = 0; j < asked.size(); ++j) {
    if (!leased[j].ok()) outcome[j] = {leased[j], 0};
    const SharedRecord& r = *asked[j];
    SnapshotInto& s = *asked_for[j];
    const size_t read = outcome[j].status.ok() ? wanted[j].size() : outcome[j].failed_at;
    for (size_t w = 0; w < read; ++w) {
      Store::LayerInto& l = s.layers[wanted_at[j][w]];
      l.status = Status::Ok();
      l.bytes = r.manifest.layers[wanted[j][w].index].bytes;
    }
    if (!outcome[j].status.ok()) {
      // As the local store's: the failing layer has its own error, the ones
      // after it that error as not read.
      const size_t failed = wanted_at[j][outcome[j].failed_at];
      s.layers[failed].status = outcome[j].status;
      s.layers[failed].bytes = 0;
      FailRest(s.layers, failed + 1, outcome[j].status);
      continue;
    }
    if (!copies[j].empty()) {
      FillBehind(r, std::move(copies[j]), /*wait=*/false);
    } else if (options_.shared_local_copies && !options_.read_only) {
      RestoreBehind(r.ns, r.prefix, r.manifest);  // read in part, or no room now
    }
  }
}

}  // namespace auxstore::shared
