// The snapshot manifest: what a snapshot holds, written last.
//
// Encoded (all LE) as the payload of a kManifest envelope:
//   u32 manifest version (1)
//   u64 token_count
//   i64 created_unix_ms
//   u32 chunk_bytes            chunk size the records were cut at
//   u8  has_token_digest, then 16 digest bytes if set
//   u32 layer count, then per layer (ascending layer index, no repeats):
//     u32 layer, u8 kind, u64 bytes, u32 chunks, u64 xxh3_64 of the whole blob
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "auxstore/manifest_types.h"
#include "auxstore/status.h"

namespace auxstore {

inline constexpr uint32_t kManifestVersion = 1;

std::string EncodeManifest(const Manifest& m);

// Corruption for truncation, trailing bytes, unknown version or kind, layers
// out of order, chunk counts inconsistent with sizes.
Result<Manifest> DecodeManifest(ByteSpan payload);

// Chunks a blob of `bytes` is cut into at `chunk_bytes` (0 bytes -> 1 empty chunk).
// Saturates at UINT32_MAX when the exact count does not fit a u32 chunk index
// (such a blob cannot be stored; DecodeManifest compares the exact count).
uint32_t ChunkCount(uint64_t bytes, uint32_t chunk_bytes);

}  // namespace auxstore
