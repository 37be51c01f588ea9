// BlobHasher: the streaming XXH3-64 a manifest stores for each whole layer blob.
#pragma once

#include <cstdint>
#include <memory>

#include "auxstore/blob_codecs.h"

namespace auxstore {

class BlobHasher {
 public:
  BlobHasher();
  ~BlobHasher();
  BlobHasher(BlobHasher&&) noexcept;
  BlobHasher& operator=(BlobHasher&&) noexcept;

  void Update(ByteSpan bytes);
  uint64_t Digest() const;  // of everything so far; Update may continue

  static uint64_t Hash(ByteSpan bytes);  // one-shot, same value

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Payload bytes of chunk `chunk` of a blob of `blob_bytes` cut at `chunk_bytes`.
uint64_t ChunkSize(uint64_t blob_bytes, uint32_t chunk_bytes, uint32_t chunk);

}  // namespace auxstore
