// libFuzzer target: DecodeManifest over untrusted payloads. An accepted
// manifest must re-encode to exactly the input bytes, have ascending layers,
// and plan pieces that cover each layer's bytes after its header exactly
// (in blob order, none empty).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "format/layer_layout.h"
#include "format/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = auxstore::DecodeManifest(auxstore::ByteSpan(data, size));
  if (!m.ok()) {
    if (m.error().message().empty()) std::abort();
    return 0;
  }
  const std::string again = auxstore::EncodeManifest(*m);
  if (again.size() != size || again.compare(0, size, reinterpret_cast<const char*>(data), size)) {
    std::abort();
  }
  for (size_t i = 0; i < m->layers.size(); ++i) {
    const auto& l = m->layers[i];
    if (i > 0 && l.layer <= m->layers[i - 1].layer) std::abort();
    // Bounded: a plan is one piece per chunk, and a manifest may claim huge
    // layers in a few bytes.
    uint64_t pieces = 0;
    for (size_t a = 0; a < l.row_bytes.size(); ++a) {
      pieces += l.runs.size() + 1;
      pieces += auxstore::OwnStreamBytes(*m, l, a) / m->chunk_bytes;
      for (const auto& r : l.runs) {
        pieces += uint64_t{r.pages} * m->page_tokens * l.row_bytes[a] / r.owner_chunk_bytes;
      }
    }
    if (pieces > (1u << 16)) continue;
    uint64_t at = l.header.size();
    for (const auto& p : auxstore::PlanPieces(*m, l)) {
      if (p.blob_offset != at || p.bytes == 0) std::abort();
      at += p.bytes;
    }
    if (at != l.bytes) std::abort();
  }
  return 0;
}
