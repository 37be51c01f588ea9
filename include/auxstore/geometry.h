// Blob kinds and the layer geometry a namespace is registered with.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

// Element types an opaque layer can declare. Persisted: never renumber.
enum class DType : uint32_t {
  kU8 = 1,
  kI8 = 2,
  kBf16 = 3,
  kF16 = 4,
  kF32 = 5,
  kI32 = 6,
  kF64 = 7,
  kI64 = 8,
};
std::string_view DTypeName(DType dtype);  // "u8", "bf16", ...; "unknown"
size_t DTypeBytes(DType dtype);           // 0 for an unknown value

// What one opaque layer holds (e.g. a Mamba conv or SSM state): a dense
// array of `shape` elements of `dtype`. A blob of that layer must be exactly
// prod(shape) * DTypeBytes(dtype) bytes.
struct OpaqueLayerSpec {
  uint32_t layer = 0;
  DType dtype = DType::kU8;
  std::vector<uint64_t> shape;

  friend bool operator==(const OpaqueLayerSpec&, const OpaqueLayerSpec&) = default;
};

// What a namespace is registered with: a model identity and its geometry.
// Every field but dsa.capacity is part of the namespace id (the
// fingerprint), so a snapshot taken under another model, weight revision,
// tensor-parallel shard or layer layout is never returned.
struct NamespaceSpec {
  std::string model_id;
  QsaGeometry qsa;
  DsaGeometry dsa;
  // The model's weight revision (a checkpoint hash or tag); empty = none.
  std::string weight_revision;
  // The tensor-parallel shard this aux state belongs to: rank < world_size.
  // World size 1 (rank 0): the state is not sharded.
  uint32_t tp_rank = 0;
  uint32_t tp_world_size = 1;
  // Declared shapes of opaque layers (ascending layer, unique). An opaque
  // layer with no declaration holds any number of bytes.
  std::vector<OpaqueLayerSpec> opaque_layers;
  // Rows (tokens) per stored page of QSA and DSA layers; 0: the block size
  // of each put's chain (PutOptions::block_size). A multiple of it.
  uint32_t page_tokens = 0;

  const OpaqueLayerSpec* FindOpaque(uint32_t layer) const {
    for (const auto& o : opaque_layers)
      if (o.layer == layer) return &o;
    return nullptr;
  }
};

// Bytes a declared opaque layer holds; 0 when the product overflows or the
// dtype is unknown.
uint64_t OpaqueLayerBytes(const OpaqueLayerSpec& spec);

// OK, or InvalidArgument naming the first field of `spec` that cannot be
// registered.
Status ValidateNamespaceSpec(const NamespaceSpec& spec);

}  // namespace auxstore
