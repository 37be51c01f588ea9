// Blob kinds and the layer geometry a namespace is registered with.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "auxstore/status.h"

namespace auxstore {

// Kind of one layer's aux blob. Persisted (manifests, envelopes, C ABI):
// values are never renumbered, new kinds get new numbers.
enum class Kind : uint8_t {
  kQsa = 1,     // QSA v1: [ingested u64][pooled u64][raw keys bf16]
  kDsa = 2,     // DSA v1: [len u64][index_head_dim u64][k_normed][gate][valid]
  kOpaque = 3,  // any other per-layer state, bytes with no interpretation
};

// "QSA", "DSA", "opaque", or "unknown".
std::string_view KindName(Kind kind);
bool IsKnownKind(uint8_t raw);

// QSA indexer geometry (seed 000). All zero = the namespace has no QSA layers.
struct QsaGeometry {
  uint32_t hd = 0;          // key head dim
  uint32_t max_tokens = 0;  // raw-key cache length
  uint32_t ratio = 0;       // tokens per pooled block
  uint32_t rot = 0;         // RoPE'd dims (even, <= hd)
  float theta = 0.0f;       // RoPE base
  float eps = 0.0f;         // RMSNorm epsilon

  bool used() const { return hd != 0; }
};

// DSA indexer geometry (seed 001). All zero = the namespace has no DSA layers.
struct DsaGeometry {
  uint32_t index_head_dim = 0;
  uint32_t capacity = 0;  // rows a restored state can hold

  bool used() const { return index_head_dim != 0; }
};

// What a namespace is registered with: a model identity and its geometry.
struct NamespaceSpec {
  std::string model_id;
  QsaGeometry qsa;
  DsaGeometry dsa;
};

// OK, or InvalidArgument naming the first field of `spec` that cannot be
// registered.
Status ValidateNamespaceSpec(const NamespaceSpec& spec);

}  // namespace auxstore
