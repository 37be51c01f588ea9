#include "store/shared/planned_pages.h"

#include <algorithm>

#include "format/layer_layout.h"
#include "store/put_rules.h"
#include "store/shared/shared_record.h"

namespace auxstore::shared {

std::optional<std::vector<ByteSpan>> PlanPages(const NamespaceSpec& spec, uint64_t token_count,
                                               std::span<const LayerBlob> layers,
                                               const PutOptions& put) {
  // The local put's checks (DbStore::PlanLayers, store/put_rules.h) that
  // decide whether it writes anything.
  if (layers.empty() ||
      !CheckBlockChain(put.block_chain.size(), put.block_size, token_count).ok()) {
    return std::nullopt;
  }
  const bool chained = !put.block_chain.empty();
  Manifest m;
  if (chained) {
    auto page_tokens = ChainPageTokens(spec, put.block_size);
    if (!page_tokens.ok()) return std::nullopt;
    m.page_tokens = *page_tokens;
  }
  const uint64_t chain_tokens = uint64_t{put.block_chain.size()} * put.block_size;
  std::vector<const LayerBlob*> sorted;
  for (const LayerBlob& l : layers) sorted.push_back(&l);
  std::sort(sorted.begin(), sorted.end(),
            [](const LayerBlob* a, const LayerBlob* b) { return a->layer < b->layer; });
  std::vector<ByteSpan> pieces;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const LayerBlob& l = *sorted[i];
    if (!CheckPutLayer(l, i > 0 ? sorted[i - 1] : nullptr, spec).ok()) return std::nullopt;
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
      PageRun run;
      run.pages = ChainFullPages(e.rows, chain_tokens, m.page_tokens);
      if (run.pages > 0) e.runs.push_back(run);
    }
    for (const Range& r : CutLayer(m, e)) pieces.push_back(l.bytes.subspan(r.offset, r.bytes));
  }
  return pieces;
}

}  // namespace auxstore::shared
