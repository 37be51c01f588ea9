#include "tests/reliability/pipeline_restore_check.h"

#include <map>
#include <memory>
#include <vector>

#include "auxstore/seq_state.h"

namespace auxstore::reliability {

Status RestoreAndCompare(Store& store, GpuBackend& gpu, NamespaceId ns, const SnapshotSpec& want) {
  const NamespaceSpec spec = BatterySpec();
  // QSA re-pooling needs the layer's pooling query and norm weight on the device.
  std::vector<uint8_t> weights(spec.qsa.hd * 2, 0x3f);
  AUXSTORE_ASSIGN_OR_RETURN(DevicePtr k_pool, gpu.Alloc(weights.size()));
  AUXSTORE_ASSIGN_OR_RETURN(DevicePtr k_norm, gpu.Alloc(weights.size()));
  struct FreeOnExit {
    GpuBackend& g;
    DevicePtr a, b;
    ~FreeOnExit() {
      (void)g.Free(a);
      (void)g.Free(b);
    }
  } free_on_exit{gpu, k_pool, k_norm};
  AUXSTORE_RETURN_IF_ERROR(gpu.CopyH2DAsync(weights, k_pool, 0, kDefaultStream));
  AUXSTORE_RETURN_IF_ERROR(gpu.CopyH2DAsync(weights, k_norm, 0, kDefaultStream));
  AUXSTORE_RETURN_IF_ERROR(gpu.Synchronize(kDefaultStream));
  const QsaLayer qsa_layer{spec.qsa, k_pool, k_norm};

  std::map<uint32_t, std::unique_ptr<SeqState>> states;
  RestoreTargets targets;
  for (const SnapshotLayer& l : want.layers) {
    std::unique_ptr<SeqState> s;
    if (l.kind == Kind::kQsa) {
      AUXSTORE_ASSIGN_OR_RETURN(s, QsaSeqState::Create(gpu, qsa_layer));
    } else if (l.kind == Kind::kDsa) {
      AUXSTORE_ASSIGN_OR_RETURN(s, DsaSeqState::Create(gpu, spec.dsa));
    } else {
      AUXSTORE_ASSIGN_OR_RETURN(s, OpaqueSeqState::Create(gpu, l.bytes.size() + 1));
    }
    targets[l.layer] = s.get();
    states[l.layer] = std::move(s);
  }
  PipelineOptions po;
  po.staging_buffers = 3;
  po.staging_bytes = kBatteryChunkBytes;
  AUXSTORE_ASSIGN_OR_RETURN(std::unique_ptr<GpuPipeline> pipeline,
                            GpuPipeline::Create(store, gpu, po));
  AUXSTORE_RETURN_IF_ERROR(pipeline->Restore(ns, want.prefix, targets, kDefaultStream).get());
  for (const SnapshotLayer& l : want.layers) {
    AUXSTORE_ASSIGN_OR_RETURN(std::vector<uint8_t> got, states[l.layer]->Snapshot(kDefaultStream));
    if (got != l.bytes) {
      return Status::Corruption("pipeline restore of seed " + std::to_string(want.seed) +
                                " layer " + std::to_string(l.layer) + " returned other bytes");
    }
  }
  return Status::Ok();
}

}  // namespace auxstore::reliability
