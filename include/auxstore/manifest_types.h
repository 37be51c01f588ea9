// What a stored snapshot holds, as GetManifest reports it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "auxstore/blob_codecs.h"
#include "auxstore/geometry.h"
#include "auxstore/prefix.h"
#include "auxstore/status.h"

namespace auxstore {

struct LayerEntry {
  uint32_t layer = 0;
  Kind kind = Kind::kOpaque;
  uint64_t bytes = 0;
  uint32_t chunks = 0;
  uint64_t xxh3 = 0;  // XXH3-64 of the whole blob

  friend bool operator==(const LayerEntry&, const LayerEntry&) = default;
};

struct Manifest {
  uint64_t token_count = 0;
  int64_t created_unix_ms = 0;
  uint32_t chunk_bytes = 0;
  std::optional<TokenDigest> token_digest;
  std::vector<LayerEntry> layers;  // ascending layer index

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

// Corruption (naming the layer and both hashes) unless `digest`, the XXH3-64
// of a layer's bytes as read, is the one its manifest entry committed: the
// check every read, restore and verification ends a layer with.
Status CheckLayerDigest(const LayerEntry& entry, uint64_t digest);

}  // namespace auxstore
