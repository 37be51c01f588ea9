// DbStore::PutPlan: what one put is about to write (db_store_put.cc builds
// it; compaction's re-layout, db_store_relayout.cc, builds one too).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "format/layer_layout.h"
#include "format/manifest.h"
#include "format/run_record.h"
#include "store/db_store.h"
#include "store/page_ledger.h"

namespace auxstore::store_internal {

// One layer of a put: its shape, its full pages and their XXH3s, and the
// pages it shares.
struct DbStore::PutPlan {
  struct Layer {
    const LayerBlob* blob = nullptr;
    LayerShape shape;
    uint32_t full_pages = 0;                       // F
    std::vector<std::vector<uint64_t>> page_xxh3;  // [array][page], pages [0, F)
    std::vector<PageRun> runs;                     // shared ones; the own one is added last
    uint32_t own_first = 0;

    // Array `a`'s rows from `first_row` on.
    ByteSpan Slice(size_t a, uint64_t first_row) const {
      const uint64_t rb = shape.row_bytes[a];
      const uint64_t begin = ArrayOffset(shape, a) + first_row * rb;
      return blob->bytes.subspan(begin, (shape.rows - first_row) * rb);
    }
  };
  NamespaceId ns = 0;
  Prefix prefix;
  const PutOptions* options = nullptr;
  bool chained = false;
  uint32_t page_tokens = 0;
  std::vector<LayerBlob> sorted;  // the layers by number; `layers` point into it
  std::vector<Layer> layers;
  // The chained hash at the end of each page, when given as such
  // (compaction's re-layout); otherwise they come from the block chain.
  std::vector<Prefix> page_ends;
  ShareFrom share_from;  // where SharePages looks for owners
  SharedChain shared;    // the owners read, pinned until the put ends
  // What the put writes.
  PutId put_id = 0;
  Manifest manifest;
  RunRecord run;
  std::vector<OwnStream> streams;
  uint64_t own_bytes = 0;

  // The chained hash at the end of `page`.
  const Prefix& ChainAt(uint32_t page) const {
    if (!page_ends.empty()) return page_ends[page];
    return options->block_chain[(uint64_t{page} + 1) * page_tokens / options->block_size - 1];
  }
  // Tokens the chain covers.
  uint64_t ChainTokens() const {
    if (!page_ends.empty()) return uint64_t{page_ends.size()} * page_tokens;
    return uint64_t{options->block_chain.size()} * options->block_size;
  }
  uint32_t MaxPages() const {
    uint32_t n = 0;
    for (const Layer& p : layers) n = std::max(n, p.full_pages);
    return n;
  }
};

}  // namespace auxstore::store_internal
