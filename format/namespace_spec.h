// Serialization of a registered namespace (the payload of a kNamespace record):
//   u32 version (1) | u32 model_id length | model_id bytes |
//   u32 qsa hd, max_tokens, ratio, rot | f32 theta, eps (bit patterns) |
//   u32 dsa index_head_dim, capacity          (all little-endian)
#pragma once

#include <string>

#include "auxstore/blob_codecs.h"
#include "auxstore/geometry.h"
#include "auxstore/status.h"

namespace auxstore::internal {

inline constexpr size_t kMaxModelIdBytes = 4096;

std::string EncodeNamespaceSpec(const NamespaceSpec& spec);
Result<NamespaceSpec> DecodeNamespaceSpec(ByteSpan payload);

}  // namespace auxstore::internal
