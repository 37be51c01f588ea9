// libFuzzer target: CheckDsaBlob / DecodeDsaBlob over untrusted blobs. The
// head-only check and the whole-blob decode must agree; an accepted blob's
// three parts lie inside it and its size is exactly DsaBlobLayout's.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "auxstore/blob_codecs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  auxstore::DsaGeometry geo;
  geo.index_head_dim = 1 + data[0] % 128;
  geo.capacity = static_cast<uint32_t>(data[1] | (data[2] << 8));
  const auxstore::ByteSpan blob(data + 3, size - 3);
  auto head =
      auxstore::CheckDsaBlob(blob.first(std::min<size_t>(16, blob.size())), blob.size(), geo);
  auto full = auxstore::DecodeDsaBlob(blob, geo);
  if (head.ok() != full.ok()) std::abort();
  if (full.ok()) {
    const auto& v = *full;
    if (v.layout.total_bytes != blob.size() || v.layout.len > geo.capacity) std::abort();
    for (auxstore::ByteSpan part : {v.k_normed, v.gate, v.valid}) {
      if (part.data() < blob.data() || part.data() + part.size() > blob.data() + blob.size()) {
        std::abort();
      }
    }
  }
  return 0;
}
