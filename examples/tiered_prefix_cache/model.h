// The example's model: its namespace geometry, the layers of a sequence, and
// fresh device states for them (what an engine allocates per sequence).
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "auxstore/gpu_pipeline.h"
#include "auxstore/seq_state.h"

namespace tiered {

inline constexpr uint32_t kBlockTokens = 16;  // prefix-hash block size
inline constexpr uint64_t kSalt = 0x7469657265640001;
inline constexpr uint32_t kQsaLayer = 0, kDsaLayer = 1, kOpaqueLayer = 2;
inline constexpr uint64_t kOpaqueCapacity = 4096;

auxstore::NamespaceSpec ModelSpec();

// One sequence's per-layer states. Owns them; Release() frees device memory.
struct SequenceStates {
  std::map<uint32_t, std::unique_ptr<auxstore::SeqState>> layers;

  auxstore::RestoreTargets targets() const;
  auxstore::SnapshotSources sources() const;
};

// The layer weights QSA states share, uploaded once.
class Model {
 public:
  static auxstore::Result<std::unique_ptr<Model>> Create(auxstore::GpuBackend& gpu);
  ~Model();

  // Empty states for every layer, ready to be filled or restored into.
  auxstore::Result<SequenceStates> FreshStates() const;
  auxstore::GpuBackend& gpu() const { return gpu_; }
  const auxstore::QsaLayer& qsa_layer() const { return qsa_; }

 private:
  explicit Model(auxstore::GpuBackend& gpu) : gpu_(gpu) {}
  auxstore::GpuBackend& gpu_;
  auxstore::QsaLayer qsa_;
};

}  // namespace tiered
