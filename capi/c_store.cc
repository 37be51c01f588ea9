// The store half of the C ABI: open/close, namespaces, snapshots, lookups.
#include <cstddef>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "auxstore/c.h"
#include "capi/c_convert.h"
#include "capi/c_errors.h"
#include "capi/c_handles.h"
#include "capi/c_put_options.h"

using auxstore::Kind;
using auxstore::LayerBlob;
using auxstore::Status;
using auxstore::capi::CopyOut;
using auxstore::capi::Guard;
using auxstore::capi::Live;
using auxstore::capi::NotNull;
using auxstore::capi::ToPrefix;

namespace {

// Checks the C layers (pointers, kinds) and views them as LayerBlobs; the
// store checks the rest (geometry, unique indices).
Status ToLayers(const auxstore_layer_t* layers, size_t n, std::vector<LayerBlob>* out) {
  if (n > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(layers, "layers"));
  out->reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auxstore_layer_t& l = layers[i];
    const std::string at = "layers[" + std::to_string(i) + "]";
    if (l.kind < AUXSTORE_KIND_QSA || l.kind > AUXSTORE_KIND_OPAQUE) {
      return Status::InvalidArgument(at + ".kind is " + std::to_string(l.kind) +
                                     ", not a known kind (1 QSA, 2 DSA, 3 opaque)");
    }
    if (l.data == nullptr && l.size > 0) {
      return Status::InvalidArgument(at + ".data is NULL with size " + std::to_string(l.size));
    }
    out->push_back(
        {l.layer, static_cast<Kind>(l.kind), {static_cast<const uint8_t*>(l.data), l.size}});
  }
  return Status::Ok();
}

Status Put(auxstore_t* db, uint64_t ns, const uint8_t prefix[16], uint64_t token_count,
           size_t n_layers, const auxstore_layer_t* layers, const auxstore_put_options_t* o) {
  AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
  AUXSTORE_RETURN_IF_ERROR(NotNull(prefix, "prefix"));
  std::vector<LayerBlob> blobs;
  AUXSTORE_RETURN_IF_ERROR(ToLayers(layers, n_layers, &blobs));
  auxstore::PutOptions put;
  std::vector<auxstore::Prefix> chain;
  AUXSTORE_RETURN_IF_ERROR(auxstore::capi::ToPutOptions(o, "options", &chain, &put));
  return d->store->PutSnapshot(ns, ToPrefix(prefix), token_count, blobs, put);
}

Status Longest(auxstore_t* db, uint64_t ns, const uint8_t (*candidates)[16], size_t n,
               uint64_t lease_ms, size_t* found_index, uint64_t* lease_out) {
  AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
  if (n > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(candidates, "candidates"));
  AUXSTORE_RETURN_IF_ERROR(NotNull(found_index, "found_index"));
  std::vector<auxstore::Prefix> prefixes;
  prefixes.reserve(n);
  for (size_t i = 0; i < n; ++i) prefixes.push_back(ToPrefix(candidates[i]));
  auxstore::LookupOptions o;
  o.lease = lease_ms > 0;
  o.lease_ms = lease_ms;
  AUXSTORE_ASSIGN_OR_RETURN(auto found, d->store->FindLongestPrefix(ns, prefixes, o));
  if (!found) return Status::NotFound("none of the " + std::to_string(n) + " candidates is stored");
  *found_index = found->index;
  if (lease_out != nullptr) *lease_out = found->lease;
  return Status::Ok();
}

Status LongestForTokens(auxstore_t* db, uint64_t ns, const uint32_t* tokens, size_t n_tokens,
                        uint32_t block_size, uint64_t salt, uint64_t lease_ms,
                        uint8_t prefix_out[16], uint64_t* tokens_out, uint64_t* lease_out) {
  AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
  if (n_tokens > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(tokens, "tokens"));
  AUXSTORE_RETURN_IF_ERROR(NotNull(prefix_out, "prefix_out"));
  AUXSTORE_RETURN_IF_ERROR(NotNull(tokens_out, "tokens_out"));
  if (block_size == 0) return Status::InvalidArgument("block_size is 0, must be > 0");
  auxstore::LookupOptions o;
  o.lease = lease_ms > 0;
  o.lease_ms = lease_ms;
  AUXSTORE_ASSIGN_OR_RETURN(
      auto match, d->store->LongestPrefixForTokens(ns, {tokens, n_tokens}, block_size, salt, o));
  if (!match) {
    return Status::NotFound("no stored prefix of the " + std::to_string(n_tokens) + " tokens");
  }
  std::memcpy(prefix_out, match->prefix.bytes.data(), 16);
  *tokens_out = match->tokens;
  if (lease_out != nullptr) *lease_out = match->lease;
  return Status::Ok();
}

}  // namespace

extern "C" {

int auxstore_open(const char* path, const auxstore_options_t* options, auxstore_t** out,
                  char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(NotNull(path, "path"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(out, "out"));
    if (*path == '\0') return Status::InvalidArgument("path is empty");
    auxstore::Options o;
    if (options != nullptr) {
      AUXSTORE_ASSIGN_OR_RETURN(const auto opts, Live(options, "options"));
      o = opts->options;
    }
    auto db = std::make_shared<auxstore_t>();
    db->options = o;
    auto store = auxstore::Store::Open(db->options, path);
    if (!store.ok()) return store.status();
    db->store = std::move(*store);
    *out = auxstore::capi::NewHandle(std::move(db));
    return Status::Ok();
  });
}

// The store closes here unless a pipeline still uses it (then with the last
// such pipeline). Destructors are noexcept: nothing escapes.
void auxstore_close(auxstore_t* db) {
  if (db == nullptr) return;
  try {
    if (auxstore::capi::Take(db) == nullptr) {
      auxstore::capi::ReportMisuse(__func__, db, auxstore::capi::HandleKind::kStore);
    }
  } catch (...) {  // out of memory for the warning: nothing to do
  }
}

int auxstore_register_namespace(auxstore_t* db, const char* model_id,
                                const auxstore_geometry_t* geometry, uint64_t* ns_out,
                                char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(model_id, "model_id"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(geometry, "geometry"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(ns_out, "ns_out"));
    auxstore::NamespaceSpec spec{model_id, auxstore::capi::ToQsa(*geometry),
                                 auxstore::capi::ToDsa(*geometry)};
    AUXSTORE_ASSIGN_OR_RETURN(*ns_out, d->store->RegisterNamespace(spec));
    return Status::Ok();
  });
}

int auxstore_put_snapshot(auxstore_t* db, uint64_t ns, const uint8_t prefix[16],
                          uint64_t token_count, size_t n_layers, const auxstore_layer_t* layers,
                          char** errmsg) {
  return Guard(__func__, errmsg,
               [&] { return Put(db, ns, prefix, token_count, n_layers, layers, nullptr); });
}

int auxstore_put_snapshot_ex(auxstore_t* db, uint64_t ns, const uint8_t prefix[16],
                             uint64_t token_count, size_t n_layers, const auxstore_layer_t* layers,
                             const auxstore_put_options_t* options, char** errmsg) {
  return Guard(__func__, errmsg,
               [&] { return Put(db, ns, prefix, token_count, n_layers, layers, options); });
}

int auxstore_put_snapshots(auxstore_t* db, const auxstore_snapshot_put_t* snapshots, size_t n,
                           int* results, char** errmsg) {
  bool reported = false;  // results[] holds each snapshot's outcome
  const int rc = Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    if (n > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(snapshots, "snapshots"));
    // Each snapshot's arguments checked on their own: a bad one fails alone.
    std::vector<Status> outcome(n);
    std::vector<std::vector<LayerBlob>> blobs(n);
    std::vector<std::vector<auxstore::Prefix>> chains(n);
    std::vector<auxstore::Store::SnapshotPut> puts;
    std::vector<size_t> which;
    for (size_t i = 0; i < n; ++i) {
      const auxstore_snapshot_put_t& s = snapshots[i];
      const std::string at = "snapshots[" + std::to_string(i) + "]";
      auxstore::Store::SnapshotPut p;
      outcome[i] = ToLayers(s.layers, s.n_layers, &blobs[i]).WithContext(at);
      if (outcome[i].ok()) {
        outcome[i] =
            auxstore::capi::ToPutOptions(s.options, at + ".options", &chains[i], &p.options);
      }
      if (!outcome[i].ok()) continue;
      p.ns = s.ns;
      p.prefix = ToPrefix(s.prefix);
      p.token_count = s.token_count;
      p.layers = blobs[i];
      puts.push_back(std::move(p));
      which.push_back(i);
    }
    (void)d->store->PutSnapshots(puts);
    for (size_t k = 0; k < puts.size(); ++k) {
      outcome[which[k]] = puts[k].status.WithContext("snapshots[" + std::to_string(which[k]) + "]");
    }
    Status first;
    for (size_t i = 0; i < n; ++i) {
      if (results != nullptr) results[i] = static_cast<int>(outcome[i].code());
      if (first.ok() && !outcome[i].ok()) first = outcome[i];
    }
    reported = true;
    return first;
  });
  // The call failed as a whole (a bad handle or array, out of memory):
  // every snapshot's outcome is that failure, never a stale value.
  if (!reported && results != nullptr && snapshots != nullptr) {
    for (size_t i = 0; i < n; ++i) results[i] = rc;
  }
  return rc;
}

int auxstore_put_snapshot_with_digest(auxstore_t* db, uint64_t ns, const uint8_t prefix[16],
                                      uint64_t token_count, const uint8_t token_digest[16],
                                      size_t n_layers, const auxstore_layer_t* layers,
                                      char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(NotNull(token_digest, "token_digest"));
    auxstore_put_options_t o{};
    o.struct_size = sizeof o;
    o.token_digest = token_digest;
    return Put(db, ns, prefix, token_count, n_layers, layers, &o);
  });
}

int auxstore_longest_prefix(auxstore_t* db, uint64_t ns, const uint8_t (*candidates)[16], size_t n,
                            size_t* found_index, char** errmsg) {
  return Guard(__func__, errmsg,
               [&] { return Longest(db, ns, candidates, n, 0, found_index, nullptr); });
}

int auxstore_longest_prefix_leased(auxstore_t* db, uint64_t ns, const uint8_t (*candidates)[16],
                                   size_t n, uint64_t lease_ms, size_t* found_index,
                                   uint64_t* lease_out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(NotNull(lease_out, "lease_out"));
    if (lease_ms == 0) return Status::InvalidArgument("lease_ms is 0");
    return Longest(db, ns, candidates, n, lease_ms, found_index, lease_out);
  });
}

int auxstore_longest_prefix_for_tokens(auxstore_t* db, uint64_t ns, const uint32_t* tokens,
                                       size_t n_tokens, uint32_t block_size, uint64_t salt,
                                       uint8_t prefix_out[16], uint64_t* tokens_out,
                                       char** errmsg) {
  return Guard(__func__, errmsg, [&] {
    return LongestForTokens(db, ns, tokens, n_tokens, block_size, salt, 0, prefix_out, tokens_out,
                            nullptr);
  });
}

int auxstore_longest_prefix_for_tokens_leased(auxstore_t* db, uint64_t ns, const uint32_t* tokens,
                                              size_t n_tokens, uint32_t block_size, uint64_t salt,
                                              uint64_t lease_ms, uint8_t prefix_out[16],
                                              uint64_t* tokens_out, uint64_t* lease_out,
                                              char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(NotNull(lease_out, "lease_out"));
    if (lease_ms == 0) return Status::InvalidArgument("lease_ms is 0");
    return LongestForTokens(db, ns, tokens, n_tokens, block_size, salt, lease_ms, prefix_out,
                            tokens_out, lease_out);
  });
}

int auxstore_lease_acquire(auxstore_t* db, uint64_t ns, const uint8_t prefix[16], uint64_t lease_ms,
                           uint64_t* lease_out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(prefix, "prefix"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(lease_out, "lease_out"));
    AUXSTORE_ASSIGN_OR_RETURN(*lease_out, d->store->AcquireLease(ns, ToPrefix(prefix), lease_ms));
    return Status::Ok();
  });
}

int auxstore_lease_release(auxstore_t* db, uint64_t lease, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    return d->store->ReleaseLease(lease);
  });
}

int auxstore_get_manifests(auxstore_t* db, uint64_t ns, const uint8_t (*prefixes)[16], size_t n,
                           uint8_t* found, uint64_t* token_counts, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    if (n > 0) {
      AUXSTORE_RETURN_IF_ERROR(NotNull(prefixes, "prefixes"));
      AUXSTORE_RETURN_IF_ERROR(NotNull(found, "found"));
    }
    std::vector<auxstore::Prefix> ps;
    ps.reserve(n);
    for (size_t i = 0; i < n; ++i) ps.push_back(ToPrefix(prefixes[i]));
    AUXSTORE_ASSIGN_OR_RETURN(auto manifests, d->store->GetManifests(ns, ps));
    for (size_t i = 0; i < n; ++i) {
      found[i] = manifests[i].has_value() ? 1 : 0;
      if (token_counts != nullptr) token_counts[i] = manifests[i] ? manifests[i]->token_count : 0;
    }
    return Status::Ok();
  });
}

int auxstore_read_layers(auxstore_t* db, uint64_t ns, const uint8_t prefix[16],
                         auxstore_layer_dest_t* dests, size_t n, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(prefix, "prefix"));
    if (n > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(dests, "dests"));
    const auxstore::Prefix p = ToPrefix(prefix);
    AUXSTORE_ASSIGN_OR_RETURN(auxstore::Manifest m, d->store->GetManifest(ns, p));
    // Every destination is checked before anything is read.
    for (size_t i = 0; i < n; ++i) {
      const std::string at = "dests[" + std::to_string(i) + "]";
      const auxstore::LayerEntry* e = m.FindLayer(dests[i].layer);
      if (e == nullptr) {
        return Status::NotFound(at + ".layer " + std::to_string(dests[i].layer) +
                                " is not in the snapshot");
      }
      if (e->bytes > 0 && dests[i].data == nullptr) {
        return Status::InvalidArgument(at + ".data is NULL");
      }
      if (dests[i].capacity < e->bytes) {
        return Status::OutOfRange(at + ": layer " + std::to_string(e->layer) + " is " +
                                  std::to_string(e->bytes) + " bytes, capacity is " +
                                  std::to_string(dests[i].capacity));
      }
    }
    // One manifest read and one record iterator for all the layers.
    std::vector<auxstore::Store::LayerInto> layers(n);
    for (size_t i = 0; i < n; ++i) {
      layers[i].layer = dests[i].layer;
      layers[i].dst = {static_cast<uint8_t*>(dests[i].data), dests[i].capacity};
    }
    const Status st = d->store->ReadLayersInto(ns, p, layers);
    for (size_t i = 0; i < n; ++i) dests[i].size = layers[i].bytes;
    return st;
  });
}

int auxstore_register_namespace_ex(auxstore_t* db, const auxstore_namespace_t* ns, uint64_t* ns_out,
                                   char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(ns, "ns"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(ns_out, "ns_out"));
    // Callers built before page_tokens existed pass the shorter struct.
    constexpr size_t kWithoutPageTokens = offsetof(auxstore_namespace_t, page_tokens);
    if (ns->struct_size < kWithoutPageTokens) {
      return Status::InvalidArgument("ns->struct_size is " + std::to_string(ns->struct_size) +
                                     ", expected sizeof(auxstore_namespace_t)");
    }
    AUXSTORE_RETURN_IF_ERROR(NotNull(ns->model_id, "ns->model_id"));
    if (ns->n_opaque_layers > 0)
      AUXSTORE_RETURN_IF_ERROR(NotNull(ns->opaque_layers, "ns->opaque_layers"));
    auxstore::NamespaceSpec spec{ns->model_id, auxstore::capi::ToQsa(ns->geometry),
                                 auxstore::capi::ToDsa(ns->geometry)};
    if (ns->weight_revision != nullptr) spec.weight_revision = ns->weight_revision;
    spec.tp_rank = ns->tp_rank;
    spec.tp_world_size = ns->tp_world_size == 0 ? 1 : ns->tp_world_size;
    if (ns->struct_size >= sizeof(auxstore_namespace_t)) spec.page_tokens = ns->page_tokens;
    for (size_t i = 0; i < ns->n_opaque_layers; ++i) {
      const auxstore_opaque_layer_desc_t& desc = ns->opaque_layers[i];
      if (desc.ndim == 0 || desc.ndim > 8) {
        return Status::InvalidArgument("ns->opaque_layers[" + std::to_string(i) + "].ndim is " +
                                       std::to_string(desc.ndim) + ", not 1..8");
      }
      spec.opaque_layers.push_back({desc.layer,
                                    static_cast<auxstore::DType>(desc.dtype),
                                    {desc.shape, desc.shape + desc.ndim}});
    }
    AUXSTORE_ASSIGN_OR_RETURN(*ns_out, d->store->RegisterNamespace(spec));
    return Status::Ok();
  });
}

int auxstore_get_manifest(auxstore_t* db, uint64_t ns, const uint8_t prefix[16],
                          uint64_t* token_count, auxstore_layer_info_t* layers, size_t capacity,
                          size_t* n_layers, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(prefix, "prefix"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(token_count, "token_count"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(n_layers, "n_layers"));
    if (capacity > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(layers, "layers"));
    AUXSTORE_ASSIGN_OR_RETURN(auxstore::Manifest m, d->store->GetManifest(ns, ToPrefix(prefix)));
    *n_layers = m.layers.size();
    if (m.layers.size() > capacity) {
      return Status::OutOfRange("the snapshot has " + std::to_string(m.layers.size()) +
                                " layers, more than the capacity of " + std::to_string(capacity));
    }
    *token_count = m.token_count;
    for (size_t i = 0; i < m.layers.size(); ++i) {
      const auxstore::LayerEntry& e = m.layers[i];
      layers[i] = {e.layer, static_cast<uint32_t>(e.kind), e.bytes, e.xxh3};
    }
    return Status::Ok();
  });
}

int auxstore_get_layer(auxstore_t* db, uint64_t ns, const uint8_t prefix[16], uint32_t layer,
                       void** data, size_t* size, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(prefix, "prefix"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(data, "data"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(size, "size"));
    AUXSTORE_ASSIGN_OR_RETURN(auto blob, d->store->GetLayer(ns, ToPrefix(prefix), layer));
    return CopyOut(blob.data(), blob.size(), data, size);
  });
}

int auxstore_erase(auxstore_t* db, uint64_t ns, const uint8_t prefix[16], char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(prefix, "prefix"));
    return d->store->Erase(ns, ToPrefix(prefix));
  });
}

int auxstore_flush(auxstore_t* db, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    return d->store->Flush();
  });
}

int auxstore_stats(auxstore_t* db, auxstore_stats_t* out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(out, "out"));
    const auxstore::StoreStats s = d->store->Stats();
    *out = {s.snapshots,
            s.payload_bytes,
            s.hits,
            s.misses,
            s.puts,
            s.duplicate_puts,
            s.evictions,
            s.expirations,
            s.quarantines,
            s.orphans_seen,
            s.orphans_removed,
            s.commit_seq,
            s.durable_watermark,
            s.lost_commits_at_open,
            s.bytes_written,
            s.bytes_read,
            s.capacity_bytes,
            s.leases,
            s.index_ready ? 1 : 0,
            s.fenced ? 1 : 0,
            s.unique_bytes};
    return Status::Ok();
  });
}

int auxstore_shared_stats(auxstore_t* db, auxstore_shared_stats_t* out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(out, "out"));
    if (out->struct_size < sizeof(auxstore_shared_stats_t)) {
      return Status::InvalidArgument("out->struct_size is " + std::to_string(out->struct_size) +
                                     ", expected sizeof(auxstore_shared_stats_t)");
    }
    const auxstore::StoreStats s = d->store->Stats();
    *out = {sizeof(auxstore_shared_stats_t),
            s.shared ? 1 : 0,
            s.shared_uploads,
            s.shared_pages_stored,
            s.shared_pages_present,
            s.shared_upload_failures,
            s.shared_shed,
            s.shared_queued,
            s.shared_restores,
            s.shared_corruptions};
    return Status::Ok();
  });
}

}  // extern "C"
