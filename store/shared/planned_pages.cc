#include "store/shared/planned_pages.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "format/layer_layout.h"
#include "format/manifest.h"
#include "store/put_rules.h"
#include "store/shared/shared_record.h"

namespace auxstore::shared {

Result<PlannedPut> PlanPut(const NamespaceSpec& spec, uint64_t token_count,
                           std::span<const LayerBlob> layers, const PutOptions& put,
                           uint32_t chunk_bytes, PutId put_id, bool digests) {
  // The local put's checks (DbStore::PlanLayers, store/put_rules.h), in its
  // order, so that a refused put gets the same error from either.
  if (layers.empty()) return Status::InvalidArgument("a snapshot needs at least one layer");
  AUXSTORE_RETURN_IF_ERROR(CheckBlockChain(put.block_chain.size(), put.block_size, token_count));
  const bool chained = !put.block_chain.empty();
  PlannedPut plan;
  Manifest& m = plan.manifest;
  if (chained) {
    AUXSTORE_ASSIGN_OR_RETURN(m.page_tokens, ChainPageTokens(spec, put.block_size));
  }
  std::vector<const LayerBlob*> sorted;
  for (const LayerBlob& l : layers) sorted.push_back(&l);
  std::sort(sorted.begin(), sorted.end(),
            [](const LayerBlob* a, const LayerBlob* b) { return a->layer < b->layer; });
  const uint64_t chain_tokens = uint64_t{put.block_chain.size()} * put.block_size;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const LayerBlob& l = *sorted[i];
    AUXSTORE_RETURN_IF_ERROR(CheckPutLayer(l, i > 0 ? sorted[i - 1] : nullptr, spec));
    AUXSTORE_ASSIGN_OR_RETURN(auto shape, ShapeOf(l.kind, l.bytes, spec));
    for (uint32_t row_bytes : shape.row_bytes) {
      if (ChunkCount(shape.rows * row_bytes, chunk_bytes) == UINT32_MAX) {
        return Status::InvalidArgument("layer " + std::to_string(l.layer) + " is too large");
      }
    }
    LayerEntry e;
    e.layer = l.layer;
    e.kind = l.kind;
    e.bytes = l.bytes.size();
    e.header = std::move(shape.header);
    e.rows = shape.rows;
    e.row_bytes = std::move(shape.row_bytes);
    if (chained && l.kind != Kind::kOpaque) {
      const uint32_t pages = ChainFullPages(e.rows, chain_tokens, m.page_tokens);
      if (pages > 0) e.runs.push_back({put_id, 0, chunk_bytes, 0, pages});
    }
    m.layers.push_back(std::move(e));
    plan.layers.push_back(l.bytes);
  }
  if (digests) {
    for (size_t i = 0; i < m.layers.size(); ++i) {
      LayerHasher h(m, m.layers[i]);
      h.Update(plan.layers[i]);
      m.layers[i].xxh3 = h.Digest();
    }
  }
  m.token_count = token_count;
  m.created_unix_ms =
      put.created_unix_ms.value_or(std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count());
  m.chunk_bytes = chunk_bytes;
  m.token_digest = put.token_digest;
  m.put_id = put_id;
  return plan;
}

Result<std::vector<ByteSpan>> PlanPages(const NamespaceSpec& spec, uint64_t token_count,
                                        std::span<const LayerBlob> layers, const PutOptions& put,
                                        uint32_t chunk_bytes) {
  AUXSTORE_ASSIGN_OR_RETURN(auto plan, PlanPut(spec, token_count, layers, put, chunk_bytes,
                                               /*put_id=*/1, /*digests=*/false));
  return CutPages(plan);
}

std::vector<ByteSpan> CutPages(const PlannedPut& plan) {
  std::vector<ByteSpan> pieces;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    for (const Range& r : CutLayer(plan.manifest, plan.manifest.layers[i])) {
      pieces.push_back(plan.layers[i].subspan(r.offset, r.bytes));
    }
  }
  return pieces;
}

}  // namespace auxstore::shared
