// TieredStore's puts: PutSnapshot (kThrough: the pages sent while the
// local store commits, the record after both; kBehind: queued after the
// local commit; without local copies: the pool alone), and PutSnapshots,
// whose snapshots' pages all go to the pool in one window.
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <exception>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "store/shared/planned_pages.h"
#include "store/shared/tiered_store.h"

namespace auxstore::shared {

Status TieredStore::PutSnapshot(NamespaceId ns, const Prefix& prefix, uint64_t token_count,
                                std::span<const LayerBlob> layers, const PutOptions& put) {
  if (queue_) {  // kBehind: queued once the local commit is done
    AUXSTORE_RETURN_IF_ERROR(Local().PutSnapshot(ns, prefix, token_count, layers, put));
    return Upload(ns, prefix, layers, put);
  }
  if (!options_.shared_local_copies) return PutToPool(ns, prefix, token_count, layers, put);
  // kThrough: the pages go to the pool while the local store commits the
  // snapshot (the two take about as long: a put costs the longer of them,
  // not their sum); the record naming them is committed after both. Layers
  // the local put would refuse send nothing ahead.
  std::optional<std::vector<ByteSpan>> planned;
  auto spec = Local().GetNamespace(ns);
  if (spec.ok() && !options_.read_only) {
    auto pages = PlanPages(*spec, token_count, layers, put, options_.chunk_bytes);
    if (pages.ok()) planned = std::move(pages).value();
  }
  std::future<Result<std::vector<rados::PageKey>>> ahead;
  if (planned && !planned->empty()) {
    ahead = boost::asio::post(upload_threads_, boost::asio::use_future([this, &planned] {
                                return tier_->PutPagesAhead(*planned);
                              }));
  }
  const Status local = Local().PutSnapshot(ns, prefix, token_count, layers, put);
  std::vector<rados::PageKey> stored;
  if (ahead.valid()) {  // waited for in every case: it reads the caller's layers
    auto sent = ahead.get();
    // The pool did not take the pages: the put failed as an upload fails.
    if (local.ok() && !sent.ok()) return sent.status();
    if (sent.ok()) stored = std::move(sent).value();
  }
  AUXSTORE_RETURN_IF_ERROR(local);
  return Upload(ns, prefix, layers, put, stored);
}

Result<shared::Upload> TieredStore::PlanForPool(NamespaceId ns, const Prefix& prefix,
                                                uint64_t token_count,
                                                std::span<const LayerBlob> layers,
                                                const PutOptions& put) {
  SharedRecord r;
  r.ns = ns;
  r.prefix = prefix;
  AUXSTORE_ASSIGN_OR_RETURN(r.spec, Local().GetNamespace(ns));
  PutId put_id = 0;
  {
    std::lock_guard lock(put_id_mu_);
    while (put_id == 0) put_id = put_ids_();
  }
  AUXSTORE_ASSIGN_OR_RETURN(auto plan, PlanPut(r.spec, token_count, layers, put,
                                               options_.chunk_bytes, put_id, /*digests=*/true));
  r.manifest = std::move(plan.manifest);
  r.block_size = put.block_size;
  r.block_chain.assign(put.block_chain.begin(), put.block_chain.end());
  return shared::Upload{std::move(r), std::move(plan.layers)};
}

Status TieredStore::PutToPool(NamespaceId ns, const Prefix& prefix, uint64_t token_count,
                              std::span<const LayerBlob> layers, const PutOptions& put) {
  if (options_.read_only) return Status::Unavailable("store " + path_ + " is open read-only");
  AUXSTORE_ASSIGN_OR_RETURN(auto up, PlanForPool(ns, prefix, token_count, layers, put));
  return tier_->Put(up);
}

Status TieredStore::Upload(NamespaceId ns, const Prefix& prefix, std::span<const LayerBlob> layers,
                           const PutOptions& put, std::span<const rados::PageKey> ahead) {
  SharedRecord r;
  r.ns = ns;
  r.prefix = prefix;
  AUXSTORE_ASSIGN_OR_RETURN(r.spec, Local().GetNamespace(ns));
  const Prefix one[] = {prefix};
  AUXSTORE_ASSIGN_OR_RETURN(auto found, Local().GetManifests(ns, one));
  if (!found[0]) return Status::NotFound("snapshot " + prefix.ToHex() + " vanished before upload");
  r.manifest = std::move(*found[0]);
  r.block_size = put.block_size;
  r.block_chain.assign(put.block_chain.begin(), put.block_chain.end());
  // The caller's bytes, when they are what the local manifest committed
  // (a put of a prefix already stored keeps the stored snapshot's bytes).
  std::map<uint32_t, ByteSpan> given;
  for (const auto& l : layers) given[l.layer] = l.bytes;
  std::vector<ByteSpan> bytes;
  std::vector<std::vector<uint8_t>> reread;
  reread.reserve(r.manifest.layers.size());
  for (const LayerEntry& e : r.manifest.layers) {
    auto it = given.find(e.layer);
    if (it != given.end() && it->second.size() == e.bytes) {
      LayerHasher h(r.manifest, e);
      h.Update(it->second);
      if (h.Digest() == e.xxh3) {
        bytes.push_back(it->second);
        continue;
      }
    }
    AUXSTORE_ASSIGN_OR_RETURN(auto stored, Local().GetLayer(ns, prefix, e.layer));
    reread.push_back(std::move(stored));
    bytes.push_back(reread.back());
  }
  if (queue_) {
    queue_->Enqueue(std::move(r), bytes);
    return Status::Ok();
  }
  shared::Upload up{std::move(r), std::move(bytes)};
  return tier_->Put(up, ahead);
}

Status TieredStore::PutSnapshots(std::span<SnapshotPut> puts) {
  // kBehind queues each put after its local commit; a read-only store
  // refuses each (PutSnapshot says why): one after another.
  if (queue_ || options_.read_only || puts.size() < 2) return Store::PutSnapshots(puts);
  for (SnapshotPut& p : puts) p.status = Status::Ok();
  std::map<NamespaceId, Result<NamespaceSpec>> specs;  // each namespace's, read once
  const auto spec_of = [&](NamespaceId ns) -> const Result<NamespaceSpec>& {
    auto it = specs.find(ns);
    if (it == specs.end()) it = specs.emplace(ns, Local().GetNamespace(ns)).first;
    return it->second;
  };
  // Each snapshot's pages, planned as PutSnapshot plans them; a buffer named
  // by several snapshots is sent once (the same bytes in two buffers are
  // sent twice: the second write finds the object stored).
  std::vector<ByteSpan> pages;
  std::set<std::pair<const uint8_t*, size_t>> seen;
  const auto add_pages = [&](std::span<const ByteSpan> planned) {
    for (ByteSpan p : planned) {
      if (seen.emplace(p.data(), p.size()).second) pages.push_back(p);
    }
  };
  std::vector<bool> sent_ahead(puts.size(), false);
  std::vector<std::optional<shared::Upload>> pool_only(puts.size());
  if (!options_.shared_local_copies) {
    for (size_t i = 0; i < puts.size(); ++i) {
      SnapshotPut& p = puts[i];
      auto planned = PlanForPool(p.ns, p.prefix, p.token_count, p.layers, p.options);
      if (!planned.ok()) {
        p.status = planned.status();
        continue;
      }
      add_pages(CutPages({planned->record.manifest, planned->layers}));
      pool_only[i] = std::move(planned).value();
    }
  } else {
    for (size_t i = 0; i < puts.size(); ++i) {
      const SnapshotPut& p = puts[i];
      const auto& spec = spec_of(p.ns);
      if (!spec.ok()) continue;
      auto planned = PlanPages(*spec, p.token_count, p.layers, p.options, options_.chunk_bytes);
      if (!planned.ok()) continue;
      add_pages(*planned);
      sent_ahead[i] = true;
    }
  }
  // One window for the pages of all, beside the local commits. Every task
  // posted is waited for before this returns, on every path (exceptions
  // included): the tasks read the callers' layers and this frame's vectors.
  std::future<Result<std::vector<rados::PageKey>>> ahead;
  Result<std::vector<rados::PageKey>> sent = std::vector<rados::PageKey>{};
  std::vector<std::future<Status>> records(puts.size());
  struct WaitForTasks {
    std::future<Result<std::vector<rados::PageKey>>>& ahead;
    std::vector<std::future<Status>>& records;
    ~WaitForTasks() {
      if (ahead.valid()) ahead.wait();
      for (auto& r : records)
        if (r.valid()) r.wait();
    }
  } wait_for_tasks{ahead, records};
  if (!pages.empty()) {
    ahead = boost::asio::post(upload_threads_, boost::asio::use_future([this, &pages] {
                                return tier_->PutPagesAhead(pages);
                              }));
  }
  if (options_.shared_local_copies) {
    for (SnapshotPut& p : puts) {
      p.status = Local().PutSnapshot(p.ns, p.prefix, p.token_count, p.layers, p.options);
    }
  }
  if (ahead.valid()) sent = ahead.get();
  // The pool unreachable: every snapshot that sent pages failed as an
  // upload fails (a put of its own would wait out the op timeout again).
  // Any other error of the window: each record puts its own pages again.
  const bool unreachable = !sent.ok() && sent.status().code() == StatusCode::kUnavailable;
  const std::span<const rados::PageKey> stored =
      sent.ok() ? std::span<const rados::PageKey>(*sent) : std::span<const rados::PageKey>();
  // The records, each after its pages, two at a time on the upload threads
  // (each its own round trips: the touches, then the create).
  for (size_t i = 0; i < puts.size(); ++i) {
    SnapshotPut& p = puts[i];
    if (!p.status.ok()) continue;
    if ((sent_ahead[i] || pool_only[i]) && unreachable) {
      p.status = sent.status();
      continue;
    }
    records[i] = boost::asio::post(
        upload_threads_,
        boost::asio::use_future([this, &p, &sent_ahead, &pool_only, stored, i]() -> Status {
          try {
            if (pool_only[i]) return tier_->Put(*pool_only[i], stored);
            return Upload(p.ns, p.prefix, p.layers, p.options,
                          sent_ahead[i] ? stored : std::span<const rados::PageKey>());
          } catch (const std::exception& e) {
            return Status::Internal(std::string("a record's commit threw: ") + e.what());
          }
        }));
  }
  Status first;
  for (size_t i = 0; i < puts.size(); ++i) {
    if (records[i].valid()) puts[i].status = records[i].get();
    if (first.ok() && !puts[i].status.ok()) {
      first = puts[i].status.WithContext("puts[" + std::to_string(i) + "]");
    }
  }
  return first;
}

}  // namespace auxstore::shared
