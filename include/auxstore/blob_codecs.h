// Codecs of the per-layer aux blobs: QSA v1, DSA v1 and opaque.
//
// Every byte layout is little-endian and fixed by the engine (docs/format.md).
// Decoders check everything the restore rules require, in the seeds' order,
// before anyone touches state; each failure is a distinct, named error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "auxstore/geometry.h"
#include "auxstore/status.h"

namespace auxstore {

using ByteSpan = std::span<const uint8_t>;

inline constexpr size_t kQsaHeaderBytes = 16;
inline constexpr size_t kDsaHeaderBytes = 16;

// ---- QSA v1: [ingested u64][pooled u64][raw_keys: ingested*hd bf16] --------

struct QsaHeader {
  uint64_t ingested = 0;
  uint64_t pooled = 0;
  uint64_t raw_key_bytes = 0;  // ingested * hd * 2
};

// Checks a QSA blob of `blob_size` bytes whose first bytes are `head` (at
// least kQsaHeaderBytes of them, or the whole blob if shorter) against `geo`:
// size >= 16; size == 16 + ingested*hd*2 (overflow-checked); ingested <=
// max_tokens; pooled * ratio <= ingested. Lets a restore validate a layer
// from its first chunk, before any upload.
Result<QsaHeader> CheckQsaBlob(ByteSpan head, uint64_t blob_size, const QsaGeometry& geo);

struct QsaBlobView {
  QsaHeader header;
  ByteSpan raw_keys;  // points into the decoded blob
};
Result<QsaBlobView> DecodeQsaBlob(ByteSpan blob, const QsaGeometry& geo);

// Builds a blob; `raw_keys` must be ingested*hd*2 bytes (InvalidArgument
// otherwise). The result passes DecodeQsaBlob when the counters fit `geo`.
Result<std::vector<uint8_t>> EncodeQsaBlob(uint64_t ingested, uint64_t pooled, ByteSpan raw_keys,
                                           uint32_t hd);

// ---- DSA v1: [len u64][d u64][k_normed: len*d bf16][gate: len*d bf16][valid: len u8]

struct DsaLayout {
  uint64_t len = 0;
  uint64_t index_head_dim = 0;
  uint64_t k_normed_offset = 0;
  uint64_t gate_offset = 0;
  uint64_t valid_offset = 0;
  uint64_t key_bytes = 0;    // len * d * 2, the size of k_normed and of gate
  uint64_t total_bytes = 0;  // 16 + len * (4d + 1)
};

// The single place DSA offsets are computed. OutOfRange if the size overflows.
Result<DsaLayout> DsaBlobLayout(uint64_t len, uint64_t index_head_dim);

// Checks header size, d == geo.index_head_dim, exact total size, len <= capacity.
Result<DsaLayout> CheckDsaBlob(ByteSpan head, uint64_t blob_size, const DsaGeometry& geo);

struct DsaBlobView {
  DsaLayout layout;
  ByteSpan k_normed, gate, valid;
};
Result<DsaBlobView> DecodeDsaBlob(ByteSpan blob, const DsaGeometry& geo);

// Builds a blob from `len` rows; each part must have its exact size.
Result<std::vector<uint8_t>> EncodeDsaBlob(uint64_t len, uint32_t index_head_dim, ByteSpan k_normed,
                                           ByteSpan gate, ByteSpan valid);

// ---- Any kind --------------------------------------------------------------

// Validates a blob of `kind` against the namespace geometry, from its head
// and total size (opaque blobs are always valid). InvalidArgument for a kind
// the namespace has no geometry for, or an unknown kind.
Status CheckBlob(Kind kind, ByteSpan head, uint64_t blob_size, const NamespaceSpec& spec);

// CheckBlob, and for an opaque layer the namespace declares (its
// opaque_layers), that the blob is exactly the declared size.
Status CheckLayerBlob(uint32_t layer, Kind kind, ByteSpan head, uint64_t blob_size,
                      const NamespaceSpec& spec);

// Bytes of a blob's head CheckBlob needs to see (its header size).
size_t BlobHeadBytes(Kind kind);

}  // namespace auxstore
