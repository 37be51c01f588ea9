// Store::PutSnapshot: pages shared with the snapshots of the same chain, only
// what is missing written, everything committed in one batch, last.
//
//  1. Validate every layer (nothing written on failure).
//  2. Plan: each QSA/DSA layer's full pages (rows [p*P, (p+1)*P) of every
//     array, p < F, F bounded by the rows and the chain) and their XXH3s.
//  3. Resolve (the page ledger, PageLedger::ShareChain): a page is shared
//     when the put that stored it holds that page of this layer with the
//     same hashes. Sharing stops at the first page that is not (the rest of
//     the chain cannot be stored either, but for a divergent page). The
//     owners used are pinned: nothing reclaims them before the commit.
//  4. Write this put's own stream per (layer, array): its pages from the
//     first unshared one, then the tail rows; opaque layers whole. Big ones
//     as an SST ingested under a write intent, small ones in the commit batch.
//  5. Commit, under the page ledger's lock: the manifest (runs pin every page by hash), the
//     put's run record, page index entries for its new pages, a ref from the
//     put to every owner it uses, the commit sequence. A manifest is visible
//     only with every page it names durable: an owner's pages were committed
//     with its own manifest, and it stays while a ref to it exists.
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/write_batch.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <thread>

#include "auxstore/blob_hash.h"
#include "format/byte_order.h"
#include "format/envelope.h"
#include "format/layer_layout.h"
#include "format/manifest.h"
#include "format/run_record.h"
#include "store/bytes.h"
#include "store/db_store.h"
#include "store/keys.h"
#include "store/meta_keys.h"
#include "store/put_plan.h"
#include "store/put_rules.h"

namespace auxstore::store_internal {

PutId DbStore::NewPutId() {
  // Consecutive ids from a random start per handle: unique across crashes
  // and handles without a counter to persist (two handles' runs of n ids
  // meet with odds about 2n/2^64, and AssemblePut skips an id already
  // stored); never 0. The records of puts made one after another are
  // neighbours in key order, so a batched read of them steps from one put's
  // records to the next instead of seeking (PieceReader).
  std::lock_guard lock(put_id_mu_);
  if (!put_id_seeded_) {
    std::random_device rd;
    next_put_id_ = (uint64_t{rd()} << 32) ^ rd();
    put_id_seeded_ = true;
  }
  PutId id = 0;
  while (id == 0) id = next_put_id_++;
  return id;
}

Status DbStore::PutSnapshot(NamespaceId ns, const Prefix& prefix, uint64_t token_count,
                            std::span<const LayerBlob> layers, const PutOptions& put) {
  AUXSTORE_RETURN_IF_ERROR(CheckWritable());
  auto spec = NamespaceSpecFor(ns);
  if (!spec.ok()) return spec.error();
  PutPlan plan;
  plan.ns = ns;
  plan.prefix = prefix;
  plan.options = &put;
  AUXSTORE_RETURN_IF_ERROR(PlanLayers(*spec, token_count, layers, &plan));

  const std::string skey = SnapshotKey(ns, prefix);
  KeyLock key_lock(this, skey);
  {
    std::string existing;
    rocksdb::Status g = db_->Get(rocksdb::ReadOptions(), cf_[kManifests], skey, &existing);
    if (g.ok()) {
      ++duplicate_puts_;
      return Status::Ok();
    }
    if (!g.IsNotFound()) return FromRocks(g, "look up prefix " + prefix.ToHex());
  }
  HashPages(&plan);
  AUXSTORE_RETURN_IF_ERROR(SharePages(&plan));
  AUXSTORE_RETURN_IF_ERROR(AssemblePut(token_count, &plan));
  AUXSTORE_RETURN_IF_ERROR(StorePut(skey, &plan));
  ++puts_;
  bytes_written_ += plan.own_bytes;
  std::vector<std::pair<std::string, uint64_t>> used;
  for (const auto& [o, bytes] : plan.shared.owners) used.emplace_back(PutKey(ns, o), bytes);
  if (!plan.streams.empty()) used.emplace_back(PutKey(ns, plan.put_id), plan.run.stored_bytes());
  const int64_t now = NowUnixMs();
  index_.Added(
      skey, {plan.manifest.payload_bytes(), plan.manifest.created_unix_ms, now, std::move(used)});
  if (options_.capacity_bytes && index_.bytes() > options_.capacity_bytes) {
    {
      std::lock_guard lock(maint_mu_);
      poke_ = true;
    }
    maint_cv_.notify_all();
  }
  return Status::Ok();
}

// 1. Every layer validated before anything is written.
Status DbStore::PlanLayers(const NamespaceSpec& spec, uint64_t token_count,
                           std::span<const LayerBlob> layers, PutPlan* plan) {
  const PutOptions& put = *plan->options;
  if (layers.empty()) return Status::InvalidArgument("a snapshot needs at least one layer");
  plan->chained = !put.block_chain.empty();
  AUXSTORE_RETURN_IF_ERROR(CheckBlockChain(put.block_chain.size(), put.block_size, token_count));
  if (plan->chained) {
    AUXSTORE_ASSIGN_OR_RETURN(plan->page_tokens, ChainPageTokens(spec, put.block_size));
  }
  plan->sorted.assign(layers.begin(), layers.end());
  std::vector<LayerBlob>& sorted = plan->sorted;
  std::sort(sorted.begin(), sorted.end(),
            [](const LayerBlob& a, const LayerBlob& b) { return a.layer < b.layer; });
  plan->layers.resize(sorted.size());
  for (size_t i = 0; i < sorted.size(); ++i) {
    const LayerBlob& l = sorted[i];
    AUXSTORE_RETURN_IF_ERROR(CheckPutLayer(l, i > 0 ? &sorted[i - 1] : nullptr, spec));
    PutPlan::Layer& p = plan->layers[i];
    p.blob = &l;
    AUXSTORE_ASSIGN_OR_RETURN(p.shape, ShapeOf(l.kind, l.bytes, spec));
    for (size_t a = 0; a < p.shape.row_bytes.size(); ++a) {
      if (ChunkCount(p.shape.rows * p.shape.row_bytes[a], options_.chunk_bytes) == UINT32_MAX) {
        return Status::InvalidArgument("layer " + std::to_string(l.layer) + " is too large");
      }
    }
  }
  return Status::Ok();
}

// 2. Each QSA/DSA layer's full pages (rows [p*P, (p+1)*P) of every array,
// p < F, F bounded by the rows and the chain) and their XXH3s.
void DbStore::HashPages(PutPlan* plan) {
  if (!plan->chained) return;
  const uint32_t page_tokens = plan->page_tokens;
  const uint64_t chain_tokens = plan->ChainTokens();
  for (PutPlan::Layer& p : plan->layers) {
    if (p.blob->kind == Kind::kOpaque) continue;
    p.full_pages = ChainFullPages(p.shape.rows, chain_tokens, page_tokens);
    p.page_xxh3.resize(p.shape.row_bytes.size());
    for (size_t a = 0; a < p.shape.row_bytes.size(); ++a) {
      const uint64_t page_bytes = uint64_t{page_tokens} * p.shape.row_bytes[a];
      const ByteSpan array = p.Slice(a, 0);
      p.page_xxh3[a].reserve(p.full_pages);
      for (uint32_t pg = 0; pg < p.full_pages; ++pg) {
        p.page_xxh3[a].push_back(XXH3_64bits(array.data() + pg * page_bytes, page_bytes));
      }
    }
  }
}

// 3. The pages already stored, their owners pinned (the page ledger).
Status DbStore::SharePages(PutPlan* plan) {
  const uint32_t max_pages = plan->MaxPages();
  std::vector<Prefix> page_ends;
  page_ends.reserve(max_pages);
  for (uint32_t pg = 0; pg < max_pages; ++pg) page_ends.push_back(plan->ChainAt(pg));
  std::vector<LayerPages> wanted;
  wanted.reserve(plan->layers.size());
  for (const PutPlan::Layer& p : plan->layers) {
    wanted.push_back({p.blob->layer, p.blob->kind, p.full_pages, p.shape.row_bytes, &p.page_xxh3});
  }
  AUXSTORE_ASSIGN_OR_RETURN(plan->shared, ledger_.ShareChain(plan->ns, plan->page_tokens, page_ends,
                                                             wanted, plan->share_from));
  for (size_t i = 0; i < plan->layers.size(); ++i) {
    plan->layers[i].runs = std::move(plan->shared.layers[i].runs);
    plan->layers[i].own_first = plan->shared.layers[i].own_first;
  }
  return Status::Ok();
}

// 4. The put's id, manifest, run record and own streams (per (layer,
// array): its pages from the first unshared one, then the tail rows;
// opaque layers whole).
Status DbStore::AssemblePut(uint64_t token_count, PutPlan* plan) {
  const PutOptions& put = *plan->options;
  for (plan->put_id = NewPutId();; plan->put_id = NewPutId()) {
    AUXSTORE_ASSIGN_OR_RETURN(bool taken, ledger_.HasRun(plan->ns, plan->put_id));
    if (!taken) break;
  }
  const uint32_t page_tokens = plan->page_tokens;
  Manifest& m = plan->manifest;
  m.token_count = token_count;
  m.created_unix_ms = put.created_unix_ms.value_or(NowUnixMs());
  m.chunk_bytes = options_.chunk_bytes;
  m.token_digest = put.token_digest;
  m.put_id = plan->put_id;
  m.page_tokens = plan->MaxPages() > 0 || plan->chained ? page_tokens : 0;
  RunRecord& run = plan->run;
  run.prefix = plan->prefix;
  run.page_tokens = page_tokens;
  run.chunk_bytes = options_.chunk_bytes;
  uint32_t chain_lo = UINT32_MAX, chain_hi = 0;
  for (PutPlan::Layer& p : plan->layers) {
    const LayerBlob& l = *p.blob;
    RunLayer rl{l.layer, l.kind, p.own_first, p.full_pages - p.own_first, {}};
    bool stores = false;
    for (size_t a = 0; a < p.shape.row_bytes.size(); ++a) {
      const ByteSpan own = p.Slice(a, uint64_t{p.own_first} * page_tokens);
      const uint64_t pages_bytes = uint64_t{rl.pages} * page_tokens * p.shape.row_bytes[a];
      RunArray ra;
      ra.row_bytes = p.shape.row_bytes[a];
      ra.tail_bytes = own.size() - pages_bytes;
      ra.tail_xxh3 = XXH3_64bits(own.data() + pages_bytes, ra.tail_bytes);
      if (rl.pages > 0) {
        ra.page_xxh3.assign(p.page_xxh3[a].begin() + p.own_first, p.page_xxh3[a].end());
      }
      rl.arrays.push_back(std::move(ra));
      if (!own.empty()) {
        plan->streams.push_back({l.layer, static_cast<uint8_t>(a), l.kind, own});
        plan->own_bytes += own.size();
        stores = true;
      }
    }
    if (rl.pages > 0) {
      chain_lo = std::min(chain_lo, rl.first_page);
      chain_hi = std::max(chain_hi, rl.first_page + rl.pages);
      p.runs.push_back({plan->put_id, p.own_first, options_.chunk_bytes, p.own_first, rl.pages});
    }
    // The layer digest from the hashes just taken: every byte hashed once.
    std::vector<uint64_t> tails;
    for (const RunArray& ra : rl.arrays) tails.push_back(ra.tail_xxh3);
    const uint64_t digest = LayerDigest(p.shape.header, p.page_xxh3, tails);
    if (stores || rl.pages > 0) run.layers.push_back(std::move(rl));
    m.layers.push_back({l.layer, l.kind, l.bytes.size(), digest, p.shape.header, p.shape.rows,
                        p.shape.row_bytes, std::move(p.runs)});
  }
  if (chain_lo < chain_hi) {
    run.chain_first_page = chain_lo;
    for (uint32_t pg = chain_lo; pg < chain_hi; ++pg) run.chain.push_back(plan->ChainAt(pg));
  }
  return Status::Ok();
}

// 5. The streams written (big ones as an SST ingested under a write intent,
// small ones in the commit batch), then one commit: the manifest (runs pin
// every page by hash) with the ledger's entries (run record, page entries of
// its new pages, a ref to every owner it reads) and the commit sequence. A
// manifest is visible only with every page it names durable: an owner's
// pages were committed with its own manifest, and it stays while a ref to it
// exists.
Status DbStore::StorePut(const std::string& skey, PutPlan* plan) {
  CommitBatch batch;
  AUXSTORE_RETURN_IF_ERROR(StageRecords(skey, plan, &batch));
  const PutEntries entries = EntriesOf(*plan);
  const bool shares = !entries.owners.empty();
  return ledger_.CommitPut(entries, &batch, [&](CommitBatch* b) {
    return CommitManifest(&b->rocks, plan->ns, plan->prefix, plan->manifest, shares);
  });
}

// The put's own streams: big ones as an SST ingested under a write intent
// (the intent's removal joins `batch`), small ones in `batch`.
Status DbStore::StageRecords(const std::string& skey, const PutPlan* plan, CommitBatch* batch) {
  const NamespaceId ns = plan->ns;
  if (plan->own_bytes >= options_.ingest_threshold_bytes) {
    AUXSTORE_RETURN_IF_ERROR(WriteIngested(ns, plan->put_id, skey, plan->streams));
    return FromRocks(batch->rocks.Delete(cf_[kMeta], kIntentPrefix + PutKey(ns, plan->put_id)),
                     "batch");
  }
  // Records and manifest in one WriteBatch: atomic, never orphaned.
  return ForEachRecord(ns, plan->put_id, plan->streams,
                       [&](const std::string& k, const std::string& v) {
                         return FromRocks(batch->rocks.Put(cf_[kRecords], k, v), "batch a record");
                       });
}

PutEntries DbStore::EntriesOf(const PutPlan& plan) {
  PutEntries entries;
  entries.snapshot = {plan.ns, plan.prefix};
  entries.put = plan.put_id;
  entries.run = plan.streams.empty() ? nullptr : &plan.run;
  for (const auto& [o, bytes] : plan.shared.owners) entries.owners.push_back(o);
  return entries;
}

Status DbStore::ForEachRecord(NamespaceId ns, PutId put, std::span<const OwnStream> streams,
                              const RecordEmit& emit) {
  std::string value;
  for (const OwnStream& s : streams) {
    const uint32_t chunks = ChunkCount(s.bytes.size(), options_.chunk_bytes);
    for (uint32_t c = 0; c < chunks; ++c) {
      const std::string key = RecordKey(ns, put, s.layer, s.array, c);
      const ByteSpan payload = s.bytes.subspan(uint64_t{c} * options_.chunk_bytes,
                                               ChunkSize(s.bytes.size(), options_.chunk_bytes, c));
      value.resize(kEnvelopeHeaderBytes + payload.size());
      auto* p = reinterpret_cast<uint8_t*>(value.data());
      EncodeEnvelopeHeader(Bytes(key), ChunkRecordKind(s.kind), payload, p);
      if (!payload.empty()) std::memcpy(p + kEnvelopeHeaderBytes, payload.data(), payload.size());
      AUXSTORE_RETURN_IF_ERROR(emit(key, value));
    }
  }
  return Status::Ok();
}

}  // namespace auxstore::store_internal

namespace auxstore {

Status CheckBlockChain(size_t blocks, uint32_t block_size, uint64_t token_count) {
  if (blocks == 0) return Status::Ok();
  if (block_size == 0) return Status::InvalidArgument("a block chain needs a block size");
  if (blocks > token_count / block_size) {
    return Status::InvalidArgument("the block chain has " + std::to_string(blocks) + " blocks of " +
                                   std::to_string(block_size) +
                                   " tokens, more than the snapshot's " +
                                   std::to_string(token_count) + " tokens");
  }
  return Status::Ok();
}

}  // namespace auxstore
