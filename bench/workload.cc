#include "bench/workload.h"

#include <algorithm>

#include "bench/measure.h"

namespace auxstore::bench {

WorkloadData::WorkloadData(const Workload& w) : w_(w), bytes_(w.total_bytes()) {
  FillRandom(bytes_.data(), bytes_.size(), 42);
}

std::span<const uint8_t> WorkloadData::Layer(uint32_t snapshot, uint32_t layer) const {
  const uint64_t off = (uint64_t{snapshot} * w_.layers + layer) * w_.layer_bytes;
  return bytes_.span().subspan(off, w_.layer_bytes);
}

std::vector<Workload> StandardWorkloads(uint64_t target, uint32_t realistic_tokens) {
  auto make = [&](std::string name, uint64_t layer_bytes, uint32_t layers) {
    const uint64_t per_snapshot = layer_bytes * layers;
    const uint32_t snaps = static_cast<uint32_t>(std::max<uint64_t>(1, target / per_snapshot));
    return Workload{std::move(name), layer_bytes, layers, snaps};
  };
  const uint64_t dsa_layer = 16 + uint64_t{realistic_tokens} * 513;
  return {
      make("256KiB x 64 layers", 256u << 10, 64),
      make("4MiB x 16 layers", 4u << 20, 16),
      make("64MiB x 2 layers", 64u << 20, 2),
      Workload{"realistic 60 x " + std::to_string(realistic_tokens) + " tok x 513B", dsa_layer, 60,
               1},
  };
}

}  // namespace auxstore::bench
