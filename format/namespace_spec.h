// Serialization of a registered namespace (the payload of a kNamespace record):
//   u32 version (1 or 2) | u32 model_id length | model_id bytes |
//   u32 qsa hd, max_tokens, ratio, rot | f32 theta, eps (bit patterns) |
//   u32 dsa index_head_dim, capacity
//   version 2 only (the identity fields; docs/format.md):
//   u32 weight_revision length | bytes | u32 tp_rank | u32 tp_world_size |
//   u32 opaque declarations | each: u32 layer, u32 dtype, u32 dims, u64 dims...
// (all little-endian). A spec without identity fields is written as v1.
#pragma once

#include <string>

#include "auxstore/blob_codecs.h"
#include "auxstore/geometry.h"
#include "auxstore/status.h"

namespace auxstore::internal {

inline constexpr size_t kMaxModelIdBytes = 4096;
inline constexpr size_t kMaxOpaqueLayers = 1u << 16;
inline constexpr size_t kMaxOpaqueDims = 8;

// Whether `spec` sets any field beyond model id and geometry.
bool HasIdentityFields(const NamespaceSpec& spec);
// The identity fields, as both the v2 record and the fingerprint append them.
void AppendIdentityFields(std::string* s, const NamespaceSpec& spec);

std::string EncodeNamespaceSpec(const NamespaceSpec& spec);
Result<NamespaceSpec> DecodeNamespaceSpec(ByteSpan payload);

}  // namespace auxstore::internal
