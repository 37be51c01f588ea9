#include "auxstore/blob_hash.h"

#include <algorithm>

#include "format/xxh3.h"

namespace auxstore {

struct BlobHasher::State {
  XXH3_state_t* s = XXH3_createState();
  State() { XXH3_64bits_reset(s); }
  ~State() { XXH3_freeState(s); }
};

BlobHasher::BlobHasher() : state_(std::make_unique<State>()) {}
BlobHasher::~BlobHasher() = default;
BlobHasher::BlobHasher(BlobHasher&&) noexcept = default;
BlobHasher& BlobHasher::operator=(BlobHasher&&) noexcept = default;

void BlobHasher::Update(ByteSpan bytes) {
  XXH3_64bits_update(state_->s, bytes.data(), bytes.size());
}
uint64_t BlobHasher::Digest() const { return XXH3_64bits_digest(state_->s); }
uint64_t BlobHasher::Hash(ByteSpan bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

uint64_t ChunkSize(uint64_t blob_bytes, uint32_t chunk_bytes, uint32_t chunk) {
  const uint64_t start = uint64_t{chunk} * chunk_bytes;
  if (start >= blob_bytes) return 0;
  return std::min<uint64_t>(chunk_bytes, blob_bytes - start);
}

}  // namespace auxstore
