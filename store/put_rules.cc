#include "store/put_rules.h"

#include <algorithm>
#include <string>

#include "auxstore/blob_codecs.h"

namespace auxstore {

Result<uint32_t> ChainPageTokens(const NamespaceSpec& spec, uint32_t block_size) {
  const uint32_t page_tokens = spec.page_tokens ? spec.page_tokens : block_size;
  if (page_tokens % block_size != 0) {
    return Status::InvalidArgument("the namespace's page of " + std::to_string(page_tokens) +
                                   " tokens is not a whole number of " +
                                   std::to_string(block_size) + "-token blocks");
  }
  return page_tokens;
}

Status CheckPutLayer(const LayerBlob& l, const LayerBlob* previous, const NamespaceSpec& spec) {
  if (previous && l.layer == previous->layer) {
    return Status::InvalidArgument("layer " + std::to_string(l.layer) +
                                   " appears twice in one snapshot");
  }
  if (!IsKnownKind(static_cast<uint8_t>(l.kind))) {
    return Status::InvalidArgument("layer " + std::to_string(l.layer) + " has unknown kind " +
                                   std::to_string(static_cast<unsigned>(l.kind)));
  }
  const ByteSpan head = l.bytes.first(std::min(l.bytes.size(), BlobHeadBytes(l.kind)));
  Status s = CheckLayerBlob(l.layer, l.kind, head, l.bytes.size(), spec);
  if (!s.ok()) return s.WithContext("layer " + std::to_string(l.layer));
  return Status::Ok();
}

uint32_t ChainFullPages(uint64_t rows, uint64_t chain_tokens, uint32_t page_tokens) {
  return static_cast<uint32_t>(
      std::min<uint64_t>(std::min(rows, chain_tokens) / page_tokens, UINT32_MAX));
}

}  // namespace auxstore
