// SharedRecord: what the shared tier stores as a snapshot's RADOS manifest
// (docs/shared-tier.md, "The store on the pool"), and where its layers are
// cut into page objects.
//
// Encoded (all LE) as the manifest object's bytes:
//   8 bytes "AXSHARE1"
//   u64 namespace id | 16 bytes prefix
//   u32 length | the namespace spec (format/namespace_spec.h)
//   u32 length | the local manifest (format/manifest.h)
//   u32 block_size | u32 chain length | 16 bytes per chained prefix
//   u32 layer count, then per layer: u32 layer | u32 segments |
//       per segment: 16 bytes page key (XXH3-128) | u64 length
// A layer's blob is its segments' bytes, concatenated in order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auxstore/manifest_types.h"
#include "auxstore/prefix.h"
#include "auxstore/status.h"
#include "store/rados/object_names.h"

namespace auxstore::shared {

struct Segment {
  rados::PageKey key;
  uint64_t bytes = 0;
};

struct SharedLayer {
  uint32_t layer = 0;
  std::vector<Segment> segments;  // the blob, in order
};

struct SharedRecord {
  NamespaceId ns = 0;
  Prefix prefix;
  NamespaceSpec spec;
  Manifest manifest;  // as the writer's local store committed it
  uint32_t block_size = 0;
  std::vector<Prefix> block_chain;
  std::vector<SharedLayer> layers;  // manifest.layers' order

  // Every page key the record names, sorted, each once.
  std::vector<rados::PageKey> Pages() const;
};

std::vector<uint8_t> EncodeSharedRecord(const SharedRecord& r);
// Corruption (naming `what`) for anything that does not decode or add up:
// the segments of a layer must make its size.
Result<SharedRecord> DecodeSharedRecord(ByteSpan bytes, const std::string& what);

// The manifest object's id of (ns, prefix): u64 LE namespace ‖ prefix.
std::vector<uint8_t> SharedId(NamespaceId ns, const Prefix& prefix);
// The (ns, prefix) a manifest object's name (manifest.<hex of SharedId>)
// stands for; nullopt for any other name.
std::optional<std::pair<NamespaceId, Prefix>> ParseSharedObject(std::string_view object);

// Where layer `l` (of manifest `m`) is cut into page objects, as
// [offset, length) ranges covering its blob in order: the header; then per
// array each full page's rows (page p: rows [p * page_tokens, (p + 1) *
// page_tokens), the namespace's page boundaries, so chained snapshots cut the
// same rows into the same bytes and name the same objects) and the tail
// rows; unpaged arrays in pieces of at most kMaxSegmentBytes.
struct Range {
  uint64_t offset = 0;
  uint64_t bytes = 0;
};
inline constexpr uint64_t kMaxSegmentBytes = 4ull << 20;
std::vector<Range> CutLayer(const Manifest& m, const LayerEntry& l);

}  // namespace auxstore::shared
