// Deterministic snapshots for the trust tests: a profile name and a seed name
// every byte, so a child process can write or check a snapshot from two
// words on its command line. "battery" is tests/reliability's MakeSnapshot;
// the others are sized for what a test needs (small files, shared blocks, a
// given ingest threshold). The prefix depends on the seed only, so two
// profiles with one seed give the same prefix with different contents.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "tests/reliability/snapshot_spec.h"

namespace auxstore::trust {

using reliability::BatterySpec;
using reliability::SnapshotLayer;
using reliability::SnapshotSpec;

inline SnapshotLayer OpaqueLayer(uint32_t layer, size_t bytes, uint64_t bseed) {
  return {layer, Kind::kOpaque, testing::RandomBytes(bytes, bseed)};
}
inline SnapshotLayer QsaLayer(uint32_t layer, uint64_t ingested, uint64_t bseed) {
  const NamespaceSpec ns = BatterySpec();
  return {layer, Kind::kQsa, testing::QsaBlob(ns, ingested, ingested / ns.qsa.ratio, bseed)};
}
inline SnapshotLayer DsaLayer(uint32_t layer, uint64_t len, uint64_t bseed) {
  return {layer, Kind::kDsa, testing::DsaBlob(BatterySpec(), len, bseed)};
}

// nullopt for an unknown profile name.
inline std::optional<SnapshotSpec> MakeProfile(const std::string& profile, uint64_t seed) {
  if (profile == "battery") return reliability::MakeSnapshot(seed);
  // The damaged-pages store: seeds 1-3 SST-ingested (32 KiB threshold), the
  // rest small, through the WAL.
  if (profile == "pages") return MakeProfile(seed <= 3 ? "ingest" : "small", seed);
  uint64_t salt = 0;
  for (char c : profile) salt = salt * 131 + static_cast<uint8_t>(c);
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull ^ salt);
  SnapshotSpec s;
  s.seed = seed;
  s.prefix = testing::PrefixFromSeed(seed);
  s.token_count = 1 + rng() % 50000;
  const uint64_t b = seed * 1000003 + salt;
  auto mixed = [&](uint32_t layer, uint64_t max_opaque, uint64_t max_rows, uint64_t i) {
    switch (rng() % 3) {
      case 0:
        return QsaLayer(layer, rng() % (max_rows + 1), b + i);
      case 1:
        return DsaLayer(layer, rng() % (max_rows + 1), b + i);
      default:
        return OpaqueLayer(layer, rng() % (max_opaque + 1), b + i);
    }
  };
  if (profile == "tiny") {
    // Many of these share one 4 KiB SST block (tests/trust repair test).
    const uint32_t n = 1 + rng() % 3;
    uint32_t layer = rng() % 2;
    for (uint32_t i = 0; i < n; ++i, layer += 1 + rng() % 2) {
      s.layers.push_back(mixed(layer, 600, 3, i));
    }
  } else if (profile == "small") {
    // Well under any ingest threshold used here: the WAL path.
    const uint32_t n = 1 + rng() % 4;
    uint32_t layer = rng() % 3;
    for (uint32_t i = 0; i < n; ++i, layer += 1 + rng() % 3) {
      s.layers.push_back(mixed(layer, 8 << 10, 40, i));
    }
  } else if (profile == "wal") {
    // Up to a few hundred KiB, under the default 1 MiB ingest threshold: the
    // WAL path, big enough to fill a small disk in tens of puts.
    const uint32_t n = 2 + rng() % 4;
    uint32_t layer = rng() % 3;
    for (uint32_t i = 0; i < n; ++i, layer += 1 + rng() % 3) {
      s.layers.push_back(mixed(layer, 96 << 10, 300, i));
    }
  } else if (profile == "ingest") {
    // Over a 32 KiB ingest threshold; QSA and DSA layers for a restore.
    s.layers.push_back(OpaqueLayer(0, (28 << 10) + rng() % (8 << 10), b));
    s.layers.push_back(QsaLayer(1, 20 + rng() % 40, b + 1));
    s.layers.push_back(DsaLayer(2, 20 + rng() % 40, b + 2));
  } else if (profile == "ingest20k") {
    // Over a 16 KiB ingest threshold: one SST per snapshot.
    s.layers.push_back(OpaqueLayer(0, (20 << 10) + rng() % (8 << 10), b));
  } else if (profile == "bigA") {
    // Over the default 1 MiB threshold: SST ingest + manifest commit.
    s.layers.push_back(OpaqueLayer(0, (1200 << 10) + rng() % (64 << 10), b));
    s.layers.push_back(QsaLayer(2, 300, b + 1));
    s.layers.push_back(DsaLayer(4, 300, b + 2));
  } else if (profile == "bigB") {
    // The same prefix as bigA (same seed), other layers and sizes; ingested.
    s.layers.push_back(OpaqueLayer(1, (1100 << 10) + rng() % (64 << 10), b));
    s.layers.push_back(OpaqueLayer(3, 5000, b + 1));
  } else if (profile == "smallB") {
    // The same prefix, other layers, through the WAL.
    s.layers.push_back(QsaLayer(1, 100, b));
    s.layers.push_back(OpaqueLayer(6, 3000, b + 1));
  } else {
    return std::nullopt;
  }
  return s;
}

}  // namespace auxstore::trust
