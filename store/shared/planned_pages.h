// A put planned before (or without) the local store: the manifest a local
// put of the layers commits and the page objects the pool names of it. A
// kThrough put (TieredStore::PutSnapshot) uploads the pages while the local
// store writes the snapshot, then commits the record, which names the pages
// cut from the manifest the local store committed; with
// Options::shared_local_copies off a kThrough put commits the planned
// manifest itself, and nothing is written locally.
#pragma once

#include <span>
#include <vector>

#include "auxstore/store.h"

namespace auxstore::shared {

// The manifest a local put of `layers` commits when it shares no page with
// an earlier put (put id `put_id`, the owner of every page, at
// `chunk_bytes`; the creation time put.created_unix_ms or now), and each of
// its layers' bytes in manifest.layers' order (ascending layer). With
// `digests` the layer digests of the caller's bytes are computed (one pass
// over them), else left 0. The error the local put returns for layers it
// refuses (the same checks, store/put_rules.h), nothing planned then.
struct PlannedPut {
  Manifest manifest;
  std::vector<ByteSpan> layers;
};
Result<PlannedPut> PlanPut(const NamespaceSpec& spec, uint64_t token_count,
                           std::span<const LayerBlob> layers, const PutOptions& put,
                           uint32_t chunk_bytes, PutId put_id, bool digests);

// The pieces of a planned put's layers CutLayer makes page objects of, in
// manifest order.
std::vector<ByteSpan> CutPages(const PlannedPut& plan);

// The byte ranges of `layers` that CutLayer makes page objects of, for the
// manifest a local put of them is expected to commit: layers in ascending
// order; a chained put's QSA/DSA layers paged at the namespace's page (the
// block size when it has none) up to the chain's tokens; all else in whole
// arrays. The local put's error when it would refuse the layers: nothing
// goes to the pool first then. A plan, not a promise: the record is cut
// from the committed manifest, and a page it names that the plan missed is
// uploaded then (a planned page it does not name stays an orphan until
// `compact`). Who stored a page does not change the cut.
Result<std::vector<ByteSpan>> PlanPages(const NamespaceSpec& spec, uint64_t token_count,
                                        std::span<const LayerBlob> layers, const PutOptions& put,
                                        uint32_t chunk_bytes);

}  // namespace auxstore::shared
