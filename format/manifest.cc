#include "format/manifest.h"

#include <algorithm>
#include <cstdio>

#include "format/byte_order.h"
#include "format/byte_reader.h"
#include "format/layer_layout.h"

namespace auxstore {

using internal::AppendLE32;
using internal::AppendLE64;
using internal::GetLE32;
using internal::GetLE64;

namespace {

using Reader = internal::ByteReader;

Status Truncated() { return Status::Corruption("manifest truncated"); }

// One run record: 8 + 4 * 4 bytes.
constexpr size_t kRunBytes = 24;

}  // namespace

uint32_t ChunkCount(uint64_t bytes, uint32_t chunk_bytes) {
  if (bytes == 0 || chunk_bytes == 0) return 0;
  const uint64_t n = (bytes - 1) / chunk_bytes + 1;
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
  AppendLE64(&s, m.put_id);
  AppendLE32(&s, m.page_tokens);
  AppendLE32(&s, static_cast<uint32_t>(m.layers.size()));
  for (const LayerEntry& l : m.layers) {
    AppendLE32(&s, l.layer);
    s.push_back(static_cast<char>(l.kind));
    AppendLE64(&s, l.bytes);
    AppendLE64(&s, l.xxh3);
    s.push_back(static_cast<char>(l.header.size()));
    s.append(l.header.begin(), l.header.end());
    AppendLE64(&s, l.rows);
    s.push_back(static_cast<char>(l.row_bytes.size()));
    for (uint32_t rb : l.row_bytes) AppendLE32(&s, rb);
    AppendLE32(&s, static_cast<uint32_t>(l.runs.size()));
    for (const PageRun& r : l.runs) {
      AppendLE64(&s, r.owner);
      AppendLE32(&s, r.owner_first_page);
      AppendLE32(&s, r.owner_chunk_bytes);
      AppendLE32(&s, r.first_page);
      AppendLE32(&s, r.pages);
    }
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
    return Status::Corruption("manifest has unknown version " + std::to_string(version) +
                              " (this build reads version " + std::to_string(kManifestVersion) +
                              ")");
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
  if (!r.U64(&m.put_id) || !r.U32(&m.page_tokens) || !r.U32(&n_layers)) return Truncated();
  // Each layer takes at least 4+1+8+8+1+8+1+4 bytes: bound the count first.
  if (n_layers > r.remaining() / 35) return Truncated();
  m.layers.resize(n_layers);
  for (uint32_t i = 0; i < n_layers; ++i) {
    LayerEntry& l = m.layers[i];
    uint8_t kind = 0, header_len = 0, arrays = 0;
    uint32_t runs = 0;
    if (!r.U32(&l.layer) || !r.U8(&kind) || !r.U64(&l.bytes) || !r.U64(&l.xxh3) ||
        !r.U8(&header_len)) {
      return Truncated();
    }
    if (!IsKnownKind(kind)) {
      return Status::Corruption("manifest layer " + std::to_string(l.layer) + " has unknown kind " +
                                std::to_string(kind));
    }
    l.kind = static_cast<Kind>(kind);
    if (i > 0 && l.layer <= m.layers[i - 1].layer) {
      return Status::Corruption("manifest layers out of order at layer " + std::to_string(l.layer));
    }
    l.header.resize(header_len);
    if (!r.Bytes(l.header.data(), header_len) || !r.U64(&l.rows) || !r.U8(&arrays)) {
      return Truncated();
    }
    if (arrays > 4) return Status::Corruption("manifest layer has more than 4 arrays");
    l.row_bytes.resize(arrays);
    for (uint32_t& rb : l.row_bytes) {
      if (!r.U32(&rb)) return Truncated();
    }
    if (!r.U32(&runs)) return Truncated();
    if (runs > r.remaining() / kRunBytes) return Truncated();
    l.runs.resize(runs);
    for (PageRun& run : l.runs) {
      (void)(r.U64(&run.owner) && r.U32(&run.owner_first_page) && r.U32(&run.owner_chunk_bytes) &&
             r.U32(&run.first_page) && r.U32(&run.pages));
    }
    AUXSTORE_RETURN_IF_ERROR(CheckLayerLayout(m, l));
  }
  if (r.remaining() != 0) return Status::Corruption("manifest has trailing bytes");
  return m;
}

Status CheckLayerDigest(const LayerEntry& entry, uint64_t digest) {
  if (digest == entry.xxh3) return Status::Ok();
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "layer %u: layer digest %016llx does not match the manifest's %016llx",
                static_cast<unsigned>(entry.layer), static_cast<unsigned long long>(digest),
                static_cast<unsigned long long>(entry.xxh3));
  return Status::Corruption(buf);
}

}  // namespace auxstore
