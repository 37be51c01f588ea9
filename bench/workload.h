// A benchmark workload: `snapshots` snapshots of `layers` layers of
// `layer_bytes` each, all cut from one buffer of incompressible bytes, so
// every contender writes and reads exactly the same bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bench/measure.h"

namespace auxstore::bench {

struct Workload {
  std::string name;
  uint64_t layer_bytes = 0;
  uint32_t layers = 0;
  uint32_t snapshots = 0;

  uint64_t snapshot_bytes() const { return layer_bytes * layers; }
  uint64_t total_bytes() const { return snapshot_bytes() * snapshots; }
};

class WorkloadData {
 public:
  explicit WorkloadData(const Workload& w);
  const Workload& workload() const { return w_; }
  std::span<const uint8_t> Layer(uint32_t snapshot, uint32_t layer) const;
  std::span<const uint8_t> All() const { return bytes_.span(); }

 private:
  Workload w_;
  HugeBuffer bytes_;
};

// The standard set: 256 KiB, 4 MiB and 64 MiB layers, and a realistic
// snapshot (60 DSA layers of `realistic_tokens` tokens x 513 B), each about
// `target_bytes` in all (the realistic one is one snapshot whatever its size).
std::vector<Workload> StandardWorkloads(uint64_t target_bytes, uint32_t realistic_tokens);

}  // namespace auxstore::bench
