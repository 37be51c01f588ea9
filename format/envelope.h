// The record envelope: how the store wraps every value it writes.
//
//   offset size field
//   0      4    magic "AUXR" (0x41 0x55 0x58 0x52)
//   4      1    format version (1)
//   5      1    record kind (RecordKind)
//   6      2    flags (LE; none defined, must be 0 in version 1)
//   8      8    payload length (LE)
//   16     8    checksum (LE): XXH3-64 over bytes [0,16) ‖ payload,
//               seeded with XXH3-64(record key) so a value copied under
//               another key fails verification
//   24     -    payload
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "auxstore/blob_codecs.h"
#include "auxstore/blob_hash.h"
#include "auxstore/manifest_types.h"
#include "auxstore/status.h"

namespace auxstore {

inline constexpr size_t kEnvelopeHeaderBytes = 24;
inline constexpr uint8_t kEnvelopeVersion = 1;

// What a record holds. Layer chunks reuse the blob Kind numbers; the store's
// own records use 0x10 and up. Persisted: never renumber.
enum class RecordKind : uint8_t {
  kQsaChunk = 1,
  kDsaChunk = 2,
  kOpaqueChunk = 3,
  kManifest = 0x10,
  kNamespace = 0x11,
  kStoreMeta = 0x12,
  kRun = 0x13,      // a put's run record (format/run_record.h)
  kPageRef = 0x14,  // which put stored a page
};
bool IsKnownRecordKind(uint8_t raw);
RecordKind ChunkRecordKind(Kind kind);

struct EnvelopeView {
  RecordKind kind{};
  uint16_t flags = 0;
  ByteSpan payload;  // points into the decoded value
};

// Writes header + payload for `key` into a fresh string.
std::string EncodeEnvelope(ByteSpan key, RecordKind kind, ByteSpan payload);

// Writes only the 24-byte header for a payload the caller places right after
// it (lets the store build a value in one buffer without a second copy).
void EncodeEnvelopeHeader(ByteSpan key, RecordKind kind, ByteSpan payload,
                          uint8_t out[kEnvelopeHeaderBytes]);

// The header's first 16 bytes (everything but the checksum) of a record of
// `kind` holding `payload_len` bytes: what a reader that checks the payload
// by other means compares a stored header with.
inline constexpr size_t kEnvelopePrefixBytes = 16;
void EncodeEnvelopePrefix(RecordKind kind, uint64_t payload_len, uint8_t out[kEnvelopePrefixBytes]);

// Decodes and verifies. Errors (all Corruption, each with its own message):
// value shorter than a header, bad magic, unknown version, unknown kind,
// nonzero flags, length mismatch (truncated or trailing bytes), checksum
// mismatch.
// When `blob_hash` is given, the payload is also fed to it, piece by piece
// with the checksum pass (see DecodeEnvelopeInto).
Result<EnvelopeView> DecodeEnvelope(ByteSpan key, ByteSpan value, BlobHasher* blob_hash = nullptr);

// DecodeEnvelope that also copies the payload into `dst` (exactly its size),
// hashing and copying in cache-sized pieces so verification rides on the
// copy. When `blob_hash` is given, the payload is also fed to it on the same
// pieces (a layer's whole-blob hash at the cost of a cache hit). On error
// `dst` and `blob_hash` may hold partial state and must not be used.
Result<EnvelopeView> DecodeEnvelopeInto(ByteSpan key, ByteSpan value, std::span<uint8_t> dst,
                                        BlobHasher* blob_hash = nullptr);

// DecodeEnvelope that verifies the whole payload but copies only
// payload[offset, offset + dst.size()) into `dst`, feeding that range (and
// only it) to the layer's hasher, in the same pass. Corruption when the range is
// not inside the payload.
Result<EnvelopeView> DecodeEnvelopeRange(ByteSpan key, ByteSpan value, uint64_t offset,
                                         std::span<uint8_t> dst, LayerHasher* blob_hash = nullptr);
// The same without the copy: verifies the payload, feeds [offset, offset +
// len) to `blob_hash`.
Result<EnvelopeView> DecodeEnvelopeRange(ByteSpan key, ByteSpan value, uint64_t offset,
                                         uint64_t len, LayerHasher* blob_hash);

// DecodeEnvelopeRange without the record's own checksum: every header check
// (magic, version, kind, flags, length, the range inside the payload), then
// the range copied into `dst` and fed to `blob_hash` in one pass. Only for
// a reader whose layer digest covers every byte it copies, and which, when
// that digest differs, decodes the records again with their checksums to
// name the damaged one (the layer reader's copy into caller memory).
Result<EnvelopeView> CopyEnvelopeRange(ByteSpan value, uint64_t offset, std::span<uint8_t> dst,
                                       LayerHasher* blob_hash);

}  // namespace auxstore
