// The run record: what one put stored in its records, so that later
// snapshots can share its pages and the store can verify and reclaim them
// (docs/format.md, "Pages"). Keyed by (namespace, put id); the payload of a
// kRun envelope:
//   u32 version (1) | 16-byte prefix of the put's snapshot
//   u32 page_tokens | u32 chunk_bytes
//   u32 chain first page | u32 chain pages | 16 bytes per page: the chained
//       prefix hash at the end of each page [first, first + pages)
//   u32 layers, per layer (ascending):
//     u32 layer | u8 kind | u32 first_page | u32 pages | u8 arrays
//     per array: u32 row_bytes | u64 tail_bytes | u64 tail_xxh3 |
//                pages x u64 page XXH3
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "auxstore/manifest_types.h"
#include "auxstore/prefix.h"
#include "auxstore/status.h"

namespace auxstore {

struct RunArray {
  uint32_t row_bytes = 0;
  uint64_t tail_bytes = 0;  // bytes after the pages in this stream (the put's own tail)
  uint64_t tail_xxh3 = 0;
  std::vector<uint64_t> page_xxh3;  // pages [first_page, first_page + pages)

  friend bool operator==(const RunArray&, const RunArray&) = default;
};

struct RunLayer {
  uint32_t layer = 0;
  Kind kind = Kind::kOpaque;
  uint32_t first_page = 0;
  uint32_t pages = 0;
  std::vector<RunArray> arrays;

  friend bool operator==(const RunLayer&, const RunLayer&) = default;
};

struct RunRecord {
  Prefix prefix;  // the snapshot this put made
  uint32_t page_tokens = 0;
  uint32_t chunk_bytes = 0;
  uint32_t chain_first_page = 0;
  std::vector<Prefix> chain;  // prefix hash at the end of each stored page position
  std::vector<RunLayer> layers;

  // Bytes of the put's records' payloads.
  uint64_t stored_bytes() const;
  const RunLayer* FindLayer(uint32_t layer) const {
    for (const auto& l : layers)
      if (l.layer == layer) return &l;
    return nullptr;
  }
  friend bool operator==(const RunRecord&, const RunRecord&) = default;
};

std::string EncodeRunRecord(const RunRecord& r);
// Corruption for truncation, trailing bytes, an unknown version or kind,
// layers out of order, a page range past 2^32.
Result<RunRecord> DecodeRunRecord(ByteSpan payload);

}  // namespace auxstore
