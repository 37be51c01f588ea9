#include "format/manifest.h"

#include <algorithm>
#include <cstdio>

#include "format/byte_order.h"

namespace auxstore {

using internal::AppendLE32;
using internal::AppendLE64;
using internal::GetLE32;
using internal::GetLE64;

namespace {

// Bounds-checked little-endian reader over untrusted bytes.
class Reader {
 public:
  explicit Reader(ByteSpan in) : in_(in) {}
  bool U8(uint8_t* v) { return Take(1) && (*v = in_[pos_ - 1], true); }
  bool U32(uint32_t* v) { return Take(4) && (*v = GetLE32(in_.data() + pos_ - 4), true); }
  bool U64(uint64_t* v) { return Take(8) && (*v = GetLE64(in_.data() + pos_ - 8), true); }
  bool Bytes(uint8_t* out, size_t n) {
    if (!Take(n)) return false;
    std::copy(in_.begin() + (pos_ - n), in_.begin() + pos_, out);
    return true;
  }
  size_t remaining() const { return in_.size() - pos_; }

 private:
  bool Take(size_t n) {
    if (in_.size() - pos_ < n) return false;
    pos_ += n;
    return true;
  }
  ByteSpan in_;
  size_t pos_ = 0;
};

Status Truncated() { return Status::Corruption("manifest truncated"); }

}  // namespace

namespace {

// The exact chunk count, in 64 bits: `bytes + chunk_bytes - 1` would wrap for
// `bytes` near 2^64, and a u32 result would truncate for huge blobs.
uint64_t ChunkCount64(uint64_t bytes, uint32_t chunk_bytes) {
  if (bytes == 0 || chunk_bytes == 0) return 1;
  return (bytes - 1) / chunk_bytes + 1;
}

}  // namespace

uint32_t ChunkCount(uint64_t bytes, uint32_t chunk_bytes) {
  const uint64_t n = ChunkCount64(bytes, chunk_bytes);
  return n > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(n);
}

std::string EncodeManifest(const Manifest& m) {
  std::string s;
  AppendLE32(&s, kManifestVersion);
  AppendLE64(&s, m.token_count);
  AppendLE64(&s, static_cast<uint64_t>(m.created_unix_ms));
  AppendLE32(&s, m.chunk_bytes);
  s.push_back(m.token_digest ? 1 : 0);
  if (m.token_digest) s.append(m.token_digest->bytes.begin(), m.token_digest->bytes.end());
  AppendLE32(&s, static_cast<uint32_t>(m.layers.size()));
  for (const LayerEntry& l : m.layers) {
    AppendLE32(&s, l.layer);
    s.push_back(static_cast<char>(l.kind));
    AppendLE64(&s, l.bytes);
    AppendLE32(&s, l.chunks);
    AppendLE64(&s, l.xxh3);
  }
  return s;
}

Result<Manifest> DecodeManifest(ByteSpan payload) {
  Reader r(payload);
  Manifest m;
  uint32_t version = 0, n_layers = 0;
  uint64_t created = 0;
  uint8_t has_digest = 0;
  if (!r.U32(&version)) return Truncated();
  if (version != kManifestVersion) {
    return Status::Corruption("manifest has unknown version " + std::to_string(version));
  }
  if (!r.U64(&m.token_count) || !r.U64(&created) || !r.U32(&m.chunk_bytes) || !r.U8(&has_digest))
    return Truncated();
  m.created_unix_ms = static_cast<int64_t>(created);
  if (m.chunk_bytes == 0) return Status::Corruption("manifest has a chunk size of 0");
  if (has_digest > 1) return Status::Corruption("manifest has a bad token-digest flag");
  if (has_digest) {
    TokenDigest d;
    if (!r.Bytes(d.bytes.data(), d.bytes.size())) return Truncated();
    m.token_digest = d;
  }
  if (!r.U32(&n_layers)) return Truncated();
  constexpr size_t kLayerBytes = 4 + 1 + 8 + 4 + 8;
  if (r.remaining() != size_t{n_layers} * kLayerBytes) {
    return r.remaining() < size_t{n_layers} * kLayerBytes
               ? Truncated()
               : Status::Corruption("manifest has trailing bytes");
  }
  m.layers.resize(n_layers);
  for (uint32_t i = 0; i < n_layers; ++i) {
    LayerEntry& l = m.layers[i];
    uint8_t kind = 0;
    (void)(r.U32(&l.layer) && r.U8(&kind) && r.U64(&l.bytes) && r.U32(&l.chunks) && r.U64(&l.xxh3));
    if (!IsKnownKind(kind)) {
      return Status::Corruption("manifest layer " + std::to_string(l.layer) + " has unknown kind " +
                                std::to_string(kind));
    }
    l.kind = static_cast<Kind>(kind);
    if (i > 0 && l.layer <= m.layers[i - 1].layer) {
      return Status::Corruption("manifest layers out of order at layer " + std::to_string(l.layer));
    }
    if (l.chunks != ChunkCount64(l.bytes, m.chunk_bytes)) {
      return Status::Corruption("manifest layer " + std::to_string(l.layer) + " claims " +
                                std::to_string(l.chunks) + " chunks for " +
                                std::to_string(l.bytes) + " bytes");
    }
  }
  return m;
}

Status CheckLayerDigest(const LayerEntry& entry, uint64_t digest) {
  if (digest == entry.xxh3) return Status::Ok();
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "layer %u: whole-blob XXH3 %016llx does not match the manifest's %016llx",
                static_cast<unsigned>(entry.layer), static_cast<unsigned long long>(digest),
                static_cast<unsigned long long>(entry.xxh3));
  return Status::Corruption(buf);
}

}  // namespace auxstore
