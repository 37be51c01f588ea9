// The one definition of a good chunk record, shared by the layer reader
// (store/layer_reader.cc) and the Verifier's per-put record scan
// (db_store_verify.cc): its envelope decodes under its own key (magic,
// version, flags, length, checksum seeded by the key), it holds the record
// kind of the layer's kind, and its payload holds the bytes wanted.
#pragma once

#include <cstdint>
#include <span>

#include "auxstore/blob_codecs.h"
#include "auxstore/manifest_types.h"
#include "auxstore/status.h"

namespace auxstore::store_internal {

// The bytes wanted from one chunk record: payload[offset, offset + bytes).
// `whole`: the payload must be exactly `bytes` long (offset 0), as a put's
// own scan knows it; a layer piece may be a part of its chunk.
struct ChunkWant {
  Kind layer_kind = Kind::kOpaque;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  bool whole = false;
  // Skip the record's own checksum (CopyEnvelopeRange): only with a
  // `copy_to` and a `layer_hash` whose digest the caller checks, decoding
  // the records again with their checksums when it differs.
  bool layer_digest_only = false;
};

// Checks the record `value` stored under `key` against `want`. The whole
// payload is checksummed; the wanted bytes are fed to `layer_hash` (may be
// null) and, when `copy_to` is not empty (exactly want.bytes), copied there,
// in the same pass over the bytes. Returns the wanted bytes (a view into
// `value`), or Corruption saying what is wrong (the caller adds where).
// On an error `copy_to` and `layer_hash` may hold partial state.
Result<ByteSpan> CheckChunkRecord(ByteSpan key, ByteSpan value, const ChunkWant& want,
                                  LayerHasher* layer_hash = nullptr,
                                  std::span<uint8_t> copy_to = {});

}  // namespace auxstore::store_internal
