// Conversions between the C ABI's plain types and the C++ library's.
#pragma once

#include <cstring>

#include "auxstore/c.h"
#include "auxstore/geometry.h"
#include "auxstore/prefix.h"

namespace auxstore::capi {

inline Prefix ToPrefix(const uint8_t bytes[16]) {
  Prefix p;
  std::memcpy(p.bytes.data(), bytes, 16);
  return p;
}

inline QsaGeometry ToQsa(const auxstore_geometry_t& g) {
  return {g.qsa_hd, g.qsa_max_tokens, g.qsa_ratio, g.qsa_rot, g.qsa_theta, g.qsa_eps};
}

inline DsaGeometry ToDsa(const auxstore_geometry_t& g) {
  return {g.dsa_index_head_dim, g.dsa_capacity};
}

}  // namespace auxstore::capi
