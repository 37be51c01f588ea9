// The rules a put's layers are checked and paged by, shared by the local put
// (DbStore::PlanLayers, DbStore::HashPages) and the shared tier's plan of the
// pages it sends ahead of the local commit (store/shared/planned_pages.h),
// so that the two cannot drift apart.
#pragma once

#include <cstdint>

#include "auxstore/store.h"

namespace auxstore {

// The page of a chained put: the namespace's page_tokens, else the block
// size. InvalidArgument when it is not a whole number of blocks.
Result<uint32_t> ChainPageTokens(const NamespaceSpec& spec, uint32_t block_size);

// Layer `l` as a put accepts it: not the same layer as `previous` (the one
// before it in ascending order; null for the first), a known kind, and a
// blob that matches the namespace.
Status CheckPutLayer(const LayerBlob& l, const LayerBlob* previous, const NamespaceSpec& spec);

// The full pages of a chained QSA/DSA layer of `rows` rows: those within the
// chain's tokens.
uint32_t ChainFullPages(uint64_t rows, uint64_t chain_tokens, uint32_t page_tokens);

}  // namespace auxstore
