// Bounds-checked little-endian reads over untrusted bytes: each read fails
// (reading nothing) past the end. Shared by the manifest and run-record
// decoders.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "auxstore/blob_codecs.h"
#include "format/byte_order.h"

namespace auxstore::internal {

class ByteReader {
 public:
  explicit ByteReader(ByteSpan in) : in_(in) {}
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

}  // namespace auxstore::internal
