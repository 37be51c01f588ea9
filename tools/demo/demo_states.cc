#include "tools/demo/demo_states.h"

#include <bit>
#include <cstring>
#include <random>

#include "auxstore/blob_codecs.h"

namespace auxstore::demo {

NamespaceSpec DemoSpec() {
  NamespaceSpec s;
  s.model_id = "demo-glm5next-qsa";
  s.qsa = {/*hd=*/128,   /*max_tokens=*/8192, /*ratio=*/8, /*rot=*/64, /*theta=*/10000.0f,
           /*eps=*/1e-6f};
  s.dsa = {/*index_head_dim=*/128, /*capacity=*/8192};
  return s;
}

std::vector<uint32_t> SequenceTokens(uint32_t seq, uint32_t n) {
  std::vector<uint32_t> t(n);
  std::mt19937 rng(seq);
  for (auto& x : t) x = rng() % 150000;
  return t;
}

std::vector<uint16_t> Bf16Values(size_t n, uint64_t seed) {
  std::vector<uint16_t> v(n);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto& x : v) x = static_cast<uint16_t>(std::bit_cast<uint32_t>(dist(rng)) >> 16);
  return v;
}

std::vector<uint16_t> KPoolK(const NamespaceSpec& s, uint32_t layer) {
  return Bf16Values(s.qsa.hd, 0xC0FFEE00ull + layer);
}
std::vector<uint16_t> KNormW(const NamespaceSpec& s, uint32_t layer) {
  return Bf16Values(s.qsa.hd, 0xBEEF0000ull + layer);
}

bool IsQsaLayer(uint32_t layer) { return layer % 2 == 0; }

std::vector<uint8_t> LayerBlobBytes(const NamespaceSpec& s, uint32_t seq, uint32_t layer,
                                    uint64_t tokens) {
  // Append-only, as an engine's are: the rows of a sequence's first n tokens
  // are the same in every longer snapshot of it (so its snapshots share pages).
  const uint64_t seed = (uint64_t{seq} << 40) ^ (uint64_t{layer} << 20);
  auto bytes_of = [](const std::vector<uint16_t>& v) {
    std::vector<uint8_t> b(v.size() * 2);
    std::memcpy(b.data(), v.data(), b.size());  // little-endian host, as the format
    return b;
  };
  if (IsQsaLayer(layer)) {
    auto keys = bytes_of(Bf16Values(tokens * s.qsa.hd, seed));
    return EncodeQsaBlob(tokens, tokens / s.qsa.ratio, keys, s.qsa.hd).value();
  }
  const size_t rows = tokens * s.dsa.index_head_dim;
  auto k = bytes_of(Bf16Values(rows, seed)), g = bytes_of(Bf16Values(rows, seed + 1));
  std::vector<uint8_t> valid(tokens);
  for (uint64_t i = 0; i < tokens; ++i) valid[i] = static_cast<uint8_t>((i * 7 + seq) % 3 != 0);
  return EncodeDsaBlob(tokens, s.dsa.index_head_dim, k, g, valid).value();
}

}  // namespace auxstore::demo
