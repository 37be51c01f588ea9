// The page objects a put will name in the pool, known before its local
// commit: a kThrough put (TieredStore::PutSnapshot) uploads them while the
// local store writes the snapshot, then commits the record, which names
// the pages cut from the manifest the local store committed.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "auxstore/store.h"

namespace auxstore::shared {

// The byte ranges of `layers` that CutLayer will make page objects of, for
// the manifest a local put of them is expected to commit: layers in
// ascending order; a chained put's QSA/DSA layers paged at the namespace's
// page (the block size when it has none) up to the chain's tokens; all else
// in whole arrays. nullopt when the local put would refuse the layers: it
// then says why, and nothing goes to the pool first. A plan, not a promise:
// the record is cut from the committed manifest, and a page it names that
// the plan missed is uploaded then (a planned page it does not name stays
// an orphan until `compact`).
std::optional<std::vector<ByteSpan>> PlanPages(const NamespaceSpec& spec, uint64_t token_count,
                                               std::span<const LayerBlob> layers,
                                               const PutOptions& put);

}  // namespace auxstore::shared
