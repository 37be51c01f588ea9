// Store::PutSnapshot: pages shared with the snapshots of the same chain, only
// what is missing written, everything committed in one batch, last.
//
//  1. Validate every layer (nothing written on failure).
//  2. Plan: each QSA/DSA layer's full pages (rows [p*P, (p+1)*P) of every
//     array, p < F, F bounded by the rows and the chain) and their XXH3s.
//  3. Resolve, under pages_mu_: one MultiGet of the page index at the
//     chain's page ends; a page is shared when the put that stored it holds
//     that page of this layer with the same hashes. Sharing stops at the
//     first page that is not (the rest of the chain cannot be stored either,
//     but for a divergent page). The owners found are pinned: nothing
//     reclaims them before the commit.
//  4. Write this put's own stream per (layer, array): its pages from the
//     first unshared one, then the tail rows; opaque layers whole. Big ones
//     as an SST ingested under a write intent, small ones in the commit batch.
//  5. Commit, under pages_mu_: the manifest (runs pin every page by hash), the
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

namespace auxstore::store_internal {
namespace {

struct LayerPlan {
  const LayerBlob* blob = nullptr;
  LayerShape shape;
  uint32_t full_pages = 0;                       // F
  std::vector<std::vector<uint64_t>> page_xxh3;  // [array][page], pages [0, F)
  std::vector<PageRun> runs;                     // shared ones; the own one is added last
  uint32_t own_first = 0;
};

ByteSpan ArraySlice(const LayerPlan& p, size_t a, uint64_t first_row) {
  const uint64_t rb = p.shape.row_bytes[a];
  const uint64_t begin = ArrayOffset(p.shape, a) + first_row * rb;
  return p.blob->bytes.subspan(begin, (p.shape.rows - first_row) * rb);
}

}  // namespace

std::string EncodePageRef(NamespaceId ns, uint32_t page_tokens, const Prefix& chain_hash,
                          PutId owner, uint32_t page) {
  std::string payload;
  internal::AppendLE64(&payload, owner);
  internal::AppendLE32(&payload, page);
  const std::string key = PageKey(ns, page_tokens, chain_hash);
  return EncodeEnvelope(Bytes(key), RecordKind::kPageRef, Bytes(payload));
}

bool DecodePageRef(const std::string& key, ByteSpan value, PutId* owner, uint32_t* page) {
  auto env = DecodeEnvelope(Bytes(key), value);
  if (!env.ok() || env->kind != RecordKind::kPageRef || env->payload.size() != 12) return false;
  *owner = internal::GetLE64(env->payload.data());
  *page = internal::GetLE32(env->payload.data() + 8);
  return true;
}

Result<RunRecord> DecodeRunRecordValue(const std::string& key, ByteSpan value) {
  AUXSTORE_ASSIGN_OR_RETURN(EnvelopeView env, DecodeEnvelope(Bytes(key), value));
  if (env.kind != RecordKind::kRun) {
    return Status::Corruption("run record holds a record of kind " +
                              std::to_string(static_cast<unsigned>(env.kind)));
  }
  return DecodeRunRecord(env.payload);
}

Result<std::optional<RunRecord>> DbStore::LoadRunRecord(NamespaceId ns, PutId put) {
  const std::string key = PutKey(ns, put);
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cf_[kRuns], key, &value);
  if (s.IsNotFound()) return std::optional<RunRecord>();
  if (!s.ok()) return FromRocks(s, "read a run record");
  AUXSTORE_ASSIGN_OR_RETURN(RunRecord r, DecodeRunRecordValue(key, Bytes(value)));
  return std::optional<RunRecord>(std::move(r));
}

PutId DbStore::NewPutId() {
  // Random: unique across crashes without any counter to persist (2^-64
  // collision odds per pair, and PutSnapshot skips one already stored);
  // never 0.
  std::lock_guard lock(put_id_mu_);
  if (!put_id_seeded_) {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    put_id_rng_.seed(seq);
    put_id_seeded_ = true;
  }
  PutId id = 0;
  while (id == 0) id = put_id_rng_();
  return id;
}

Status DbStore::PutSnapshot(NamespaceId ns, const Prefix& prefix, uint64_t token_count,
                            std::span<const LayerBlob> layers, const PutOptions& put) {
  AUXSTORE_RETURN_IF_ERROR(CheckWritable());
  auto spec = NamespaceSpecFor(ns);
  if (!spec.ok()) return spec.error();
  if (layers.empty()) return Status::InvalidArgument("a snapshot needs at least one layer");

  // ---- 1. validate everything before writing anything
  const bool chained = !put.block_chain.empty();
  uint32_t page_tokens = 0;
  AUXSTORE_RETURN_IF_ERROR(CheckBlockChain(put.block_chain.size(), put.block_size, token_count));
  if (chained) {
    page_tokens = spec->page_tokens ? spec->page_tokens : put.block_size;
    if (page_tokens % put.block_size != 0) {
      return Status::InvalidArgument("the namespace's page of " + std::to_string(page_tokens) +
                                     " tokens is not a whole number of " +
                                     std::to_string(put.block_size) + "-token blocks");
    }
  }
  std::vector<LayerBlob> sorted(layers.begin(), layers.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const LayerBlob& a, const LayerBlob& b) { return a.layer < b.layer; });
  std::vector<LayerPlan> plans(sorted.size());
  for (size_t i = 0; i < sorted.size(); ++i) {
    const LayerBlob& l = sorted[i];
    if (i > 0 && l.layer == sorted[i - 1].layer) {
      return Status::InvalidArgument("layer " + std::to_string(l.layer) +
                                     " appears twice in one snapshot");
    }
    if (!IsKnownKind(static_cast<uint8_t>(l.kind))) {
      return Status::InvalidArgument("layer " + std::to_string(l.layer) + " has unknown kind " +
                                     std::to_string(static_cast<unsigned>(l.kind)));
    }
    const ByteSpan head = l.bytes.first(std::min(l.bytes.size(), BlobHeadBytes(l.kind)));
    Status s = CheckLayerBlob(l.layer, l.kind, head, l.bytes.size(), *spec);
    if (!s.ok()) return s.WithContext("layer " + std::to_string(l.layer));
    LayerPlan& p = plans[i];
    p.blob = &l;
    AUXSTORE_ASSIGN_OR_RETURN(p.shape, ShapeOf(l.kind, l.bytes, *spec));
    for (size_t a = 0; a < p.shape.row_bytes.size(); ++a) {
      if (ChunkCount(p.shape.rows * p.shape.row_bytes[a], options_.chunk_bytes) == UINT32_MAX) {
        return Status::InvalidArgument("layer " + std::to_string(l.layer) + " is too large");
      }
    }
  }

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

  // ---- 2. plan the pages
  const uint64_t chain_tokens = uint64_t{put.block_chain.size()} * put.block_size;
  for (LayerPlan& p : plans) {
    if (!chained || p.blob->kind == Kind::kOpaque) continue;
    p.full_pages = static_cast<uint32_t>(
        std::min<uint64_t>(std::min(p.shape.rows, chain_tokens) / page_tokens, UINT32_MAX));
    p.page_xxh3.resize(p.shape.row_bytes.size());
    for (size_t a = 0; a < p.shape.row_bytes.size(); ++a) {
      const uint64_t page_bytes = uint64_t{page_tokens} * p.shape.row_bytes[a];
      const ByteSpan array = ArraySlice(p, a, 0);
      p.page_xxh3[a].reserve(p.full_pages);
      for (uint32_t pg = 0; pg < p.full_pages; ++pg) {
        p.page_xxh3[a].push_back(XXH3_64bits(array.data() + pg * page_bytes, page_bytes));
      }
    }
  }
  auto chain_at = [&](uint32_t page) {  // the chained hash at the end of `page`
    return put.block_chain[(uint64_t{page} + 1) * page_tokens / put.block_size - 1];
  };

  // ---- 3. resolve which pages are already stored; pin their owners
  uint32_t max_pages = 0;
  for (const LayerPlan& p : plans) max_pages = std::max(max_pages, p.full_pages);
  std::map<PutId, RunRecord> owners;  // the owners used, pinned until the commit
  struct Unpin {
    DbStore* s;
    NamespaceId ns;
    std::map<PutId, RunRecord>* owners;
    ~Unpin() {
      for (const auto& [o, rec] : *owners) s->UnpinOwner(ns, o);
    }
  } unpin{this, ns, &owners};
  if (max_pages > 0) {
    std::vector<std::string> keys;
    keys.reserve(max_pages);
    for (uint32_t pg = 0; pg < max_pages; ++pg)
      keys.push_back(PageKey(ns, page_tokens, chain_at(pg)));
    std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
    std::vector<rocksdb::PinnableSlice> values(keys.size());
    std::vector<rocksdb::Status> statuses(keys.size());
    std::lock_guard lock(pages_mu_);
    db_->MultiGet(rocksdb::ReadOptions(), cf_[kPages], keys.size(), slices.data(), values.data(),
                  statuses.data());
    std::vector<PutId> owner_at(max_pages, 0);
    std::map<PutId, std::optional<RunRecord>> cache;
    for (uint32_t pg = 0; pg < max_pages; ++pg) {
      if (statuses[pg].IsNotFound()) continue;
      if (!statuses[pg].ok()) return FromRocks(statuses[pg], "look up pages");
      PutId o = 0;
      uint32_t at = 0;
      if (!DecodePageRef(keys[pg], Bytes(values[pg]), &o, &at) || at != pg) continue;
      owner_at[pg] = o;
      if (!cache.count(o)) {
        auto rec = LoadRunRecord(ns, o);
        cache[o] = rec.ok() ? std::move(*rec) : std::nullopt;
      }
    }
    for (LayerPlan& p : plans) {
      uint32_t pg = 0;
      for (; pg < p.full_pages; ++pg) {
        const PutId o = owner_at[pg];
        const auto c = cache.find(o);
        if (o == 0 || c == cache.end() || !c->second || c->second->page_tokens != page_tokens) {
          break;
        }
        const RunLayer* rl = c->second->FindLayer(p.blob->layer);
        if (rl == nullptr || rl->kind != p.blob->kind || pg < rl->first_page ||
            pg >= rl->first_page + rl->pages || rl->arrays.size() != p.shape.row_bytes.size()) {
          break;
        }
        bool same = true;
        for (size_t a = 0; a < rl->arrays.size() && same; ++a) {
          same = rl->arrays[a].row_bytes == p.shape.row_bytes[a] &&
                 rl->arrays[a].page_xxh3[pg - rl->first_page] == p.page_xxh3[a][pg];
        }
        if (!same) break;
        if (!p.runs.empty() && p.runs.back().owner == o) {
          ++p.runs.back().pages;
        } else {
          p.runs.push_back({o, rl->first_page, c->second->chunk_bytes, pg, 1});
        }
        if (!owners.count(o)) {
          owners.emplace(o, *c->second);
          pins_[PutKey(ns, o)]++;
        }
      }
      p.own_first = pg;
    }
  }

  // ---- 4. this put's own streams and run record
  PutId put_id = NewPutId();
  for (;;) {
    std::string taken;
    rocksdb::Status g = db_->Get(rocksdb::ReadOptions(), cf_[kRuns], PutKey(ns, put_id), &taken);
    if (g.IsNotFound()) break;
    if (!g.ok()) return FromRocks(g, "look up a put id");
    put_id = NewPutId();
  }
  Manifest m;
  m.token_count = token_count;
  m.created_unix_ms = put.created_unix_ms.value_or(NowUnixMs());
  m.chunk_bytes = options_.chunk_bytes;
  m.token_digest = put.token_digest;
  m.put_id = put_id;
  m.page_tokens = max_pages > 0 || chained ? page_tokens : 0;
  RunRecord run;
  run.prefix = prefix;
  run.page_tokens = page_tokens;
  run.chunk_bytes = options_.chunk_bytes;
  std::vector<OwnStream> streams;
  uint32_t chain_lo = UINT32_MAX, chain_hi = 0;
  for (LayerPlan& p : plans) {
    const LayerBlob& l = *p.blob;
    RunLayer rl{l.layer, l.kind, p.own_first, p.full_pages - p.own_first, {}};
    bool stores = false;
    for (size_t a = 0; a < p.shape.row_bytes.size(); ++a) {
      const ByteSpan own = ArraySlice(p, a, uint64_t{p.own_first} * page_tokens);
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
        streams.push_back({l.layer, static_cast<uint8_t>(a), l.kind, own});
        stores = true;
      }
    }
    if (rl.pages > 0) {
      chain_lo = std::min(chain_lo, rl.first_page);
      chain_hi = std::max(chain_hi, rl.first_page + rl.pages);
      p.runs.push_back({put_id, p.own_first, options_.chunk_bytes, p.own_first, rl.pages});
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
    for (uint32_t pg = chain_lo; pg < chain_hi; ++pg) run.chain.push_back(chain_at(pg));
  }
  const bool stores_records = !streams.empty();
  uint64_t own_bytes = 0;
  for (const OwnStream& s : streams) own_bytes += s.bytes.size();

  // ---- 5. write the streams, then commit
  rocksdb::WriteBatch batch;
  if (own_bytes >= options_.ingest_threshold_bytes) {
    AUXSTORE_RETURN_IF_ERROR(WriteIngested(ns, put_id, skey, streams));
    AUXSTORE_RETURN_IF_ERROR(
        FromRocks(batch.Delete(cf_[kMeta], kIntentPrefix + PutKey(ns, put_id)), "batch"));
  } else {
    // Records and manifest in one WriteBatch: atomic, never orphaned.
    AUXSTORE_RETURN_IF_ERROR(
        ForEachRecord(ns, put_id, streams, [&](const std::string& k, const std::string& v) {
          return FromRocks(batch.Put(cf_[kRecords], k, v), "batch a record");
        }));
  }
  {
    std::lock_guard lock(pages_mu_);
    if (stores_records) {
      const std::string rkey = PutKey(ns, put_id);
      (void)batch.Put(cf_[kRuns], rkey,
                      EncodeEnvelope(Bytes(rkey), RecordKind::kRun, Bytes(EncodeRunRecord(run))));
      (void)batch.Put(cf_[kRefs], RefKey(ns, put_id, put_id), skey);
      for (uint32_t pg = chain_lo; pg < chain_hi; ++pg) {
        const std::string pkey = PageKey(ns, page_tokens, chain_at(pg));
        std::string present;
        rocksdb::Status g = db_->Get(rocksdb::ReadOptions(), cf_[kPages], pkey, &present);
        if (!g.IsNotFound()) continue;  // the first writer's stays
        (void)batch.Put(cf_[kPages], pkey,
                        EncodePageRef(ns, page_tokens, chain_at(pg), put_id, pg));
      }
    }
    for (const auto& [o, rec] : owners) (void)batch.Put(cf_[kRefs], RefKey(ns, o, put_id), skey);
    AUXSTORE_RETURN_IF_ERROR(CommitManifest(&batch, ns, prefix, m, !owners.empty()));
  }
  ++puts_;
  bytes_written_ += own_bytes;
  std::vector<std::pair<std::string, uint64_t>> used;
  for (const auto& [o, rec] : owners) used.emplace_back(PutKey(ns, o), rec.stored_bytes());
  if (stores_records) used.emplace_back(PutKey(ns, put_id), run.stored_bytes());
  const int64_t now = NowUnixMs();
  index_.Added(skey, {m.payload_bytes(), m.created_unix_ms, now, std::move(used)});
  if (options_.capacity_bytes && index_.bytes() > options_.capacity_bytes) {
    {
      std::lock_guard lock(maint_mu_);
      poke_ = true;
    }
    maint_cv_.notify_all();
  }
  return Status::Ok();
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
