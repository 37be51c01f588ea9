// The snapshot manifest: what a snapshot holds, written last.
//
// Encoded (all LE) as the payload of a kManifest envelope (docs/format.md §5):
//   u32 manifest version (2)
//   u64 token_count | i64 created_unix_ms | u32 chunk_bytes
//   u8  has_token_digest, then 16 digest bytes if set
//   u64 put_id | u32 page_tokens
//   u32 layer count, then per layer (ascending layer index, no repeats):
//     u32 layer | u8 kind | u64 bytes | u64 layer digest (LayerHasher)
//     u8 header length (QSA/DSA 16, opaque 0) | header bytes
//     u64 rows | u8 arrays | u32 row_bytes per array
//     u32 runs | per run: u64 owner | u32 owner_first_page |
//                         u32 owner_chunk_bytes | u32 first_page | u32 pages
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "auxstore/manifest_types.h"
#include "auxstore/status.h"

namespace auxstore {

inline constexpr uint32_t kManifestVersion = 2;

std::string EncodeManifest(const Manifest& m);

// Corruption for truncation, trailing bytes, unknown version or kind, layers
// out of order, and any layout that does not add up: a header of the wrong
// size for its kind, arrays whose rows do not make the blob's size, runs
// that are not contiguous from page 0, pages past the rows, the snapshot's
// own pages not last.
Result<Manifest> DecodeManifest(ByteSpan payload);

// Chunks a stream of `bytes` is cut into at `chunk_bytes` (0 bytes -> 0).
// Saturates at UINT32_MAX when the exact count does not fit a u32 chunk index.
uint32_t ChunkCount(uint64_t bytes, uint32_t chunk_bytes);

}  // namespace auxstore
