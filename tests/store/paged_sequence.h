// One long sequence (a conversation) for paged-storage tests: the QSA and
// DSA blobs of its first n tokens, and its block chain.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "auxstore/blob_codecs.h"
#include "auxstore/prefix.h"
#include "tests/support/test_util.h"

namespace auxstore::testing {

constexpr uint32_t kBlock = 16;

// One long sequence (a conversation): the QSA and DSA rows of its first n
// tokens are the same in every snapshot of n or more tokens.
class Sequence {
 public:
  Sequence(const NamespaceSpec& spec, uint64_t seed, uint64_t max_tokens)
      : spec_(spec),
        keys_(RandomBytes(max_tokens * spec.qsa.hd * 2, seed)),
        k_(RandomBytes(max_tokens * spec.dsa.index_head_dim * 2, seed + 1)),
        g_(RandomBytes(max_tokens * spec.dsa.index_head_dim * 2, seed + 2)),
        v_(RandomBytes(max_tokens, seed + 3)) {
    for (uint64_t t = 0; t < max_tokens; ++t) tokens_.push_back(static_cast<uint32_t>(seed + t));
  }

  // A branch of this conversation: the same tokens and rows for its first
  // `fork` tokens, its own (from `seed`) after them.
  Sequence Fork(uint64_t fork, uint64_t seed) const {
    Sequence b(spec_, seed, tokens_.size());
    auto keep = [](const std::vector<uint8_t>& from, std::vector<uint8_t>* to, uint64_t bytes) {
      std::copy(from.begin(), from.begin() + bytes, to->begin());
    };
    keep(keys_, &b.keys_, fork * spec_.qsa.hd * 2);
    keep(k_, &b.k_, fork * spec_.dsa.index_head_dim * 2);
    keep(g_, &b.g_, fork * spec_.dsa.index_head_dim * 2);
    keep(v_, &b.v_, fork);
    std::copy(tokens_.begin(), tokens_.begin() + fork, b.tokens_.begin());
    return b;
  }

  std::vector<uint8_t> Qsa(uint64_t n) const {
    return EncodeQsaBlob(n, n / spec_.qsa.ratio, ByteSpan(keys_).first(n * spec_.qsa.hd * 2),
                         spec_.qsa.hd)
        .value();
  }
  std::vector<uint8_t> Dsa(uint64_t n) const {
    const uint64_t row = uint64_t{spec_.dsa.index_head_dim} * 2;
    return EncodeDsaBlob(n, spec_.dsa.index_head_dim, ByteSpan(k_).first(n * row),
                         ByteSpan(g_).first(n * row), ByteSpan(v_).first(n))
        .value();
  }
  std::vector<Prefix> Chain(uint64_t n) const {
    return PrefixHashes(std::span(tokens_).first(n), kBlock, 0);
  }
  // The snapshot of its first n tokens: layer 0 QSA, layer 1 DSA.
  std::vector<std::vector<uint8_t>> Blobs(uint64_t n) const { return {Qsa(n), Dsa(n)}; }
  // Bytes a snapshot of n tokens holds in rows (no headers).
  uint64_t RowBytes(uint64_t n) const {
    return n * (spec_.qsa.hd * 2 + spec_.dsa.index_head_dim * 4 + 1);
  }

 private:
  NamespaceSpec spec_;
  std::vector<uint8_t> keys_, k_, g_, v_;
  std::vector<uint32_t> tokens_;
};

}  // namespace auxstore::testing
