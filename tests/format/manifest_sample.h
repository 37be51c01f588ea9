// The sample manifest the format tests share: every kind of layer (QSA with
// one page shared with an earlier put and one of its own, and a tail; DSA
// with one page and a tail; opaque).
#pragma once

#include <cstdint>
#include <vector>

#include "format/manifest.h"

namespace auxstore::test {

inline constexpr uint32_t kPut = 0xab;    // the sample manifest's own put
inline constexpr uint32_t kOther = 0x11;  // an earlier put whose page it shares

inline std::vector<uint8_t> Header(uint8_t fill) { return std::vector<uint8_t>(16, fill); }

// A sample with every kind of layer: QSA with one shared and one own page
// and a tail; DSA with one own page and a tail; an opaque layer.
inline Manifest Sample(bool with_digest) {
  Manifest m;
  m.token_count = 10;
  m.created_unix_ms = 1'790'000'000'123;
  m.chunk_bytes = 1000;
  if (with_digest) {
    TokenDigest d;
    for (int i = 0; i < 16; ++i) d.bytes[i] = static_cast<uint8_t>(0xa0 + i);
    m.token_digest = d;
  }
  m.put_id = kPut;
  m.page_tokens = 4;
  LayerEntry q{0, Kind::kQsa, 16 + 10 * 8, 0x1111, Header(1), 10, {8}, {}};
  q.runs = {{kOther, 0, 512, 0, 1}, {kPut, 1, 1000, 1, 1}};
  LayerEntry d{3, Kind::kDsa, 16 + 5 * (16 + 4 + 1), 0x2222, Header(2), 5, {16, 4, 1}, {}};
  d.runs = {{kPut, 0, 1000, 0, 1}};
  LayerEntry o{7, Kind::kOpaque, 7, 0x3333, {}, 7, {1}, {}};
  m.layers = {q, d, o};
  return m;
}

}  // namespace auxstore::test
