// libFuzzer target: DecodeManifest over untrusted payloads. An accepted
// manifest must re-encode to exactly the input bytes and have consistent
// chunk counts and ascending layers.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

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
    if (l.chunks != auxstore::ChunkCount(l.bytes, m->chunk_bytes)) std::abort();
  }
  return 0;
}
