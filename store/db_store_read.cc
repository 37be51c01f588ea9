#include <rocksdb/metadata.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <regex>

#include "auxstore/blob_hash.h"
#include "format/envelope.h"
#include "format/layer_layout.h"
#include "format/manifest.h"
#include "format/namespace_spec.h"
#include "store/bytes.h"
#include "store/db_store.h"
#include "store/keys.h"

namespace auxstore::store_internal {
namespace {

std::string Where(NamespaceId ns, const Prefix& prefix) {
  return "prefix " + prefix.ToHex() + " in namespace " + NamespaceHex(ns);
}

}  // namespace

Result<Manifest> DecodeManifestRecord(const std::string& key, ByteSpan value) {
  AUXSTORE_ASSIGN_OR_RETURN(EnvelopeView env, DecodeEnvelope(Bytes(key), value));
  if (env.kind != RecordKind::kManifest) {
    return Status::Corruption("manifest record holds a record of kind " +
                              std::to_string(static_cast<unsigned>(env.kind)));
  }
  return DecodeManifest(env.payload);
}

DbStore::ManifestCheck DbStore::SameManifest(const std::string& key, const Manifest& m) {
  return [key, m](const std::string& now) {
    auto current = DecodeManifestRecord(key, Bytes(now));
    return current.ok() && *current == m;
  };
}

Result<NamespaceSpec> DbStore::NamespaceSpecFor(NamespaceId ns) {
  {
    std::shared_lock lock(ns_mu_);
    auto it = namespaces_.find(ns);
    if (it != namespaces_.end()) return it->second;
  }
  const std::string key = NamespaceKey(ns);
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cf_[kNamespaces], key, &value);
  if (s.IsNotFound()) {
    return Status::NotFound("namespace " + NamespaceHex(ns) + " is not registered");
  }
  if (!s.ok()) return FromRocks(s, "read namespace");
  AUXSTORE_ASSIGN_OR_RETURN(EnvelopeView env, DecodeEnvelope(Bytes(key), Bytes(value)));
  if (env.kind != RecordKind::kNamespace) return Status::Corruption("namespace record malformed");
  AUXSTORE_ASSIGN_OR_RETURN(NamespaceSpec spec, internal::DecodeNamespaceSpec(env.payload));
  if (NamespaceFingerprint(spec) != ns) {
    return Status::Corruption("namespace record does not match its id");
  }
  std::unique_lock lock(ns_mu_);
  namespaces_[ns] = spec;
  return spec;
}

Result<NamespaceSpec> DbStore::GetNamespace(NamespaceId ns) { return NamespaceSpecFor(ns); }

Result<std::vector<std::pair<NamespaceId, NamespaceSpec>>> DbStore::ListNamespaces() {
  std::vector<std::pair<NamespaceId, NamespaceSpec>> out;
  std::vector<NamespaceId> ids;
  {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), cf_[kNamespaces]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      NamespaceId ns = 0;
      if (ParseNamespaceKey(it->key().ToStringView(), &ns)) ids.push_back(ns);
    }
    AUXSTORE_RETURN_IF_ERROR(FromRocks(it->status(), "list namespaces"));
  }
  for (NamespaceId ns : ids) {
    AUXSTORE_ASSIGN_OR_RETURN(NamespaceSpec spec, NamespaceSpecFor(ns));
    out.emplace_back(ns, std::move(spec));
  }
  return out;
}

Result<Manifest> DbStore::LoadManifest(NamespaceId ns, const Prefix& prefix) {
  const std::string key = SnapshotKey(ns, prefix);
  std::string value;
  const rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cf_[kManifests], key, &value);
  return ManifestFromLookup(ns, prefix, key, s, value);
}

Result<Manifest> DbStore::ManifestFromLookup(NamespaceId ns, const Prefix& prefix,
                                             const std::string& key,
                                             const rocksdb::Status& looked_up,
                                             std::string_view value) {
  if (looked_up.IsNotFound()) return Status::NotFound("no snapshot for " + Where(ns, prefix));
  if (!looked_up.ok()) return FromRocks(looked_up, "read the manifest of " + Where(ns, prefix));
  auto m = DecodeManifestRecord(key, Bytes(value));
  if (!m.ok()) {
    return QuarantineIf(
        ns, prefix, [&](const std::string& now) { return now == value; },
        m.error().WithContext("manifest of " + Where(ns, prefix)));
  }
  return m;
}

Result<Manifest> DbStore::GetManifest(NamespaceId ns, const Prefix& prefix) {
  auto m = LoadManifest(ns, prefix);
  if (m.ok()) {
    ++hits_;
    Touch(ns, prefix);
  } else if (m.error().IsNotFound()) {
    ++misses_;
  }
  return m;
}

void DbStore::Touch(NamespaceId ns, const Prefix& prefix) {
  index_.Touched(SnapshotKey(ns, prefix), NowUnixMs());
}

Status DbStore::PinRecord(const std::string& key, PinnedRecord* out) {
  // The bound keeps a Seek for a missing record from reading the next one.
  out->upper_bound = key + '\0';
  out->upper_bound_slice = out->upper_bound;
  rocksdb::ReadOptions r = HotReadOptions();
  r.iterate_upper_bound = &out->upper_bound_slice;
  out->it.reset(db_->NewIterator(r, cf_[kRecords]));
  out->it->Seek(key);
  if (!out->it->Valid()) {
    if (!out->it->status().ok()) return RecordReadError(key, out->it->status());
    return Status::NotFound("no record");
  }
  if (out->it->key() != rocksdb::Slice(key)) return Status::NotFound("no record");
  out->value = out->it->value();
  return Status::Ok();
}

Status DbStore::RecordReadError(const std::string& key, const rocksdb::Status& s) {
  const Status as_read = FromRocks(s, "read a record");
  if (!s.IsCorruption()) return as_read;
  // RocksDB names the table file of the damaged block: "... in DIR/N.sst".
  static const std::regex kTableFile(R"(/([0-9]+)\.sst\b)");
  std::smatch m;
  const std::string message = s.ToString();
  if (!std::regex_search(message, m, kTableFile)) return as_read;
  const std::string file = "/" + m[1].str() + ".sst";
  rocksdb::ColumnFamilyMetaData meta;
  db_->GetColumnFamilyMetaData(cf_[kRecords], &meta);
  for (const auto& level : meta.levels) {
    for (const auto& f : level.files) {
      if (f.name != file) continue;
      if (key >= f.smallestkey && key <= f.largestkey) return as_read;  // it may hold `key`
      return Status::IOError("read a record: table file " + m[1].str() +
                             ".sst, which does not hold it, is damaged (" + s.ToString() +
                             "); `auxstore verify --repair` rewrites the records around it");
    }
  }
  return as_read;
}

Status DbStore::ReadLayer(NamespaceId ns, const Prefix& prefix, uint32_t layer,
                          const ChunkSink& sink) {
  AUXSTORE_ASSIGN_OR_RETURN(Manifest m, LoadManifest(ns, prefix));
  return StreamLayer(ns, prefix, std::make_shared<const Manifest>(std::move(m)), layer, sink);
}

Status DbStore::StreamLayer(NamespaceId ns, const Prefix& prefix,
                            std::shared_ptr<const Manifest> manifest, uint32_t layer,
                            const ChunkSink& sink) {
  // The pieces come from the table files (direct_records.h), read into a
  // buffer of the reader's and checked by their own checksums before the
  // sink sees them: under a mebibyte with one read of the whole block and
  // its checksum (as RocksDB reads it, without its iterator), larger ones
  // in sub-reads with the kernel's readahead ahead of them. Through RocksDB
  // (direct reads off, a table or record this reader passes on), reads run
  // up to two pieces ahead on the read pool while this thread verifies
  // (envelope and layer digest in one pass) and delivers, the sink getting
  // each piece where RocksDB holds it; a stream reading from the files
  // reads nothing ahead through RocksDB (what it passes on is read in turn).
  ReadMode mode;
  mode.direct = DirectReads();
  mode.read_ahead = mode.direct ? 0 : 2;
  AUXSTORE_ASSIGN_OR_RETURN(auto reader, OpenCursor(ns, prefix, std::move(manifest), layer, mode,
                                                    NewPieceReader(ns, mode)));
  Touch(ns, prefix);
  const LayerEntry& entry = reader->entry();
  if (!entry.header.empty()) AUXSTORE_RETURN_IF_ERROR(sink(0, entry.header));
  while (!reader->done()) {
    AUXSTORE_ASSIGN_OR_RETURN(LayerReader::View piece, reader->Read());
    AUXSTORE_RETURN_IF_ERROR(sink(piece.piece.blob_offset, piece.bytes));
  }
  return Status::Ok();
}

// ReadLayer's pieces go to a sink that cannot take them back, so a
// snapshot replaced under it ends the read (NotFound); GetLayer's vector
// starts again.
Result<std::vector<uint8_t>> DbStore::GetLayer(NamespaceId ns, const Prefix& prefix,
                                               uint32_t layer) {
  AUXSTORE_ASSIGN_OR_RETURN(Manifest m, LoadManifest(ns, prefix));
  AfterManifestRead();
  return ReadUnderLatest(
      ns, prefix, std::make_shared<const Manifest>(std::move(m)), layer,
      [&](const std::shared_ptr<const Manifest>& manifest) -> Result<std::vector<uint8_t>> {
        std::vector<uint8_t> out;
        AUXSTORE_RETURN_IF_ERROR(
            StreamLayer(ns, prefix, manifest, layer, [&](uint64_t offset, ByteSpan chunk) {
              if (offset == 0) out.reserve(manifest->FindLayer(layer)->bytes);
              out.insert(out.end(), chunk.begin(), chunk.end());
              return Status::Ok();
            }));
        return out;
      });
}

std::shared_ptr<const Manifest> DbStore::ReadAgainUnder(NamespaceId ns, const Prefix& prefix,
                                                        const Manifest& read, uint32_t layer,
                                                        const Status& outcome, int attempt) {
  // The layer reader's NotFound for a layer `read` has: erased or replaced.
  if (!outcome.IsNotFound() || read.FindLayer(layer) == nullptr || attempt >= kReadAttempts) {
    return nullptr;
  }
  auto now = LoadManifest(ns, prefix);
  if (!now.ok() || *now == read) return nullptr;
  ++reads_repeated_;
  return std::make_shared<const Manifest>(std::move(*now));
}

// One MultiGet over the manifests of `prefixes`; a damaged manifest is
// quarantined and reads as absent.
Result<std::vector<std::optional<Manifest>>> DbStore::MultiGetManifests(
    NamespaceId ns, std::span<const Prefix> prefixes) {
  std::vector<std::string> keys;
  keys.reserve(prefixes.size());
  for (const Prefix& p : prefixes) keys.push_back(SnapshotKey(ns, p));
  std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
  std::vector<rocksdb::PinnableSlice> values(keys.size());
  std::vector<rocksdb::Status> statuses(keys.size());
  // Block checksums stay on: with them off RocksDB parses a damaged block's
  // keys unverified and 7.8.3's live asserts abort the process (issue 12
  // finding 5); each manifest found is verified again by its own envelope.
  rocksdb::ReadOptions lookup;
  db_->MultiGet(lookup, cf_[kManifests], keys.size(), slices.data(), values.data(),
                statuses.data());
  std::vector<std::optional<Manifest>> out(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (statuses[i].IsNotFound()) continue;
    if (!statuses[i].ok()) return FromRocks(statuses[i], "look up prefixes");
    auto m = DecodeManifestRecord(keys[i], Bytes(values[i]));
    if (!m.ok()) {  // a damaged manifest is a miss from now on
      const std::string seen = values[i].ToString();
      (void)QuarantineIf(
          ns, prefixes[i], [&](const std::string& now) { return now == seen; }, m.error());
      continue;
    }
    out[i] = std::move(*m);
  }
  return out;
}

Result<std::vector<std::optional<Manifest>>> DbStore::GetManifests(
    NamespaceId ns, std::span<const Prefix> prefixes) {
  return MultiGetManifests(ns, prefixes);
}

Result<std::optional<size_t>> DbStore::LongestPrefix(NamespaceId ns,
                                                     std::span<const Prefix> candidates) {
  AUXSTORE_ASSIGN_OR_RETURN(auto match, FindLongestPrefix(ns, candidates, {}));
  if (!match) return std::optional<size_t>();
  return std::optional<size_t>(match->index);
}

Result<std::optional<Store::PrefixMatch>> DbStore::FindLongestPrefix(
    NamespaceId ns, std::span<const Prefix> candidates, const LookupOptions& options) {
  // Once loaded, the snapshot index knows every stored manifest: only the
  // longest candidate it holds is read and verified (one manifest, not a
  // MultiGet of every candidate: issue 25, p99 at 1M snapshots).
  std::vector<std::string> keys;
  keys.reserve(candidates.size());
  for (const Prefix& p : candidates) keys.push_back(SnapshotKey(ns, p));
  while (!candidates.empty()) {
    size_t i = 0;
    if (auto known = index_.LongestKnown(std::span(keys).first(candidates.size()))) {
      if (*known < 0) break;
      i = static_cast<size_t>(*known);
      AUXSTORE_ASSIGN_OR_RETURN(auto manifest, MultiGetManifests(ns, candidates.subspan(i, 1)));
      if (!manifest[0]) {  // erased since, or damaged (and quarantined now)
        candidates = candidates.first(i);
        continue;
      }
    } else {  // the index is loading: ask RocksDB about every candidate
      AUXSTORE_ASSIGN_OR_RETURN(auto manifests, MultiGetManifests(ns, candidates));
      i = manifests.size();
      while (i > 0 && !manifests[i - 1]) --i;
      if (i == 0) break;
      --i;
    }
    PrefixMatch match{i, 0};
    if (options.lease) {
      auto lease = AcquireLease(ns, candidates[i], options.lease_ms);
      if (lease.status().IsNotFound()) {  // erased or evicted since the MultiGet
        candidates = candidates.first(i);
        continue;
      }
      if (!lease.ok()) return lease.status();
      match.lease = *lease;
    }
    ++hits_;
    Touch(ns, candidates[i]);
    return std::optional<PrefixMatch>(match);
  }
  ++misses_;
  return std::optional<PrefixMatch>();
}

Result<std::optional<Store::TokenMatch>> DbStore::LongestPrefixForTokens(
    NamespaceId ns, std::span<const uint32_t> tokens, uint32_t block_size, uint64_t salt,
    const LookupOptions& options) {
  if (block_size == 0) return Status::InvalidArgument("block_size is 0");
  std::vector<Prefix> candidates = PrefixHashes(tokens, block_size, salt);
  // Longest first; a candidate whose stored token digest disagrees is a hash
  // collision with another sequence, not a hit.
  while (!candidates.empty()) {
    AUXSTORE_ASSIGN_OR_RETURN(std::optional<PrefixMatch> found,
                              FindLongestPrefix(ns, candidates, options));
    if (!found) return std::optional<TokenMatch>();
    const size_t i = found->index;
    const uint64_t covered = uint64_t{block_size} * (i + 1);
    auto m = LoadManifest(ns, candidates[i]);
    if (m.ok() &&
        (!m->token_digest || *m->token_digest == DigestTokens(tokens.first(covered), salt))) {
      return std::optional<TokenMatch>(TokenMatch{candidates[i], covered, found->lease});
    }
    if (found->lease) (void)ReleaseLease(found->lease);
    if (!m.ok() && !m.error().IsNotFound()) return m.error();
    --hits_;
    ++misses_;
    candidates.resize(i);
  }
  return std::optional<TokenMatch>();
}

Result<LeaseId> DbStore::AcquireLease(NamespaceId ns, const Prefix& prefix, uint64_t lease_ms) {
  if (lease_ms == 0) return Status::InvalidArgument("a lease of 0 ms");
  const std::string skey = SnapshotKey(ns, prefix);
  // Under the key's lock, so eviction (which takes it too and re-checks
  // leases) cannot remove the snapshot between the check and the lease.
  KeyLock key_lock(this, skey);
  std::string manifest;
  rocksdb::Status g = db_->Get(rocksdb::ReadOptions(), cf_[kManifests], skey, &manifest);
  if (g.IsNotFound()) return Status::NotFound("no snapshot for " + Where(ns, prefix) + " to lease");
  if (!g.ok()) return FromRocks(g, "look up " + Where(ns, prefix));
  const int64_t now = NowUnixMs();
  return index_.AddLease(skey, now,
                         now + static_cast<int64_t>(std::min<uint64_t>(lease_ms, INT32_MAX)));
}

Status DbStore::ReleaseLease(LeaseId lease) {
  const std::optional<std::string> key = index_.RemoveLease(lease, NowUnixMs());
  if (!key) {
    return Status::NotFound("lease " + std::to_string(lease) +
                            " is unknown, released or has expired");
  }
  // An erase removes a leased snapshot too (store.h): its lease is gone with it.
  std::string manifest;
  rocksdb::Status g = db_->Get(rocksdb::ReadOptions(), cf_[kManifests], *key, &manifest);
  if (g.IsNotFound()) {
    return Status::NotFound("lease " + std::to_string(lease) + ": its snapshot was erased");
  }
  if (!g.ok()) return FromRocks(g, "look up the snapshot of lease " + std::to_string(lease));
  return Status::Ok();
}

Result<uint64_t> DbStore::ReadLayerInto(NamespaceId ns, const Prefix& prefix, uint32_t layer,
                                        std::span<uint8_t> dst) {
  AUXSTORE_ASSIGN_OR_RETURN(Manifest m, LoadManifest(ns, prefix));
  AfterManifestRead();
  auto manifest = std::make_shared<const Manifest>(std::move(m));
  if (manifest->FindLayer(layer) != nullptr) Touch(ns, prefix);
  LayerInto one{.layer = layer, .dst = dst};
  (void)ReadLayersOf(ns, prefix, std::move(manifest), {&one, 1});
  if (!one.status.ok()) return one.status;
  return one.bytes;
}

Status DbStore::List(std::optional<NamespaceId> ns,
                     const std::function<bool(const SnapshotInfo&)>& visit) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf_[kManifests]));
  Status first_error;
  const std::string start = ns ? NamespaceKey(*ns) : std::string();
  for (it->Seek(start); it->Valid(); it->Next()) {
    SnapshotInfo info;
    if (!ParseSnapshotKey(it->key().ToStringView(), &info.ns, &info.prefix)) continue;
    if (ns && info.ns != *ns) break;
    auto m = DecodeManifestRecord(it->key().ToString(), Bytes(it->value()));
    if (!m.ok()) {
      if (first_error.ok())
        first_error = m.error().WithContext("manifest of " + Where(info.ns, info.prefix));
      continue;
    }
    info.manifest = std::move(*m);
    if (!visit(info)) break;
  }
  AUXSTORE_RETURN_IF_ERROR(FromRocks(it->status(), "list snapshots"));
  return first_error;
}

StoreStats DbStore::Stats() {
  StoreStats s;
  s.snapshots = index_.snapshots();
  s.payload_bytes = index_.bytes();
  s.unique_bytes = index_.unique_bytes();
  s.index_ready = index_.ready();
  s.hits = hits_;
  s.misses = misses_;
  s.puts = puts_;
  s.bytes_written = bytes_written_;
  s.bytes_read = bytes_read_;
  s.reads_repeated = reads_repeated_;
  s.capacity_bytes = options_.capacity_bytes;
  s.leases = index_.leases(NowUnixMs());
  s.duplicate_puts = duplicate_puts_;
  s.evictions = evictions_;
  s.expirations = expirations_;
  s.orphans_seen = orphans_seen_;
  s.orphans_removed = orphans_removed_;
  s.fenced = fenced_;
  std::lock_guard lock(commit_mu_);
  s.quarantines = quarantines_;
  s.commit_seq = commit_seq_;
  s.durable_watermark = watermark_;
  s.lost_commits_at_open = lost_commits_at_open_;
  return s;
}

}  // namespace auxstore::store_internal
