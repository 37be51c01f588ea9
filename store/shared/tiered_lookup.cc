// TieredStore's lookups and reads: the local store first; on a miss the
// pool, asked for every candidate in one batched round, and what it holds
// restored into the local store, which then answers.
#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <future>
#include <optional>

#include "store/shared/tiered_store.h"

namespace auxstore::shared {

Status TieredStore::SpecCheck(const SharedRecord& r) const {
  if (NamespaceFingerprint(r.spec) == r.ns) return Status::Ok();
  return Status::Corruption("RADOS pool '" + tier_->pool() + "': snapshot " + r.prefix.ToHex() +
                            "'s namespace spec does not fingerprint to its namespace id");
}

Result<std::vector<LayerBuffer>> TieredStore::Fetch(const SharedRecord& r) {
  const SharedRecord* one[] = {&r};
  return std::move(FetchEach(r.ns, one)[0]);
}

std::vector<Result<std::vector<LayerBuffer>>> TieredStore::FetchEach(
    NamespaceId ns, std::span<const SharedRecord* const> records) {
  std::vector<std::optional<Result<std::vector<LayerBuffer>>>> got(records.size());
  std::vector<const SharedRecord*> asked;
  std::vector<size_t> asked_at;
  for (size_t k = 0; k < records.size(); ++k) {
    const SharedRecord& r = *records[k];
    if (Status spec = SpecCheck(r); !spec.ok()) {
      got[k] = std::move(spec);
      continue;
    }
    asked.push_back(&r);
    asked_at.push_back(k);
  }
  const std::vector<Status> leased =
      ReadUnderLeases(ns, asked, [&](std::span<const size_t> which, SharedTier::OnDamage on) {
        std::vector<const SharedRecord*> these;
        for (size_t j : which) these.push_back(asked[j]);
        auto read = tier_->ReadLayersOfEach(these, on);
        std::vector<Status> status;
        for (size_t i = 0; i < which.size(); ++i) {
          status.push_back(read[i].status());
          got[asked_at[which[i]]] = std::move(read[i]);
        }
        return status;
      });
  for (size_t j = 0; j < asked.size(); ++j)
    if (!leased[j].ok()) got[asked_at[j]] = leased[j];
  std::vector<Result<std::vector<LayerBuffer>>> out;
  for (auto& g : got) out.push_back(std::move(*g));
  return out;
}

std::vector<Status> TieredStore::ReadUnderLeases(NamespaceId ns,
                                                 std::span<const SharedRecord* const> records,
                                                 const LeasedRead& read) {
  // Leased in the pool while their pages are read: no erase removes a record
  // (and so no compact its pages) under us. NotFound: erased meanwhile. The
  // leases are taken on lease_thread_ beside the page reads, after every
  // release queued there before (one round trip less per restore), and
  // released behind, not waited for.
  if (records.empty()) return {};
  std::vector<Prefix> prefixes;
  std::vector<size_t> all;
  for (const SharedRecord* r : records) {
    all.push_back(prefixes.size());
    prefixes.push_back(r->prefix);
  }
  const uint64_t lease_ms = 4 * tier_->op_timeout().count();
  auto leasing =
      boost::asio::post(lease_thread_, boost::asio::use_future([this, ns, prefixes, lease_ms] {
                          return tier_->TakeLeases(ns, prefixes, lease_ms);
                        }));
  const std::vector<Status> first = read(all, SharedTier::OnDamage::kReport);
  const std::vector<Status> leased = leasing.get();
  std::vector<size_t> again;  // damage met before the lease held: read again under it
  for (size_t j = 0; j < records.size(); ++j) {
    if (leased[j].ok() && first[j].code() == StatusCode::kCorruption) again.push_back(j);
  }
  if (!again.empty()) (void)read(again, SharedTier::OnDamage::kQuarantine);
  for (size_t j = 0; j < records.size(); ++j) {
    if (leased[j].ok()) ReleasePoolLeaseBehind(ns, records[j]->prefix);
  }
  return leased;
}

Status TieredStore::Fill(const SharedRecord& r, const std::vector<LayerBuffer>& layers) {
  // On fill_thread_ (or inline): the local store itself, never Local().
  AUXSTORE_ASSIGN_OR_RETURN(NamespaceId ns, local_->RegisterNamespace(r.spec));
  std::vector<LayerBlob> blobs;
  for (size_t i = 0; i < r.manifest.layers.size(); ++i) {
    const LayerEntry& e = r.manifest.layers[i];
    blobs.push_back({e.layer, e.kind, layers[i].span()});
  }
  PutOptions put;
  put.token_digest = r.manifest.token_digest;
  put.block_chain = r.block_chain;
  put.block_size = r.block_size;
  put.created_unix_ms = r.manifest.created_unix_ms;
  AUXSTORE_RETURN_IF_ERROR(local_->PutSnapshot(ns, r.prefix, r.manifest.token_count, blobs, put));
  ++tier_->counters().restores;
  return Status::Ok();
}

Status TieredStore::RestoreFromPool(NamespaceId ns, std::span<const Prefix> prefixes, size_t from,
                                    Want want, std::optional<size_t>* restored) {
  if (from >= prefixes.size()) return Status::Ok();
  AUXSTORE_ASSIGN_OR_RETURN(auto records, tier_->ReadRecords(ns, prefixes.subspan(from)));
  Status first_error;
  auto note = [&](const Status& st) {  // true when `st` is OK
    if (!st.ok() && first_error.ok() && st.code() != StatusCode::kNotFound) first_error = st;
    return st.ok();
  };
  if (want == Want::kLongest) {
    // The answer once the pages are read and checked; the local copy behind
    // (inline on a read-only store: its fill fails, and the lookup with it).
    for (size_t i = records.size(); i-- > 0;) {
      if (!records[i]) continue;
      auto fetched = Fetch(*records[i]);
      if (!note(fetched.status())) continue;
      if (options_.read_only) {
        if (!note(Fill(*records[i], *fetched))) continue;
      } else {
        FillBehind(*records[i], std::move(fetched).value());
      }
      if (restored) *restored = from + i;
      return Status::Ok();
    }
    return first_error;
  }
  // A batch: the pages of a group of snapshots read in one window, the next
  // group's read from the pool (waiting on the OSDs) while the one before is
  // written into the local store (CPU and local disk). A leading run on a
  // store that can write is written behind, as a lookup's.
  const bool leading = want == Want::kLeading;
  const bool behind = leading && !options_.read_only;
  std::vector<const SharedRecord*> wanted;  // a leading run ends at the first the pool lacks
  for (const auto& rec : records) {
    if (rec) {
      wanted.push_back(&*rec);
    } else if (leading) {
      break;
    }
  }
  std::vector<std::future<Status>> filling;  // the group before's fills (not behind)
  size_t run = 0;                            // the leading run fetched and queued behind
  bool ended = false;
  for (size_t g = 0; g < wanted.size() && !ended;) {
    size_t end = g;
    for (uint64_t bytes = 0; end < wanted.size() && (end == g || bytes < kFetchGroupBytes); ++end) {
      for (const LayerEntry& e : wanted[end]->manifest.layers) bytes += e.bytes;
    }
    auto fetched = FetchEach(ns, std::span(wanted).subspan(g, end - g));
    for (auto& f : filling) {
      if (!note(f.get()) && leading) ended = true;  // the run ends at a snapshot not local
    }
    filling.clear();
    for (size_t k = 0; k < fetched.size() && !ended; ++k) {
      if (!note(fetched[k].status())) {
        ended = leading;
        continue;
      }
      if (behind) {
        FillBehind(*wanted[g + k], std::move(fetched[k]).value());
        ++run;
        continue;
      }
      // The record is copied: the fill must not depend on this frame.
      filling.push_back(boost::asio::post(
          fill_thread_, boost::asio::use_future(
                            [this, r = *wanted[g + k], layers = std::move(fetched[k]).value()]() {
                              return Fill(r, layers);
                            })));
    }
    g = end;
  }
  for (auto& f : filling) note(f.get());
  if (behind && restored) *restored = from + run;
  return first_error;
}

Result<TieredStore::Restored> TieredStore::RestoreIfMissing(NamespaceId ns, const Prefix& prefix,
                                                            bool need_local) {
  const Prefix one[] = {prefix};
  // NotFound: a namespace this directory has not registered (the pool's
  // record carries its spec, and the restore registers it).
  auto local = Local().GetManifests(ns, one);
  if (local.ok() && (*local)[0]) return Restored{};
  if (!local.ok() && local.status().code() != StatusCode::kNotFound) return local.status();
  AUXSTORE_ASSIGN_OR_RETURN(auto records, tier_->ReadRecords(ns, one));
  if (!records[0]) return Restored{};
  auto fetched = Fetch(*records[0]);
  if (fetched.status().IsNotFound()) return Restored{};  // erased meanwhile
  AUXSTORE_RETURN_IF_ERROR(fetched.status());
  // The local copy is a cache of the pool's: when it cannot be written the
  // bytes just read and checked still answer (a read-only store never
  // tries; it cannot write).
  const bool copy = options_.shared_local_copies || need_local;
  Status filled =
      options_.read_only ? Status::Unavailable("the store is open read-only: no local copy written")
      : !copy ? Status::Unavailable("Options::shared_local_copies is off: no local copy written")
              : Fill(*records[0], *fetched);
  if (filled.ok()) {
    AUXSTORE_ASSIGN_OR_RETURN(auto now, Local().GetManifests(ns, one));
    return Restored{now[0].has_value(), nullptr, Status::Ok()};
  }
  if (!options_.read_only && copy) WarnNotFilled(*records[0], filled);
  auto unfilled = std::make_shared<PendingFill>();
  unfilled->record = std::move(*records[0]);
  unfilled->layers = std::move(fetched).value();
  return Restored{false, std::move(unfilled), std::move(filled)};
}

template <typename F, typename G>
auto TieredStore::ReadThrough(NamespaceId ns, const Prefix& prefix, F&& read, G&& unfilled,
                              bool need_local) -> decltype(read()) {
  auto r = read();
  if (r.ok() || r.status().code() != StatusCode::kNotFound) return r;
  auto restored = RestoreIfMissing(ns, prefix, need_local);
  if (!restored.ok()) return restored.status();
  if (restored->unfilled) return unfilled(*restored);
  return restored->local ? read() : r;
}

template <typename F>
auto TieredStore::ReadThrough(NamespaceId ns, const Prefix& prefix, F&& read) -> decltype(read()) {
  return ReadThrough(
      ns, prefix, read,
      [&](const Restored& got) -> decltype(read()) {
        return got.why.WithContext("snapshot " + prefix.ToHex() + " of RADOS pool '" +
                                   tier_->pool() + "' has no local copy, and none was written");
      },
      /*need_local=*/true);
}

Status TieredStore::TakePoolLease(NamespaceId ns, const Prefix& prefix, uint64_t lease_ms) {
  {
    std::unique_lock lock(releasing_mu_);
    releasing_cv_.wait(lock, [&] { return !releasing_.contains({ns, prefix}); });
  }
  return tier_->TakeLease(ns, prefix, lease_ms);
}

void TieredStore::ReleasePoolLeaseBehind(NamespaceId ns, const Prefix& prefix) {
  {
    std::lock_guard lock(releasing_mu_);
    releasing_.insert({ns, prefix});
  }
  boost::asio::post(lease_thread_, [this, ns, prefix] {
    (void)tier_->ReleaseLease(ns, prefix);  // one lost with the process expires
    std::lock_guard lock(releasing_mu_);
    releasing_.erase(releasing_.find({ns, prefix}));
    releasing_cv_.notify_all();
  });
}

void TieredStore::LeaseInPool(LeaseId lease, NamespaceId ns, const Prefix& prefix,
                              uint64_t lease_ms) {
  // NotFound: the snapshot is only local (not uploaded yet, or its upload
  // queued); the local lease still holds it here.
  if (!TakePoolLease(ns, prefix, lease_ms).ok()) return;
  std::lock_guard lock(leases_mu_);
  leases_[lease] = {ns, prefix};
}

Status TieredStore::ReleaseLease(LeaseId lease) {
  std::optional<std::pair<NamespaceId, Prefix>> pooled;
  {
    std::lock_guard lock(leases_mu_);
    auto it = leases_.find(lease);
    if (it != leases_.end()) {
      pooled = it->second;
      leases_.erase(it);
    }
  }
  if (pooled) (void)tier_->ReleaseLease(pooled->first, pooled->second);
  return Local().ReleaseLease(lease);
}

// ---- lookups -------------------------------------------------------------

Result<std::optional<size_t>> TieredStore::LongestPrefix(NamespaceId ns,
                                                         std::span<const Prefix> candidates) {
  return LongestPrefixOf(ns, candidates, options_.shared_local_copies);
}

Result<std::optional<size_t>> TieredStore::LongestPrefixOf(NamespaceId ns,
                                                           std::span<const Prefix> candidates,
                                                           bool restore) {
  // The local store as it is, and the restores still being written into it.
  AUXSTORE_ASSIGN_OR_RETURN(auto local, local_->LongestPrefix(ns, candidates));
  if (auto pending = LongestPending(ns, candidates, local ? *local + 1 : 0)) local = pending;
  const size_t from = local ? *local + 1 : 0;
  if (from >= candidates.size()) return local;
  if (!restore) {
    // The pool's records alone: the longest it holds.
    auto records = tier_->ReadRecords(ns, candidates.subspan(from));
    if (!records.ok()) return local ? Result<std::optional<size_t>>(local) : records.status();
    for (size_t i = records->size(); i-- > 0;)
      if ((*records)[i] && SpecCheck(*(*records)[i]).ok()) return std::optional<size_t>(from + i);
    return local;
  }
  std::optional<size_t> restored;
  Status st = RestoreFromPool(ns, candidates, from, Want::kLongest, &restored);
  // The pool unreachable: the local answer when there is one.
  if (!st.ok()) return local ? Result<std::optional<size_t>>(local) : st;
  return restored ? restored : local;
}

Result<std::optional<Store::PrefixMatch>> TieredStore::FindLongestPrefix(
    NamespaceId ns, std::span<const Prefix> candidates, const LookupOptions& options) {
  AUXSTORE_ASSIGN_OR_RETURN(auto found, LongestPrefixOf(ns, candidates, /*restore=*/true));
  if (!found) return std::optional<PrefixMatch>();
  AUXSTORE_ASSIGN_OR_RETURN(auto match, Local().FindLongestPrefix(ns, candidates, options));
  if (match && match->lease != 0) {
    LeaseInPool(match->lease, ns, candidates[match->index], options.lease_ms);
  }
  return match;
}

Result<std::optional<Store::TokenMatch>> TieredStore::LongestPrefixForTokens(
    NamespaceId ns, std::span<const uint32_t> tokens, uint32_t block_size, uint64_t salt,
    const LookupOptions& options) {
  const auto candidates = PrefixHashes(tokens, block_size, salt);
  if (!candidates.empty()) {
    auto found = LongestPrefixOf(ns, candidates, /*restore=*/true);
    if (!found.ok()) return found.status();
  }
  AUXSTORE_ASSIGN_OR_RETURN(auto match,
                            Local().LongestPrefixForTokens(ns, tokens, block_size, salt, options));
  if (match && match->lease != 0) LeaseInPool(match->lease, ns, match->prefix, options.lease_ms);
  return match;
}

Result<std::vector<std::optional<Manifest>>> TieredStore::GetManifests(
    NamespaceId ns, std::span<const Prefix> prefixes) {
  AUXSTORE_ASSIGN_OR_RETURN(auto local, Local().GetManifests(ns, prefixes));
  std::vector<Prefix> missing;
  for (size_t i = 0; i < prefixes.size(); ++i)
    if (!local[i]) missing.push_back(prefixes[i]);
  if (missing.empty()) return local;
  AUXSTORE_RETURN_IF_ERROR(RestoreFromPool(ns, missing, 0, Want::kAll));
  return Local().GetManifests(ns, prefixes);
}

Result<size_t> TieredStore::CountLeadingHere(NamespaceId ns, std::span<const Prefix> prefixes) {
  size_t n = 0;
  while (n < prefixes.size()) {
    const size_t before = n;
    AUXSTORE_ASSIGN_OR_RETURN(size_t local, local_->CountLeadingStored(ns, prefixes.subspan(n)));
    n += local;
    while (n < prefixes.size() && PendingOf(ns, prefixes[n])) ++n;
    if (n == before) break;
  }
  return n;
}

Result<size_t> TieredStore::CountLeadingStored(NamespaceId ns, std::span<const Prefix> prefixes) {
  return CountLeadingOf(ns, prefixes, options_.shared_local_copies);
}

Result<size_t> TieredStore::CountLeadingOf(NamespaceId ns, std::span<const Prefix> prefixes,
                                           bool restore) {
  // The local store as it is, and the restores still being written into it.
  AUXSTORE_ASSIGN_OR_RETURN(size_t here, CountLeadingHere(ns, prefixes));
  if (here >= prefixes.size()) return here;
  if (!restore) {
    // The pool's records alone: the run goes on while the pool or the local
    // store holds the next one.
    auto records = tier_->ReadRecords(ns, prefixes.subspan(here));
    if (!records.ok()) return here > 0 ? Result<size_t>(here) : records.status();
    size_t n = here;
    while (n < prefixes.size()) {
      if ((*records)[n - here] && SpecCheck(*(*records)[n - here]).ok()) {
        ++n;
        continue;
      }
      AUXSTORE_ASSIGN_OR_RETURN(size_t more, CountLeadingHere(ns, prefixes.subspan(n)));
      if (more == 0) break;
      n += more;
    }
    return n;
  }
  std::optional<size_t> run_end;
  Status st = RestoreFromPool(ns, prefixes, here, Want::kLeading, &run_end);
  // A run restored before the pool failed still counts: its bytes are here.
  if (!st.ok() && !(run_end && *run_end > here)) return here > 0 ? Result<size_t>(here) : st;
  if (!run_end) return Local().CountLeadingStored(ns, prefixes);  // filled inline
  AUXSTORE_ASSIGN_OR_RETURN(size_t after, CountLeadingHere(ns, prefixes.subspan(*run_end)));
  return *run_end + after;
}

Result<Store::BatchLeases> TieredStore::LookupAndLease(NamespaceId ns,
                                                       std::span<const Prefix> prefixes,
                                                       uint64_t lease_ms) {
  auto leading = CountLeadingOf(ns, prefixes, /*restore=*/true);
  if (!leading.ok()) return leading.status();
  AUXSTORE_ASSIGN_OR_RETURN(auto leases, Local().LookupAndLease(ns, prefixes, lease_ms));
  for (size_t i = 0; i < leases.leases.size(); ++i)
    if (leases.leases[i] != 0) LeaseInPool(leases.leases[i], ns, prefixes[i], lease_ms);
  return leases;
}

Result<LeaseId> TieredStore::AcquireLease(NamespaceId ns, const Prefix& prefix, uint64_t lease_ms) {
  AUXSTORE_ASSIGN_OR_RETURN(LeaseId lease, ReadThrough(ns, prefix, [&] {
                              return Local().AcquireLease(ns, prefix, lease_ms);
                            }));
  LeaseInPool(lease, ns, prefix, lease_ms);
  return lease;
}

// ---- reads: restored from the pool on a local miss -----------------------
// The byte reads (ReadLayer, GetLayer, ReadLayerInto; ReadLayersInto in
// tiered_reads_into.cc) serve a snapshot whose local copy is queued from its
// checked layers, and read any other from the local store at once, without
// waiting for the copies queued before (Local()): those are other
// snapshots', and a batch restore reads its first snapshots while the last
// ones are still being written.

Result<Manifest> TieredStore::GetManifest(NamespaceId ns, const Prefix& prefix) {
  return ReadThrough(ns, prefix, [&] { return Local().GetManifest(ns, prefix); });
}

Status TieredStore::ReadLayer(NamespaceId ns, const Prefix& prefix, uint32_t layer,
                              const ChunkSink& sink) {
  const auto from_memory = [&](const PendingFill& p) -> Result<bool> {
    AUXSTORE_ASSIGN_OR_RETURN(auto bytes, PendingLayer(p, layer));
    AUXSTORE_RETURN_IF_ERROR(sink(0, bytes));
    return true;
  };
  if (auto pending = PendingOf(ns, prefix)) return from_memory(*pending).status();
  auto r = ReadThrough(
      ns, prefix,
      [&]() -> Result<bool> {
        AUXSTORE_RETURN_IF_ERROR(local_->ReadLayer(ns, prefix, layer, sink));
        return true;
      },
      [&](const Restored& got) { return from_memory(*got.unfilled); });
  return r.status();
}

Result<std::vector<uint8_t>> TieredStore::GetLayer(NamespaceId ns, const Prefix& prefix,
                                                   uint32_t layer) {
  const auto copy_of = [&](const PendingFill& p) -> Result<std::vector<uint8_t>> {
    AUXSTORE_ASSIGN_OR_RETURN(auto bytes, PendingLayer(p, layer));
    return std::vector<uint8_t>(bytes.begin(), bytes.end());
  };
  if (auto pending = PendingOf(ns, prefix)) return copy_of(*pending);
  return ReadThrough(
      ns, prefix, [&] { return local_->GetLayer(ns, prefix, layer); },
      [&](const Restored& got) { return copy_of(*got.unfilled); });
}

Result<std::unique_ptr<LayerReader>> TieredStore::OpenLayer(NamespaceId ns, const Prefix& prefix,
                                                            const Manifest& manifest,
                                                            uint32_t layer, PieceChecks checks) {
  // The manifest came from this store (GetManifest restored it first).
  return Local().OpenLayer(ns, prefix, manifest, layer, checks);
}

Result<uint64_t> TieredStore::ReadLayerInto(NamespaceId ns, const Prefix& prefix, uint32_t layer,
                                            std::span<uint8_t> dst) {
  if (auto pending = PendingOf(ns, prefix)) return CopyPending(*pending, layer, dst);
  if (!options_.shared_local_copies) {  // straight from the pool when only it holds the snapshot
    LayerInto one{layer, dst};
    SnapshotInto snapshot{ns, prefix, {&one, 1}};
    ReadSnapshotsInto({&snapshot, 1});
    if (!one.status.ok()) return one.status;
    return one.bytes;
  }
  return ReadThrough(
      ns, prefix, [&] { return local_->ReadLayerInto(ns, prefix, layer, dst); },
      [&](const Restored& got) { return CopyPending(*got.unfilled, layer, dst); });
}

Result<Store::LayerRows> TieredStore::ReadLayerRows(NamespaceId ns, const Prefix& prefix,
                                                    uint32_t layer, uint64_t first_row,
                                                    uint64_t last_row, std::span<uint8_t> dst) {
  return ReadThrough(ns, prefix, [&] {
    return Local().ReadLayerRows(ns, prefix, layer, first_row, last_row, dst);
  });
}

}  // namespace auxstore::shared
