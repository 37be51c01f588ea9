#include "format/envelope.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "format/byte_order.h"
#include "format/xxh3.h"

namespace auxstore {

using internal::GetLE16;
using internal::GetLE64;
using internal::PutLE16;
using internal::PutLE64;

namespace {

constexpr uint8_t kMagic[4] = {'A', 'U', 'X', 'R'};
constexpr size_t kChecksumOffset = 16;
// Hash-while-copying granularity: small enough to stay in L2 between the two passes.
constexpr size_t kFusedPiece = 256 * 1024;

uint64_t KeySeed(ByteSpan key) { return XXH3_64bits(key.data(), key.size()); }

class Hasher {
 public:
  explicit Hasher(ByteSpan key) {
    state_ = XXH3_createState();
    XXH3_64bits_reset_withSeed(state_, KeySeed(key));
  }
  ~Hasher() { XXH3_freeState(state_); }
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  void Update(const uint8_t* p, size_t n) { XXH3_64bits_update(state_, p, n); }
  uint64_t Digest() const { return XXH3_64bits_digest(state_); }

 private:
  XXH3_state_t* state_;
};

// Checks everything but the checksum; returns the payload span.
Result<EnvelopeView> ParseHeader(ByteSpan value) {
  if (value.size() < kEnvelopeHeaderBytes) {
    return Status::Corruption("record truncated: " + std::to_string(value.size()) +
                              " bytes, an envelope header needs 24");
  }
  const uint8_t* h = value.data();
  if (std::memcmp(h, kMagic, 4) != 0) return Status::Corruption("record has a bad magic number");
  if (h[4] != kEnvelopeVersion) {
    return Status::Corruption("record has unknown envelope version " + std::to_string(h[4]) +
                              " (this build reads version 1)");
  }
  if (!IsKnownRecordKind(h[5])) {
    return Status::Corruption("record has unknown kind " + std::to_string(h[5]));
  }
  EnvelopeView v;
  v.kind = static_cast<RecordKind>(h[5]);
  v.flags = GetLE16(h + 6);
  if (v.flags != 0) {
    char flags[8];
    std::snprintf(flags, sizeof flags, "%04x", static_cast<unsigned>(v.flags));
    return Status::Corruption(std::string("record has unknown flags 0x") + flags);
  }
  const uint64_t len = GetLE64(h + 8);
  const uint64_t have = value.size() - kEnvelopeHeaderBytes;
  if (len != have) {
    return Status::Corruption("record length mismatch: header says " + std::to_string(len) +
                              " payload bytes, value holds " + std::to_string(have) +
                              (have < len ? " (truncated)" : " (trailing bytes)"));
  }
  v.payload = value.subspan(kEnvelopeHeaderBytes);
  return v;
}

Status ChecksumMismatch(uint64_t stored, uint64_t actual) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "record checksum mismatch: stored %016llx, computed %016llx",
                static_cast<unsigned long long>(stored), static_cast<unsigned long long>(actual));
  return Status::Corruption(buf);
}

}  // namespace

void EncodeEnvelopePrefix(RecordKind kind, uint64_t payload_len,
                          uint8_t out[kEnvelopePrefixBytes]) {
  std::memcpy(out, kMagic, 4);
  out[4] = kEnvelopeVersion;
  out[5] = static_cast<uint8_t>(kind);
  PutLE16(out + 6, 0);
  PutLE64(out + 8, payload_len);
}

bool IsKnownRecordKind(uint8_t raw) {
  return (raw >= 1 && raw <= 3) || (raw >= 0x10 && raw <= 0x14);
}

RecordKind ChunkRecordKind(Kind kind) { return static_cast<RecordKind>(kind); }

void EncodeEnvelopeHeader(ByteSpan key, RecordKind kind, ByteSpan payload,
                          uint8_t out[kEnvelopeHeaderBytes]) {
  EncodeEnvelopePrefix(kind, payload.size(), out);
  Hasher h(key);
  h.Update(out, kChecksumOffset);
  h.Update(payload.data(), payload.size());
  PutLE64(out + kChecksumOffset, h.Digest());
}

std::string EncodeEnvelope(ByteSpan key, RecordKind kind, ByteSpan payload) {
  std::string out(kEnvelopeHeaderBytes + payload.size(), '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  EncodeEnvelopeHeader(key, kind, payload, p);
  if (!payload.empty()) std::memcpy(p + kEnvelopeHeaderBytes, payload.data(), payload.size());
  return out;
}

Result<EnvelopeView> DecodeEnvelope(ByteSpan key, ByteSpan value, BlobHasher* blob_hash) {
  AUXSTORE_ASSIGN_OR_RETURN(EnvelopeView v, ParseHeader(value));
  Hasher h(key);
  h.Update(value.data(), kChecksumOffset);
  if (blob_hash == nullptr) {
    h.Update(v.payload.data(), v.payload.size());
  } else {
    for (size_t off = 0; off < v.payload.size(); off += kFusedPiece) {
      const size_t n = std::min(kFusedPiece, v.payload.size() - off);
      h.Update(v.payload.data() + off, n);
      blob_hash->Update(v.payload.subspan(off, n));
    }
  }
  const uint64_t stored = GetLE64(value.data() + kChecksumOffset);
  if (h.Digest() != stored) return ChecksumMismatch(stored, h.Digest());
  return v;
}

Result<EnvelopeView> DecodeEnvelopeInto(ByteSpan key, ByteSpan value, std::span<uint8_t> dst,
                                        BlobHasher* blob_hash) {
  AUXSTORE_ASSIGN_OR_RETURN(EnvelopeView v, ParseHeader(value));
  if (dst.size() != v.payload.size()) {
    return Status::Corruption("record payload is " + std::to_string(v.payload.size()) +
                              " bytes where " + std::to_string(dst.size()) + " were expected");
  }
  Hasher h(key);
  h.Update(value.data(), kChecksumOffset);
  for (size_t off = 0; off < v.payload.size(); off += kFusedPiece) {
    const size_t n = std::min(kFusedPiece, v.payload.size() - off);
    h.Update(v.payload.data() + off, n);
    if (blob_hash) blob_hash->Update(v.payload.subspan(off, n));
    std::memcpy(dst.data() + off, v.payload.data() + off, n);
  }
  const uint64_t stored = GetLE64(value.data() + kChecksumOffset);
  if (h.Digest() != stored) return ChecksumMismatch(stored, h.Digest());
  return v;
}

namespace {

// DecodeEnvelope, feeding payload[offset, offset + len) to `blob_hash` and
// copying it to `dst` (when not null) in the same pass.
Result<EnvelopeView> DecodeRange(ByteSpan key, ByteSpan value, uint64_t offset, uint64_t len,
                                 uint8_t* dst, LayerHasher* blob_hash) {
  AUXSTORE_ASSIGN_OR_RETURN(EnvelopeView v, ParseHeader(value));
  if (offset > v.payload.size() || len > v.payload.size() - offset) {
    return Status::Corruption("record payload is " + std::to_string(v.payload.size()) +
                              " bytes, too short for bytes [" + std::to_string(offset) + ", " +
                              std::to_string(offset + len) + ")");
  }
  const uint64_t lo = offset, hi = offset + len;
  Hasher h(key);
  h.Update(value.data(), kChecksumOffset);
  for (size_t off = 0; off < v.payload.size(); off += kFusedPiece) {
    const size_t n = std::min(kFusedPiece, v.payload.size() - off);
    h.Update(v.payload.data() + off, n);
    const uint64_t s = std::max<uint64_t>(lo, off), e = std::min<uint64_t>(hi, off + n);
    if (s < e) {
      if (dst) std::memcpy(dst + (s - lo), v.payload.data() + s, e - s);
      if (blob_hash) blob_hash->Update(v.payload.subspan(s, e - s));
    }
  }
  const uint64_t stored = GetLE64(value.data() + kChecksumOffset);
  if (h.Digest() != stored) return ChecksumMismatch(stored, h.Digest());
  return v;
}

}  // namespace

Result<EnvelopeView> CopyEnvelopeRange(ByteSpan value, uint64_t offset, std::span<uint8_t> dst,
                                       LayerHasher* blob_hash) {
  AUXSTORE_ASSIGN_OR_RETURN(EnvelopeView v, ParseHeader(value));
  if (offset > v.payload.size() || dst.size() > v.payload.size() - offset) {
    return Status::Corruption("record payload is " + std::to_string(v.payload.size()) +
                              " bytes, too short for bytes [" + std::to_string(offset) + ", " +
                              std::to_string(offset + dst.size()) + ")");
  }
  for (size_t done = 0; done < dst.size(); done += kFusedPiece) {
    const ByteSpan piece =
        v.payload.subspan(offset + done, std::min(kFusedPiece, dst.size() - done));
    std::memcpy(dst.data() + done, piece.data(), piece.size());
    if (blob_hash) blob_hash->Update(piece);
  }
  return v;
}

Result<EnvelopeView> DecodeEnvelopeRange(ByteSpan key, ByteSpan value, uint64_t offset,
                                         std::span<uint8_t> dst, LayerHasher* blob_hash) {
  return DecodeRange(key, value, offset, dst.size(), dst.data(), blob_hash);
}

Result<EnvelopeView> DecodeEnvelopeRange(ByteSpan key, ByteSpan value, uint64_t offset,
                                         uint64_t len, LayerHasher* blob_hash) {
  return DecodeRange(key, value, offset, len, nullptr, blob_hash);
}

}  // namespace auxstore
