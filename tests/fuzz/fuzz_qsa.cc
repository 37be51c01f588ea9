// libFuzzer target: CheckQsaBlob / DecodeQsaBlob over untrusted blobs, under
// a geometry taken from the input's first bytes. The head-only check and the
// whole-blob decode must agree; an accepted blob's raw keys lie inside it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "auxstore/blob_codecs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 6) return 0;
  auxstore::QsaGeometry geo;
  geo.hd = 1 + data[0] % 128;
  geo.max_tokens = static_cast<uint32_t>(data[1] | (data[2] << 8));
  geo.ratio = 1 + data[3] % 64;
  geo.rot = 0;
  geo.theta = 10000.0f;
  geo.eps = 1e-6f;
  // data[4..5]: how much of the blob the head-only check sees.
  const auxstore::ByteSpan blob(data + 6, size - 6);
  const size_t head_len = std::min<size_t>(blob.size(), (data[4] | (data[5] << 8)) % 64);
  auto head = auxstore::CheckQsaBlob(
      blob.first(std::max<size_t>(head_len, std::min<size_t>(16, blob.size()))), blob.size(), geo);
  auto full = auxstore::DecodeQsaBlob(blob, geo);
  if (head.ok() != full.ok()) std::abort();
  if (full.ok()) {
    const auto& v = *full;
    if (v.raw_keys.data() < blob.data() ||
        v.raw_keys.data() + v.raw_keys.size() > blob.data() + blob.size()) {
      std::abort();
    }
    if (v.header.ingested > geo.max_tokens) std::abort();
  }
  return 0;
}
