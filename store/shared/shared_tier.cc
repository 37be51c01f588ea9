#include "store/shared/shared_tier.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "store/rados/manifest_fields.h"
#include "store/rados/rados_aio.h"
#include "store/rados/rados_page_reader.h"

namespace auxstore::shared {
namespace {

std::string MakeHolder() {
  char host[128] = {};
  gethostname(host, sizeof(host) - 1);
  std::random_device rd;
  return std::string(host) + "." + std::to_string(getpid()) + "." + std::to_string(rd());
}

std::string ObjectOf(NamespaceId ns, const Prefix& prefix) {
  auto id = SharedId(ns, prefix);
  return rados::ManifestObjectName(id);
}

// What each manifest object holds, read and checked: nullopt when absent
// (or unread: see `failed`); Corruption when its bytes do not match their
// XXH3-128, do not decode, or name another snapshot than the object's name
// does. `failed`: the first read the pool did not answer.
using CheckedRecord = std::optional<Result<SharedRecord>>;
struct CheckedRecords {
  std::vector<CheckedRecord> records;
  Status failed;
};
CheckedRecords ReadRecordObjects(rados::RadosConnection& conn, const std::string& pool,
                                 const std::vector<std::string>& objects) {
  const size_t n = objects.size();
  std::vector<librados::bufferlist> data(n), hash(n);
  std::vector<int> hash_rc(n, 0);
  std::vector<librados::ObjectReadOperation> ops(n);
  CheckedRecords result;
  result.records.resize(n);
  std::vector<CheckedRecord>& out = result.records;
  Status& failed = result.failed;
  rados::RunWindowed(
      n, 32,  // in flight at once
      [&](size_t i, librados::AioCompletion* c) {
        ops[i].read(0, 0, &data[i], nullptr);
        ops[i].getxattr(rados::kHashXattr, &hash[i], &hash_rc[i]);
        return conn.io().aio_operate(objects[i], c, &ops[i], nullptr);
      },
      [&](size_t i, int rc, librados::AioCompletion*) {
        if (rc == -ENOENT) return;
        if (rc < 0) {
          if (failed.ok()) failed = conn.Check(rc, "read " + objects[i]);
          return;
        }
        std::vector<uint8_t> bytes(data[i].length());
        data[i].begin().copy(bytes.size(), reinterpret_cast<char*>(bytes.data()));
        const auto key = rados::PageKey::Of(bytes);
        const std::string want(reinterpret_cast<const char*>(key.hash.data()), key.hash.size());
        const std::string what = "RADOS pool '" + pool + "': " + objects[i];
        if (hash_rc[i] < 0 || hash[i].to_str() != want) {
          out[i] = Status::Corruption(what + ": its bytes do not match its XXH3-128");
          return;
        }
        auto rec = DecodeSharedRecord(bytes, what);
        if (rec.ok() && ObjectOf(rec->ns, rec->prefix) != objects[i]) {
          out[i] = Status::Corruption(what + ": names another snapshot");
        } else {
          out[i] = std::move(rec);
        }
      });
  return result;
}

}  // namespace

SharedTier::SharedTier(rados::RadosUri uri, std::unique_ptr<rados::RadosConnection> conn)
    : uri_(std::move(uri)),
      session_(std::make_shared<Session>(std::move(conn))),
      holder_(MakeHolder()) {}

Result<std::unique_ptr<SharedTier>> SharedTier::Open(const std::string& uri) {
  AUXSTORE_ASSIGN_OR_RETURN(auto parsed, rados::ParseRadosUri(uri));
  AUXSTORE_ASSIGN_OR_RETURN(auto conn, rados::RadosConnection::Open(parsed));
  return std::unique_ptr<SharedTier>(new SharedTier(parsed, std::move(conn)));
}

Result<std::shared_ptr<SharedTier::Session>> SharedTier::Current() {
  std::lock_guard lock(mu_);
  if (stale_) {
    AUXSTORE_ASSIGN_OR_RETURN(auto conn, rados::RadosConnection::Open(uri_));
    session_ = std::make_shared<Session>(std::move(conn));
    stale_ = false;
  }
  return session_;
}

Status SharedTier::Note(Status st) {
  if (st.code() == StatusCode::kUnavailable) {
    std::lock_guard lock(mu_);
    stale_ = true;
  }
  return st;
}

Result<std::vector<rados::PageKey>> SharedTier::PutPagesAhead(std::span<const ByteSpan> pages) {
  auto session = Current();
  if (!session.ok()) {
    ++counters_.upload_failures;
    return session.status();
  }
  auto put = (*session)->pages.PutPages(pages);
  if (!put.ok()) {
    ++counters_.upload_failures;
    return Note(put.status());
  }
  counters_.pages_stored += put->stored;
  counters_.pages_present += put->already_stored;
  return std::move(put->keys);
}

Status SharedTier::Put(Upload& up, std::span<const rados::PageKey> ahead) {
  auto session = Current();
  if (!session.ok()) {
    ++counters_.upload_failures;
    return session.status();
  }
  Session& ss = **session;
  SharedRecord& r = up.record;
  r.layers.clear();
  std::vector<ByteSpan> pieces;
  for (size_t i = 0; i < r.manifest.layers.size(); ++i) {
    const LayerEntry& l = r.manifest.layers[i];
    SharedLayer sl{l.layer, {}};
    for (const Range& c : CutLayer(r.manifest, l)) {
      ByteSpan piece = up.layers[i].subspan(c.offset, c.bytes);
      sl.segments.push_back({rados::PageKey::Of(piece), c.bytes});
      pieces.push_back(piece);
    }
    r.layers.push_back(std::move(sl));
  }
  // Each distinct page once (a layer may repeat a page, and so may layers).
  std::map<rados::PageKey, ByteSpan> distinct;
  for (size_t i = 0, k = 0; i < r.layers.size(); ++i)
    for (const auto& s : r.layers[i].segments) distinct.emplace(s.key, pieces[k++]);
  const std::set<rados::PageKey> stored_ahead(ahead.begin(), ahead.end());
  pieces.clear();
  std::vector<rados::PageKey> keys;  // of pieces: hashed once, in the cut
  for (auto& [key, page] : distinct) {
    if (!stored_ahead.contains(key)) pieces.push_back(page), keys.push_back(key);
  }
  const auto id = SharedId(r.ns, r.prefix);
  const auto bytes = EncodeSharedRecord(r);
  Status st;
  // A page found stored may be reclaimed before the commit touches it (an
  // orphan past its grace): the commit then says NotFound; put again.
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (attempt > 0 && !stored_ahead.empty()) {  // a page was reclaimed: all of them again
      pieces.clear();
      keys.clear();
      for (auto& [key, page] : distinct) pieces.push_back(page), keys.push_back(key);
    }
    auto put = ss.pages.PutPages(pieces, keys);
    if (!put.ok()) {
      st = put.status();
      break;
    }
    counters_.pages_stored += put->stored;
    counters_.pages_present += put->already_stored;
    auto commit = ss.manifests.Commit(id, bytes, r.Pages());
    st = commit.status();
    // Busy: another writer committed this prefix with other bytes (its own
    // put id and time) first: the pool holds the prefix, ours is not needed.
    if (commit.ok() || st.code() == StatusCode::kBusy) st = Status::Ok();
    if (st.code() != StatusCode::kNotFound) break;
  }
  if (st.ok()) {
    ++counters_.uploads;
  } else {
    ++counters_.upload_failures;
  }
  return Note(st);
}

Result<std::vector<std::optional<SharedRecord>>> SharedTier::ReadRecords(
    NamespaceId ns, std::span<const Prefix> prefixes) {
  AUXSTORE_ASSIGN_OR_RETURN(auto session, Current());
  Session& ss = *session;
  std::vector<std::string> objects;
  for (const Prefix& p : prefixes) objects.push_back(ObjectOf(ns, p));
  CheckedRecords checked = ReadRecordObjects(*ss.conn, pool(), objects);
  std::vector<std::optional<SharedRecord>> out(prefixes.size());
  for (size_t i = 0; i < prefixes.size(); ++i) {
    CheckedRecord& c = checked.records[i];
    if (!c) continue;
    if (c->ok()) {
      out[i] = std::move(*c).value();
    } else {
      QuarantineRecord(ss, ns, prefixes[i]);  // damaged: a miss, and gone from the pool
    }
  }
  if (!checked.failed.ok()) return Note(checked.failed);
  return out;
}

Result<SharedTier::Listing> SharedTier::ListRecords(std::optional<NamespaceId> ns) {
  AUXSTORE_ASSIGN_OR_RETURN(auto session, Current());
  Session& ss = *session;
  auto names = rados::ListNamespaceObjects(*ss.conn);
  if (!names.ok()) return Note(names.status());
  Listing out;
  std::vector<std::string> manifests;
  for (const std::string& name : *names) {
    if (name.starts_with(rados::kManifestPrefix)) manifests.push_back(name);
    if (rados::PageKey::FromObjectName(name)) ++out.page_objects;
  }
  CheckedRecords checked = ReadRecordObjects(*ss.conn, pool(), manifests);
  if (!checked.failed.ok()) return Note(checked.failed);
  for (CheckedRecord& c : checked.records) {
    if (!c) continue;  // erased since the listing
    if (!c->ok()) {
      ++out.damaged;  // counted, not quarantined: listing changes nothing
    } else if (!ns || (*c)->ns == *ns) {
      out.records.push_back(std::move(*c).value());
    }
  }
  return out;
}

std::vector<Result<std::vector<LayerBuffer>>> SharedTier::ReadLayersOfEach(
    std::span<const SharedRecord* const> records, OnDamage on_damage) {
  std::vector<std::vector<LayerBuffer>> layers(records.size());
  std::vector<std::vector<LayerDst>> wanted(records.size());
  for (size_t k = 0; k < records.size(); ++k) {
    const SharedRecord& r = *records[k];
    for (size_t li = 0; li < r.layers.size(); ++li) {
      const uint64_t bytes = r.manifest.layers[li].bytes;  // = its segments' (DecodeSharedRecord)
      layers[k].push_back({std::make_unique_for_overwrite<uint8_t[]>(bytes), bytes});
      wanted[k].push_back({li, {layers[k].back().data.get(), bytes}});
    }
  }
  const std::vector<LayersRead> read = ReadLayersInto(records, wanted, on_damage);
  std::vector<Result<std::vector<LayerBuffer>>> out;
  for (size_t k = 0; k < records.size(); ++k) {
    if (read[k].status.ok()) {
      out.push_back(std::move(layers[k]));
    } else {
      out.push_back(read[k].status);
    }
  }
  return out;
}

std::vector<SharedTier::LayersRead> SharedTier::ReadLayersInto(
    std::span<const SharedRecord* const> records, std::span<const std::vector<LayerDst>> wanted,
    OnDamage on_damage) {
  // A destination that cannot hold its layer (or a copy not its size) is
  // that record's InvalidArgument, and nothing of it is read.
  std::vector<std::optional<LayersRead>> refused(records.size());
  std::vector<std::span<const LayerDst>> use(records.size());
  for (size_t k = 0; k < records.size(); ++k) {
    use[k] = wanted[k];
    for (size_t w = 0; w < wanted[k].size(); ++w) {
      const LayerDst& d = wanted[k][w];
      const bool known = d.index < records[k]->layers.size();
      const uint64_t bytes = known ? records[k]->manifest.layers[d.index].bytes : 0;
      if (!known || d.dst.size() < bytes || !(d.copy.empty() || d.copy.size() == bytes)) {
        refused[k] = LayersRead{
            Status::InvalidArgument("a destination of snapshot " + records[k]->prefix.ToHex() +
                                    " does not fit its layer"),
            w};
        use[k] = {};
        break;
      }
    }
  }
  auto session = Current();
  if (!session.ok()) return std::vector<LayersRead>(records.size(), {session.status(), 0});
  Session& ss = **session;
  // Each segment straight into its place in its layer's destination: one
  // copy out of librados's buffers, hashed against the page key on the way.
  // Record k's pages are keys[first[k] .. first[k + 1]).
  std::vector<rados::PageKey> keys;
  std::vector<std::span<uint8_t>> dst;
  std::vector<size_t> first;
  for (size_t k = 0; k < records.size(); ++k) {
    first.push_back(keys.size());
    for (const LayerDst& w : use[k]) {
      uint64_t at = 0;
      for (const auto& s : records[k]->layers[w.index].segments) {
        keys.push_back(s.key);
        dst.push_back(w.dst.subspan(at, s.bytes));
        at += s.bytes;
      }
    }
  }
  first.push_back(keys.size());
  // Each layer's digest checked as soon as its last page is in, while the
  // pages after it are still on their way. layer_of[page]: its layer's
  // place in `digests`; waiting[that]: its pages not read yet.
  std::vector<size_t> layer_of(keys.size()), waiting, layer_first;
  std::vector<std::pair<size_t, size_t>> layer_at;  // (k, w)
  for (size_t k = 0, page = 0; k < records.size(); ++k) {
    layer_first.push_back(layer_at.size());
    for (size_t w = 0; w < use[k].size(); ++w) {
      const size_t pages = records[k]->layers[use[k][w].index].segments.size();
      for (size_t i = 0; i < pages; ++i) layer_of[page++] = layer_at.size();
      waiting.push_back(pages);
      layer_at.push_back({k, w});
    }
  }
  layer_first.push_back(layer_at.size());
  std::vector<std::optional<bool>> digests(layer_at.size());
  const auto digest = [&](size_t at) {
    const auto [k, w] = layer_at[at];
    digests[at] = DigestMatches(*records[k], use[k][w]);
  };
  for (size_t at = 0; at < waiting.size(); ++at)
    if (waiting[at] == 0) digest(at);  // an empty layer
  const std::vector<Status> read =
      rados::ReadPagesInto(*ss.conn, keys, dst, kPagesInFlight, [&](size_t page) {
        if (--waiting[layer_of[page]] == 0) digest(layer_of[page]);
      });
  std::vector<LayersRead> out;
  for (size_t k = 0; k < records.size(); ++k) {
    const size_t n = first[k + 1] - first[k];
    if (refused[k]) {
      out.push_back(*refused[k]);
      continue;
    }
    out.push_back(
        CheckRead(ss, *records[k], use[k], std::span(keys).subspan(first[k], n),
                  std::span(read).subspan(first[k], n),
                  std::span(digests).subspan(layer_first[k], layer_first[k + 1] - layer_first[k]),
                  on_damage));
  }
  return out;
}

bool SharedTier::DigestMatches(const SharedRecord& r, const LayerDst& layer) {
  const LayerEntry& entry = r.manifest.layers[layer.index];
  LayerHasher hasher(r.manifest, entry);
  if (layer.copy.empty()) {
    hasher.Update(layer.dst.first(entry.bytes));
  } else {
    // One pass over the bytes: each step hashed, then copied while in cache.
    constexpr uint64_t kStep = 64 << 10;
    for (uint64_t at = 0; at < entry.bytes; at += kStep) {
      const uint64_t n = std::min(kStep, entry.bytes - at);
      hasher.Update(layer.dst.subspan(at, n));
      std::memcpy(layer.copy.data() + at, layer.dst.data() + at, n);
    }
  }
  return hasher.Digest() == entry.xxh3;
}

SharedTier::LayersRead SharedTier::CheckRead(Session& ss, const SharedRecord& r,
                                             std::span<const LayerDst> wanted,
                                             std::span<const rados::PageKey> keys,
                                             std::span<const Status> read,
                                             std::span<const std::optional<bool>> digests,
                                             OnDamage on_damage) {
  const bool quarantine = on_damage == OnDamage::kQuarantine;
  size_t page = 0;  // keys[page] is the first page of wanted[w]
  for (size_t w = 0; w < wanted.size(); ++w) {
    const size_t pages = r.layers[wanted[w].index].segments.size();
    for (size_t i = page; i < page + pages; ++i) {
      const Status& st = read[i];
      if (st.ok()) continue;
      if (st.code() == StatusCode::kUnavailable || st.code() == StatusCode::kIOError) {
        return {Note(st), w};
      }
      // Damaged or missing although a committed record names it: the record
      // is quarantined; a damaged page object goes too, so that the next put
      // of those bytes stores them afresh.
      if (quarantine && st.code() == StatusCode::kCorruption) {
        ss.conn->io().remove(keys[i].ObjectName());
      }
      const std::string why = st.code() == StatusCode::kNotFound
                                  ? "RADOS pool '" + pool() + "': page " + keys[i].ObjectName() +
                                        " named by a committed manifest is missing"
                                  : st.message();
      if (!quarantine) return {Status::Corruption(why + " (snapshot " + r.prefix.ToHex() + ")"), w};
      QuarantineRecord(ss, r.ns, r.prefix);
      return {
          Status::Corruption(why + " (snapshot " + r.prefix.ToHex() + " quarantined in the pool)"),
          w};
    }
    page += pages;
    const LayerEntry& entry = r.manifest.layers[wanted[w].index];
    if (!(digests[w] ? *digests[w] : DigestMatches(r, wanted[w]))) {
      const std::string why = "RADOS pool '" + pool() + "': layer " + std::to_string(entry.layer) +
                              " of snapshot " + r.prefix.ToHex() +
                              " does not match its layer digest";
      if (!quarantine) return {Status::Corruption(why), w};
      QuarantineRecord(ss, r.ns, r.prefix);
      return {Status::Corruption(why + " (quarantined in the pool)"), w};
    }
  }
  return {Status::Ok(), 0};
}

void SharedTier::QuarantineRecord(Session& s, NamespaceId ns, const Prefix& prefix) {
  ++counters_.corruptions;
  // The record goes whatever leases say: no node may restore damaged bytes.
  // Its pages stay named by nothing and compact reclaims them. Gone already
  // (another node quarantined it) or unreachable: found again on a later read.
  (void)s.conn->io().remove(ObjectOf(ns, prefix));
}

Result<rados::PoolVerifyReport> SharedTier::VerifyPool() {
  AUXSTORE_ASSIGN_OR_RETURN(auto s, Current());
  auto r = rados::RadosPoolCheck(*s->conn).Verify();
  if (!r.ok()) return Note(r.status());
  return r;
}

Result<rados::PoolRepairReport> SharedTier::RepairPool() {
  AUXSTORE_ASSIGN_OR_RETURN(auto s, Current());
  auto r = rados::RadosPoolCheck(*s->conn).Repair();
  if (!r.ok()) return Note(r.status());
  return r;
}

Result<rados::PoolCompactReport> SharedTier::CompactPool(std::chrono::seconds grace) {
  AUXSTORE_ASSIGN_OR_RETURN(auto s, Current());
  auto r = rados::RadosPoolCheck(*s->conn).Compact(grace);
  if (!r.ok()) return Note(r.status());
  return r;
}

Status SharedTier::TakeLease(NamespaceId ns, const Prefix& prefix, uint64_t lease_ms) {
  return TakeLeases(ns, {&prefix, 1}, lease_ms)[0];
}

std::vector<Status> SharedTier::TakeLeases(NamespaceId ns, std::span<const Prefix> prefixes,
                                           uint64_t lease_ms) {
  auto s = Current();
  if (!s.ok()) return std::vector<Status>(prefixes.size(), s.status());
  std::vector<std::vector<uint8_t>> ids;
  for (const Prefix& p : prefixes) ids.push_back(SharedId(ns, p));
  std::vector<ByteSpan> views(ids.begin(), ids.end());
  auto taken = (*s)->manifests.TakeLeases(views, holder_, std::chrono::milliseconds(lease_ms));
  for (Status& st : taken) st = Note(std::move(st));
  return taken;
}

Status SharedTier::ReleaseLease(NamespaceId ns, const Prefix& prefix) {
  AUXSTORE_ASSIGN_OR_RETURN(auto s, Current());
  Status st = Note(s->manifests.ReleaseLease(SharedId(ns, prefix), holder_));
  return st.code() == StatusCode::kNotFound ? Status::Ok() : st;
}

Status SharedTier::Erase(NamespaceId ns, const Prefix& prefix) {
  AUXSTORE_ASSIGN_OR_RETURN(auto s, Current());
  const auto id = SharedId(ns, prefix);
  // Our own lease must not block our own erase.
  Status rel = Note(s->manifests.ReleaseLease(id, holder_));
  if (!rel.ok() && rel.code() != StatusCode::kNotFound) return rel;
  Status st = Note(s->manifests.Erase(id));
  return st.code() == StatusCode::kNotFound ? Status::Ok() : st;
}

}  // namespace auxstore::shared
