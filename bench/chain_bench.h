// Chain workloads (issue 14): sequences snapshotted at many boundaries, the
// store's paged layout (PutOptions::block_chain) against its whole-blob
// layout, side by side in one process on the same bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace auxstore::bench {

struct ChainConfig {
  std::string dir;
  int runs = 3;         // cold restores timed per layout (median)
  uint32_t block = 64;  // prefix-hash block = page size, tokens
  uint32_t scale = 1;   // divides every token count (quick runs)
  std::string only;     // run only workloads whose name contains this
};

// Runs (a) one 4096-token sequence x 24 layers snapshotted every 256
// tokens, (b) 8 turns of 4096 tokens x 60 layers, (c) 100 sequences sharing
// a 2048-token prompt; DSA layers of 513 bytes per token. Prints a table per
// workload unless `quiet`; returns the figures.
nlohmann::json RunChainWorkloads(const ChainConfig& c, bool quiet);

}  // namespace auxstore::bench
