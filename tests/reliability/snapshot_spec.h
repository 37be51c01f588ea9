// Deterministic snapshots for the reliability battery: a seed alone names a
// snapshot's prefix, layers, kinds, sizes and bytes, so a writer process can
// acknowledge a snapshot with one number and the checker can rebuild every
// byte it must read back.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "auxstore/store.h"
#include "tests/support/test_util.h"

namespace auxstore::reliability {

// The namespace every battery store holds (QSA hd 64 / 4096 tokens, DSA d 32).
inline NamespaceSpec BatterySpec() { return testing::TestSpec("reliability-battery"); }

// Records are cut at 64 KiB so most layers span several chunks.
inline constexpr uint32_t kBatteryChunkBytes = 64 * 1024;

struct SnapshotLayer {
  uint32_t layer = 0;
  Kind kind = Kind::kOpaque;
  std::vector<uint8_t> bytes;
};

struct SnapshotSpec {
  uint64_t seed = 0;
  Prefix prefix;
  uint64_t token_count = 0;
  std::vector<SnapshotLayer> layers;  // ascending layer index
  // Chained snapshots (every other seed) put their QSA/DSA rows in pages
  // shared with the other turns of their conversation.
  std::vector<Prefix> chain;
  uint32_t block_size = 0;

  PutOptions put_options() const {
    PutOptions o;
    o.block_chain = chain;
    o.block_size = block_size;
    return o;
  }

  uint64_t payload_bytes() const {
    uint64_t n = 0;
    for (const auto& l : layers) n += l.bytes.size();
    return n;
  }
  std::vector<LayerBlob> blobs() const {
    std::vector<LayerBlob> out;
    for (const auto& l : layers) out.push_back({l.layer, l.kind, l.bytes});
    return out;
  }
};

inline constexpr uint32_t kBatteryBlockTokens = 16;
inline constexpr uint64_t kTurnsPerConversation = 4;

// A chained snapshot: turn seed % 4 of conversation seed / 4. Every turn of
// a conversation has the same layers, whose rows are the first rows of one
// long sequence (the rows of a prefix are the same in every longer
// snapshot), and the chained block hashes of its tokens; so turns share
// every full page of their common rows. Turns of one conversation come from
// consecutive seeds, which the writers put concurrently.
inline SnapshotSpec MakeChainedSnapshot(uint64_t seed) {
  const NamespaceSpec ns = BatterySpec();
  const uint64_t conversation = seed / kTurnsPerConversation;
  const uint64_t turn = seed % kTurnsPerConversation + 1;
  std::mt19937_64 rng(conversation ^ 0x5851f42d4c957f2dull);
  SnapshotSpec s;
  s.seed = seed;
  s.prefix = testing::PrefixFromSeed(seed);
  const uint64_t per_turn = 16 * (1 + rng() % 12);  // 16 .. 192 tokens a turn
  const uint64_t max_tokens = per_turn * kTurnsPerConversation + 15;
  s.token_count = per_turn * turn + (rng() % 2 ? seed % 16 : 0);  // some end mid-page
  const uint32_t n = 1 + static_cast<uint32_t>(rng() % 4);
  for (uint32_t i = 0; i < n; ++i) {
    SnapshotLayer l;
    l.layer = i * 2;
    const uint64_t lseed = conversation * 977 + i;
    const uint64_t rows = s.token_count;
    if (rng() % 2) {
      l.kind = Kind::kQsa;
      auto keys = testing::RandomBytes(max_tokens * ns.qsa.hd * 2, lseed);
      keys.resize(rows * ns.qsa.hd * 2);
      l.bytes = EncodeQsaBlob(rows, rows / ns.qsa.ratio, keys, ns.qsa.hd).value();
    } else {
      l.kind = Kind::kDsa;
      const uint64_t row = uint64_t{ns.dsa.index_head_dim} * 2;
      auto k = testing::RandomBytes(max_tokens * row, lseed);
      auto g = testing::RandomBytes(max_tokens * row, lseed + 1);
      auto v = testing::RandomBytes(max_tokens, lseed + 2);
      k.resize(rows * row);
      g.resize(rows * row);
      v.resize(rows);
      l.bytes = EncodeDsaBlob(rows, ns.dsa.index_head_dim, k, g, v).value();
    }
    s.layers.push_back(std::move(l));
  }
  std::vector<uint32_t> tokens(s.token_count);
  for (uint64_t t = 0; t < s.token_count; ++t)
    tokens[t] = static_cast<uint32_t>(conversation * 7 + t);
  s.block_size = kBatteryBlockTokens;
  s.chain = PrefixHashes(tokens, kBatteryBlockTokens, 0);
  return s;
}

// Odd seeds are chained snapshots (MakeChainedSnapshot). Of the others,
// about one snapshot in four is "big": its first layer alone is over 1 MiB,
// so the whole snapshot takes the SST-ingest path. The rest stay well under
// 1 MiB (at most 8 layers of at most ~100 KiB) and go through the WAL. Small
// layers include empty ones.
inline SnapshotSpec MakeSnapshot(uint64_t seed) {
  if (seed % 2 == 1) return MakeChainedSnapshot(seed);
  const NamespaceSpec ns = BatterySpec();
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  SnapshotSpec s;
  s.seed = seed;
  s.prefix = testing::PrefixFromSeed(seed);
  s.token_count = 1 + rng() % 100000;
  const bool big = rng() % 4 == 0;
  const uint32_t n = big ? 1 + rng() % 3 : 1 + rng() % 8;
  uint32_t layer = static_cast<uint32_t>(rng() % 3);
  for (uint32_t i = 0; i < n; ++i, layer += 1 + static_cast<uint32_t>(rng() % 3)) {
    SnapshotLayer l;
    l.layer = layer;
    const uint64_t bseed = seed * 131 + i;
    if (big && i == 0) {
      l.kind = Kind::kOpaque;
      l.bytes = testing::RandomBytes((1u << 20) + rng() % (512u << 10), bseed);
    } else {
      switch (rng() % 3) {
        case 0: {
          l.kind = Kind::kQsa;
          const uint64_t ingested = rng() % 700;
          l.bytes = testing::QsaBlob(ns, ingested, ingested / ns.qsa.ratio, bseed);
          break;
        }
        case 1:
          l.kind = Kind::kDsa;
          l.bytes = testing::DsaBlob(ns, rng() % 700, bseed);
          break;
        default:
          l.kind = Kind::kOpaque;
          l.bytes = testing::RandomBytes(rng() % 5 == 0 ? 0 : rng() % (100u << 10), bseed);
      }
    }
    s.layers.push_back(std::move(l));
  }
  return s;
}

}  // namespace auxstore::reliability
