// What a stored snapshot holds, as GetManifest reports it.
//
// A layer blob is a header (QSA and DSA: 16 bytes) followed by its row
// arrays (QSA: raw keys; DSA: k_normed, gate, valid; opaque: one array of
// bytes), each `rows` rows long. The rows of a QSA or DSA layer are stored in
// pages of `page_tokens` rows: page p holds rows [p * page_tokens,
// (p + 1) * page_tokens) of every array and is shared by every snapshot of
// the same namespace, layer and chained prefix up to the page's end. A
// layer's `runs` say which put stored each page; the rows past the last full
// page (the tail), the header and opaque layers belong to the snapshot's own
// put (docs/format.md, "Pages").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "auxstore/blob_codecs.h"
#include "auxstore/geometry.h"
#include "auxstore/prefix.h"
#include "auxstore/status.h"

namespace auxstore {

// Each put that stores bytes is identified by a put id (random, unique per
// put). Its records, one byte stream per (layer, array), are cut in chunks.
using PutId = uint64_t;

// Pages [first_page, first_page + pages) of a layer, stored by put `owner`.
struct PageRun {
  PutId owner = 0;
  uint32_t owner_first_page = 0;   // the first page `owner` stored for this layer
  uint32_t owner_chunk_bytes = 0;  // the chunk size `owner`'s records were cut at
  uint32_t first_page = 0;
  uint32_t pages = 0;

  friend bool operator==(const PageRun&, const PageRun&) = default;
};

struct LayerEntry {
  uint32_t layer = 0;
  Kind kind = Kind::kOpaque;
  uint64_t bytes = 0;  // the whole blob
  // The layer digest (LayerHasher): XXH3-64 over the header and the XXH3-64
  // of every page and tail. It names every page by its hash, so the
  // manifest pins exactly the bytes it committed, whoever stored them.
  uint64_t xxh3 = 0;
  std::vector<uint8_t> header;      // QSA/DSA: the blob's header; opaque: empty
  uint64_t rows = 0;                // rows of every array
  std::vector<uint32_t> row_bytes;  // bytes per row of each array, in blob order
  std::vector<PageRun> runs;        // pages [0, full_pages()) in order; empty: not paged

  uint32_t full_pages() const {
    return runs.empty() ? 0 : runs.back().first_page + runs.back().pages;
  }
  friend bool operator==(const LayerEntry&, const LayerEntry&) = default;
};

struct Manifest {
  uint64_t token_count = 0;
  int64_t created_unix_ms = 0;
  uint32_t chunk_bytes = 0;  // this put's own records
  std::optional<TokenDigest> token_digest;
  PutId put_id = 0;
  uint32_t page_tokens = 0;        // rows per page (0: no layer is paged)
  std::vector<LayerEntry> layers;  // ascending layer index

  // Layer bytes the snapshot holds (shared pages counted in full).
  uint64_t payload_bytes() const {
    uint64_t n = 0;
    for (const auto& l : layers) n += l.bytes;
    return n;
  }
  const LayerEntry* FindLayer(uint32_t layer) const {
    for (const auto& l : layers)
      if (l.layer == layer) return &l;
    return nullptr;
  }
  friend bool operator==(const Manifest&, const Manifest&) = default;
};

// Bytes [chunk_offset, chunk_offset + bytes) of chunk `chunk` of the stream
// (owner, layer, array), landing at blob_offset in the layer's blob.
struct LayerPiece {
  PutId owner = 0;
  uint8_t array = 0;
  uint32_t chunk = 0;
  uint32_t chunk_offset = 0;
  uint32_t bytes = 0;
  uint64_t blob_offset = 0;
};
// Every stored piece of a layer's blob after its header, in blob order: the
// order a reader reads and hashes them in (LayerReader). The header
// itself is in the manifest (LayerEntry::header).
std::vector<LayerPiece> PlanPieces(const Manifest& m, const LayerEntry& l);

// The layer digest, computed over a blob's bytes fed in order from offset 0
// (the header first): XXH3-64 over the header bytes followed by, for each
// array in order, the little-endian XXH3-64 of each full page (rows
// [p * page_tokens, (p + 1) * page_tokens)) and then of its tail rows (all
// its rows when the layer has no pages). One pass over the bytes, as cheap
// as a plain XXH3 of the blob.
class LayerHasher {
 public:
  LayerHasher(const Manifest& m, const LayerEntry& l);
  ~LayerHasher();
  // A copy hashes on from the same point (a reader undoing bytes it fed).
  LayerHasher(const LayerHasher& other);
  LayerHasher& operator=(const LayerHasher& other);
  LayerHasher(LayerHasher&&) noexcept;
  LayerHasher& operator=(LayerHasher&&) noexcept;

  void Update(ByteSpan bytes);
  // The digest of everything fed (meaningful once the whole blob was).
  uint64_t Digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The same digest from the hashes alone: page_xxh3[a] for array a's full
// pages, tail_xxh3[a] for its tail.
uint64_t LayerDigest(ByteSpan header, const std::vector<std::vector<uint64_t>>& page_xxh3,
                     const std::vector<uint64_t>& tail_xxh3);

// Corruption (naming the layer and both digests) unless `digest`, the layer
// digest of a layer's bytes as read, is the one its manifest entry
// committed: the check every read, restore and verification ends a layer
// with.
Status CheckLayerDigest(const LayerEntry& entry, uint64_t digest);

}  // namespace auxstore
