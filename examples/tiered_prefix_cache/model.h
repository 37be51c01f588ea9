// The example's model: its namespace geometry, the layers of a sequence, and
// the engine-owned device buffers of a sequence (what an engine allocates
// per sequence), which auxstore borrows to restore into and snapshot from.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "auxstore/gpu_pipeline.h"
#include "auxstore/seq_state.h"

namespace tiered {

inline constexpr uint32_t kBlockTokens = 16;  // prefix-hash block size
inline constexpr uint64_t kSalt = 0x7469657265640001;
inline constexpr uint32_t kQsaLayer = 0, kDsaLayer = 1, kOpaqueLayer = 2;
inline constexpr uint64_t kOpaqueCapacity = 4096;

auxstore::NamespaceSpec ModelSpec();

// One sequence's per-layer states over device buffers the engine owns:
// auxstore's states borrow them, the engine frees them (Free).
struct SequenceStates {
  std::map<uint32_t, std::unique_ptr<auxstore::SeqState>> layers;
  std::vector<auxstore::DevicePtr> buffers;  // the engine's allocations
  auxstore::GpuBackend* gpu = nullptr;

  SequenceStates() = default;
  SequenceStates(SequenceStates&&) = default;
  SequenceStates& operator=(SequenceStates&&) = default;
  ~SequenceStates() { (void)Free(); }

  auxstore::RestoreTargets targets() const;
  auxstore::SnapshotSources sources() const;
  // Drops the states, then frees the engine's buffers. No device work may
  // still use them.
  auxstore::Status Free();
};

// The layer weights QSA states share, uploaded once.
class Model {
 public:
  static auxstore::Result<std::unique_ptr<Model>> Create(auxstore::GpuBackend& gpu);
  ~Model();

  // Fresh engine buffers for every layer, borrowed by empty states, ready
  // to be filled or restored into.
  auxstore::Result<SequenceStates> FreshStates() const;
  auxstore::GpuBackend& gpu() const { return gpu_; }
  const auxstore::QsaLayer& qsa_layer() const { return qsa_; }
  // The engine's compute stream: its prefill copies, snapshot D2H copies and
  // the waits on restored layers run here (never the legacy default stream).
  auxstore::StreamHandle stream() const { return stream_; }

 private:
  explicit Model(auxstore::GpuBackend& gpu) : gpu_(gpu) {}
  auxstore::GpuBackend& gpu_;
  auxstore::QsaLayer qsa_;
  auxstore::StreamHandle stream_ = auxstore::kDefaultStream;
};

}  // namespace tiered
