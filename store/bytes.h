// Byte views over the string and Slice types RocksDB hands back, for the
// format decoders (which take ByteSpan).
#pragma once

#include <rocksdb/slice.h>

#include <string>
#include <string_view>

#include "auxstore/blob_codecs.h"

namespace auxstore::store_internal {

inline ByteSpan Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
inline ByteSpan Bytes(const std::string& s) { return Bytes(std::string_view(s)); }
inline ByteSpan Bytes(const rocksdb::Slice& s) { return Bytes(s.ToStringView()); }

}  // namespace auxstore::store_internal
