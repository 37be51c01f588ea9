#include "store/shared/planned_pages.h"

#include <algorithm>

#include "auxstore/blob_codecs.h"
#include "format/layer_layout.h"
#include "store/shared/shared_record.h"

namespace auxstore::shared {

std::optional<std::vector<ByteSpan>> PlanPages(const NamespaceSpec& spec, uint64_t token_count,
                                               std::span<const LayerBlob> layers,
                                               const PutOptions& put) {
  // The checks of the local put's plan (DbStore::PlanLayers) that decide
  // whether it writes anything.
  if (layers.empty() ||
      !CheckBlockChain(put.block_chain.size(), put.block_size, token_count).ok()) {
    return std::nullopt;
  }
  const bool chained = !put.block_chain.empty();
  Manifest m;
  if (chained) {
    m.page_tokens = spec.page_tokens ? spec.page_tokens : put.block_size;
    if (m.page_tokens % put.block_size != 0) return std::nullopt;
  }
  const uint64_t chain_tokens = uint64_t{put.block_chain.size()} * put.block_size;
  std::vector<const LayerBlob*> sorted;
  for (const LayerBlob& l : layers) sorted.push_back(&l);
  std::sort(sorted.begin(), sorted.end(),
            [](const LayerBlob* a, const LayerBlob* b) { return a->layer < b->layer; });
  std::vector<ByteSpan> pieces;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const LayerBlob& l = *sorted[i];
    if (i > 0 && l.layer == sorted[i - 1]->layer) return std::nullopt;
    if (!IsKnownKind(static_cast<uint8_t>(l.kind))) return std::nullopt;
    const ByteSpan head = l.bytes.first(std::min(l.bytes.size(), BlobHeadBytes(l.kind)));
    if (!CheckLayerBlob(l.layer, l.kind, head, l.bytes.size(), spec).ok()) return std::nullopt;
    auto shape = ShapeOf(l.kind, l.bytes, spec);
    if (!shape.ok()) return std::nullopt;
    LayerEntry e;
    e.layer = l.layer;
    e.kind = l.kind;
    e.bytes = l.bytes.size();
    e.header = std::move(shape->header);
    e.rows = shape->rows;
    e.row_bytes = std::move(shape->row_bytes);
    if (chained && l.kind != Kind::kOpaque) {
      // DbStore::HashPages: the full pages of the rows the chain covers.
      const uint64_t pages = std::min(e.rows, chain_tokens) / m.page_tokens;
      if (pages > 0) {
        PageRun run;
        run.pages = static_cast<uint32_t>(std::min<uint64_t>(pages, UINT32_MAX));
        e.runs.push_back(run);
      }
    }
    for (const Range& r : CutLayer(m, e)) pieces.push_back(l.bytes.subspan(r.offset, r.bytes));
  }
  return pieces;
}

}  // namespace auxstore::shared
